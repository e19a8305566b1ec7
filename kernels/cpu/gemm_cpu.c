/* gemm_cpu.c — GEMM on the CPU through OpenBLAS (opened by kernels/cpu/blas.c)
 * and, for bf16, oneDNN.
 *
 * fp32 and fp64 go straight to sgemm/dgemm. bf16 A and B go to oneDNN's
 * matmul on the CPU's bf16 units when it takes them (onednn_gemm.h says
 * when). fp16 operands, and bf16 ones oneDNN does not take, get what a CPU
 * without half-precision matrix units actually does with them: widen to
 * fp32 (exact), sgemm (fp32 accumulation), round the result to the output
 * type once (RNE). The widening is O(mk + kn) against the product's O(mnk);
 * it runs on the CPU's conversion instructions (kernels/cpu/half_arrays.h's
 * operand widening: a signalling NaN may come out quiet, as the product leaves it) into fp32
 * working copies that each calling thread keeps between calls, so a call
 * pays neither malloc nor page faults for them. Those copies stay allocated
 * (at the size of the largest operands seen) until the thread exits.
 *
 * A call runs one of four ways:
 *   - one product (batch 1) with a half A or C, at least 64 rows of C per
 *     thread: blocks of C's rows shared among the threads, each widened,
 *     multiplied (single-threaded sgemm) and rounded by one thread while
 *     its copies are in that core's cache (parallel_block_rows says when);
 *   - a batch of small entries (an attention product's heads): the entries
 *     are shared out among the OpenMP threads, each entry converted and
 *     multiplied by one thread with a single-threaded sgemm, so its copies
 *     stay in that core's cache and no thread waits for another between
 *     entries (entries_in_parallel says when);
 *   - otherwise a group of batch entries per pass: the conversions shared
 *     among the threads in fixed blocks, then OpenBLAS shares each sgemm.
 *     That is the pool the OpenMP build of OpenBLAS, which halflab loads
 *     (kernels/cpu/blas.c), runs on, so the two do not compete for cores
 *     (with a pthreads OpenBLAS they did). Measured on 2 cores, fp16 path /
 *     fp32 path at 1024^3: 0.80 with serial conversions, 0.99-1.03 with
 *     these;
 *   - an entry whose copies would exceed kGroupBytes (GPT-2's logits) in
 *     blocks of C's rows, so the copies stay bounded.
 *
 * A row bias (linear's) rides in the fp32 copy of a half C: each row of the
 * copy starts as the bias, and sgemm accumulates onto it (beta = 1), so the
 * sum is rounded once and no half C is written only to be widened again.
 * Where C is fp32, or oneDNN runs the product, the bias is written into C
 * first.
 *
 * An outer batch (batch_outer) goes to oneDNN whole (a fourth dimension);
 * on the widening path its entries run one per thread in one parallel pass
 * where they are small (entries_in_parallel), else one call per group.
 *
 * Semantics the callers rely on, on either path (tests/gemm/test_gemm_cpu.c,
 * test_gemm_onednn.c):
 *   - row-major, op() per trans flag, lda/ldb/ldc row strides of the stored
 *     matrices, stride_* between batch entries (batch < 1 counts as 1);
 *   - beta != 0 reads C (a half C is widened first); beta == 0 ignores C;
 *   - m == 0 or n == 0 touches nothing; k == 0 gives C = beta C (zeros for
 *     beta == 0, C not read), whatever lda and ldb say;
 *   - operand types may differ (e.g. fp16 A and B, fp32 C).
 */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fatal.h"
#include "formats/half.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/half_arrays.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/gemm.h"

static bool cpu_gemm_supports(const hl_gemm_desc *d, char *why, size_t len) {
  const char *no = NULL;
  if (d->compute == HL_COMPUTE_F32_FAST_TF32)
    no = "tf32 is a tensor-core mode; this CPU backend has no tf32 arithmetic";
  else if (d->compute == HL_COMPUTE_F16)
    no = "fp16 accumulation is a GPU mode; the CPU backend accumulates half inputs in fp32";
  else if (d->block_scaling != HL_GEMM_SCALE_PER_TENSOR)
    no = "block-scaled MXFP8 and NVFP4 GEMMs need the tensor cores of sm_100 or newer";
  else if (d->a_type == HL_E4M3 || d->b_type == HL_E4M3 || d->c_type == HL_E4M3)
    no = "fp8 GEMM needs tensor cores of sm_89 or newer";
  else if (d->compute == HL_COMPUTE_F64 &&
           (d->a_type != HL_F64 || d->b_type != HL_F64 || d->c_type != HL_F64))
    no = "fp64 compute needs fp64 operands";
  else if (d->compute != HL_COMPUTE_F64 &&
           (d->a_type == HL_F64 || d->b_type == HL_F64 || d->c_type == HL_F64))
    no = "fp64 operands need fp64 compute";
  if (no && why && len) {
    strncpy(why, no, len - 1);
    why[len - 1] = '\0';
  }
  return no == NULL;
}

/* ---- per-thread fp32 working copies (A, B, C), grown as needed */
/* Slots: 0-2 the A, B and C copies of the entries a thread works on, 3-4
 * the A and B copies every entry shares (batch stride 0), which the calling
 * thread makes once and the others read */
enum { kSlots = 7 };
enum { kSlotBias = 5, kSlotBiasRow = 6 }; /* the bias widened to fp32; a row of it in C's type */
typedef struct {
  float *p[kSlots];
  size_t cap[kSlots];
} workspace;

static _Thread_local workspace ws_;
static pthread_key_t ws_key_;
static pthread_once_t ws_once_ = PTHREAD_ONCE_INIT;

static void ws_release(void *w) {
  workspace *ws = w;
  for (int i = 0; i < kSlots; i++) free(ws->p[i]), ws->p[i] = NULL, ws->cap[i] = 0;
}
static void ws_make_key(void) { pthread_key_create(&ws_key_, ws_release); }

/* What slot 3 holds: the fp32 copy of which stored half A (a_as_before in
 * kernels/gemm.h), valid until a call that does not promise it */
typedef struct {
  const void *src;
  hl_dtype t;
  int64_t rows, cols, ld;
  bool valid;
} widened_a;
static _Thread_local widened_a shared_a_;

static float *ws_get(int slot, size_t elems) {
  if (ws_.cap[slot] < elems) {
    if (slot == 3) shared_a_.valid = false;
    pthread_once(&ws_once_, ws_make_key);
    pthread_setspecific(ws_key_, &ws_); /* frees the copies when this thread exits */
    free(ws_.p[slot]);
    ws_.p[slot] = HL_CHECK_ALLOC(malloc(sizeof(float) * elems), sizeof(float) * elems, "a GEMM's fp32 working copies");
    ws_.cap[slot] = elems;
  }
  return ws_.p[slot];
}

size_t hl_cpu_gemm_working_bytes(void) {
  size_t bytes = 0;
  for (int i = 0; i < kSlots; i++) bytes += sizeof(float) * ws_.cap[i];
  return bytes;
}

void hl_cpu_gemm_release_working(void) {
  ws_release(&ws_);
  shared_a_.valid = false;
}

/* A batch of half matrices in memory: `entries` matrices of rows x cols,
 * row stride ld, entry stride `stride` */
typedef struct {
  int64_t entries, rows, cols, ld, stride;
} half_layout;

/* Conversions in blocks of this many elements, shared among the OpenMP
 * threads (OpenBLAS's OpenMP build runs its sgemm on the same pool next):
 * an attention product's 96 small matrices, or one large one, alike. */
enum { kConvertBlock = 1 << 14 };
/* At most this much of fp32 copies per group of batch entries (an entry
 * larger than that is a group of its own) */
static const int64_t kGroupBytes = 32 << 20;

static int64_t elements_of(half_layout L) { return L.entries * L.rows * L.cols; }

/* Between the stored half matrices (layout L) and packed fp32 copies, entry
 * after entry (rows x cols each): to_f32 widens half -> fp32, else narrows
 * fp32 -> half. Rows that lie end to end convert as one run. The blocks are
 * an orphaned worksharing loop without a barrier at its end: inside a
 * parallel region they are shared among the team, and several conversions
 * in one region run back to back (the region's end is the barrier);
 * outside one, the calling thread does them all. convert() is one such
 * conversion in a region of its own. */
static void convert_blocks(bool to_f32, hl_dtype t, uint16_t *half, float *packed, half_layout L) {
  const bool flat = L.ld == L.cols && (L.stride == L.rows * L.cols || L.entries == 1);
  const int64_t per_row = flat ? L.entries * L.rows * L.cols : L.cols, runs = flat ? 1 : L.entries * L.rows;
  const int64_t blocks_per_run = (per_row + kConvertBlock - 1) / kConvertBlock, blocks = runs * blocks_per_run;
#pragma omp for schedule(static) nowait
  for (int64_t b = 0; b < blocks; b++) {
    const int64_t run = b / blocks_per_run, lo = (b % blocks_per_run) * kConvertBlock;
    const int64_t n = per_row - lo < kConvertBlock ? per_row - lo : kConvertBlock;
    const int64_t entry = flat ? 0 : run / L.rows, row = flat ? 0 : run % L.rows;
    uint16_t *h = half + entry * L.stride + row * L.ld + lo;
    float *f = packed + run * per_row + lo;
    if (to_f32) hl_cpu_widen_operand(t, h, f, (size_t)n);
    else hl_cpu_narrow(t, f, h, (size_t)n);
  }
}

static void convert(bool to_f32, hl_dtype t, uint16_t *half, float *packed, half_layout L) {
#pragma omp parallel if (elements_of(L) >= 4 * kConvertBlock && !omp_in_parallel())
  convert_blocks(to_f32, t, half, packed, L);
}

/* k == 0: C = beta C without BLAS, which would refuse the leading
 * dimensions an empty operand may carry (lda = 0). beta == 0 writes zeros
 * without reading C, as BLAS does (C may hold NaN). */
static void scale_only(const hl_gemm_desc *d, int64_t batch) {
  for (int64_t i = 0; i < batch; i++)
    for (int64_t r = 0; r < d->m; r++)
      for (int64_t col = 0; col < d->n; col++) {
        const int64_t at = i * d->stride_c + r * d->ldc + col;
        switch (d->c_type) {
          case HL_F64: {
            double *c = (double *)d->c + at;
            *c = d->beta == 0.0f ? 0.0 : (double)d->beta * *c;
            break;
          }
          case HL_F32: {
            float *c = (float *)d->c + at;
            *c = d->beta == 0.0f ? 0.0f : d->beta * *c;
            break;
          }
          default: {
            uint16_t *c = (uint16_t *)d->c + at;
            const bool f16 = d->c_type == HL_F16;
            const float v = d->beta == 0.0f ? 0.0f : d->beta * (f16 ? hl_f16_to_f32(*c) : hl_bf16_to_f32(*c));
            *c = f16 ? hl_f32_to_f16(v) : hl_f32_to_bf16(v);
            break;
          }
        }
      }
}

/* Entries first .. first + n - 1 of a half operand (rows x cols, row
 * stride ld, entry stride `stride`), widened into the calling thread's
 * working copy `slot`, packed */
static const float *widened_entries(int slot, hl_dtype t, const void *src, int64_t first, int64_t n, int64_t rows,
                                    int64_t cols, int64_t ld, int64_t stride) {
  float *w = ws_get(slot, (size_t)(n * rows * cols));
  convert(true, t, (uint16_t *)src + first * stride, w, (half_layout){n, rows, cols, ld, stride});
  return w;
}

/* C = bias in every row, in C's own type (a half bias is exact in it when
 * the types agree, as autocast makes them): the row converted once, then
 * copied row by row */
static void bias_into_c(const hl_gemm_desc *d, int64_t batch) {
  const size_t es = hl_dtype_size(d->c_type), row_bytes = es * (size_t)d->n;
  char *row = (char *)ws_get(kSlotBiasRow, (size_t)(d->n * 2)); /* n fp64 at most */
  if (d->bias_type == d->c_type) memcpy(row, d->bias, row_bytes);
  else
    for (int64_t j = 0; j < d->n; j++) hl_gemm_store(row, d->c_type, j, hl_gemm_load(d->bias, d->bias_type, j));
  const int64_t rows = batch * d->m;
#pragma omp parallel for schedule(static) if (rows * d->n >= 4 * kConvertBlock && !omp_in_parallel())
  for (int64_t r = 0; r < rows; r++)
    memcpy((char *)d->c + (size_t)((r / d->m) * d->stride_c + (r % d->m) * d->ldc) * es, row, row_bytes);
}

/* The bias in fp32: the data itself, or widened once into the calling
 * thread's slot (read by every thread of the call) */
static const float *bias_f32(const hl_gemm_desc *d) {
  if (!d->bias) return NULL;
  if (d->bias_type == HL_F32) return d->bias;
  float *w = ws_get(kSlotBias, (size_t)d->n);
  if (d->bias_type == HL_F16 || d->bias_type == HL_BF16) hl_cpu_widen_operand(d->bias_type, d->bias, w, (size_t)d->n);
  else
    for (int64_t j = 0; j < d->n; j++) w[j] = (float)hl_gemm_load(d->bias, d->bias_type, j);
  return w;
}

/* A half C's fp32 copy before the product (Lc's entries of rows x cols,
 * packed): the bias in every row, or C widened when beta reads it, or
 * nothing. Blocks as in convert_blocks (orphaned, no barrier). */
static void c_copy_in_blocks(const hl_gemm_desc *d, const float *bias, uint16_t *c_half, float *c, half_layout Lc) {
  if (bias) {
    const int64_t rows = Lc.entries * Lc.rows;
#pragma omp for schedule(static) nowait
    for (int64_t r = 0; r < rows; r++) memcpy(c + r * Lc.cols, bias, sizeof(float) * (size_t)Lc.cols);
  } else if (d->beta != 0.0f) {
    convert_blocks(true, d->c_type, c_half, c, Lc);
  }
}

static void c_copy_in(const hl_gemm_desc *d, const float *bias, uint16_t *c_half, float *c, half_layout Lc) {
#pragma omp parallel if (elements_of(Lc) >= 4 * kConvertBlock && !omp_in_parallel())
  c_copy_in_blocks(d, bias, c_half, c, Lc);
}

/* Between rows x cols half elements (row stride ldh) and fp32 ones (row
 * stride ldf), on the calling thread alone: to_f32 widens half -> fp32,
 * else narrows fp32 -> half. The conversion is chosen once per call, not
 * per row (attention's heads are rows of 64 elements). */
static void convert_rows(bool to_f32, hl_dtype t, uint16_t *half, int64_t ldh, float *f, int64_t ldf, int64_t rows,
                         int64_t cols) {
  const hl_cpu_half_path path = hl_cpu_half_path_chosen(t);
  const hl_cpu_widen_fn widen = hl_cpu_half_path_widen_operand(t, path);
  const hl_cpu_narrow_fn narrow = hl_cpu_half_path_narrow(t, path);
  const bool flat = ldh == cols && ldf == cols;
  const int64_t runs = flat ? 1 : rows, n = flat ? rows * cols : cols;
  for (int64_t r = 0; r < runs; r++) {
    if (to_f32) widen(half + r * ldh, f + r * ldf, (size_t)n);
    else narrow(f + r * ldf, half + r * ldh, (size_t)n);
  }
}

/* rows of a half C's fp32 copy (packed, n wide) before the product, on the
 * calling thread: the bias in every row, or C widened when beta reads it,
 * or nothing (c_copy_in_blocks shared among threads) */
static void c_start_rows(const hl_gemm_desc *d, const float *bias, uint16_t *c_half, float *c, int64_t rows) {
  if (bias)
    for (int64_t r = 0; r < rows; r++) memcpy(c + r * d->n, bias, sizeof(float) * (size_t)d->n);
  else if (d->beta != 0.0f)
    convert_rows(true, d->c_type, c_half, d->ldc, c, d->n, rows, d->n);
}

/* fp32 views of one batch entry's operands: the data itself or the calling
 * thread's widened copies (the shared ones made beforehand) */
typedef struct {
  const float *a, *b;
  float *c;
  int64_t lda, ldb, ldc;
} entry_views;

/* Entry i on the calling thread alone (inside a parallel region): widen
 * what is half into its own working copies, one sgemm (single-threaded:
 * OpenBLAS's OpenMP build runs serially inside a parallel region), round C
 * back. */
static void entry_product(const hl_gemm_desc *d, int64_t i, const float *wa_shared, const float *wb_shared,
                          const float *bias) {
  const int64_t a_rows = d->trans_a ? d->k : d->m, a_cols = d->trans_a ? d->m : d->k;
  const int64_t b_rows = d->trans_b ? d->n : d->k, b_cols = d->trans_b ? d->k : d->n;
  entry_views v = {(const float *)d->a + i * d->stride_a, (const float *)d->b + i * d->stride_b,
                   (float *)d->c + i * d->stride_c, d->lda, d->ldb, d->ldc};
  if (d->a_type != HL_F32) {
    float *w = wa_shared ? (float *)wa_shared : ws_get(0, (size_t)(a_rows * a_cols));
    if (!wa_shared)
      convert_rows(true, d->a_type, (uint16_t *)d->a + i * d->stride_a, d->lda, w, a_cols, a_rows, a_cols);
    v.a = w, v.lda = a_cols;
  }
  if (d->b_type != HL_F32) {
    float *w = wb_shared ? (float *)wb_shared : ws_get(1, (size_t)(b_rows * b_cols));
    if (!wb_shared)
      convert_rows(true, d->b_type, (uint16_t *)d->b + i * d->stride_b, d->ldb, w, b_cols, b_rows, b_cols);
    v.b = w, v.ldb = b_cols;
  }
  uint16_t *c_half = d->c_type != HL_F32 ? (uint16_t *)d->c + i * d->stride_c : NULL;
  if (c_half) {
    v.c = ws_get(2, (size_t)(d->m * d->n)), v.ldc = d->n;
    c_start_rows(d, bias, c_half, v.c, d->m);
  }
  hl_blas()->sgemm(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans, d->trans_b ? CblasTrans : CblasNoTrans,
                   (int)d->m, (int)d->n, (int)d->k, d->alpha, v.a, (int)v.lda, v.b, (int)v.ldb, bias ? 1.0f : d->beta,
                   v.c, (int)v.ldc);
  if (c_half) convert_rows(false, d->c_type, c_half, d->ldc, v.c, d->n, d->m, d->n);
}

/* Bytes of the fp32 copies one batch entry needs (an operand every entry
 * shares is not counted: it is widened once) */
static int64_t entry_bytes_of(const hl_gemm_desc *d) {
  const int64_t a_elems = d->a_type != HL_F32 && d->stride_a ? d->m * d->k : 0;
  const int64_t b_elems = d->b_type != HL_F32 && d->stride_b ? d->k * d->n : 0;
  return 4 * (a_elems + b_elems + (d->c_type != HL_F32 ? d->m * d->n : 0));
}

/* An entry whose A and C copies alone would exceed kGroupBytes (GPT-2's
 * logits: 12288 x 50257 per product, 2.5 GB in fp32) runs in blocks of C's
 * rows: A's rows (or, transposed, its columns) and C's rows of one block
 * widened at a time, B widened once for all of them. The copies then stay
 * near kGroupBytes, and each block is still a product large enough for
 * OpenBLAS to share. */
enum { kMinBlockRows = 256 };

static void entry_in_row_blocks(const hl_gemm_desc *d, int64_t i, const float *wb_shared, const float *bias) {
  const int64_t b_rows = d->trans_b ? d->n : d->k, b_cols = d->trans_b ? d->k : d->n;
  const bool half_a = d->a_type != HL_F32, half_c = d->c_type != HL_F32;
  const float *b = (const float *)d->b + i * d->stride_b;
  int64_t ldb = d->ldb;
  if (d->b_type != HL_F32) {
    b = wb_shared ? wb_shared : widened_entries(4, d->b_type, d->b, i, 1, b_rows, b_cols, d->ldb, d->stride_b);
    ldb = b_cols;
  }
  const int64_t row_bytes = 4 * ((half_a ? d->k : 0) + (half_c ? d->n : 0));
  int64_t rows = kGroupBytes / row_bytes;
  rows = rows < kMinBlockRows ? kMinBlockRows : rows;
  const size_t a_size = hl_dtype_size(d->a_type), c_size = hl_dtype_size(d->c_type);
  for (int64_t r = 0; r < d->m; r += rows) {
    const int64_t mb = d->m - r < rows ? d->m - r : rows;
    /* this block's A: rows r.. of A, or columns r.. of the stored A^T */
    const char *a_src = (const char *)d->a + (size_t)(i * d->stride_a + (d->trans_a ? r : r * d->lda)) * a_size;
    char *c_dst = (char *)d->c + (size_t)(i * d->stride_c + r * d->ldc) * c_size;
    const float *a = (const float *)a_src;
    int64_t lda = d->lda;
    if (half_a) {
      const int64_t a_rows = d->trans_a ? d->k : mb, a_cols = d->trans_a ? mb : d->k;
      a = widened_entries(0, d->a_type, a_src, 0, 1, a_rows, a_cols, d->lda, 0);
      lda = a_cols;
    }
    float *c = (float *)c_dst;
    int64_t ldc = d->ldc;
    const half_layout Lc = {1, mb, d->n, d->ldc, 0};
    if (half_c) {
      c = ws_get(2, (size_t)(mb * d->n));
      c_copy_in(d, bias, (uint16_t *)c_dst, c, Lc);
      ldc = d->n;
    }
    hl_blas()->sgemm(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans, d->trans_b ? CblasTrans : CblasNoTrans,
                     (int)mb, (int)d->n, (int)d->k, d->alpha, a, (int)lda, b, (int)ldb, bias ? 1.0f : d->beta, c,
                     (int)ldc);
    if (half_c) convert(false, d->c_type, (uint16_t *)c_dst, c, Lc);
  }
}

/* A batch of entries too small to share among the threads one by one (an
 * attention product's heads: 128 x 128 x 64 each in the small preset) runs
 * one entry per thread at a time instead: each entry's copies stay in its
 * core's cache, and no thread waits for the others between entries. Above
 * kShareEntry multiply-adds an entry is large enough for OpenBLAS to share,
 * which it then does, unless there are entries enough to keep every thread
 * busy on its own. Measured on 2 cores, the small preset's attention
 * products (16 calls of 6 heads): see docs/core.md, "Threads". */
static const double kShareEntry = 1 << 24;

static bool entries_in_parallel(const hl_gemm_desc *d, int64_t batch) {
  const int threads = omp_get_max_threads();
  if (threads < 2 || batch < threads || omp_in_parallel()) return false;
  return batch >= 4 * threads || (double)d->m * (double)d->n * (double)d->k <= kShareEntry;
}

/* Group i of an outer batch, as a call of its own. */
static hl_gemm_desc group_of(const hl_gemm_desc *d, int64_t i) {
  hl_gemm_desc g = *d;
  g.batch_outer = 1;
  g.outer_stride_a = g.outer_stride_b = g.outer_stride_c = 0;
  g.a = (const char *)d->a + (size_t)(i * d->outer_stride_a) * hl_dtype_size(d->a_type);
  g.b = (const char *)d->b + (size_t)(i * d->outer_stride_b) * hl_dtype_size(d->b_type);
  g.c = (char *)d->c + (size_t)(i * d->outer_stride_c) * hl_dtype_size(d->c_type);
  return g;
}

/* An outer batch whose entries are small enough to run one per thread
 * (attention's heads: 16 x 6 products of 128 x 128 x 64 in the small
 * preset) runs in one parallel pass over all of them: one start of the
 * thread pool instead of one per group, which with OMP_WAIT_POLICY=passive
 * costs tens of microseconds each. Otherwise one call per group. */
static void outer_groups(const hl_gemm_desc *d) {
  const int64_t batch = d->batch > 0 ? d->batch : 1, total = d->batch_outer * batch;
  const bool product = d->m > 0 && d->n > 0 && d->k > 0;
  if (product && !d->bias && d->compute != HL_COMPUTE_F64 && entries_in_parallel(d, total)) {
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < total; e++) {
      const hl_gemm_desc g = group_of(d, e / batch);
      entry_product(&g, e % batch, NULL, NULL, NULL);
    }
    return;
  }
  for (int64_t i = 0; i < d->batch_outer; i++) {
    const hl_gemm_desc g = group_of(d, i);
    hl_cpu_gemm_blas(&g);
  }
}

/* One product (batch 1) with a half A or C, m large enough: blocks of C's
 * rows shared among the threads, each block widened, multiplied by a
 * single-threaded sgemm and rounded back by one thread, so its copies are
 * still in that core's cache when sgemm and the rounding read them, and the
 * whole product is one start of the thread pool instead of three (widen,
 * sgemm, round). Each block's sgemm packs B again: kRowBlockMax rows keep
 * that a small share of the block's work (measured on 2 cores, the small
 * preset's linears in fp16: 3-10% faster than widening whole operands for
 * a shared sgemm, 128-row blocks slower). A transposed A (a linear's dW,
 * k = the tokens) only where its fp32 copy is ready (a_as_before): widened
 * there in blocks of columns it was up to 8% slower, read from the ready
 * copy 10% faster over the small preset's dW products. */
enum { kRowBlockMax = 256, kRowBlockMin = 64 };
/* At most this much of A and C copies per block (per thread) */
static const int64_t kRowBlockBytes = 8 << 20;

/* Rows per block where a product takes that path, else 0 (a_ready: A's
 * whole fp32 copy is made already) */
static int64_t parallel_block_rows(const hl_gemm_desc *d, int64_t batch, bool a_ready) {
  const int threads = omp_get_max_threads();
  const bool half_a = d->a_type != HL_F32, half_c = d->c_type != HL_F32;
  if (threads < 2 || batch != 1 || (d->trans_a && !a_ready) || omp_in_parallel() || !(half_a || half_c)) return 0;
  /* as many blocks for every thread, each at most kRowBlockMax rows */
  const int64_t per_thread = (d->m + threads * kRowBlockMax - 1) / (threads * kRowBlockMax);
  const int64_t rows = (d->m + threads * per_thread - 1) / (threads * per_thread);
  const int64_t row_bytes = 4 * ((half_a ? d->k : 0) + (half_c ? d->n : 0));
  return rows >= kRowBlockMin && rows * row_bytes <= kRowBlockBytes ? rows : 0;
}

/* The product in parallel blocks of `rows` of C's rows. A half A is widened
 * block by block into wa_whole at its own place (the fp32 copy a later
 * a_as_before call reuses; a_ready: it is that copy already, the only way
 * a transposed A comes), or, where wa_whole is NULL, into each thread's own
 * copy. A half B is widened whole into wb first, by all the threads. */
static void product_in_parallel_blocks(const hl_gemm_desc *d, int64_t rows, const float *bias, float *wa_whole,
                                       bool a_ready, float *wb) {
  const bool half_a = d->a_type != HL_F32, half_c = d->c_type != HL_F32;
  const int64_t b_rows = d->trans_b ? d->n : d->k, b_cols = d->trans_b ? d->k : d->n;
  const half_layout Sb = {1, b_rows, b_cols, d->ldb, 0};
  const float *b = wb ? wb : (const float *)d->b;
  const int64_t ldb = wb ? b_cols : d->ldb, blocks = (d->m + rows - 1) / rows;
#pragma omp parallel
  {
    if (wb) {
      convert_blocks(true, d->b_type, (uint16_t *)d->b, wb, Sb);
#pragma omp barrier
    }
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; blk++) {
      const int64_t r = blk * rows, mb = d->m - r < rows ? d->m - r : rows;
      /* this block's A: rows r.. of A, or columns r.. of the stored A^T */
      const float *a = (const float *)d->a + r * d->lda;
      int64_t lda = d->lda;
      if (d->trans_a) {
        a = wa_whole + r, lda = d->m;
      } else if (half_a) {
        float *dst = wa_whole ? wa_whole + r * d->k : ws_get(0, (size_t)(mb * d->k));
        if (!a_ready)
          convert_rows(true, d->a_type, (uint16_t *)d->a + r * d->lda, d->lda, dst, d->k, mb, d->k);
        a = dst, lda = d->k;
      }
      float *c = (float *)d->c + r * d->ldc;
      int64_t ldc = d->ldc;
      uint16_t *c_half = half_c ? (uint16_t *)d->c + r * d->ldc : NULL;
      if (c_half) {
        c = ws_get(2, (size_t)(mb * d->n)), ldc = d->n;
        c_start_rows(d, bias, c_half, c, mb);
      }
      hl_blas()->sgemm(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans, d->trans_b ? CblasTrans : CblasNoTrans,
                       (int)mb, (int)d->n, (int)d->k, d->alpha, a, (int)lda, b, (int)ldb, bias ? 1.0f : d->beta, c,
                       (int)ldc);
      if (c_half) convert_rows(false, d->c_type, c_half, d->ldc, c, d->n, mb, d->n);
    }
  }
}

/* Is slot 3 already the fp32 copy of d's A (rows x cols as stored)? */
static bool shared_a_ready(const hl_gemm_desc *d, int64_t rows, int64_t cols) {
  const widened_a *w = &shared_a_;
  return d->a_as_before && w->valid && w->src == d->a && w->t == d->a_type && w->rows == rows && w->cols == cols &&
         w->ld == d->lda;
}

/* hl_cpu_gemm_blas's general case: half operands are widened into packed
 * fp32 copies a group of batch entries at a time (one conversion pass over
 * the group, shared among the threads), the group as large as keeps the
 * copies under kGroupBytes; each entry's sgemm is shared among the threads
 * by OpenBLAS. wa_shared / wb_shared: the copies of an operand every entry
 * shares, still to be filled in the first group's pass when shared_pending
 * (A's only when !a_ready). */
static void product_in_groups(const hl_gemm_desc *d, const float *bias, float *wa_shared, float *wb_shared,
                              bool shared_pending, bool a_ready) {
  const CBLAS_TRANSPOSE ta = d->trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = d->trans_b ? CblasTrans : CblasNoTrans;
  const int64_t batch = d->batch > 0 ? d->batch : 1;
  const int64_t a_rows = d->trans_a ? d->k : d->m, a_cols = d->trans_a ? d->m : d->k;
  const int64_t b_rows = d->trans_b ? d->n : d->k, b_cols = d->trans_b ? d->k : d->n;
  const bool half_a = d->a_type != HL_F32, half_b = d->b_type != HL_F32, half_c = d->c_type != HL_F32;
  const half_layout Sa = {1, a_rows, a_cols, d->lda, 0}, Sb = {1, b_rows, b_cols, d->ldb, 0};
  const int64_t entry_bytes = entry_bytes_of(d);
  int64_t group = entry_bytes ? kGroupBytes / entry_bytes : batch;
  group = group < 1 ? 1 : group > batch ? batch : group;
  for (int64_t first = 0; first < batch; first += group) {
    const int64_t n = batch - first < group ? batch - first : group;
    /* fp32 views of this group's operands: the data itself or the copies */
    const float *a = (const float *)d->a + first * d->stride_a, *b = (const float *)d->b + first * d->stride_b;
    float *c = (float *)d->c + first * d->stride_c;
    int64_t lda = d->lda, ldb = d->ldb, ldc = d->ldc, sa = d->stride_a, sb = d->stride_b, sc = d->stride_c;
    /* the copies this group needs, made by the calling thread (its working
     * copies), then filled in one parallel pass: A, B and C's start share
     * one start of the thread pool */
    float *wa = NULL, *wb = NULL;
    const half_layout La = {n, a_rows, a_cols, d->lda, d->stride_a}, Lb = {n, b_rows, b_cols, d->ldb, d->stride_b};
    if (half_a) {
      a = wa_shared ? wa_shared : (wa = ws_get(0, (size_t)elements_of(La)));
      lda = a_cols, sa = d->stride_a ? a_rows * a_cols : 0;
    }
    if (half_b) {
      b = wb_shared ? wb_shared : (wb = ws_get(1, (size_t)elements_of(Lb)));
      ldb = b_cols, sb = d->stride_b ? b_rows * b_cols : 0;
    }
    uint16_t *c_half = half_c ? (uint16_t *)d->c + first * d->stride_c : NULL;
    const half_layout Lc = {n, d->m, d->n, d->ldc, d->stride_c};
    if (half_c) {
      c = ws_get(2, (size_t)(n * d->m * d->n));
      ldc = d->n, sc = d->m * d->n;
    }
    /* beta == 0 and no bias: sgemm does not read C, so neither do we */
    const bool c_in = half_c && (bias || d->beta != 0.0f);
    const bool shared_now = shared_pending, widen_a = shared_now && wa_shared && !a_ready;
    shared_pending = false;
    const int64_t work = (wa ? elements_of(La) : 0) + (wb ? elements_of(Lb) : 0) + (c_in ? elements_of(Lc) : 0) +
                         (widen_a ? elements_of(Sa) : 0) + (shared_now && wb_shared ? elements_of(Sb) : 0);
    const uint16_t *a_src = (const uint16_t *)d->a + first * d->stride_a, *b_src = (const uint16_t *)d->b + first * d->stride_b;
#pragma omp parallel if (work >= 4 * kConvertBlock && !omp_in_parallel())
    {
      if (widen_a) convert_blocks(true, d->a_type, (uint16_t *)d->a, wa_shared, Sa);
      if (shared_now && wb_shared) convert_blocks(true, d->b_type, (uint16_t *)d->b, wb_shared, Sb);
      if (wa) convert_blocks(true, d->a_type, (uint16_t *)a_src, wa, La);
      if (wb) convert_blocks(true, d->b_type, (uint16_t *)b_src, wb, Lb);
      if (c_in) c_copy_in_blocks(d, bias, c_half, c, Lc);
    }
    for (int64_t i = 0; i < n; i++)
      hl_blas()->sgemm(CblasRowMajor, ta, tb, (int)d->m, (int)d->n, (int)d->k, d->alpha, a + i * sa, (int)lda,
                       b + i * sb, (int)ldb, bias ? 1.0f : d->beta, c + i * sc, (int)ldc);
    if (half_c) convert(false, d->c_type, c_half, c, Lc);
  }
}

void hl_cpu_gemm_blas(const hl_gemm_desc *d) {
  if (!d->a_as_before) shared_a_.valid = false;
  if (d->m <= 0 || d->n <= 0) return;
  if (d->batch_outer > 1) {
    outer_groups(d);
    return;
  }
  if (d->k <= 0) {
    /* an empty sum: C = beta C, or (beta = 0) the bias when there is one */
    if (d->bias) bias_into_c(d, d->batch > 0 ? d->batch : 1);
    else scale_only(d, d->batch > 0 ? d->batch : 1);
    return;
  }
  const CBLAS_TRANSPOSE ta = d->trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = d->trans_b ? CblasTrans : CblasNoTrans;
  const int64_t batch = d->batch > 0 ? d->batch : 1;
  if (d->bias && (d->c_type == HL_F32 || d->c_type == HL_F64)) {
    /* an fp32 or fp64 C takes the bias in place, then the product onto it */
    hl_gemm_desc onto = *d;
    onto.bias = NULL, onto.beta = 1.0f;
    bias_into_c(d, batch);
    hl_cpu_gemm_blas(&onto);
    return;
  }
  if (d->compute == HL_COMPUTE_F64) {
    for (int64_t i = 0; i < batch; i++)
      hl_blas()->dgemm(CblasRowMajor, ta, tb, (int)d->m, (int)d->n, (int)d->k, d->alpha,
                       (const double *)d->a + i * d->stride_a, (int)d->lda, (const double *)d->b + i * d->stride_b,
                       (int)d->ldb, d->beta, (double *)d->c + i * d->stride_c, (int)d->ldc);
    return;
  }
  const int64_t a_rows = d->trans_a ? d->k : d->m, a_cols = d->trans_a ? d->m : d->k;
  const int64_t b_rows = d->trans_b ? d->n : d->k, b_cols = d->trans_b ? d->k : d->n;
  const bool half_a = d->a_type != HL_F32, half_b = d->b_type != HL_F32, half_c = d->c_type != HL_F32;
  const float *bias = bias_f32(d);
  /* an operand every entry shares (batch stride 0; both of a product
   * without a batch) is widened once: before the entries or row blocks
   * below, or in the first group's conversion pass. Slot 3 is taken only
   * on the paths that write A's whole copy (GPT-2's logits gradient would
   * ask for 2.5 GB there, and never touch it). */
  float *wb_shared = NULL;
  const half_layout Sa = {1, a_rows, a_cols, d->lda, 0}, Sb = {1, b_rows, b_cols, d->ldb, 0};
  const bool share_a = half_a && (!d->stride_a || batch == 1);
  if (half_b && (!d->stride_b || batch == 1)) wb_shared = ws_get(4, (size_t)elements_of(Sb));
  /* the previous call's A again (a linear's output gradient): its copy stands */
  const bool a_ready = share_a && shared_a_ready(d, a_rows, a_cols);
  shared_a_.valid = false; /* until slot 3 holds d's A whole */
  const bool by_entries = entries_in_parallel(d, batch);
  /* in parallel blocks of rows, A's whole copy is made block by block while
   * it fits kGroupBytes; beyond, each block is widened into its thread's own */
  const bool whole_fits = share_a && 4 * elements_of(Sa) <= kGroupBytes, whole_ready = whole_fits && a_ready;
  const int64_t block_rows = by_entries ? 0 : parallel_block_rows(d, batch, whole_ready);
  if (block_rows) {
    float *wa_whole = whole_fits ? ws_get(3, (size_t)elements_of(Sa)) : NULL;
    product_in_parallel_blocks(d, block_rows, bias, wa_whole, whole_ready, wb_shared);
    if (wa_whole) shared_a_ = (widened_a){d->a, d->a_type, a_rows, a_cols, d->lda, true};
    return;
  }
  const bool by_row_blocks = !by_entries && entry_bytes_of(d) > kGroupBytes && (half_a || half_c) && d->m > kMinBlockRows;
  /* row blocks widen A block by block there */
  float *wa_shared = share_a && !by_row_blocks ? ws_get(3, (size_t)elements_of(Sa)) : NULL;
  bool shared_pending = (wa_shared && !a_ready) || wb_shared;
  if (by_entries || by_row_blocks) {
    const bool widen_a = wa_shared && !a_ready;
    const int64_t work = (widen_a ? elements_of(Sa) : 0) + (wb_shared ? elements_of(Sb) : 0);
#pragma omp parallel if (work >= 4 * kConvertBlock && !omp_in_parallel())
    {
      if (widen_a) convert_blocks(true, d->a_type, (uint16_t *)d->a, wa_shared, Sa);
      if (wb_shared) convert_blocks(true, d->b_type, (uint16_t *)d->b, wb_shared, Sb);
    }
    if (wa_shared) shared_a_ = (widened_a){d->a, d->a_type, a_rows, a_cols, d->lda, true};
  }
  if (by_entries) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < batch; i++) entry_product(d, i, wa_shared, wb_shared, bias);
    return;
  }
  if (by_row_blocks) {
    for (int64_t i = 0; i < batch; i++) entry_in_row_blocks(d, i, wb_shared, bias);
    return;
  }
  product_in_groups(d, bias, wa_shared, wb_shared, shared_pending, a_ready);
  if (wa_shared) shared_a_ = (widened_a){d->a, d->a_type, a_rows, a_cols, d->lda, true};
}

static void cpu_gemm(const hl_gemm_desc *d) {
  if (!d->a_as_before) shared_a_.valid = false; /* oneDNN's calls too */
  const bool product = d->m > 0 && d->n > 0 && d->k > 0;
  if (d->batch_outer > 1 && (d->bias || !product)) {
    /* outside the contract: one call per group all the same */
    for (int64_t i = 0; i < d->batch_outer; i++) {
      const hl_gemm_desc g = group_of(d, i);
      cpu_gemm(&g);
    }
    return;
  }
  if (d->bias && d->c_type != HL_F32 && product) {
    /* oneDNN takes the bias as C's starting value (beta = 1); the widening
     * path carries it in its fp32 copy of C */
    hl_gemm_desc onto = *d;
    onto.bias = NULL, onto.beta = 1.0f;
    const bool f16 = d->a_type == HL_F16 || d->b_type == HL_F16;
    if (!f16) {
      /* bf16 C: oneDNN accumulates onto the bias written into C; where it
       * declines, so does the widening path (C widened with the bias in it) */
      bias_into_c(d, d->batch > 0 ? d->batch : 1);
      if (!hl_onednn_gemm(&onto)) hl_cpu_gemm_blas(&onto);
      return;
    }
  }
  if (!d->bias && product && hl_onednn_gemm(d)) return;
  hl_cpu_gemm_blas(d);
}

static void cpu_gemm_describe(const hl_gemm_desc *d, char *out, size_t len) {
  const bool wide = d->a_type != HL_F32 || d->b_type != HL_F32 || d->c_type != HL_F32;
  if (d->compute == HL_COMPUTE_F64) {
    snprintf(out, len, "openblas dgemm through hl_gemm");
  } else if (d->m > 0 && d->n > 0 && d->k <= 0) {
    snprintf(out, len, "no product (k = 0): C = beta C in plain C");
  } else if (!wide) {
    snprintf(out, len, "openblas sgemm through hl_gemm");
  } else {
    char why[192];
    const bool f16 = d->a_type == HL_F16 || d->b_type == HL_F16;
    if (f16) snprintf(why, sizeof why, "oneDNN 2.6 has no CPU fp16 matmul");
    else if (hl_onednn_gemm_describe(d, out, len)) return;
    else snprintf(why, sizeof why, "%s", out);
    const char *narrow = f16 && (d->a_type == HL_BF16 || d->b_type == HL_BF16) ? "f16 or bf16" : f16 ? "f16" : "bf16";
    char output[48];
    if (d->c_type == HL_F32) snprintf(output, sizeof output, "f32 output");
    else snprintf(output, sizeof output, "output rounded to %s once", hl_dtype_name(d->c_type));
    snprintf(out, len, "openblas sgemm on fp32-widened inputs; %s (no %s arithmetic: %s)", output, narrow, why);
  }
}

const struct hl_gemm_kernels hl_cpu_gemm_kernels = {
    .supports = cpu_gemm_supports,
    .gemm = cpu_gemm,
    .describe = cpu_gemm_describe,
    .row_bias = true,
    .outer_batch = true,
};
