# Check suites, one per unit. Tests load the modules just built, never
# installed ones, and never read the user's or the system's configuration.
# Performance models stay in memory ($CUASYNC_MODELS), so that no test
# depends on what an earlier one measured; check_models and check_info.sh,
# which test the files, unset it and write under tests/cache.
AM_TESTS_ENVIRONMENT = \
	CUASYNC_MODULE_PATH='$(abs_top_builddir)/policies/.libs:$(abs_top_builddir)/plugins/.libs:$(abs_top_builddir)/tests/modules/.libs'; \
	export CUASYNC_MODULE_PATH; \
	CUASYNC_TEST_FIXTURES='$(abs_top_srcdir)/tests/fixtures'; export CUASYNC_TEST_FIXTURES; \
	CUASYNC_TEST_SRCDIR='$(abs_top_srcdir)'; export CUASYNC_TEST_SRCDIR; \
	CUASYNC_TEST_BUILDDIR='$(abs_top_builddir)'; export CUASYNC_TEST_BUILDDIR; \
	unset CUASYNC_CONFIG CUASYNC_POLICY; \
	XDG_CACHE_HOME='$(abs_top_builddir)/tests/cache'; export XDG_CACHE_HOME; \
	CUASYNC_MODELS=memory; export CUASYNC_MODELS; \
	CK_DEFAULT_TIMEOUT=120; export CK_DEFAULT_TIMEOUT;

TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(INIH_CFLAGS)
TEST_LIBS = core/libcuasync-core.la $(CHECK_LIBS) $(INIH_LIBS)
# Suites that use only public functions link the public library, as a user
# program does (and so test its exports); the others reach internals.
PUBLIC_TEST_LIBS = libcuasync.la $(CHECK_LIBS)
EXTRA_DIST += %reldir%/helpers.h %reldir%/fixtures

TEST_MODULE_LDFLAGS = $(MODULE_LDFLAGS) -rpath /nowhere

# Unit suites.
UNIT_TESTS = \
	tests/check_version \
	tests/check_config \
	tests/check_loader \
	tests/check_backends \
	tests/check_host_backend \
	tests/check_policies \
	tests/check_e2e \
	tests/check_ops \
	tests/check_ordering \
	tests/check_random_dag \
	tests/check_graph \
	tests/check_observers \
	tests/example_graph \
	tests/check_futures \
	tests/check_conformance \
	tests/check_sched \
	tests/check_models \
	tests/check_misuse \
	tests/check_cuda \
	tests/check_faults \
	tests/check_executor \
	tests/check_plans \
	tests/check_stress
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS) $(CUDA_TESTS) $(LAUNCHTIME_TESTS) $(LAUNCHTHREAD_TESTS) \
	$(LAUNCHCALLER_TESTS) $(LAUNCHPIPELINE_TESTS) $(LAUNCHSPLIT_TESTS) \
	$(LAUNCHRELAY_TESTS)

# The sim backend (plugins/sim/, built with SimGrid): its own suite, and the
# op, ordering, property and conformance suites again on it, with
# [backend.sim] data = real (tests/helpers.h).
SIM_TESTS = \
	tests/sim/ops.sh \
	tests/sim/ordering.sh \
	tests/sim/random_dag.sh \
	tests/sim/conformance.sh \
	tests/sim/calibrate.sh
EXTRA_DIST += $(SIM_TESTS) tests/check_sim.c
if HAVE_SIMGRID
check_PROGRAMS += tests/check_sim
TESTS += tests/check_sim $(SIM_TESTS)
endif
tests_check_sim_SOURCES = tests/check_sim.c tests/helpers.h
tests_check_sim_CFLAGS = $(TEST_CFLAGS)
tests_check_sim_LDADD = $(PUBLIC_TEST_LIBS)

# The same op, ordering, property, future and conformance suites, on the
# CUDA backend (they exit 77, skipped, where it has no device).
CUDA_TESTS = \
	tests/cuda/ops.sh \
	tests/cuda/ordering.sh \
	tests/cuda/random_dag.sh \
	tests/cuda/graph.sh \
	tests/cuda/graph_capture.sh \
	tests/cuda/graph_stream.sh \
	tests/cuda/observers.sh \
	tests/cuda/futures.sh \
	tests/cuda/conformance.sh \
	tests/cuda/sched.sh \
	tests/cuda/stress.sh
EXTRA_DIST += $(CUDA_TESTS)

# The op, ordering, property, conformance, scheduling and plan suites again
# on the launchtime test backend (tests/modules/launchtime.c), which runs
# every op, stream functions included, inside launch() on the launching
# thread, as the CUDA backend runs stream functions. check_futures is not among them: its
# timeouts assume that an op is still running when cua_submit() returns.
LAUNCHTIME_TESTS = \
	tests/launchtime/ops.sh \
	tests/launchtime/ordering.sh \
	tests/launchtime/random_dag.sh \
	tests/launchtime/graph.sh \
	tests/launchtime/graph_backend.sh \
	tests/launchtime/observers.sh \
	tests/launchtime/conformance.sh \
	tests/launchtime/sched.sh \
	tests/launchtime/plans.sh
EXTRA_DIST += $(LAUNCHTIME_TESTS)

# The same suites with a launch thread ([runtime] launch = thread): every
# command list not launching a stream function is applied by the runtime's
# launch thread; on the host backend, and on CUDA (skipped without a GPU).
LAUNCHTHREAD_TESTS = \
	tests/launchthread/ops.sh \
	tests/launchthread/ordering.sh \
	tests/launchthread/random_dag.sh \
	tests/launchthread/sched.sh \
	tests/launchthread/stress.sh \
	tests/launchthread/futures.sh \
	tests/launchthread/cuda_ordering.sh \
	tests/launchthread/cuda_random_dag.sh \
	tests/launchthread/cuda_sched.sh \
	tests/launchthread/cuda_stress.sh
EXTRA_DIST += $(LAUNCHTHREAD_TESTS)

# The same suites with launch = caller: no list is handed to a launch
# thread (the default, launch = auto, hands a stream of one thread's
# submissions over; the suites above run with it).
LAUNCHCALLER_TESTS = \
	tests/launchcaller/ops.sh \
	tests/launchcaller/ordering.sh \
	tests/launchcaller/random_dag.sh \
	tests/launchcaller/sched.sh \
	tests/launchcaller/stress.sh \
	tests/launchcaller/futures.sh \
	tests/launchcaller/cuda_ordering.sh \
	tests/launchcaller/cuda_random_dag.sh \
	tests/launchcaller/cuda_sched.sh \
	tests/launchcaller/cuda_stress.sh
EXTRA_DIST += $(LAUNCHCALLER_TESTS)

# The suites whose larger submissions reach launch = pipeline's hand-over
# (a submission from one thread hands its list to the launch thread in
# chunks, with marks in them: commands.c); on the host backend, on the
# launchtime backend (stream functions at launch, whose chunks the launch
# thread refuses), and on CUDA (skipped without a GPU).
LAUNCHPIPELINE_TESTS = \
	tests/launchpipeline/ops.sh \
	tests/launchpipeline/random_dag.sh \
	tests/launchpipeline/sched.sh \
	tests/launchpipeline/stress.sh \
	tests/launchpipeline/launchtime_random_dag.sh \
	tests/launchpipeline/cuda_random_dag.sh \
	tests/launchpipeline/cuda_sched.sh
EXTRA_DIST += $(LAUNCHPIPELINE_TESTS)

# The suites again with launch = relay, whose submissions of 144 ops or
# more go on deciding on a launch thread while the submitting thread
# applies the chunks (flush.c): on the host backend, on the launchtime
# backend (stream functions at launch, run by the submitting thread), and
# on CUDA (skipped without a GPU).
LAUNCHRELAY_TESTS = \
	tests/launchrelay/ops.sh \
	tests/launchrelay/random_dag.sh \
	tests/launchrelay/sched.sh \
	tests/launchrelay/stress.sh \
	tests/launchrelay/launchtime_random_dag.sh \
	tests/launchrelay/cuda_random_dag.sh \
	tests/launchrelay/cuda_sched.sh \
	tests/launchrelay/cuda_ordering.sh
EXTRA_DIST += $(LAUNCHRELAY_TESTS)

# The suites with several launch threads ([runtime] launch_threads), each
# applying the commands of its own streams: under launch = thread every
# list is split by stream, so waits and the records they wait for are
# applied by different threads; under auto, a large submission over
# several threads' streams is handed to them (flush.c, launcher.c).
LAUNCHSPLIT_TESTS = \
	tests/launchsplit/random_dag.sh \
	tests/launchsplit/ordering.sh \
	tests/launchsplit/stress.sh \
	tests/launchsplit/sched.sh \
	tests/launchsplit/faults.sh \
	tests/launchsplit/launchtime_random_dag.sh \
	tests/launchsplit/cuda_random_dag.sh \
	tests/launchsplit/cuda_ordering.sh \
	tests/launchsplit/cuda_sched.sh
EXTRA_DIST += $(LAUNCHSPLIT_TESTS)

tests_check_version_SOURCES = tests/check_version.c tests/helpers.h
tests_check_version_CFLAGS = $(TEST_CFLAGS)
tests_check_version_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_config_SOURCES = tests/check_config.c tests/helpers.h
tests_check_config_CFLAGS = $(TEST_CFLAGS)
tests_check_config_LDADD = $(TEST_LIBS)
tests_check_loader_SOURCES = tests/check_loader.c tests/helpers.h
tests_check_loader_CFLAGS = $(TEST_CFLAGS)
tests_check_loader_LDADD = $(TEST_LIBS)
tests_check_backends_SOURCES = tests/check_backends.c tests/helpers.h
tests_check_backends_CFLAGS = $(TEST_CFLAGS)
tests_check_backends_LDADD = $(TEST_LIBS)
tests_check_host_backend_SOURCES = tests/check_host_backend.c tests/helpers.h
tests_check_host_backend_CFLAGS = $(TEST_CFLAGS)
tests_check_host_backend_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_policies_SOURCES = tests/check_policies.c tests/helpers.h
tests_check_policies_CFLAGS = $(TEST_CFLAGS)
tests_check_policies_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_e2e_SOURCES = tests/check_e2e.c tests/helpers.h
tests_check_e2e_CFLAGS = $(TEST_CFLAGS)
tests_check_e2e_LDADD = $(TEST_LIBS)
# Lets the suite make the core's allocations fail (see check_e2e.c).
tests_check_e2e_LDFLAGS = -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc
tests_check_ops_SOURCES = tests/check_ops.c tests/helpers.h
tests_check_ops_CFLAGS = $(TEST_CFLAGS)
tests_check_ops_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_ordering_SOURCES = tests/check_ordering.c tests/helpers.h
tests_check_ordering_CFLAGS = $(TEST_CFLAGS)
tests_check_ordering_LDADD = $(PUBLIC_TEST_LIBS)
# The graph example (doc/examples/graph), built and run as a test: its
# output is checked by the program itself.
tests_example_graph_SOURCES = doc/examples/graph/graph.c
tests_example_graph_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_graph_SOURCES = tests/check_graph.c tests/helpers.h
tests_check_graph_CFLAGS = $(TEST_CFLAGS)
tests_check_graph_LDADD = $(PUBLIC_TEST_LIBS) -lpthread
tests_check_random_dag_SOURCES = tests/check_random_dag.c tests/helpers.h
tests_check_random_dag_CFLAGS = $(TEST_CFLAGS)
tests_check_random_dag_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_futures_SOURCES = tests/check_futures.c tests/helpers.h
tests_check_futures_CFLAGS = $(TEST_CFLAGS)
tests_check_futures_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_conformance_SOURCES = tests/check_conformance.c tests/helpers.h \
	tests/earliest.h
tests_check_conformance_CFLAGS = $(TEST_CFLAGS)
tests_check_conformance_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_sched_SOURCES = tests/check_sched.c tests/helpers.h \
	tests/earliest.h
tests_check_sched_CFLAGS = $(TEST_CFLAGS)
tests_check_sched_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_models_SOURCES = tests/check_models.c tests/helpers.h
tests_check_models_CFLAGS = $(TEST_CFLAGS)
tests_check_models_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_misuse_SOURCES = tests/check_misuse.c tests/helpers.h
tests_check_misuse_CFLAGS = $(TEST_CFLAGS)
tests_check_misuse_LDADD = $(PUBLIC_TEST_LIBS)
tests_check_faults_SOURCES = tests/check_faults.c tests/helpers.h
tests_check_faults_CFLAGS = $(TEST_CFLAGS)
tests_check_faults_LDADD = $(TEST_LIBS)
tests_check_executor_SOURCES = tests/check_executor.c tests/helpers.h
tests_check_executor_CFLAGS = $(TEST_CFLAGS)
tests_check_executor_LDADD = $(TEST_LIBS)
tests_check_plans_SOURCES = tests/check_plans.c tests/helpers.h
tests_check_plans_CFLAGS = $(TEST_CFLAGS)
tests_check_plans_LDADD = $(TEST_LIBS)
tests_check_stress_SOURCES = tests/check_stress.c tests/helpers.h \
	tests/fuzz/dagprog.h
tests_check_stress_CFLAGS = $(TEST_CFLAGS)
tests_check_stress_LDADD = $(TEST_LIBS)
tests_check_observers_SOURCES = tests/check_observers.c tests/helpers.h
tests_check_observers_CFLAGS = $(TEST_CFLAGS)
tests_check_observers_LDADD = $(PUBLIC_TEST_LIBS) -ldl
EXTRA_DIST += %reldir%/trace_check.py
tests_check_cuda_SOURCES = tests/check_cuda.c tests/helpers.h
tests_check_cuda_CFLAGS = $(TEST_CFLAGS)
tests_check_cuda_LDADD = $(PUBLIC_TEST_LIBS)

# Test-only policy modules: a scattering policy for ordering tests, and
# deliberately broken ones for every loader error path (tests/modules/).
check_LTLIBRARIES += \
	tests/modules/scatter.la \
	tests/modules/broken-noentry.la \
	tests/modules/broken-abi-major.la \
	tests/modules/broken-abi1.la \
	tests/modules/broken-stride.la \
	tests/modules/wide.la \
	tests/modules/abi20.la \
	tests/modules/broken-abi-minor.la \
	tests/modules/broken-size.la \
	tests/modules/broken-name.la \
	tests/modules/broken-create.la \
	tests/modules/broken-noplace.la \
	tests/modules/broken-placement.la \
	tests/modules/broken-code.la \
	tests/modules/broken-undefined.la \
	tests/modules/broken-emptyname.la \
	tests/modules/broken-ctrlname.la \
	tests/modules/broken-dupparam.la \
	tests/modules/broken-pointers.la \
	tests/modules/broken-badplace.la \
	tests/modules/broken-tiny.la \
	tests/modules/broken-funcentry.la \
	tests/modules/broken-unaligned.la \
	tests/modules/broken-backend.la \
	tests/modules/broken-backend-ops.la \
	tests/modules/random.la \
	tests/modules/launchtime.la \
	tests/modules/launchgraph.la \
	tests/modules/nodevice.la \
	tests/modules/obs-test.la \
	tests/modules/bare.la
tests_modules_obs_test_la_SOURCES = tests/modules/obs-test.c
tests_modules_obs_test_la_LDFLAGS = $(TEST_MODULE_LDFLAGS) -pthread
# An NVTX tool library counting what the nvtx observer calls (NVTX loads
# it from $NVTX_INJECTION64_PATH); built with the nvtx observer.
if HAVE_CUDA
check_LTLIBRARIES += tests/modules/nvtx-inject.la
tests_modules_nvtx_inject_la_SOURCES = tests/modules/nvtx-inject.c
tests_modules_nvtx_inject_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_modules_nvtx_inject_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
endif
EXTRA_DIST += tests/modules/nvtx-inject.c
# Test backends: launchtime runs every op inside launch() on the launching
# thread, as the CUDA backend runs stream functions; launchgraph (the same
# source) adds graphs, so that the core's captures run in CI; nodevice (the same
# source) never finds a device, for `backend = auto`.
tests_modules_launchtime_la_SOURCES = tests/modules/launchtime.c
tests_modules_launchtime_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_launchgraph_la_SOURCES = tests/modules/launchtime.c
tests_modules_launchgraph_la_CPPFLAGS = $(AM_CPPFLAGS) -DLT_GRAPHS
tests_modules_launchgraph_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_nodevice_la_SOURCES = tests/modules/launchtime.c
tests_modules_nodevice_la_CPPFLAGS = $(AM_CPPFLAGS) -DLT_NODEVICE
tests_modules_nodevice_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
# The out-of-tree example policy, built here too so the conformance suite
# holds it to the same rules as the standard ones.
tests_modules_random_la_SOURCES = doc/examples/custom-policy/random-policy.c
tests_modules_random_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_bare_la_SOURCES = tests/modules/bare.c
tests_modules_bare_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_scatter_la_SOURCES = tests/modules/scatter.c
tests_modules_scatter_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_noentry_la_SOURCES = tests/modules/broken-noentry.c
tests_modules_broken_noentry_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_abi_major_la_SOURCES = tests/modules/broken-abi-major.c
tests_modules_broken_abi_major_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_abi1_la_SOURCES = tests/modules/broken-abi1.c
tests_modules_broken_abi1_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_stride_la_SOURCES = tests/modules/broken-stride.c
tests_modules_broken_stride_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_wide_la_SOURCES = tests/modules/wide.c
tests_modules_wide_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_abi20_la_SOURCES = tests/modules/abi20.c
tests_modules_abi20_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_abi_minor_la_SOURCES = tests/modules/broken-abi-minor.c
tests_modules_broken_abi_minor_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_size_la_SOURCES = tests/modules/broken-size.c
tests_modules_broken_size_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_name_la_SOURCES = tests/modules/broken-name.c
tests_modules_broken_name_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_create_la_SOURCES = tests/modules/broken-create.c
tests_modules_broken_create_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_noplace_la_SOURCES = tests/modules/broken-noplace.c
tests_modules_broken_noplace_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_placement_la_SOURCES = tests/modules/broken-placement.c
tests_modules_broken_placement_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_code_la_SOURCES = tests/modules/broken-code.c
tests_modules_broken_code_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
# Descriptors that are not what they claim (check_loader.c, defects).
tests_modules_broken_emptyname_la_SOURCES = tests/modules/broken-emptyname.c
tests_modules_broken_emptyname_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_ctrlname_la_SOURCES = tests/modules/broken-ctrlname.c
tests_modules_broken_ctrlname_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_dupparam_la_SOURCES = tests/modules/broken-dupparam.c
tests_modules_broken_dupparam_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_pointers_la_SOURCES = tests/modules/broken-pointers.c
tests_modules_broken_pointers_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_badplace_la_SOURCES = tests/modules/broken-badplace.c
tests_modules_broken_badplace_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_tiny_la_SOURCES = tests/modules/broken-tiny.c
tests_modules_broken_tiny_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_funcentry_la_SOURCES = tests/modules/broken-funcentry.c
tests_modules_broken_funcentry_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_unaligned_la_SOURCES = tests/modules/broken-unaligned.c
tests_modules_broken_unaligned_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_backend_la_SOURCES = tests/modules/broken-backend.c
tests_modules_broken_backend_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
tests_modules_broken_backend_ops_la_SOURCES = tests/modules/broken-backend-ops.c
tests_modules_broken_backend_ops_la_LDFLAGS = $(TEST_MODULE_LDFLAGS)
# Links against a symbol nobody defines: dlopen(RTLD_NOW) must refuse it.
tests_modules_broken_undefined_la_SOURCES = tests/modules/broken-undefined.c
tests_modules_broken_undefined_la_LDFLAGS = $(TEST_MODULE_LDFLAGS) -Wl,--unresolved-symbols=ignore-all
tests_modules_broken_undefined_la_LIBTOOLFLAGS = --tag=CC

# The CUDA suites share the GPU with check_cuda, which runs the device out of
# memory on purpose: under make -j they start only once it has finished.
tests/cuda/ops.sh.log tests/cuda/ordering.sh.log tests/cuda/random_dag.sh.log \
tests/cuda/graph.sh.log tests/cuda/graph_capture.sh.log \
tests/cuda/graph_stream.sh.log \
tests/cuda/futures.sh.log tests/cuda/conformance.sh.log \
tests/cuda/sched.sh.log tests/cuda/stress.sh.log: tests/check_cuda.log

# libFuzzer targets (./configure CC=clang --enable-fuzzing, in a build
# directory of their own), run by tests/fuzz/run.sh from .ci/run.
FUZZ_TARGETS = \
	tests/fuzz/fuzz_conf \
	tests/fuzz/fuzz_params \
	tests/fuzz/fuzz_dag
if ENABLE_FUZZING
noinst_PROGRAMS += $(FUZZ_TARGETS)
endif
FUZZ_LIBS = core/libcuasync-core.la $(INIH_LIBS)
tests_fuzz_fuzz_conf_SOURCES = tests/fuzz/fuzz_conf.c
tests_fuzz_fuzz_conf_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
tests_fuzz_fuzz_conf_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_conf_LDADD = $(FUZZ_LIBS)
tests_fuzz_fuzz_params_SOURCES = tests/fuzz/fuzz_params.c
tests_fuzz_fuzz_params_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
tests_fuzz_fuzz_params_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_params_LDADD = $(FUZZ_LIBS)
tests_fuzz_fuzz_dag_SOURCES = tests/fuzz/fuzz_dag.c tests/fuzz/dagprog.h
tests_fuzz_fuzz_dag_CFLAGS = $(AM_CFLAGS)
tests_fuzz_fuzz_dag_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_dag_LDADD = $(FUZZ_LIBS)
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/corpus

# The tests' $XDG_CACHE_HOME (performance models they stored).
clean-local: clean-test-cache
clean-test-cache:
	-rm -rf tests/cache
.PHONY: clean-test-cache
