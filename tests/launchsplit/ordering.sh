#!/bin/sh
# check_ordering with three launch threads under launch = thread: lists
# split by stream, their waits and records applied by different threads.
CUASYNC_LAUNCH=thread CUASYNC_LAUNCH_THREADS=3 exec ./tests/check_ordering "$@"
