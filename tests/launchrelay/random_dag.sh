#!/bin/sh
# check_random_dag with launch = relay (through $CUASYNC_LAUNCH): its submissions
# of 144 ops or more go on deciding on a launch thread after their first
# chunk, while the submitting thread applies the chunks.
CUASYNC_LAUNCH=relay exec ./tests/check_random_dag "$@"
