#!/bin/sh
# check_graph on the CUDA backend (exit 77 without a GPU): graphs are CUDA
# graphs there.
CUASYNC_TEST_BACKEND=cuda exec ./tests/check_graph "$@"
