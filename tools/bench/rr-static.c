/*
 * tools/bench/rr-static.c: policies/round-robin.c compiled into the
 * executable, for the dispatch micro-benchmark (dispatch.c).
 *
 * The very source of the round-robin module, not a hand-made copy, so that
 * the two sides of the comparison run the same instructions and differ
 * only in where they live: a shared object reached through dlopen() and
 * its descriptor, or the program itself. The descriptor is renamed so that
 * the program does not export a second cua_policy_entry.
 */
#define cua_policy_entry bench_static_round_robin
#include "../../policies/round-robin.c"
