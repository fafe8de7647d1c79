/* placeholder: being written */ typedef int cua__placeholder_policies_least_loaded_c;
