#!/bin/sh
# check_random_dag on the launchtime test backend (stream functions run
# inside launch()) with three launch threads under launch = thread: lists
# that launch a stream function stay with their own thread, the others are
# split by stream.
CUASYNC_TEST_BACKEND=launchtime CUASYNC_LAUNCH=thread CUASYNC_LAUNCH_THREADS=3 exec ./tests/check_random_dag "$@"
