#!/bin/sh
# check_random_dag with three launch threads under launch = thread
# ($CUASYNC_LAUNCH, $CUASYNC_LAUNCH_THREADS): every list goes to the launch
# threads, split by stream, so that waits cross threads.
CUASYNC_LAUNCH=thread CUASYNC_LAUNCH_THREADS=3 exec ./tests/check_random_dag "$@"
