/* gemm.c — halflab-bench gemm: matrix-product throughput per variant (fp32,
 * tf32, fp16 with fp32 or fp16 accumulation, bf16, fp8) over square sizes,
 * the alignment study around 4096 and GPT-2 124M's shapes, by the method of
 * docs/bench.md; `gemm --accuracy` is gemm_accuracy.c.
 *
 * Per variant, one pool of random operands is made (uniform in [-1, 1),
 * rounded to the variant's input type) on the host and copied to the device;
 * each shape's A, B and C are carved out of it in "slots", and the timed
 * launches walk through the slots so that the operands a launch reads were
 * last touched at least 2x the L2 (CPU: last-level cache) ago. Before any
 * time is taken, the first slot's product is checked against an fp64
 * product of the stored inputs on sampled entries (hl_gemm_error_bound): a
 * wrong result stops the run with exit status 1 and no CSV. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/csv.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "core/base/profiler_ranges.h"
#include "bench/bench.h"
#include "bench/gemm_bench.h"
#include "kernels/gemm.h"
#include "kernels/gemm_reference.h"
#include "kernels/host.h"

static const char usage[] =
    "Usage: halflab-bench gemm [OPTIONS]\n"
    "\n"
    "Matrix-product throughput (TFLOP/s, FLOPs = 2 m n k) per variant, next to the device's\n"
    "dense peak; every variant's result is checked against an fp64 reference before it is timed.\n"
    "Writes gemm.csv (and gemm_expectations.csv); with --accuracy, gemm_accuracy.csv instead.\n"
    "\n"
    "Variants (--dtypes):\n"
    "  fp32        fp32 in/out, fp32 accumulation (GPU: SIMT cores, never tf32)\n"
    "  tf32        fp32 in/out, products on tensor cores in tf32 (GPU, sm_80+)\n"
    "  fp16        fp16 in/out, fp32 accumulation (CPU: widened to fp32, sgemm, rounded once)\n"
    "  fp16-acc16  fp16 in/out, fp16 accumulation (GPU)\n"
    "  bf16        bf16 in/out, fp32 accumulation (GPU: sm_80+; CPU: oneDNN's matmul on AVX512-BF16 or AMX-BF16\n"
    "              where built in and present, else widened to fp32, sgemm, rounded once)\n"
    "  fp8         fp8 e4m3 in, bf16 out, fp32 accumulation, cuBLASLt (GPU: sm_89+)\n"
    "  openblas    CPU only: cblas_sgemm called directly, the reference the fp32 path is held to\n"
    "  onednn-bf16 CPU only, with oneDNN built in: its bf16 matmul primitive called directly (made before\n"
    "              the timed calls), the reference the bf16 path is held to\n"
    "  bf16-widened CPU only: bf16 through the CPU's fallback (widened to fp32, sgemm, rounded once),\n"
    "              what a CPU without bf16 units or HALFLAB_CPU_UNITS=portable runs, beside the bf16 path\n"
    "\n"
    "Studies (--studies):\n"
    "  square      n x n x n, powers of two and midpoints: 128 .. 16384 (GPU), 128 .. 4096 (CPU)\n"
    "  align       around 4096: multiples of 8 against their neighbours (4088 .. 4104)\n"
    "  gpt2        GPT-2 124M at 8 x 1024 tokens: qkv, attn-proj, mlp-fc, mlp-proj, and the attention\n"
    "              batches (8 x 12 heads of 1024 x 1024 x 64 and 1024 x 64 x 1024, strided-batched)\n"
    "\n"
    "Options:\n"
    "  --list          print the variants, whether this device runs them and why not; write nothing\n"
    "  --sizes N,...   square sizes to run instead of the sweeps (1 .. 1000000); with --accuracy: the k values\n"
    "  --dtypes LIST   variants, comma-separated (default: every one the device runs)\n"
    "  --studies LIST  square, align, gpt2 (default: all three; with --sizes: square)\n"
    "  --reps N        timed samples per point (default: adaptive, see the CSV's method line)\n"
    "  --accuracy      relative error against fp64 as k grows (64 .. 65536) per input and accumulation type;\n"
    "                  also block-scaled inputs (fp8-tensor, fp8-block, mxfp8[-e5m2], mxfp6[-e3m2], mxfp4, nvfp4) and a model\n"
    "                  of Hopper's narrow fp8 accumulator (fp8-tensor-acc14, ...), emulated on the CPU\n"
    "  --device D      auto (default: the GPU when usable, else the CPU), cpu, cuda\n"
    "  --out DIR       output folder (default results/<machine>/)\n"
    "  --quick         a few sizes only (on a GPU: exactly what the expectations need)\n"
    "  --seed N        seed of the random operands (default 1)\n"
    "  --help, --version\n";

/* ------------------------------------------------------------ variants -- */

const gemm_variant gemm_variants[GEMM_VARIANTS] = {
    {"fp32", HL_F32, HL_F32, HL_COMPUTE_F32, PEAK_FP32, GEMM_THROUGH_HALFLAB},
    {"tf32", HL_F32, HL_F32, HL_COMPUTE_F32_FAST_TF32, PEAK_TF32, GEMM_THROUGH_HALFLAB},
    {"fp16", HL_F16, HL_F16, HL_COMPUTE_F32, PEAK_FP16, GEMM_THROUGH_HALFLAB},
    {"fp16-acc16", HL_F16, HL_F16, HL_COMPUTE_F16, PEAK_FP16, GEMM_THROUGH_HALFLAB},
    {"bf16", HL_BF16, HL_BF16, HL_COMPUTE_F32, PEAK_BF16, GEMM_THROUGH_HALFLAB},
    {"fp8", HL_E4M3, HL_BF16, HL_COMPUTE_F32, PEAK_FP8, GEMM_THROUGH_HALFLAB},
    {"openblas", HL_F32, HL_F32, HL_COMPUTE_F32, PEAK_FP32, GEMM_REF_OPENBLAS},
    {"onednn-bf16", HL_BF16, HL_BF16, HL_COMPUTE_F32, PEAK_BF16, GEMM_REF_ONEDNN},
    {"bf16-widened", HL_BF16, HL_BF16, HL_COMPUTE_F32, PEAK_FP32, GEMM_CPU_FALLBACK},
};

int gemm_variant_index(const char *name) {
  for (int i = 0; i < GEMM_VARIANTS; i++)
    if (!strcmp(name, gemm_variants[i].name)) return i;
  return -1;
}

bool gemm_tensor_cores(const bench_device *d, const gemm_variant *v) {
  return d->kind == HL_DEVICE_CUDA && (v->in != HL_F32 || v->compute == HL_COMPUTE_F32_FAST_TF32);
}

/* A representative TN shape, multiples of 16 */
static hl_gemm_desc probe_desc(const gemm_variant *v) {
  hl_gemm_desc probe = {.trans_b = true, .m = 64, .n = 64, .k = 64, .batch = 1, .a_type = v->in, .b_type = v->in,
                        .c_type = v->out, .compute = v->compute, .alpha = 1, .lda = 64, .ldb = 64, .ldc = 64};
  return probe;
}

/* Can the device run v at all? */
bool gemm_variant_runs(const bench_device *d, const gemm_variant *v, char *why, size_t len) {
  const hl_gemm_desc probe = probe_desc(v);
  if (v->reference != GEMM_THROUGH_HALFLAB && d->kind != HL_DEVICE_CPU) {
    snprintf(why, len, "%s is a CPU variant", v->name);
    return false;
  }
  switch (v->reference) {
    case GEMM_REF_OPENBLAS:
    case GEMM_CPU_FALLBACK: return true;
    case GEMM_REF_ONEDNN: return hl_onednn_matmul_check(&probe, why, len);
    default: return d->be->gemm && d->be->gemm->supports(&probe, why, len);
  }
}

void gemm_implementation(const bench_device *d, const gemm_variant *v, const hl_gemm_desc *desc, char *buf, size_t len) {
  char what[160];
  switch (v->reference) {
    case GEMM_REF_OPENBLAS:
      snprintf(buf, len, "cblas_sgemm called directly (reference; no halflab code in the timed call)");
      break;
    case GEMM_REF_ONEDNN:
      hl_onednn_matmul_check(desc, what, sizeof what);
      snprintf(buf, len, "dnnl_primitive_execute called directly: %s (reference; no halflab code in the timed call)", what);
      break;
    case GEMM_CPU_FALLBACK:
      snprintf(buf, len, "openblas sgemm on fp32-widened inputs; output rounded to bf16 once (the CPU fallback: what a "
               "CPU without AVX512-BF16 or AMX-BF16 runs%s)", hl_cpu_units_get()->portable ? "; HALFLAB_CPU_UNITS=portable" : "");
      break;
    default: d->be->gemm->describe(desc, buf, len);
  }
}

/* -------------------------------------------------------------- shapes -- */

typedef struct {
  const char *study;
  char name[32];
  int64_t m, n, k, batch;
  bool ta, tb;
} shape;

typedef struct {
  shape *s;
  int n, cap;
} shape_list;

static void add_shape(shape_list *l, const char *study, const char *name, int64_t m, int64_t n, int64_t k,
                      int64_t batch, bool tb) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->s = realloc(l->s, sizeof *l->s * (size_t)l->cap);
    if (!l->s) hl_fatal("out of memory");
  }
  shape *s = &l->s[l->n++];
  s->study = study;
  snprintf(s->name, sizeof s->name, "%s", name);
  s->m = m, s->n = n, s->k = k, s->batch = batch, s->ta = false, s->tb = tb;
}

/* Weights are stored as a linear layer stores them (out x in, so B is
 * transposed): also the layout cuBLASLt's fp8 kernels require. */
static void add_square(shape_list *l, int64_t n) {
  char name[32];
  snprintf(name, sizeof name, "%lld^3", (long long)n);
  add_shape(l, "square", name, n, n, n, 1, true);
}

enum { STUDY_SQUARE = 1, STUDY_ALIGN = 2, STUDY_GPT2 = 4 };

static void build_shapes(shape_list *l, const bench_device *d, int studies, bool quick, const long long *sizes,
                         int nsizes) {
  const bool gpu = d->kind == HL_DEVICE_CUDA;
  if (studies & STUDY_SQUARE) {
    if (nsizes > 0) {
      for (int i = 0; i < nsizes; i++) add_square(l, sizes[i]);
    } else if (quick) {
      static const int64_t gq[] = {1024, 4096, 8192}, cq[] = {128, 256, 512, 1024};
      const int64_t *q = gpu ? gq : cq;
      for (int i = 0; i < (gpu ? 3 : 4); i++) add_square(l, q[i]);
    } else {
      const int64_t top = gpu ? 16384 : 4096;
      for (int64_t p = 128; p <= top; p *= 2) {
        add_square(l, p);
        if (p * 3 / 2 < top) add_square(l, p * 3 / 2);
      }
    }
  }
  if (studies & STUDY_ALIGN) {
    if (quick) {
      if (gpu)
        for (int64_t n = 4095; n <= 4097; n++) add_shape(l, "align", "align", n, n, n, 1, true);
    } else if (gpu) {
      for (int64_t n = 4088; n <= 4104; n++) add_shape(l, "align", "align", n, n, n, 1, true);
    } else {
      /* each point costs about 0.5 s a launch on a small CPU: the multiples
       * of 8 and their nearest neighbours */
      static const int64_t cpu_align[] = {4088, 4092, 4095, 4096, 4097, 4100, 4104};
      for (size_t i = 0; i < sizeof cpu_align / sizeof cpu_align[0]; i++)
        add_shape(l, "align", "align", cpu_align[i], cpu_align[i], cpu_align[i], 1, true);
    }
  }
  if ((studies & STUDY_GPT2) && !(quick && !gpu)) {
    const int64_t tokens = 8 * 1024, c = 768, heads = 12, t = 1024, hd = 64;
    add_shape(l, "gpt2", "qkv", tokens, 3 * c, c, 1, true);
    add_shape(l, "gpt2", "attn-proj", tokens, c, c, 1, true);
    add_shape(l, "gpt2", "mlp-fc", tokens, 4 * c, c, 1, true);
    add_shape(l, "gpt2", "mlp-proj", tokens, c, 4 * c, 1, true);
    add_shape(l, "gpt2", "attn-scores", t, t, hd, 8 * heads, true);    /* Q K^T */
    add_shape(l, "gpt2", "attn-context", t, hd, t, 8 * heads, false);  /* P V: V stored k x n */
  }
}

/* ---------------------------------------------------------- operands -- */

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* One slot: every batch entry's A and B (in the input pool, never written)
 * and C (in the output pool), in 256-byte aligned parts */
typedef struct {
  size_t b_off, ab_bytes, c_bytes, bytes;
} slot_layout;

static slot_layout layout_of(const shape *s, const gemm_variant *v) {
  const size_t in = hl_dtype_size(v->in), out = hl_dtype_size(v->out);
  slot_layout L;
  L.b_off = round_up((size_t)(s->batch * s->m * s->k) * in, 256);
  L.ab_bytes = L.b_off + round_up((size_t)(s->batch * s->k * s->n) * in, 256);
  L.c_bytes = round_up((size_t)(s->batch * s->m * s->n) * out, 256);
  L.bytes = L.ab_bytes + L.c_bytes;
  return L;
}

static size_t slots_for(size_t slot_bytes, size_t rotation_bytes) {
  size_t n = (rotation_bytes + slot_bytes - 1) / slot_bytes;
  return n ? n : 1;
}

/* What v's pools must hold for every shape of the run */
static void pool_sizes(const gemm_variant *v, const shape_list *l, size_t rot, size_t *in_bytes, size_t *out_bytes) {
  *in_bytes = *out_bytes = 256;
  for (int si = 0; si < l->n; si++) {
    const slot_layout L = layout_of(&l->s[si], v);
    const size_t n = slots_for(L.bytes, rot);
    if (n * L.ab_bytes > *in_bytes) *in_bytes = n * L.ab_bytes;
    if (n * L.c_bytes > *out_bytes) *out_bytes = n * L.c_bytes;
  }
}

/* The operand pools of one input type, kept while consecutive variants share it */
typedef struct {
  char *in, *host, *out; /* host: the host copy of in (CPU: in itself) */
  size_t in_have, out_have;
  hl_dtype type;
} operand_pools;

static void free_pools(const bench_device *d, operand_pools *p) {
  if (p->host && p->host != p->in) free(p->host);
  bench_free(d, p->in), bench_free(d, p->out);
  p->in = p->host = p->out = NULL;
}

/* The working set the rotation must exceed: 2x L2 on the GPU; on the CPU 2x
 * the last-level cache, at most 1 GiB or a quarter of free memory. */
static size_t rotation_bytes(const bench_device *d) {
  size_t r = 2 * (size_t)d->facts->l2_bytes;
  if (d->kind == HL_DEVICE_CPU) {
    if (r > (1u << 30)) r = 1u << 30;
    if (r > d->facts->free_mem / 4) r = (size_t)(d->facts->free_mem / 4);
  }
  return r ? r : (64u << 20);
}

/* Random values uniform in [-1, 1), rounded to t (e4m3: saturating), whole pool */
static void fill_random(void *p, hl_dtype t, size_t bytes, uint64_t seed) {
  const size_t es = hl_dtype_size(t), n = bytes / es, words = (n + 3) / 4;
#pragma omp parallel for schedule(static)
  for (size_t w = 0; w < words; w++) {
    uint32_t ctr[4] = {(uint32_t)w, (uint32_t)((uint64_t)w >> 32), 7, 0}, key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t r[4];
    hl_philox4x32_10(ctr, key, r);
    for (int j = 0; j < 4 && w * 4 + (size_t)j < n; j++) {
      const size_t i = w * 4 + (size_t)j;
      hl_gemm_store(p, t, (int64_t)i, hl_u32_to_unit_float(r[j]) * 2.0f - 1.0f);
    }
  }
}

/* ------------------------------------------------------- one point -- */

typedef struct {
  const bench_device *d;
  const gemm_variant *v;
  const shape *s;
  slot_layout L;
  size_t nslots;
  char *in, *out;   /* the input and output pools: device (or host, CPU) */
  hl_gemm_desc desc;
#ifdef HL_HAVE_ONEDNN
  hl_onednn_direct onednn; /* the onednn-bf16 reference's primitive, made before timing */
#endif
} point;

static void point_desc(point *p, size_t slot) {
  const shape *s = p->s;
  char *ab = p->in + slot * p->L.ab_bytes, *c = p->out + slot * p->L.c_bytes;
  hl_gemm_desc d = {.trans_a = s->ta, .trans_b = s->tb, .m = s->m, .n = s->n, .k = s->k, .batch = s->batch,
                    .a_type = p->v->in, .b_type = p->v->in, .c_type = p->v->out, .compute = p->v->compute,
                    .alpha = 1.0f, .beta = 0.0f,
                    .a = ab, .lda = s->ta ? s->m : s->k, .stride_a = s->m * s->k,
                    .b = ab + p->L.b_off, .ldb = s->tb ? s->k : s->n, .stride_b = s->k * s->n,
                    .c = c, .ldc = s->n, .stride_c = s->m * s->n,
                    .a_scale = 1.0f, .b_scale = 1.0f};
  p->desc = d;
}

/* The onednn-bf16 reference's primitive for the point's shape, made
 * outside the timed region; false and why where oneDNN cannot run it */
static bool reference_prepare(point *p, char *why, size_t len) {
  if (p->v->reference != GEMM_REF_ONEDNN) return true;
#ifdef HL_HAVE_ONEDNN
  return hl_onednn_direct_make(&p->onednn, &p->desc, why, len);
#else
  return hl_onednn_matmul_check(&p->desc, why, len); /* says oneDNN is not built in */
#endif
}

static void reference_finish(point *p) {
#ifdef HL_HAVE_ONEDNN
  if (p->v->reference == GEMM_REF_ONEDNN) hl_onednn_direct_free(&p->onednn);
#else
  (void)p;
#endif
}

static void launch(void *ctx, long it) {
  point *p = ctx;
  point_desc(p, (size_t)it % p->nslots);
  const hl_gemm_desc *d = &p->desc;
  switch (p->v->reference) {
    case GEMM_REF_OPENBLAS: {
      __typeof__(cblas_sgemm) *sgemm = hl_blas()->sgemm; /* the library's own function: no halflab code runs in it */
      for (int64_t b = 0; b < d->batch; b++)
        sgemm(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans, d->trans_b ? CblasTrans : CblasNoTrans,
              (int)d->m, (int)d->n, (int)d->k, 1.0f, (const float *)d->a + b * d->stride_a, (int)d->lda,
              (const float *)d->b + b * d->stride_b, (int)d->ldb, 0.0f, (float *)d->c + b * d->stride_c, (int)d->ldc);
      break;
    }
    case GEMM_REF_ONEDNN: {
#ifdef HL_HAVE_ONEDNN
      /* oneDNN's own functions only: this slot's operands, then the product */
      hl_onednn_direct *r = &p->onednn;
      dnnl_status_t st = dnnl_memory_set_data_handle(r->a, (void *)d->a);
      if (st == dnnl_success) st = dnnl_memory_set_data_handle(r->b, (void *)d->b);
      if (st == dnnl_success) st = dnnl_memory_set_data_handle(r->c, d->c);
      if (st == dnnl_success) st = dnnl_primitive_execute(r->primitive, r->stream, r->nargs, r->args);
      if (st == dnnl_success) st = dnnl_stream_wait(r->stream);
      if (st != dnnl_success)
        hl_fatal("oneDNN matmul primitive of the onednn-bf16 reference (%lld x %lld x %lld): %s", (long long)d->m,
                 (long long)d->n, (long long)d->k, dnnl_status2str(st));
#endif
      break;
    }
    case GEMM_CPU_FALLBACK: hl_cpu_gemm_blas(d); break;
    default: p->d->be->gemm->gemm(d);
  }
}

enum { CHECKED_ENTRIES = 98 }; /* the first and the last entry of C, and 96 random ones */

/* Checks slot 0's product on sampled entries against fp64 from the host
 * copy of the inputs; exits 1 on a wrong entry. Returns the largest error
 * relative to sum |a b| (and the bound's per-term factor in *bound_term). */
static double validate(point *p, const char *host_pool, uint64_t seed, double *bound_term, double *worst_ratio) {
  launch(p, 0);
  p->d->be->synchronize();
  point_desc(p, 0);
  const hl_gemm_desc *d = &p->desc;
  const shape *s = p->s;
  const hl_gemm_bound bound = hl_gemm_error_bound(d, gemm_tensor_cores(p->d, p->v));
  *bound_term = bound.term;
  const char *ha = host_pool, *hb = host_pool + p->L.b_off;
  const size_t out_size = hl_dtype_size(p->v->out);
  double worst = 0;
  *worst_ratio = 0;
  for (int t = 0; t < CHECKED_ENTRIES; t++) {
    int64_t bi, i, j;
    if (t < 2) { /* the first and the last entry of C, then random ones */
      bi = t ? s->batch - 1 : 0, i = t ? s->m - 1 : 0, j = t ? s->n - 1 : 0;
    } else {
      bi = (int64_t)(hl_philox_u32(seed, 99, 3 * (uint64_t)t) % (uint64_t)s->batch);
      i = (int64_t)(hl_philox_u32(seed, 99, 3 * (uint64_t)t + 1) % (uint64_t)s->m);
      j = (int64_t)(hl_philox_u32(seed, 99, 3 * (uint64_t)t + 2) % (uint64_t)s->n);
    }
    double exact = 0, mag = 0;
    for (int64_t q = 0; q < s->k; q++) {
      const double x = hl_gemm_load(ha, d->a_type, bi * d->stride_a + (s->ta ? q * d->lda + i : i * d->lda + q));
      const double y = hl_gemm_load(hb, d->b_type, bi * d->stride_b + (s->tb ? j * d->ldb + q : q * d->ldb + j));
      exact += x * y;
      mag += fabs(x * y);
    }
    unsigned char cell[8];
    p->d->be->copy_to_host(cell, (const char *)d->c + (size_t)(bi * d->stride_c + i * d->ldc + j) * out_size, out_size);
    const double got = hl_gemm_load(cell, d->c_type, 0);
    const double err = fabs(got - exact), lim = bound.out * fabs(exact) + bound.term * mag + bound.abs;
    if (!(err <= lim))
      hl_fatal("gemm %s %s (%lld x %lld x %lld, batch %lld) is wrong at C[%lld][%lld] of batch entry %lld: %.9g, fp64 "
               "reference %.9g, |error| %.3g > bound %.3g; not timing it, no CSV written",
               p->v->name, s->name, (long long)s->m, (long long)s->n, (long long)s->k, (long long)s->batch,
               (long long)i, (long long)j, (long long)bi, got, exact, err, lim);
    if (mag > 0 && err / mag > worst) worst = err / mag;
    if (lim > 0 && err / lim > *worst_ratio) *worst_ratio = err / lim;
  }
  return worst;
}

/* ------------------------------------------------------------- main -- */

static int parse_studies(const char *s) {
  if (!s) return 0;
  static const char *const names[] = {"square", "align", "gpt2"}; /* STUDY_ bits 0, 1, 2 */
  bool chosen[3];
  bench_parse_names("--studies", s, "study", names, 3, chosen);
  return (chosen[0] ? STUDY_SQUARE : 0) | (chosen[1] ? STUDY_ALIGN : 0) | (chosen[2] ? STUDY_GPT2 : 0);
}

/* --dtypes: variant names; each must exist, and (when named explicitly) run
 * here. Without --dtypes, what the device cannot run is skipped; the notice
 * lines go to `notice`, printed once every input has been accepted. */
static void parse_dtypes(const char *s, const bench_device *d, bool chosen[GEMM_VARIANTS], char *notice, size_t len) {
  char why[256];
  notice[0] = '\0';
  if (!s) {
    size_t k = 0;
    for (int i = 0; i < GEMM_VARIANTS; i++) {
      chosen[i] = gemm_variant_runs(d, &gemm_variants[i], why, sizeof why);
      if (!chosen[i] && !(gemm_variants[i].reference != GEMM_THROUGH_HALFLAB && d->kind != HL_DEVICE_CPU) && k < len)
        k += (size_t)snprintf(notice + k, len - k, "%s: gemm: skipping %s on this %s: %s\n", hl_prog(),
                              gemm_variants[i].name, d->name, why);
    }
    return;
  }
  const char *names[GEMM_VARIANTS];
  for (int i = 0; i < GEMM_VARIANTS; i++) names[i] = gemm_variants[i].name;
  bench_parse_names("--dtypes", s, "variant", names, GEMM_VARIANTS, chosen);
  for (int i = 0; i < GEMM_VARIANTS; i++)
    if (chosen[i] && !gemm_variant_runs(d, &gemm_variants[i], why, sizeof why))
      hl_usage_error("--dtypes: %s cannot run on this %s (%s): %s", names[i], d->name, d->facts->name, why);
}

static void list_variants(const bench_device *d) {
  printf("%-12s %-6s %-11s %-5s %-4s  %s\n", "variant", "inputs", "accumulate", "out", "runs", "implementation / why not");
  for (int i = 0; i < GEMM_VARIANTS; i++) {
    const gemm_variant *v = &gemm_variants[i];
    char why[256] = "", impl[256];
    const bool ok = gemm_variant_runs(d, v, why, sizeof why);
    const hl_gemm_desc probe = probe_desc(v);
    if (ok) gemm_implementation(d, v, &probe, impl, sizeof impl);
    printf("%-12s %-6s %-11s %-5s %-4s  %s\n", v->name, hl_dtype_name(v->in), hl_gemm_compute_name(v->compute),
           hl_dtype_name(v->out), ok ? "yes" : "no", ok ? impl : why);
  }
  printf("device: %s (%s)\n", d->name, d->facts->name);
}

typedef struct {
  bool done;
  double tflop_per_s, peak_pct;
  double max_err_over_bound; /* validation: the largest |error| / bound (<= 1, or the run stops) */
  char impl[256];            /* what ran, for the expectations' details */
} gemm_result;

/* ------------------------------------------------------ expectations -- */
static const char reason_peak[] =
    "tensor cores cannot exceed their datasheet rate (the peak table's); cuBLAS reaches three quarters of it on a "
    "product this large";
static const char reason_openblas[] =
    "hl_gemm's fp32 product calls the same cblas_sgemm on the same operands: only halflab's dispatch separates the "
    "two; outside 5% one of the runs was disturbed";
static const char reason_onednn[] =
    "halflab's bf16 product runs oneDNN's matmul primitive: only the dispatch separates the two; outside 10% one of "
    "the runs was disturbed";
static const char reason_bf16_gain[] =
    "a unit with R times fp32's peak rate (the peak table's ratio) gives large products at least 3/4 of that gain; "
    "and bf16 cannot exceed its own peak: the high bound is bf16's peak over fp32's measured rate";
static const char reason_fallback[] =
    "kernels/gemm.h hl_gemm_error_bound covers every rounding of the widened product: an entry beyond it is a "
    "wrong result";
static const char reason_fp16_widened[] =
    "the CPU's fp16 product widens to fp32 and runs the same sgemm: the conversions cost at most 20% at n >= 1024; "
    "above 1.1x the fp32 run was disturbed";
static const char reason_fp16_unit[] =
    "the conversions around the product cost at most 20% at n >= 1024";

/* GPU: fp16 8192^3 at 75% to 100% of the dense peak */
static void expect_gpu_peak(bench_expectations *e, const bench_device *d, const bench_peaks *pk, const gemm_result *res,
                            const shape_list *l) {
  const int fp16 = gemm_variant_index("fp16");
  const char *name = "fp16 8192^3 at 75% to 100% of the dense peak";
  char detail[256];
  int at = -1;
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->s[i].study, "square") && l->s[i].m == 8192) at = i;
  if (at < 0 || !res[at * GEMM_VARIANTS + fp16].done) {
    bench_expect_skip(e, d, name, "no fp16 8192^3 point in this run", reason_peak);
  } else if (!pk->known || pk->value[PEAK_FP16] <= 0) {
    bench_expect_skip(e, d, name, "peak unknown for this device", reason_peak);
  } else {
    const gemm_result *r = &res[at * GEMM_VARIANTS + fp16];
    snprintf(detail, sizeof detail, "%.1f TFLOP/s = %.1f%% of %.1f TFLOP/s", r->tflop_per_s, r->peak_pct, pk->value[PEAK_FP16]);
    bench_expect(e, d, name, r->peak_pct / 100.0, 0.75, 1.0, detail, reason_peak);
  }
}

/* CPU, one square shape: the bf16 path's gain over the fp32 path, between
 * 3/4 of the peaks' ratio and bf16's peak over fp32's measured rate */
static void expect_bf16_gain(bench_expectations *e, const bench_device *d, const bench_peaks *pk, const shape *s,
                             const gemm_result *rb16, const gemm_result *r32) {
  char name[128], detail[256];
  const double gain = rb16->tflop_per_s / r32->tflop_per_s;
  snprintf(detail, sizeof detail, "%.1f vs %.1f GFLOP/s = %.2fx; bf16 ran on %.120s", rb16->tflop_per_s * 1e3,
           r32->tflop_per_s * 1e3, gain, rb16->impl[0] ? rb16->impl : "?");
  if (!pk->known || pk->value[PEAK_BF16] <= 0 || pk->value[PEAK_FP32] <= 0) {
    snprintf(name, sizeof name, "bf16 path %lld^3 against the fp32 path", (long long)s->m);
    bench_expect_info(e, d, name, gain, detail, reason_bf16_gain);
    return;
  }
  const double ratio = pk->value[PEAK_BF16] / pk->value[PEAK_FP32];
  snprintf(name, sizeof name, "bf16 path / fp32 path at %lld^3 from 3/4 of the peaks' ratio (%.3gx) to bf16's peak",
           (long long)s->m, ratio);
  bench_expect(e, d, name, gain, 0.75 * ratio, pk->value[PEAK_BF16] / r32->tflop_per_s, detail, reason_bf16_gain);
}

/* CPU, one square shape n >= 1024: fp32 through hl_gemm within 5% of
 * cblas_sgemm called directly, the bf16 path within 10% of oneDNN's matmul
 * called directly, at 2048^3 and 4096^3 the bf16 path's gain, the bf16
 * fallback (bf16-widened) within its error bound, and the fp16 path at 80%
 * to 110% of the fp32 path (to 80% only where it does not widen). Returns
 * the number of expectations checked. */
/* An expectation on the TFLOP/s of one result over another's, between LOW and HIGH. */
static void expect_rate_ratio(bench_expectations *e, const bench_device *d, const char *name, const gemm_result *r,
                              const gemm_result *ref, double low, double high, const char *reason) {
  char detail[256];
  snprintf(detail, sizeof detail, "%.1f vs %.1f GFLOP/s = %.3f", r->tflop_per_s * 1e3, ref->tflop_per_s * 1e3,
           r->tflop_per_s / ref->tflop_per_s);
  bench_expect(e, d, name, r->tflop_per_s / ref->tflop_per_s, low, high, detail, reason);
}

static int expect_cpu_shape(bench_expectations *e, const bench_device *d, const bench_peaks *pk, const shape *s,
                            const gemm_result *at) {
  const gemm_result *r32 = &at[gemm_variant_index("fp32")], *rob = &at[gemm_variant_index("openblas")],
                    *r16 = &at[gemm_variant_index("fp16")], *rb16 = &at[gemm_variant_index("bf16")],
                    *rod = &at[gemm_variant_index("onednn-bf16")], *rbw = &at[gemm_variant_index("bf16-widened")];
  char name[96], detail[256];
  int checked = 0;
  if (r32->done && rob->done) {
    snprintf(name, sizeof name, "fp32 %lld^3 within 5%% of OpenBLAS called directly", (long long)s->m);
    expect_rate_ratio(e, d, name, r32, rob, 0.95, 1.05, reason_openblas);
    checked++;
  }
  if (rb16->done && rod->done) {
    snprintf(name, sizeof name, "bf16 %lld^3 within 10%% of oneDNN called directly", (long long)s->m);
    expect_rate_ratio(e, d, name, rb16, rod, 0.90, 1.10, reason_onednn);
    checked++;
  }
  if ((s->m == 2048 || s->m == 4096) && rb16->done && r32->done) {
    expect_bf16_gain(e, d, pk, s, rb16, r32);
    checked++;
  }
  if (rbw->done) {
    /* the portable path is held to correctness, not speed: every entry
     * sampled within the fp64 bound (a wrong one stops the run first) */
    snprintf(name, sizeof name, "bf16 fallback (widened) %lld^3 within its error bound", (long long)s->m);
    char vs[96] = "";
    if (rb16->done && r32->done)
      snprintf(vs, sizeof vs, "; bf16 path / fallback = %.2fx; fallback / fp32 path = %.3f", rb16->tflop_per_s / rbw->tflop_per_s,
               rbw->tflop_per_s / r32->tflop_per_s);
    snprintf(detail, sizeof detail, "max |err| / bound = %.3g over %d sampled entries; %.1f GFLOP/s%s",
             rbw->max_err_over_bound, CHECKED_ENTRIES, rbw->tflop_per_s * 1e3, vs);
    bench_expect(e, d, name, rbw->max_err_over_bound, NAN, 1.0, detail, reason_fallback);
    checked++;
  }
  if (r16->done && r32->done) {
    const bool widened = strstr(r16->impl, "widened") != NULL;
    snprintf(name, sizeof name, widened ? "fp16 path %lld^3 at 80%% to 110%% of the fp32 path" : "fp16 path %lld^3 "
             "at 80%% or more of the fp32 path", (long long)s->m);
    char b16[32] = "not run";
    if (rb16->done) snprintf(b16, sizeof b16, "%.3f", rb16->tflop_per_s / r32->tflop_per_s);
    snprintf(detail, sizeof detail, "%.1f vs %.1f GFLOP/s = %.3f (bf16 path: %s)", r16->tflop_per_s * 1e3,
             r32->tflop_per_s * 1e3, r16->tflop_per_s / r32->tflop_per_s, b16);
    bench_expect(e, d, name, r16->tflop_per_s / r32->tflop_per_s, 0.80, widened ? 1.10 : NAN, detail,
                 widened ? reason_fp16_widened : reason_fp16_unit);
    checked++;
  }
  return checked;
}

static void check_expectations(bench_expectations *e, const bench_device *d, const bench_peaks *pk,
                               const gemm_result *res, const shape_list *l) {
  if (d->kind == HL_DEVICE_CUDA) {
    expect_gpu_peak(e, d, pk, res, l);
    return;
  }
  int checked = 0;
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->s[i].study, "square") && l->s[i].m >= 1024)
      checked += expect_cpu_shape(e, d, pk, &l->s[i], &res[i * GEMM_VARIANTS]);
  if (!checked)
    bench_expect_skip(e, d, "CPU GEMM ratios at n >= 1024", "no square size >= 1024 with fp32 and its references in "
                      "this run", "the ratios compare large products only: small ones measure call overheads");
}

/* The command line, every value checked */
typedef struct {
  bench_common common;
  const char *dtypes; /* --dtypes as given: checked against the device once it is open */
  long long sizes[64];
  int nsizes, reps, studies;
  bool list, accuracy;
} gemm_options;

/* What the steps of one throughput run share */
typedef struct {
  const bench_device *dev;
  bool chosen[GEMM_VARIANTS];
  shape_list shapes;
  size_t rot; /* rotation_bytes() */
  uint64_t seed;
  const char *outdir;
  char outbuf[4096];
  bench_peaks peaks;
  bench_method method;
  hl_csv_rows rows;     /* gemm.csv, written once every point has run */
  gemm_result *results; /* [shape * GEMM_VARIANTS + variant], for the expectations */
} gemm_run;

/* What one point measured, for its row */
typedef struct {
  double max_err_norm, err_bound_norm, max_err_over_bound;
  bench_timing timing;
} point_outcome;

/* Every option and value checked before anything is opened or allocated
 * (--dtypes waits for the device) */
static void parse_options(int argc, char **argv, gemm_options *o) {
  *o = (gemm_options){.common = {.cli = hl_cli_common_defaults(usage)}};
  bench_common *c = &o->common;
  enum { OPT_LIST = 1, OPT_SIZES, OPT_DTYPES, OPT_STUDIES, OPT_ACCURACY };
  static const struct option longopts[] = {BENCH_COMMON_LONGOPTS,
                                           {"list", no_argument, NULL, OPT_LIST},
                                           {"sizes", required_argument, NULL, OPT_SIZES},
                                           {"dtypes", required_argument, NULL, OPT_DTYPES},
                                           {"studies", required_argument, NULL, OPT_STUDIES},
                                           {"accuracy", no_argument, NULL, OPT_ACCURACY},
                                           {NULL, 0, NULL, 0}};
  const char *sizes_s = NULL, *studies_s = NULL;
  int opt;
  opterr = 0;
  optind = 1;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (bench_common_option(c, opt, argv)) continue;
    switch (opt) {
      case OPT_LIST: o->list = true; break;
      case OPT_SIZES: sizes_s = optarg; break;
      case OPT_DTYPES: o->dtypes = optarg; break;
      case OPT_STUDIES: studies_s = optarg; break;
      case OPT_ACCURACY: o->accuracy = true; break;
      default: bench_bad_option(opt, argv, longopts);
    }
  }
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);

  o->nsizes = sizes_s ? hl_parse_int_list("--sizes", sizes_s, 1, 1000000, o->sizes, 64) : 0;
  o->reps = bench_parse_reps(c->reps);
  if (o->accuracy && (studies_s || o->list || c->reps))
    hl_usage_error("--accuracy takes --sizes (the k values), --dtypes, --quick, --seed, --device and --out only");
  o->studies = parse_studies(studies_s);
  if (!o->studies) o->studies = o->nsizes ? STUDY_SQUARE : (STUDY_SQUARE | STUDY_ALIGN | STUDY_GPT2);
  if (o->nsizes && !(o->studies & STUDY_SQUARE))
    hl_usage_error("--sizes sets the square sizes: --studies must include square");
}

/* The memory of the largest pools of any variant (one variant's pools are held at a time) */
static void require_pool_memory(const gemm_run *run) {
  uint64_t need = 0, need_host = 0;
  for (int vi = 0; vi < GEMM_VARIANTS; vi++) {
    if (!run->chosen[vi]) continue;
    size_t in_bytes, out_bytes;
    pool_sizes(&gemm_variants[vi], &run->shapes, run->rot, &in_bytes, &out_bytes);
    if (in_bytes + out_bytes > need) need = in_bytes + out_bytes;
    if (in_bytes > need_host) need_host = in_bytes;
  }
  bench_require_memory(run->dev, "gemm (operands of the largest size)", need,
                       run->dev->kind == HL_DEVICE_CUDA ? need_host : 0);
}

/* The variants the device runs, the shapes of the chosen studies, and a
 * refusal before anything is allocated when their pools would not fit;
 * variant_notice: the variants skipped, printed when the run starts */
static void plan_run(gemm_run *run, const gemm_options *o, char *variant_notice, size_t notice_len) {
  const bench_device *dev = run->dev;
  parse_dtypes(o->dtypes, dev, run->chosen, variant_notice, notice_len);
  build_shapes(&run->shapes, dev, o->studies, o->common.cli.quick, o->sizes, o->nsizes);
  run->rot = rotation_bytes(dev);
  require_pool_memory(run);
}

/* Once every input is accepted: the output folder, the notices held back
 * until now, the peaks and the timing method */
static void start_run(gemm_run *run, const gemm_options *o, const char *device_notice, const char *variant_notice) {
  const bench_device *dev = run->dev;
  run->outdir = bench_outdir(o->common.cli.out, dev->kind, BENCH_TABLES("gemm.csv", "gemm_expectations.csv"), run->outbuf,
                               sizeof run->outbuf);
  fputs(device_notice, stderr);
  fputs(variant_notice, stderr);
  run->peaks = bench_peaks_for(dev->facts, dev->kind);
  run->method = bench_method_for(dev, o->reps, o->common.cli.quick);
}

static void record_metadata(const gemm_run *run, bool quick) {
  const bench_device *dev = run->dev;
  bench_peaks_record(&run->peaks);
  hl_meta_set("method", "%s", bench_method_text(dev, &run->method));
  hl_meta_set("rotation", "operands rotate through slots so that a launch's inputs were last used >= %.0f MiB ago (2x %s)",
              (double)run->rot / 1048576.0, dev->kind == HL_DEVICE_CUDA ? "L2" : "last-level cache, capped at 1 GiB");
  hl_meta_set("validation", "every point: %d sampled entries of the first slot against an fp64 product of the stored "
              "inputs, bound of kernels/gemm.h hl_gemm_error_bound: |err| <= out |exact| + term sum|a b| + abs; max_err_norm = "
              "max |err| / sum|a b|, err_bound_norm = term, max_err_over_bound = max |err| / bound (<= 1)", CHECKED_ENTRIES);
  hl_meta_set("flop", "2 m n k per batch entry; tflop_per_s from the median time, tflop_per_s_best from the minimum");
  hl_meta_set("seed", "%llu", (unsigned long long)run->seed);
  if (quick) hl_meta_set("quick", "yes");
}

/* Pools that hold v's operands for every shape: the ones in hand when they
 * already do (same input type, large enough), else new random ones */
static void ensure_pools(operand_pools *p, const gemm_run *run, const gemm_variant *v) {
  const bench_device *dev = run->dev;
  size_t in_bytes, out_bytes;
  pool_sizes(v, &run->shapes, run->rot, &in_bytes, &out_bytes);
  if (p->in && p->type == v->in && p->in_have >= in_bytes && p->out_have >= out_bytes) return;
  free_pools(dev, p);
  hl_range_push("gemm: random operands");
  bench_progress("gemm: %s operands (%.0f MiB)", hl_dtype_name(v->in), (double)in_bytes / 1048576.0);
  p->in = bench_alloc(dev, in_bytes, "GEMM inputs");
  p->out = bench_alloc(dev, out_bytes, "GEMM outputs");
  p->host = dev->kind == HL_DEVICE_CUDA ? bench_host_alloc(in_bytes, "a host copy of the GEMM inputs") : p->in;
  fill_random(p->host, v->in, in_bytes, run->seed);
  if (dev->kind == HL_DEVICE_CUDA) dev->be->copy_from_host(p->in, p->host, in_bytes);
  dev->be->zero(p->out, out_bytes);
  p->in_have = in_bytes, p->out_have = out_bytes, p->type = v->in;
  hl_range_pop();
}

/* Validates the point's product, then times it */
static point_outcome measure_point(point *p, const gemm_run *run, const char *host_pool) {
  const shape *s = p->s;
  char range[96];
  snprintf(range, sizeof range, "gemm %s %s %lldx%lldx%lld", p->v->name, s->name, (long long)s->m, (long long)s->n,
           (long long)s->k);
  bench_progress("%s", range);
  point_outcome o;
  hl_range_push(range);
  hl_range_push("validate");
  o.max_err_norm = validate(p, host_pool, run->seed, &o.err_bound_norm, &o.max_err_over_bound);
  hl_range_pop();
  hl_range_push("time");
  o.timing = bench_time(run->dev, &run->method, launch, p);
  hl_range_pop();
  hl_range_pop();
  return o;
}

/* The point's row of gemm.csv, its result (index si * GEMM_VARIANTS + vi) and its line on stdout */
static void record_point(gemm_run *run, const point *p, int si, int vi, const point_outcome *o) {
  const bench_device *dev = run->dev;
  const gemm_variant *v = p->v;
  const shape *s = p->s;
  const bench_timing *t = &o->timing;
  const int64_t flop = 2 * s->m * s->n * s->k * s->batch;
  const double tflop_per_s = (double)flop / (t->ms.median * 1e-3) / 1e12;
  const double peak = run->peaks.value[v->peak];
  const double peak_pct = peak > 0 ? 100.0 * tflop_per_s / peak : NAN;
  char impl[256], b2[32];
  gemm_implementation(dev, v, &p->desc, impl, sizeof impl);
  hl_row row;
  hl_row_begin(&row, &bench_gemm_schema);
  hl_row_text(&row, "device", dev->name);
  hl_row_text(&row, "study", s->study);
  hl_row_text(&row, "shape", s->name);
  hl_row_text(&row, "variant", v->name);
  hl_row_text(&row, "dtype", hl_dtype_name(v->in));
  hl_row_text(&row, "accumulate", hl_gemm_compute_name(v->compute));
  hl_row_text(&row, "out_dtype", hl_dtype_name(v->out));
  hl_row_text(&row, "implementation", impl);
  hl_row_int(&row, "m", s->m);
  hl_row_int(&row, "n", s->n);
  hl_row_int(&row, "k", s->k);
  hl_row_int(&row, "batch", s->batch);
  hl_row_bool(&row, "trans_a", s->ta);
  hl_row_bool(&row, "trans_b", s->tb);
  hl_row_int(&row, "flop", flop);
  bench_row_timing(&row, t);
  hl_row_int(&row, "rotation_slots", (int64_t)p->nslots);
  hl_row_real(&row, "tflop_per_s", tflop_per_s);
  hl_row_real(&row, "tflop_per_s_best", (double)flop / (t->ms.min * 1e-3) / 1e12);
  if (peak > 0) {
    hl_row_real(&row, "peak_tflop_per_s", peak);
    hl_row_real(&row, "peak_pct", peak_pct);
  } else {
    hl_row_missing(&row, "peak_tflop_per_s");
    hl_row_missing(&row, "peak_pct");
  }
  hl_row_real(&row, "max_err_norm", o->max_err_norm);
  hl_row_real(&row, "err_bound_norm", o->err_bound_norm);
  hl_row_real(&row, "max_err_over_bound", o->max_err_over_bound);
  hl_csv_rows_put(&run->rows, &row);
  gemm_result *r = &run->results[si * GEMM_VARIANTS + vi];
  r->done = true, r->tflop_per_s = tflop_per_s, r->peak_pct = peak_pct, r->max_err_over_bound = o->max_err_over_bound;
  snprintf(r->impl, sizeof r->impl, "%s", impl);
  printf("%-12s %-6s %-13s %6lld %6lld %6lld %5lld %14.4f %11.3f %8s\n", v->name, s->study, s->name,
         (long long)s->m, (long long)s->n, (long long)s->k, (long long)s->batch, t->ms.median, tflop_per_s,
         isnan(peak_pct) ? "-" : (snprintf(b2, sizeof b2, "%.6g", peak_pct), b2));
  fflush(stdout);
}

/* Variant vi at shape si on the pools: skipped with one line on stderr
 * where the backend does not run that shape, else measured and recorded */
static void run_point(gemm_run *run, int vi, int si, const operand_pools *pools) {
  const gemm_variant *v = &gemm_variants[vi];
  const shape *s = &run->shapes.s[si];
  point p = {.d = run->dev, .v = v, .s = s, .L = layout_of(s, v), .in = pools->in, .out = pools->out};
  p.nslots = slots_for(p.L.bytes, run->rot);
  point_desc(&p, 0);
  char why[256];
  if (v->reference == GEMM_CPU_FALLBACK && strcmp(s->study, "square")) return; /* a square sweep says what it costs */
  const bool runs = v->reference == GEMM_THROUGH_HALFLAB ? run->dev->be->gemm->supports(&p.desc, why, sizeof why)
                                                         : reference_prepare(&p, why, sizeof why);
  if (!runs) {
    fprintf(stderr, "%s: gemm: %s skips %s (%lld x %lld x %lld): %s\n", hl_prog(), v->name, s->name,
            (long long)s->m, (long long)s->n, (long long)s->k, why);
    return;
  }
  const point_outcome o = measure_point(&p, run, pools->host);
  record_point(run, &p, si, vi, &o);
  reference_finish(&p);
}

/* Every chosen variant at every shape */
static void run_variants(gemm_run *run) {
  run->results = calloc((size_t)run->shapes.n * GEMM_VARIANTS, sizeof *run->results);
  if (!run->results) hl_fatal("out of memory");
  printf("%-12s %-6s %-13s %6s %6s %6s %5s %14s %11s %8s\n", "variant", "study", "shape", "m", "n", "k", "batch",
         "time_ms_median", "tflop_per_s", "peak_pct");
  operand_pools pools = {.type = HL_F64};
  /* Variants that share an input type share the pools; within such a group
   * each shape's variants run back to back (each reference just before its
   * path), so a slow stretch of the machine lands on both sides of a ratio
   * rather than on one variant's whole sweep. */
  static const int order[GEMM_VARIANTS] = {6, 0, 1, 2, 3, 7, 4, 8, 5};
  for (int first = 0; first < GEMM_VARIANTS;) {
    int end = first + 1;
    while (end < GEMM_VARIANTS && gemm_variants[order[end]].in == gemm_variants[order[first]].in) end++;
    int group[GEMM_VARIANTS], n = 0;
    for (int oi = first; oi < end; oi++)
      if (run->chosen[order[oi]]) group[n++] = order[oi];
    for (int gi = 0; gi < n; gi++) ensure_pools(&pools, run, &gemm_variants[group[gi]]);
    for (int si = 0; si < run->shapes.n; si++)
      for (int gi = 0; gi < n; gi++) run_point(run, group[gi], si, &pools);
    first = end;
  }
  free_pools(run->dev, &pools);
}

static void write_gemm_csv(gemm_run *run) {
  bench_rows_write(&run->rows, run->outdir, &bench_gemm_schema);
  hl_csv_rows_free(&run->rows);
}

int bench_gemm_main(int argc, char **argv) {
  gemm_options opt;
  parse_options(argc, argv, &opt);
  bench_device dev;
  char device_notice[512];
  bench_device_open_deferred(&dev, opt.common.cli.device, device_notice, sizeof device_notice);
  if (!dev.be->gemm) hl_fatal("the %s backend of this build has no GEMM kernels", dev.name);
  /* --list and --accuracy need nothing more than the device */
  if (opt.list) {
    fputs(device_notice, stderr);
    list_variants(&dev);
    return 0;
  }
  if (opt.accuracy)
    return gemm_accuracy_main(&dev, &opt.common, opt.dtypes, opt.nsizes ? opt.sizes : NULL, opt.nsizes, device_notice);

  gemm_run run = {.dev = &dev, .seed = opt.common.cli.seed};
  char variant_notice[2048];
  plan_run(&run, &opt, variant_notice, sizeof variant_notice);
  start_run(&run, &opt, device_notice, variant_notice);
  record_metadata(&run, opt.common.cli.quick);
  run_variants(&run);
  write_gemm_csv(&run);

  /* ---- the expectations, from this run's rows */
  bench_expectations expectations = {.schema = &bench_gemm_expectations_schema};
  check_expectations(&expectations, &dev, &run.peaks, run.results, &run.shapes);
  bench_expectations_write(&expectations, run.outdir);
  fprintf(stderr, "%s: gemm: wrote %s/gemm.csv\n", hl_prog(), run.outdir);
  free(run.results);
  free(run.shapes.s);
  return 0;
}
