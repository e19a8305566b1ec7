/* node.c — graph nodes: creation, saved tensors, release. */
#include "core/engine/node.h"

#include <stdlib.h>
#include <string.h>

#include "core/engine/autograd.h"
#include "core/engine/tensor_internal.h"

static atomic_uint_fast64_t next_seq_;

bool hl_should_record(hl_tensor *const *inputs, int n) {
  if (!hl_grad_enabled()) return false;
  for (int i = 0; i < n; i++)
    if (inputs[i] && inputs[i]->requires_grad) return true;
  return false;
}

hl_node *hl_node_new(hl_op_id op, hl_backward_fn backward, hl_tensor *const *inputs, int n) {
  if (n > HL_NODE_MAX_INPUTS) return hl_fail("%s: more than %d inputs", hl_op_get(op)->name, HL_NODE_MAX_INPUTS);
  hl_node *node = calloc(1, sizeof *node);
  hl_edge *next = calloc((size_t)(n ? n : 1), sizeof *next);
  hl_meta *meta = calloc((size_t)(n ? n : 1), sizeof *meta);
  if (!node || !next || !meta) {
    free(node);
    free(next);
    free(meta);
    return hl_fail("%s: out of host memory recording the graph", hl_op_get(op)->name);
  }
  atomic_init(&node->refs, 1);
  node->op = hl_op_get(op);
  node->backward = backward;
  node->seq = atomic_fetch_add(&next_seq_, 1);
  node->n_in = n;
  node->next = next;
  node->in_meta = meta;
  for (int i = 0; i < n; i++) {
    hl_tensor *t = inputs[i];
    if (!t) continue;
    meta[i].dtype = t->dtype;
    meta[i].device = t->device;
    meta[i].ndim = t->ndim;
    memcpy(meta[i].shape, t->shape, sizeof t->shape);
    if (!t->requires_grad) continue;
    if (t->grad_fn) next[i].node = hl_node_retain(t->grad_fn);
    else next[i].leaf = hl_retain(t);
  }
  return node;
}

void hl_node_attach(hl_node *node, hl_tensor *out) {
  out->grad_fn = node;
  out->requires_grad = true;
}

static int save(hl_node *node, hl_tensor *t, bool is_output) {
  if (node->n_saved == HL_NODE_MAX_SAVED) {
    hl_fail("%s: more than %d saved tensors", node->op->name, HL_NODE_MAX_SAVED);
    return -1;
  }
  hl_tensor *kept = is_output ? hl_detach(t) : hl_retain(t);
  if (!kept) return -1;
  node->saved[node->n_saved] = (hl_saved){kept, is_output, atomic_load(&t->storage->version)};
  return node->n_saved++;
}

int hl_node_save(hl_node *node, hl_tensor *t) { return save(node, t, false); }
int hl_node_save_output(hl_node *node, hl_tensor *out) { return save(node, out, true); }

hl_tensor *hl_node_saved(hl_node *node, int slot) {
  if (node->released)
    return hl_fail("backward: the saved tensors of %s were freed by an earlier backward; pass retain_graph=true "
                   "to the first backward (or grad) to go through this graph again",
                   node->op->name);
  if (slot < 0 || slot >= node->n_saved) return hl_fail("backward of %s: no saved tensor %d", node->op->name, slot);
  hl_saved *s = &node->saved[slot];
  unsigned now = atomic_load(&s->tensor->storage->version);
  if (now != s->version)
    return hl_fail("backward of %s: %s it saved was modified in place since (version %u, saved at %u)",
                   node->op->name, hl_desc(s->tensor), now, s->version);
  if (s->is_output && hl_grad_enabled()) {
    /* re-attach the output to its node so that create_graph differentiates through it */
    hl_tensor *t = hl_detach(s->tensor);
    if (!t) return NULL;
    hl_node_attach(hl_node_retain(node), t);
    return t;
  }
  return hl_retain(s->tensor);
}

bool hl_node_wants(const hl_node *node, int i) {
  return i < node->n_in && i < 64 && (node->wanted >> i & 1u);
}

hl_node *hl_node_retain(hl_node *node) {
  if (node) atomic_fetch_add(&node->refs, 1);
  return node;
}

void hl_node_release_saved(hl_node *node) {
  if (node->n_saved == 0) return; /* nothing to free: it can run again */
  for (int i = 0; i < node->n_saved; i++) {
    hl_release(node->saved[i].tensor);
    node->saved[i].tensor = NULL;
  }
  node->n_saved = 0;
  node->released = true;
}

/* Freeing is iterative: a long chain of nodes (a loss accumulated over
 * thousands of steps) would otherwise recurse once per node and overflow
 * the stack. Nodes that reach zero queue up and the outermost call frees
 * them one by one. */
static _Thread_local hl_node **doomed_;
static _Thread_local int doomed_n_, doomed_cap_;
static _Thread_local bool draining_;

static void destroy(hl_node *node) {
  for (int i = 0; i < node->n_in; i++) {
    hl_node_release(node->next[i].node);
    hl_release(node->next[i].leaf);
  }
  for (int i = 0; i < node->n_saved; i++) hl_release(node->saved[i].tensor);
  if (node->ctx_free) node->ctx_free(node->ctx);
  free(node->next);
  free(node->in_meta);
  free(node);
}

void hl_node_release(hl_node *node) {
  if (!node || atomic_fetch_sub(&node->refs, 1) != 1) return;
  if (doomed_n_ == doomed_cap_) {
    int cap = doomed_cap_ ? doomed_cap_ * 2 : 64;
    hl_node **d = realloc(doomed_, sizeof *d * (size_t)cap);
    if (!d) {
      destroy(node); /* no room to queue: recurse instead */
      return;
    }
    doomed_ = d;
    doomed_cap_ = cap;
  }
  doomed_[doomed_n_++] = node;
  if (draining_) return;
  draining_ = true;
  while (doomed_n_ > 0) destroy(doomed_[--doomed_n_]);
  draining_ = false;
  free(doomed_);
  doomed_ = NULL;
  doomed_cap_ = 0;
}

const char *hl_node_name(const hl_node *node) { return node ? node->op->name : "(none)"; }
