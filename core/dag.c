/*
 * core/dag.c: the whole DAG of a submission for its policy's
 * submission_begin(), and the submission_end() that closes it.
 *
 * Only a policy with submission_begin() pays for this: the DAG (ops in
 * post-order, input and successor indices, buffers) is built in memory of
 * its own, handed over, and freed before the first op is placed. The
 * submission then counts its device ops still to be placed; the last
 * placement (or the submission's completion, when ops failed before they
 * could be placed) calls submission_end() once.
 *
 * Runs under rt->lock, which serialises the calls into the policy.
 */
#include "config.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* One buffer access while the DAG is built: sorted by buffer to number
 * the buffers. */
typedef struct acc_ref {
  const cua_buffer *buf;
  size_t slot; /* into the flat access arrays */
} acc_ref;

static int cmp_acc(const void *a, const void *b) {
  const cua_buffer *x = ((const acc_ref *)a)->buf;
  const cua_buffer *y = ((const acc_ref *)b)->buf;
  return x < y ? -1 : x > y;
}

/* The input list being built, for cua__each_input()'s visitor. */
typedef struct dag_ins {
  uint64_t sub;
  size_t *v, n, cap;
} dag_ins;

/* Appends @p d's index if it is an op of this DAG still to run. */
static int add_dag_input(cua__node *d, void *arg) {
  dag_ins *a = arg;
  if (d->sub_id != a->sub || d->state == CUA__NODE_DONE)
    return 0;
  if (cua__grow(&a->v, &a->cap, a->n + 1, sizeof *a->v) != 0)
    return -1;
  a->v[a->n++] = d->dag_idx;
  return 0;
}

int cua__dag_wanted(cua_runtime *rt, const cua__sub *sub) {
  const cua__polinst *p = cua__sub_policy(rt, sub);
  return p != NULL && p->d->submission_begin != NULL;
}

void cua__dag_begin(cua_runtime *rt, cua__sub *sub, cua__node *const *order,
                    size_t n) {
  if (!cua__dag_wanted(rt, sub))
    return;
  cua__polinst *p = cua__sub_policy(rt, sub);
  const cua_policy_descriptor *d = p->d;
  size_t nops = 0, ndev = 0, nacc = 0;
  for (size_t i = 0; i < n; i++) {
    const cua__node *x = order[i];
    if (x->cls == CUA__CLASS_VIRTUAL || x->sub_id != sub->id ||
        x->state == CUA__NODE_DONE)
      continue;
    nops++;
    ndev += x->cls == CUA__CLASS_DEVICE;
    nacc += x->op->nacc;
  }
  if (nops == 0)
    return;

  char *ops = cua__calloc(nops, d->dag_op_size);
  cua__node **nodes = cua__calloc(nops, sizeof *nodes);
  size_t *in_off = cua__calloc(nops + 1, sizeof *in_off);
  size_t *succ_cnt = cua__calloc(nops + 1, sizeof *succ_cnt);
  size_t *acc_buf = cua__calloc(nacc + 1, sizeof *acc_buf);
  unsigned *acc_mode = cua__calloc(nacc + 1, sizeof *acc_mode);
  acc_ref *refs = cua__calloc(nacc + 1, sizeof *refs);
  dag_ins di = {sub->id, NULL, 0, 0};
  size_t *succ = NULL;
  char *bufs = NULL;
  size_t nbufs = 0;
  if (ops == NULL || nodes == NULL || in_off == NULL || succ_cnt == NULL ||
      acc_buf == NULL || acc_mode == NULL || refs == NULL)
    goto out;

  /* Number the ops, then list each one's inputs among them. */
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    cua__node *x = order[i];
    if (x->cls == CUA__CLASS_VIRTUAL || x->sub_id != sub->id ||
        x->state == CUA__NODE_DONE)
      continue;
    x->dag_idx = k;
    nodes[k++] = x;
  }
  for (k = 0; k < nops; k++) {
    in_off[k] = di.n;
    if (cua__each_input(rt, nodes[k], add_dag_input, &di) != 0)
      goto out;
  }
  in_off[nops] = di.n;
  size_t *ins = di.v, nins = di.n;
  /* Successors: the inputs turned around. */
  for (size_t i = 0; i < nins; i++)
    succ_cnt[ins[i] + 1]++;
  for (k = 0; k < nops; k++)
    succ_cnt[k + 1] += succ_cnt[k];
  succ = cua__calloc(nins + 1, sizeof *succ);
  size_t *fill = cua__calloc(nops + 1, sizeof *fill);
  if (succ == NULL || fill == NULL) {
    free(fill);
    goto out;
  }
  for (k = 0; k < nops; k++)
    for (size_t i = in_off[k]; i < in_off[k + 1]; i++)
      succ[succ_cnt[ins[i]] + fill[ins[i]]++] = k;
  free(fill);

  /* Buffers: every access, sorted by buffer, numbered once each. */
  size_t a = 0;
  for (k = 0; k < nops; k++)
    for (size_t j = 0; j < nodes[k]->op->nacc; j++, a++) {
      refs[a].buf = nodes[k]->op->acc[j].buf;
      refs[a].slot = a;
      acc_mode[a] = (unsigned)nodes[k]->op->acc[j].mode;
    }
  if (nacc > 1)
    qsort(refs, nacc, sizeof *refs, cmp_acc);
  bufs = cua__calloc(nacc + 1, d->dag_buffer_size);
  if (bufs == NULL)
    goto out;
  for (a = 0; a < nacc; a++) {
    if (a == 0 || refs[a].buf != refs[a - 1].buf) {
      cua_dag_buffer b;
      memset(&b, 0, sizeof b);
      b.bytes = refs[a].buf->bytes;
      b.device = refs[a].buf->device;
      memcpy(bufs + nbufs * d->dag_buffer_size, &b,
             sizeof b < d->dag_buffer_size ? sizeof b : d->dag_buffer_size);
      nbufs++;
    }
    acc_buf[refs[a].slot] = nbufs - 1;
  }

  a = 0;
  for (k = 0; k < nops; k++) {
    const cua__node *x = nodes[k];
    const cua_op *op = x->op;
    cua_dag_op o;
    memset(&o, 0, sizeof o);
    o.op_id = x->op_id;
    o.kind = x->kind;
    o.name = op->hints.name;
    o.tag = op->hints.tag;
    o.preferred_device = op->hints.device;
    o.priority = op->hints.priority;
    o.cost_ns = op->hints.cost_ns;
    o.bytes = op->hints.bytes;
    o.flops = op->hints.flops;
    o.level = x->level;
    o.host = x->cls == CUA__CLASS_HOST;
    o.inputs = ins + in_off[k];
    o.ninputs = in_off[k + 1] - in_off[k];
    o.successors = succ + succ_cnt[k];
    o.nsuccessors = succ_cnt[k + 1] - succ_cnt[k];
    o.buffers = acc_buf + a;
    o.access = acc_mode + a;
    o.nbuffers = op->nacc;
    cua__op_devices(rt, op, &o.data_device, &o.restrict_device);
    a += op->nacc;
    memcpy(ops + k * d->dag_op_size, &o,
           sizeof o < d->dag_op_size ? sizeof o : d->dag_op_size);
  }

  cua_dag dag;
  memset(&dag, 0, sizeof dag);
  dag.size = sizeof dag;
  dag.submission = sub->id;
  dag.ops = (const cua_dag_op *)(void *)ops;
  dag.nops = nops;
  dag.buffers = (const cua_dag_buffer *)(void *)bufs;
  dag.nbuffers = nbufs;
  d->submission_begin(p->state, &dag);
  /* submission_end() is owed once the device ops are placed. */
  sub->dag_policy = p;
  sub->dag_unplaced = ndev;
  p->refs++;
  if (ndev == 0)
    cua__dag_end(sub);

out:
  free(ops);
  free(nodes);
  free(in_off);
  free(succ_cnt);
  free(acc_buf);
  free(acc_mode);
  free(refs);
  free(di.v);
  free(succ);
  free(bufs);
}

void cua__dag_end(cua__sub *sub) {
  cua__polinst *p = sub->dag_policy;
  if (p == NULL)
    return;
  sub->dag_policy = NULL;
  if (p->state != NULL && p->d->submission_end != NULL)
    p->d->submission_end(p->state, sub->id);
  cua__polinst_release(p);
}

void cua__dag_placed(cua__node *n) {
  cua__sub *sub = n->nwatchers > 0 ? n->watchers[0] : NULL;
  if (sub != NULL && sub->dag_policy != NULL && n->sub_id == sub->id &&
      sub->dag_unplaced > 0 && --sub->dag_unplaced == 0)
    cua__dag_end(sub);
}
