/* optim_cpu.c — kernels/optim_kernels.h on the CPU: the element bodies of
 * kernels/optim_math.h in loops over fixed chunks of every tensor.
 *
 * The tensors are cut into chunks of at most kChunk elements (a chunk never
 * spans two tensors); large calls share the chunks among OpenMP threads,
 * small ones run in the calling thread (a parameter list of biases is not
 * worth waking a thread pool for). Reductions keep one partial per chunk and
 * add the partials in chunk order, so results do not depend on the number
 * of threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/vector_clones.h"
#include "kernels/optim_kernels.h"
#include "kernels/optim_math.h"

enum { kChunk = 16384 };
static const int64_t kParallelFrom = 1 << 18; /* elements in one call */

typedef struct {
  int tensor;
  int64_t lo, hi;
} chunk;

/* Chunks of n tensors of the given element counts; NULL when n is 0 or
 * memory is short (the caller then walks the tensors whole). */
static chunk *make_chunks(int n, int64_t (*numel_of)(const void *, int), const void *list, int64_t *count,
                          int64_t *total) {
  *count = 0;
  *total = 0;
  for (int t = 0; t < n; t++) {
    int64_t m = numel_of(list, t);
    *count += (m + kChunk - 1) / kChunk;
    *total += m;
  }
  chunk *c = *count ? malloc((size_t)*count * sizeof *c) : NULL;
  if (!c) return NULL;
  int64_t k = 0;
  for (int t = 0; t < n; t++) {
    int64_t m = numel_of(list, t);
    for (int64_t lo = 0; lo < m; lo += kChunk) c[k++] = (chunk){t, lo, lo + kChunk < m ? lo + kChunk : m};
  }
  return c;
}

static int64_t view_numel(const void *list, int t) { return ((const hl_grad_view *)list)[t].numel; }
static int64_t entry_numel(const void *list, int t) { return ((const hl_optim_entry *)list)[t].numel; }

/* f on every chunk of the n tensors of `list` (ranges [lo, hi) of tensor t),
 * shared among OpenMP threads for large calls; the sum of its results. When
 * the chunk list cannot be allocated, each tensor is one range. */
typedef int64_t (*chunk_fn)(const void *list, int t, int64_t lo, int64_t hi, const void *arg);

static int64_t sum_over_chunks(const void *list, int n, int64_t (*numel_of)(const void *, int), chunk_fn f,
                               const void *arg) {
  int64_t count, total, sum = 0;
  chunk *c = make_chunks(n, numel_of, list, &count, &total);
  if (!c) {
    for (int t = 0; t < n; t++) sum += f(list, t, 0, numel_of(list, t), arg);
    return sum;
  }
#pragma omp parallel for schedule(static) reduction(+ : sum) if (total >= kParallelFrom)
  for (int64_t k = 0; k < count; k++) sum += f(list, c[k].tensor, c[k].lo, c[k].hi, arg);
  free(c);
  return sum;
}

/* A whole-tensor chunk list for when make_chunks could not allocate. */
static int64_t view_chunk_count(const hl_grad_view *g, int n) {
  int64_t count = 0;
  for (int t = 0; t < n; t++) count += (g[t].numel + kChunk - 1) / kChunk;
  return count;
}

/* ------------------------------------------------------------- scaler -- */

static int64_t unscale_range(const void *list, int t, int64_t lo, int64_t hi, const void *arg) {
  const hl_grad_view *v = (const hl_grad_view *)list + t;
  const float inv = *(const float *)arg;
  int nonfinite = 0;
  if (v->dense && v->dst == v->src && v->dst_dtype == HL_F32 && v->src_dtype == HL_F32) {
    /* the common case, in a loop the compiler vectorises: same formula */
    float *x = (float *)v->dst;
    for (int64_t i = lo; i < hi; i++) {
      nonfinite |= !hl_om_isfinite_f(x[i]);
      if (inv != 1.0f) x[i] = hl_mul_rn(x[i], inv);
    }
    return nonfinite;
  }
  for (int64_t i = lo; i < hi; i++) nonfinite |= hl_om_unscale_at(v, i, inv);
  return nonfinite;
}

static void cpu_unscale(const hl_grad_view *g, int n, const float *inv_scale, float *found_inf) {
  if (sum_over_chunks(g, n, view_numel, unscale_range, inv_scale) > 0) *found_inf = 1.0f;
}

static void cpu_reciprocal(float *inv, const float *scale) { *inv = hl_om_reciprocal(*scale); }

static void cpu_update_scale(float *scale, int32_t *tracker, const float *found_inf, uint64_t mask, double growth,
                             double backoff, int32_t interval) {
  hl_om_update_scale(scale, tracker, hl_om_found_sum(found_inf, mask), growth, backoff, interval);
}

/* --------------------------------------------------------- optimizers -- */

/* each returns the number of its updates the stored weight absorbed */
static int64_t sgd_range(const void *list, int t, int64_t lo, int64_t hi, const void *arg) {
  int64_t still = 0;
  for (int64_t i = lo; i < hi; i++) still += hl_om_sgd_at((const hl_optim_entry *)list + t, i, arg);
  return still;
}

/* AdamW on n elements of f32 weights, gradients and moments with no fp16
 * model copy (fp32 and the amp modes): hl_om_adamw per element, as in
 * hl_om_adamw_at, in a loop the compiler vectorises (the arguments copied
 * so that it sees them constant). Returns the updates the weights absorbed. */
HL_VECTOR_CLONES static int64_t adamw_f32(float *restrict p, const float *restrict g, float *restrict m,
                                          float *restrict v, int64_t n, const hl_adamw_args *args, float step_size,
                                          float bc2_sqrt) {
  const hl_adamw_args a = *args;
  int64_t still = 0;
  for (int64_t i = 0; i < n; i++) {
    float mi = m[i], vi = v[i];
    int moved;
    const float before = p[i], after = hl_om_adamw(before, g[i], &mi, &vi, &a, step_size, bc2_sqrt, &moved);
    m[i] = mi, v[i] = vi, p[i] = after;
    still += moved && hl_f32_bits(after) == hl_f32_bits(before);
  }
  return still;
}

static int64_t adamw_range(const void *list, int t, int64_t lo, int64_t hi, const void *arg) {
  const hl_optim_entry *e = (const hl_optim_entry *)list + t;
  if (e->param_dtype == HL_F32 && !e->model)
    return adamw_f32((float *)e->param + lo, (const float *)e->grad + lo, (float *)e->buf1 + lo, (float *)e->buf2 + lo,
                     hi - lo, arg, e->step_size, e->bias_correction2_sqrt);
  int64_t still = 0;
  for (int64_t i = lo; i < hi; i++) still += hl_om_adamw_at(e, i, arg);
  return still;
}

static void cpu_sgd(const hl_optim_entry *e, int n, const hl_sgd_args *a, uint64_t *absorbed) {
  const int64_t still = sum_over_chunks(e, n, entry_numel, sgd_range, a);
  if (absorbed) *absorbed += (uint64_t)still;
}

static void cpu_adamw(const hl_optim_entry *e, int n, const hl_adamw_args *a, uint64_t *absorbed) {
  const int64_t still = sum_over_chunks(e, n, entry_numel, adamw_range, a);
  if (absorbed) *absorbed += (uint64_t)still;
}

/* ----------------------------------------------------------- clipping -- */

static size_t cpu_grad_norm_scratch(const hl_grad_view *g, int n) {
  return (size_t)view_chunk_count(g, n) * sizeof(double);
}

/* The sum of x^2 over n f32 values, in f64 (each square exact), in eight
 * interleaved partial sums added in a fixed order: the compiler vectorises
 * it, and the result depends only on the data, not on the ISA. */
HL_VECTOR_CLONES static double sum_squares_f32(const float *restrict x, int64_t n) {
  double lane[8] = {0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) lane[j] += (double)x[i + j] * (double)x[i + j];
  for (int j = 0; i < n; i++, j++) lane[j] += (double)x[i] * (double)x[i];
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

static double norm_range(const hl_grad_view *v, int64_t lo, int64_t hi, int norm_type) {
  if (norm_type == HL_NORM_L2 && v->dense && v->src_dtype == HL_F32)
    return sum_squares_f32((const float *)v->src + lo, hi - lo);
  double acc = 0.0;
  for (int64_t i = lo; i < hi; i++) acc = hl_om_norm_combine(acc, hl_om_norm_term(hl_om_src_value(v, i), norm_type), norm_type);
  return acc;
}

static void cpu_grad_norm(const hl_grad_view *g, int n, int norm_type, double max_norm, void *scratch, float *out) {
  double *partial = scratch;
  /* one partial per chunk, shared among the threads chunk by chunk (a
   * tensor each would leave a thread waiting on the largest) */
  int64_t count, total;
  chunk *c = make_chunks(n, view_numel, g, &count, &total);
  if (c) {
#pragma omp parallel for schedule(static) if (total >= kParallelFrom)
    for (int64_t k = 0; k < count; k++) partial[k] = norm_range(&g[c[k].tensor], c[k].lo, c[k].hi, norm_type);
    free(c);
  } else {
    count = 0;
    for (int t = 0; t < n; t++)
      for (int64_t lo = 0; lo < g[t].numel; lo += kChunk)
        partial[count++] = norm_range(&g[t], lo, lo + kChunk < g[t].numel ? lo + kChunk : g[t].numel, norm_type);
  }
  double acc = 0.0;
  for (int64_t k = 0; k < count; k++) acc = hl_om_norm_combine(acc, partial[k], norm_type);
  hl_om_norm_finish(acc, norm_type, max_norm, out);
}

static int64_t scale_range(const void *list, int t, int64_t lo, int64_t hi, const void *arg) {
  for (int64_t i = lo; i < hi; i++) hl_om_scale_at((const hl_grad_view *)list + t, i, *(const float *)arg);
  return 0;
}

static int64_t clamp_range(const void *list, int t, int64_t lo, int64_t hi, const void *arg) {
  for (int64_t i = lo; i < hi; i++) hl_om_clamp_at((const hl_grad_view *)list + t, i, *(const double *)arg);
  return 0;
}

static void cpu_scale_grads(const hl_grad_view *g, int n, const float *coef) {
  sum_over_chunks(g, n, view_numel, scale_range, coef);
}

static void cpu_clamp_grads(const hl_grad_view *g, int n, double limit) {
  sum_over_chunks(g, n, view_numel, clamp_range, &limit);
}

const struct hl_optim_kernels hl_cpu_optim_kernels = HL_OPTIM_KERNEL_TABLE(cpu_);
