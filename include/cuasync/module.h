/**
 * @file cuasync/module.h
 * @brief What every loadable module (policy or backend) shares: parameter
 * schemas, parameter values, log levels.
 *
 * A module declares the keys its INI section accepts as an array of
 * #cua_param_spec. The core validates the section against it (unknown key,
 * bad type, out of range: an error with file and line) and hands the module
 * one #cua_param_value per spec, in the same order, defaults filled in.
 */
#ifndef CUASYNC_MODULE_H
#define CUASYNC_MODULE_H

#include <cuasync/common.h>

/** Types of a module parameter. */
typedef enum cua_param_type {
  CUA_PARAM_INT = 1,    /**< integer, checked against [min, max] and
                             the range of int64_t (cua_param_value::i) */
  CUA_PARAM_DOUBLE = 2, /**< real, checked against [min, max] */
  CUA_PARAM_BOOL = 3,   /**< true/false, yes/no, on/off, 1/0 */
  CUA_PARAM_STRING = 4, /**< any text */
  CUA_PARAM_ENUM = 5,   /**< one of the '|'-separated words in choices */
} cua_param_type;

/** The key may be given several times; values arrive as a list. */
#define CUA_PARAM_MULTI 0x1u
/** CUA_PARAM_STRING: a file name. A relative one given in a configuration
 * file arrives resolved against that file's directory (as `policy_path`
 * and `models` are); in configuration text or as the default, as it is
 * (the working directory's). */
#define CUA_PARAM_PATH 0x2u

/** One parameter of a module's schema. */
typedef struct cua_param_spec {
  const char *name;          /**< INI key: one a line can give (not
                                  empty, no blank at either end, no '='
                                  or ':'), or the module is refused */
  cua_param_type type;       /**< its type */
  const char *default_value; /**< as INI text; NULL: no default (absent) */
  double min;                /**< INT/DOUBLE: smallest allowed value */
  double max;                /**< INT/DOUBLE: largest allowed value */
  const char *choices;       /**< ENUM: "a|b|c", no word empty */
  const char *help;          /**< one line, shown by cuasync-info */
  unsigned flags;            /**< CUA_PARAM_* flags; one this library
                                  does not know, or CUA_PARAM_PATH on
                                  a type but STRING, and the module is
                                  refused */
} cua_param_spec;

/** The value of one parameter, as handed to a module's create(). */
typedef struct cua_param_value {
  int present;             /**< 1 if given in the INI file, 0 if defaulted */
  int64_t i;               /**< INT, BOOL (0/1), ENUM (index into choices) */
  double d;                /**< DOUBLE (and INT, converted) */
  const char *s;           /**< the text as written (or the default), or NULL */
  const char *const *list; /**< MULTI: every value given, in file order */
  size_t count;            /**< MULTI: number of values in list */
} cua_param_value;

/** Log levels of the host tables' log(). */
typedef enum cua_log_level {
  CUA_LOG_ERROR = 0,
  CUA_LOG_WARN = 1,
  CUA_LOG_INFO = 2,
  CUA_LOG_DEBUG = 3,
} cua_log_level;

#endif /* CUASYNC_MODULE_H */
