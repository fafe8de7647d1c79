/*
 * plugins/sim/sim.cc: the simulated backend. Virtual GPUs, streams and links
 * on SimGrid: ops run in virtual time, transfers share the modelled links,
 * and the runtime's clock is the simulation's.
 *
 * The machine (machine.cc): nodes of GPUs, a host CPU per node, a PCIe link
 * per GPU, an NVLink port per GPU into its node's switch, a network port
 * per node. It becomes a SimGrid platform: a full zone per node (routes
 * GPU-GPU over both GPUs' NVLink ports, host-GPU over the GPU's PCIe link)
 * inside a star zone of nodes (a route between nodes crosses both nodes'
 * network ports).
 *
 * Threads. One simulation per process (struct Sim g): SimGrid runs on a
 * thread of its own (the sim thread), with a gateway actor and one actor
 * per stream of every sim backend open in the process (each a session,
 * struct SimState); everything SimGrid is touched only there. The core's
 * threads (launch(), mark(), event_record()...) append items to a stream's
 * queue; the stream's actor runs them in order: an op is a SimGrid
 * activity (an execution on its GPU, or a transfer over the links) that
 * the actor waits for, in virtual time; a mark sets the stream's progress
 * and lists it for changed(); a record and a wait are a generation counter
 * and the event's list of waiting streams. With the host_* costs, an item
 * also waits until its host call ends on the session's modelled host
 * thread: a submission's round (round(), ABI 1.11) first charges it the
 * build of every node and the policy's plan, then each launch the
 * decision of the policy that placed the op (cua_backend_op::policy) and
 * the launch (host_launch_cold_ns onto a stream with nothing queued or
 * running), each record and wait host_event_ns (or host_record_ns and
 * host_peer_wait_ns). With host_launch_threads
 * above 1, the launches, records and waits take their turns on their
 * stream's modelled launch thread instead (launch_call()), after their
 * decision, and a wait after the record it waits for; with
 * host_contention, those that start while the submission is still being
 * decided take longer (contended()). With
 * host_chunk_first, a submission's calls are held in its open chunk
 * (SimState::pending) and reach their streams once the chunk's last
 * decision is made, as the runtime hands a large submission over in
 * chunks (push_locked()). On the device, a wait for an event recorded on
 * another GPU ends peer_wait_ns after that recording was reached, then
 * keeps its stream peer_wait_busy_ns more, unless the recording was
 * reached before the wait's host call ended (the driver drops it).
 *
 * Time. Virtual time moves on only when the gateway blocks on "the next
 * end", which it does only when every session has nothing running or (1)
 * its completion thread sits in wait() having returned for every earlier
 * step and (2) its core says the program waits with nothing left to
 * launch (cua_backend_host::quiescent()). Each step is everything that
 * happens at the next instant; the completion threads are woken after it
 * and see its progress before the next. So a program's submissions land at
 * virtual instants that do not depend on the host's thread scheduling, and
 * runs repeat exactly (for a program whose waits are future waits or
 * cua_runtime_synchronize() from one thread).
 *
 * Locks: g.mu (a pthread mutex, a leaf) guards the queues, the gateway's
 * lists of new and woken streams, the sessions' step counters, flags,
 * changed lists, open chunks and memory accounts, between the core's threads
 * and the sim thread; g.life serialises the start and stop of the simulation.
 * No SimGrid call is made with g.mu held (a call switches to other actors,
 * which take it). Events' generations, streams' progress and the count of
 * their ops run to their end (SimStream::ops_done, for
 * host_launch_cold_ns) are atomics, read by any thread; the counters of the
 * simulation (g.nactors, g.nblocked, a session's inflight) are the sim
 * thread's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "sim.h"

#include "../hostmem.h"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {

enum ItemKind { IT_OP, IT_MARK, IT_RECORD, IT_WAIT, IT_FREE };

struct SimStream;

struct SimEvent {
  std::atomic<uint64_t> rec_gen{0};  /* recordings enqueued */
  std::atomic<uint64_t> done_gen{0}; /* recordings reached */
  std::atomic<int> refs{1};          /* the core's + queued items' */
  uint64_t rec_host = 0; /* under g.mu: when its last record's host call
                            ends (a wait's starts no earlier) */
  int rec_dev = -1;      /* under g.mu: the GPU of its last record */
  /* Sim thread only: the streams waiting for a generation of it. */
  std::vector<std::pair<SimStream *, uint64_t>> waiters;
  /* Sim thread only, with peer_wait_ns: the generations reached within
   * the last peer_wait_ns, each with when and on which GPU (a wait for
   * one reached earlier has nothing left to wait for). */
  struct Reached {
    uint64_t gen, ns;
    int dev;
  };
  std::deque<Reached> reached;
};

struct Item {
  ItemKind kind;
  uint64_t ready; /* virtual time its host call ended (host_*_ns), or it
                     was queued if that was later: when it was issued */
  uint64_t value; /* MARK: progress; RECORD/WAIT: generation */
  SimEvent *ev;
  void *ptr; /* FREE */
  cua_backend_op op;
};

struct SimState;

/* How long a recording stays in its event's list of those reached (a
 * later recording of the event prunes it): a wait for one reached earlier
 * is over at once. With peer_wait_busy_ns, a wait issued before its
 * recording was reached still costs its stream that much when it comes
 * later on a busy stream: 1 ms, beyond the gaps of the patterns it was
 * measured on (a wait that comes more than 1 ms after its recording, with
 * the event recorded again since, costs nothing). */
inline uint64_t reached_kept(const sim_machine &m) {
  uint64_t kept = (uint64_t)m.peer_wait_ns;
  if (m.peer_wait_busy_ns > 0 && kept < 1000000)
    kept = 1000000;
  return kept;
}

struct SimStream {
  SimState *st;
  int device; /* machine GPU */
  int index;
  std::deque<Item> q; /* under g.mu */
  std::atomic<uint64_t> progress{0};
  /* Failed stream functions (data = real), under g.mu. */
  std::deque<uint64_t> errseq;
  std::deque<int> errcodes;
  std::deque<std::string> errmsgs;
  std::atomic<bool> has_err{false};
  bool woken = false;  /* under g.mu: listed in g.wake */
  bool listed = false; /* under g.mu: in its session's changed list */
  bool gone = false;   /* under g.mu: stream_destroy() or the session ends */
  uint64_t ops_pushed = 0;           /* under g.mu: its launches so far */
  std::atomic<uint64_t> ops_done{0}; /* of them, run to their end */
  /* Sim thread only. */
  sg4::SemaphorePtr sem;
  bool idle = false;
  uint64_t vprog = 0;     /* progress made, not yet published */
  bool in_marked = false; /* listed in g.marked */
};

/* One backend instance (a runtime): its streams and its completion
 * thread's side of the stepping handshake. */
struct SimState {
  const cua_backend_host *host;
  sim_machine m;
  bool real = false;
  uint64_t serial = 0;    /* its order among the sessions (under g.mu) */
  bool closing = false;   /* sim_destroy() runs (under g.mu) */
  pthread_cond_t cv_comp; /* its completion thread, in wait() */
  /* Under g.mu. */
  std::vector<SimStream *> streams;
  long live = 0;         /* stream actors not yet ended */
  uint64_t evt_seq = 0;  /* steps taken while it was open */
  uint64_t cseen = 0;    /* steps its completion thread returned for */
  uint64_t acked = 0;    /* steps it had seen when it last entered wait() */
  bool cwaiting = false; /* its completion thread is inside wait() */
  bool cwake = false;    /* wake() */
  std::vector<uint32_t> changed; /* streams whose progress moved */
  uint64_t host_cursor = 0;      /* when the modelled host thread is free */
  /* When the modelled host thread is expected to end the last
   * submission's build, plan and decisions (host_contention): an upper
   * bound, one decision per node. */
  uint64_t busy_until = 0;
  /* host_contention for that submission's policy. */
  double busy_contention = 0;
  /* When each modelled launch thread is free (host_launch_threads). */
  uint64_t launch_cursor[SIM_LAUNCH_THREADS_MAX] = {0};
  /* A submission's round is open (round()) and hands its commands over in
   * chunks (host_chunk_first): its launches, records, waits, marks and
   * frees wait in `pending`, their host calls not yet made, until the
   * chunk is full (chunk_len launches of chunk_at) and the next launch
   * comes, the next round begins, or the program waits. */
  struct Pending {
    SimStream *s;
    Item it;
    long long host_ns;
  };
  bool chunking = false;
  long long chunk_at = 0, chunk_len = 0;
  std::vector<Pending> pending;
  std::vector<uint64_t> used; /* bytes allocated per machine GPU */
  std::vector<uint64_t> next_addr;
  std::unordered_map<uintptr_t, std::pair<int, size_t>> sizes; /* by addr */
  /* Sim thread only. */
  long inflight = 0; /* its activities running */
};

/* The process's simulation: one SimGrid engine on one thread, shared by
 * every sim backend open in the process (they must describe the same
 * machine), started by the first and stopped with the last. */
struct Sim {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_t life = PTHREAD_MUTEX_INITIALIZER; /* create / destroy */
  pthread_cond_t cv_g;    /* the gateway waits here (real time) */
  pthread_cond_t cv_up;   /* the simulation started or failed to */
  pthread_cond_t cv_down; /* a session's actors ended */
  bool conds = false;
  pthread_t thread;
  bool running = false;
  sim_machine m; /* the machine of the running simulation */
  /* Under mu. */
  bool up = false, failed = false, stop = false;
  bool in_batch = false; /* the gateway works on streams it took */
  std::string error;
  std::vector<SimState *> sessions;
  std::vector<SimStream *> fresh, wake;
  std::atomic<uint64_t> vnow{SIM_EPOCH_NS};
  /* Sim thread only. */
  std::vector<sg4::Host *> gpu, cpu;
  double clock0 = 0;
  /* Stream actors alive, and those blocked (on their queue, an activity,
   * an event): the gateway lets the others run before it blocks the
   * simulation in real time. Whoever wakes an actor counts it unblocked,
   * so that an actor made ready and not yet run is not taken for blocked. */
  long nactors = 0, nblocked = 0;
  std::vector<SimStream *> marked; /* streams with progress to publish */
  bool g_waiting = false;          /* the gateway is in g_sem->acquire() */
  sg4::SemaphorePtr g_sem;
};

/* Never destroyed: a program may exit without closing its runtimes (or
 * exit() while one is open), and the simulation's thread, still running
 * then, reads it until the process ends; a static object's destructor,
 * run by exit(), freed its lists under that thread (a crash at exit). */
Sim &g = *new Sim;

void set_err(cua_backend_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void set_err(cua_backend_err *err, const char *fmt, ...) {
  if (err == nullptr)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
}

/* The CLOCK_MONOTONIC time @p ns of real time from now (g's condition
 * variables use that clock). */
struct timespec deadline(uint64_t ns) {
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  uint64_t t = (uint64_t)dl.tv_nsec + ns % 1000000000u;
  dl.tv_sec += (time_t)(ns / 1000000000u + t / 1000000000u);
  dl.tv_nsec = (long)(t % 1000000000u);
  return dl;
}

uint64_t to_ns(double clock) {
  double d = (clock - g.clock0) * 1e9;
  return SIM_EPOCH_NS + (d > 0 ? (uint64_t)llround(d) : 0);
}

void ev_release(SimEvent *e) {
  if (e != nullptr && e->refs.fetch_sub(1) == 1)
    delete e;
}

void host_free(SimState *st, void *p) {
  const cua_backend_host *h = st->host;
  if (h->size > offsetof(cua_backend_host, free) && h->free != nullptr)
    h->free(h->core, p);
  else
    free(p);
}

/* Under g.mu: gives back the bytes of @p ptr. */
void unaccount(SimState *st, void *ptr) {
  auto it = st->sizes.find((uintptr_t)ptr);
  if (it != st->sizes.end()) {
    st->used[(size_t)it->second.first] -= it->second.second;
    st->sizes.erase(it);
  }
}

/* Under g.mu: lists @p s for its session's changed(). */
void mark_changed(SimState *st, SimStream *s) {
  if (!s->listed) {
    s->listed = true;
    st->changed.push_back((uint32_t)s->index);
  }
}

/* ------------------------------------------------------------ op model */

/* Runs op @p o of stream @p s as a SimGrid activity, in virtual time. */
void run_op(SimState *st, SimStream *s, const cua_backend_op &o) {
  int dev = s->device;
  double start = sg4::Engine::get_clock();
  sim_cost c = sim_op_cost(&st->m, &o, dev);
  st->inflight++;
  g.nblocked++; /* until its activity ends: it then runs before the
                   gateway, which that end wakes */
  if (c.bytes > 0 && c.from >= 0) {
    sg4::Host *a = c.from_cpu ? g.cpu[(size_t)c.from] : g.gpu[(size_t)c.from];
    sg4::Host *b = c.to_cpu ? g.cpu[(size_t)c.to] : g.gpu[(size_t)c.to];
    sg4::CommPtr cm = sg4::Comm::sendto_init(a, b);
    cm->set_payload_size((uint64_t)c.bytes);
    cm->start();
    cm->wait();
  } else if (c.ns > 0) {
    sg4::ExecPtr ex = sg4::Exec::init();
    ex->set_flops_amount(c.ns);
    ex->set_host(g.gpu[(size_t)dev]);
    ex->set_thread_count(c.threads);
    ex->start();
    ex->wait();
  }
  g.nblocked--;
  st->inflight--;
  double end = sg4::Engine::get_clock();
  if (st->real) {
    if (o.kind == CUA_OP_FUNC && o.func != nullptr) {
      cua_backend_err e;
      e.msg[0] = '\0';
      int rc = o.func(o.func_ctx, s, &e);
      if (rc != 0) {
        pthread_mutex_lock(&g.mu);
        s->errseq.push_back(o.seq);
        s->errcodes.push_back(rc);
        s->errmsgs.push_back(e.msg);
        s->has_err.store(true);
        mark_changed(st, s);
        pthread_mutex_unlock(&g.mu);
      }
    } else {
      cua_hostmem_run(&o);
    }
  }
  uint64_t t0 = to_ns(start), t1 = to_ns(end);
  if (o.duration_ns != nullptr)
    *o.duration_ns = t1 - t0;
  if (o.start_ns != nullptr)
    *o.start_ns = t0;
  if (o.end_ns != nullptr)
    *o.end_ns = t1;
  if (g.g_waiting) {
    g.g_waiting = false; /* once per step: the first end of the instant */
    g.g_sem->release();
  }
}

/* Blocks the calling stream actor until virtual time @p t (ns), counted as
 * work in flight, as an op is. */
void sleep_until_ns(SimState *st, uint64_t t) {
  st->inflight++;
  g.nblocked++;
  sg4::this_actor::sleep_until(g.clock0 + (double)(t - SIM_EPOCH_NS) * 1e-9);
  g.nblocked--;
  st->inflight--;
  if (g.g_waiting) {
    g.g_waiting = false;
    g.g_sem->release();
  }
}

/* ------------------------------------------------------------ actors */

void stream_main(SimState *st, SimStream *s) {
  for (;;) {
    Item it;
    bool got = false, gone = false;
    pthread_mutex_lock(&g.mu);
    if (!s->q.empty()) {
      it = s->q.front();
      s->q.pop_front();
      got = true;
    }
    gone = s->gone;
    pthread_mutex_unlock(&g.mu);
    if (!got) {
      if (gone)
        break;
      s->idle = true;
      g.nblocked++; /* the gateway, which releases it, counts it off */
      s->sem->acquire();
      continue;
    }
    if (it.ready > to_ns(sg4::Engine::get_clock()))
      sleep_until_ns(st, it.ready); /* its host call has not ended yet */
    switch (it.kind) {
    case IT_OP:
      run_op(st, s, it.op);
      s->ops_done.fetch_add(1, std::memory_order_release);
      break;
    case IT_MARK:
      /* Published by the gateway once the instant is over (publish()):
       * the core must not see it before the clock says its time. */
      s->vprog = it.value;
      if (!s->in_marked) {
        s->in_marked = true;
        g.marked.push_back(s);
      }
      break;
    case IT_RECORD: {
      SimEvent *e = it.ev;
      if (st->m.peer_wait_ns > 0 || st->m.peer_wait_busy_ns > 0) {
        uint64_t now = to_ns(sg4::Engine::get_clock());
        while (!e->reached.empty() &&
               e->reached.front().ns + reached_kept(st->m) <= now)
          e->reached.pop_front();
        e->reached.push_back({it.value, now, s->device});
      }
      if (it.value > e->done_gen.load())
        e->done_gen.store(it.value, std::memory_order_release);
      /* Wakes the streams this recording lets go, and only them. */
      size_t k = 0;
      for (auto &w : e->waiters)
        if (w.second <= it.value) {
          g.nblocked--;
          w.first->sem->release();
        } else {
          e->waiters[k++] = w;
        }
      e->waiters.resize(k);
      ev_release(e);
      break;
    }
    case IT_WAIT:
      if (it.ev->done_gen.load(std::memory_order_acquire) < it.value) {
        it.ev->waiters.emplace_back(s, it.value);
        g.nblocked++; /* the record that wakes it counts it off */
        s->sem->acquire();
      }
      if (st->m.peer_wait_ns > 0 || st->m.peer_wait_busy_ns > 0) {
        /* Across GPUs, the wait ends peer_wait_ns after the recording
         * it waits for was reached, and the stream then spends
         * peer_wait_busy_ns on it. With peer_wait_busy_ns, a wait whose
         * recording was reached before it was issued (it.ready) costs
         * nothing: the driver drops a wait for work already done. */
        for (const SimEvent::Reached &r : it.ev->reached)
          if (r.gen == it.value) {
            bool busy = st->m.peer_wait_busy_ns > 0;
            if (r.dev == s->device || (busy && r.ns < it.ready))
              break;
            uint64_t now = to_ns(sg4::Engine::get_clock());
            uint64_t until =
                std::max(now, r.ns + (uint64_t)st->m.peer_wait_ns) +
                (busy ? (uint64_t)st->m.peer_wait_busy_ns : 0);
            if (until > now)
              sleep_until_ns(st, until);
            break;
          }
      }
      ev_release(it.ev);
      break;
    case IT_FREE:
      pthread_mutex_lock(&g.mu);
      unaccount(st, it.ptr);
      pthread_mutex_unlock(&g.mu);
      if (st->real)
        host_free(st, it.ptr);
      break;
    }
  }
  g.nactors--;
  s->sem = nullptr;
  if (s->in_marked) /* its runtime closes: nothing reads it any more */
    g.marked.erase(std::find(g.marked.begin(), g.marked.end(), s));
  pthread_mutex_lock(&g.mu);
  st->live--;
  pthread_cond_broadcast(&g.cv_down);
  pthread_mutex_unlock(&g.mu);
}

/* Lets every stream actor run what it can at this instant, until each
 * is blocked: time does not move while the gateway is ready to run. */
void settle() {
  while (g.nblocked < g.nactors)
    sg4::this_actor::yield();
}

/* Whether the program of session @p st waits with every decided command
 * launched (the core's quiescent(), ABI 1.8). */
bool program_waits(SimState *st) {
  const cua_backend_host *h = st->host;
  return h->size > offsetof(cua_backend_host, quiescent) &&
         h->quiescent != nullptr && h->quiescent(h->core) != 0;
}

/* Under g.mu: whether the work queued for session @p st may start: its
 * program waits (so that all of an instant's work is there), or it
 * closes. */
bool session_ready(SimState *st) {
  return st->closing || program_waits(st);
}

/* Under g.mu: moves the streams of @p from whose sessions are ready into
 * @p out, in an order that does not depend on the threads that queued
 * their work (session, then stream), so that activities start in the same
 * order run after run. */
void take_ready(std::vector<SimStream *> &from, std::vector<SimStream *> &out) {
  size_t k = 0;
  for (SimStream *s : from)
    if (session_ready(s->st))
      out.push_back(s);
    else
      from[k++] = s;
  from.resize(k);
  std::sort(out.begin(), out.end(), [](const SimStream *a, const SimStream *b) {
    return a->st->serial != b->st->serial ? a->st->serial < b->st->serial
                                          : a->index < b->index;
  });
}

/* Under g.mu: whether time may move on for session @p st: it has nothing
 * running, or its completion thread has seen every step and its program
 * waits with nothing left to launch. */
bool session_may_step(SimState *st) {
  /* A chunk held by a program that now waits goes out first, at this
   * instant (gateway_main()). One whose program does not wait (it may be
   * waiting for another session's work) holds no one else up. */
  if (!st->pending.empty() && session_ready(st))
    return false;
  if (st->inflight == 0)
    return true;
  return st->cwaiting && st->acked == st->evt_seq && program_waits(st);
}

/* Activities run in some session (a session leaves g.sessions only once
 * its actors ended, with nothing in flight). */
bool any_inflight() {
  for (SimState *st : g.sessions)
    if (st->inflight > 0)
      return true;
  return false;
}

bool may_step() {
  for (SimState *st : g.sessions)
    if (!session_may_step(st))
      return false;
  return true;
}

/* Under g.mu, at the end of an instant: the new time first, then the
 * progress the instant made, then the completion threads are woken. */
void publish() {
  g.vnow.store(to_ns(sg4::Engine::get_clock()));
  for (SimStream *s : g.marked) {
    s->progress.store(s->vprog, std::memory_order_release);
    mark_changed(s->st, s);
    s->in_marked = false;
  }
  g.marked.clear();
  for (SimState *st : g.sessions) {
    st->evt_seq++;
    pthread_cond_broadcast(&st->cv_comp);
  }
}

void end_round(SimState *st);

void gateway_main() {
  /* Every SimGrid call is a switch to the simulation, where other actors
   * run and take g.mu: none is made with it held. */
  std::vector<SimStream *> fresh, wake;
  pthread_mutex_lock(&g.mu);
  for (;;) {
    /* A round whose program now waits has applied all of its list: in
     * virtual time the core applies a round's list only once it is all
     * decided, and the program counts as waiting only while no list is
     * being applied, so what the session holds is the whole list. (Not
     * while it holds nothing: a thread that submits while another waits
     * decides with the program counted as waiting, and ending its round
     * then would depend on when this thread looked.) */
    for (SimState *st : g.sessions)
      if (!st->pending.empty() && session_ready(st))
        end_round(st);
    take_ready(g.fresh, fresh);
    take_ready(g.wake, wake);
    for (SimStream *s : wake)
      s->woken = false;
    if (!fresh.empty() || !wake.empty()) {
      g.in_batch = true; /* sim_destroy() frees no stream of it meanwhile */
      pthread_mutex_unlock(&g.mu);
      for (SimStream *s : fresh) {
        s->sem = sg4::Semaphore::create(0);
        char name[64];
        snprintf(name, sizeof name, "stream%d", s->index);
        g.nactors++;
        sg4::Actor::create(name, g.gpu[(size_t)s->device], stream_main, s->st,
                           s);
      }
      for (SimStream *s : wake)
        if (s->idle && s->sem != nullptr) {
          s->idle = false;
          g.nblocked--;
          s->sem->release();
        }
      fresh.clear();
      wake.clear();
      settle();
      pthread_mutex_lock(&g.mu);
      g.in_batch = false;
      pthread_cond_broadcast(&g.cv_down);
      if (!g.marked.empty())
        publish(); /* marks of work that took no time */
      continue;
    }
    if (any_inflight() && may_step()) {
      pthread_mutex_unlock(&g.mu);
      g.g_waiting = true;
      g.g_sem->acquire(); /* virtual time moves to the next completion */
      settle();
      pthread_mutex_lock(&g.mu);
      publish();
      continue;
    }
    if (g.stop && g.nactors == 0)
      break;
    /* Real time: the core signals new work; a program's starting to wait
     * (quiescent()) is polled. */
    struct timespec dl = deadline(100000);
    pthread_cond_timedwait(&g.cv_g, &g.mu, &dl);
  }
  pthread_mutex_unlock(&g.mu);
}

void *sim_thread(void *arg) {
  int threads = *static_cast<int *>(arg);
  std::vector<std::string> args = {"cuasync-sim",
                                   "--cfg=network/model:CM02",
                                   "--cfg=network/crosstraffic:0",
                                   "--cfg=contexts/stack-size:1024",
                                   "--log=root.thres:critical",
                                   "--log=xbt_cfg.thres:critical"};
  if (threads)
    args.push_back("--cfg=contexts/factory:thread");
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(&a[0]);
  argv.push_back(nullptr);
  int argc = (int)args.size();
  sg4::Engine e(&argc, argv.data());
  std::string why;
  if (sim_build_platform(&g.m, g.gpu, g.cpu, why) != 0) {
    pthread_mutex_lock(&g.mu);
    g.failed = true;
    g.error = why;
    pthread_cond_broadcast(&g.cv_up);
    pthread_mutex_unlock(&g.mu);
    return nullptr;
  }
  g.clock0 = sg4::Engine::get_clock();
  g.vnow.store(SIM_EPOCH_NS);
  g.g_sem = sg4::Semaphore::create(0);
  sg4::Actor::create("gateway", g.cpu[0], []() {
    pthread_mutex_lock(&g.mu);
    g.up = true;
    pthread_cond_broadcast(&g.cv_up);
    pthread_mutex_unlock(&g.mu);
    gateway_main();
  });
  e.run();
  g.g_sem = nullptr;
  return nullptr;
}

/* Whether two machines are the same simulation (data, the devices chosen
 * and the modelled host's costs, which are each runtime's own, may
 * differ). */
bool same_machine(const sim_machine &a, const sim_machine &b) {
  return a.gpus == b.gpus && a.gpus_per_node == b.gpus_per_node &&
         a.sms == b.sms && a.memory_gb == b.memory_gb && a.speed == b.speed &&
         a.hbm_gbps == b.hbm_gbps && a.pcie_gbps == b.pcie_gbps &&
         a.nvlink_gbps == b.nvlink_gbps && a.net_gbps == b.net_gbps &&
         a.jitter == b.jitter && a.launch_ns == b.launch_ns &&
         a.kernel_ns == b.kernel_ns && a.pcie_lat_ns == b.pcie_lat_ns &&
         a.nvlink_lat_ns == b.nvlink_lat_ns && a.net_lat_ns == b.net_lat_ns &&
         a.seed == b.seed;
}

/* Under g.life: starts the simulation of @p m. */
int sim_start(const sim_machine &m, bool threads, const cua_backend_host *host,
              cua_backend_err *err) {
  if (!g.conds) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.cv_g, &ca);
    pthread_cond_init(&g.cv_up, &ca);
    pthread_cond_init(&g.cv_down, &ca);
    pthread_condattr_destroy(&ca);
    g.conds = true;
  }
  g.m = m;
  g.up = g.failed = g.stop = false;
  g.nactors = g.nblocked = 0;
  g.marked.clear();
  static int thr;
  thr = threads ? 1 : 0;
  int rc = host->size > offsetof(cua_backend_host, thread_create) &&
                   host->thread_create != nullptr
               ? host->thread_create(host->core, &g.thread, nullptr, sim_thread,
                                     &thr)
               : pthread_create(&g.thread, nullptr, sim_thread, &thr);
  if (rc != 0) {
    set_err(err, "cannot start the simulation thread: %s", strerror(rc));
    return CUA_ERR_NOMEM;
  }
  pthread_mutex_lock(&g.mu);
  while (!g.up && !g.failed)
    pthread_cond_wait(&g.cv_up, &g.mu);
  bool failed = g.failed;
  pthread_mutex_unlock(&g.mu);
  if (failed) {
    pthread_join(g.thread, nullptr);
    set_err(err, "%s", g.error.c_str());
    return CUA_ERR_BACKEND;
  }
  g.running = true;
  return 0;
}

/* Under g.life: stops the simulation (no session is left). */
void sim_stop() {
  pthread_mutex_lock(&g.mu);
  g.stop = true;
  pthread_cond_broadcast(&g.cv_g);
  pthread_mutex_unlock(&g.mu);
  pthread_join(g.thread, nullptr);
  g.running = false;
  g.gpu.clear();
  g.cpu.clear();
}

/* ------------------------------------------------------------ descriptor */

SimState *S(void *state) {
  return static_cast<SimState *>(state);
}

/* Under g.mu: has the gateway look at @p s. It does before time moves
 * on, which needs the program to wait (it polls for that), so a launch
 * does not wake it: the launches of a submission reach it in one batch. */
void wake_locked(SimStream *s) {
  if (!s->woken) {
    s->woken = true;
    g.wake.push_back(s);
  }
}

/* Under g.mu: the virtual time at which a host call of @p ns made now ends
 * on session @p st's modelled host thread (0 when that is now: a call that
 * costs nothing still comes after the host's earlier work). */
uint64_t host_call(SimState *st, long long ns) {
  uint64_t now = g.vnow.load();
  if (ns <= 0)
    return st->host_cursor > now ? st->host_cursor : 0;
  if (st->host_cursor < now)
    st->host_cursor = now;
  st->host_cursor += (uint64_t)ns;
  return st->host_cursor;
}

/* Under g.mu: how long a launch thread's call of @p ns starting at @p start
 * takes (host_contention): 1 + X times as long, X the last submission's
 * policy's (busy_contention), for the part of it that falls while the
 * modelled host thread is still expected to be busy with that
 * submission's build, plan and decisions (busy_until; a call
 * starts after its own decision, so the host cursor itself never reaches
 * past it), as long as usual after. */
uint64_t contended(const SimState *st, uint64_t start, long long ns) {
  uint64_t busy = st->busy_until;
  double c = st->busy_contention;
  if (c <= 0 || busy <= start)
    return (uint64_t)ns;
  double slow = 1.0 + c, window = (double)(busy - start);
  double stretched = (double)ns * slow;
  if (stretched <= window)
    return (uint64_t)std::llround(stretched);
  return (uint64_t)std::llround(window + (double)ns - window / slow);
}

/* Under g.mu: with host_launch_threads above 1, the virtual time at
 * which a call to stream @p s ends whose decision (@p decide_ns) is made
 * on the modelled host thread and whose launch (@p launch_ns) then takes
 * its turn on the stream's modelled launch thread; with 1, both take
 * turns on the host thread. */
uint64_t launch_call(SimStream *s, long long decide_ns, long long launch_ns,
                     uint64_t after = 0) {
  SimState *st = s->st;
  int n = st->m.host_launch_threads;
  if (n <= 1)
    return host_call(st, decide_ns + launch_ns);
  uint64_t decided = host_call(st, decide_ns);
  uint64_t now = g.vnow.load();
  uint64_t &cur = st->launch_cursor[s->index % n];
  uint64_t start = std::max({now, decided, cur, after});
  if (launch_ns <= 0)
    return start > now ? start : 0;
  cur = start + contended(st, start, launch_ns);
  return cur;
}

/* Under g.mu: queues @p it on its stream @p s, its host call (@p host_ns)
 * after every decision made so far (and a wait's after its record's). */
void enqueue_locked(SimStream *s, Item &it, long long host_ns) {
  uint64_t after = it.kind == IT_WAIT ? it.ev->rec_host : 0;
  /* (launch_call() says 0 for a call over at once.) */
  it.ready = std::max(launch_call(s, 0, host_ns, after), g.vnow.load());
  if (it.kind == IT_RECORD)
    it.ev->rec_host = it.ready;
  s->q.push_back(it);
  wake_locked(s);
}

/* Under g.mu: the open chunk of session @p st goes to its streams, in the
 * order the core applied it, once its last decision is made. */
void flush_chunk(SimState *st) {
  for (SimState::Pending &p : st->pending)
    enqueue_locked(p.s, p.it, p.host_ns);
  st->pending.clear();
  st->chunk_len = 0;
}

/* Under g.mu: the round of session @p st ends (the next begins, the
 * program waits, a stream or the session goes): what it still holds goes
 * out, and commands are queued at once again until the next round. */
void end_round(SimState *st) {
  flush_chunk(st);
  st->chunking = false;
}

/* Under g.mu: @p it for stream @p s, after the decision (@p decide_ns, on
 * the modelled host thread) of a launch, if it is one: queued at once, or
 * held in the round's open chunk. A launch, or a wait (the core decides an
 * op's waits just before its launch), that finds the chunk full sends it
 * first, before its own decision: the chunk keeps the records and marks
 * that came after its last launch, as the core's chunk does. */
void push_locked(SimStream *s, Item &it, long long host_ns,
                 long long decide_ns) {
  SimState *st = s->st;
  if (st->chunking && (it.kind == IT_OP || it.kind == IT_WAIT) &&
      st->chunk_len >= st->chunk_at) {
    flush_chunk(st);
    st->chunk_at = std::min(st->chunk_at * 2, st->m.host_chunk_max);
  }
  (void)host_call(st, decide_ns);
  if (!st->chunking) {
    enqueue_locked(s, it, host_ns);
    return;
  }
  if (it.kind == IT_OP)
    st->chunk_len++;
  st->pending.push_back({s, it, host_ns});
}

void push(SimStream *s, Item it, long long host_ns = 0,
          long long decide_ns = 0) {
  pthread_mutex_lock(&g.mu);
  push_locked(s, it, host_ns, decide_ns);
  pthread_mutex_unlock(&g.mu);
}

void free_state(SimState *st) {
  for (SimStream *s : st->streams) {
    for (Item &it : s->q)
      if (it.kind == IT_RECORD || it.kind == IT_WAIT)
        ev_release(it.ev);
    delete s;
  }
  pthread_cond_destroy(&st->cv_comp);
  delete st;
}

int sim_create(const cua_backend_host *host, const cua_param_value *params,
               const int *ordinals, int nordinals, void **state,
               cua_backend_err *err) {
  SimState *st = new SimState();
  st->host = host;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&st->cv_comp, &ca);
  pthread_condattr_destroy(&ca);
  int rc = sim_machine_from_params(&st->m, params, err);
  if (rc != 0) {
    free_state(st);
    return rc;
  }
  st->real = st->m.data_real != 0;
  /* Devices: every GPU of the machine, or the ones asked for. */
  std::vector<int> sel;
  if (ordinals == nullptr) {
    for (int i = 0; i < st->m.gpus; i++)
      sel.push_back(i);
  } else {
    for (int i = 0; i < nordinals; i++) {
      if (ordinals[i] < 0 || ordinals[i] >= st->m.gpus) {
        set_err(err, "device %d: the simulated machine has %d GPUs",
                ordinals[i], st->m.gpus);
        free_state(st);
        return CUA_ERR_BAD_DEVICE;
      }
      sel.push_back(ordinals[i]);
    }
  }
  st->m.sel = sel;
  st->next_addr.assign((size_t)st->m.gpus, 0);
  st->used.assign((size_t)st->m.gpus, 0);
  bool threads = getenv("CUASYNC_SIM_CONTEXT_THREADS") != nullptr;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  threads = true; /* sanitizers follow threads, not ucontexts */
#endif
  pthread_mutex_lock(&g.life);
  if (!g.running) {
    rc = sim_start(st->m, threads, host, err);
  } else if (!same_machine(g.m, st->m)) {
    set_err(err,
            "another sim backend of this process simulates another "
            "machine (%d GPUs, %d per node): SimGrid runs one "
            "simulation per process, and every sim backend open at "
            "once shares it",
            g.m.gpus, g.m.gpus_per_node);
    rc = CUA_ERR_BUSY;
  }
  if (rc == 0) {
    pthread_mutex_lock(&g.mu);
    static uint64_t serials;
    st->serial = ++serials;
    g.sessions.push_back(st);
    pthread_mutex_unlock(&g.mu);
  }
  pthread_mutex_unlock(&g.life);
  if (rc != 0) {
    free_state(st);
    return rc;
  }
  *state = st;
  return 0;
}

void sim_destroy(void *state) {
  SimState *st = S(state);
  pthread_mutex_lock(&g.life);
  pthread_mutex_lock(&g.mu);
  end_round(st);
  st->closing = true;
  /* Its stream actors end once their queues are empty. */
  for (SimStream *s : st->streams) {
    s->gone = true;
    wake_locked(s);
  }
  pthread_cond_signal(&g.cv_g);
  while (st->live > 0 || g.in_batch)
    pthread_cond_wait(&g.cv_down, &g.mu);
  /* Its streams leave the gateway's lists before they are freed. */
  auto mine = [st](SimStream *s) { return s->st == st; };
  g.wake.erase(std::remove_if(g.wake.begin(), g.wake.end(), mine),
               g.wake.end());
  g.fresh.erase(std::remove_if(g.fresh.begin(), g.fresh.end(), mine),
                g.fresh.end());
  g.sessions.erase(std::find(g.sessions.begin(), g.sessions.end(), st));
  bool last = g.sessions.empty();
  pthread_mutex_unlock(&g.mu);
  if (last)
    sim_stop();
  pthread_mutex_unlock(&g.life);
  free_state(st);
}

int sim_device_count(void *state) {
  return (int)S(state)->m.sel.size();
}

int sim_device_info(void *state, int device, cua_device_info *info) {
  SimState *st = S(state);
  if (device < 0 || device >= (int)st->m.sel.size() || info == nullptr)
    return CUA_ERR_BAD_DEVICE;
  cua_device_info d;
  memset(&d, 0, sizeof d);
  int gi = st->m.sel[(size_t)device];
  snprintf(d.name, sizeof d.name, "simulated GPU %d (node %d)", gi,
           gi / st->m.gpus_per_node);
  d.ordinal = gi;
  d.total_memory = (uint64_t)st->m.memory_gb << 30;
  d.multiprocessors = st->m.sms;
  size_t n = info->size != 0 && info->size < sizeof d ? info->size : sizeof d;
  d.size = n;
  memcpy(info, &d, n);
  return 0;
}

int sim_can_access(void *state, int device, int peer) {
  SimState *st = S(state);
  int n = (int)st->m.sel.size();
  if (device < 0 || device >= n || peer < 0 || peer >= n)
    return 0;
  /* Peers within a node (NVLink or PCIe peer-to-peer); across nodes only
   * copies reach. */
  return st->m.sel[(size_t)device] / st->m.gpus_per_node ==
         st->m.sel[(size_t)peer] / st->m.gpus_per_node;
}

int sim_stream_create(void *state, int device, cua_backend_stream **out,
                      cua_backend_err *err) {
  SimState *st = S(state);
  if (device < 0 || device >= (int)st->m.sel.size()) {
    set_err(err, "stream_create: no device %d", device);
    return CUA_ERR_BAD_DEVICE;
  }
  SimStream *s = new SimStream();
  s->st = st;
  s->device = st->m.sel[(size_t)device];
  pthread_mutex_lock(&g.mu);
  s->index = (int)st->streams.size();
  st->streams.push_back(s);
  st->live++;
  g.fresh.push_back(s);
  pthread_cond_signal(&g.cv_g);
  pthread_mutex_unlock(&g.mu);
  *out = reinterpret_cast<cua_backend_stream *>(s);
  return 0;
}

SimStream *SS(cua_backend_stream *s) {
  return reinterpret_cast<SimStream *>(s);
}

void sim_stream_destroy(void *state, cua_backend_stream *bs) {
  (void)state;
  SimStream *s = SS(bs);
  pthread_mutex_lock(&g.mu);
  flush_chunk(s->st); /* its commands still come before its end */
  s->gone = true;
  wake_locked(s);
  pthread_mutex_unlock(&g.mu);
}

void *sim_stream_native(void *state, cua_backend_stream *s) {
  (void)state;
  return s;
}

int sim_event_create(void *state, int device, cua_backend_event **out,
                     cua_backend_err *err) {
  (void)state;
  (void)device;
  (void)err;
  *out = reinterpret_cast<cua_backend_event *>(new SimEvent());
  return 0;
}

SimEvent *SE(cua_backend_event *e) {
  return reinterpret_cast<SimEvent *>(e);
}

void sim_event_destroy(void *state, cua_backend_event *e) {
  (void)state;
  ev_release(SE(e));
}

int sim_event_record(void *state, cua_backend_event *be,
                     cua_backend_stream *s) {
  (void)state;
  SimEvent *e = SE(be);
  Item it{};
  it.kind = IT_RECORD;
  it.ev = e;
  e->refs.fetch_add(1);
  /* The generation is taken under g.mu with the item queued (or held in
   * the session's open chunk, which goes out in order), so that a wait
   * captured later always finds its record ahead of it. */
  pthread_mutex_lock(&g.mu);
  it.value = e->rec_gen.fetch_add(1) + 1;
  e->rec_dev = SS(s)->device;
  push_locked(SS(s), it, SS(s)->st->m.host_record_ns, 0);
  pthread_mutex_unlock(&g.mu);
  return 0;
}

int sim_stream_wait_event(void *state, cua_backend_stream *s,
                          cua_backend_event *be) {
  (void)state;
  SimEvent *e = SE(be);
  pthread_mutex_lock(&g.mu);
  uint64_t gen = e->rec_gen.load();
  if (gen == 0) {
    pthread_mutex_unlock(&g.mu);
    return 0; /* never recorded: nothing to wait for */
  }
  Item it{};
  it.kind = IT_WAIT;
  it.ev = e;
  it.value = gen;
  e->refs.fetch_add(1);
  /* The core applies a wait only after the record it waits for (its
   * turns, core/executor.c): on another modelled launch thread, its host
   * call starts once the record's ended (enqueue_locked()). A wait for
   * a record on another GPU costs host_peer_wait_ns. */
  const sim_machine &m = SS(s)->st->m;
  long long ns = e->rec_dev >= 0 && e->rec_dev != SS(s)->device
                     ? m.host_peer_wait_ns
                     : m.host_event_ns;
  push_locked(SS(s), it, ns, 0);
  pthread_mutex_unlock(&g.mu);
  return 0;
}

int sim_event_query(void *state, cua_backend_event *be) {
  (void)state;
  SimEvent *e = SE(be);
  return e->done_gen.load(std::memory_order_acquire) >= e->rec_gen.load()
             ? 0
             : CUA_ERR_AGAIN;
}

int sim_mem_alloc(void *state, int device, cua_backend_stream *s, size_t bytes,
                  void **ptr, cua_backend_err *err) {
  (void)s;
  SimState *st = S(state);
  if (device < 0 || device >= (int)st->m.sel.size()) {
    set_err(err, "mem_alloc: no device %d", device);
    return CUA_ERR_BAD_DEVICE;
  }
  int gi = st->m.sel[(size_t)device];
  uint64_t cap = (uint64_t)st->m.memory_gb << 30;
  size_t rounded = (bytes + 255) & ~(size_t)255;
  if (rounded == 0)
    rounded = 256;
  void *p = nullptr;
  if (st->real) {
    const cua_backend_host *h = st->host;
    p = h->size > offsetof(cua_backend_host, alloc) && h->alloc != nullptr
            ? h->alloc(h->core, rounded, 256)
            : aligned_alloc(256, rounded);
    if (p == nullptr) {
      set_err(err, "mem_alloc: out of host memory for %zu bytes", bytes);
      return CUA_ERR_DEVICE_OOM;
    }
    memset(p, 0, rounded);
  }
  pthread_mutex_lock(&g.mu);
  bool oom = st->used[(size_t)gi] + rounded > cap;
  if (!oom) {
    st->used[(size_t)gi] += rounded;
    if (!st->real) {
      /* Never dereferenced: an address in a range of its own per GPU. */
      p = reinterpret_cast<void *>(SIM_VADDR_BASE + ((uint64_t)gi << 40) +
                                   st->next_addr[(size_t)gi]);
      st->next_addr[(size_t)gi] += rounded;
    }
    st->sizes[(uintptr_t)p] = {gi, rounded};
  }
  pthread_mutex_unlock(&g.mu);
  if (oom) {
    if (st->real)
      host_free(st, p);
    set_err(err,
            "mem_alloc: %zu bytes do not fit in the %d GiB of simulated "
            "GPU %d",
            bytes, st->m.memory_gb, gi);
    return CUA_ERR_DEVICE_OOM;
  }
  *ptr = p;
  return 0;
}

void sim_mem_free(void *state, int device, cua_backend_stream *s, void *ptr) {
  (void)device;
  SimState *st = S(state);
  if (ptr == nullptr)
    return;
  if (s != nullptr) {
    Item it{};
    it.kind = IT_FREE;
    it.ptr = ptr;
    push(SS(s), it);
    return;
  }
  pthread_mutex_lock(&g.mu);
  unaccount(st, ptr);
  pthread_mutex_unlock(&g.mu);
  if (st->real)
    host_free(st, ptr);
}

int sim_launch(void *state, cua_backend_stream *s, const cua_backend_op *op,
               cua_backend_err *err) {
  SimState *st = S(state);
  if (op->kind == CUA_OP_KERNEL && st->real) {
    set_err(err,
            "launch: KERNEL op %llu: the sim backend runs module kernels "
            "only with data = virtual",
            (unsigned long long)op->seq);
    return CUA_ERR_NOTSUP;
  }
  Item it{};
  it.kind = IT_OP;
  size_t n = op->size < sizeof it.op ? op->size : sizeof it.op;
  memcpy(&it.op, op, n);
  it.op.kernel_params = nullptr; /* valid only during this call */
  /* The policy's decision, then the launch (ABI 1.11: no policy, no
   * decision; an older core tells none). */
  const char *pol =
      op->size >= offsetof(cua_backend_op, policy) + sizeof op->policy
          ? op->policy
          : nullptr;
  SimStream *ss = SS(s);
  pthread_mutex_lock(&g.mu);
  /* A launch onto a stream with nothing queued or running costs
   * host_launch_cold_ns. */
  long long launch_ns =
      ss->ops_pushed == ss->ops_done.load(std::memory_order_acquire)
          ? st->m.host_launch_cold_ns
          : st->m.host_launch_ns;
  ss->ops_pushed++;
  push_locked(ss, it, launch_ns, st->m.host_decide.get(pol));
  pthread_mutex_unlock(&g.mu);
  return 0;
}

int sim_mark(void *state, cua_backend_stream *s, uint64_t value) {
  Item it{};
  it.kind = IT_MARK;
  it.value = value;
  push(SS(s), it);
  return 0;
}

int sim_progress(void *state, cua_backend_stream *s, uint64_t *value,
                 cua_backend_err *err) {
  (void)state;
  (void)err;
  *value = SS(s)->progress.load(std::memory_order_acquire);
  return 0;
}

int sim_poll_error(void *state, cua_backend_stream *bs, uint64_t *seq,
                   int *code, cua_backend_err *err) {
  (void)state;
  SimStream *s = SS(bs);
  int got = 0;
  if (!s->has_err.load(std::memory_order_acquire))
    return 0;
  pthread_mutex_lock(&g.mu);
  if (!s->errseq.empty()) {
    *seq = s->errseq.front();
    *code = s->errcodes.front();
    set_err(err, "%s", s->errmsgs.front().c_str());
    s->errseq.pop_front();
    s->errcodes.pop_front();
    s->errmsgs.pop_front();
    s->has_err.store(!s->errseq.empty());
    got = 1;
  }
  pthread_mutex_unlock(&g.mu);
  return got;
}

/* The completion thread: one step of virtual time per call at most, and
 * only once it has seen the steps before (see the top of this file). */
int sim_wait(void *state, uint64_t timeout_ns) {
  SimState *st = S(state);
  struct timespec dl = deadline(timeout_ns);
  pthread_mutex_lock(&g.mu);
  st->cwaiting = true;
  st->acked = st->cseen; /* every step before this call has been seen */
  pthread_cond_signal(&g.cv_g);
  while (st->evt_seq == st->cseen && !st->cwake) {
    if (pthread_cond_timedwait(&st->cv_comp, &g.mu, &dl) == ETIMEDOUT)
      break;
  }
  st->cseen = st->evt_seq;
  st->cwaiting = false;
  st->cwake = false;
  pthread_mutex_unlock(&g.mu);
  return 0;
}

void sim_wake(void *state) {
  SimState *st = S(state);
  pthread_mutex_lock(&g.mu);
  st->cwake = true;
  pthread_cond_broadcast(&st->cv_comp);
  pthread_mutex_unlock(&g.mu);
}

int sim_module_load(void *state, const void *image, size_t bytes,
                    cua_backend_module **out, cua_backend_err *err) {
  SimState *st = S(state);
  (void)image;
  (void)bytes;
  if (st->real) {
    set_err(err, "module_load: the sim backend loads modules only with "
                 "data = virtual (it cannot run their kernels)");
    return CUA_ERR_NOTSUP;
  }
  *out = reinterpret_cast<cua_backend_module *>(new int(0));
  return 0;
}

void sim_module_unload(void *state, cua_backend_module *m) {
  (void)state;
  delete reinterpret_cast<int *>(m);
}

int sim_module_function(void *state, cua_backend_module *m, const char *name,
                        void **kernel, cua_backend_err *err) {
  (void)state;
  (void)m;
  (void)err;
  /* Any name: the kernel runs for its op's expected time. */
  *kernel = const_cast<char *>(name);
  return 0;
}

int sim_changed(void *state, uint32_t *out, size_t max, size_t *n) {
  SimState *st = S(state);
  int over = 0;
  pthread_mutex_lock(&g.mu);
  if (st->changed.size() > max) {
    over = 1;
    *n = 0;
  } else {
    std::copy(st->changed.begin(), st->changed.end(), out);
    *n = st->changed.size();
  }
  for (uint32_t i : st->changed)
    st->streams[i]->listed = false;
  st->changed.clear();
  pthread_mutex_unlock(&g.mu);
  return over;
}

uint64_t sim_clock_ns(void *state) {
  (void)state;
  return g.vnow.load(std::memory_order_acquire);
}

/* A submission's round (ABI 1.11): the modelled host builds its nodes and
 * makes the policy's plan before the round's first launch. */
void sim_round(void *state, size_t nodes, const char *policy) {
  SimState *st = S(state);
  long long per = st->m.host_build_ns + st->m.host_plan.get(policy);
  pthread_mutex_lock(&g.mu);
  end_round(st);
  st->chunking = st->m.host_chunk_first > 0;
  st->chunk_at = st->m.host_chunk_first;
  uint64_t built = host_call(st, per * (long long)nodes);
  /* The decisions that follow, for host_contention: at most one per node
   * (the host and virtual nodes among them get none, and an op of a later
   * round, made ready by a completion, is not counted here). */
  st->busy_until = std::max(built, g.vnow.load()) +
                   (uint64_t)(st->m.host_decide.get(policy) * (long long)nodes);
  st->busy_contention = st->m.host_contention.get(policy);
  pthread_mutex_unlock(&g.mu);
}

} /* namespace */

extern "C" {

CUA__BACKEND_EXPORT const cua_backend_descriptor cua_backend_entry = {
    CUA_BACKEND_ABI_MAJOR,
    CUA_BACKEND_ABI_MINOR,
    sizeof(cua_backend_descriptor),
    "sim",
    SIM_VERSION,
    "simulated GPUs, links and nodes in virtual time (SimGrid)",
    CUA_BACKEND_HOST_EXEC,
    sim_params,
    SIM_PARAM_COUNT,
    sim_create,
    sim_destroy,
    sim_device_count,
    sim_device_info,
    sim_can_access,
    sim_stream_create,
    sim_stream_destroy,
    sim_stream_native,
    sim_event_create,
    sim_event_destroy,
    sim_event_record,
    sim_stream_wait_event,
    sim_event_query,
    sim_mem_alloc,
    sim_mem_free,
    sim_launch,
    sim_mark,
    sim_progress,
    sim_poll_error,
    sim_wait,
    sim_wake,
    nullptr, /* host_alloc */
    nullptr, /* host_free */
    sim_module_load,
    sim_module_unload,
    sim_module_function,
    -1,      /* only by name: never chosen by backend = auto */
    nullptr, /* native_record */
    nullptr, /* native_wait */
    nullptr, /* capture_begin */
    nullptr, /* capture_end */
    nullptr, /* graph_launch */
    nullptr, /* graph_destroy */
    nullptr, /* graph_update_op */
    nullptr, /* flush_times */
    sim_clock_ns,
    sim_changed,
    nullptr, /* capture_deps */
    nullptr, /* waited */
    sim_round,
};

} /* extern "C" */
