# The runtime: a convenience library (also linked by the tests that reach
# internals) wrapped into the installed libcuasync.
noinst_LTLIBRARIES += %reldir%/libcuasync-core.la
%canon_reldir%_libcuasync_core_la_SOURCES = \
	%reldir%/internal.h \
	%reldir%/nodes.h \
	%reldir%/stages.h \
	%reldir%/util.c \
	%reldir%/pool.c \
	%reldir%/conf.h \
	%reldir%/jsonstr.h \
	%reldir%/conf.c \
	%reldir%/confruntime.c \
	%reldir%/confprint.c \
	%reldir%/confsyntax.c \
	%reldir%/conffile.c \
	%reldir%/params.c \
	%reldir%/loader.h \
	%reldir%/loader.c \
	%reldir%/modcheck.c \
	%reldir%/modsearch.c \
	%reldir%/runtime.c \
	%reldir%/rtpolicies.c \
	%reldir%/backend.c \
	%reldir%/policyhost.c \
	%reldir%/models.h \
	%reldir%/modelstore.h \
	%reldir%/models.c \
	%reldir%/modelfile.c \
	%reldir%/modelline.c \
	%reldir%/op.c \
	%reldir%/combine.c \
	%reldir%/buffer.c \
	%reldir%/dag.c \
	%reldir%/graph.c \
	%reldir%/cycles.c \
	%reldir%/plan.c \
	%reldir%/node.c \
	%reldir%/hazards.c \
	%reldir%/place.c \
	%reldir%/pull.c \
	%reldir%/commands.c \
	%reldir%/flush.c \
	%reldir%/executor.c \
	%reldir%/launcher.c \
	%reldir%/complete.c \
	%reldir%/observe.c \
	%reldir%/submit.c \
	%reldir%/graphs.h \
	%reldir%/capture.c \
	%reldir%/schedule.c \
	%reldir%/graphbuild.c \
	%reldir%/replay.c \
	%reldir%/graphcache.c \
	%reldir%/future.c
%canon_reldir%_libcuasync_core_la_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
%canon_reldir%_libcuasync_core_la_LIBADD = $(INIH_LIBS) -lm

lib_LTLIBRARIES += libcuasync.la
libcuasync_la_SOURCES =
libcuasync_la_LIBADD = %reldir%/libcuasync-core.la $(INIH_LIBS)
libcuasync_la_LDFLAGS = $(AM_LDFLAGS) -no-undefined -version-info $(CUA_LT_VERSION)
