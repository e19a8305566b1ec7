/* gemm_accuracy.c — halflab-bench gemm --accuracy: how far C = A B lies
 * from an fp64 reference as k grows (64 ... 65536), per input format and
 * accumulation format: the chart that shows why accumulation stays in fp32.
 *
 * Three ways, all written to gemm_accuracy.csv:
 *   simulated (always, on the CPU): each output a sequential dot product
 *     whose products are formed in fp32 (exact for fp16/bf16/fp8/tf32
 *     inputs) and whose running sum is rounded to the accumulation format
 *     after every addition (to fp32 first, then to fp16/bf16: formats/half.h);
 *     16 x 16 outputs;
 *   emulated (always, on the CPU): block-scaled inputs (per-tensor and
 *     1x128/128x128 fp8, MXFP8/6/4, NVFP4) quantized by kernels/quantize.h
 *     and dequantized to fp32, then the same sequential fp32 sum; or the
 *     unscaled fp8 products summed in kernels/narrow_accumulator.h's model of
 *     Hopper's fp8 accumulator, with or without DeepSeek-V3's promotion to
 *     fp32 every 128 products; 16 x 16 outputs (B quantized with 128 rows, so
 *     that a 128x128 block is whole). Never a hardware speed: the CPU has no
 *     unit for these formats;
 *   cublas (with --device cuda/auto on a GPU): the device's own GEMM on the
 *     same kind of data, 64 x 64 outputs, fp32 output where the accumulation
 *     is fp32 (fp8: bf16 output, the combination the throughput run uses;
 *     the per-tensor fp8 rows: the emulated rows' codes and scales through
 *     cuBLASLt with an fp32 output, with and without its fast accumulation);
 *   onednn (bf16, whatever the device, where the CPU backend runs bf16
 *     through oneDNN's matmul): the same as cublas on the CPU's bf16 units.
 * Two data sets: uniform in [-1, 1) (signs mixed: partial sums stay ~sqrt(k))
 * and uniform in [0, 1) (one sign: partial sums grow ~k/4, the hard case for
 * a narrow accumulator). Errors are normwise, ||C - C_ref||_F / ||C_ref||_F,
 * against the fp64 product of the original fp32 data (rel_err: what a user
 * sees, input rounding included) and of the inputs as stored in their format
 * (rel_err_accumulation: the accumulation and the output rounding alone). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/csv.h"
#include "core/base/device.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "core/base/profiler_ranges.h"
#include "bench/bench.h"
#include "bench/gemm_bench.h"
#include "bench/gemm_quantized.h"
#include "kernels/gemm_block_scaled.h"
#include "kernels/gemm_reference.h"
#include "kernels/narrow_accumulator.h"

/* How an emulated row sums its products */
typedef enum {
  SUM_ROUNDED,         /* sequential, rounded to `acc` after every addition */
  SUM_NARROW,          /* Hopper's fp8 accumulator model, the scales applied at the end */
  SUM_NARROW_PROMOTED, /* the same, promoted to fp32 every 128 products with their blocks' scales */
} sum_model;

typedef struct {
  const char *name;
  hl_dtype in;     /* storage of the inputs (quantized rows: the element format) */
  bool tf32;           /* fp32 storage, products of tf32-rounded inputs */
  hl_dtype acc;    /* accumulation format: F32, F16 or BF16 */
  const char *gpu;     /* the throughput variant that runs it on a GPU, or NULL */
  bool quantized;      /* block-scaled inputs (kernels/quantize.h), the rows labelled emulated */
  hl_scale_rule rule;
  uint32_t a_block[2], b_block[2]; /* rows x cols of a block of A (m x k) and of B as stored (n x k) */
  sum_model sum;
  bool fast_accum;     /* the GPU line: cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM */
  hl_gemm_block_scaling gpu_block; /* the GPU line of a block-scaled variant (sm_100): its codes and scales */
} acc_variant;

static const acc_variant variants[] = {
    {.name = "fp32", .in = HL_F32, .tf32 = false, .acc = HL_F32, .gpu = "fp32"},
    {.name = "tf32", .in = HL_F32, .tf32 = true, .acc = HL_F32, .gpu = "tf32"},
    {.name = "fp16", .in = HL_F16, .tf32 = false, .acc = HL_F32, .gpu = "fp16"},
    {.name = "fp16-acc16", .in = HL_F16, .tf32 = false, .acc = HL_F16, .gpu = "fp16-acc16"},
    {.name = "bf16", .in = HL_BF16, .tf32 = false, .acc = HL_F32, .gpu = "bf16"},
    {.name = "bf16-accbf16", .in = HL_BF16, .tf32 = false, .acc = HL_BF16, .gpu = NULL},
    {.name = "fp8", .in = HL_E4M3, .tf32 = false, .acc = HL_F32, .gpu = "fp8"},
    /* per-tensor fp8 as Transformer Engine scales it: fp32 accumulation (cuBLASLt's default), the narrow
     * accumulator alone (cuBLASLt's fast accumulation), and the narrow accumulator promoted every 128 */
    {.name = "fp8-tensor", .in = HL_E4M3, .acc = HL_F32, .gpu = "fp8", .quantized = true, .rule = HL_SCALE_TENSOR,
     .sum = SUM_ROUNDED},
    {.name = "fp8-tensor-acc14", .in = HL_E4M3, .acc = HL_F32, .gpu = "fp8", .quantized = true,
     .rule = HL_SCALE_TENSOR, .sum = SUM_NARROW, .fast_accum = true},
    {.name = "fp8-tensor-acc14-p128", .in = HL_E4M3, .acc = HL_F32, .quantized = true, .rule = HL_SCALE_TENSOR,
     .sum = SUM_NARROW_PROMOTED},
    /* DeepSeek-V3: 1x128 tiles of A, 128x128 blocks of B, fp32 scales; its GEMM promotes every 128 */
    {.name = "fp8-block", .in = HL_E4M3, .acc = HL_F32, .quantized = true, .rule = HL_SCALE_BLOCK_FP32,
     .a_block = {1, 128}, .b_block = {128, 128}, .sum = SUM_ROUNDED},
    {.name = "fp8-block-acc14-p128", .in = HL_E4M3, .acc = HL_F32, .quantized = true, .rule = HL_SCALE_BLOCK_FP32,
     .a_block = {1, 128}, .b_block = {128, 128}, .sum = SUM_NARROW_PROMOTED},
    /* OCP MX with the round-up scale rule cuBLAS uses (nothing clips), and NVFP4; MXFP8 and NVFP4 also
     * through cuBLASLt's block-scaled GEMM on sm_100 */
    {.name = "mxfp8", .in = HL_E4M3, .acc = HL_F32, .quantized = true, .rule = HL_SCALE_MX_RCEIL, .a_block = {1, 32},
     .b_block = {1, 32}, .sum = SUM_ROUNDED, .gpu_block = HL_GEMM_SCALE_MX_E8M0_32},
    {.name = "mxfp8-e5m2", .in = HL_E5M2, .acc = HL_F32, .quantized = true, .rule = HL_SCALE_MX_RCEIL,
     .a_block = {1, 32}, .b_block = {1, 32}, .sum = SUM_ROUNDED},
    {.name = "mxfp6", .in = HL_E2M3, .acc = HL_F32, .quantized = true, .rule = HL_SCALE_MX_RCEIL, .a_block = {1, 32},
     .b_block = {1, 32}, .sum = SUM_ROUNDED},
    {.name = "mxfp6-e3m2", .in = HL_E3M2, .acc = HL_F32, .quantized = true, .rule = HL_SCALE_MX_RCEIL,
     .a_block = {1, 32}, .b_block = {1, 32}, .sum = SUM_ROUNDED},
    {.name = "mxfp4", .in = HL_E2M1, .acc = HL_F32, .quantized = true, .rule = HL_SCALE_MX_RCEIL, .a_block = {1, 32},
     .b_block = {1, 32}, .sum = SUM_ROUNDED},
    {.name = "nvfp4", .in = HL_E2M1, .acc = HL_F32, .quantized = true, .rule = HL_SCALE_NVFP4, .a_block = {1, 16},
     .b_block = {1, 16}, .sum = SUM_ROUNDED, .gpu_block = HL_GEMM_SCALE_NVFP4_E4M3_16},
};
enum { NVARIANTS = sizeof variants / sizeof variants[0] };

static const char *data_names[2] = {"signed", "positive"}; /* uniform in [-1, 1), in [0, 1) */

/* the original fp32 data, element i of stream s */
static float datum(uint64_t seed, int data, uint64_t s, uint64_t i) {
  const float u = hl_u32_to_unit_float(hl_philox_u32(seed, s, i));
  return data == 0 ? 2.0f * u - 1.0f : u;
}

/* x as the input format stores it (fp32 value) */
static float stored(const acc_variant *v, float x) {
  if (v->tf32) return hl_f32_round_tf32_rna(x);
  switch (v->in) {
    case HL_F16: return hl_f16_to_f32(hl_f32_to_f16(x));
    case HL_BF16: return hl_bf16_to_f32(hl_f32_to_bf16(x));
    case HL_E4M3: return hl_fp8_to_f32(hl_f32_to_fp8(x, HL_FP8_E4M3, 1), HL_FP8_E4M3);
    default: return x;
  }
}

static float round_acc(hl_dtype acc, float x) {
  return acc == HL_F16 ? hl_f16_to_f32(hl_f32_to_f16(x)) : acc == HL_BF16 ? hl_bf16_to_f32(hl_f32_to_bf16(x)) : x;
}

typedef struct {
  double num_total, num_acc, den_total, den_acc; /* sums of squares */
} fro;

static void fro_add(fro *f, double got, double exact_orig, double exact_stored) {
  f->num_total += (got - exact_orig) * (got - exact_orig);
  f->den_total += exact_orig * exact_orig;
  f->num_acc += (got - exact_stored) * (got - exact_stored);
  f->den_acc += exact_stored * exact_stored;
}

/* A is m x k, B is n x k (transposed, as the throughput run stores weights) */
static void make_data(float *a, float *b, int m, int n, int64_t k, int data, uint64_t seed) {
  for (int64_t i = 0; i < (int64_t)m * k; i++) a[i] = datum(seed, data, 1, (uint64_t)i);
  for (int64_t i = 0; i < (int64_t)n * k; i++) b[i] = datum(seed, data, 2, (uint64_t)i);
}

/* The operands as the variant stores them: their fp32 values a and b (m x k, n x k), and for
 * block-scaled variants the quantized operands behind them */
typedef struct {
  float *a, *b;
  quantized_operand qa, qb;
} stored_operands;

static hl_quant_spec operand_spec(const acc_variant *v, const uint32_t block[2]) {
  hl_quant_spec spec = hl_quant_spec_make(v->in, v->rule);
  spec.block_rows = block[0], spec.block_cols = block[1];
  return spec;
}

static stored_operands store_operands(const acc_variant *v, const float *a, const float *b, int m, int n, int64_t k,
                                      int data, uint64_t seed) {
  stored_operands s = {0};
  if (!v->quantized) {
    s.a = bench_host_alloc(sizeof(float) * (size_t)(m * k), "stored operands");
    s.b = bench_host_alloc(sizeof(float) * (size_t)(n * k), "stored operands");
    for (int64_t i = 0; i < (int64_t)m * k; i++) s.a[i] = stored(v, a[i]);
    for (int64_t i = 0; i < (int64_t)n * k; i++) s.b[i] = stored(v, b[i]);
    return s;
  }
  const hl_quant_spec sa = operand_spec(v, v->a_block), sb = operand_spec(v, v->b_block);
  quantized_operand_make(&s.qa, &sa, a, (size_t)m, (size_t)m, (size_t)k);
  /* B's rows beyond n: more of the same data, so that a 128x128 block is whole */
  const int nq = v->rule != HL_SCALE_TENSOR && (int)v->b_block[0] > n ? (int)v->b_block[0] : n;
  float *bq = bench_host_alloc(sizeof(float) * (size_t)nq * (size_t)k, "quantized operand rows");
  for (int64_t i = 0; i < (int64_t)nq * k; i++) bq[i] = i < (int64_t)n * k ? b[i] : datum(seed, data, 2, (uint64_t)i);
  quantized_operand_make(&s.qb, &sb, bq, (size_t)n, (size_t)nq, (size_t)k);
  free(bq);
  s.a = s.qa.dequantized, s.b = s.qb.dequantized;
  return s;
}

static void stored_operands_free(const acc_variant *v, stored_operands *s) {
  if (v->quantized) {
    quantized_operand_free(&s->qa), quantized_operand_free(&s->qb);
  } else {
    free(s->a), free(s->b);
  }
}

static void exact_products(const float *a, const float *b, const stored_operands *s, int m, int n, int64_t k,
                           double *orig, double *st) {
#pragma omp parallel for schedule(static)
  for (int ij = 0; ij < m * n; ij++) {
    const int i = ij / n, j = ij % n;
    double so = 0, ss = 0;
    for (int64_t p = 0; p < k; p++) {
      so += (double)a[i * k + p] * b[j * k + p];
      ss += (double)s->a[i * k + p] * s->b[j * k + p];
    }
    orig[ij] = so, st[ij] = ss;
  }
}

/* Output (i, j) in the narrow accumulator: unscaled products, each chunk's partial sum times the
 * product of its elements' scales (constant along a chunk: a 1x128 or whole-tensor block) */
static float narrow_dot(const acc_variant *v, const stored_operands *s, int i, int j, int64_t k) {
  const int64_t every = v->sum == SUM_NARROW ? k : HL_NARROW_ACC_PROMOTE;
  const int64_t chunks = (k + every - 1) / every;
  float *chunk_scale = malloc(sizeof(float) * (size_t)chunks);
  if (!chunk_scale) hl_fatal("out of memory");
  for (int64_t c = 0; c < chunks; c++) chunk_scale[c] = s->qa.scale[i * k + c * every] * s->qb.scale[j * k + c * every];
  const float got = hl_narrow_acc_promoted_dot(s->qa.element + i * k, s->qb.element + j * k, chunk_scale, k, every,
                                               HL_NARROW_ACC_BITS);
  free(chunk_scale);
  return got;
}

static fro simulate(const acc_variant *v, const stored_operands *s, int m, int n, int64_t k, const double *orig,
                    const double *st) {
  fro f = {0};
  double *got = malloc(sizeof *got * (size_t)(m * n));
  if (!got) hl_fatal("out of memory");
#pragma omp parallel for schedule(static)
  for (int ij = 0; ij < m * n; ij++) {
    const int i = ij / n, j = ij % n;
    if (v->sum != SUM_ROUNDED) {
      got[ij] = narrow_dot(v, s, i, j, k);
      continue;
    }
    float acc = 0.0f;
    for (int64_t p = 0; p < k; p++) {
      const float prod = s->a[i * k + p] * s->b[j * k + p];
      acc = round_acc(v->acc, acc + prod);
    }
    got[ij] = acc;
  }
  for (int ij = 0; ij < m * n; ij++) fro_add(&f, got[ij], orig[ij], st[ij]);
  free(got);
  return f;
}

/* The accumulate column */
static const char *accumulate_name(const acc_variant *v) {
  return v->sum == SUM_NARROW ? "e8m13" : v->sum == SUM_NARROW_PROMOTED ? "e8m13-fp32-every-128" : hl_dtype_name(v->acc);
}

/* What an emulated row ran, without commas */
static void emulated_implementation(const acc_variant *v, char *out, size_t len) {
  if (v->sum == SUM_ROUNDED && v->rule == HL_SCALE_TENSOR) {
    snprintf(out, len, "emulated on the CPU: %s elements with one fp32 scale per operand (Transformer Engine's rule) "
             "quantized and dequantized to fp32; sequential fp32 sum", hl_dtype_name(v->in));
    return;
  }
  if (v->sum == SUM_ROUNDED) {
    snprintf(out, len, "emulated on the CPU: %s elements with %s scales (blocks of A %ux%u and of B as stored %ux%u) "
             "quantized and dequantized to fp32; sequential fp32 sum", hl_dtype_name(v->in), hl_scale_rule_name(v->rule),
             v->a_block[0], v->a_block[1], v->b_block[0], v->b_block[1]);
    return;
  }
  snprintf(out, len, "emulated on the CPU: unscaled %s products summed in a model of Hopper's fp8 accumulator (groups "
           "of %d aligned to the largest exponent; %d bits; truncation); %s", hl_dtype_name(v->in), HL_NARROW_ACC_GROUP,
           HL_NARROW_ACC_BITS, v->sum == SUM_NARROW ? "the tensor scales applied at the end"
                                                    : "promoted to fp32 with the blocks' scales every 128 products");
}

/* The output type of a library's run (cublas, onednn): fp32 where the accumulation is fp32, so
 * that no output rounding hides the accumulation's error; fp16 for fp16
 * accumulation; bf16 for fp8, the layout the throughput run exercises. */
static hl_dtype library_out(const gemm_variant *gv) {
  if (gv->in == HL_E4M3) return gv->out;
  return gv->compute == HL_COMPUTE_F16 ? HL_F16 : gv->in == HL_F64 ? HL_F64 : HL_F32;
}

/* The product a library's GEMM computes: A m x k, B n x k (transposed), C m x n. The block-scaled
 * fp8 rows write fp32, so that no output rounding hides what the accumulator does */
static hl_gemm_desc library_desc(const acc_variant *v, const gemm_variant *gv, int m, int n, int64_t k) {
  hl_gemm_desc g = {.trans_b = true, .m = m, .n = n, .k = k, .batch = 1, .a_type = gv->in, .b_type = gv->in,
                    .c_type = v->quantized ? HL_F32 : library_out(gv), .compute = gv->compute, .alpha = 1, .beta = 0,
                    .lda = k, .ldb = k, .ldc = n, .a_scale = 1, .b_scale = 1, .fp8_fast_accum = v->fast_accum};
  return g;
}

/* One operand on the device: the quantized codes as they are, or x stored in t */
static void *operand_on_device(const bench_device *d, hl_dtype t, const float *x, const quantized_operand *q,
                               int64_t n) {
  const size_t bytes = hl_dtype_size(t) * (size_t)n;
  char *h = q ? (char *)q->codes : bench_host_alloc(bytes, "accuracy inputs");
  if (!q)
    for (int64_t i = 0; i < n; i++) hl_gemm_store(h, t, i, x[i]);
  void *dev = bench_alloc(d, bytes, "accuracy inputs");
  d->be->copy_from_host(dev, h, bytes);
  if (!q) free(h);
  return dev;
}

static fro on_device(const bench_device *d, const acc_variant *v, const gemm_variant *gv, const float *a,
                     const float *b, const stored_operands *s, int m, int n, int64_t k, const double *orig,
                     const double *st) {
  hl_gemm_desc g = library_desc(v, gv, m, n, k);
  const size_t out = hl_dtype_size(g.c_type);
  char *hc = bench_host_alloc(out * (size_t)(m * n), "accuracy outputs");
  void *da = operand_on_device(d, gv->in, a, v->quantized ? &s->qa : NULL, (int64_t)m * k);
  void *db = operand_on_device(d, gv->in, b, v->quantized ? &s->qb : NULL, (int64_t)n * k);
  void *dc = bench_alloc(d, out * (size_t)(m * n), "accuracy outputs");
  if (v->quantized) g.a_scale = s->qa.tensor_decode, g.b_scale = s->qb.tensor_decode;
  g.a = da, g.b = db, g.c = dc;
  d->be->gemm->gemm(&g);
  d->be->synchronize();
  d->be->copy_to_host(hc, dc, out * (size_t)(m * n));
  fro f = {0};
  for (int ij = 0; ij < m * n; ij++) fro_add(&f, hl_gemm_load(hc, g.c_type, ij), orig[ij], st[ij]);
  bench_free(d, da), bench_free(d, db), bench_free(d, dc);
  free(hc);
  return f;
}

/* A block-scaled variant's product through the GPU's block-scaled GEMM (MXFP8, NVFP4: sm_100):
 * the emulated rows' codes and block scale codes, packed as cuBLASLt reads them; fp32 out. The
 * operand pointers are left NULL when s is NULL (to ask supports() only). */
static hl_gemm_desc block_scaled_desc(const acc_variant *v, const stored_operands *s, int m, int n, int64_t k) {
  hl_gemm_desc g = {.trans_b = true, .m = m, .n = n, .k = k, .batch = 1, .a_type = v->in, .b_type = v->in,
                    .c_type = HL_F32, .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0, .lda = k, .ldb = k, .ldc = n,
                    .a_scale = 1, .b_scale = 1, .block_scaling = v->gpu_block};
  if (s) g.alpha = s->qa.tensor_scale * s->qb.tensor_scale; /* NVFP4's per-tensor scales; 1 for MX */
  return g;
}

/* One block-scaled operand on the device: its elements (e2m1 packed two per byte) and its tiled scales */
static void *block_scaled_on_device(const bench_device *d, const quantized_operand *q, hl_dtype element,
                                    void **scales) {
  const int64_t n = (int64_t)(q->rows * q->k), blocks = (int64_t)q->blocks_per_row;
  const size_t bytes = element == HL_E2M1 ? (size_t)n / 2 : (size_t)n;
  uint8_t *h = bench_host_alloc(bytes, "block-scaled inputs");
  if (element == HL_E2M1) hl_gemm_pack_e2m1(q->codes, n, h);
  else memcpy(h, q->codes, bytes);
  const size_t scale_bytes = hl_gemm_block_scales_bytes((int64_t)q->rows, blocks);
  uint8_t *tiled = bench_host_alloc(scale_bytes, "block scales");
  hl_gemm_block_scales_tile(q->scale_codes, (int64_t)q->rows, blocks, tiled);
  void *dev = bench_alloc(d, bytes, "block-scaled inputs");
  *scales = bench_alloc(d, scale_bytes, "block scales");
  d->be->copy_from_host(dev, h, bytes);
  d->be->copy_from_host(*scales, tiled, scale_bytes);
  free(h), free(tiled);
  return dev;
}

static fro on_device_block_scaled(const bench_device *d, const acc_variant *v, const stored_operands *s, int m, int n,
                                  int64_t k, const double *orig, const double *st) {
  hl_gemm_desc g = block_scaled_desc(v, s, m, n, k);
  void *sa = NULL, *sb = NULL;
  void *da = block_scaled_on_device(d, &s->qa, v->in, &sa), *db = block_scaled_on_device(d, &s->qb, v->in, &sb);
  float *hc = bench_host_alloc(sizeof(float) * (size_t)(m * n), "accuracy outputs");
  void *dc = bench_alloc(d, sizeof(float) * (size_t)(m * n), "accuracy outputs");
  g.a = da, g.b = db, g.c = dc, g.a_block_scales = sa, g.b_block_scales = sb;
  d->be->gemm->gemm(&g);
  d->be->synchronize();
  d->be->copy_to_host(hc, dc, sizeof(float) * (size_t)(m * n));
  fro f = {0};
  for (int ij = 0; ij < m * n; ij++) fro_add(&f, hc[ij], orig[ij], st[ij]);
  bench_free(d, da), bench_free(d, db), bench_free(d, dc), bench_free(d, sa), bench_free(d, sb);
  free(hc);
  return f;
}

static void set_metadata(const bench_common *c, int sm, int gm) {
  hl_meta_set("method", "simulated: sequential dot products of %d x %d outputs on the CPU, fp32 products, the running "
              "sum rounded to the accumulation format after each addition; emulated: the same %d x %d outputs on the CPU "
              "from block-scaled inputs quantized and dequantized to fp32 and summed in fp32; or their unscaled fp8 "
              "products summed in a model of Hopper's fp8 accumulator (DeepSeek-V3 technical report: 14 bits; "
              "truncation) with or without promotion to fp32 every 128 products; never a hardware speed; cublas: %d x %d outputs by the device's "
              "GEMM; onednn: %d x %d outputs by the CPU backend's bf16 GEMM on oneDNN's matmul; errors normwise "
              "(Frobenius) against fp64", sm, sm, sm, sm, gm, gm, gm, gm);
  hl_meta_set("data", "signed: uniform in [-1, 1) (partial sums grow like sqrt(k)); positive: uniform in [0, 1) "
              "(partial sums grow like k/4: the hard case for a narrow accumulator)");
  hl_meta_set("errors", "rel_err against the fp64 product of the original fp32 data (input rounding included); "
              "rel_err_accumulation against the fp64 product of the inputs as stored (accumulation and output rounding)");
  hl_meta_set("seed", "%llu", (unsigned long long)c->cli.seed);
  if (c->cli.quick) hl_meta_set("quick", "yes");
}

/* The row's implementation column and its output type. */
static hl_dtype row_implementation(const acc_variant *v, const gemm_variant *gv, const bench_device *on, bool simulated,
                                   int m, int64_t k, char *impl, size_t len) {
  hl_dtype out = v->acc;
  if (simulated && v->quantized) {
    emulated_implementation(v, impl, len);
  } else if (simulated) {
    snprintf(impl, len, "simulated on the CPU: sequential sum rounded to %s after every addition",
             hl_dtype_name(v->acc));
  } else if (v->gpu_block) {
    const hl_gemm_desc g = block_scaled_desc(v, NULL, m, m, k);
    on->be->gemm->describe(&g, impl, len);
    snprintf(impl + strlen(impl), len - strlen(impl), "; the emulated rows' codes and scales");
    out = g.c_type;
  } else {
    const hl_gemm_desc g = library_desc(v, gv, m, m, k);
    gemm_implementation(on, gv, &g, impl, len);
    out = g.c_type;
    if (out != gv->out) snprintf(impl + strlen(impl), len - strlen(impl), "; %s output", hl_dtype_name(out));
    if (v->quantized)
      snprintf(impl + strlen(impl), len - strlen(impl), "; the emulated rows' %s codes and scales",
               hl_scale_rule_name(v->rule));
  }
  return out;
}

int gemm_accuracy_main(const bench_device *d, const bench_common *c, const char *dtypes, const long long *ks, int nks,
                       const char *notice) {
  bool chosen[NVARIANTS];
  for (int i = 0; i < NVARIANTS; i++) chosen[i] = dtypes == NULL;
  if (dtypes) {
    const char *names[NVARIANTS];
    for (int i = 0; i < NVARIANTS; i++) names[i] = variants[i].name;
    bench_parse_names("--dtypes", dtypes, "variant of the accuracy study", names, NVARIANTS, chosen);
  }
  long long kdef[16];
  int nk = 0;
  if (ks) {
    for (int i = 0; i < nks; i++) kdef[nk++] = ks[i];
  } else {
    for (long long k = 64; k <= (c->cli.quick ? 4096 : 65536); k *= 2) kdef[nk++] = k;
  }
  long long kmax = 0;
  for (int i = 0; i < nk; i++) kmax = kdef[i] > kmax ? kdef[i] : kmax;
  const int sm = 16, gm = 64; /* outputs per side: simulated, by a library's GEMM */
  const bool gpu = d->kind == HL_DEVICE_CUDA;
  /* host: the fp32 data and the references; device: one variant's operands */
  bench_require_memory(d, "gemm --accuracy", gpu ? (uint64_t)(2 * gm) * (uint64_t)kmax * 4 + (uint64_t)gm * gm * 4 : 0,
                       (uint64_t)(2 * gm) * (uint64_t)kmax * 8 + (1u << 20));

  char outbuf[4096];
  const char *outdir = bench_outdir(c->cli.out, d->kind, BENCH_TABLES("gemm_accuracy.csv"), outbuf, sizeof outbuf);
  fputs(notice, stderr);
  set_metadata(c, sm, gm);

  hl_csv_rows rows = {0};
  const int side = gm;
  const bench_device cpu = {HL_DEVICE_CPU, &hl_backend_cpu, hl_device_facts_get(HL_DEVICE_CPU), "cpu"};
  float *a = bench_host_alloc(sizeof(float) * (size_t)side * (size_t)kmax, "accuracy data");
  float *b = bench_host_alloc(sizeof(float) * (size_t)side * (size_t)kmax, "accuracy data");
  double *orig = bench_host_alloc(sizeof(double) * (size_t)(side * side), "references");
  double *st = bench_host_alloc(sizeof(double) * (size_t)(side * side), "references");
  printf("%-21s %-9s %-13s %6s %12s %12s\n", "variant", "method", "data", "k", "rel_err", "rel_err_acc");
  hl_range_push("gemm --accuracy");
  enum { SIMULATED, CUBLAS, ONEDNN, METHODS };
  static const char *method_names[METHODS] = {"simulated", "cublas", "onednn"};
  for (int vi = 0; vi < NVARIANTS; vi++) {
    if (!chosen[vi]) continue;
    const acc_variant *v = &variants[vi];
    const gemm_variant *gv = v->gpu ? &gemm_variants[gemm_variant_index(v->gpu)] : NULL;
    char why[256] = "";
    bool runs[METHODS] = {true, gpu && gv && gemm_variant_runs(d, gv, why, sizeof why), false};
    if (gpu && v->gpu_block) {
      const hl_gemm_desc probe = block_scaled_desc(v, NULL, gm, gm, kdef[0]);
      runs[CUBLAS] = d->be->gemm->supports(&probe, why, sizeof why);
    }
    if (gpu && (gv || v->gpu_block) && !runs[CUBLAS])
      fprintf(stderr, "%s: gemm --accuracy: %s not on this GPU: %s\n", hl_prog(), v->name, why);
    if (gv && gv->in == HL_BF16 && v->acc == HL_F32) {
      const hl_gemm_desc probe = library_desc(v, gv, gm, gm, kdef[0]);
      runs[ONEDNN] = hl_onednn_gemm_describe(&probe, why, sizeof why);
      if (!runs[ONEDNN]) fprintf(stderr, "%s: gemm --accuracy: no onednn line for %s: %s\n", hl_prog(), v->name, why);
    }
    for (int data = 0; data < 2; data++)
      for (int ki = 0; ki < nk; ki++) {
        const int64_t k = kdef[ki];
        for (int method = 0; method < METHODS; method++) {
          if (!runs[method]) continue;
          const int m = method == SIMULATED ? sm : gm;
          if (method == CUBLAS && k % 32 && v->in != HL_F32 && v->in != HL_F16 && v->in != HL_BF16)
            continue; /* cuBLASLt's fp8 (16) and block-scaled (32) layout rules */
          bench_progress("accuracy %s %s k=%lld %s", v->name, data_names[data], (long long)k, method_names[method]);
          make_data(a, b, m, m, k, data, c->cli.seed);
          stored_operands so = store_operands(v, a, b, m, m, k, data, c->cli.seed);
          exact_products(a, b, &so, m, m, k, orig, st);
          const bench_device *on = method == ONEDNN ? &cpu : d;
          const fro f = method == SIMULATED ? simulate(v, &so, m, m, k, orig, st)
                        : v->gpu_block    ? on_device_block_scaled(on, v, &so, m, m, k, orig, st)
                                          : on_device(on, v, gv, a, b, &so, m, m, k, orig, st);
          stored_operands_free(v, &so);
          const double rel = sqrt(f.num_total / f.den_total), rel_acc = sqrt(f.num_acc / f.den_acc);
          char impl[320];
          const hl_dtype out = row_implementation(v, gv, on, method == SIMULATED, m, k, impl, sizeof impl);
          const char *method_name = method == SIMULATED && v->quantized ? "emulated" : method_names[method];
          hl_row row;
          hl_row_begin(&row, &bench_gemm_accuracy_schema);
          hl_row_text(&row, "device", method == SIMULATED ? "cpu" : on->name);
          hl_row_text(&row, "method", method_name);
          hl_row_text(&row, "variant", v->name);
          hl_row_text(&row, "input", v->tf32 ? "tf32" : hl_dtype_name(v->in));
          hl_row_text(&row, "accumulate", method == SIMULATED ? accumulate_name(v) : hl_dtype_name(v->acc));
          hl_row_text(&row, "out_dtype", hl_dtype_name(out));
          hl_row_text(&row, "data", data_names[data]);
          hl_row_int(&row, "m", m);
          hl_row_int(&row, "n", m);
          hl_row_int(&row, "k", k);
          hl_row_real(&row, "rel_err", rel);
          hl_row_real(&row, "rel_err_accumulation", rel_acc);
          hl_row_text(&row, "implementation", impl);
          hl_csv_rows_put(&rows, &row);
          printf("%-21s %-9s %-13s %6lld %12.4g %12.4g\n", v->name, method_name, data_names[data],
                 (long long)k, rel, rel_acc);
        }
      }
  }
  hl_range_pop();
  free(a), free(b), free(orig), free(st);
  bench_rows_write(&rows, outdir, &bench_gemm_accuracy_schema);
  hl_csv_rows_free(&rows);
  fflush(stdout); /* the table first, then the note, when both go to one file */
  fprintf(stderr, "%s: gemm --accuracy: wrote %s/gemm_accuracy.csv\n", hl_prog(), outdir);
  return 0;
}
