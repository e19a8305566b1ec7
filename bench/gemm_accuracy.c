/* gemm_accuracy.c — halflab-bench gemm --accuracy: how far C = A B lies
 * from an fp64 reference as k grows (64 ... 65536), per input format and
 * accumulation format: the chart that shows why accumulation stays in fp32.
 *
 * Two ways, both written to gemm_accuracy.csv:
 *   simulated (always, on the CPU): each output a sequential dot product
 *     whose products are formed in fp32 (exact for fp16/bf16/fp8/tf32
 *     inputs) and whose running sum is rounded to the accumulation format
 *     after every addition (to fp32 first, then to fp16/bf16: formats/half.h);
 *     16 x 16 outputs;
 *   cublas (with --device cuda/auto on a GPU): the device's own GEMM on the
 *     same kind of data, 64 x 64 outputs, fp32 output where the accumulation
 *     is fp32 (fp8: bf16 output, the combination the throughput run uses);
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
#include "kernels/gemm_reference.h"

typedef struct {
  const char *name;
  hl_dtype in;     /* storage of the inputs */
  bool tf32;           /* fp32 storage, products of tf32-rounded inputs */
  hl_dtype acc;    /* accumulation format: F32, F16 or BF16 */
  const char *gpu;     /* the throughput variant that runs it on a GPU, or NULL */
} acc_variant;

static const acc_variant variants[] = {
    {"fp32", HL_F32, false, HL_F32, "fp32"},
    {"tf32", HL_F32, true, HL_F32, "tf32"},
    {"fp16", HL_F16, false, HL_F32, "fp16"},
    {"fp16-acc16", HL_F16, false, HL_F16, "fp16-acc16"},
    {"bf16", HL_BF16, false, HL_F32, "bf16"},
    {"bf16-accbf16", HL_BF16, false, HL_BF16, NULL},
    {"fp8", HL_E4M3, false, HL_F32, "fp8"},
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

static void exact_products(const acc_variant *v, const float *a, const float *b, int m, int n, int64_t k,
                           double *orig, double *st) {
#pragma omp parallel for schedule(static)
  for (int ij = 0; ij < m * n; ij++) {
    const int i = ij / n, j = ij % n;
    double so = 0, ss = 0;
    for (int64_t p = 0; p < k; p++) {
      so += (double)a[i * k + p] * b[j * k + p];
      ss += (double)stored(v, a[i * k + p]) * stored(v, b[j * k + p]);
    }
    orig[ij] = so, st[ij] = ss;
  }
}

static fro simulate(const acc_variant *v, const float *a, const float *b, int m, int n, int64_t k,
                    const double *orig, const double *st) {
  fro f = {0};
  double *got = malloc(sizeof *got * (size_t)(m * n));
  if (!got) hl_fatal("out of memory");
#pragma omp parallel for schedule(static)
  for (int ij = 0; ij < m * n; ij++) {
    const int i = ij / n, j = ij % n;
    float acc = 0.0f;
    for (int64_t p = 0; p < k; p++) {
      const float prod = stored(v, a[i * k + p]) * stored(v, b[j * k + p]);
      acc = round_acc(v->acc, acc + prod);
    }
    got[ij] = acc;
  }
  for (int ij = 0; ij < m * n; ij++) fro_add(&f, got[ij], orig[ij], st[ij]);
  free(got);
  return f;
}

/* The output type of a library's run (cublas, onednn): fp32 where the accumulation is fp32, so
 * that no output rounding hides the accumulation's error; fp16 for fp16
 * accumulation; bf16 for fp8, the layout the throughput run exercises. */
static hl_dtype library_out(const gemm_variant *gv) {
  if (gv->in == HL_E4M3) return gv->out;
  return gv->compute == HL_COMPUTE_F16 ? HL_F16 : gv->in == HL_F64 ? HL_F64 : HL_F32;
}

/* The product a library's GEMM computes: A m x k, B n x k (transposed), C m x n */
static hl_gemm_desc library_desc(const gemm_variant *gv, int m, int n, int64_t k) {
  hl_gemm_desc g = {.trans_b = true, .m = m, .n = n, .k = k, .batch = 1, .a_type = gv->in, .b_type = gv->in,
                    .c_type = library_out(gv), .compute = gv->compute, .alpha = 1, .beta = 0, .lda = k, .ldb = k,
                    .ldc = n, .a_scale = 1, .b_scale = 1};
  return g;
}

static fro on_device(const bench_device *d, const gemm_variant *gv, const float *a, const float *b, int m, int n,
                     int64_t k, const double *orig, const double *st) {
  const hl_dtype out_type = library_out(gv);
  const size_t in = hl_dtype_size(gv->in), out = hl_dtype_size(out_type);
  char *ha = bench_host_alloc(in * (size_t)(m * k), "accuracy inputs"), *hb = bench_host_alloc(in * (size_t)(n * k), "accuracy inputs");
  char *hc = bench_host_alloc(out * (size_t)(m * n), "accuracy outputs");
  for (int64_t i = 0; i < (int64_t)m * k; i++) hl_gemm_store(ha, gv->in, i, a[i]);
  for (int64_t i = 0; i < (int64_t)n * k; i++) hl_gemm_store(hb, gv->in, i, b[i]);
  void *da = bench_alloc(d, in * (size_t)(m * k), "accuracy inputs"), *db = bench_alloc(d, in * (size_t)(n * k), "accuracy inputs");
  void *dc = bench_alloc(d, out * (size_t)(m * n), "accuracy outputs");
  d->be->copy_from_host(da, ha, in * (size_t)(m * k));
  d->be->copy_from_host(db, hb, in * (size_t)(n * k));
  hl_gemm_desc g = library_desc(gv, m, n, k);
  g.a = da, g.b = db, g.c = dc;
  d->be->gemm->gemm(&g);
  d->be->synchronize();
  d->be->copy_to_host(hc, dc, out * (size_t)(m * n));
  fro f = {0};
  for (int ij = 0; ij < m * n; ij++) fro_add(&f, hl_gemm_load(hc, out_type, ij), orig[ij], st[ij]);
  bench_free(d, da), bench_free(d, db), bench_free(d, dc);
  free(ha), free(hb), free(hc);
  return f;
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
  hl_meta_set("method", "simulated: sequential dot products of %d x %d outputs on the CPU, fp32 products, the running "
              "sum rounded to the accumulation format after each addition; cublas: %d x %d outputs by the device's "
              "GEMM; onednn: %d x %d outputs by the CPU backend's bf16 GEMM on oneDNN's matmul; errors normwise "
              "(Frobenius) against fp64", sm, sm, gm, gm, gm, gm);
  hl_meta_set("data", "signed: uniform in [-1, 1) (partial sums grow like sqrt(k)); positive: uniform in [0, 1) "
              "(partial sums grow like k/4: the hard case for a narrow accumulator)");
  hl_meta_set("errors", "rel_err against the fp64 product of the original fp32 data (input rounding included); "
              "rel_err_accumulation against the fp64 product of the inputs as stored (accumulation and output rounding)");
  hl_meta_set("seed", "%llu", (unsigned long long)c->cli.seed);
  if (c->cli.quick) hl_meta_set("quick", "yes");

  hl_csv_rows rows = {0};
  const int side = gm;
  const bench_device cpu = {HL_DEVICE_CPU, &hl_backend_cpu, hl_device_facts_get(HL_DEVICE_CPU), "cpu"};
  float *a = bench_host_alloc(sizeof(float) * (size_t)side * (size_t)kmax, "accuracy data");
  float *b = bench_host_alloc(sizeof(float) * (size_t)side * (size_t)kmax, "accuracy data");
  double *orig = bench_host_alloc(sizeof(double) * (size_t)(side * side), "references");
  double *st = bench_host_alloc(sizeof(double) * (size_t)(side * side), "references");
  printf("%-12s %-9s %-13s %6s %12s %12s\n", "variant", "method", "data", "k", "rel_err", "rel_err_acc");
  hl_range_push("gemm --accuracy");
  enum { SIMULATED, CUBLAS, ONEDNN, METHODS };
  static const char *method_names[METHODS] = {"simulated", "cublas", "onednn"};
  for (int vi = 0; vi < NVARIANTS; vi++) {
    if (!chosen[vi]) continue;
    const acc_variant *v = &variants[vi];
    const gemm_variant *gv = v->gpu ? &gemm_variants[gemm_variant_index(v->gpu)] : NULL;
    char why[256] = "";
    bool runs[METHODS] = {true, gpu && gv && gemm_variant_runs(d, gv, why, sizeof why), false};
    if (gpu && gv && !runs[CUBLAS]) fprintf(stderr, "%s: gemm --accuracy: %s not on this GPU: %s\n", hl_prog(), v->name, why);
    if (gv && gv->in == HL_BF16 && v->acc == HL_F32) {
      const hl_gemm_desc probe = library_desc(gv, gm, gm, kdef[0]);
      runs[ONEDNN] = hl_onednn_gemm_describe(&probe, why, sizeof why);
      if (!runs[ONEDNN]) fprintf(stderr, "%s: gemm --accuracy: no onednn line for %s: %s\n", hl_prog(), v->name, why);
    }
    for (int data = 0; data < 2; data++)
      for (int ki = 0; ki < nk; ki++) {
        const int64_t k = kdef[ki];
        for (int method = 0; method < METHODS; method++) {
          if (!runs[method]) continue;
          const int m = method == SIMULATED ? sm : gm;
          if (method == CUBLAS && k % 16 && gv->in == HL_E4M3) continue; /* cuBLASLt's fp8 layout rule */
          bench_progress("accuracy %s %s k=%lld %s", v->name, data_names[data], (long long)k, method_names[method]);
          make_data(a, b, m, m, k, data, c->cli.seed);
          exact_products(v, a, b, m, m, k, orig, st);
          const bench_device *on = method == ONEDNN ? &cpu : d;
          const fro f = method == SIMULATED ? simulate(v, a, b, m, m, k, orig, st) : on_device(on, gv, a, b, m, m, k, orig, st);
          const double rel = sqrt(f.num_total / f.den_total), rel_acc = sqrt(f.num_acc / f.den_acc);
          char impl[256];
          if (method == SIMULATED) {
            snprintf(impl, sizeof impl, "simulated on the CPU: sequential sum rounded to %s after every addition",
                     hl_dtype_name(v->acc));
          } else {
            const hl_gemm_desc g = library_desc(gv, m, m, k);
            gemm_implementation(on, gv, &g, impl, sizeof impl);
            if (library_out(gv) != gv->out)
              snprintf(impl + strlen(impl), sizeof impl - strlen(impl), "; %s output", hl_dtype_name(library_out(gv)));
          }
          const char *input = v->tf32 ? "tf32" : hl_dtype_name(v->in);
          const char *out = method == SIMULATED ? hl_dtype_name(v->acc) : hl_dtype_name(library_out(gv));
          hl_row row;
          hl_row_begin(&row, &bench_gemm_accuracy_schema);
          hl_row_text(&row, "device", method == SIMULATED ? "cpu" : on->name);
          hl_row_text(&row, "method", method_names[method]);
          hl_row_text(&row, "variant", v->name);
          hl_row_text(&row, "input", input);
          hl_row_text(&row, "accumulate", hl_dtype_name(v->acc));
          hl_row_text(&row, "out_dtype", out);
          hl_row_text(&row, "data", data_names[data]);
          hl_row_int(&row, "m", m);
          hl_row_int(&row, "n", m);
          hl_row_int(&row, "k", k);
          hl_row_real(&row, "rel_err", rel);
          hl_row_real(&row, "rel_err_accumulation", rel_acc);
          hl_row_text(&row, "implementation", impl);
          hl_csv_rows_put(&rows, &row);
          printf("%-12s %-9s %-13s %6lld %12.4g %12.4g\n", v->name, method_names[method], data_names[data],
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
