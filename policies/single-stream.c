/* placeholder: being written */ typedef int cua__placeholder_policies_single_stream_c;
