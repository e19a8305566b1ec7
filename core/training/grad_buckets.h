/* grad_buckets.h — data-parallel gradient all-reduce in buckets that start
 * while the backward is still running, as PyTorch's
 * DistributedDataParallel does (docs/train.md, "Data-parallel training").
 *
 * The gradients are grouped into buckets of about `bucket_bytes` (f32
 * values). A backward run through hl_backward_with_ready_hook with
 * hl_grad_buckets_ready copies each gradient into its bucket as soon as it
 * is final; a full bucket is handed to a communication thread, which
 * all-reduces the buckets one after another, in a fixed order, while the
 * backward goes on. hl_grad_buckets_finish waits for the rest and writes
 * the means back: hl_dist_allreduce_mean's (summed on the wire in
 * `wire`) per bucket. With 2 ranks the values do not depend on the
 * buckets (a sum of two values is the same however the vector is cut);
 * with more, MPI's summation order may depend on a bucket's size.
 *
 *   hl_grad_buckets *b = hl_grad_buckets_new(params, n, 25 << 20, HL_F32, tmp, numel);
 *   each step:  hl_grad_buckets_arm(b);      // before the last micro-batch's backward
 *               hl_backward_with_ready_hook(loss, NULL, false, hl_grad_buckets_ready, b);
 *               hl_grad_buckets_finish(b, &stats);
 *
 * The first layout takes the parameters in reverse order (the backward
 * reaches the last layers first); after the first step the buckets are
 * rebuilt once in the order the gradients actually became final, which is
 * the same on every rank (the graph is). Collectives run on the
 * communication thread only while the backward runs, so MPI needs
 * MPI_THREAD_SERIALIZED; without it (or outside a job of 2 ranks or more)
 * the buckets are all-reduced in the calling thread at finish, and
 * hl_grad_buckets_overlaps says so. */
#ifndef HL_GRAD_BUCKETS_H
#define HL_GRAD_BUCKETS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hl_grad_buckets hl_grad_buckets;

/* One step's communication. */
typedef struct {
  int buckets;        /* all-reduces in the step */
  uint64_t bytes;     /* on the wire (each rank's send buffer) */
  double busy_s;      /* wall time inside the all-reduces (on the communication thread when it overlaps) */
  double exposed_s;   /* the caller's time in finish: what the backward did not hide, plus writing the means back */
} hl_grad_buckets_stats;

/* params (their gradients' sizes are the parameters') and tmp (numel
 * floats, at least the parameters' total) stay the caller's and must
 * outlive b. bucket_bytes <= 0: one bucket, all-reduced at finish (no
 * thread, no hook needed): the one-piece all-reduce, with the same
 * statistics. NULL with hl_error() when out of memory or tmp is too small. */
hl_grad_buckets *hl_grad_buckets_new(hl_tensor *const *params, int n, int64_t bucket_bytes, hl_dtype wire, float *tmp,
                                     int64_t tmp_numel);
void hl_grad_buckets_free(hl_grad_buckets *b);

/* Whether buckets are all-reduced during the backward (a communication
 * thread), or only at finish. */
bool hl_grad_buckets_overlaps(const hl_grad_buckets *b);
/* The buckets in the current layout, and which of them (0: all-reduced
 * first) holds parameter i. */
int hl_grad_buckets_count(const hl_grad_buckets *b);
int hl_grad_buckets_bucket_of(const hl_grad_buckets *b, int i);

/* The next backward's ready hooks fill the buckets. */
void hl_grad_buckets_arm(hl_grad_buckets *b);
/* The hook (an hl_grad_ready_fn): leaf's gradient is final. Leaves that
 * are not among the parameters are ignored. */
void hl_grad_buckets_ready(hl_tensor *leaf, void *buckets);
/* After the backward: the buckets not yet started (parameters without a
 * gradient count as zeros), the wait for all of them, the means written
 * back into the gradients. false with hl_error() when a gradient cannot be
 * read or written. */
bool hl_grad_buckets_finish(hl_grad_buckets *b, hl_grad_buckets_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
