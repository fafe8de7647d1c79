#!/bin/sh
# check_stress with launch = pipeline (through $CUASYNC_LAUNCH): a large
# submission hands its list to the launch thread in chunks as it decides it.
CUASYNC_LAUNCH=pipeline exec ./tests/check_stress "$@"
