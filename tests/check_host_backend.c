/* placeholder: being written */ typedef int cua__placeholder_tests_check_host_backend_c;
