/*
 * core/place.c: placement: asking policies where each op runs.
 *
 * For each device node made ready in a round, the submission's policy (or
 * the runtime's, or the explicit stream of cua_submit_on()) picks a device
 * and stream, then that device's own [device.N] policy may pick the
 * stream; every answer is validated (a device or stream that does not
 * exist, or a device the op's buffers cannot be reached from, fails the op
 * with a message naming the policy). The node gets its stream's next
 * sequence number and goes to the round's launch queue.
 *
 * Runs under rt->lock, which is what serialises calls into a policy
 * instance (policies need no locks of their own).
 */
#include "config.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- placement */

static int buffers_device(const cua_op *op) {
  int dev = -1;
  for (size_t i = 0; i < op->nacc; i++) {
    int d = op->acc[i].buf->device;
    if (dev == -1)
      dev = d;
    else if (dev != d)
      return -2;
  }
  return dev;
}

/* The policy's view of @p n (its inputs' placements in @p inputs; NULL:
 * none, as completed() gets). Nodes do not keep it: it is made again for
 * completed() from the op, which a node keeps until it is done. */
void cua__op_info(cua_runtime *rt, const cua__node *n, cua_op_info *in,
                  cua_placement *inputs) {
  const cua_op *op = n->op;
  memset(in, 0, sizeof *in);
  in->size = sizeof *in;
  in->kind = op->kind;
  in->name = op->hints.name;
  in->tag = op->hints.tag;
  in->preferred_device = op->hints.device;
  in->cost_ns = op->hints.cost_ns;
  in->bytes = op->hints.bytes;
  in->flops = op->hints.flops;
  in->priority = op->hints.priority;
  in->then_of.device = in->then_of.stream = -1;
  if (n->then_src != NULL && n->then_src->pl.device >= 0)
    in->then_of = n->then_src->pl;
  int dd = buffers_device(op);
  in->data_device = dd >= 0 ? dd : -1;
  in->restrict_device = -1;
  /* Memory a device cannot reach pins the op to where its data lives
   * (device-to-device copies excepted: the backend routes them). */
  if (!rt->all_peers && op->kind != CUA_OP_MEMCPY_D2D && op->nacc > 0)
    in->restrict_device = op->acc[0].buf->device;
  if (op->kind == CUA_OP_ALLOC || op->kind == CUA_OP_FREE)
    in->restrict_device = op->acc[0].buf->device;
  if (op->kind == CUA_OP_WAIT_NATIVE)
    in->restrict_device = op->native_device;
  in->level = n->level;
  in->submission = n->sub_id;
  in->op_id = n->op_id;
  in->ninputs = 0;
  in->inputs = inputs;
  for (size_t i = 0; inputs != NULL && i < n->ndeps && in->ninputs < 8; i++)
    if (n->deps[i].node->cls == CUA__CLASS_DEVICE &&
        n->deps[i].node->pl.device >= 0)
      inputs[in->ninputs++] = n->deps[i].node->pl;
}

static int valid_placement(cua_runtime *rt, const cua_op_info *in,
                           cua_placement pl) {
  if (pl.device < 0 || pl.device >= rt->ndev)
    return 0;
  if (pl.stream < 0 || pl.stream >= rt->devs[pl.device].nstreams)
    return 0;
  if (in->restrict_device >= 0 && pl.device != in->restrict_device)
    return 0;
  return 1;
}

static int policy_place(cua_runtime *rt, cua__polinst *p, const cua_op_info *in,
                        cua_placement *pl, char *msg, size_t len) {
  p->log[0] = '\0';
  int rc = p->d->place(p->state, in, pl);
  if (rc != 0) {
    /* A code outside the list is named as the number it is. */
    char code[160];
    if (rc > 0 || strcmp(cua_strerror(rc), cua_strerror(-9999)) == 0)
      snprintf(code, sizeof code,
               "returned %d, which is not a cuasync error code (place() "
               "returns 0 or a negative CUA_ERR_*)",
               rc);
    else
      snprintf(code, sizeof code, "%s", cua_err_name(rc));
    snprintf(msg, len, "policy '%s' failed to place op '%s': %s%s%s", p->name,
             in->name ? in->name : "(unnamed)", code, p->log[0] ? ": " : "",
             p->log);
    return CUA_ERR_POLICY;
  }
  if (!valid_placement(rt, in, *pl)) {
    int nst = pl->device >= 0 && pl->device < rt->ndev
                  ? rt->devs[pl->device].nstreams
                  : 0;
    snprintf(msg, len,
             "policy '%s' placed op '%s' on device %d stream %d, which does "
             "not exist (the runtime has %d devices; that device has %d "
             "streams%s)",
             p->name, in->name ? in->name : "(unnamed)", pl->device, pl->stream,
             rt->ndev, nst,
             in->restrict_device >= 0 ? "; the op must run on device " : "");
    if (in->restrict_device >= 0 && pl->device >= 0 && pl->device < rt->ndev &&
        pl->stream >= 0 && pl->stream < nst)
      snprintf(msg, len,
               "policy '%s' placed op '%s' on device %d, but it must run on "
               "device %d (where its buffers live)",
               p->name, in->name ? in->name : "(unnamed)", pl->device,
               in->restrict_device);
    return CUA_ERR_BAD_PLACEMENT;
  }
  return 0;
}

/* Asks the submission's (or runtime's) policy, then the device's own
 * policy if that device has one. */
static int place_node(cua_runtime *rt, cua__node *n, cua__sub *sub,
                      cua_op_info *info, char *msg, size_t len) {
  if (sub != NULL && sub->on_stream) {
    cua_placement pl = sub->placement;
    if (!valid_placement(rt, info, pl)) {
      snprintf(msg, len,
               "explicit placement device %d stream %d is not valid for op "
               "'%s'",
               pl.device, pl.stream, cua__node_name(n));
      return CUA_ERR_BAD_PLACEMENT;
    }
    n->pl = pl;
    n->placed_by = NULL;
    return 0;
  }
  cua__polinst *p = sub && sub->policy ? sub->policy : rt->policy;
  cua_placement pl = {-1, -1};
  int rc = policy_place(rt, p, info, &pl, msg, len);
  if (rc != 0 && rt->cfg->on_policy_error == CUA__ON_POLICY_ERROR_FALLBACK) {
    if (rt->fallback == NULL &&
        cua__polinst_open(rt, "single-stream", &rt->fallback) != 0)
      return rc;
    if (rt->policy_error == NULL) {
      rt->policy_error = cua__strdup(msg);
      fprintf(stderr,
              "cuasync: falling back to single-stream (on_policy_error = "
              "fallback): %s\n",
              msg);
    }
    p = rt->fallback;
    rc = policy_place(rt, p, info, &pl, msg, len);
  }
  if (rc != 0)
    return rc;
  cua__polinst *dp = rt->devs[pl.device].policy;
  if (dp != NULL && dp != p) {
    cua_op_info in2 = *info;
    in2.restrict_device = pl.device;
    rc = policy_place(rt, dp, &in2, &pl, msg, len);
    if (rc != 0)
      return rc;
    p = dp;
  }
  n->pl = pl;
  n->placed_by = p;
  p->refs++;
  return 0;
}

/* Places one device node and gives it its stream's next number. */
void cua__place_one(cua_runtime *rt, cua__node *n, cua__round *r) {
  char msg[CUA__ERRLEN];
  cua__sub *sub = n->nwatchers > 0 ? n->watchers[0] : NULL;
  cua_placement inputs[8];
  cua_op_info info;
  cua__op_info(rt, n, &info, inputs);
  int rc = place_node(rt, n, sub, &info, msg, sizeof msg);
  if (rc == 0) {
    cua__stream *s = rt->devs[n->pl.device].streams[n->pl.stream];
    n->stream = s;
    n->seq = ++s->seq;
    s->load.ops_in_flight++;
    s->load.ops_total++;
    s->load.est_busy_ns += n->op->hints.cost_ns;
    if (n->placed_by && n->placed_by->d->submitted)
      n->placed_by->d->submitted(n->placed_by->state, &info, n->pl);
    n->state = CUA__NODE_ENQUEUED;
    cua__q_push(&r->launch, n);
    cua__resolve(rt, n, 0, r);
    return;
  }
  cua__fail_node(rt, n, rc, msg);
  cua__settle_push(r, n);
}
