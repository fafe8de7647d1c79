/*
 * core/conffile.c: reading a configuration file, safely.
 *
 * Only regular files are read, whole, up to a size limit: a FIFO, a device
 * or a socket given as the configuration fails at once with what it is,
 * instead of blocking or filling memory. Paths in messages are shortened
 * in the middle so the reason always fits. No lock: called by
 * cua__config_load() on the caller's thread.
 */
#include "config.h"

#include "conf.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The largest configuration file read. Real ones are a few kilobytes; the
 * limit makes a wrong path (a log, a disk image, a device) fail at once
 * instead of filling memory. */
#define MAX_CONFIG_SIZE ((size_t)16 << 20)

/* What a file that is not a regular one is, for messages. */
static const char *file_kind(mode_t mode) {
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/*
 * Reads a whole regular file. Returns 0, or -1 with errno set and the
 * reason in @p why. The file is opened with O_NONBLOCK so that a FIFO with
 * no writer cannot block the open, and anything but a regular file is
 * refused before it is read: a FIFO would block the read instead, and
 * /dev/zero never ends. Directories keep their errno (EISDIR).
 */
int cua__conf_read_file(const char *path, char **text, size_t *len, char *why,
                        size_t whylen) {
  struct stat st;
  char *buf = NULL, *grown;
  size_t cap, n = 0;
  ssize_t got;
  int fd, saved;

  fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    cua__put_err(why, whylen, "%s", strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0) {
    cua__put_err(why, whylen, "%s", strerror(errno));
    goto fail;
  }
  if (S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    cua__put_err(why, whylen, "%s", strerror(errno));
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    cua__put_err(why, whylen, "it is %s, not a regular file",
                 file_kind(st.st_mode));
    goto fail;
  }
  if (st.st_size < 0 || (uintmax_t)st.st_size > MAX_CONFIG_SIZE) {
    errno = EFBIG;
    cua__put_err(why, whylen,
                 "it is %jd bytes, more than the %zu MiB a configuration file "
                 "may have",
                 (intmax_t)st.st_size, MAX_CONFIG_SIZE >> 20);
    goto fail;
  }
  /* The size is a hint: the file may change while it is read, and some
   * (in /proc) say 0. The limit holds whatever the reads return. */
  cap = (size_t)st.st_size + 4096;
  if (cap > MAX_CONFIG_SIZE + 2)
    cap = MAX_CONFIG_SIZE + 2;
  buf = cua__malloc(cap);
  if (buf == NULL)
    goto nomem;
  for (;;) {
    if (n + 1 >= cap) {
      cap = cap > (MAX_CONFIG_SIZE + 2) / 2 ? MAX_CONFIG_SIZE + 2 : cap * 2;
      grown = cua__realloc(buf, cap);
      if (grown == NULL)
        goto nomem;
      buf = grown;
    }
    got = read(fd, buf + n, cap - 1 - n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      cua__put_err(why, whylen, "%s", strerror(errno));
      goto fail;
    }
    if (got == 0)
      break;
    n += (size_t)got;
    if (n > MAX_CONFIG_SIZE) {
      errno = EFBIG;
      cua__put_err(why, whylen,
                   "it has more than the %zu MiB a configuration file may have",
                   MAX_CONFIG_SIZE >> 20);
      goto fail;
    }
  }
  close(fd);
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return 0;

nomem:
  errno = ENOMEM;
  cua__put_err(why, whylen, "%s", strerror(errno));
fail:
  saved = errno;
  close(fd);
  free(buf);
  errno = saved;
  return -1;
}

/* A copy of @p path for messages: whole when short, else its head and tail
 * around "...", so that a message built around a very long path still
 * ends with the reason. */
char *cua__conf_short_path(const char *path) {
  enum { KEEP = 120 };
  size_t n = strlen(path);
  char *s;

  if (n <= 2 * KEEP + 3)
    return cua__strdup(path);
  s = cua__malloc(2 * KEEP + 4);
  if (s != NULL) {
    memcpy(s, path, KEEP);
    memcpy(s + KEEP, "...", 3);
    memcpy(s + KEEP + 3, path + n - KEEP, KEEP + 1);
  }
  return s;
}

/* The directory part of @p path ("." when it has none). */
char *cua__conf_dir_of(const char *path) {
  const char *slash = strrchr(path, '/');

  if (slash == NULL)
    return cua__strdup(".");
  if (slash == path)
    return cua__strdup("/");
  {
    size_t n = (size_t)(slash - path);
    char *d = cua__malloc(n + 1);
    if (d != NULL) {
      memcpy(d, path, n);
      d[n] = '\0';
    }
    return d;
  }
}
