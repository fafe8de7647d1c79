#!/bin/sh
# check_ordering on the CUDA backend with three launch threads under
# launch = thread; exit 77 without a GPU.
CUASYNC_TEST_BACKEND=cuda CUASYNC_LAUNCH=thread CUASYNC_LAUNCH_THREADS=3 exec ./tests/check_ordering "$@"
