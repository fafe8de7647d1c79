/* placeholder: being written */ typedef int cua__placeholder_core_policyhost_c;
