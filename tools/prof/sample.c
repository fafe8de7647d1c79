/*
 * tools/prof/sample.c: a sampling profiler for machines without perf (the
 * lent GPU machines have no perf, and Nsight Systems cannot write reports
 * there). Not built by make; x86-64 Linux with glibc only:
 *
 *   cc -O2 -shared -fPIC -o /tmp/sample.so tools/prof/sample.c
 *   PROF_OUT=/tmp/prof LD_PRELOAD=/tmp/sample.so ./tools/.libs/cuasync-bench
 * ... python3 tools/prof/report.py /tmp/prof.PID [TOP] [FILTER]
 *
 * ITIMER_PROF delivers SIGPROF to the thread that used the CPU, at the
 * kernel's tick (about 250 per second of CPU there); the handler keeps the
 * interrupted address and a backtrace() of the thread. At exit the samples
 * go to PROF_OUT.PID, one line per sample: the thread id, then each frame
 * as OBJECT@ADDRESS (relative to the object, for addr2line). PROF_US sets
 * the timer's period in microseconds (default 200; the tick bounds it).
 * report.py turns them into self and inclusive profiles per thread.
 * Samples are kept up to 2^19; the program must end through exit().
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#define MAXS (1u << 19) /* samples kept */
#define DEPTH 24        /* frames per sample */

typedef struct {
  uintptr_t pc;    /* where the thread was */
  void *bt[DEPTH]; /* backtrace() from the handler */
  int nbt;
  int tid;
} sample;

static sample *S;
static atomic_uint ns;

/* The handler: async-signal-safe but for backtrace(), whose first call
 * (which loads libgcc_s) start() makes. */
static void on_prof(int sig, siginfo_t *si, void *u) {
  (void)sig;
  (void)si;
  ucontext_t *uc = u;
  unsigned i = atomic_fetch_add(&ns, 1);
  if (i < MAXS) {
    S[i].pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    S[i].nbt = backtrace(S[i].bt, DEPTH);
    S[i].tid = (int)syscall(SYS_gettid);
  }
}

__attribute__((constructor)) static void start(void) {
  S = calloc(MAXS, sizeof *S);
  if (S == NULL)
    return;
  void *warm[4];
  backtrace(warm, 4); /* loads libgcc_s before any signal */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  const char *us = getenv("PROF_US"); /* timer period, microseconds */
  long v = us ? atol(us) : 200;
  struct itimerval it = {{0, v}, {0, v}};
  setitimer(ITIMER_PROF, &it, NULL);
}

/* Which loaded object holds pc, and pc relative to it. */
typedef struct {
  uintptr_t pc;
  const char *name;
  uintptr_t vma;
} lookup;

static int find(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  lookup *l = data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD)
      continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (l->pc >= lo && l->pc < lo + ph->p_memsz) {
      l->name = info->dlpi_name;
      l->vma = l->pc - info->dlpi_addr;
      return 1;
    }
  }
  return 0;
}

/* At exit: every sample, each frame as OBJECT@ADDRESS. */
__attribute__((destructor)) static void stop(void) {
  struct itimerval it = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &it, NULL);
  const char *out = getenv("PROF_OUT");
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", out ? out : "/tmp/prof", getpid());
  FILE *f = S != NULL ? fopen(path, "w") : NULL;
  if (f == NULL)
    return;
  char exe[4096];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[k > 0 ? k : 0] = 0;
  unsigned n = atomic_load(&ns);
  if (n > MAXS)
    n = MAXS;
  for (unsigned i = 0; i < n; i++) {
    fprintf(f, "%d", S[i].tid);
    for (int j = -1; j < S[i].nbt; j++) {
      if (j >= 0 && j < 2)
        continue; /* the handler and the signal trampoline */
      uintptr_t pc = j < 0 ? S[i].pc : (uintptr_t)S[i].bt[j] - 1;
      if (j == 2 && pc + 1 == S[i].pc)
        continue;
      lookup l = {pc, NULL, 0};
      dl_iterate_phdr(find, &l);
      const char *name = l.name && l.name[0] ? l.name : (l.name ? exe : "?");
      fprintf(f, " %s@0x%lx", name, (unsigned long)(l.name ? l.vma : pc));
    }
    fprintf(f, "\n");
  }
  fclose(f);
}
