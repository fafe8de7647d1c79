#!/bin/sh
# check_ops with launch = caller (through $CUASYNC_LAUNCH): every command
# list is applied by the thread that decided it, never by a launch thread
# (the default, launch = auto, hands a stream of submissions over).
CUASYNC_LAUNCH=caller exec ./tests/check_ops "$@"
