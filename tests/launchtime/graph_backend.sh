#!/bin/sh
# check_graph on the launchgraph test backend (tests/modules/launchtime.c
# built with graphs): the core captures DAGs into backend graphs as it does
# on CUDA, a large DAG's capture beside its placement (on a thread of
# cua_graph_create()) included, and the backend checks the dependencies
# capture_deps() is given.
CUASYNC_TEST_BACKEND=launchgraph exec ./tests/check_graph "$@"
