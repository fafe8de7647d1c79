#!/bin/sh
# check_stress with three launch threads under launch = thread.
CUASYNC_LAUNCH=thread CUASYNC_LAUNCH_THREADS=3 exec ./tests/check_stress "$@"
