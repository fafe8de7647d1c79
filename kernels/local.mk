# CUDA kernels shipped with the library: built into the CUDA backend.
KERNEL_SOURCES = %reldir%/builtin.cu %reldir%/kernels.h
if HAVE_CUDA
noinst_LTLIBRARIES += %reldir%/libcuasync-kernels.la
%canon_reldir%_libcuasync_kernels_la_SOURCES = $(KERNEL_SOURCES)
# nvcc compiles .cu as C++: the host stubs it generates need the C++
# runtime (exception personality, guarded statics), which a module linked
# by the C compiler would otherwise leave undefined until dlopen() fails.
%canon_reldir%_libcuasync_kernels_la_LIBADD = -lstdc++
endif
EXTRA_DIST += $(KERNEL_SOURCES)

# A PTX module for tests/check_cuda (module_load, KERNEL ops, a deliberate
# device fault), compiled from a small source into the build tree. nvcc's
# default virtual architecture keeps the PTX loadable on every GPU the
# toolkit supports: the driver compiles it for the device at load time.
if HAVE_CUDA
tests/axpb.ptx: $(top_srcdir)/tests/fixtures/axpb.cu
	$(AM_V_NVCC)$(MKDIR_P) tests && $(NVCC) $(NVCCFLAGS) --ptx -o $@ $(top_srcdir)/tests/fixtures/axpb.cu
EXTRA_tests_check_cuda_DEPENDENCIES = tests/axpb.ptx plugins/cuda.la
CLEANFILES += tests/axpb.ptx
endif
