#!/bin/sh
# check_random_dag on the launchtime test backend (tests/modules/launchtime.c),
# which runs stream functions inside launch(), with launch = pipeline: a
# chunk that launches one is refused by the launch thread and applied by
# the submitting thread, later chunks may go to the launch thread again.
CUASYNC_TEST_BACKEND=launchtime CUASYNC_LAUNCH=pipeline exec ./tests/check_random_dag "$@"
