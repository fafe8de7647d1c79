#!/bin/sh
# check_plans on the launchtime test backend, which runs stream functions
# inside launch(): a stream function's submission then comes between a
# stage's chunks, deterministically (core/plan.c).
CUASYNC_TEST_BACKEND=launchtime exec ./tests/check_plans "$@"
