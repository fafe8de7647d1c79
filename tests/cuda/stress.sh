#!/bin/sh
# check_stress on the CUDA backend (exit 77 without a GPU).
CUASYNC_TEST_BACKEND=cuda exec ./tests/check_stress "$@"
