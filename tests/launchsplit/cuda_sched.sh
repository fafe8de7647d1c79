#!/bin/sh
# check_sched on the CUDA backend with four launch threads under the
# default launch = auto; exit 77 without a GPU.
CUASYNC_TEST_BACKEND=cuda CUASYNC_LAUNCH_THREADS=4 exec ./tests/check_sched "$@"
