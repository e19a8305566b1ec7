/* autograd.h — reverse-mode differentiation over the graph the ops record.
 *
 * Every op whose inputs require grad (and grad mode is on) records a node:
 * the tensor it made points at the node, the node at its inputs' nodes or
 * leaves and at what its backward needs (saved tensors). hl_backward walks
 * that graph from a loss and accumulates into .grad of leaves that require
 * grad; hl_autograd_grad returns gradients instead of accumulating, and with
 * create_graph those gradients carry their own graph and can be
 * differentiated again (gradient penalty):
 *
 *   hl_tensor *g[2];
 *   hl_autograd_grad(&loss, 1, NULL, params, 2, g, (hl_grad_opts){.create_graph = true});
 *   penalty = sqrt(sum(g0^2) + sum(g1^2)); total = loss + penalty;
 *   hl_backward(total, NULL, false);
 *
 * Backward functions run with grad mode = create_graph and with autocast
 * suspended: each backward op computes in the dtypes its forward used.
 * Without retain_graph the saved tensors of each node are freed as it runs;
 * going through those nodes again is an error naming the op.
 * Errors (bad roots, unused inputs, freed graphs) leave the message in
 * hl_error() and return false; leaf gradients may then be partly updated.
 */
#ifndef HL_AUTOGRAD_H
#define HL_AUTOGRAD_H

#include <stdbool.h>

#include "core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* loss.backward(grad, retain_graph): grad NULL means 1 and needs a
 * one-element loss. */
bool hl_backward(hl_tensor *loss, hl_tensor *grad, bool retain_graph);

/* Called during a backward with each leaf the graph reaches, once, as soon
 * as that leaf's .grad is final: after the last node that feeds it has
 * run (PyTorch's post-accumulate-grad hook). Data-parallel training starts
 * a leaf's all-reduce there, while the rest of the backward still runs.
 * The order is the engine's, the same in every run of the same graph; a
 * leaf whose every consumer passed it no gradient is not called. The hook
 * must not run ops that record a graph, nor change the leaf's .grad. */
typedef void (*hl_grad_ready_fn)(hl_tensor *leaf, void *user);
/* hl_backward, calling ready (when not NULL) as above. */
bool hl_backward_with_ready_hook(hl_tensor *loss, hl_tensor *grad, bool retain_graph, hl_grad_ready_fn ready,
                                 void *user);

typedef struct {
  bool retain_graph;  /* keep saved tensors (set it whenever create_graph is) */
  bool create_graph;  /* record the backward ops: results are differentiable */
  bool allow_unused;  /* an input the outputs do not depend on gives NULL instead of an error */
} hl_grad_opts;

/* torch.autograd.grad: d(sum_i <outputs[i], grad_outputs[i]>) / d inputs[j]
 * into results[j] (new references; NULL only for unused inputs with
 * allow_unused). grad_outputs may be NULL (ones for one-element outputs).
 * Inputs may be leaves or intermediate tensors; each must require grad.
 * Leaves' .grad are not touched. */
bool hl_autograd_grad(hl_tensor *const *outputs, int n_outputs, hl_tensor *const *grad_outputs,
                      hl_tensor *const *inputs, int n_inputs, hl_tensor **results, hl_grad_opts opts);

/* Grad mode (per thread): off, ops record nothing. */
bool hl_grad_enabled(void);
bool hl_set_grad_enabled(bool enabled); /* returns the previous mode */

typedef struct {
  bool previous;
  bool once;
} hl_grad_guard;

static inline hl_grad_guard hl_no_grad_enter_(void) {
  hl_grad_guard g = {hl_set_grad_enabled(false), true};
  return g;
}
static inline void hl_no_grad_exit_(hl_grad_guard *g) { hl_set_grad_enabled(g->previous); }

/* HL_NO_GRAD { ... }: the block runs with grad mode off, restored however
 * the block is left. */
#define HL_NO_GRAD                                                                                  \
  for (hl_grad_guard hl_no_grad_guard_ __attribute__((cleanup(hl_no_grad_exit_))) = hl_no_grad_enter_(); \
       hl_no_grad_guard_.once; hl_no_grad_guard_.once = false)

#ifdef __cplusplus
}
#endif

#endif
