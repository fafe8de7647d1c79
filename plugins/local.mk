# Observers, each a module in $(pkglibdir)/observers.
observer_LTLIBRARIES += %reldir%/perfetto.la
%canon_reldir%_perfetto_la_SOURCES = %reldir%/perfetto/perfetto.c
%canon_reldir%_perfetto_la_LDFLAGS = $(MODULE_LDFLAGS)

# Device backends, each a module in $(pkglibdir)/backends.
backend_LTLIBRARIES += %reldir%/host.la
%canon_reldir%_host_la_SOURCES = %reldir%/host/host.c
%canon_reldir%_host_la_LDFLAGS = $(MODULE_LDFLAGS)

if HAVE_CUDA
backend_LTLIBRARIES += %reldir%/cuda.la
%canon_reldir%_cuda_la_SOURCES = %reldir%/cuda/cuda.c
%canon_reldir%_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir)/kernels
%canon_reldir%_cuda_la_LIBADD = kernels/libcuasync-kernels.la $(CUDA_LIBS)
%canon_reldir%_cuda_la_LDFLAGS = $(MODULE_LDFLAGS)
endif
EXTRA_DIST += %reldir%/cuda/cuda.c
