/* placeholder: being written */ typedef int cua__placeholder_tests_modules_broken_noplace_c;
