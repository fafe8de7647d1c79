#!/bin/sh
# check_sched with four launch threads under the default launch = auto,
# where a large submission over several launch threads' streams is handed
# to them in chunks as it is decided.
CUASYNC_LAUNCH_THREADS=4 exec ./tests/check_sched "$@"
