#!/bin/sh
# check_graph on the CUDA backend with [backend.cuda] capture = stream (exit
# 77 without a GPU): graphs are built by a stream capture of the ops'
# launches, each op's dependencies set by
# cudaStreamUpdateCaptureDependencies(), instead of node by node (the
# default). Both must give the sequential reference.
CUASYNC_TEST_EXTRA=$(printf '[backend.cuda]\ncapture = stream\n')
export CUASYNC_TEST_EXTRA
CUASYNC_TEST_WATCHDOG=${CUASYNC_TEST_WATCHDOG:-120} \
  CUASYNC_TEST_BACKEND=cuda exec ./tests/check_graph "$@"
