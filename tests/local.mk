# Check suites, one per unit. Tests load the modules just built, never
# installed ones, and never read the user's or the system's configuration.
AM_TESTS_ENVIRONMENT = \
	CUASYNC_MODULE_PATH='$(abs_top_builddir)/policies/.libs:$(abs_top_builddir)/plugins/.libs:$(abs_top_builddir)/tests/modules/.libs'; \
	export CUASYNC_MODULE_PATH; \
	CUASYNC_TEST_FIXTURES='$(abs_top_srcdir)/tests/fixtures'; export CUASYNC_TEST_FIXTURES; \
	CUASYNC_TEST_BUILDDIR='$(abs_top_builddir)'; export CUASYNC_TEST_BUILDDIR; \
	unset CUASYNC_CONFIG CUASYNC_POLICY; \
	CK_DEFAULT_TIMEOUT=120; export CK_DEFAULT_TIMEOUT;

TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(INIH_CFLAGS)
TEST_LIBS = core/libcuasync-core.la $(CHECK_LIBS) $(INIH_LIBS)
EXTRA_DIST += %reldir%/helpers.h %reldir%/fixtures

TEST_MODULE_LDFLAGS = $(MODULE_LDFLAGS) -rpath /nowhere
