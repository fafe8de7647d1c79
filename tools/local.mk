bin_PROGRAMS += %reldir%/cuasync-info
%canon_reldir%_cuasync_info_SOURCES = %reldir%/cuasync-info.c
%canon_reldir%_cuasync_info_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
%canon_reldir%_cuasync_info_LDADD = core/libcuasync-core.la $(INIH_LIBS)

# cuasync-info's options, outputs and exit codes, run on the modules just
# built (AM_TESTS_ENVIRONMENT in tests/local.mk).
TESTS += tests/check_info.sh
EXTRA_DIST += tests/check_info.sh
