#!/bin/sh
# check_random_dag on the launchtime test backend (tests/modules/launchtime.c),
# which runs stream functions inside launch(), with launch = relay: the
# submitting thread applies the chunks a launch thread decides, so stream
# functions run there, with no core lock held.
CUASYNC_TEST_BACKEND=launchtime CUASYNC_LAUNCH=relay exec ./tests/check_random_dag "$@"
