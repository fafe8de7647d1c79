bin_PROGRAMS += %reldir%/cuasync-info
%canon_reldir%_cuasync_info_SOURCES = %reldir%/cuasync-info.c
%canon_reldir%_cuasync_info_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
%canon_reldir%_cuasync_info_LDADD = core/libcuasync-core.la $(INIH_LIBS)

# cuasync-info's options, outputs and exit codes, run on the modules just
# built (AM_TESTS_ENVIRONMENT in tests/local.mk).
TESTS += tests/check_info.sh
EXTRA_DIST += tests/check_info.sh tests/tool-checks.sh

# cuasync-bench: cuasync under each policy against the hand-written
# equivalents run in the same process: raw CUDA (one stream, streams with
# events, a CUDA graph) built from tools/bench/raw.cu when CUDA is
# configured, plain threads always. It uses the public API only.
bin_PROGRAMS += %reldir%/cuasync-bench
%canon_reldir%_cuasync_bench_SOURCES = \
	%reldir%/bench/bench.h \
	%reldir%/bench/cuasync_run.h \
	%reldir%/bench/report.h \
	%reldir%/bench/main.c \
	%reldir%/bench/workloads.c \
	%reldir%/bench/cuasync_run.c \
	%reldir%/bench/dispatch.c \
	%reldir%/bench/rr-static.c \
	%reldir%/bench/threads.c \
	%reldir%/bench/output.c
%canon_reldir%_cuasync_bench_LDADD = libcuasync.la -lm
if HAVE_CUDA
noinst_LTLIBRARIES += %reldir%/bench/libbench-raw.la
%canon_reldir%_bench_libbench_raw_la_SOURCES = %reldir%/bench/raw.cu \
	%reldir%/bench/stamps.cu %reldir%/bench/stamps.h
# nvcc compiles .cu as C++ (see kernels/local.mk): the C++ runtime comes
# along for the C link of the program.
%canon_reldir%_bench_libbench_raw_la_LIBADD = \
	kernels/libcuasync-kernels.la $(CUDA_LIBS) -ldl -lstdc++
%canon_reldir%_cuasync_bench_LDADD += %reldir%/bench/libbench-raw.la
else
%canon_reldir%_cuasync_bench_SOURCES += %reldir%/bench/raw-none.c
endif
EXTRA_DIST += %reldir%/bench/raw.cu %reldir%/bench/raw-none.c \
	%reldir%/bench/stamps.cu %reldir%/bench/stamps.h
dist_man_MANS += doc/man/cuasync-bench.1
EXTRA_DIST += conf/bench-streams8.ini conf/bench-affinity.ini

# bench-ops: one run of one workload DAG and nothing else, for the
# instruction counts of tools/bench/callgrind-per-op.sh (not installed).
noinst_PROGRAMS += %reldir%/bench-ops
%canon_reldir%_bench_ops_SOURCES = \
	%reldir%/bench/bench.h \
	%reldir%/bench/cuasync_run.h \
	%reldir%/bench/ops.c \
	%reldir%/bench/workloads.c \
	%reldir%/bench/cuasync_run.c
%canon_reldir%_bench_ops_LDADD = libcuasync.la -lm
EXTRA_DIST += %reldir%/bench/callgrind-per-op.sh %reldir%/bench/trace-host-costs.py \
	%reldir%/bench/targets.awk
# A sampling profiler for machines without perf (built by hand: see it).
EXTRA_DIST += %reldir%/prof/sample.c %reldir%/prof/report.py

# cuasync-bench's options, formats and exit codes, on the host backend.
TESTS += tests/check_bench.sh
EXTRA_DIST += tests/check_bench.sh
