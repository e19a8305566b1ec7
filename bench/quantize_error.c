/* quantize_error.c — halflab-bench quantize-error: what the narrow formats
 * and their scale rules do to a GPT's real tensors (the weights, gradients
 * and activations halflab-train --save-init, --dump-grads and
 * --dump-activations write).
 *
 * Every tensor of two or more dimensions is viewed as a matrix (its last
 * dimension the columns, the reduction dimension of the product that reads
 * it) and quantized through the CPU backend's quantizers
 * (kernels/quantize.h) in each element format under each scale rule:
 *   none        scale 1: the values as they are
 *   tensor      Transformer Engine's per-tensor scale, max / amax
 *   block-fp32  DeepSeek-V3's 1x128 fp32 scales (e4m3)
 *   mx-floor    OCP MX's E8M0 scale per 1x32 block, rounded down
 *   mx-rceil    the E8M0 scale rounded up (cuBLAS, Transformer Engine)
 *   nvfp4       E4M3 scales per 1x16 block and an fp32 tensor scale (e2m1)
 * then decoded, and compared with the original values: the share of
 * elements that became zero, subnormal, normal or clipped, the share of
 * blocks whose maximum was clipped, the SQNR and the largest relative error
 * (quantize_error.csv). The scale sweep (quantize_sweep.csv) takes, per
 * model and kind, the tensor with the largest amax over rms (the most
 * outlying values) and moves its per-tensor scale over powers of two around
 * max / amax. Where a model's activations and weights are both given, each
 * linear layer's product with both operands quantized is held against its
 * fp64 product (quantize_gemm.csv, bench/quantize_gemm.c). All of it is
 * software quantization on the CPU: emulated, no fp8, fp6 or fp4 unit is
 * used. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/quantize_gemm.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/models/weight_file.h"
#include "formats/fatal.h"
#include "kernels/quantize.h"
#include "kernels/quantize_math.h"

#define UNIT "cpu: software quantization (emulated)"
enum { MAX_SOURCES = 16 };
/* The GEMM study's rows of X per layer: the product's cost grows with them,
 * its error barely does */
enum { GEMM_X_ROWS = 256, GEMM_X_ROWS_QUICK = 128 };

/* --tensors MODEL:KIND:FILE */
typedef struct {
  char model[64];
  const char *kind; /* weight, activation or gradient */
  const char *path;
  hl_weight_file file;
} source;

/* One element format under one scale rule */
typedef struct {
  hl_dtype element;
  hl_scale_rule rule;
  bool unscaled; /* the tensor rule at scale 1: "none" */
} probe;

static const probe probes[] = {
    {HL_E4M3, HL_SCALE_TENSOR, true},  {HL_E4M3, HL_SCALE_TENSOR, false}, {HL_E4M3, HL_SCALE_BLOCK_FP32, false},
    {HL_E4M3, HL_SCALE_MX_FLOOR, false}, {HL_E4M3, HL_SCALE_MX_RCEIL, false},
    {HL_E5M2, HL_SCALE_TENSOR, true},  {HL_E5M2, HL_SCALE_TENSOR, false}, {HL_E5M2, HL_SCALE_MX_FLOOR, false},
    {HL_E5M2, HL_SCALE_MX_RCEIL, false},
    {HL_E2M3, HL_SCALE_TENSOR, true},  {HL_E2M3, HL_SCALE_TENSOR, false}, {HL_E2M3, HL_SCALE_MX_FLOOR, false},
    {HL_E2M3, HL_SCALE_MX_RCEIL, false},
    {HL_E3M2, HL_SCALE_TENSOR, true},  {HL_E3M2, HL_SCALE_TENSOR, false}, {HL_E3M2, HL_SCALE_MX_FLOOR, false},
    {HL_E3M2, HL_SCALE_MX_RCEIL, false},
    {HL_E2M1, HL_SCALE_TENSOR, true},  {HL_E2M1, HL_SCALE_TENSOR, false}, {HL_E2M1, HL_SCALE_MX_FLOOR, false},
    {HL_E2M1, HL_SCALE_MX_RCEIL, false}, {HL_E2M1, HL_SCALE_NVFP4, false},
};
enum { NPROBES = sizeof probes / sizeof probes[0] };
static const hl_dtype sweep_formats[] = {HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1};
enum { NSWEEP_FORMATS = sizeof sweep_formats / sizeof sweep_formats[0] };

static const char *probe_rule_name(const probe *p) { return p->unscaled ? "none" : hl_scale_rule_name(p->rule); }

/* "whole", "1x32", ... */
static void block_text(const hl_quant_spec *s, char *out, size_t len) {
  if (s->rule == HL_SCALE_TENSOR) snprintf(out, len, "whole");
  else snprintf(out, len, "%ux%u", s->block_rows, s->block_cols);
}

/* The buffers one quantization needs, sized for the largest tensor */
typedef struct {
  hl_quantized q;
  float *decoded;
} workspace;

/* What a quantization did: the kernel's counts, the error against x */
typedef struct {
  hl_quant_stats stats;
  float encode_scale;
  double signal, noise; /* sums of x^2 and (decoded - x)^2 */
  double max_rel_err;   /* over x != 0 */
} outcome;

static outcome quantize_once(const hl_quant_spec *spec, const float *x, size_t rows, size_t cols, workspace *w) {
  outcome o = {0};
  const struct hl_quantize_kernels *k = hl_backend_cpu.quantize;
  k->quantize(spec, x, rows, cols, &w->q, &o.stats);
  k->dequantize(spec, &w->q, rows, cols, w->decoded);
  o.encode_scale = w->q.encode_scale;
  double signal = 0, noise = 0, worst = 0;
  const size_t n = rows * cols;
  const float *y = w->decoded;
#pragma omp parallel for schedule(static) reduction(+ : signal, noise) reduction(max : worst)
  for (size_t i = 0; i < n; i++) {
    const double e = (double)y[i] - (double)x[i];
    signal += (double)x[i] * x[i];
    noise += e * e;
    if (x[i] != 0.0f) worst = fmax(worst, fabs(e) / fabs((double)x[i]));
  }
  o.signal = signal, o.noise = noise, o.max_rel_err = worst;
  return o;
}

/* The shares and errors every row of both tables has */
static void row_outcome(hl_row *row, const outcome *o) {
  const double n = (double)o->stats.elements;
  const uint64_t zero = o->stats.zero_in + o->stats.flushed_to_zero;
  hl_row_real(row, "zero_share", (double)zero / n);
  hl_row_real(row, "subnormal_share", (double)o->stats.subnormal / n);
  hl_row_real(row, "normal_share", (double)(o->stats.elements - zero - o->stats.subnormal - o->stats.clipped) / n);
  hl_row_real(row, "clipped_share", (double)o->stats.clipped / n);
  hl_row_real(row, "flushed_share", (double)o->stats.flushed_to_zero / n);
  if (o->noise > 0) hl_row_real(row, "sqnr_db", 10.0 * log10(o->signal / o->noise));
}

static void row_tensor(hl_row *row, const hl_schema *s, const source *src, const hl_weight_entry *e) {
  hl_row_begin(row, s);
  hl_row_text(row, "device", "cpu");
  hl_row_text(row, "unit", UNIT);
  hl_row_text(row, "model", src->model);
  hl_row_text(row, "kind", src->kind);
  hl_row_text(row, "tensor", e->name);
}

/* ---------------------------------------------------------- options -- */

typedef struct {
  source sources[MAX_SOURCES];
  int n;
  int sweep_lo, sweep_hi, sweep_step; /* log2 of the scale over max / amax */
  const char *tensors_made;           /* --tensors-made: how the files were made, for the metadata */
} qe_options;

enum { OPT_TENSORS = 1100, OPT_TENSORS_MADE };

static void parse_source(const char *arg, source *s) {
  const char *c1 = strchr(arg, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c2 || c1 == arg || c2[1] == '\0')
    hl_usage_error("--tensors '%s': expected MODEL:KIND:FILE (KIND weight, activation or gradient)", arg);
  if ((size_t)(c1 - arg) >= sizeof s->model) hl_usage_error("--tensors '%s': the model's name is too long", arg);
  snprintf(s->model, sizeof s->model, "%.*s", (int)(c1 - arg), arg);
  for (const char *p = s->model; *p; p++)
    if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-_", *p))
      hl_usage_error("--tensors '%s': the model's name takes a-z, 0-9, - and _ only", arg);
  static const char *const kinds[] = {"weight", "activation", "gradient"};
  s->kind = NULL;
  for (int k = 0; k < 3; k++)
    if ((size_t)(c2 - c1 - 1) == strlen(kinds[k]) && !strncmp(c1 + 1, kinds[k], strlen(kinds[k]))) s->kind = kinds[k];
  if (!s->kind) hl_usage_error("--tensors '%s': unknown kind '%.*s' (weight, activation or gradient)", arg, (int)(c2 - c1 - 1), c1 + 1);
  s->path = c2 + 1;
}

static void parse_options(int argc, char **argv, bench_common *common, qe_options *o) {
  static const struct option longopts[] = {
      BENCH_COMMON_LONGOPTS,
      {"tensors", required_argument, NULL, OPT_TENSORS},
      {"tensors-made", required_argument, NULL, OPT_TENSORS_MADE},
      {NULL, 0, NULL, 0},
  };
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (bench_common_option(common, c, argv)) continue;
    if (c == OPT_TENSORS_MADE) {
      if (!*optarg || strchr(optarg, '\n')) hl_usage_error("--tensors-made: one line of text");
      o->tensors_made = optarg;
      continue;
    }
    if (c != OPT_TENSORS) bench_bad_option(c, argv, longopts);
    if (o->n == MAX_SOURCES) hl_usage_error("--tensors: at most %d files", MAX_SOURCES);
    parse_source(optarg, &o->sources[o->n++]);
  }
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);
  if (common->reps) hl_usage_error("--reps: quantize-error times nothing (it measures errors)");
  if (o->n == 0) hl_usage_error("no --tensors MODEL:KIND:FILE given (halflab-train --save-init, --dump-grads, --dump-activations)");
  if (common->cli.device && strcmp(common->cli.device, "cpu") && strcmp(common->cli.device, "auto"))
    hl_usage_error("--device %s: quantize-error quantizes in software on the CPU (--device cpu)", common->cli.device);
  o->sweep_lo = -32, o->sweep_hi = 8, o->sweep_step = common->cli.quick ? 4 : 1;
}

/* ------------------------------------------------------------ tables -- */

static bool studied(const hl_weight_entry *e) { return e->ndim >= 2 && e->numel > 0; }

static void matrix_of(const hl_weight_entry *e, size_t *rows, size_t *cols) {
  *cols = (size_t)e->dims[e->ndim - 1];
  *rows = (size_t)e->numel / *cols;
}

/* The per-tensor, per-format, per-rule rows; the tensors with an inf or NaN are left out (said on stderr) */
static void error_rows(const qe_options *o, workspace *w, hl_csv_rows *rows) {
  printf("%-8s %-10s %-5s %-10s %8s %10s %10s %10s %12s\n", "model", "kind", "format", "rule", "tensors", "sqnr_db",
         "clipped", "blk_clip", "max_rel_err");
  for (int si = 0; si < o->n; si++) {
    const source *src = &o->sources[si];
    for (int pi = 0; pi < NPROBES; pi++) {
      const probe *p = &probes[pi];
      double signal = 0, noise = 0, worst = 0;
      uint64_t clipped = 0, elements = 0, blocks = 0, blocks_clipped = 0;
      int tensors = 0;
      for (int ei = 0; ei < src->file.n; ei++) {
        const hl_weight_entry *e = &src->file.items[ei];
        if (!studied(e)) continue;
        size_t r, c;
        matrix_of(e, &r, &c);
        hl_quant_spec spec = hl_quant_spec_make(p->element, p->rule);
        if (p->unscaled) spec.tensor_amax = hl_quant_element_max(p->element); /* scale = max / amax = 1 */
        bench_progress("quantize-error %s %s %s %s %s", src->model, src->kind, e->name, hl_dtype_format_name(p->element),
                       probe_rule_name(p));
        const outcome out = quantize_once(&spec, e->values, r, c, w);
        if (!isfinite(out.stats.amax)) continue;
        hl_row row;
        row_tensor(&row, &bench_quantize_error_schema, src, e);
        hl_row_int(&row, "rows", (int64_t)r);
        hl_row_int(&row, "cols", (int64_t)c);
        hl_row_real(&row, "amax", out.stats.amax);
        hl_row_text(&row, "format", hl_dtype_format_name(p->element));
        hl_row_text(&row, "rule", probe_rule_name(p));
        char block[32];
        block_text(&spec, block, sizeof block);
        hl_row_text(&row, "block", block);
        row_outcome(&row, &out);
        hl_row_int(&row, "blocks", (int64_t)out.stats.blocks);
        hl_row_real(&row, "blocks_clipped_share", (double)out.stats.blocks_clipped / (double)out.stats.blocks);
        if (out.stats.elements > out.stats.zero_in) hl_row_real(&row, "max_rel_err", out.max_rel_err);
        hl_csv_rows_put(rows, &row);
        signal += out.signal, noise += out.noise, worst = fmax(worst, out.max_rel_err);
        clipped += out.stats.clipped, elements += out.stats.elements;
        blocks += out.stats.blocks, blocks_clipped += out.stats.blocks_clipped;
        tensors++;
      }
      if (tensors)
        printf("%-8s %-10s %-5s %-10s %8d %10.2f %10.3g %10.3g %12.3g\n", src->model, src->kind,
               hl_dtype_format_name(p->element), probe_rule_name(p), tensors, 10.0 * log10(signal / noise),
               (double)clipped / (double)elements, (double)blocks_clipped / (double)blocks, worst);
    }
  }
}

/* The tensor of a source with the largest amax / rms (finite, not all zero); NULL when none */
static const hl_weight_entry *most_outlying(const source *src) {
  const hl_weight_entry *best = NULL;
  double best_crest = 0;
  for (int ei = 0; ei < src->file.n; ei++) {
    const hl_weight_entry *e = &src->file.items[ei];
    if (!studied(e)) continue;
    double sum2 = 0, amax = 0;
    for (int64_t i = 0; i < e->numel; i++) sum2 += (double)e->values[i] * e->values[i], amax = fmax(amax, fabs(e->values[i]));
    if (!(sum2 > 0) || !isfinite(sum2)) continue;
    const double crest = amax / sqrt(sum2 / (double)e->numel);
    if (crest > best_crest) best_crest = crest, best = e;
  }
  return best;
}

static void sweep_rows(const qe_options *o, workspace *w, hl_csv_rows *rows) {
  for (int si = 0; si < o->n; si++) {
    const source *src = &o->sources[si];
    const hl_weight_entry *e = most_outlying(src);
    if (!e) continue;
    size_t r, c;
    matrix_of(e, &r, &c);
    for (int fi = 0; fi < NSWEEP_FORMATS; fi++)
      for (int x = o->sweep_lo; x <= o->sweep_hi; x += o->sweep_step) {
        hl_quant_spec spec = hl_quant_spec_make(sweep_formats[fi], HL_SCALE_TENSOR);
        spec.margin = -x; /* scale = (max / amax) / 2^margin */
        bench_progress("quantize-error sweep %s %s %s 2^%d", src->model, e->name, hl_dtype_format_name(spec.element), x);
        const outcome out = quantize_once(&spec, e->values, r, c, w);
        hl_row row;
        row_tensor(&row, &bench_quantize_sweep_schema, src, e);
        hl_row_text(&row, "format", hl_dtype_format_name(spec.element));
        hl_row_int(&row, "log2_scale_rel", x);
        hl_row_real(&row, "scale", out.encode_scale);
        row_outcome(&row, &out);
        hl_csv_rows_put(rows, &row);
      }
  }
}

/* Each model's activations file against its weights file: the GEMM study's rows; false when no pair exists */
static bool gemm_rows(const qe_options *o, size_t x_rows_max, hl_csv_rows *rows) {
  int layers = 0;
  for (int ai = 0; ai < o->n; ai++) {
    if (strcmp(o->sources[ai].kind, "activation")) continue;
    for (int wi = 0; wi < o->n; wi++)
      if (!strcmp(o->sources[wi].kind, "weight") && !strcmp(o->sources[wi].model, o->sources[ai].model)) {
        layers += quantize_gemm_rows(o->sources[ai].model, &o->sources[wi].file, &o->sources[ai].file, x_rows_max, rows);
        break;
      }
  }
  return layers > 0;
}

/* ------------------------------------------------------------- main -- */

int bench_quantize_error_main(int argc, char **argv) {
  static const char usage[] = "Usage: halflab-bench quantize-error --tensors MODEL:KIND:FILE [--tensors ...] [OPTIONS]\n"
                                     "\n"
                                     "What fp8 (e4m3, e5m2), fp6 (e2m3, e3m2) and fp4 (e2m1) under each scale rule (none,\n"
                                     "per-tensor, 1x128 fp32 blocks, MX FLOOR and RCEIL, NVFP4) do to real tensors: shares of\n"
                                     "zero, subnormal, normal and clipped values, blocks clipped, SQNR and the largest relative\n"
                                     "error (quantize_error.csv); the per-tensor scale swept over powers of two for each\n"
                                     "file's most outlying tensor (quantize_sweep.csv); where a model's weights and activations\n"
                                     "are both given, each linear layer's product X W^T with both operands quantized against\n"
                                     "its fp64 product (quantize_gemm.csv). Software quantization on the CPU (emulated).\n"
                                     "\n"
                                     "  --tensors MODEL:KIND:FILE  a weight file (halflab-train --save-init, --dump-grads,\n"
                                     "                       --dump-activations); MODEL names it in the CSVs (e.g. tiny),\n"
                                     "                       KIND is weight, activation or gradient; up to 16 files\n"
                                     "  --tensors-made TEXT  how the files were made (a line kept in the CSVs' metadata)\n"
                                     "  --out DIR            output folder (default results/<machine>/)\n"
                                     "  --quick              the sweep in steps of 2^4 instead of 2^1; the products over 128\n"
                                     "                       rows of each layer's input instead of 256\n";
  bench_common common = {.cli = hl_cli_common_defaults(usage)};
  static qe_options o;
  parse_options(argc, argv, &common, &o);
  size_t largest = 0;
  for (int i = 0; i < o.n; i++) {
    if (!hl_weight_file_read(o.sources[i].path, &o.sources[i].file)) hl_usage_error("--tensors: %s", hl_error());
    for (int e = 0; e < o.sources[i].file.n; e++)
      if (studied(&o.sources[i].file.items[e])) {
        const size_t n = (size_t)o.sources[i].file.items[e].numel;
        largest = n > largest ? n : largest;
      }
  }
  if (largest == 0) hl_usage_error("--tensors: no tensor of two or more dimensions in the files given");
  bench_device d;
  bench_device_open(&d, "cpu");
  char outbuf[4096];
  const char *outdir = bench_outdir(common.cli.out, d.kind, BENCH_TABLES("quantize_error.csv", "quantize_sweep.csv", "quantize_gemm.csv"),
                                    outbuf, sizeof outbuf);
  hl_meta_set("method", "each tensor of two or more dimensions as a matrix (last dimension: columns, along which "
              "the 1xN blocks run), quantized and decoded by the CPU backend's quantizers (kernels/quantize.h), "
              "nearest-even elements, saturating; software quantization on the CPU (emulated)");
  char files[8192] = "";
  for (int i = 0, at = 0; i < o.n && at < (int)sizeof files; i++)
    at += snprintf(files + at, sizeof files - (size_t)at, "%s%s:%s:%s", i ? "; " : "", o.sources[i].model,
                   o.sources[i].kind, o.sources[i].path);
  hl_meta_set("tensors", "%s", files);
  if (o.tensors_made) hl_meta_set("tensors_made", "%s", o.tensors_made);
  hl_meta_set("sweep", "per model and kind the tensor with the largest amax / rms; scale = (max / amax) x 2^x, x = %d "
              "to %d in steps of %d", o.sweep_lo, o.sweep_hi, o.sweep_step);
  const size_t gemm_x_rows = common.cli.quick ? GEMM_X_ROWS_QUICK : GEMM_X_ROWS;
  hl_meta_set("gemm", "quantize_gemm.csv: per linear layer Y = X W^T (W stored out x in), the first %zu rows of X; "
              "both operands quantized and decoded, summed in fp32; against the fp64 product of the fp32 tensors",
              gemm_x_rows);
  if (common.cli.quick) hl_meta_set("quick", "yes");
  /* block scales: at most one per element */
  workspace w = {{bench_host_alloc(largest, "codes"), bench_host_alloc(sizeof(float) * largest, "block scales"),
                  bench_host_alloc(largest, "scale codes"), 1.0f, 1.0f},
                 bench_host_alloc(sizeof(float) * largest, "decoded values")};
  hl_csv_rows errors = {0}, sweep = {0}, gemm = {0};
  error_rows(&o, &w, &errors);
  sweep_rows(&o, &w, &sweep);
  const bool gemm_made = gemm_rows(&o, gemm_x_rows, &gemm);
  bench_rows_write(&errors, outdir, &bench_quantize_error_schema);
  bench_rows_write(&sweep, outdir, &bench_quantize_sweep_schema);
  char gemm_path[4200];
  snprintf(gemm_path, sizeof gemm_path, "%s/quantize_gemm.csv", outdir);
  if (gemm_made) bench_rows_write(&gemm, outdir, &bench_quantize_gemm_schema);
  else remove(gemm_path); /* an earlier run's table would not match these files */
  hl_csv_rows_free(&errors);
  hl_csv_rows_free(&sweep);
  hl_csv_rows_free(&gemm);
  free(w.q.codes), free(w.q.block_scales), free(w.q.scale_codes), free(w.decoded);
  for (int i = 0; i < o.n; i++) hl_weight_file_free(&o.sources[i].file);
  fflush(stdout);
  fprintf(stderr, "%s: quantize-error: wrote %s/quantize_error.csv, quantize_sweep.csv%s\n", hl_prog(), outdir,
          gemm_made ? " and quantize_gemm.csv" : " (no layer's input and weight both given: no quantize_gemm.csv)");
  return 0;
}
