#!/bin/sh
# check_sched with launch = pipeline (through $CUASYNC_LAUNCH): its larger
# submissions hand their lists to the launch thread in chunks as they are
# decided.
CUASYNC_LAUNCH=pipeline exec ./tests/check_sched "$@"
