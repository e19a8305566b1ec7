/* node.h — the recorded graph, as the ops and the engine see it (internal
 * to core/engine/).
 *
 * A node is one op application. It knows where each input's gradient must
 * go (an edge to the input's own node, or to the input itself when that
 * is a leaf requiring grad), the shape and dtype each gradient must have,
 * the tensors its backward needs, and the op's parameters.
 *
 * Lifetimes follow PyTorch's design, which has no reference cycles: a
 * tensor holds its node; a node holds its inputs' nodes (or leaves) and
 * its saved tensors. A saved *output* is kept as a detached alias (the
 * output holds the node, so the node must not hold the output) and is
 * re-attached to the node when backward unpacks it under create_graph, so
 * second derivatives flow through it.
 */
#ifndef HL_NODE_H
#define HL_NODE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/engine/autocast.h"
#include "core/engine/registry.h"
#include "core/engine/tensor.h"

/* Computes the gradients of the inputs from the gradient of the output.
 * grad_in[i] must be set to a new reference of the input's shape and dtype,
 * or left NULL (no gradient, e.g. for indices or unneeded inputs; see
 * hl_node_wants). Runs with grad mode = create_graph, inside a pool.
 * false with hl_error on failure. */
typedef bool (*hl_backward_fn)(hl_node *node, hl_tensor *grad_out, hl_tensor **grad_in);

typedef struct {
  hl_node *node;   /* the input was made by this node (retained) */
  hl_tensor *leaf; /* or the input is this leaf that requires grad (retained) */
} hl_edge;

typedef struct {
  hl_dtype dtype;
  hl_device_kind device;
  int ndim;
  int64_t shape[HL_MAX_DIMS];
} hl_meta;

typedef struct {
  hl_tensor *tensor;
  bool is_output;
  unsigned version;
} hl_saved;

#define HL_NODE_MAX_SAVED 6
#define HL_NODE_MAX_INPUTS 64

/* What an op's backward needs besides its saved tensors, one member per
 * op family; only the member of the node's own op is meaningful. A
 * `*_slot` is the index of a saved tensor (hl_node_saved), or -1 when the
 * backward does not need that tensor. */
typedef union {
  struct {
    int a_slot, b_slot;
  } binary; /* add, sub, mul, div */
  struct {
    int a_slot, b_slot;
    bool b_shared; /* matmul of a batched a with a 2-D b: b's gradient sums over the batch */
  } matmul;        /* mm, bmm, matmul */
  struct {
    int x_slot, weight_slot;
  } linear;
  struct {
    int weight_slot, mean_slot, rstd_slot; /* x is slot 0 */
  } layer_norm;
  struct {
    bool log;
  } softmax; /* softmax, log_softmax */
  struct {
    double scalar; /* the s of x + s, x * s, x / s, s - x, s / x, or pow's exponent; 0 when the op has none */
  } unary;
  struct {
    double scale; /* 1 for a sum, 1 / (elements reduced) for a mean */
    int dim;      /* the reduced dim, or -1: all elements */
  } reduce;       /* sum, mean */
  struct {
    int dims[HL_MAX_DIMS]; /* output dim i is input dim dims[i] */
  } permute;               /* permute, transpose */
  struct {
    int dim;
    int64_t start;
  } slice; /* slice and slice_backward */
  struct {
    int dim;
  } cat;
} hl_node_params;

struct hl_node {
  atomic_int refs;
  const hl_op_desc *op;
  hl_backward_fn backward;
  uint64_t seq; /* creation order; the engine runs later nodes first */
  int n_in;
  hl_edge *next;   /* [n_in] */
  hl_meta *in_meta; /* [n_in] */
  int n_saved;
  hl_saved saved[HL_NODE_MAX_SAVED];
  bool released;   /* saved tensors freed by a backward without retain_graph */
  uint64_t wanted; /* set by the engine before backward: bit i = input i's gradient is needed */
  hl_node_params params;
  void *ctx; /* custom ops */
  void (*ctx_free)(void *);
  bool has_autocast;
  hl_autocast_state autocast;
};

/* Should an op with these inputs record a node? (grad mode on, and some
 * input requires grad). NULL inputs are ignored. */
bool hl_should_record(hl_tensor *const *inputs, int n);
/* A node for `n` inputs (NULL ones get no edge). NULL with hl_error only
 * when out of host memory. */
hl_node *hl_node_new(hl_op_id op, hl_backward_fn backward, hl_tensor *const *inputs, int n);
/* Make out the node's output: out->grad_fn = node (the tensor takes the
 * caller's reference), out->requires_grad = true. */
void hl_node_attach(hl_node *node, hl_tensor *out);
/* Saving: returns the slot index, -1 with hl_error when full. */
int hl_node_save(hl_node *node, hl_tensor *t);
int hl_node_save_output(hl_node *node, hl_tensor *out);
/* Unpacking, in a backward function: a new reference, or NULL with an
 * error when the graph was freed or the tensor modified in place since. */
hl_tensor *hl_node_saved(hl_node *node, int slot);
/* Does the engine need input i's gradient? */
bool hl_node_wants(const hl_node *node, int i);

hl_node *hl_node_retain(hl_node *node);
void hl_node_release(hl_node *node);
/* Frees the saved tensors (backward without retain_graph). */
void hl_node_release_saved(hl_node *node);
const char *hl_node_name(const hl_node *node);

#endif
