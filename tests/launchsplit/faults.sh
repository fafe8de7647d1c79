#!/bin/sh
# check_faults with three launch threads under launch = thread: every
# allocation failure, swept, also reaches the split of a list between
# launch threads (launcher.c, push_split()). The split is the same under
# every policy: a multi-stream one (round-robin) and the pull-mode one
# (work-stealing) are swept here, every policy by check_faults itself.
CUASYNC_FAULTS_POLICIES=${CUASYNC_FAULTS_POLICIES:-round-robin,work-stealing} \
  CUASYNC_LAUNCH=thread CUASYNC_LAUNCH_THREADS=3 exec ./tests/check_faults "$@"
