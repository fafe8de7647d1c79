#!/bin/sh
# check_conformance on the sim backend (plugins/sim/) with data = real: ops run in
# virtual time and their data is real (tests/helpers.h adds the section).
CUASYNC_TEST_BACKEND=sim exec ./tests/check_conformance "$@"
