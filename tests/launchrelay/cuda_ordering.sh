#!/bin/sh
# check_ordering on the CUDA backend with launch = relay (through
# $CUASYNC_LAUNCH); exit 77 without a GPU.
CUASYNC_TEST_BACKEND=cuda CUASYNC_LAUNCH=relay exec ./tests/check_ordering "$@"
