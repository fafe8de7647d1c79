# Man pages, the policy-writing guide, and the examples built against an
# installed cuasync (each folder has its own Makefile, driven by pkg-config,
# so they are shipped as sources and not built by this tree).
dist_man_MANS += \
	%reldir%/man/cuasync.3 \
	%reldir%/man/cuasync.ini.5 \
	%reldir%/man/cuasync-info.1 \
	%reldir%/man/cuasync-policy.7

EXTRA_DIST += \
	%reldir%/policy-guide.md \
	%reldir%/examples/custom-policy/Makefile \
	%reldir%/examples/custom-policy/README.md \
	%reldir%/examples/custom-policy/random-policy.c \
	%reldir%/examples/custom-policy/random.ini \
	%reldir%/examples/pipeline/Makefile \
	%reldir%/examples/pipeline/README.md \
	%reldir%/examples/pipeline/pipeline.c \
	%reldir%/examples/pipeline/pipeline.ini
