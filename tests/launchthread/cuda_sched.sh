#!/bin/sh
# check_sched on the CUDA backend with a launch thread ([runtime] launch =
# thread, through $CUASYNC_LAUNCH); exit 77 without a GPU.
CUASYNC_TEST_BACKEND=cuda CUASYNC_LAUNCH=thread exec ./tests/check_sched "$@"
