#!/bin/sh
# check_stress with a launch thread ([runtime] launch = thread, through
# $CUASYNC_LAUNCH): lists are applied by the runtime's launch thread.
CUASYNC_LAUNCH=thread exec ./tests/check_stress "$@"
