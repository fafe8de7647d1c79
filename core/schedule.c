/*
 * core/schedule.c: a graph's schedule, recorded op by op as capture.c
 * places the DAG (graphs.h): each op's chain (one per stream the policy
 * used), the waits between chains that are not implied, and which ops
 * need an edge to their chain's previous op.
 *
 * Owns: the recorder (cua__recorder) and the schedule it writes into the
 * graph (ops, chains, waits, events' numbering). Runs under rt->lock, on
 * the thread that places; the ops it records are read by a fed capture
 * only once handed over (capture.c).
 */
#include "config.h"
#include "graphs.h"

#include <stdlib.h>
#include <string.h>

/* Past this many clock cells (ops x chains), waits are pruned per pair of
 * chains only. */
#define CLOCK_CELLS ((size_t)1 << 24)

void cua__rec_free(cua__recorder *r) {
  free(r->chain_of);
  free(r->pos);
  free(r->gidx);
  free(r->chain_len);
  free(r->chain_last);
  free(r->covered);
  free(r->snap);
  free(r->cand);
  memset(r, 0, sizeof *r);
}

/* Clocks of stride @p capc, the old ones copied (a new chain has no op
 * yet: -1 everywhere for it). The ops' clocks are kept while they fit in
 * CLOCK_CELLS; once dropped they stay dropped (the ops before have none). */
static int clocks_resize(cua__recorder *r, size_t n, size_t capc) {
  int keep = (r->capc == 0 || r->snap != NULL) && n <= CLOCK_CELLS / capc;
  long *cov = cua__malloc(capc * capc * sizeof *cov);
  long *snap = keep ? cua__malloc(n * capc * sizeof *snap) : NULL;
  if (cov == NULL || (keep && snap == NULL)) {
    free(cov);
    free(snap);
    return CUA_ERR_NOMEM;
  }
  for (size_t i = 0; i < capc * capc; i++)
    cov[i] = -1;
  for (size_t i = 0; snap != NULL && i < n * capc; i++)
    snap[i] = -1;
  for (size_t a = 0; a < r->capc; a++)
    memcpy(&cov[a * capc], &r->covered[a * r->capc],
           r->capc * sizeof *r->covered);
  for (size_t i = 0; snap != NULL && r->snap != NULL && i < n; i++)
    memcpy(&snap[i * capc], &r->snap[i * r->capc], r->capc * sizeof *snap);
  free(r->covered);
  free(r->snap);
  r->covered = cov;
  r->snap = snap;
  r->capc = capc;
  return 0;
}

int cua__rec_init(cua__recorder *r, cua_graph *g, size_t n, size_t maxp,
                  size_t npreds) {
  memset(r, 0, sizeof *r);
  if (maxp == 0)
    maxp = 1;
  r->chain_of = cua__calloc(n + 1, sizeof *r->chain_of);
  r->pos = cua__calloc(n + 1, sizeof *r->pos);
  r->gidx = cua__calloc(n + 1, sizeof *r->gidx);
  r->chain_len = cua__calloc(n + 1, sizeof *r->chain_len);
  r->chain_last = cua__calloc(n + 1, sizeof *r->chain_last);
  r->cand = cua__malloc(maxp * sizeof *r->cand);
  g->ops = cua__calloc(n + 1, sizeof *g->ops);
  g->chains = cua__calloc(n + 1, sizeof *g->chains);
  g->wait_store = cua__calloc(npreds + 1, sizeof *g->wait_store);
  r->n = n;
  if (r->chain_of == NULL || r->pos == NULL || r->gidx == NULL ||
      r->chain_len == NULL || r->chain_last == NULL || r->cand == NULL ||
      g->ops == NULL || g->chains == NULL || g->wait_store == NULL ||
      clocks_resize(r, n, n < 8 ? n + 1 : 8) != 0)
    return CUA_ERR_NOMEM;
  g->nevents = 1; /* the fork */
  return 0;
}

int cua__rec_op(cua__recorder *r, cua_graph *g, size_t i, cua_placement pl,
                cua_op *op, const size_t *preds, size_t np) {
  size_t ch = 0;
  while (ch < g->nchains && (g->chains[ch].pl.device != pl.device ||
                             g->chains[ch].pl.stream != pl.stream))
    ch++;
  if (ch == g->nchains) {
    if (ch == r->capc && clocks_resize(r, r->n, 2 * r->capc) != 0)
      return CUA_ERR_NOMEM;
    g->chains[ch].pl = pl;
    g->chains[ch].end_event = -1;
    g->nchains++;
  }
  size_t nc = r->capc, used = g->nchains, k = g->nops;
  size_t *pos = r->pos, *cand = r->cand;
  long *snap = r->snap, *clk = &r->covered[ch * nc];
  r->chain_of[i] = ch;
  r->gidx[i] = k;
  pos[i] = r->chain_len[ch]++;
  cua__gop *o = &g->ops[k];
  o->key = cua_op_retain(op);
  o->chain = ch;
  o->event = -1;
  o->waits = g->wait_store + g->nwaits;
  /* The producers not yet ordered before: the last one per chain. */
  size_t ncand = 0;
  for (size_t e = 0; e < np; e++) {
    size_t p = preds[e], pc = r->chain_of[p], j = 0;
    if (pc == ch || clk[pc] >= (long)pos[p])
      continue;
    while (j < ncand && r->chain_of[cand[j]] != pc)
      j++;
    if (j == ncand)
      cand[ncand++] = p;
    else if (pos[cand[j]] < pos[p])
      cand[j] = p;
  }
  /* Those another one orders after already. */
  for (size_t j = 0; snap != NULL && j < ncand;) {
    size_t p = cand[j], pc = r->chain_of[p], m = 0;
    while (m < ncand && (m == j || snap[cand[m] * nc + pc] < (long)pos[p]))
      m++;
    if (m < ncand)
      cand[j] = cand[--ncand];
    else
      j++;
  }
  /* The chain's previous op: an edge of its own in a graph with explicit
   * dependencies unless a wait orders this op after it (the chain's clock
   * is that op's, so no wait comes before it). */
  o->prev = pos[i] > 0 ? (long)r->chain_last[ch] : -1;
  for (size_t j = 0; snap != NULL && o->prev >= 0 && j < ncand; j++)
    if (snap[cand[j] * nc + ch] >= (long)pos[i] - 1)
      o->prev = -1;
  r->chain_last[ch] = k;
  g->nedges += ncand + (o->prev >= 0);
  for (size_t j = 0; j < ncand; j++) {
    size_t p = cand[j];
    cua__gop *po = &g->ops[r->gidx[p]];
    if (po->event < 0)
      po->event = (long)g->nevents++;
    o->waits[o->nwaits++] = r->gidx[p];
    g->nwaits++;
    if (snap != NULL) {
      for (size_t x = 0; x < used; x++)
        if (snap[p * nc + x] > clk[x])
          clk[x] = snap[p * nc + x];
    } else {
      clk[r->chain_of[p]] = (long)pos[p];
    }
  }
  clk[ch] = (long)pos[i];
  if (snap != NULL)
    memcpy(&snap[i * nc], clk, used * sizeof *clk);
  g->nops = k + 1;
  return 0;
}

void cua__rec_end(cua_graph *g) {
  for (size_t ch = 0; ch < g->nchains; ch++)
    g->chains[ch].end_event = (long)g->nevents++;
  g->anchor = g->chains[0].pl;
}
