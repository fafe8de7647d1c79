#!/bin/sh
# check_observers on the CUDA backend (exit 77 without a GPU): the trace of a
# known DAG, with start and end times estimated by the core there.
CUASYNC_TEST_BACKEND=cuda exec ./tests/check_observers "$@"
