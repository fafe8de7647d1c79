#!/bin/sh
# check_sched on the launchtime test backend, which runs stream functions
# inside launch(): the executor, outside every core lock.
CUASYNC_TEST_BACKEND=launchtime exec ./tests/check_sched "$@"
