/* placeholder: being written */ typedef int cua__placeholder_plugins_cuda_cuda_c;
