/* placeholder: being written */ typedef int cua__placeholder_policies_round_robin_c;
