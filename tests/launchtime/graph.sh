#!/bin/sh
# check_graph on the launchtime test backend (tests/modules/launchtime.c), which
# runs every op inside launch() on the launching thread.
CUASYNC_TEST_BACKEND=launchtime exec ./tests/check_graph "$@"
