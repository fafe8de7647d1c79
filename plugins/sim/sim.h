/*
 * plugins/sim/sim.h: what the sim backend's two files share: the machine
 * (from [backend.sim] and a machine file), its SimGrid platform, and the
 * cost model that turns an op into an execution or a transfer.
 * machine.cc owns all of it; sim.cc runs it. No locks: a machine is
 * written once, in create(), and read-only afterwards.
 */
#ifndef CUASYNC_PLUGINS_SIM_H
#define CUASYNC_PLUGINS_SIM_H

#include <cuasync/backend.h>
#include <cuasync/errors.h>

#include <string>
#include <vector>

namespace simgrid {
namespace s4u {
class Host;
}
} // namespace simgrid

#define SIM_VERSION "0.2.0"
/* Virtual time starts at one second, so that no time reads as "unknown"
 * (0) to the core. */
#define SIM_EPOCH_NS 1000000000ull
/* Where virtual device addresses begin (data = virtual): never mapped. */
#define SIM_VADDR_BASE 0x100000000000ull

enum {
  SIM_PARAM_MACHINE,
  SIM_PARAM_GPUS,
  SIM_PARAM_GPUS_PER_NODE,
  SIM_PARAM_SMS,
  SIM_PARAM_SPEED,
  SIM_PARAM_MEMORY_GB,
  SIM_PARAM_HBM_GBPS,
  SIM_PARAM_LAUNCH_NS,
  SIM_PARAM_KERNEL_NS,
  SIM_PARAM_PCIE_GBPS,
  SIM_PARAM_PCIE_LATENCY_NS,
  SIM_PARAM_NVLINK_GBPS,
  SIM_PARAM_NVLINK_LATENCY_NS,
  SIM_PARAM_NET_GBPS,
  SIM_PARAM_NET_LATENCY_NS,
  SIM_PARAM_DATA,
  SIM_PARAM_JITTER,
  SIM_PARAM_SEED,
  SIM_PARAM_HOST_LAUNCH_NS,
  SIM_PARAM_HOST_EVENT_NS,
  SIM_PARAM_HOST_BUILD_NS,
  SIM_PARAM_HOST_PLAN_NS,
  SIM_PARAM_HOST_DECIDE_NS,
  SIM_PARAM_HOST_LAUNCH_THREADS,
  SIM_PARAM_PEER_WAIT_NS,
  SIM_PARAM_HOST_CHUNK_FIRST,
  SIM_PARAM_HOST_CHUNK_MAX,
  SIM_PARAM_HOST_PEER_WAIT_NS,
  SIM_PARAM_HOST_RECORD_NS,
  SIM_PARAM_HOST_CONTENTION,
  SIM_PARAM_HOST_LAUNCH_COLD_NS,
  SIM_PARAM_PEER_WAIT_BUSY_NS,
  SIM_PARAM_COUNT
};

extern const cua_param_spec sim_params[SIM_PARAM_COUNT];

/** A value per policy: the first item's for every policy (0 if left
 * out), then "POLICY=V" for the ones that differ. */
template <class T> struct sim_by_policy {
  T dflt = 0;
  std::vector<std::pair<std::string, T>> by;
  /** Policy @p name's value: its own if listed, else the first item's
   * (NULL included). */
  T listed(const char *name) const {
    if (name != nullptr)
      for (const auto &b : by)
        if (b.first == name)
          return b.second;
    return dflt;
  }
};

/** A host cost per policy: "NS" for every policy (0 if left out), then
 * "POLICY=NS" for the ones that differ ("900, heft=2500"). */
struct sim_costs : sim_by_policy<long long> {
  /** The cost for policy @p name; 0 for none (NULL: no policy decided). */
  long long get(const char *name) const {
    return name != nullptr ? listed(name) : 0;
  }
};

/** Parses @p text into @p c; 0, or CUA_ERR_CONFIG_BAD_VALUE /
 * CUA_ERR_CONFIG_OUT_OF_RANGE with @p why. */
int sim_costs_parse(const std::string &text, sim_costs *c, std::string &why);

/** A factor per policy, as sim_costs: "X" for every policy (0 if left
 * out), then "POLICY=X" for the ones that differ ("0.5, dmda=0.4"). */
struct sim_factors : sim_by_policy<double> {
  /** The factor for policy @p name; the first item's for a policy not
   * listed, and for none (NULL). */
  double get(const char *name) const {
    return listed(name);
  }
};

/** Parses @p text into @p f, each factor in [@p min, @p max]; 0, or
 * CUA_ERR_CONFIG_BAD_VALUE / CUA_ERR_CONFIG_OUT_OF_RANGE with @p why. */
int sim_factors_parse(const std::string &text, double min, double max,
                      sim_factors *f, std::string &why);

/** The most modelled launch threads (host_launch_threads), as the core's
 * launch threads (CUA__LAUNCHERS_MAX). */
#define SIM_LAUNCH_THREADS_MAX 8

/** The simulated machine. */
struct sim_machine {
  int gpus, gpus_per_node, nodes, sms, memory_gb, data_real;
  double speed, hbm_gbps, pcie_gbps, nvlink_gbps, net_gbps, jitter;
  long long launch_ns, kernel_ns, pcie_lat_ns, nvlink_lat_ns, net_lat_ns;
  unsigned long long seed;
  long long host_launch_ns, host_event_ns, host_build_ns;
  int host_launch_threads;
  long long peer_wait_ns;
  long long peer_wait_busy_ns; /* a wait across GPUs, on its stream */
  long long host_chunk_first, host_chunk_max;
  /* Their -1 in the section is resolved when the machine is read. */
  long long host_peer_wait_ns;   /* a wait across GPUs */
  long long host_record_ns;      /* a record */
  long long host_launch_cold_ns; /* a launch onto an idle stream */
  sim_factors host_contention;   /* launch threads' slowdown, 0: none */
  sim_costs host_plan, host_decide;
  std::vector<int> sel; /* runtime device index -> machine GPU */
};

/** What an op costs: an execution of @p ns (per thread, on @p threads SMs)
 * on its GPU, or a transfer of @p bytes from @p from to @p to (GPU
 * indexes, or node indexes where *_cpu). */
struct sim_cost {
  double ns;
  int threads;
  double bytes;
  int from, to;
  bool from_cpu, to_cpu;
};

/** Fills @p m from the section's values (and the machine file it names).
 * Errors: CUA_ERR_CONFIG_* with "FILE:LINE: ..." for the file's. */
int sim_machine_from_params(sim_machine *m, const cua_param_value *params,
                            cua_backend_err *err);
/** Builds the SimGrid platform of @p m (on the sim thread, after the
 * engine exists): GPU hosts by machine index, one CPU host per node. */
int sim_build_platform(const sim_machine *m,
                       std::vector<simgrid::s4u::Host *> &gpu,
                       std::vector<simgrid::s4u::Host *> &cpu,
                       std::string &why);
/** The cost of op @p o on machine GPU @p dev. */
sim_cost sim_op_cost(const sim_machine *m, const cua_backend_op *o, int dev);

#endif /* CUASYNC_PLUGINS_SIM_H */
