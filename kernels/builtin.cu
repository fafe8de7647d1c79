/* placeholder: being written */ typedef int cua__placeholder_kernels_builtin_cu;
