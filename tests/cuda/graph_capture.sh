#!/bin/sh
# check_graph's property case on the CUDA backend with [backend.cuda]
# graph_updates = capture (exit 77 without a GPU): every update reaches the
# CUDA graph by a new capture and cudaGraphExecUpdate(), the path the
# default (in place, node by node) falls back to.
CUASYNC_TEST_EXTRA=$(printf '[backend.cuda]\ngraph_updates = capture\n')
export CUASYNC_TEST_EXTRA
CK_RUN_CASE=property CUASYNC_TEST_WATCHDOG=${CUASYNC_TEST_WATCHDOG:-120} \
  CUASYNC_TEST_BACKEND=cuda exec ./tests/check_graph "$@"
