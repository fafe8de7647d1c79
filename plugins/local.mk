# Observers, each a module in $(pkglibdir)/observers.
observer_LTLIBRARIES += %reldir%/perfetto.la
%canon_reldir%_perfetto_la_SOURCES = %reldir%/perfetto/perfetto.c core/jsonstr.h
%canon_reldir%_perfetto_la_LDFLAGS = $(MODULE_LDFLAGS)
# nvtx: NVTX3 ranges (header-only, from the CUDA toolkit's include
# directory; NVTX opens a tool's library with dlopen()).
if HAVE_CUDA
observer_LTLIBRARIES += %reldir%/nvtx.la
%canon_reldir%_nvtx_la_SOURCES = %reldir%/nvtx/nvtx.c
%canon_reldir%_nvtx_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
%canon_reldir%_nvtx_la_LIBADD = -ldl -lpthread
%canon_reldir%_nvtx_la_LDFLAGS = $(MODULE_LDFLAGS)
endif
EXTRA_DIST += %reldir%/nvtx/nvtx.c

# Device backends, each a module in $(pkglibdir)/backends.
backend_LTLIBRARIES += %reldir%/host.la
%canon_reldir%_host_la_SOURCES = %reldir%/host/host.c %reldir%/hostmem.h
%canon_reldir%_host_la_LDFLAGS = $(MODULE_LDFLAGS)

if HAVE_CUDA
backend_LTLIBRARIES += %reldir%/cuda.la
%canon_reldir%_cuda_la_SOURCES = %reldir%/cuda/cuda.c %reldir%/cuda/cupti_times.c \
	%reldir%/cuda/cupti_times.h %reldir%/cuda/cupti_api.h
%canon_reldir%_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir)/kernels
%canon_reldir%_cuda_la_LIBADD = kernels/libcuasync-kernels.la $(CUDA_LIBS) -ldl
%canon_reldir%_cuda_la_LDFLAGS = $(MODULE_LDFLAGS)
endif
EXTRA_DIST += %reldir%/cuda/cuda.c %reldir%/cuda/cupti_times.c %reldir%/cuda/cupti_times.h \
	%reldir%/cuda/cupti_api.h

# sim: virtual GPUs on SimGrid (C++).
if HAVE_SIMGRID
backend_LTLIBRARIES += %reldir%/sim.la
%canon_reldir%_sim_la_SOURCES = %reldir%/sim/sim.cc %reldir%/sim/machine.cc \
	%reldir%/sim/sim.h %reldir%/hostmem.h
%canon_reldir%_sim_la_CXXFLAGS = $(AM_CXXFLAGS) $(SIMGRID_CFLAGS)
%canon_reldir%_sim_la_LIBADD = $(SIMGRID_LIBS)
%canon_reldir%_sim_la_LDFLAGS = $(MODULE_LDFLAGS)
endif
EXTRA_DIST += %reldir%/sim/sim.cc %reldir%/sim/machine.cc %reldir%/sim/sim.h \
	%reldir%/hostmem.h
