#!/bin/sh
# check_graph on the CUDA backend (exit 77 without a GPU): graphs are CUDA
# graphs there. A test still running after two minutes prints every
# thread's stack into the log (see CUASYNC_TEST_WATCHDOG in the suite).
CUASYNC_TEST_WATCHDOG=${CUASYNC_TEST_WATCHDOG:-120} CUASYNC_TEST_BACKEND=cuda exec ./tests/check_graph "$@"
