include_HEADERS += %reldir%/cuasync.h
cuasyncincdir = $(includedir)/cuasync
cuasyncinc_HEADERS = \
	%reldir%/cuasync/common.h \
	%reldir%/cuasync/opkinds.h \
	%reldir%/cuasync/errors.h \
	%reldir%/cuasync/module.h \
	%reldir%/cuasync/policy.h \
	%reldir%/cuasync/observer.h \
	%reldir%/cuasync/backend.h
nodist_cuasyncinc_HEADERS = %reldir%/cuasync/version.h
DISTCLEANFILES += %reldir%/cuasync/version.h
