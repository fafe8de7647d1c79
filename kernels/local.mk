# CUDA kernels shipped with the library: built into the CUDA backend.
KERNEL_SOURCES = %reldir%/builtin.cu %reldir%/kernels.h
if HAVE_CUDA
noinst_LTLIBRARIES += %reldir%/libcuasync-kernels.la
%canon_reldir%_libcuasync_kernels_la_SOURCES = $(KERNEL_SOURCES)
endif
EXTRA_DIST += $(KERNEL_SOURCES)
