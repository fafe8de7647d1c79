/*
 * core/conf.h: the INI configuration, internal: core/conf.c (lookup and
 * parse), confruntime.c ([runtime] values), confsyntax.c (quoted values,
 * what a line can hold), confprint.c (the printer), conffile.c (reading
 * a file) and params.c (module parameters).
 *
 * cua__config_load() finds and parses the file (through inih), checks the
 * section names and the [runtime] and [device.N] keys, and keeps every
 * section's keys with their line numbers, so that [policy.NAME] and
 * [backend.NAME] sections can be checked later against the schema of the
 * module that reads them (cua__config_params()).
 */
#ifndef CUA_CORE_CONF_H
#define CUA_CORE_CONF_H

#include <cuasync.h>
#include <cuasync/module.h>

#include <stddef.h>

/** One key = value line. */
typedef struct cua__kv {
  char *key;
  char *value;
  int line;
} cua__kv;

/** One [section], in file order. */
typedef struct cua__section {
  char *name; /* "runtime", "policy.round-robin", "device.1", ... */
  int line;   /* line of the [header], 0 for the built-in default */
  cua__kv *kv;
  size_t nkv;
  size_t kvcap; /* entries allocated in kv */
} cua__section;

/** on_policy_error = error | fallback */
enum { CUA__ON_POLICY_ERROR_FAIL = 0, CUA__ON_POLICY_ERROR_FALLBACK = 1 };

/** launch = caller | thread | auto | pipeline | relay */
enum {
  CUA__LAUNCH_CALLER = 0,
  CUA__LAUNCH_THREAD = 1,
  CUA__LAUNCH_AUTO = 2,
  CUA__LAUNCH_PIPELINE = 3,
  CUA__LAUNCH_RELAY = 4
};
/* Whether @p launch hands a submission's list to the launch threads by
 * auto's rule (cua__may_hand_over(): one thread submitting faster than its
 * submissions complete, or several threads submitting), counting the
 * threads in cua_submit() for it. */
static inline int cua__launch_by_rule(int launch) {
  return launch == CUA__LAUNCH_AUTO || launch == CUA__LAUNCH_PIPELINE ||
         launch == CUA__LAUNCH_RELAY;
}
enum { CUA__GRAPHS_OFF = 0, CUA__GRAPHS_AUTO = 1, CUA__GRAPHS_ALWAYS = 2 };

/** A parsed and checked configuration. */
typedef struct cua__config {
  char *path;   /* file read; NULL for built-in default or config_text */
  char *dir;    /* its directory (relative policy_path entries, models and
                   CUA_PARAM_PATH values are resolved against it); NULL
                   when the input is not a file */
  char *origin; /* for messages: the path (a long one shortened in the
                   middle with "..."), "<text>" or "<built-in>" */
  cua__section *sections;
  size_t nsections;
  size_t seccap; /* entries allocated in sections */
  /* [runtime], resolved (defaults filled in, $CUASYNC_POLICY applied). */
  char *backend;       /* "auto" (default), a backend name or a path */
  int backend_line;    /* line of `backend =`, 0 if defaulted */
  int *devices;        /* NULL for all */
  size_t ndevices;     /* entries of devices */
  int devices_line;    /* line of `devices =`, 0 if defaulted */
  char *policy;        /* default "round-robin" */
  int policy_from_env; /* 1 if $CUASYNC_POLICY overrode it */
  char **policy_path;  /* directories from policy_path (':'-separated), */
  size_t npolicy_path; /* relative ones resolved against the file's dir */
  int on_policy_error; /* CUA__ON_POLICY_ERROR_* */
  int policy_line;     /* line of `policy =`, 0 if defaulted */
  int launch;          /* CUA__LAUNCH_*; $CUASYNC_LAUNCH overrides it */
  int launch_from_env; /* 1 if $CUASYNC_LAUNCH overrode it */
  int launch_threads;  /* 1..8, or 0: auto (the default; see
                          cua__launcher_start()); $CUASYNC_LAUNCH_THREADS
                          overrides it */
  int launch_threads_from_env;
  /* models = DIR | memory | off, resolved: "off", "memory" or a directory
   * (a relative one in a file resolved against the file's directory; the
   * default $XDG_CACHE_HOME/cuasync, else $HOME/.cache/cuasync, else
   * memory); $CUASYNC_MODELS overrides it. */
  char *models;
  int models_from;     /* 0: the file or text, 1: $CUASYNC_MODELS, 2: default */
  int pull_depth;      /* pull_depth = 1..1024 (default 2): ops in flight per
                          stream before a pull-mode policy is asked for more */
  int graphs;          /* graphs = off | auto | always: CUA__GRAPHS_* (off);
                          $CUASYNC_GRAPHS overrides it */
  int graphs_from_env; /* 1 if $CUASYNC_GRAPHS overrode it */
  int graph_cache;     /* graph_cache = 1..4096 (default 16): graphs kept */
  char **observers;    /* observers = NAME[, NAME...]: observer modules, */
  size_t nobservers;   /* in order, each once ($CUASYNC_TRACE adds perfetto) */
  size_t nobs_conf;    /* the first of them from `observers =`, the rest
                          from $CUASYNC_TRACE (for messages) */
  int observers_line;  /* line of `observers =`, 0 if none */
  char *trace;         /* $CUASYNC_TRACE: the perfetto observer's path */
  int observer_times;  /* observer_times = ends | device | estimated:
                          CUA__OBS_TIMES_* (ends) */
} cua__config;

/* Where observers' op times come from on a backend that runs ops on the
 * device (cuasync.ini(5), observer_times). */
enum {
  CUA__OBS_TIMES_ENDS = 0,     /* the end of each op on the device */
  CUA__OBS_TIMES_DEVICE = 1,   /* its start and end on the device */
  CUA__OBS_TIMES_ESTIMATED = 2 /* neither: the core estimates both */
};

/**
 * Loads the configuration: @p text if not NULL (origin "<text>"), else
 * @p path if not NULL (CUA_ERR_CONFIG_NOT_FOUND if it cannot be opened, is
 * not a regular file (a directory, FIFO or device), or has more than
 * 16 MiB; the message says which),
 * else $CUASYNC_CONFIG unless @p flags has CUA_RUNTIME_IGNORE_ENV (not found:
 * CUA_ERR_CONFIG_NOT_FOUND naming the variable), else
 * CUA_SYSCONFDIR "/cuasync.ini" if it exists and @p flags lacks
 * CUA_RUNTIME_NO_SYSTEM_CONFIG, else the built-in default (no sections).
 * $CUASYNC_POLICY (unless IGNORE_ENV) overrides policy.
 *
 * Checks: syntax (CUA_ERR_CONFIG_SYNTAX); section names must be
 * "runtime", "policy.NAME", "backend.NAME", "observer.NAME" or "device.N"
 * with N a
 * non-negative integer (CUA_ERR_CONFIG_UNKNOWN_SECTION); [runtime] keys
 * backend, devices, policy, policy_path, on_policy_error, launch, models,
 * pull_depth (CUA_ERR_CONFIG_UNKNOWN_KEY; bad value CUA_ERR_CONFIG_BAD_VALUE);
 * [device.N] key policy; a key given twice in [runtime] or [device.N]
 * (CUA_ERR_CONFIG_DUPLICATE_KEY). Messages are "ORIGIN:LINE: what" and are
 * written into @p err. Whether the backend and policies named exist, and
 * the keys of [backend.NAME] and [policy.NAME], are checked when a runtime
 * opens, against the modules found (core/backend.c, core/runtime.c).
 */
int cua__config_load(cua__config **out, const char *path, const char *text,
                     unsigned flags, char *err, size_t errlen);
void cua__config_free(cua__config *cfg);

/** The section called @p name, or NULL. */
const cua__section *cua__config_section(const cua__config *cfg,
                                        const char *name);

/**
 * Checks section @p name (may be absent: all defaults) against a module's
 * schema and produces one value per spec (defaults filled in; a spec with no
 * default and no key has present = 0 and s = NULL). Errors, with
 * "ORIGIN:LINE: [section] key: what": unknown key (CUA_ERR_CONFIG_UNKNOWN_KEY,
 * listing the valid keys), bad type (CUA_ERR_CONFIG_BAD_VALUE), out of range
 * (CUA_ERR_CONFIG_OUT_OF_RANGE, naming the range), enum value not among the
 * choices (CUA_ERR_CONFIG_BAD_VALUE, naming them), key repeated without
 * CUA_PARAM_MULTI (CUA_ERR_CONFIG_DUPLICATE_KEY).
 * The values (and their strings) belong to *out; free with
 * cua__config_params_free().
 */
int cua__config_params(const cua__config *cfg, const char *name,
                       const cua_param_spec *spec, size_t nspec,
                       cua_param_value **out, char *err, size_t errlen);
void cua__config_params_free(cua_param_value *values, size_t nspec);
/**
 * The @p n values @p v at the element size @p stride a module was built
 * with (cua_policy_descriptor::param_value_size and the observer's): *out
 * is @p v itself when the sizes agree, else a copy made into *copy (the
 * fields the module does not know left out, those the core does not know
 * zero), which the caller frees. 0 or CUA_ERR_NOMEM.
 */
int cua__params_restride(const cua_param_value *v, size_t n, size_t stride,
                         void **copy, const void **out);

/** The policy named by [device.N] `policy =`, or NULL. */
const char *cua__config_device_policy(const cua__config *cfg, int device,
                                      int *line);

/**
 * Writes the resolved configuration as INI text into @p file (a FILE *),
 * for cuasync-info: [runtime] with every key (defaults filled in,
 * $CUASYNC_POLICY applied, policy_path entries resolved), then the other
 * sections with their keys in file order, under a comment naming the
 * origin. Loading that text gives the same configuration, byte for byte:
 * a value that a plain one cannot carry (blanks at its ends, a ';' after a
 * blank or at its start, a leading '"', control characters) is written
 * quoted with escapes, and a line is written without blanks around '='
 * where the blanks would make it longer than the parser takes. Whatever
 * cua__config_load() read prints. What does not (a policy_path entry
 * holding ':', a $CUASYNC_POLICY longer than a line, a key or section
 * name that no line can give) is refused: CUA_ERR_CONFIG_BAD_VALUE with
 * "[section] key: what" in @p err, and nothing is written. CUA_ERR_INVAL
 * for a NULL @p cfg or @p file; CUA_ERR_NOMEM if inih cannot say its line
 * length.
 */
int cua__config_print(const cua__config *cfg, void *file, char *err,
                      size_t errlen);

/* ------------------------------------------------------------------ */
/* Between the parts of the parser: core/conf.c reads lines, sections and
 * keys (through inih), core/confruntime.c checks the [runtime] values. */

/** The state shared by the reader and the handlers while one input is
 * parsed. */
typedef struct cua__conf_parser {
  cua__config *cfg;
  const char *text; /* the whole input */
  size_t len;       /* its length in bytes */
  size_t pos;       /* offset of the next line */
  int line;         /* number of the line last handed to inih */
  size_t cur;       /* index of the current section, or (size_t)-1 */
  const char *dir;  /* directory of the file, for relative policy_path
                       entries; NULL when the input is not a file */
  int code;         /* first error, 0 if none */
  int err_line;     /* its line */
  char *err;
  size_t errlen;
} cua__conf_parser;

/** Records the first error of a parse as "ORIGIN:LINE: message" and
 * returns it (an earlier error's code if there was one). */
int cua__conf_fail(cua__conf_parser *p, int code, int line, const char *fmt,
                   ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/** Parses a non-negative decimal int of @p n bytes without sign, blanks or
 * leading zeros. Returns 0 or -1. */
int cua__conf_parse_index(const char *s, size_t n, int *out);

/** The longest line, without its newline, that the parser reads (inih's
 * line buffer less the newline and the NUL); 0 if inih cannot say. */
size_t cua__conf_line_max(void);

/* confsyntax.c: values and names as inih reads them. */

/** Reads the quoted value @p v (it starts with '"') of key @p key in
 * section @p sec into *out (cua__malloc(); free() it). Returns 0 or the
 * error recorded (CUA_ERR_CONFIG_SYNTAX, CUA_ERR_NOMEM). */
int cua__conf_unquote(cua__conf_parser *p, const char *sec, const char *key,
                      const char *v, char **out);

/** What cua__conf_plain() says of a value written as it is. */
enum { CUA__PLAIN_NO = 0, CUA__PLAIN_RAW = 1, CUA__PLAIN_NICE = 2 };

/** Whether @p v written as it is after "key =" (@p spaced: "key = ")
 * reads back as itself: CUA__PLAIN_NICE, CUA__PLAIN_RAW when it does but
 * holds control characters, or CUA__PLAIN_NO. */
int cua__conf_plain(const char *v, int spaced);

/** Writes @p v quoted into @p file (a FILE *, or NULL for nothing) and
 * returns the length of that, quotes included. */
size_t cua__conf_quote(void *file, const char *v);

/** Whether a line can give key @p key (1) or not (0). */
int cua__conf_key_ok(const char *key);

/** Whether a [header] line can give section name @p name (1) or not. */
int cua__conf_name_ok(const char *name);

/** Checks and stores one [runtime] key (core/confruntime.c). Returns 0 or
 * the error recorded. */
/* CUA__LAUNCH_* for a `launch` value, or -1. */
int cua__conf_launch_value(const char *value);
/* The `launch_threads` value of @p value (1..8, 0 for auto), or an error
 * code (negative) with the reason in @p err ("9 is out of range [1, 8]"). */
int cua__conf_launch_threads_value(const char *value, char *err, size_t errlen);
/* The `launch` value of a CUA__LAUNCH_*. */
const char *cua__conf_launch_name(int launch);
/* CUA__GRAPHS_* for "off", "auto" or "always"; -1 for anything else. */
int cua__conf_graphs_value(const char *value);
/* Adds observer NAME (n bytes) unless there (confruntime.c): 0 or
 * CUA_ERR_NOMEM. */
int cua__conf_add_observer(cua__config *cfg, const char *name, size_t n);
int cua__conf_runtime_key(cua__conf_parser *p, const char *key,
                          const char *value);

/* conffile.c */
int cua__conf_read_file(const char *path, char **text, size_t *len, char *why,
                        size_t whylen);
char *cua__conf_short_path(const char *path);
char *cua__conf_dir_of(const char *path);

#endif /* CUA_CORE_CONF_H */
