#!/bin/sh
# check_random_dag on the launchtime test backend (tests/modules/launchtime.c), which
# runs every op inside launch() on the launching thread.
CUASYNC_TEST_BACKEND=launchtime exec ./tests/check_random_dag "$@"
