/* placeholder: being written */ typedef int cua__placeholder_core_loader_c;
