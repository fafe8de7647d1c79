#!/bin/sh
# check_observers on the launchtime test backend (tests/modules/launchtime.c):
# op times there are estimated by the core, as on CUDA.
CUASYNC_TEST_BACKEND=launchtime exec ./tests/check_observers "$@"
