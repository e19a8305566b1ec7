/* tensor_cpu_reduce.c — row- and column-wise reductions on the CPU: sum,
 * softmax / log_softmax, layer norm, cross-entropy (forward and backward).
 *
 * Sums use 16 lane accumulators folded by a fixed tree (tensor_cpu.h), and
 * work is split into fixed blocks (never "one part per thread"), so a
 * result is the same for any thread count and any x86 ISA. One row is one
 * task: the statistics of a row never cross threads. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "kernels/cpu/half_arrays.h"
#include "kernels/cpu/half_simd.h"
#include "kernels/cpu/tensor_cpu.h"

#define SUM_BLOCK 8192  /* elements per partial sum of a long row */
#define COL_CHUNK 256   /* columns per task of a column sum */
#define COL_BLOCK 128   /* rows summed before folding into the running column total */
#define LN_ROW_BLOCK 32 /* rows per task of layer_norm_backward's dw/db partials */

/* --------------------------------------------------- per-dtype helpers -- */

#define ROW_HELPERS(SUF, T, CT, CS)                                                \
  HL_VECTOR_CLONES static CT lane_sum_##SUF(const T *x, int64_t n) {               \
    CT acc[HL_LANES] = {0};                                                        \
    HL_LANE_LOOP(n, acc[lane] += (CT)HL_LD_##SUF(x[i]););                          \
    HL_FOLD_LANES(acc);                                                            \
    return acc[0];                                                                 \
  }                                                                                \
  HL_VECTOR_CLONES static CT lane_max_##SUF(const T *x, int64_t n) {               \
    CT mx[HL_LANES];                                                               \
    for (int k = 0; k < HL_LANES; k++) mx[k] = (CT)-INFINITY;                      \
    HL_LANE_LOOP(n, CT v = (CT)HL_LD_##SUF(x[i]); mx[lane] = v > mx[lane] ? v : mx[lane];); \
    for (int k = 1; k < HL_LANES; k++) mx[0] = mx[k] > mx[0] ? mx[k] : mx[0];      \
    return mx[0];                                                                  \
  }                                                                                \
  /* sum of exp(x - m); the exp values are kept in e unless it is NULL */          \
  HL_VECTOR_CLONES static CT lane_sum_exp_##SUF(const T *x, int64_t n, CT m, CT *e) { \
    CT acc[HL_LANES] = {0};                                                        \
    if (e)                                                                         \
      HL_LANE_LOOP(n, CT v = hl_exp_##CS((CT)HL_LD_##SUF(x[i]) - m); e[i] = v; acc[lane] += v;); \
    else                                                                           \
      HL_LANE_LOOP(n, acc[lane] += hl_exp_##CS((CT)HL_LD_##SUF(x[i]) - m););       \
    HL_FOLD_LANES(acc);                                                            \
    return acc[0];                                                                 \
  }

HL_FOR_FLOAT_TYPES(ROW_HELPERS)

/* ----------------------------------------------------------------- sum -- */

#define SUM_KERNEL(SUF, T, CT, CS)                                                                      \
  static void sum_##SUF(T *out, const T *x, int64_t outer, int64_t r, int64_t inner, CT alpha) {        \
    if (inner == 1) {                                                                                   \
      const int64_t nblk = r > 0 ? (r + SUM_BLOCK - 1) / SUM_BLOCK : 1;                                 \
      CT *part = nblk > 1 ? malloc(sizeof(CT) * (size_t)(outer * nblk)) : NULL;                         \
      if (nblk > 1) HL_CHECK_ALLOC(part, sizeof(CT) * (size_t)(outer * nblk), "sum's partial sums");    \
      if (nblk == 1) {                                                                                  \
        _Pragma("omp parallel for schedule(static) if (outer * r >= HL_PAR_MIN)")                       \
        for (int64_t o = 0; o < outer; o++) out[o] = HL_ST_##SUF(alpha * lane_sum_##SUF(x + o * r, r)); \
        return;                                                                                         \
      }                                                                                                 \
      _Pragma("omp parallel for schedule(static) if (outer * r >= HL_PAR_MIN)")                         \
      for (int64_t ob = 0; ob < outer * nblk; ob++) {                                                   \
        int64_t o = ob / nblk, b = ob % nblk, lo = b * SUM_BLOCK;                                       \
        part[ob] = lane_sum_##SUF(x + o * r + lo, hl_min64(SUM_BLOCK, r - lo));                         \
      }                                                                                                 \
      for (int64_t o = 0; o < outer; o++) {                                                             \
        CT acc[HL_LANES] = {0};                                                                         \
        for (int64_t b = 0; b < nblk; b++) acc[b % HL_LANES] += part[o * nblk + b];                     \
        HL_FOLD_LANES(acc);                                                                             \
        out[o] = HL_ST_##SUF(alpha * acc[0]);                                                           \
      }                                                                                                 \
      free(part);                                                                                       \
      return;                                                                                           \
    }                                                                                                   \
    const int64_t nchunk = (inner + COL_CHUNK - 1) / COL_CHUNK;                                         \
    _Pragma("omp parallel for schedule(static) if (outer * r * inner >= HL_PAR_MIN)")                   \
    for (int64_t oc = 0; oc < outer * nchunk; oc++) {                                                   \
      int64_t o = oc / nchunk, c0 = oc % nchunk * COL_CHUNK, w = hl_min64(COL_CHUNK, inner - c0);       \
      CT total[COL_CHUNK], block[COL_CHUNK];                                                            \
      for (int64_t k = 0; k < w; k++) total[k] = 0;                                                     \
      for (int64_t j0 = 0; j0 < r; j0 += COL_BLOCK) {                                                   \
        for (int64_t k = 0; k < w; k++) block[k] = 0;                                                   \
        for (int64_t j = j0; j < hl_min64(r, j0 + COL_BLOCK); j++) {                                    \
          const T *row = x + (o * r + j) * inner + c0;                                                  \
          for (int64_t k = 0; k < w; k++) block[k] += (CT)HL_LD_##SUF(row[k]);                          \
        }                                                                                               \
        for (int64_t k = 0; k < w; k++) total[k] += block[k];                                           \
      }                                                                                                 \
      for (int64_t k = 0; k < w; k++) out[o * inner + c0 + k] = HL_ST_##SUF(alpha * total[k]);          \
    }                                                                                                   \
  }

HL_FOR_FLOAT_TYPES(SUM_KERNEL)

HL_VECTOR_CLONES static void add_row_f32(float *restrict acc, const float *restrict row, int64_t w) {
  for (int64_t k = 0; k < w; k++) acc[k] += row[k];
}

/* acc[k] += the half row's element k widened: the widening inside the
 * loop, 8 lanes in registers (F16C for fp16, a shift for bf16), instead of
 * a widened copy of the row stored and read back. The same additions in
 * the same order as add_row_f32 on the widened row. */
#if HL_HAVE_HALF_SIMD
HL_AVX2_TARGET static void add_row_half_avx2(hl_dtype t, float *restrict acc, const uint16_t *restrict row, int64_t w) {
  int64_t k = 0;
  if (t == HL_F16)
    for (; k + 8 <= w; k += 8)
      _mm256_storeu_ps(acc + k, _mm256_add_ps(_mm256_loadu_ps(acc + k), hl_avx2_widen8_f16_quieting(row + k)));
  else
    for (; k + 8 <= w; k += 8)
      _mm256_storeu_ps(acc + k, _mm256_add_ps(_mm256_loadu_ps(acc + k), hl_avx2_widen8_bf16(row + k)));
  for (; k < w; k++) acc[k] += t == HL_F16 ? hl_f16_to_f32(row[k]) : hl_bf16_to_f32(row[k]);
}
#endif

static void add_row_half(hl_dtype t, bool vector, float *restrict acc, const uint16_t *restrict row, int64_t w) {
#if HL_HAVE_HALF_SIMD
  if (vector) {
    add_row_half_avx2(t, acc, row, w);
    return;
  }
#endif
  float widened[COL_CHUNK];
  for (int64_t lo = 0; lo < w; lo += COL_CHUNK) {
    const int64_t len = hl_min64(COL_CHUNK, w - lo);
    hl_cpu_widen_operand(t, row + lo, widened, (size_t)len);
    add_row_f32(acc + lo, widened, len);
  }
}

/* Column sums of f32, fp16 and bf16 (a bias gradient): sum_*'s column
 * order of additions — per column, each block of COL_BLOCK rows summed in
 * row order from 0, the block sums added in block order to a total from 0 —
 * so bit for bit the same sums, but swept differently. A task is one block
 * of rows times COL_WIDE columns: it reads each row's segment whole, one
 * contiguous stream (a 256-column chunk per task down all the rows read 1 KiB
 * per row at the row stride, a new page each time, which the hardware
 * prefetcher does not follow: 0.43-0.73 ms against 0.15 on the Zen 4 VM,
 * 2048 x 1536 f32, 2 threads),
 * into its block sum, stored as a partial; the partials are then folded in
 * block order. Segments are added by add_row_f32 (compiled per ISA) or
 * add_row_half (a half segment widened as it is added). */
#define COL_WIDE 2048 /* columns per task: its block sum (8 KiB) stays in L1 */

static void col_sum_f32_acc(hl_dtype t, void *out, const void *x, int64_t outer, int64_t r, int64_t inner,
                            float alpha) {
  const bool half = t != HL_F32;
  /* the vector widening where the chosen conversion path has one */
  const bool vector = half && hl_cpu_half_path_chosen(t) != HL_HALF_PATH_PORTABLE;
  const int64_t nblk = r > 0 ? (r + COL_BLOCK - 1) / COL_BLOCK : 1, nwide = (inner + COL_WIDE - 1) / COL_WIDE;
  const size_t part_bytes = sizeof(float) * (size_t)(outer * nblk * inner);
  float *part = malloc(part_bytes); /* [outer][block][inner] */
  HL_CHECK_ALLOC(part, part_bytes, "the column sum's block partials");
#pragma omp parallel if (outer * r * inner >= HL_PAR_MIN)
  {
#pragma omp for schedule(static)
    for (int64_t task = 0; task < outer * nblk * nwide; task++) {
      const int64_t o = task / (nblk * nwide), blk = task / nwide % nblk, c0 = task % nwide * COL_WIDE;
      const int64_t w = hl_min64(COL_WIDE, inner - c0), j0 = blk * COL_BLOCK;
      float *block = part + (o * nblk + blk) * inner + c0;
      for (int64_t k = 0; k < w; k++) block[k] = 0;
      for (int64_t j = j0; j < hl_min64(r, j0 + COL_BLOCK); j++) {
        const int64_t at = (o * r + j) * inner + c0;
        if (half) add_row_half(t, vector, block, (const uint16_t *)x + at, w);
        else add_row_f32(block, (const float *)x + at, w);
      }
    }
    /* the totals: block partials in block order, COL_CHUNK columns a task */
    const int64_t nchunk = (inner + COL_CHUNK - 1) / COL_CHUNK;
#pragma omp for schedule(static)
    for (int64_t oc = 0; oc < outer * nchunk; oc++) {
      const int64_t o = oc / nchunk, c0 = oc % nchunk * COL_CHUNK, w = hl_min64(COL_CHUNK, inner - c0);
      float total[COL_CHUNK];
      for (int64_t k = 0; k < w; k++) total[k] = 0;
      for (int64_t blk = 0; blk < nblk; blk++) add_row_f32(total, part + (o * nblk + blk) * inner + c0, w);
      for (int64_t k = 0; k < w; k++) {
        const float v = alpha * total[k];
        if (t == HL_F32) ((float *)out)[o * inner + c0 + k] = v;
        else ((uint16_t *)out)[o * inner + c0 + k] = t == HL_F16 ? HL_ST_F16(v) : HL_ST_BF16(v);
      }
    }
  }
  free(part);
}

void hl_cpu_sum(hl_dtype t, void *out, const void *x, int64_t outer, int64_t r, int64_t inner, double alpha) {
  switch (t) {
    case HL_F64: sum_F64(out, x, outer, r, inner, alpha); break;
    case HL_F32:
    case HL_F16:
    case HL_BF16:
      if (inner > 1) col_sum_f32_acc(t, out, x, outer, r, inner, (float)alpha);
      else if (t == HL_F32) sum_F32(out, x, outer, r, inner, (float)alpha);
      else if (t == HL_F16) sum_F16(out, x, outer, r, inner, (float)alpha);
      else sum_BF16(out, x, outer, r, inner, (float)alpha);
      break;
    default: break;
  }
}

/* ------------------------------------------------------------- softmax -- */

/* Per-thread scratch rows of the compute type (exp values before the
 * division, for outputs narrower than the compute type). */
static void *scratch_rows(size_t row_bytes) {
  const size_t bytes = row_bytes * (size_t)omp_get_max_threads();
  return HL_CHECK_ALLOC(malloc(bytes), bytes, "softmax's scratch rows");
}

#define SOFTMAX_KERNEL(SUF, T, CT, CS)                                                                    \
  HL_VECTOR_CLONES static void softmax_row_##SUF(T *y, const T *x, int64_t n, bool log, CT *e) {          \
    CT m = lane_max_##SUF(x, n);                                                                          \
    if (log) {                                                                                            \
      CT ls = hl_log_##CS(lane_sum_exp_##SUF(x, n, m, NULL));                                             \
      for (int64_t i = 0; i < n; i++) y[i] = HL_ST_##SUF(((CT)HL_LD_##SUF(x[i]) - m) - ls);               \
      return;                                                                                             \
    }                                                                                                     \
    CT s = lane_sum_exp_##SUF(x, n, m, e);                                                                \
    for (int64_t i = 0; i < n; i++) y[i] = HL_ST_##SUF(e[i] / s);                                         \
  }                                                                                                       \
  static void softmax_##SUF(T *y, const T *x, int64_t rows, int64_t cols, bool log) {                     \
    /* f32/f64 keep the exp values in y itself; f16/bf16 need a wider row */                             \
    const bool in_place = sizeof(T) == sizeof(CT);                                                        \
    CT *scratch = in_place || log ? NULL : scratch_rows(sizeof(CT) * (size_t)cols);                       \
    _Pragma("omp parallel for schedule(static) if (rows * cols >= HL_PAR_MIN)")                           \
    for (int64_t r = 0; r < rows; r++) {                                                                  \
      CT *e = in_place ? (CT *)(void *)(y + r * cols) : (scratch ? scratch + omp_get_thread_num() * cols : NULL); \
      softmax_row_##SUF(y + r * cols, x + r * cols, cols, log, e);                                        \
    }                                                                                                     \
    free(scratch);                                                                                        \
  }                                                                                                       \
  HL_VECTOR_CLONES static void softmax_backward_row_##SUF(T *dx, const T *dy, const T *y, int64_t n, bool log) { \
    CT acc[HL_LANES] = {0};                                                                               \
    if (log) {                                                                                            \
      CT s = lane_sum_##SUF(dy, n);                                                                       \
      for (int64_t i = 0; i < n; i++)                                                                     \
        dx[i] = HL_ST_##SUF((CT)HL_LD_##SUF(dy[i]) - hl_exp_##CS((CT)HL_LD_##SUF(y[i])) * s);             \
      return;                                                                                             \
    }                                                                                                     \
    HL_LANE_LOOP(n, acc[lane] += (CT)HL_LD_##SUF(dy[i]) * (CT)HL_LD_##SUF(y[i]););                        \
    HL_FOLD_LANES(acc);                                                                                   \
    CT dot = acc[0];                                                                                      \
    for (int64_t i = 0; i < n; i++)                                                                       \
      dx[i] = HL_ST_##SUF((CT)HL_LD_##SUF(y[i]) * ((CT)HL_LD_##SUF(dy[i]) - dot));                        \
  }                                                                                                       \
  static void softmax_backward_##SUF(T *dx, const T *dy, const T *y, int64_t rows, int64_t cols, bool log) { \
    _Pragma("omp parallel for schedule(static) if (rows * cols >= HL_PAR_MIN)")                           \
    for (int64_t r = 0; r < rows; r++)                                                                    \
      softmax_backward_row_##SUF(dx + r * cols, dy + r * cols, y + r * cols, cols, log);                  \
  }

HL_FOR_FLOAT_TYPES(SOFTMAX_KERNEL)

void hl_cpu_softmax(hl_dtype t, void *y, const void *x, int64_t rows, int64_t cols, bool log) {
  switch (t) {
    case HL_F64: softmax_F64(y, x, rows, cols, log); break;
    case HL_F32: softmax_F32(y, x, rows, cols, log); break;
    case HL_F16: softmax_F16(y, x, rows, cols, log); break;
    case HL_BF16: softmax_BF16(y, x, rows, cols, log); break;
    default: break;
  }
}

void hl_cpu_softmax_backward(hl_dtype t, void *dx, const void *dy, const void *y, int64_t rows, int64_t cols,
                             bool log) {
  switch (t) {
    case HL_F64: softmax_backward_F64(dx, dy, y, rows, cols, log); break;
    case HL_F32: softmax_backward_F32(dx, dy, y, rows, cols, log); break;
    case HL_F16: softmax_backward_F16(dx, dy, y, rows, cols, log); break;
    case HL_BF16: softmax_backward_BF16(dx, dy, y, rows, cols, log); break;
    default: break;
  }
}

/* ---------------------------------------------------------- layer norm -- */

#define LAYER_NORM_KERNEL(SUF, T, CT, CS)                                                                    \
  HL_VECTOR_CLONES static void layer_norm_row_##SUF(T *y, CT *mean_out, CT *rstd_out, const T *x, const T *w, \
                                                    const T *b, int64_t n, CT eps) {                         \
    CT mean = lane_sum_##SUF(x, n) / (CT)n;                                                                  \
    CT acc[HL_LANES] = {0};                                                                                  \
    HL_LANE_LOOP(n, CT d = (CT)HL_LD_##SUF(x[i]) - mean; acc[lane] += d * d;);                               \
    HL_FOLD_LANES(acc);                                                                                      \
    CT rstd = (CT)1 / hl_sqrt_##CS(acc[0] / (CT)n + eps);                                                    \
    *mean_out = mean;                                                                                        \
    *rstd_out = rstd;                                                                                        \
    if (w && b) {                                                                                            \
      for (int64_t i = 0; i < n; i++)                                                                        \
        y[i] = HL_ST_##SUF(((CT)HL_LD_##SUF(x[i]) - mean) * rstd * (CT)HL_LD_##SUF(w[i]) +                   \
                           (CT)HL_LD_##SUF(b[i]));                                                           \
    } else {                                                                                                 \
      for (int64_t i = 0; i < n; i++) {                                                                      \
        CT v = ((CT)HL_LD_##SUF(x[i]) - mean) * rstd;                                                        \
        if (w) v = v * (CT)HL_LD_##SUF(w[i]);                                                                \
        if (b) v = v + (CT)HL_LD_##SUF(b[i]);                                                                \
        y[i] = HL_ST_##SUF(v);                                                                               \
      }                                                                                                      \
    }                                                                                                        \
  }                                                                                                          \
  static void layer_norm_##SUF(T *y, CT *mean, CT *rstd, const T *x, const T *w, const T *b, int64_t rows,   \
                               int64_t cols, CT eps) {                                                       \
    _Pragma("omp parallel for schedule(static) if (rows * cols >= HL_PAR_MIN)")                              \
    for (int64_t r = 0; r < rows; r++)                                                                       \
      layer_norm_row_##SUF(y + r * cols, mean + r, rstd + r, x + r * cols, w, b, cols, eps);                 \
  }                                                                                                          \
  /* The common case (weight, bias and dx all wanted) in one pass for the                                     \
   * partials and the row sums: each element's terms as the general path                                    \
   * below computes them, the same sums in the same lanes, so the same bits;                                 \
   * restrict, since nothing here aliases. 4x faster than the separate passes                                \
   * on the Zen 4 VM (2048 x 384 rows: 0.75 -> 0.19 ms, 2 threads). */                                       \
  HL_VECTOR_CLONES static void layer_norm_backward_row_affine_##SUF(                                          \
      T *restrict dx, CT *restrict pw, CT *restrict pb, const T *restrict dy, const T *restrict x,           \
      const T *restrict w, CT mean, CT rstd, int64_t n) {                                                    \
    CT sg[HL_LANES] = {0}, sgx[HL_LANES] = {0};                                                              \
    HL_LANE_LOOP(n, CT g = (CT)HL_LD_##SUF(dy[i]); CT xhat = ((CT)HL_LD_##SUF(x[i]) - mean) * rstd;          \
                 pw[i] += g * xhat; pb[i] += g; CT gw = g * (CT)HL_LD_##SUF(w[i]);                           \
                 sg[lane] += gw; sgx[lane] += gw * xhat;);                                                   \
    HL_FOLD_LANES(sg);                                                                                       \
    HL_FOLD_LANES(sgx);                                                                                      \
    CT a = sg[0] / (CT)n, c = sgx[0] / (CT)n;                                                                \
    for (int64_t i = 0; i < n; i++) {                                                                        \
      CT g = (CT)HL_LD_##SUF(dy[i]) * (CT)HL_LD_##SUF(w[i]), xhat = ((CT)HL_LD_##SUF(x[i]) - mean) * rstd;   \
      dx[i] = HL_ST_##SUF((g - a - xhat * c) * rstd);                                                        \
    }                                                                                                        \
  }                                                                                                          \
  /* dx of one row; adds dy * xhat and dy into the block partials pw, pb */                                  \
  HL_VECTOR_CLONES static void layer_norm_backward_row_##SUF(T *dx, CT *pw, CT *pb, const T *dy, const T *x,  \
                                                             const T *w, CT mean, CT rstd, int64_t n) {      \
    CT sg[HL_LANES] = {0}, sgx[HL_LANES] = {0};                                                              \
    if (dx && pw && pb && w) {                                                                               \
      layer_norm_backward_row_affine_##SUF(dx, pw, pb, dy, x, w, mean, rstd, n);                             \
      return;                                                                                                \
    }                                                                                                        \
    if (pw && pb) {                                                                                          \
      for (int64_t i = 0; i < n; i++) {                                                                      \
        CT g = (CT)HL_LD_##SUF(dy[i]);                                                                       \
        pw[i] += g * (((CT)HL_LD_##SUF(x[i]) - mean) * rstd);                                                \
        pb[i] += g;                                                                                          \
      }                                                                                                      \
    } else {                                                                                                 \
      for (int64_t i = 0; i < n; i++) {                                                                      \
        CT g = (CT)HL_LD_##SUF(dy[i]);                                                                       \
        if (pw) pw[i] += g * (((CT)HL_LD_##SUF(x[i]) - mean) * rstd);                                        \
        if (pb) pb[i] += g;                                                                                  \
      }                                                                                                      \
    }                                                                                                        \
    if (!dx) return;                                                                                         \
    if (w)                                                                                                   \
      HL_LANE_LOOP(n, CT g = (CT)HL_LD_##SUF(dy[i]) * (CT)HL_LD_##SUF(w[i]);                                 \
                   sg[lane] += g; sgx[lane] += g * (((CT)HL_LD_##SUF(x[i]) - mean) * rstd););                \
    else                                                                                                     \
      HL_LANE_LOOP(n, CT g = (CT)HL_LD_##SUF(dy[i]);                                                         \
                   sg[lane] += g; sgx[lane] += g * (((CT)HL_LD_##SUF(x[i]) - mean) * rstd););                \
    HL_FOLD_LANES(sg);                                                                                       \
    HL_FOLD_LANES(sgx);                                                                                      \
    CT a = sg[0] / (CT)n, c = sgx[0] / (CT)n;                                                                \
    for (int64_t i = 0; i < n; i++) {                                                                        \
      CT g = (CT)HL_LD_##SUF(dy[i]), xhat = ((CT)HL_LD_##SUF(x[i]) - mean) * rstd;                           \
      if (w) g = g * (CT)HL_LD_##SUF(w[i]);                                                                  \
      dx[i] = HL_ST_##SUF((g - a - xhat * c) * rstd);                                                        \
    }                                                                                                        \
  }                                                                                                          \
  static void layer_norm_backward_##SUF(T *dx, T *dw, T *db, const T *dy, const T *x, const T *w,            \
                                        const CT *mean, const CT *rstd, int64_t rows, int64_t cols) {        \
    const int64_t nblk = (rows + LN_ROW_BLOCK - 1) / LN_ROW_BLOCK;                                           \
    CT *pw = dw ? calloc((size_t)(nblk * cols), sizeof(CT)) : NULL;                                          \
    CT *pb = db ? calloc((size_t)(nblk * cols), sizeof(CT)) : NULL;                                          \
    if (dw) HL_CHECK_ALLOC(pw, sizeof(CT) * (size_t)(nblk * cols), "layer_norm_backward's weight partials"); \
    if (db) HL_CHECK_ALLOC(pb, sizeof(CT) * (size_t)(nblk * cols), "layer_norm_backward's bias partials");   \
    _Pragma("omp parallel for schedule(static) if (rows * cols >= HL_PAR_MIN)")                              \
    for (int64_t blk = 0; blk < nblk; blk++)                                                                 \
      for (int64_t r = blk * LN_ROW_BLOCK; r < hl_min64(rows, (blk + 1) * LN_ROW_BLOCK); r++)                \
        layer_norm_backward_row_##SUF(dx ? dx + r * cols : NULL, pw ? pw + blk * cols : NULL,                \
                                      pb ? pb + blk * cols : NULL, dy + r * cols, x + r * cols, w, mean[r],  \
                                      rstd[r], cols);                                                        \
    /* fold the block partials in block order */                                                             \
    _Pragma("omp parallel for schedule(static) if (nblk * cols >= HL_PAR_MIN)")                              \
    for (int64_t c = 0; c < cols; c++) {                                                                     \
      CT sw = 0, sb = 0;                                                                                     \
      for (int64_t blk = 0; blk < nblk; blk++) {                                                             \
        if (pw) sw += pw[blk * cols + c];                                                                    \
        if (pb) sb += pb[blk * cols + c];                                                                    \
      }                                                                                                      \
      if (dw) dw[c] = HL_ST_##SUF(sw);                                                                       \
      if (db) db[c] = HL_ST_##SUF(sb);                                                                       \
    }                                                                                                        \
    free(pw);                                                                                                \
    free(pb);                                                                                                \
  }

HL_FOR_FLOAT_TYPES(LAYER_NORM_KERNEL)

void hl_cpu_layer_norm(hl_dtype t, void *y, void *mean, void *rstd, const void *x, const void *w, const void *b,
                       int64_t rows, int64_t cols, double eps) {
  switch (t) {
    case HL_F64: layer_norm_F64(y, mean, rstd, x, w, b, rows, cols, eps); break;
    case HL_F32: layer_norm_F32(y, mean, rstd, x, w, b, rows, cols, (float)eps); break;
    case HL_F16: layer_norm_F16(y, mean, rstd, x, w, b, rows, cols, (float)eps); break;
    case HL_BF16: layer_norm_BF16(y, mean, rstd, x, w, b, rows, cols, (float)eps); break;
    default: break;
  }
}

void hl_cpu_layer_norm_backward(hl_dtype t, void *dx, void *dw, void *db, const void *dy, const void *x,
                                const void *w, const void *mean, const void *rstd, int64_t rows, int64_t cols) {
  switch (t) {
    case HL_F64: layer_norm_backward_F64(dx, dw, db, dy, x, w, mean, rstd, rows, cols); break;
    case HL_F32: layer_norm_backward_F32(dx, dw, db, dy, x, w, mean, rstd, rows, cols); break;
    case HL_F16: layer_norm_backward_F16(dx, dw, db, dy, x, w, mean, rstd, rows, cols); break;
    case HL_BF16: layer_norm_backward_BF16(dx, dw, db, dy, x, w, mean, rstd, rows, cols); break;
    default: break;
  }
}

/* ------------------------------------------------------- cross-entropy -- */

#define CROSS_ENTROPY_KERNEL(SUF, T, CT, CS)                                                                  \
  static void cross_entropy_##SUF(T *loss, CT *row_loss, CT *lse, const T *x, const int32_t *tg, int64_t rows, \
                                  int64_t cols, int32_t *bad) {                                               \
    int32_t nbad = 0;                                                                                         \
    _Pragma("omp parallel for schedule(static) reduction(+ : nbad) if (rows * cols >= HL_PAR_MIN)")           \
    for (int64_t r = 0; r < rows; r++) {                                                                      \
      const T *row = x + r * cols;                                                                            \
      CT m = lane_max_##SUF(row, cols);                                                                       \
      CT s = lane_sum_exp_##SUF(row, cols, m, NULL);                                                          \
      CT l = m + hl_log_##CS(s);                                                                              \
      lse[r] = l;                                                                                             \
      if (tg[r] < 0 || tg[r] >= cols) {                                                                       \
        nbad++;                                                                                               \
        row_loss[r] = (CT)NAN;                                                                                \
      } else {                                                                                                \
        row_loss[r] = l - (CT)HL_LD_##SUF(row[tg[r]]);                                                        \
      }                                                                                                       \
    }                                                                                                         \
    *bad = nbad;                                                                                              \
    CT acc[HL_LANES] = {0};                                                                                   \
    HL_LANE_LOOP(rows, acc[lane] += row_loss[i];);                                                            \
    HL_FOLD_LANES(acc);                                                                                       \
    *loss = HL_ST_##SUF(acc[0] / (CT)rows);                                                                   \
  }                                                                                                           \
  HL_VECTOR_CLONES static void cross_entropy_backward_row_##SUF(T *dx, const T *x, int32_t target, CT lse,   \
                                                                CT g, int64_t n) {                            \
    for (int64_t i = 0; i < n; i++) dx[i] = HL_ST_##SUF(hl_exp_##CS((CT)HL_LD_##SUF(x[i]) - lse) * g);       \
    if (target >= 0 && target < n)                                                                            \
      dx[target] = HL_ST_##SUF((hl_exp_##CS((CT)HL_LD_##SUF(x[target]) - lse) - (CT)1) * g);                  \
  }                                                                                                           \
  static void cross_entropy_backward_##SUF(T *dx, const T *x, const int32_t *tg, const CT *lse, const T *dloss, \
                                           int64_t rows, int64_t cols) {                                      \
    const CT g = (CT)HL_LD_##SUF(*dloss) / (CT)rows;                                                          \
    _Pragma("omp parallel for schedule(static) if (rows * cols >= HL_PAR_MIN)")                               \
    for (int64_t r = 0; r < rows; r++)                                                                        \
      cross_entropy_backward_row_##SUF(dx + r * cols, x + r * cols, tg[r], lse[r], g, cols);                  \
  }

HL_FOR_FLOAT_TYPES(CROSS_ENTROPY_KERNEL)

void hl_cpu_cross_entropy(hl_dtype t, void *loss, void *row_loss, void *lse, const void *x, const int32_t *targets,
                          int64_t rows, int64_t cols, int32_t *bad) {
  switch (t) {
    case HL_F64: cross_entropy_F64(loss, row_loss, lse, x, targets, rows, cols, bad); break;
    case HL_F32: cross_entropy_F32(loss, row_loss, lse, x, targets, rows, cols, bad); break;
    case HL_F16: cross_entropy_F16(loss, row_loss, lse, x, targets, rows, cols, bad); break;
    case HL_BF16: cross_entropy_BF16(loss, row_loss, lse, x, targets, rows, cols, bad); break;
    default: break;
  }
}

void hl_cpu_cross_entropy_backward(hl_dtype t, void *dx, const void *x, const int32_t *targets, const void *lse,
                                   const void *dloss, int64_t rows, int64_t cols) {
  switch (t) {
    case HL_F64: cross_entropy_backward_F64(dx, x, targets, lse, dloss, rows, cols); break;
    case HL_F32: cross_entropy_backward_F32(dx, x, targets, lse, dloss, rows, cols); break;
    case HL_F16: cross_entropy_backward_F16(dx, x, targets, lse, dloss, rows, cols); break;
    case HL_BF16: cross_entropy_backward_BF16(dx, x, targets, lse, dloss, rows, cols); break;
    default: break;
  }
}

void hl_cpu_one_hot(hl_dtype t, void *dst, const int32_t *targets, int64_t rows, int64_t cols) {
  const size_t es = hl_dtype_size(t);
  memset(dst, 0, (size_t)(rows * cols) * es);
  unsigned char one[8];
  hl_cpu_fill(one, t, 1, 1.0);
  for (int64_t r = 0; r < rows; r++)
    if (targets[r] >= 0 && targets[r] < cols) memcpy((char *)dst + (size_t)(r * cols + targets[r]) * es, one, es);
}
