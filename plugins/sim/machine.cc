/*
 * plugins/sim/machine.cc: the sim backend's machine: its parameters
 * ([backend.sim], a machine file), its SimGrid platform, and the cost of
 * an op on it. See sim.h; no locks (written once in create()).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "sim.h"

#include <simgrid/s4u.hpp>

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/stat.h>

namespace sg4 = simgrid::s4u;

/* clang-format off */
const cua_param_spec sim_params[SIM_PARAM_COUNT] = {
    {"machine", CUA_PARAM_STRING, nullptr, 0, 0, nullptr,
     "a machine file: lines 'key = value' with this section's keys (but "
     "machine); the section's own keys override it; a relative path is "
     "the configuration file's directory's", CUA_PARAM_PATH},
    {"gpus", CUA_PARAM_INT, "1", 1, 65536, nullptr,
     "GPUs in the machine, in all nodes", 0},
    {"gpus_per_node", CUA_PARAM_INT, "8", 1, 64, nullptr,
     "GPUs per node (nodes = gpus / gpus_per_node, rounded up)", 0},
    {"sms", CUA_PARAM_INT, "132", 1, 4096, nullptr,
     "multiprocessors per GPU: ops of a few blocks run side by side, "
     "whole-GPU ops share it", 0},
    {"speed", CUA_PARAM_DOUBLE, "1", 0.001, 1000, nullptr,
     "GPU speed relative to the one the durations were measured on", 0},
    {"memory_gb", CUA_PARAM_INT, "80", 1, 1048576, nullptr,
     "device memory per GPU, GiB", 0},
    {"hbm_gbps", CUA_PARAM_DOUBLE, "3350", 0.001, 1e6, nullptr,
     "device memory bandwidth, GB/s (fill, copy, axpy, memset)", 0},
    {"launch_ns", CUA_PARAM_INT, "2000", 0, 1e9, nullptr,
     "device time of every op beyond its work (launch and gaps), ns", 0},
    {"kernel_ns", CUA_PARAM_INT, "10000", 0, 1e12, nullptr,
     "duration of a module kernel or stream function with no model and "
     "no cost hint, ns", 0},
    {"pcie_gbps", CUA_PARAM_DOUBLE, "25", 0.001, 1e6, nullptr,
     "host-GPU link bandwidth per GPU, GB/s", 0},
    {"pcie_latency_ns", CUA_PARAM_INT, "2000", 0, 1e9, nullptr,
     "host-GPU link latency, ns", 0},
    {"nvlink_gbps", CUA_PARAM_DOUBLE, "450", 0, 1e6, nullptr,
     "GPU-GPU bandwidth per GPU within a node, GB/s (0: peer copies over "
     "both GPUs' PCIe links)", 0},
    {"nvlink_latency_ns", CUA_PARAM_INT, "1000", 0, 1e9, nullptr,
     "GPU-GPU latency within a node, ns", 0},
    {"net_gbps", CUA_PARAM_DOUBLE, "50", 0.001, 1e6, nullptr,
     "network bandwidth per node, GB/s", 0},
    {"net_latency_ns", CUA_PARAM_INT, "5000", 0, 1e9, nullptr,
     "network latency per node port, ns", 0},
    {"data", CUA_PARAM_ENUM, "virtual", 0, 0, "virtual|real",
     "virtual: buffers have no memory and ops only take time; real: "
     "buffers are host memory and built-in ops and stream functions run", 0},
    {"jitter", CUA_PARAM_DOUBLE, "0", 0, 1, nullptr,
     "each execution's duration times 1 + jitter * u, u uniform in "
     "[-1, 1] from the seed, the stream and the op", 0},
    {"seed", CUA_PARAM_INT, "0", 0, 9.2e18, nullptr,
     "seed of the jitter", 0},
    {"host_launch_ns", CUA_PARAM_INT, "0", 0, 1e9, nullptr,
     "host time of each launch, ns: the runtime's launches of one program "
     "take turns on a modelled host thread, and an op starts no earlier "
     "than its launch ends (0: the host takes no time)", 0},
    {"host_event_ns", CUA_PARAM_INT, "0", 0, 1e9, nullptr,
     "host time of each event record and cross-stream wait, ns", 0},
    {"host_build_ns", CUA_PARAM_INT, "0", 0, 1e9, nullptr,
     "host time to build each node of a submission, ns: the whole "
     "submission is built before its first decision", 0},
    {"host_plan_ns", CUA_PARAM_STRING, "0", 0, 0, nullptr,
     "host time per node of a policy's plan of a whole submission, made "
     "after the build and before the first decision: 'NS' for every policy "
     "(0 if left out), then 'POLICY=NS' for those that differ ('0, "
     "heft=300')", 0},
    {"host_decide_ns", CUA_PARAM_STRING, "0", 0, 0, nullptr,
     "host time of a policy's decision on each op it places, before the "
     "launch: 'NS' (0 if left out), then 'POLICY=NS' for those that differ "
     "('900, dmda=2000')", 0},
    {"host_launch_threads", CUA_PARAM_INT, "1", 1, SIM_LAUNCH_THREADS_MAX, nullptr,
     "modelled launch threads ([runtime] launch_threads): with 1, every "
     "host cost takes turns on one modelled host thread; with N, the "
     "builds, plans and decisions stay on it, and the launches, records "
     "and waits of a stream take turns on launch thread (stream's index "
     "modulo N), each after its decision", 0},
    {"peer_wait_ns", CUA_PARAM_INT, "0", 0, 1e9, nullptr,
     "device time of a wait for an event recorded on another GPU, ns: "
     "the waiting stream goes on this long after the recording was "
     "reached (0: at once)", 0},
    {"host_chunk_first", CUA_PARAM_INT, "0", 0, 1e6, nullptr,
     "a submission's launches reach their streams in chunks, as the "
     "runtime hands them over (its own: 16): the first once this many "
     "are decided, each next one twice as long, the rest when the round "
     "ends; a launch's host call starts after its chunk's last decision "
     "(0: after its own decision)", 0},
    {"host_chunk_max", CUA_PARAM_INT, "256", 1, 1e6, nullptr,
     "the most launches in a chunk (the runtime's chunks handed to its "
     "launch threads: 256; those its submitting thread applies itself "
     "double without a cap); not below host_chunk_first", 0},
    {"host_peer_wait_ns", CUA_PARAM_INT, "-1", -1, 1e9, nullptr,
     "host time of a wait for an event recorded on another GPU, ns, in "
     "place of host_event_ns (-1: host_event_ns)", 0},
    {"host_record_ns", CUA_PARAM_INT, "-1", -1, 1e9, nullptr,
     "host time of each event record, ns, in place of host_event_ns "
     "(-1: host_event_ns)", 0},
    {"host_contention", CUA_PARAM_STRING, "0", 0, 0, nullptr,
     "with host_launch_threads above 1: while the modelled host thread "
     "builds, plans and decides a submission, each launch, record and wait "
     "on a launch thread takes 1 + X times as long, for the part of it "
     "that falls then: 'X' for every policy (0 if left out), then "
     "'POLICY=X' for those that differ ('0.5, dmda=0.4'), the policy "
     "being the last submission's, each X in [0, 10] (0: no slowdown)",
     0},
    {"host_launch_cold_ns", CUA_PARAM_INT, "-1", -1, 1e9, nullptr,
     "host time of a launch onto a stream with no op queued or running, "
     "ns, in place of host_launch_ns (-1: host_launch_ns)", 0},
    {"peer_wait_busy_ns", CUA_PARAM_INT, "0", 0, 1e9, nullptr,
     "device time a stream spends on a wait for an event recorded on "
     "another GPU, ns, after the wait ends (peer_wait_ns after the "
     "recording); with it, a wait whose recording was reached before the "
     "wait was issued costs nothing (the driver drops it) (0: none)", 0},
};
/* clang-format on */

namespace {

void set_err(cua_backend_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void set_err(cua_backend_err *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
}

struct Val {
  bool set = false;
  double d = 0;
  long long i = 0;
  sim_costs c;   /* STRING: the host cost lists */
  sim_factors f; /* STRING: host_contention */
};

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos)
    return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

int out_of_range(const std::string &text, double min, double max,
                 std::string &why) {
  char b[128];
  snprintf(b, sizeof b, "%s is out of range [%g, %g]", text.c_str(), min, max);
  why = b;
  return CUA_ERR_CONFIG_OUT_OF_RANGE;
}

/* Parses @p text as an integer in [@p min, @p max] into @p *out; 0, or
 * CUA_ERR_CONFIG_BAD_VALUE / CUA_ERR_CONFIG_OUT_OF_RANGE with @p why. */
int parse_int(const std::string &text, double min, double max, long long *out,
              std::string &why) {
  const char *s = text.c_str();
  char *end = nullptr;
  errno = 0;
  long long i = strtoll(s, &end, 10);
  if (end == s || *end != '\0' || (errno != 0 && errno != ERANGE)) {
    why = "'" + text + "' is not an integer";
    return CUA_ERR_CONFIG_BAD_VALUE;
  }
  if (errno == ERANGE || (double)i < min || (double)i > max)
    return out_of_range(text, min, max, why);
  *out = i;
  return 0;
}

/* Parses @p text for spec @p k into @p v; 0, or a code with @p why. */
int parse_value(int k, const std::string &text, Val *v, std::string &why) {
  const cua_param_spec &p = sim_params[k];
  const char *s = text.c_str();
  char *end = nullptr;
  errno = 0;
  if (p.type == CUA_PARAM_ENUM) {
    std::string ch = p.choices;
    size_t idx = 0, pos = 0;
    for (;;) {
      size_t bar = ch.find('|', pos);
      std::string w =
          ch.substr(pos, bar == std::string::npos ? bar : bar - pos);
      if (w == text) {
        v->i = (long long)idx;
        v->set = true;
        return 0;
      }
      if (bar == std::string::npos)
        break;
      pos = bar + 1;
      idx++;
    }
    why = "'" + text + "' is not one of " + ch;
    return CUA_ERR_CONFIG_BAD_VALUE;
  }
  if (p.type == CUA_PARAM_STRING) {
    int rc = k == SIM_PARAM_HOST_CONTENTION
                 ? sim_factors_parse(text, 0, 10, &v->f, why)
                 : sim_costs_parse(text, &v->c, why);
    v->set = rc == 0;
    return rc;
  }
  if (p.type == CUA_PARAM_INT) {
    int rc = parse_int(text, p.min, p.max, &v->i, why);
    v->d = (double)v->i;
    v->set = rc == 0;
    return rc;
  }
  double d = strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0 || !std::isfinite(d)) {
    why = "'" + text + "' is not a number";
    return CUA_ERR_CONFIG_BAD_VALUE;
  }
  if (d < p.min || d > p.max)
    return out_of_range(text, p.min, p.max, why);
  v->i = (long long)d;
  v->d = d;
  v->set = true;
  return 0;
}

int read_machine_file(const char *path, Val *vals, cua_backend_err *err) {
  FILE *f = fopen(path, "r");
  if (f == nullptr) {
    set_err(err, "machine file %s: cannot open it: %s", path, strerror(errno));
    return CUA_ERR_CONFIG_NOT_FOUND;
  }
  /* A directory opens, and reads as nothing: the defaults, silently. */
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    set_err(err, "machine file %s: cannot read it: %s", path, strerror(EISDIR));
    fclose(f);
    return CUA_ERR_CONFIG_NOT_FOUND;
  }
  char buf[1024];
  int line = 0, rc = 0;
  bool seen[SIM_PARAM_COUNT] = {};
  while (rc == 0 && fgets(buf, sizeof buf, f) != nullptr) {
    line++;
    std::string l = buf;
    size_t c = l.find_first_of("#;");
    if (c != std::string::npos)
      l = l.substr(0, c);
    l = trim(l);
    if (l.empty())
      continue;
    size_t eq = l.find('=');
    if (eq == std::string::npos) {
      set_err(err, "%s:%d: expected 'key = value', found '%s'", path, line,
              l.c_str());
      rc = CUA_ERR_CONFIG_SYNTAX;
      break;
    }
    std::string key = trim(l.substr(0, eq)), value = trim(l.substr(eq + 1));
    int k = -1;
    for (int i = 0; i < SIM_PARAM_COUNT; i++)
      if (key == sim_params[i].name)
        k = i;
    if (k < 0 || k == SIM_PARAM_MACHINE) {
      set_err(err, "%s:%d: unknown key '%s'%s", path, line, key.c_str(),
              k == SIM_PARAM_MACHINE ? " (a machine file cannot name another)"
                                     : "");
      rc = CUA_ERR_CONFIG_UNKNOWN_KEY;
      break;
    }
    if (seen[k]) {
      set_err(err, "%s:%d: '%s' given twice", path, line, key.c_str());
      rc = CUA_ERR_CONFIG_DUPLICATE_KEY;
      break;
    }
    seen[k] = true;
    std::string why;
    rc = parse_value(k, value, &vals[k], why);
    if (rc != 0)
      set_err(err, "%s:%d: %s: %s", path, line, key.c_str(), why.c_str());
  }
  if (rc == 0 && ferror(f)) {
    set_err(err, "machine file %s: reading it failed: %s", path,
            strerror(errno));
    rc = CUA_ERR_CONFIG_NOT_FOUND;
  }
  fclose(f);
  return rc;
}

} /* namespace */

int sim_machine_from_params(sim_machine *m, const cua_param_value *params,
                            cua_backend_err *err) {
  Val vals[SIM_PARAM_COUNT];
  /* Defaults, then the machine file, then the section's own keys. */
  for (int k = 0; k < SIM_PARAM_COUNT; k++) {
    if (sim_params[k].default_value == nullptr)
      continue;
    std::string why;
    parse_value(k, sim_params[k].default_value, &vals[k], why);
  }
  const char *file = params != nullptr && params[SIM_PARAM_MACHINE].present
                         ? params[SIM_PARAM_MACHINE].s
                         : nullptr;
  if (file != nullptr) {
    int rc = read_machine_file(file, vals, err);
    if (rc != 0)
      return rc;
  }
  if (params != nullptr)
    for (int k = 0; k < SIM_PARAM_COUNT; k++)
      if (k != SIM_PARAM_MACHINE && params[k].present) {
        vals[k].i = params[k].i;
        vals[k].d = params[k].d;
        if (sim_params[k].type == CUA_PARAM_STRING) {
          std::string why;
          int rc =
              parse_value(k, params[k].s ? params[k].s : "", &vals[k], why);
          if (rc != 0) {
            set_err(err, "[backend.sim] %s: %s", sim_params[k].name,
                    why.c_str());
            return rc;
          }
        }
      }
  m->gpus = (int)vals[SIM_PARAM_GPUS].i;
  m->gpus_per_node = (int)vals[SIM_PARAM_GPUS_PER_NODE].i;
  if (m->gpus_per_node > m->gpus)
    m->gpus_per_node = m->gpus;
  m->nodes = (m->gpus + m->gpus_per_node - 1) / m->gpus_per_node;
  m->sms = (int)vals[SIM_PARAM_SMS].i;
  m->speed = vals[SIM_PARAM_SPEED].d;
  m->memory_gb = (int)vals[SIM_PARAM_MEMORY_GB].i;
  m->hbm_gbps = vals[SIM_PARAM_HBM_GBPS].d;
  m->launch_ns = vals[SIM_PARAM_LAUNCH_NS].i;
  m->kernel_ns = vals[SIM_PARAM_KERNEL_NS].i;
  m->pcie_gbps = vals[SIM_PARAM_PCIE_GBPS].d;
  m->pcie_lat_ns = vals[SIM_PARAM_PCIE_LATENCY_NS].i;
  m->nvlink_gbps = vals[SIM_PARAM_NVLINK_GBPS].d;
  m->nvlink_lat_ns = vals[SIM_PARAM_NVLINK_LATENCY_NS].i;
  m->net_gbps = vals[SIM_PARAM_NET_GBPS].d;
  m->net_lat_ns = vals[SIM_PARAM_NET_LATENCY_NS].i;
  m->data_real = vals[SIM_PARAM_DATA].i == 1;
  m->jitter = vals[SIM_PARAM_JITTER].d;
  m->seed = (unsigned long long)vals[SIM_PARAM_SEED].i;
  m->host_launch_ns = vals[SIM_PARAM_HOST_LAUNCH_NS].i;
  m->host_event_ns = vals[SIM_PARAM_HOST_EVENT_NS].i;
  m->host_build_ns = vals[SIM_PARAM_HOST_BUILD_NS].i;
  m->host_plan = vals[SIM_PARAM_HOST_PLAN_NS].c;
  m->host_decide = vals[SIM_PARAM_HOST_DECIDE_NS].c;
  m->host_launch_threads = (int)vals[SIM_PARAM_HOST_LAUNCH_THREADS].i;
  m->peer_wait_ns = vals[SIM_PARAM_PEER_WAIT_NS].i;
  m->peer_wait_busy_ns = vals[SIM_PARAM_PEER_WAIT_BUSY_NS].i;
  m->host_chunk_first = vals[SIM_PARAM_HOST_CHUNK_FIRST].i;
  m->host_chunk_max = vals[SIM_PARAM_HOST_CHUNK_MAX].i;
  /* -1 (the default) of these three: the general cost, resolved here. */
  long long v = vals[SIM_PARAM_HOST_PEER_WAIT_NS].i;
  m->host_peer_wait_ns = v >= 0 ? v : m->host_event_ns;
  v = vals[SIM_PARAM_HOST_RECORD_NS].i;
  m->host_record_ns = v >= 0 ? v : m->host_event_ns;
  v = vals[SIM_PARAM_HOST_LAUNCH_COLD_NS].i;
  m->host_launch_cold_ns = v >= 0 ? v : m->host_launch_ns;
  m->host_contention = vals[SIM_PARAM_HOST_CONTENTION].f;
  if (m->host_chunk_first > m->host_chunk_max) {
    set_err(err,
            "[backend.sim] host_chunk_max: %lld is below host_chunk_first "
            "(%lld), from the section or its machine file",
            m->host_chunk_max, m->host_chunk_first);
    return CUA_ERR_CONFIG_OUT_OF_RANGE;
  }
  return 0;
}

/* ------------------------------------------------------------ host costs */

namespace {

/* Parses @p text as a number in [@p min, @p max] into @p *out; 0, or
 * CUA_ERR_CONFIG_BAD_VALUE / CUA_ERR_CONFIG_OUT_OF_RANGE with @p why. */
int parse_double(const std::string &text, double min, double max, double *out,
                 std::string &why) {
  const char *s = text.c_str();
  char *end = nullptr;
  errno = 0;
  double d = strtod(s, &end);
  /* As the core's doubles: an underflow is a number (about 0), an
   * overflow one out of range. */
  if (end == s || *end != '\0' || std::isnan(d) ||
      (std::isinf(d) && errno != ERANGE)) {
    why = "'" + text + "' is not a number";
    return CUA_ERR_CONFIG_BAD_VALUE;
  }
  if ((errno == ERANGE && std::isinf(d)) || d < min || d > max)
    return out_of_range(text, min, max, why);
  *out = d;
  return 0;
}

/* The lists of sim_costs and sim_factors: a first item that may be bare
 * (the default), then "POLICY=V" items. @p num parses one value; @p v
 * names it in messages ("NS", "X"). */
template <class List, class T, class Num>
int parse_list(const std::string &text, List *c, const char *v, Num num,
               std::string &why) {
  List out;
  bool have_dflt = false;
  size_t pos = 0;
  std::string form = std::string("; write '") + v + "' then 'POLICY=" + v +
                     "', comma-separated";
  for (;;) {
    size_t comma = text.find(',', pos);
    std::string item = trim(
        text.substr(pos, comma == std::string::npos ? comma : comma - pos));
    std::string name;
    size_t eq = item.find('=');
    std::string numtext = item;
    if (item.empty()) {
      why = "an empty item" + form;
      return CUA_ERR_CONFIG_BAD_VALUE;
    }
    if (eq != std::string::npos) {
      name = trim(item.substr(0, eq));
      numtext = trim(item.substr(eq + 1));
      if (name.empty()) {
        why = "'" + item + "' names no policy" + form;
        return CUA_ERR_CONFIG_BAD_VALUE;
      }
      if (name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                                 "qrstuvwxyz0123456789_.-") !=
          std::string::npos) {
        why = "'" + name +
              "' is not a policy name (letters, digits, '_', "
              "'.', '-')";
        return CUA_ERR_CONFIG_BAD_VALUE;
      }
      for (const auto &b : out.by)
        if (b.first == name) {
          why = "policy '" + name + "' given twice";
          return CUA_ERR_CONFIG_BAD_VALUE;
        }
    } else if (have_dflt || !out.by.empty()) {
      why = "'" + item + "': only the first item may be a bare " + v + form;
      return CUA_ERR_CONFIG_BAD_VALUE;
    }
    T val = 0;
    int rc = num(numtext, &val, why);
    if (rc != 0) {
      if (rc == CUA_ERR_CONFIG_BAD_VALUE)
        why += form;
      return rc;
    }
    if (name.empty()) {
      out.dflt = val;
      have_dflt = true;
    } else {
      out.by.emplace_back(name, val);
    }
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  *c = out;
  return 0;
}

} /* namespace */

int sim_costs_parse(const std::string &text, sim_costs *c, std::string &why) {
  return parse_list<sim_costs, long long>(
      text, c, "NS",
      [](const std::string &t, long long *out, std::string &w) {
        return parse_int(t, 0, 1e9, out, w);
      },
      why);
}

int sim_factors_parse(const std::string &text, double min, double max,
                      sim_factors *f, std::string &why) {
  return parse_list<sim_factors, double>(
      text, f, "X",
      [min, max](const std::string &t, double *out, std::string &w) {
        return parse_double(t, min, max, out, w);
      },
      why);
}

/* ------------------------------------------------------------ platform */

int sim_build_platform(const sim_machine *m, std::vector<sg4::Host *> &gpu,
                       std::vector<sg4::Host *> &cpu, std::string &why) {
  try {
    sg4::NetZone *root =
        m->nodes > 1 ? sg4::create_star_zone("machine") : nullptr;
    gpu.assign((size_t)m->gpus, nullptr);
    cpu.assign((size_t)m->nodes, nullptr);
    for (int n = 0; n < m->nodes; n++) {
      std::string nn = "node" + std::to_string(n);
      sg4::NetZone *z = sg4::create_full_zone(nn);
      if (root != nullptr)
        z->set_parent(root);
      sg4::Host *h = z->create_host(nn + "-cpu", 1e9);
      cpu[(size_t)n] = h;
      int first = n * m->gpus_per_node;
      int last = std::min(m->gpus, first + m->gpus_per_node);
      std::vector<sg4::Link *> pcie, nvl;
      for (int g = first; g < last; g++) {
        std::string gn = "gpu" + std::to_string(g);
        sg4::Host *gh = z->create_host(gn, 1e9 * m->speed);
        gh->set_core_count(m->sms);
        gpu[(size_t)g] = gh;
        pcie.push_back(z->create_link(gn + "-pcie", m->pcie_gbps * 1e9)
                           ->set_latency((double)m->pcie_lat_ns * 1e-9));
        if (m->nvlink_gbps > 0)
          nvl.push_back(z->create_link(gn + "-nvlink", m->nvlink_gbps * 1e9)
                            ->set_latency((double)m->nvlink_lat_ns * 1e-9));
      }
      for (int a = first; a < last; a++) {
        size_t ia = (size_t)(a - first);
        z->add_route(h->get_netpoint(), gpu[(size_t)a]->get_netpoint(), nullptr,
                     nullptr, {sg4::LinkInRoute(pcie[ia])}, true);
        for (int b = a + 1; b < last; b++) {
          size_t ib = (size_t)(b - first);
          std::vector<sg4::LinkInRoute> r;
          if (m->nvlink_gbps > 0)
            r = {sg4::LinkInRoute(nvl[ia]), sg4::LinkInRoute(nvl[ib])};
          else
            r = {sg4::LinkInRoute(pcie[ia]), sg4::LinkInRoute(pcie[ib])};
          z->add_route(gpu[(size_t)a]->get_netpoint(),
                       gpu[(size_t)b]->get_netpoint(), nullptr, nullptr, r,
                       true);
        }
      }
      z->seal();
      if (root != nullptr) {
        sg4::Link *nic = root->create_link(nn + "-net", m->net_gbps * 1e9)
                             ->set_latency((double)m->net_lat_ns * 1e-9);
        root->add_route(z->get_netpoint(), nullptr, h->get_netpoint(), nullptr,
                        {sg4::LinkInRoute(nic)}, true);
      }
    }
    if (root != nullptr)
      root->seal();
  } catch (const std::exception &e) {
    why = std::string("cannot build the simulated platform: ") + e.what();
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------ costs */

namespace {

/* A uniform number in [-1, 1] from the seed and the op (splitmix64). */
double unit_noise(unsigned long long seed, const cua_backend_op *o, int dev) {
  unsigned long long x = seed ^ (o->seq * 0x9e3779b97f4a7c15ull) ^
                         ((unsigned long long)dev << 48) ^ (o->op << 20);
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return (double)(x >> 11) / (double)(1ull << 52) - 1.0;
}

} /* namespace */

sim_cost sim_op_cost(const sim_machine *m, const cua_backend_op *o, int dev) {
  sim_cost c = {};
  c.threads = m->sms;
  c.from = c.to = -1;
  double hbm = m->hbm_gbps; /* bytes per ns */
  double launch = (double)m->launch_ns;
  int node = dev / m->gpus_per_node;
  switch (o->kind) {
  case CUA_OP_MEMCPY_H2D:
  case CUA_OP_MEMCPY_D2H:
  case CUA_OP_MEMCPY_D2D: {
    int src = dev, dst = dev;
    if (o->kind == CUA_OP_MEMCPY_D2D) {
      src = o->src_device >= 0 && (size_t)o->src_device < m->sel.size()
                ? m->sel[(size_t)o->src_device]
                : dev;
      dst = o->dst_device >= 0 && (size_t)o->dst_device < m->sel.size()
                ? m->sel[(size_t)o->dst_device]
                : dev;
    }
    if (o->bytes == 0) {
      c.ns = launch;
      break;
    }
    if (o->kind == CUA_OP_MEMCPY_D2D && src == dst) {
      c.ns = launch + 2.0 * (double)o->bytes / hbm;
      break;
    }
    c.bytes = (double)o->bytes;
    if (o->kind == CUA_OP_MEMCPY_H2D) {
      c.from = node, c.from_cpu = true, c.to = dev;
    } else if (o->kind == CUA_OP_MEMCPY_D2H) {
      c.from = dev, c.to = node, c.to_cpu = true;
    } else {
      c.from = src, c.to = dst;
    }
    return c; /* a transfer: its time is the links' */
  }
  case CUA_OP_SPIN:
    c.threads = (int)(o->spin.blocks == 0 ? 1 : o->spin.blocks);
    c.ns = launch + (double)o->spin.ns; /* its duration is its argument */
    break;
  case CUA_OP_FILL:
  case CUA_OP_MEMSET:
    c.ns = o->est_ns != 0 ? (double)o->est_ns : launch + (double)o->bytes / hbm;
    break;
  case CUA_OP_COPY:
    c.ns = o->est_ns != 0 ? (double)o->est_ns
                          : launch + 2.0 * (double)o->bytes / hbm;
    break;
  case CUA_OP_AXPY:
    c.ns = o->est_ns != 0 ? (double)o->est_ns
                          : launch + 3.0 * (double)o->bytes / hbm;
    break;
  case CUA_OP_KERNEL: {
    unsigned long long blocks =
        (unsigned long long)o->grid[0] * o->grid[1] * o->grid[2];
    c.threads =
        blocks == 0 ? 1 : (int)std::min<unsigned long long>(blocks, 1u << 30);
    c.ns = o->est_ns != 0 ? (double)o->est_ns : (double)m->kernel_ns;
    break;
  }
  default: /* FUNC */
    c.threads = 1;
    c.ns = o->est_ns != 0 ? (double)o->est_ns : (double)m->kernel_ns;
    break;
  }
  if (c.threads > m->sms)
    c.threads = m->sms;
  if (c.threads < 1)
    c.threads = 1;
  if (m->jitter > 0)
    c.ns *= 1.0 + m->jitter * unit_noise(m->seed, o, dev);
  if (c.ns < 0)
    c.ns = 0;
  return c;
}
