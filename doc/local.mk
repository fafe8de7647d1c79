# Man pages, the policy-writing guide and the examples. The guide, the
# design notes, the misuse table and the examples are installed under
# $(docdir), where the man pages point; the examples are built against an
# installed cuasync (each folder has its own Makefile, driven by
# pkg-config), so they are shipped and installed as sources, not built by
# this tree.
dist_man_MANS += \
	%reldir%/man/cuasync.3 \
	%reldir%/man/cuasync.ini.5 \
	%reldir%/man/cuasync-info.1 \
	%reldir%/man/cuasync-policy.7 \
	%reldir%/man/cuasync-observer.7 \
	%reldir%/man/cuasync-backend.7 \
	%reldir%/man/cuasync-sim.7

dist_doc_DATA = \
	%reldir%/policy-guide.md \
	%reldir%/design.md \
	%reldir%/tracing.md \
	%reldir%/misuse.md

customexampledir = $(docdir)/examples/custom-policy
dist_customexample_DATA = \
	%reldir%/examples/custom-policy/Makefile \
	%reldir%/examples/custom-policy/README.md \
	%reldir%/examples/custom-policy/random-policy.c \
	%reldir%/examples/custom-policy/random.ini

graphexampledir = $(docdir)/examples/graph
dist_graphexample_DATA = \
	%reldir%/examples/graph/Makefile \
	%reldir%/examples/graph/README.md \
	%reldir%/examples/graph/graph.c

pipelineexampledir = $(docdir)/examples/pipeline
dist_pipelineexample_DATA = \
	%reldir%/examples/pipeline/Makefile \
	%reldir%/examples/pipeline/README.md \
	%reldir%/examples/pipeline/pipeline.c \
	%reldir%/examples/pipeline/pipeline.ini
