#!/bin/sh
# check_sched on the CUDA backend with launch = pipeline (through
# $CUASYNC_LAUNCH); exit 77 without a GPU.
CUASYNC_TEST_BACKEND=cuda CUASYNC_LAUNCH=pipeline exec ./tests/check_sched "$@"
