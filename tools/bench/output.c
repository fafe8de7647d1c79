/*
 * tools/bench/output.c: the table, CSV, JSON and SVG of cuasync-bench.
 *
 * Every format carries the same rows and the same header facts (versions,
 * machine, parameters). Quantities that do not apply to a row are NAN in
 * memory and written as "-" (table), an empty field (CSV) or null (JSON).
 */
#include "config.h"

#include "jsonstr.h"
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const csv_columns =
    "workload,contender,kind,backend,submit,tasks,width,streams,devices,"
    "repeat,"
    "duration_ns,blocks,task_ns,makespan_ns,per_task_ns,throughput_per_s,"
    "overhead_ns_per_op,ideal_ns,efficiency,concurrency,events_per_kop,"
    "waits_per_kop,ratio_vs_best_raw,best_raw,build_ns_per_op,"
    "capture_ns_per_op,create_vs_raw_graph,create_vs_raw_same,"
    "vs_raw_same_graph,lat_p50_ns,"
    "lat_p99_ns,metg_ns,metg_state,thread_scaling,lpt_ns,vs_lpt,"
    "peer_waits_per_kop,submit_ns_per_op,valid,error";

static const char *metg_state_name(int s) {
  switch (s) {
  case BENCH_METG_FOUND:
    return "found";
  case BENCH_METG_BELOW:
    return "below-range";
  case BENCH_METG_NOT_REACHED:
    return "not-reached";
  default:
    return "";
  }
}

static char *fmt_time(char *buf, size_t len, double ns) {
  double a = fabs(ns);
  if (isnan(ns))
    snprintf(buf, len, "-");
  else if (a < 1e3)
    snprintf(buf, len, "%.0fns", ns);
  else if (a < 1e6)
    snprintf(buf, len, "%.1fus", ns / 1e3);
  else if (a < 1e9)
    snprintf(buf, len, "%.2fms", ns / 1e6);
  else
    snprintf(buf, len, "%.2fs", ns / 1e9);
  return buf;
}

static char *fmt_rate(char *buf, size_t len, double v) {
  if (isnan(v))
    snprintf(buf, len, "-");
  else if (v >= 1e6)
    snprintf(buf, len, "%.2fM", v / 1e6);
  else if (v >= 1e3)
    snprintf(buf, len, "%.1fk", v / 1e3);
  else
    snprintf(buf, len, "%.0f", v);
  return buf;
}

static char *fmt_fixed(char *buf, size_t len, double v, int prec) {
  if (isnan(v))
    snprintf(buf, len, "-");
  else
    snprintf(buf, len, "%.*f", prec, v);
  return buf;
}

static char *fmt_metg(char *buf, size_t len, const bench_row *r) {
  char t[32];
  switch (r->metg_state) {
  case BENCH_METG_FOUND:
    snprintf(buf, len, "%s", fmt_time(t, sizeof t, r->metg_ns));
    break;
  case BENCH_METG_BELOW:
    snprintf(buf, len, "<=%s", fmt_time(t, sizeof t, r->metg_ns));
    break;
  case BENCH_METG_NOT_REACHED:
    snprintf(buf, len, "none");
    break;
  default:
    snprintf(buf, len, "-");
  }
  return buf;
}

/* What the environment changed in the runtimes' configuration
 * (cuasync.ini(5), ENVIRONMENT), written with the results so that two
 * result files say whether they ran alike: the launch mode and threads
 * above all, which move every ratio of the small-op workloads. */
static const char *const env_vars[] = {
    "CUASYNC_CONFIG",         "CUASYNC_POLICY", "CUASYNC_LAUNCH",
    "CUASYNC_LAUNCH_THREADS", "CUASYNC_GRAPHS", "CUASYNC_MODELS"};
#define NENV_VARS (sizeof env_vars / sizeof *env_vars)

static void header_lines(FILE *out, const char *prefix, const bench_meta *m) {
  fprintf(out, "%scuasync-bench %s, %s, host %s, backends %s\n", prefix,
          m->version, m->date, m->hostname, m->backends);
  fprintf(out, "%scpu: %s (%ld online)\n", prefix, m->cpu, m->cpus);
  if (m->have_cuda_info)
    fprintf(out,
            "%sgpu: %s (compute %d.%d), %d device(s), driver %d.%d, "
            "runtime %d.%d\n",
            prefix, m->cuda.gpu, m->cuda.cc_major, m->cuda.cc_minor,
            m->cuda.gpus, m->cuda.driver_version / 1000,
            m->cuda.driver_version % 1000 / 10, m->cuda.runtime_version / 1000,
            m->cuda.runtime_version % 1000 / 10);
  else
    fprintf(out, "%sgpu: none\n", prefix);
  char d[32], task[96];
  if (m->axpy)
    snprintf(task, sizeof task, "axpy over %zu bytes", m->bytes);
  else
    snprintf(task, sizeof task, "spin %s x %u block(s)",
             fmt_time(d, sizeof d, (double)m->duration_ns), m->blocks);
  fprintf(out,
          "%sparameters: tasks %zu, width %d, %s, %d stream(s) per device "
          "for baselines and ideal, seed %llu, skew %u (%u%% of spins), "
          "hints %s, patterns on %s, median of %d run(s) after 1 "
          "warm-up%s%s, submission %s%s%s\n",
          prefix, m->tasks, m->width, task, m->streams,
          (unsigned long long)m->seed, m->skew ? m->skew : 1,
          m->skew_share ? m->skew_share : 25, m->no_hints ? "off" : "on",
          m->all_devices ? "every device" : "device 0 (multigpu: every device)",
          m->repeat, m->quick ? ", quick" : "", m->metg ? ", METG sweep" : "",
          m->submit, m->machine ? ", machine " : "",
          m->machine ? m->machine : "");
  int any = 0;
  fprintf(out, "%senvironment:", prefix);
  for (size_t i = 0; i < NENV_VARS; i++) {
    const char *v = getenv(env_vars[i]);
    if (v != NULL && *v != '\0') {
      fprintf(out, " %s=%s", env_vars[i], v);
      any = 1;
    }
  }
  fprintf(out, "%s\n", any ? "" : " none");
}

/* Whether a row ran faster than its critical path: invalid but not failed
 * (the table's !; a failed row says FAILED instead). */
static int too_fast(const bench_row *r) {
  return !r->valid && r->error[0] == '\0';
}

static void write_table(FILE *out, const bench_meta *m, const bench_row *rows,
                        size_t n) {
  int cw = 10; /* the contender column fits the longest label */
  for (size_t i = 0; i < n; i++) {
    int l = (int)strlen(rows[i].contender) + too_fast(&rows[i]);
    cw = l > cw ? l : cw;
  }
  header_lines(out, "# ", m);
  fprintf(out,
          "%-13s %-*s %-4s %-6s %7s %9s %9s %8s %9s %5s %5s %7s %7s %8s "
          "%8s %8s %6s %6s\n",
          "workload", cw, "contender", "be", "submit", "tasks", "makespan",
          "per-task", "tasks/s", "ovh/op", "eff", "conc", "ev/kop", "vs-raw",
          "p50", "p99", "METG", "x1thr", "vs-lpt");
  for (size_t i = 0; i < n; i++) {
    const bench_row *r = &rows[i];
    char a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32], k[32], l[32],
        mm[32], sc[32], lp[32];
    char who[sizeof r->contender + 2];
    snprintf(who, sizeof who, "%s%s", r->contender, too_fast(r) ? "!" : "");
    if (r->error[0]) {
      fprintf(out, "%-13s %-*s %-4s %-6s FAILED: %s\n", r->workload, cw, who,
              r->backend, r->submit, r->error);
      continue;
    }
    fprintf(out,
            "%-13s %-*s %-4s %-6s %7zu %9s %9s %8s %9s %5s %5s %7s %7s %8s "
            "%8s %8s %6s %6s\n",
            r->workload, cw, who, r->backend, r->submit, r->tasks,
            fmt_time(a, sizeof a, r->makespan_ns),
            fmt_time(b, sizeof b, r->per_task_ns),
            fmt_rate(c, sizeof c, r->throughput),
            fmt_time(d, sizeof d, r->overhead_ns),
            fmt_fixed(e, sizeof e, r->efficiency, 2),
            fmt_fixed(f, sizeof f, r->concurrency, 2),
            fmt_fixed(g, sizeof g, r->events_per_kop, 0),
            fmt_fixed(h, sizeof h, r->ratio, 2),
            fmt_time(k, sizeof k, r->lat_p50_ns),
            fmt_time(l, sizeof l, r->lat_p99_ns), fmt_metg(mm, sizeof mm, r),
            fmt_fixed(sc, sizeof sc, r->scaling, 2),
            fmt_fixed(lp, sizeof lp, r->vs_lpt, 2));
  }
  fprintf(out, "# vs-raw: makespan (latency: p50; dispatch: ns per call) "
               "divided by the best baseline's; ! marks a run faster than "
               "its critical path; x1thr: submit-mt rate over one thread's; "
               "vs-lpt (independent tasks): makespan over the offline "
               "longest-processing-time-first schedule's\n");
}

/* ------------------------------------------------------------ CSV */

static void csv_str(FILE *out, const char *s) {
  if (strpbrk(s, ",\"\n\r") == NULL) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

/* A number as CSV and JSON write it: a whole number (nanoseconds, counts)
 * exactly, any other with 9 significant digits. */
static void put_num(FILE *out, double v) {
  if (fabs(v) < 0x1p53 && v == floor(v))
    fprintf(out, "%.0f", v);
  else
    fprintf(out, "%.9g", v);
}

static void csv_num(FILE *out, double v) {
  if (isfinite(v))
    put_num(out, v);
}

static void write_csv(FILE *out, const bench_meta *m, const bench_row *rows,
                      size_t n) {
  header_lines(out, "# ", m);
  fprintf(out, "%s\n", csv_columns);
  for (size_t i = 0; i < n; i++) {
    const bench_row *r = &rows[i];
    csv_str(out, r->workload);
    fputc(',', out);
    csv_str(out, r->contender);
    fprintf(out, ",%s,%s,%s,", r->kind, r->backend, r->submit);
    if (r->params)
      fprintf(out, "%zu,%d,%d,%d,%d,%llu,%u,", r->tasks, r->width, r->streams,
              r->devices, r->repeat, (unsigned long long)r->duration_ns,
              r->blocks);
    else
      fputs(",,,,,,,", out);
    const double v[] = {r->task_ns,       r->makespan_ns, r->per_task_ns,
                        r->throughput,    r->overhead_ns, r->ideal_ns,
                        r->efficiency,    r->concurrency, r->events_per_kop,
                        r->waits_per_kop, r->ratio};
    for (size_t j = 0; j < sizeof v / sizeof *v; j++) {
      csv_num(out, v[j]);
      fputc(',', out);
    }
    csv_str(out, r->best_raw);
    fputc(',', out);
    csv_num(out, r->build_ns_per_op);
    fputc(',', out);
    csv_num(out, r->capture_ns_per_op);
    fputc(',', out);
    csv_num(out, r->create_vs_raw);
    fputc(',', out);
    csv_num(out, r->create_vs_same);
    fputc(',', out);
    csv_num(out, r->vs_same_graph);
    fputc(',', out);
    csv_num(out, r->lat_p50_ns);
    fputc(',', out);
    csv_num(out, r->lat_p99_ns);
    fputc(',', out);
    csv_num(out, r->metg_ns);
    fprintf(out, ",%s,", metg_state_name(r->metg_state));
    csv_num(out, r->scaling);
    fputc(',', out);
    csv_num(out, r->lpt_ns);
    fputc(',', out);
    csv_num(out, r->vs_lpt);
    fputc(',', out);
    csv_num(out, r->peer_waits_per_kop);
    fputc(',', out);
    csv_num(out, r->submit_ns_per_op);
    fprintf(out, ",%d,", r->valid);
    csv_str(out, r->error);
    fputc('\n', out);
  }
}

/* ------------------------------------------------------------ JSON */

static void json_num(FILE *out, const char *key, double v, int comma) {
  fprintf(out, "\"%s\": ", key);
  if (isfinite(v))
    put_num(out, v);
  else
    fputs("null", out);
  if (comma)
    fputs(", ", out);
}

static void write_json(FILE *out, const bench_meta *m, const bench_row *rows,
                       size_t n) {
  fputs("{\n  \"tool\": \"cuasync-bench\",\n  \"version\": ", out);
  cua_jsonstr_put(out, m->version);
  fputs(",\n  \"date\": ", out);
  cua_jsonstr_put(out, m->date);
  fputs(",\n  \"system\": {\"hostname\": ", out);
  cua_jsonstr_put(out, m->hostname);
  fputs(", \"cpu\": ", out);
  cua_jsonstr_put(out, m->cpu);
  fprintf(out, ", \"cpus\": %ld, \"backends\": ", m->cpus);
  cua_jsonstr_put(out, m->backends);
  fputs(", \"cuda\": ", out);
  if (m->have_cuda_info) {
    fputs("{\"gpu\": ", out);
    cua_jsonstr_put(out, m->cuda.gpu);
    fprintf(out,
            ", \"devices\": %d, \"compute_capability\": \"%d.%d\", "
            "\"driver_version\": %d, \"runtime_version\": %d}",
            m->cuda.gpus, m->cuda.cc_major, m->cuda.cc_minor,
            m->cuda.driver_version, m->cuda.runtime_version);
  } else {
    fputs("null", out);
  }
  fprintf(out,
          "},\n  \"parameters\": {\"tasks\": %zu, \"width\": %d, "
          "\"duration_ns\": %llu, \"blocks\": %u, \"kernel\": \"%s\", "
          "\"bytes\": %zu, \"streams\": %d, \"seed\": %llu, \"skew\": %u, "
          "\"skew_share\": %u, \"hints\": %s, \"devices\": \"%s\", "
          "\"repeat\": %d, \"quick\": %s, \"metg\": %s, \"submit\": \"%s\", "
          "\"machine\": ",
          m->tasks, m->width, (unsigned long long)m->duration_ns, m->blocks,
          m->axpy ? "axpy" : "spin", m->bytes, m->streams,
          (unsigned long long)m->seed, m->skew ? m->skew : 1,
          m->skew_share ? m->skew_share : 25, m->no_hints ? "false" : "true",
          m->all_devices ? "all" : "one", m->repeat,
          m->quick ? "true" : "false", m->metg ? "true" : "false", m->submit);
  if (m->machine != NULL)
    cua_jsonstr_put(out, m->machine);
  else
    fputs("null", out);
  fputs("},\n  \"environment\": {", out);
  int nenv = 0;
  for (size_t i = 0; i < NENV_VARS; i++) {
    const char *v = getenv(env_vars[i]);
    if (v == NULL || *v == '\0')
      continue;
    fputs(nenv++ ? ", " : "", out);
    cua_jsonstr_put(out, env_vars[i]);
    fputs(": ", out);
    cua_jsonstr_put(out, v);
  }
  fputs("},\n  \"results\": [", out);
  for (size_t i = 0; i < n; i++) {
    const bench_row *r = &rows[i];
    fputs(i ? ",\n    {" : "\n    {", out);
    fputs("\"workload\": ", out);
    cua_jsonstr_put(out, r->workload);
    fputs(", \"contender\": ", out);
    cua_jsonstr_put(out, r->contender);
    fprintf(out,
            ", \"kind\": \"%s\", \"backend\": \"%s\", \"submit\": %s%s%s, ",
            r->kind, r->backend, strcmp(r->submit, "-") ? "\"" : "",
            strcmp(r->submit, "-") ? r->submit : "null",
            strcmp(r->submit, "-") ? "\"" : "");
    if (r->params)
      fprintf(out,
              "\"tasks\": %zu, \"width\": %d, \"streams\": %d, "
              "\"devices\": %d, \"repeat\": %d, \"duration_ns\": %llu, "
              "\"blocks\": %u, ",
              r->tasks, r->width, r->streams, r->devices, r->repeat,
              (unsigned long long)r->duration_ns, r->blocks);
    else
      fputs("\"tasks\": null, \"width\": null, \"streams\": null, "
            "\"devices\": null, \"repeat\": null, \"duration_ns\": null, "
            "\"blocks\": null, ",
            out);
    json_num(out, "task_ns", r->task_ns, 1);
    json_num(out, "makespan_ns", r->makespan_ns, 1);
    json_num(out, "per_task_ns", r->per_task_ns, 1);
    json_num(out, "throughput_per_s", r->throughput, 1);
    json_num(out, "overhead_ns_per_op", r->overhead_ns, 1);
    json_num(out, "ideal_ns", r->ideal_ns, 1);
    json_num(out, "efficiency", r->efficiency, 1);
    json_num(out, "concurrency", r->concurrency, 1);
    json_num(out, "events_per_kop", r->events_per_kop, 1);
    json_num(out, "waits_per_kop", r->waits_per_kop, 1);
    json_num(out, "peer_waits_per_kop", r->peer_waits_per_kop, 1);
    json_num(out, "submit_ns_per_op", r->submit_ns_per_op, 1);
    json_num(out, "ratio_vs_best_raw", r->ratio, 1);
    json_num(out, "thread_scaling", r->scaling, 1);
    json_num(out, "lpt_ns", r->lpt_ns, 1);
    json_num(out, "vs_lpt", r->vs_lpt, 1);
    fputs("\"best_raw\": ", out);
    if (r->best_raw[0])
      cua_jsonstr_put(out, r->best_raw);
    else
      fputs("null", out);
    fputs(", ", out);
    json_num(out, "build_ns_per_op", r->build_ns_per_op, 1);
    json_num(out, "capture_ns_per_op", r->capture_ns_per_op, 1);
    json_num(out, "create_vs_raw_graph", r->create_vs_raw, 1);
    json_num(out, "create_vs_raw_same", r->create_vs_same, 1);
    json_num(out, "vs_raw_same_graph", r->vs_same_graph, 1);
    json_num(out, "lat_p50_ns", r->lat_p50_ns, 1);
    json_num(out, "lat_p99_ns", r->lat_p99_ns, 1);
    json_num(out, "metg_ns", r->metg_ns, 1);
    fputs("\"metg_state\": ", out);
    if (r->metg_state != BENCH_METG_NONE)
      cua_jsonstr_put(out, metg_state_name(r->metg_state));
    else
      fputs("null", out);
    fputs(", \"metg_curve\": [", out);
    for (size_t j = 0; j < r->metg_points; j++)
      fprintf(out, "%s[%.0f, %.6g]", j ? ", " : "", r->metg_d[j],
              r->metg_eff[j]);
    fprintf(out, "], \"valid\": %s, \"error\": ", r->valid ? "true" : "false");
    if (r->error[0])
      cua_jsonstr_put(out, r->error);
    else
      fputs("null", out);
    fputc('}', out);
  }
  fputs("\n  ]\n}\n", out);
}

void bench_write(FILE *out, int format, const bench_meta *meta,
                 const bench_row *rows, size_t n) {
  switch (format) {
  case BENCH_FMT_CSV:
    write_csv(out, meta, rows, n);
    break;
  case BENCH_FMT_JSON:
    write_json(out, meta, rows, n);
    break;
  default:
    write_table(out, meta, rows, n);
  }
}

/* ------------------------------------------------------------ plot */

/* The gnuplot to run: $GNUPLOT if set, else "gnuplot". */
static const char *gnuplot_name(void) {
  const char *g = getenv("GNUPLOT");
  return g != NULL && g[0] != '\0' ? g : "gnuplot";
}

int bench_have_gnuplot(void) {
  const char *name = gnuplot_name();
  const char *path = getenv("PATH");
  char buf[4096];
  if (strchr(name, '/') != NULL)
    return access(name, X_OK) == 0;
  if (path == NULL)
    return 0;
  while (*path) {
    size_t n = strcspn(path, ":");
    snprintf(buf, sizeof buf, "%.*s/%s", (int)(n ? n : 1), n ? path : ".",
             name);
    if (access(buf, X_OK) == 0)
      return 1;
    path += n;
    if (*path == ':')
      path++;
  }
  return 0;
}

/* A gnuplot string literal: single quotes, '' for a quote. */
static void gp_str(FILE *gp, const char *s) {
  fputc('\'', gp);
  for (; *s; s++) {
    if (*s == '\'')
      fputc('\'', gp);
    fputc(*s, gp);
  }
  fputc('\'', gp);
}

/* A data-block word: double quotes, no quote or newline inside. */
static void gp_word(FILE *gp, const char *s) {
  fputc('"', gp);
  for (; *s; s++)
    fputc(*s == '"' || *s == '\n' ? '\'' : *s, gp);
  fputc('"', gp);
}

/* A series' name in plots: the contender, with its submission mode where
 * that is not the default. */
static const char *series_name(const bench_row *r, char *buf, size_t len) {
  if (strcmp(r->submit, "-") == 0 || strcmp(r->submit, "whole") == 0)
    return r->contender;
  snprintf(buf, len, "%s [%s]", r->contender, r->submit);
  return buf;
}

/* The height of @p r's bar: its makespan over the best baseline's, or
 * with @p eff its efficiency; NAN for none (latency's and dispatch's
 * ratios are not of makespans). */
static double bar_value(const bench_row *r, int eff) {
  if (strcmp(r->workload, "latency") == 0 ||
      strcmp(r->workload, "dispatch") == 0)
    return NAN;
  return eff ? r->efficiency : r->ratio;
}

static int has_bars(const bench_row *rows, size_t n, int eff) {
  for (size_t i = 0; i < n; i++)
    if (!isnan(bar_value(&rows[i], eff)))
      return 1;
  return 0;
}

/* Bars: makespan / best baseline, or with @p eff (no row has a baseline:
 * the sim backend's) the efficiency, workloads clustered, one bar per
 * contender or baseline. */
static void plot_bars(FILE *gp, const bench_row *rows, size_t n, int eff) {
  static char who[64][192];
  const char *wl[64];
  char nm[192];
  size_t nwho = 0, nwl = 0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(bar_value(&rows[i], eff)))
      continue;
    size_t j;
    const char *name = series_name(&rows[i], nm, sizeof nm);
    for (j = 0; j < nwho && strcmp(who[j], name); j++)
      ;
    if (j == nwho && nwho < 64)
      snprintf(who[nwho++], sizeof who[0], "%s", name);
    for (j = 0; j < nwl && strcmp(wl[j], rows[i].workload); j++)
      ;
    if (j == nwl && nwl < 64)
      wl[nwl++] = rows[i].workload;
  }
  fputs("$D << EOD\nworkload", gp);
  for (size_t j = 0; j < nwho; j++) {
    fputc(' ', gp);
    gp_word(gp, who[j]);
  }
  fputc('\n', gp);
  for (size_t w = 0; w < nwl; w++) {
    gp_word(gp, wl[w]);
    for (size_t j = 0; j < nwho; j++) {
      double v = NAN;
      for (size_t i = 0; i < n; i++)
        if (!isnan(bar_value(&rows[i], eff)) &&
            strcmp(rows[i].workload, wl[w]) == 0 &&
            strcmp(series_name(&rows[i], nm, sizeof nm), who[j]) == 0)
          v = bar_value(&rows[i], eff);
      if (isnan(v))
        fputs(" ?", gp);
      else
        fprintf(gp, " %.6g", v);
    }
    fputc('\n', gp);
  }
  fputs("EOD\n"
        "set datafile missing '?'\n"
        "set style data histograms\n"
        "set style histogram clustered gap 1\n"
        "set style fill solid 0.85 border -1\n",
        gp);
  fprintf(gp, "set ylabel '%s'\n",
          eff ? "efficiency (ideal / makespan)"
              : "makespan / best hand-written baseline");
  fputs("set yrange [0:*]\n"
        "set xtics rotate by -35 left nomirror\n"
        "set bmargin 7\n"
        "set key outside right top\n"
        "set grid ytics\n"
        "set arrow from graph 0, first 1 to graph 1, first 1 nohead "
        "dashtype 2 lc rgb 'black'\n",
        gp);
  fprintf(gp, "plot for [i=2:%zu] $D using i:xtic(1) title columnheader(i)\n",
          nwho + 1);
}

/* Lines: efficiency against task duration, one per swept series. */
static void plot_metg(FILE *gp, const bench_row *rows, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (rows[i].metg_points == 0)
      continue;
    fprintf(gp, "$C%zu << EOD\n", i);
    for (size_t j = 0; j < rows[i].metg_points; j++)
      fprintf(gp, "%.6g %.6g\n", rows[i].metg_d[j] / 1e3, rows[i].metg_eff[j]);
    fputs("EOD\n", gp);
  }
  fputs("set logscale x 10\n"
        "set xlabel 'task duration (us)'\n"
        "set ylabel 'efficiency (ideal / makespan)'\n"
        "set yrange [0:*]\n"
        "set key outside right top\n"
        "set grid\n"
        "set arrow from graph 0, first 0.5 to graph 1, first 0.5 nohead "
        "dashtype 2 lc rgb 'black'\n"
        "set label 'METG: 50%' at graph 0.01, first 0.52\n"
        "plot",
        gp);
  for (size_t i = 0; i < n; i++) {
    char title[256], nm[192];
    if (rows[i].metg_points == 0)
      continue;
    snprintf(title, sizeof title, "%s %s", rows[i].workload,
             series_name(&rows[i], nm, sizeof nm));
    fprintf(gp, "%s $C%zu with linespoints title ", k ? "," : "", i);
    gp_str(gp, title);
    k++;
  }
  fputc('\n', gp);
}

/* gnuplot at work: the script goes to @c in, a pipe; it writes the SVG on
 * its standard output, @c svg, an unlinked temporary file, copied to the
 * chart's file once gnuplot has exited. It never opens the chart's file
 * itself: where it cannot (a missing folder) it wrote the SVG on the
 * benchmark's standard output, and a write that failed (a full disk) it
 * does not report in its status; here both are seen and said. */
typedef struct gnuplot {
  FILE *in;
  FILE *svg;
  pid_t pid;
} gnuplot;

/* Starts gnuplot; 0, or -1 with @p err set. */
static int gp_start(gnuplot *g, char *err, size_t len) {
  int fd[2];

  g->svg = tmpfile();
  if (g->svg == NULL) {
    snprintf(err, len, "cannot make a temporary file for gnuplot: %s",
             strerror(errno));
    return -1;
  }
  if (pipe(fd) != 0) {
    snprintf(err, len, "cannot run %s: %s", gnuplot_name(), strerror(errno));
    goto fail_svg;
  }
  fflush(NULL); /* the child has copies of the buffers */
  g->pid = fork();
  if (g->pid < 0) {
    snprintf(err, len, "cannot run %s: %s", gnuplot_name(), strerror(errno));
    goto fail_pipe;
  }
  if (g->pid == 0) {
    if (dup2(fd[0], STDIN_FILENO) >= 0 &&
        dup2(fileno(g->svg), STDOUT_FILENO) >= 0) {
      close(fd[0]);
      close(fd[1]);
      execlp(gnuplot_name(), gnuplot_name(), (char *)NULL);
    }
    fprintf(stderr, "cuasync-bench: cannot run %s: %s\n", gnuplot_name(),
            strerror(errno));
    _exit(127);
  }
  close(fd[0]);
  g->in = fdopen(fd[1], "w");
  if (g->in == NULL) {
    snprintf(err, len, "cannot write to %s: %s", gnuplot_name(),
             strerror(errno));
    close(fd[1]);
    waitpid(g->pid, NULL, 0);
    goto fail_svg;
  }
  return 0;
fail_pipe:
  close(fd[0]);
  close(fd[1]);
fail_svg:
  fclose(g->svg);
  return -1;
}

FILE *bench_open_later(const char *path, int *created) {
  struct stat st;
  int fd;
  FILE *f;

  *created = stat(path, &st) != 0;
  /* No O_TRUNC: the file is emptied when its contents are ready. */
  fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    return NULL;
  f = fdopen(fd, "w");
  if (f == NULL) {
    int e = errno;
    close(fd);
    if (*created)
      unlink(path);
    errno = e;
  }
  return f;
}

int bench_file_empty(FILE *f) {
  struct stat st;

  if (fstat(fileno(f), &st) != 0)
    return -1;
  if (!S_ISREG(st.st_mode))
    return 0;
  return ftruncate(fileno(f), 0);
}

/* Ends gnuplot's script, waits for it, and copies the SVG it wrote to
 * @p dst, the file @p path (opened here when @p dst is NULL), which it
 * closes; 0, or -1 with @p err set. */
static int gp_finish(gnuplot *g, FILE *dst, const char *path, char *err,
                     size_t len) {
  int st = 0, rc = -1;
  char buf[65536];
  size_t n, total = 0;

  fclose(g->in);
  while (waitpid(g->pid, &st, 0) < 0)
    if (errno != EINTR) {
      st = -1;
      break;
    }
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    snprintf(err, len, "gnuplot failed drawing %s (status %d)", path,
             st == -1        ? -1
             : WIFEXITED(st) ? WEXITSTATUS(st)
                             : 128 + WTERMSIG(st));
    goto out;
  }
  if (dst == NULL && (dst = fopen(path, "w")) == NULL) {
    snprintf(err, len, "cannot write %s: %s", path, strerror(errno));
    goto out;
  }
  if (bench_file_empty(dst) != 0) {
    snprintf(err, len, "writing %s: %s", path, strerror(errno));
    goto out;
  }
  rewind(g->svg);
  while ((n = fread(buf, 1, sizeof buf, g->svg)) > 0 &&
         fwrite(buf, 1, n, dst) == n)
    total += n;
  if (ferror(g->svg))
    snprintf(err, len, "reading gnuplot's SVG for %s: %s", path,
             strerror(errno));
  else if (ferror(dst) || fflush(dst) != 0)
    snprintf(err, len, "writing %s: %s", path, strerror(errno));
  else if (total == 0)
    snprintf(err, len, "gnuplot wrote no SVG for %s", path);
  else
    rc = 0;
out:
  if (dst != NULL && fclose(dst) != 0 && rc == 0) {
    snprintf(err, len, "writing %s: %s", path, strerror(errno));
    rc = -1;
  }
  fclose(g->svg);
  return rc;
}

int bench_plot(FILE *dst, const char *path, const bench_meta *meta,
               const bench_row *rows, size_t n, char *err, size_t len) {
  int metg = 0, eff = 0;
  gnuplot g;
  for (size_t i = 0; i < n; i++)
    metg |= rows[i].metg_points > 0;
  if (!metg && !has_bars(rows, n, 0)) {
    eff = 1;
    if (!has_bars(rows, n, 1)) {
      snprintf(err, len,
               "nothing to plot in %s: no row has a makespan ratio or an "
               "efficiency",
               path);
      fclose(dst);
      return -1;
    }
  }
  if (gp_start(&g, err, len) != 0) {
    fclose(dst);
    return -1;
  }
  FILE *gp = g.in;
  fputs("set terminal svg size 1200,700 dynamic enhanced font 'sans,11' "
        "background rgb 'white'\nset encoding utf8\nset title ",
        gp);
  char title[512];
  if (meta->backends != NULL && strcmp(meta->backends, "sim") == 0)
    snprintf(title, sizeof title,
             "cuasync-bench %s on the simulated machine %s%s", meta->version,
             meta->machine != NULL ? meta->machine : "(the default)",
             metg ? ": efficiency against task duration" : "");
  else
    snprintf(title, sizeof title, "cuasync-bench %s on %s%s%s", meta->version,
             meta->have_cuda_info ? meta->cuda.gpu : "host ",
             meta->have_cuda_info ? "" : meta->cpu,
             metg ? ": efficiency against task duration" : "");
  gp_str(gp, title);
  fputs(" noenhanced\nset key noenhanced\n", gp);
  if (metg)
    plot_metg(gp, rows, n);
  else
    plot_bars(gp, rows, n, eff);
  return gp_finish(&g, dst, path, err, len);
}

/* ------------------------------------------------------- Gantt charts */

/* A slice of a trace: its track (pid, tid), start and duration in us, and
 * the colour of its name. */
typedef struct slice {
  int pid, tid, color;
  double ts, dur;
} slice;

/* The number after "KEY": in @p line, or NAN. */
static double json_num_at(const char *line, const char *key) {
  const char *p = strstr(line, key);
  if (p == NULL)
    return NAN;
  p += strlen(key);
  char *end;
  double v = strtod(p, &end);
  return end == p ? NAN : v;
}

/* Names seen, for a colour (a gnuplot line type) each. */
static int name_color(char names[][32], int *nnames, const char *line) {
  const char *p = strstr(line, "\"name\":\"");
  char name[32] = "";
  if (p != NULL) {
    p += 8;
    size_t k = 0;
    while (p[k] != '\0' && p[k] != '"' && k < sizeof name - 1) {
      name[k] = p[k];
      k++;
    }
    name[k] = '\0';
  }
  for (int i = 0; i < *nnames; i++)
    if (strcmp(names[i], name) == 0)
      return i + 1;
  if (*nnames < 16)
    snprintf(names[(*nnames)++], 32, "%s", name);
  return *nnames;
}

static int cmp_track(const void *a, const void *b) {
  const int *x = a, *y = b;
  return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0])
                      : (x[1] > y[1]) - (x[1] < y[1]);
}

int bench_gantt(const char *svg, const char *trace, const char *title,
                size_t max_slices, char *err, size_t len) {
  FILE *f = fopen(trace, "r");
  if (f == NULL) {
    snprintf(err, len, "no trace %s: no Gantt chart", trace);
    return 1;
  }
  slice *v = NULL;
  size_t n = 0, cap = 0;
  char names[16][32];
  int nnames = 0, rc = 0;
  char *line = NULL;
  size_t lcap = 0;
  /* The perfetto observer writes one event per line: the complete events
   * ("ph":"X") are the op slices. */
  while (getline(&line, &lcap, f) > 0) {
    if (strstr(line, "\"ph\":\"X\"") == NULL)
      continue;
    if (n == max_slices) {
      rc = 1;
      break;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      slice *g = realloc(v, cap * sizeof *g);
      if (g == NULL) {
        rc = -1;
        snprintf(err, len, "out of memory");
        break;
      }
      v = g;
    }
    slice *sl = &v[n];
    /* (each key after a comma, so that an op's name cannot fake one) */
    double pid = json_num_at(line, ",\"pid\":"),
           tid = json_num_at(line, ",\"tid\":");
    sl->ts = json_num_at(line, ",\"ts\":");
    sl->dur = json_num_at(line, ",\"dur\":");
    if (isnan(pid) || isnan(tid) || isnan(sl->ts) || isnan(sl->dur))
      continue;
    sl->pid = (int)pid;
    sl->tid = (int)tid;
    sl->color = name_color(names, &nnames, line);
    n++;
  }
  free(line);
  fclose(f);
  if (rc == 1)
    snprintf(err, len, "%s has over %zu op slices: no Gantt chart", trace,
             max_slices);
  else if (rc == 0 && n == 0) {
    snprintf(err, len, "%s has no op slices: no Gantt chart", trace);
    rc = 1;
  }
  if (rc != 0) {
    free(v);
    return rc;
  }
  /* Tracks, in device then stream order, from the top. */
  int(*tracks)[2] = calloc(n, sizeof *tracks);
  size_t nt = 0;
  if (tracks == NULL) {
    free(v);
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    size_t t;
    for (t = 0; t < nt; t++)
      if (tracks[t][0] == v[i].pid && tracks[t][1] == v[i].tid)
        break;
    if (t == nt) {
      tracks[nt][0] = v[i].pid;
      tracks[nt++][1] = v[i].tid;
    }
  }
  qsort(tracks, nt, sizeof *tracks, cmp_track);
  gnuplot g;
  if (gp_start(&g, err, len) != 0) {
    free(v);
    free(tracks);
    return -1;
  }
  FILE *gp = g.in;
  fprintf(gp,
          "set terminal svg size 1200,%zu dynamic enhanced font 'sans,11' "
          "background rgb 'white'\nset encoding utf8\nset title ",
          (size_t)160 + 28 * nt);
  gp_str(gp, title);
  fputs(" noenhanced\nset key noenhanced outside right top\n"
        "set xlabel 'time (us, from the first record)'\n"
        "set style fill solid 0.9 noborder\nset grid xtics\n",
        gp);
  fprintf(gp, "set yrange [%zu:-1]\nset ytics (", nt);
  for (size_t t = 0; t < nt; t++)
    fprintf(gp, "%s'device %d stream %d' %zu", t ? ", " : "", tracks[t][0] - 1,
            tracks[t][1], t);
  fputs(")\n", gp);
  /* One data block per name, so that the key lists them. */
  for (int c = 1; c <= nnames; c++) {
    fprintf(gp, "$S%d << EOD\n", c);
    for (size_t i = 0; i < n; i++) {
      if (v[i].color != c)
        continue;
      size_t t;
      for (t = 0; t < nt; t++)
        if (tracks[t][0] == v[i].pid && tracks[t][1] == v[i].tid)
          break;
      fprintf(gp, "%.3f %.3f %zu\n", v[i].ts, v[i].ts + v[i].dur, t);
    }
    fputs("EOD\n", gp);
  }
  fputs("plot", gp);
  for (int c = 1; c <= nnames; c++) {
    fprintf(gp,
            "%s $S%d using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with "
            "boxxyerror lt %d title ",
            c > 1 ? "," : "", c, c);
    gp_str(gp, names[c - 1]);
  }
  fputc('\n', gp);
  free(v);
  free(tracks);
  return gp_finish(&g, NULL, svg, err, len);
}
