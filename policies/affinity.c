/* placeholder: being written */ typedef int cua__placeholder_policies_affinity_c;
