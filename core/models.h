/*
 * core/models.h: the performance models' interface inside the core
 * (core/models.c). Everything here runs under rt->lock, but for open and
 * close, which run on the thread creating or destroying the runtime.
 */
#ifndef CUA_CORE_MODELS_H
#define CUA_CORE_MODELS_H

#include <cuasync/policy.h>

#include <stdint.h>

typedef struct cua__models cua__models;
struct cua__node;

/* Reads the model file the configuration names ([runtime] models) into
 * rt->models (NULL with models = off). A missing, foreign or corrupt file
 * is a warning, never a failure; 0 or CUA_ERR_NOMEM with its message. */
int cua__models_open(cua_runtime *rt);
/* Saves what this runtime measured (merged into the file as it is now)
 * and frees the models. */
void cua__models_close(cua_runtime *rt);
/* Adds the measured duration of @p n, a completed node, to the models. */
void cua__models_measured(cua_runtime *rt, const struct cua__node *n);
/* cua_policy_host::expected_duration and ::expected_transfer. */
int cua__models_expect(cua_runtime *rt, const cua_op_info *op, int device,
                       cua_estimate *out);
int cua__models_transfer(cua_runtime *rt, int from, int to, uint64_t bytes,
                         cua_estimate *out);
/* What @p n, just placed, is expected to take (its class and size
 * bucket's mean, else its cost hint), for its stream's load and expected
 * end; keeps its class in n->mfam for the later calls. */
uint64_t cua__models_attach(cua_runtime *rt, struct cua__node *n);
/* Whether the launch of @p n, placed, should be followed by a mark of its
 * own so that its duration is measured alone: on a backend that does not
 * time ops itself, while its class and size have fewer than
 * CUA__MODELS_SAMPLE samples, for CUA__MODELS_SAMPLE ops of it per runtime
 * at most (counted here). */
#define CUA__MODELS_SAMPLE 16
int cua__models_sampling(const cua_runtime *rt, struct cua__node *n);

#endif /* CUA_CORE_MODELS_H */
