/* autograd.c — the backward engine.
 *
 * Order: every node gets a sequence number when it is created, after the
 * nodes of its inputs, so sequence order is a topological order of any
 * graph. The engine collects the nodes reachable from the roots, sorts
 * them by decreasing sequence number and runs each once, after all of its
 * consumers have added their contributions to its gradient. No dependency
 * counting, and the order is deterministic.
 *
 * hl_autograd_grad additionally prunes: a node runs only if some input
 * asked for is reachable from it; leaves' .grad are left alone.
 */
#include "core/engine/autograd.h"

#include <stdlib.h>
#include <string.h>

#include "core/engine/autocast.h"
#include "core/base/device.h"
#include "core/engine/dispatch.h"
#include "core/engine/node.h"
#include "core/engine/op_profile.h"
#include "core/engine/ops.h"
#include "core/engine/tensor_internal.h"

static _Thread_local bool grad_off_;

bool hl_grad_enabled(void) { return !grad_off_; }

bool hl_set_grad_enabled(bool on) {
  bool previous = !grad_off_;
  grad_off_ = !on;
  return previous;
}

/* ---------------------------------------------------------------- graph -- */

typedef struct {
  hl_node **nodes; /* sorted by decreasing seq */
  int n;
  hl_tensor **grad;  /* accumulated gradient of each node's output */
  bool *run;         /* grad mode: the node has work to do */
  int *capture;      /* grad mode: index of the input this node's output is, or -1 */
} graph;

static int by_seq_desc(const void *a, const void *b) {
  uint64_t x = (*(hl_node *const *)a)->seq, y = (*(hl_node *const *)b)->seq;
  return x < y ? 1 : x > y ? -1 : 0;
}

static int find(const graph *g, const hl_node *node) {
  int lo = 0, hi = g->n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (g->nodes[mid] == node) return mid;
    if (g->nodes[mid]->seq > node->seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* Collects the nodes reachable from the roots (each once). */
static bool collect(graph *g, hl_tensor *const *roots, int n_roots) {
  int cap = 64, top = 0, stack_cap = n_roots + 64;
  g->nodes = malloc(sizeof *g->nodes * (size_t)cap);
  hl_node **stack = malloc(sizeof *stack * (size_t)stack_cap);
  /* visited: open-addressing set of node pointers, grown at half load */
  size_t slots = 256, used = 0;
  hl_node **set = calloc(slots, sizeof *set);
  bool ok = g->nodes && stack && set;
  for (int i = 0; ok && i < n_roots; i++)
    if (roots[i]->grad_fn) stack[top++] = roots[i]->grad_fn;
  while (ok && top > 0) {
    hl_node *node = stack[--top];
    size_t h = ((uintptr_t)node >> 4) * 0x9E3779B97F4A7C15ull;
    size_t k = h & (slots - 1);
    while (set[k] && set[k] != node) k = (k + 1) & (slots - 1);
    if (set[k]) continue;
    set[k] = node;
    if (++used * 2 > slots) {
      size_t nslots = slots * 2;
      hl_node **nset = calloc(nslots, sizeof *nset);
      if (!nset) {
        ok = false;
        break;
      }
      for (size_t j = 0; j < slots; j++) {
        if (!set[j]) continue;
        size_t m = (((uintptr_t)set[j] >> 4) * 0x9E3779B97F4A7C15ull) & (nslots - 1);
        while (nset[m]) m = (m + 1) & (nslots - 1);
        nset[m] = set[j];
      }
      free(set);
      set = nset;
      slots = nslots;
    }
    if (g->n == cap) {
      hl_node **more = realloc(g->nodes, sizeof *more * (size_t)(cap *= 2));
      if (!more) {
        ok = false;
        break;
      }
      g->nodes = more;
    }
    g->nodes[g->n++] = node;
    for (int i = 0; i < node->n_in; i++) {
      if (!node->next[i].node) continue;
      if (top == stack_cap) {
        hl_node **more = realloc(stack, sizeof *more * (size_t)(stack_cap *= 2));
        if (!more) {
          ok = false;
          break;
        }
        stack = more;
      }
      stack[top++] = node->next[i].node;
    }
  }
  free(stack);
  free(set);
  if (ok) {
    qsort(g->nodes, (size_t)g->n, sizeof *g->nodes, by_seq_desc);
    g->grad = calloc((size_t)(g->n ? g->n : 1), sizeof *g->grad);
    g->run = calloc((size_t)(g->n ? g->n : 1), sizeof *g->run);
    g->capture = malloc(sizeof *g->capture * (size_t)(g->n ? g->n : 1));
    ok = g->grad && g->run && g->capture;
    for (int i = 0; ok && i < g->n; i++) g->capture[i] = -1;
  }
  return ok ? true : hl_fail_bool("backward: out of host memory walking the graph");
}

static void graph_free(graph *g) {
  if (g->grad)
    for (int i = 0; i < g->n; i++) hl_release(g->grad[i]);
  free(g->nodes);
  free(g->grad);
  free(g->run);
  free(g->capture);
}

/* --------------------------------------------------------- accumulation -- */

static bool exclusive(const hl_tensor *t) { return atomic_load(&t->refs) == 1 && atomic_load(&t->storage->refs) == 1; }

/* In-place t += g through the kernels (t exclusively ours, same shape). */
static void add_into(hl_tensor *t, const hl_tensor *g) {
  hl_op_span span;
  const bool timed = hl_op_span_begin(&span); /* a kernel call, not an op: the profile names it itself */
  int64_t size4[HL_MAX_DIMS];
  hl_size4(t->ndim, t->shape, size4);
  hl_kview o = hl_kview_of(t, t->ndim, t->shape), b = hl_kview_of(g, t->ndim, t->shape);
  hl_backend_for(t->device)->tensor->binary(HL_BIN_ADD, &o, &o, &b, size4);
  hl_tensor_mark_modified(t);
  if (timed) hl_op_span_end(&span, "autograd.accumulate", 2 * hl_tensor_nbytes(t) + hl_tensor_nbytes(g));
}

/* *slot += g, taking g's reference. Without create_graph a gradient we
 * own alone is added into in place; otherwise (or with create_graph, where
 * the sum must be recorded) a new tensor. */
static bool accumulate(hl_tensor **slot, hl_tensor *g, bool create_graph) {
  if (!*slot) {
    *slot = g;
    return true;
  }
  if (!create_graph && exclusive(*slot) && hl_is_contiguous(*slot) && !(*slot)->grad_fn &&
      hl_backend_for((*slot)->device)->tensor) {
    add_into(*slot, g);
    hl_release(g);
    return true;
  }
  hl_tensor *sum = hl_add(*slot, g);
  hl_release(g);
  if (!sum) return false;
  hl_release(*slot);
  *slot = sum;
  return true;
}

static bool meta_matches(const hl_meta *m, const hl_tensor *g) {
  if (m->dtype != g->dtype || m->device != g->device || m->ndim != g->ndim) return false;
  for (int i = 0; i < m->ndim; i++)
    if (m->shape[i] != g->shape[i]) return false;
  return true;
}

/* total += g placed at [start, start + g's length) along dim of total: the
 * backward of a slice added straight into its input's accumulated gradient.
 * Through slice_backward, each of the q, k and v slices of a fused
 * projection wrote a zero tensor of the whole projection and copied its
 * part in, and the three were then summed whole: three full-size writes and
 * two full-size sums where one slice-sized sum each does. Only where the
 * plain path would add in place (total ours alone, no create_graph); the
 * values are the same, since outside the slice the plain path adds +0 (the
 * one difference: a -0 there becomes +0 in the plain path, not here). */
static bool accumulate_slice(hl_tensor *total, hl_tensor *g, const hl_node *node) {
  const int dim = node->params.slice.dim;
  const int64_t start = node->params.slice.start;
  if (!exclusive(total) || !hl_is_contiguous(total) || total->grad_fn || total->dtype != g->dtype ||
      total->device != g->device || total->ndim != g->ndim || !hl_backend_for(total->device)->tensor ||
      !meta_matches(&node->in_meta[0], total))
    return false;
  hl_op_span span;
  const bool timed = hl_op_span_begin(&span);
  int64_t size4[HL_MAX_DIMS];
  hl_size4(g->ndim, g->shape, size4);
  hl_kview src = hl_kview_of(g, g->ndim, g->shape), dst = hl_kview_of(total, total->ndim, total->shape);
  /* the slice of total: offset along dim, total's strides over g's shape */
  dst.data = (char *)dst.data + start * total->stride[dim] * (int64_t)hl_dtype_size(total->dtype);
  for (int k = 0; k < HL_MAX_DIMS; k++) {
    const int od = k - (HL_MAX_DIMS - total->ndim);
    dst.stride[k] = od >= 0 && g->shape[od] != 1 ? total->stride[od] : 0;
  }
  hl_backend_for(total->device)->tensor->binary(HL_BIN_ADD, &dst, &dst, &src, size4);
  hl_tensor_mark_modified(total);
  if (timed) hl_op_span_end(&span, "autograd.accumulate_slice", 3 * hl_tensor_nbytes(g));
  return true;
}

/* A private contiguous copy without history. */
static hl_tensor *clone_detached(const hl_tensor *g) {
  hl_op_span span;
  const bool timed = hl_op_span_begin(&span);
  hl_tensor *c = hl_tensor_new("backward", g->ndim, g->shape, g->dtype, g->device);
  const struct hl_tensor_kernels *k = c ? hl_kernels_for(g->device, "backward (gradient copy)") : NULL;
  if (k) {
    int64_t size4[HL_MAX_DIMS];
    hl_size4(g->ndim, g->shape, size4);
    hl_kview d = hl_kview_of(c, c->ndim, c->shape), s = hl_kview_of(g, g->ndim, g->shape);
    k->copy(&d, &s, size4);
  } else {
    hl_release(c);
    c = NULL;
  }
  if (timed) hl_op_span_end(&span, "autograd.copy_grad", c ? 2 * hl_tensor_nbytes(g) : 0);
  return c;
}

/* leaf.grad += g (backward mode), taking g's reference. */
static bool accumulate_leaf(hl_tensor *leaf, hl_tensor *g, bool create_graph) {
  if (!leaf->grad) {
    if (create_graph || (exclusive(g) && hl_is_contiguous(g) && !g->grad_fn)) {
      leaf->grad = g; /* steal: nobody else sees this tensor */
      return true;
    }
    leaf->grad = clone_detached(g);
    hl_release(g);
    return leaf->grad != NULL;
  }
  if (!create_graph && exclusive(leaf->grad) && !leaf->grad->grad_fn && hl_is_contiguous(leaf->grad) &&
      hl_backend_for(leaf->device)->tensor) {
    add_into(leaf->grad, g); /* in place, as PyTorch does: optimizers hold no stale copy */
    hl_release(g);
    return true;
  }
  hl_tensor *sum = hl_add(leaf->grad, g);
  hl_release(g);
  if (!sum) return false;
  hl_release(leaf->grad);
  leaf->grad = sum;
  return true;
}

/* --------------------------------------------------------------- engine -- */

typedef struct {
  hl_tensor *const *inputs; /* NULL: backward mode (accumulate into leaves) */
  int n_inputs;
  hl_tensor **results;
  bool retain_graph, create_graph;
  hl_grad_ready_fn ready; /* backward mode: called with each leaf once its .grad is final */
  void *ready_user;
} run_opts;

/* ------------------------------------------------------ gradient ready -- */

/* For the ready hook: how many edges of the graph's nodes still lead to
 * each leaf. The nodes run in one fixed order, so a leaf's count reaches 0
 * right after the last node feeding it has routed its gradient. An
 * open-addressing table of leaf pointers, sized once (at most one slot per
 * edge). */
typedef struct {
  hl_tensor **leaf;
  int *pending;
  size_t slots;
} leaf_counts;

static size_t leaf_slot(const leaf_counts *c, const hl_tensor *leaf) {
  size_t k = (((uintptr_t)leaf >> 4) * 0x9E3779B97F4A7C15ull) & (c->slots - 1);
  while (c->leaf[k] && c->leaf[k] != leaf) k = (k + 1) & (c->slots - 1);
  return k;
}

static bool leaf_counts_build(leaf_counts *c, const graph *g) {
  size_t edges = 0;
  for (int i = 0; i < g->n; i++) edges += (size_t)g->nodes[i]->n_in;
  c->slots = 16;
  while (c->slots < 2 * edges) c->slots *= 2;
  c->leaf = calloc(c->slots, sizeof *c->leaf);
  c->pending = calloc(c->slots, sizeof *c->pending);
  if (!c->leaf || !c->pending) return hl_fail_bool("backward: out of host memory for the gradient-ready hook");
  for (int i = 0; i < g->n; i++)
    for (int e = 0; e < g->nodes[i]->n_in; e++) {
      hl_tensor *leaf = g->nodes[i]->next[e].leaf;
      if (!leaf) continue;
      const size_t k = leaf_slot(c, leaf);
      c->leaf[k] = leaf;
      c->pending[k]++;
    }
  return true;
}

static void leaf_counts_free(leaf_counts *c) {
  free(c->leaf);
  free(c->pending);
}

/* Node i has run (or had nothing to do): its leaves have one feeder less. */
static void leaves_fed(leaf_counts *c, const graph *g, int i, const run_opts *o) {
  const hl_node *node = g->nodes[i];
  for (int e = 0; e < node->n_in; e++) {
    hl_tensor *leaf = node->next[e].leaf;
    if (!leaf) continue;
    const size_t k = leaf_slot(c, leaf);
    if (--c->pending[k] == 0 && leaf->grad) o->ready(leaf, o->ready_user);
  }
}

static int input_index(const run_opts *o, const hl_tensor *t) {
  for (int j = 0; j < o->n_inputs; j++)
    if (o->inputs[j] == t) return j;
  return -1;
}

/* grad mode: which nodes lead to an asked-for input. Increasing seq is
 * children first. */
static void mark_needed(graph *g, const run_opts *o) {
  for (int j = 0; j < o->n_inputs; j++) {
    if (!o->inputs[j]->grad_fn) continue;
    int k = find(g, o->inputs[j]->grad_fn);
    if (k >= 0) g->capture[k] = j;
  }
  for (int i = g->n - 1; i >= 0; i--) {
    hl_node *node = g->nodes[i];
    bool run = false;
    for (int e = 0; e < node->n_in && !run; e++) {
      if (node->next[e].leaf) run = input_index(o, node->next[e].leaf) >= 0;
      else if (node->next[e].node) {
        int k = find(g, node->next[e].node);
        run = k >= 0 && (g->run[k] || g->capture[k] >= 0);
      }
    }
    g->run[i] = run;
  }
}

/* Which of node's inputs should get a gradient. */
static uint64_t wanted_mask(const graph *g, const run_opts *o, const hl_node *node) {
  uint64_t mask = 0;
  for (int e = 0; e < node->n_in && e < 64; e++) {
    bool want;
    if (node->next[e].leaf) want = !o->inputs || input_index(o, node->next[e].leaf) >= 0;
    else if (node->next[e].node) {
      int k = o->inputs ? find(g, node->next[e].node) : 0;
      want = !o->inputs || (k >= 0 && (g->run[k] || g->capture[k] >= 0));
    } else want = false;
    if (want) mask |= 1ull << e;
  }
  return mask;
}

static bool route(graph *g, const run_opts *o, hl_node *node, hl_tensor **gin) {
  for (int e = 0; e < node->n_in; e++) {
    hl_tensor *gi = gin[e];
    gin[e] = NULL;
    if (!gi) continue;
    if (!hl_node_wants(node, e)) {
      hl_release(gi);
      continue;
    }
    /* a user's backward (custom op) may return another float dtype: convert
     * it, as PyTorch's engine does; built-in ops must match exactly */
    if (node->op->id == HL_OP_CUSTOM && gi->dtype != node->in_meta[e].dtype && hl_dtype_is_float(gi->dtype) &&
        hl_dtype_is_float(node->in_meta[e].dtype)) {
      hl_tensor *conv = hl_to_dtype(gi, node->in_meta[e].dtype);
      hl_release(gi);
      if (!(gi = conv)) {
        for (int r = e + 1; r < node->n_in; r++) hl_release(gin[r]), gin[r] = NULL;
        return false;
      }
    }
    if (!meta_matches(&node->in_meta[e], gi)) {
      hl_meta *m = &node->in_meta[e];
      char want[96];
      snprintf(want, sizeof want, "%s%s", hl_dtype_name(m->dtype), hl_shape_desc(hl_shape_of(m->ndim, m->shape)));
      hl_fail("backward of %s: gradient %s for input %d, expected %s (internal error)", node->op->name, hl_desc(gi), e,
              want);
      hl_release(gi);
      for (int r = e + 1; r < node->n_in; r++) hl_release(gin[r]), gin[r] = NULL;
      return false;
    }
    bool ok;
    if (node->next[e].leaf) {
      hl_tensor *leaf = node->next[e].leaf;
      if (o->inputs) {
        int j = input_index(o, leaf);
        ok = accumulate(&o->results[j], gi, true);
        /* the same leaf may be asked for twice */
        for (int j2 = j + 1; ok && j2 < o->n_inputs; j2++)
          if (o->inputs[j2] == leaf) {
            hl_release(o->results[j2]);
            o->results[j2] = hl_retain(o->results[j]);
          }
      } else {
        ok = accumulate_leaf(leaf, gi, o->create_graph);
      }
    } else {
      int k = find(g, node->next[e].node);
      ok = k >= 0 ? accumulate(&g->grad[k], gi, o->create_graph) : (hl_release(gi), true);
    }
    if (!ok) {
      for (int r = e + 1; r < node->n_in; r++) hl_release(gin[r]), gin[r] = NULL;
      return false;
    }
  }
  return true;
}

static bool run_node(graph *g, const run_opts *o, int i) {
  hl_node *node = g->nodes[i];
  hl_tensor *grad = g->grad[i];
  g->grad[i] = NULL;
  if (node->released)
    return hl_release(grad), hl_fail_bool("backward: the saved tensors of %s were freed by an earlier backward; pass "
                                         "retain_graph=true to the first backward (or grad) to go through this graph "
                                         "again",
                                         node->op->name);
  node->wanted = wanted_mask(g, o, node);
  /* a slice whose input already has a gradient: add into that one's slice */
  if (node->op->id == HL_OP_SLICE && !o->create_graph && hl_node_wants(node, 0) && node->next[0].node && grad) {
    const int k = find(g, node->next[0].node);
    if (k >= 0 && g->grad[k] && accumulate_slice(g->grad[k], grad, node)) {
      hl_release(grad);
      if (!o->retain_graph) hl_node_release_saved(node);
      return true;
    }
  }
  hl_tensor *gin[HL_NODE_MAX_INPUTS] = {NULL};
  if (node->has_autocast) hl_autocast_push_state(&node->autocast);
  hl_pool_push();
  bool ok = node->backward(node, grad, gin);
  hl_pool_pop();
  if (node->has_autocast) hl_autocast_pop_state();
  hl_release(grad); /* before routing, so that gradients passed through are exclusively owned */
  if (!ok) {
    for (int e = 0; e < node->n_in; e++) hl_release(gin[e]);
    if (!hl_has_error()) hl_fail("backward of %s failed", node->op->name);
    return false;
  }
  ok = route(g, o, node, gin);
  if (!o->retain_graph) hl_node_release_saved(node);
  return ok;
}

static bool run(hl_tensor *const *roots, hl_tensor *const *root_grads, int n_roots, const run_opts *o) {
  /* the profile puts everything the engine does in the backward phase */
  const hl_profile_phase outer_phase = hl_op_profile_set_phase(HL_PROFILE_BACKWARD);
  graph g = {0};
  if (!collect(&g, roots, n_roots)) {
    hl_op_profile_set_phase(outer_phase);
    return graph_free(&g), false;
  }
  if (o->inputs) mark_needed(&g, o);

  /* modes for the backward functions: grad = create_graph, autocast off */
  bool prev_grad = hl_set_grad_enabled(o->create_graph);
  hl_autocast_state off;
  memset(&off, 0, sizeof off);
  for (int d = 0; d < HL_DEVICE_KINDS; d++) off.dtype[d] = hl_autocast_default_dtype((hl_device_kind)d);
  hl_autocast_push_state(&off);
  hl_dispatch_set_backward(true);

  leaf_counts counts = {0};
  bool ok = !o->ready || o->inputs || leaf_counts_build(&counts, &g);
  for (int r = 0; ok && r < n_roots; r++) {
    hl_tensor *seed = hl_retain(root_grads[r]);
    if (roots[r]->grad_fn) {
      ok = accumulate(&g.grad[find(&g, roots[r]->grad_fn)], seed, o->create_graph);
    } else if (o->inputs) { /* a leaf asked for itself */
      int j = input_index(o, roots[r]);
      if (j >= 0) ok = accumulate(&o->results[j], seed, true);
      else hl_release(seed);
    } else {
      ok = accumulate_leaf(roots[r], seed, o->create_graph);
    }
  }
  const bool hooked = o->ready && !o->inputs;
  for (int i = 0; ok && i < g.n; i++) {
    if (!g.grad[i]) { /* no gradient reached this node */
      if (hooked) leaves_fed(&counts, &g, i, o);
      continue;
    }
    if (o->inputs) {
      if (g.capture[i] >= 0) {
        int j = g.capture[i];
        ok = accumulate(&o->results[j], hl_retain(g.grad[i]), true);
        for (int j2 = 0; ok && j2 < o->n_inputs; j2++)
          if (j2 != j && o->inputs[j2] == o->inputs[j]) {
            hl_release(o->results[j2]);
            o->results[j2] = hl_retain(o->results[j]);
          }
      }
      if (!g.run[i]) continue;
    }
    ok = ok && run_node(&g, o, i);
    if (ok && hooked) leaves_fed(&counts, &g, i, o);
  }
  leaf_counts_free(&counts);

  hl_dispatch_set_backward(false);
  hl_autocast_pop_state();
  hl_set_grad_enabled(prev_grad);
  graph_free(&g);
  hl_op_profile_set_phase(outer_phase);
  return ok;
}

/* Checks a root and makes its seed gradient (a new reference). */
static hl_tensor *seed_for(const char *what, hl_tensor *root, hl_tensor *given) {
  if (!root) return hl_has_error() ? NULL : hl_fail("%s: output is NULL", what);
  if (!root->requires_grad)
    return hl_fail("%s: %s does not require grad and has no grad_fn (was it computed from tensors that require grad, "
                   "with grad mode on?)",
                   what, hl_desc(root));
  if (!given) {
    if (hl_numel(root) != 1)
      return hl_fail("%s: a gradient can be implied only for one-element outputs, not %s; pass one", what,
                     hl_desc(root));
    return hl_full(hl_tensor_shape(root), 1.0, root->dtype, root->device);
  }
  if (!hl_shape_equal(hl_tensor_shape(given), hl_tensor_shape(root)) || given->dtype != root->dtype ||
      given->device != root->device)
    return hl_fail("%s: gradient %s does not match output %s", what, hl_desc(given), hl_desc(root));
  return hl_retain(given);
}

bool hl_backward(hl_tensor *loss, hl_tensor *grad, bool retain_graph) {
  return hl_backward_with_ready_hook(loss, grad, retain_graph, NULL, NULL);
}

bool hl_backward_with_ready_hook(hl_tensor *loss, hl_tensor *grad, bool retain_graph, hl_grad_ready_fn ready,
                                 void *user) {
  hl_tensor *seed = seed_for("backward", loss, grad);
  if (!seed) return false;
  run_opts o = {NULL, 0, NULL, retain_graph, false, ready, user};
  bool ok = run(&loss, &seed, 1, &o);
  hl_release(seed);
  return ok;
}

bool hl_autograd_grad(hl_tensor *const *outputs, int n_outputs, hl_tensor *const *grad_outputs,
                      hl_tensor *const *inputs, int n_inputs, hl_tensor **results, hl_grad_opts opts) {
  if (!outputs || !inputs || !results || n_outputs <= 0 || n_inputs <= 0)
    return hl_fail_bool("grad: outputs, inputs and results must be given (%d outputs, %d inputs)", n_outputs, n_inputs);
  for (int j = 0; j < n_inputs; j++) results[j] = NULL;
  for (int j = 0; j < n_inputs; j++) {
    if (!inputs[j]) return hl_has_error() ? false : hl_fail_bool("grad: input %d is NULL", j);
    if (!inputs[j]->requires_grad)
      return hl_fail_bool("grad: input %d (%s %s) does not require grad", j, hl_tensor_name(inputs[j]),
                          hl_desc(inputs[j]));
  }
  hl_tensor *seeds[HL_NODE_MAX_INPUTS];
  if (n_outputs > HL_NODE_MAX_INPUTS) return hl_fail_bool("grad: more than %d outputs", HL_NODE_MAX_INPUTS);
  for (int r = 0; r < n_outputs; r++) {
    seeds[r] = seed_for("grad", outputs[r], grad_outputs ? grad_outputs[r] : NULL);
    if (!seeds[r]) {
      for (int q = 0; q < r; q++) hl_release(seeds[q]);
      return false;
    }
  }
  run_opts o = {inputs, n_inputs, results, opts.retain_graph, opts.create_graph, NULL, NULL};
  bool ok = run(outputs, seeds, n_outputs, &o);
  for (int r = 0; r < n_outputs; r++) hl_release(seeds[r]);
  for (int j = 0; ok && j < n_inputs; j++)
    if (!results[j] && !opts.allow_unused)
      ok = hl_fail_bool("grad: input %d (%s %s) was not used to compute the outputs (set allow_unused to get NULL)",
                        j, hl_tensor_name(inputs[j]), hl_desc(inputs[j]));
  if (!ok)
    for (int j = 0; j < n_inputs; j++) hl_release(results[j]), results[j] = NULL;
  return ok;
}
