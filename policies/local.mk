# The standard scheduling policies, each a module in $(pkglibdir)/policies.
policy_LTLIBRARIES += \
	%reldir%/single-stream.la \
	%reldir%/round-robin.la \
	%reldir%/least-loaded.la \
	%reldir%/affinity.la \
	%reldir%/heft.la \
	%reldir%/dmda.la \
	%reldir%/work-stealing.la
%canon_reldir%_single_stream_la_SOURCES = %reldir%/single-stream.c
%canon_reldir%_single_stream_la_LDFLAGS = $(MODULE_LDFLAGS)
%canon_reldir%_round_robin_la_SOURCES = %reldir%/round-robin.c
%canon_reldir%_round_robin_la_LDFLAGS = $(MODULE_LDFLAGS)
%canon_reldir%_least_loaded_la_SOURCES = %reldir%/least-loaded.c
%canon_reldir%_least_loaded_la_LDFLAGS = $(MODULE_LDFLAGS)
%canon_reldir%_affinity_la_SOURCES = %reldir%/affinity.c
%canon_reldir%_affinity_la_LDFLAGS = $(MODULE_LDFLAGS)
%canon_reldir%_heft_la_SOURCES = %reldir%/heft.c
%canon_reldir%_heft_la_LDFLAGS = $(MODULE_LDFLAGS)
%canon_reldir%_dmda_la_SOURCES = %reldir%/dmda.c
%canon_reldir%_dmda_la_LDFLAGS = $(MODULE_LDFLAGS)
%canon_reldir%_work_stealing_la_SOURCES = %reldir%/work-stealing.c
%canon_reldir%_work_stealing_la_LDFLAGS = $(MODULE_LDFLAGS)
