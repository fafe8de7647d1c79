#!/bin/sh
# check_faults with three launch threads under launch = thread: every
# allocation failure, swept, also reaches the split of a list between
# launch threads (launcher.c, push_split()).
CUASYNC_LAUNCH=thread CUASYNC_LAUNCH_THREADS=3 exec ./tests/check_faults "$@"
