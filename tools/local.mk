bin_PROGRAMS += %reldir%/cuasync-info
%canon_reldir%_cuasync_info_SOURCES = %reldir%/cuasync-info.c
%canon_reldir%_cuasync_info_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
%canon_reldir%_cuasync_info_LDADD = core/libcuasync-core.la $(INIH_LIBS)
