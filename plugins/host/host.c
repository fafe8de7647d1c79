/* placeholder: being written */ typedef int cua__placeholder_plugins_host_host_c;
