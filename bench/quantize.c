/* quantize.c — halflab-bench quantize: the speed of the block quantizers
 * (kernels/quantize.h) turning an fp32 matrix into codes and block scales,
 * per recipe, next to the copy reference of the same run and the pass that
 * finds the tensor's amax, timed on its own.
 *
 * Bytes moved per launch are the quantizer's: 4 per element read, 1 per
 * code written (one code a byte, fp6 and fp4 unpacked) and the block
 * scales written (4 bytes each; mx and nvfp4 also 1 for the scale's code).
 * A rule that needs the tensor's amax before its scales (the tensor rule,
 * nvfp4) reads the input twice; its bytes still count it once, and the amax
 * row says what that extra read costs. The copy reference is the fastest of
 * the backend's reference copies (kernels/stream.h copy_ref) of the input's
 * bytes, timed in the same run: quantizing streams the same input, so past
 * the caches its bytes per second should come near the copy's.
 *
 * On the CPU the codes are computed in software (integer arithmetic on
 * AVX2 lanes or portable C), with no fp8, fp6 or fp4 conversion
 * instruction (x86 CPUs before AVX10.2 have none). Every row says which
 * unit ran. After the timed runs a
 * sample of blocks is checked against the rules' definition
 * (kernels/quantize_math.h: scale from the block's amax, each element's
 * code): a mismatch stops the run with exit status 1 and no CSV. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "cli/csv.h"
#include "core/base/profiler_ranges.h"
#include "formats/philox.h"
#include "kernels/host.h"
#include "kernels/quantize.h"
#include "kernels/quantize_math.h"
#include "kernels/stream.h"

static const char usage[] =
    "Usage: halflab-bench quantize [OPTIONS]\n"
    "\n"
    "Speed of the block quantizers (fp32 to fp8, fp6 and fp4 codes with their block scales) per recipe:\n"
    "GB/s read and written, next to the copy reference (the fastest copy of the input's bytes in the same\n"
    "run) and the amax pass the tensor and nvfp4 rules make first. On the CPU the codes are computed in\n"
    "software. Writes quantize.csv and quantize_expectations.csv.\n"
    "\n"
    "Options:\n"
    "  --size BYTES    the fp32 input (default 512MiB; --quick: 32MiB); a matrix of 4096 columns\n"
    "  --reps N        timed samples per point (default: adaptive, see the CSV's method line)\n"
    "  --device D      auto (default: the GPU when usable, else the CPU), cpu, cuda\n"
    "  --out DIR       output folder (default results/<machine>/)\n"
    "  --quick         a small input (32 MiB), fewer samples\n"
    "  --seed N        the input's random values (default 1)\n"
    "  --help, --version\n";

enum { COLS = 4096 };

/* One recipe: a format's name, its element, rule and block */
typedef struct {
  const char *format; /* "fp8", "mxfp8", "mxfp6", "mxfp4", "nvfp4" */
  hl_dtype element;
  hl_scale_rule rule;
  uint32_t block_rows, block_cols; /* 0 x 0: the whole tensor */
} recipe;

static const recipe kRecipes[] = {
    {"fp8", HL_E4M3, HL_SCALE_TENSOR, 0, 0},
    {"fp8", HL_E4M3, HL_SCALE_BLOCK_FP32, 1, 128},
    {"fp8", HL_E4M3, HL_SCALE_BLOCK_FP32, 128, 1},
    {"fp8", HL_E4M3, HL_SCALE_BLOCK_FP32, 128, 128},
    {"mxfp8", HL_E4M3, HL_SCALE_MX_RCEIL, 1, 32},
    {"mxfp8", HL_E4M3, HL_SCALE_MX_RCEIL, 32, 1},
    {"mxfp8", HL_E4M3, HL_SCALE_MX_FLOOR, 1, 32},
    {"mxfp8", HL_E4M3, HL_SCALE_MX_FLOOR, 32, 1},
    {"mxfp6", HL_E2M3, HL_SCALE_MX_RCEIL, 1, 32},
    {"mxfp6", HL_E2M3, HL_SCALE_MX_RCEIL, 32, 1},
    {"mxfp6", HL_E3M2, HL_SCALE_MX_RCEIL, 1, 32},
    {"mxfp6", HL_E3M2, HL_SCALE_MX_RCEIL, 32, 1},
    {"mxfp4", HL_E2M1, HL_SCALE_MX_RCEIL, 1, 32},
    {"mxfp4", HL_E2M1, HL_SCALE_MX_RCEIL, 32, 1},
    {"nvfp4", HL_E2M1, HL_SCALE_NVFP4, 1, 16},
    {"nvfp4", HL_E2M1, HL_SCALE_NVFP4, 16, 1},
};
enum { RECIPES = sizeof kRecipes / sizeof kRecipes[0] };

static hl_quant_spec spec_of(const recipe *r) {
  hl_quant_spec s = hl_quant_spec_make(r->element, r->rule);
  if (r->rule != HL_SCALE_TENSOR) s.block_rows = r->block_rows, s.block_cols = r->block_cols;
  return s;
}

/* "1x32", "32x1", "tensor" */
static void block_text(const recipe *r, char *out, size_t len) {
  if (r->rule == HL_SCALE_TENSOR) snprintf(out, len, "tensor");
  else snprintf(out, len, "%ux%u", r->block_rows, r->block_cols);
}

/* "rows" (blocks along a row: a GEMM's A), "columns" (down a column: B), "both" (square or whole) */
static const char *direction_of(const recipe *r) {
  if (r->rule == HL_SCALE_TENSOR || r->block_rows == r->block_cols) return "both";
  return r->block_rows == 1 ? "rows" : "columns";
}

/* ----------------------------------------------------------- the run -- */

typedef struct {
  bench_common common;
  uint64_t size;
  int reps;
} q_options;

typedef struct {
  const bench_device *dev;
  bool gpu;
  const char *outdir;
  char outbuf[4096];
  bench_method method;
  size_t rows, cols, n;
  float *x;           /* the input (device memory) */
  void *copy_target;  /* the reference copies' destination (device memory) */
  uint8_t *codes, *scale_codes;
  float *block_scales;
  char unit[320];     /* what computed the codes */
  hl_csv_rows rows_out;
  double ref_gb_per_s, ref_gb_per_s_best;
  const char *ref_name;
} q_run;

static void parse_options(int argc, char **argv, q_options *o) {
  *o = (q_options){.common = {.cli = hl_cli_common_defaults(usage)}};
  enum { OPT_SIZE = 1 };
  static const struct option longopts[] = {BENCH_COMMON_LONGOPTS, {"size", required_argument, NULL, OPT_SIZE},
                                           {NULL, 0, NULL, 0}};
  const char *size_s = NULL;
  int opt;
  opterr = 0;
  optind = 1;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (bench_common_option(&o->common, opt, argv)) continue;
    if (opt == OPT_SIZE) size_s = optarg;
    else bench_bad_option(opt, argv, longopts);
  }
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);
  /* a whole number of 128-row stripes of COLS columns: every block shape tiles it */
  const uint64_t stripe = (uint64_t)128 * COLS * sizeof(float);
  o->size = size_s ? hl_parse_bytes("--size", size_s, stripe) : o->common.cli.quick ? 32u << 20 : 512u << 20;
  if (o->size % stripe) hl_usage_error("--size %s is not a multiple of 2 MiB (128 rows of %d fp32 columns)", size_s, COLS);
  o->reps = bench_parse_reps(o->common.reps);
}

typedef struct {
  q_run *run;
  int which;         /* a reference copy, or -1: the amax pass, or -2: a quantization */
  hl_quant_spec spec;
  hl_quantized q;
  float amax;
} q_launch;

static void launch(void *p, long it) {
  (void)it;
  q_launch *l = p;
  const q_run *run = l->run;
  const struct hl_quantize_kernels *k = run->dev->be->quantize;
  if (l->which >= 0) run->dev->be->stream->copy_ref(l->which, run->copy_target, run->x, run->n * sizeof(float));
  else if (l->which == -1) l->amax = k->amax(run->x, run->n);
  else k->quantize(&l->spec, run->x, run->rows, run->cols, &l->q, NULL);
}

/* The cells every row has */
static void row_cells(hl_row *row, const q_run *run, const char *unit, const char *kernel, const char *format,
                      const char *element,
                      const char *rule, const char *block, const char *direction, double read, double written,
                      const bench_timing *tm) {
  hl_row_begin(row, &bench_quantize_schema);
  hl_row_text(row, "device", run->dev->name);
  hl_row_text(row, "unit", unit);
  hl_row_text(row, "kernel", kernel);
  hl_row_text(row, "format", format);
  hl_row_text(row, "element", element);
  hl_row_text(row, "rule", rule);
  hl_row_text(row, "block", block);
  hl_row_text(row, "direction", direction);
  hl_row_int(row, "rows", (int64_t)run->rows);
  hl_row_int(row, "cols", (int64_t)run->cols);
  hl_row_int(row, "bytes_read", (int64_t)read);
  hl_row_int(row, "bytes_written", (int64_t)written);
  bench_row_timing(row, tm);
  const double moved = read + written;
  hl_row_real(row, "gb_per_s", moved / (tm->ms.median * 1e-3) / 1e9);
  hl_row_real(row, "gb_per_s_best", moved / (tm->ms.min * 1e-3) / 1e9);
  hl_row_real(row, "gelem_per_s", (double)run->n / (tm->ms.median * 1e-3) / 1e9);
}

static void time_references(q_run *run) {
  const struct hl_stream_kernels *k = run->dev->be->stream;
  const double bytes = (double)run->n * sizeof(float);
  for (int which = 0; k->copy_ref_name(which); which++) {
    q_launch l = {.run = run, .which = which};
    const char *name = k->copy_ref_name(which);
    hl_range_push(name);
    const bench_timing tm = bench_time(run->dev, &run->method, launch, &l);
    hl_range_pop();
    const double gb_per_s = 2 * bytes / (tm.ms.median * 1e-3) / 1e9, best = 2 * bytes / (tm.ms.min * 1e-3) / 1e9;
    if (gb_per_s > run->ref_gb_per_s) run->ref_gb_per_s = gb_per_s, run->ref_name = name;
    if (best > run->ref_gb_per_s_best) run->ref_gb_per_s_best = best;
    hl_row row;
    row_cells(&row, run, "copy", name, "-", "-", "-", "-", "-", bytes, bytes, &tm);
    hl_row_missing(&row, "ref_kernel"), hl_row_missing(&row, "ref_gb_per_s"), hl_row_missing(&row, "ref_ratio");
    hl_row_missing(&row, "amax_first");
    hl_csv_rows_put(&run->rows_out, &row);
    printf("%-8s %-6s %-10s %-8s %-8s %12.4f %9.2f %9s\n", name, "-", "-", "-", "-", tm.ms.median, gb_per_s, "-");
  }
}

static void ref_cells(hl_row *row, const q_run *run, double gb_per_s) {
  hl_row_text(row, "ref_kernel", run->ref_name);
  hl_row_real(row, "ref_gb_per_s", run->ref_gb_per_s);
  hl_row_real(row, "ref_ratio", gb_per_s / run->ref_gb_per_s);
}

/* the amax pass alone: what the tensor rule and nvfp4 read before their codes */
static double time_amax(q_run *run) {
  q_launch l = {.run = run, .which = -1};
  hl_range_push("amax");
  const bench_timing tm = bench_time(run->dev, &run->method, launch, &l);
  hl_range_pop();
  const double bytes = (double)run->n * sizeof(float), gb_per_s = bytes / (tm.ms.median * 1e-3) / 1e9;
  hl_row row;
  row_cells(&row, run, run->unit, "amax", "-", "-", "-", "tensor", "both", bytes, 0, &tm);
  ref_cells(&row, run, gb_per_s);
  hl_row_missing(&row, "amax_first");
  hl_csv_rows_put(&run->rows_out, &row);
  printf("%-8s %-6s %-10s %-8s %-8s %12.4f %9.2f %9.3f\n", "amax", "-", "-", "tensor", "both", tm.ms.median, gb_per_s,
         gb_per_s / run->ref_gb_per_s);
  return tm.ms.median;
}

/* ---------------------------------------------------------- checking -- */

/* A sample of r's blocks against the rules' definition: each block's scale
 * from its amax, each element's code; exit 1 on a mismatch. xh: the input
 * on the host; amax_all: the tensor's. */
static void validate(const q_run *run, const recipe *r, const hl_quant_spec *s, const hl_quantized *q, const float *xh,
                     float amax_all) {
  size_t grid_rows, grid_cols;
  hl_quant_block_grid(s, run->rows, run->cols, &grid_rows, &grid_cols);
  const size_t blocks = grid_rows * grid_cols;
  uint8_t *codes = run->codes, *scale_codes = run->scale_codes;
  float *block_scales = run->block_scales;
  if (run->gpu) { /* the device's results, copied back */
    codes = bench_host_alloc(run->n, "codes to check");
    block_scales = bench_host_alloc(blocks * sizeof(float), "block scales to check");
    scale_codes = bench_host_alloc(blocks, "scale codes to check");
    run->dev->be->copy_to_host(codes, run->codes, run->n);
    run->dev->be->copy_to_host(block_scales, run->block_scales, blocks * sizeof(float));
    run->dev->be->copy_to_host(scale_codes, run->scale_codes, blocks);
  }
  const bool tensor = s->rule == HL_SCALE_TENSOR;
  const float tensor_scale = s->rule == HL_SCALE_NVFP4 ? hl_quant_nvfp4_tensor_scale(amax_all) : 1.0f;
  const float encode = tensor ? hl_quant_tensor_encode_scale(s, amax_all) : 1.0f;
  if (hl_f32_bits(q->tensor_scale) != hl_f32_bits(tensor_scale) || hl_f32_bits(q->encode_scale) != hl_f32_bits(encode))
    hl_fatal("quantize %s %s: tensor scale %g and encode scale %g, expected %g and %g; no CSV written", r->format,
             hl_scale_rule_name(r->rule), (double)q->tensor_scale, (double)q->encode_scale, (double)tensor_scale,
             (double)encode);
  const size_t br = tensor ? run->rows : s->block_rows, bc = tensor ? run->cols : s->block_cols;
  const size_t checks = tensor ? 1 : blocks < 512 ? blocks : 512;
  for (size_t k = 0; k < checks; k++) {
    const size_t b = checks == blocks ? k : hl_philox_u32(7, 0, k) % blocks;
    const size_t r0 = b / grid_cols * br, c0 = b % grid_cols * bc;
    /* the tensor rule's one block: a sample of its rows */
    const size_t r1 = tensor ? (run->rows < 64 ? run->rows : 64) : r0 + br, c1 = c0 + bc;
    float amax = 0.0f;
    for (size_t i = r0; i < r1; i++)
      for (size_t j = c0; j < c1; j++) {
        const float a = hl_f32_from_bits(hl_f32_bits(xh[i * run->cols + j]) & 0x7fffffffu);
        amax = a > amax ? a : amax;
      }
    hl_block_scale bs = {hl_div_rn(1.0f, encode), encode, false, 0};
    if (!tensor) bs = hl_quant_block_scale(s, amax, tensor_scale);
    if (hl_f32_bits(block_scales[b]) != hl_f32_bits(bs.decode) || (!tensor && scale_codes[b] != bs.code))
      hl_fatal("quantize %s %s: block %zu's scale is %g (code %u), expected %g (code %u); no CSV written", r->format,
               hl_scale_rule_name(r->rule), b, (double)block_scales[b], scale_codes[b], (double)bs.decode, bs.code);
    for (size_t i = r0; i < r1; i++)
      for (size_t j = c0; j < c1; j++) {
        bool clipped;
        const uint8_t want = hl_quant_element_code(s, bs, xh[i * run->cols + j], 0, &clipped);
        if (codes[i * run->cols + j] != want)
          hl_fatal("quantize %s %s: the code at row %zu column %zu is 0x%02x, expected 0x%02x; no CSV written",
                   r->format, hl_scale_rule_name(r->rule), i, j, codes[i * run->cols + j], want);
      }
  }
  if (run->gpu) free(codes), free(block_scales), free(scale_codes);
}

/* ------------------------------------------------------------ timing -- */

typedef struct {
  double ratio, gb_per_s;
  bool done;
} q_result;

static q_result time_recipe(q_run *run, const recipe *r, const float *xh, float amax_all) {
  q_launch l = {.run = run, .which = -2, .spec = spec_of(r)};
  l.q = (hl_quantized){run->codes, run->block_scales, run->scale_codes, 0.0f, 0.0f};
  char block[32], range[96];
  block_text(r, block, sizeof block);
  snprintf(range, sizeof range, "quantize %s %s %s %s", r->format, hl_dtype_format_name(r->element),
           hl_scale_rule_name(r->rule), block);
  bench_progress("%s", range);
  hl_range_push(range);
  const bench_timing tm = bench_time(run->dev, &run->method, launch, &l);
  hl_range_pop();
  validate(run, r, &l.spec, &l.q, xh, amax_all);
  size_t grid_rows, grid_cols;
  hl_quant_block_grid(&l.spec, run->rows, run->cols, &grid_rows, &grid_cols);
  const double blocks = (double)grid_rows * grid_cols;
  const bool coded_scale = r->rule == HL_SCALE_MX_FLOOR || r->rule == HL_SCALE_MX_RCEIL || r->rule == HL_SCALE_NVFP4;
  const double read = (double)run->n * sizeof(float), written = (double)run->n + blocks * (4 + coded_scale);
  const double gb_per_s = (read + written) / (tm.ms.median * 1e-3) / 1e9;
  const bool amax_first = r->rule == HL_SCALE_NVFP4 || r->rule == HL_SCALE_TENSOR;
  hl_row row;
  row_cells(&row, run, run->unit, "quantize", r->format, hl_dtype_format_name(r->element), hl_scale_rule_name(r->rule), block,
            direction_of(r), read, written, &tm);
  ref_cells(&row, run, gb_per_s);
  hl_row_text(&row, "amax_first", amax_first ? "yes" : "no");
  hl_csv_rows_put(&run->rows_out, &row);
  printf("%-8s %-6s %-10s %-8s %-8s %12.4f %9.2f %9.3f\n", r->format, hl_dtype_format_name(r->element),
         hl_scale_rule_name(r->rule), block, direction_of(r), tm.ms.median, gb_per_s, gb_per_s / run->ref_gb_per_s);
  fflush(stdout);
  return (q_result){gb_per_s / run->ref_gb_per_s, gb_per_s, true};
}

/* ------------------------------------------------------ expectations -- */

#define RATIO_LOW 0.7 /* a streaming quantizer against a copy of its input, past the caches, on the CPU */
static const char reason_stream[] =
    "a block quantizer reads its input once and writes a quarter of it (codes and scales) while the block is in the "
    "cache: past the caches it streams like a copy of the input and should keep at least 70% of the copy's bytes per "
    "second; below that the arithmetic of the codes (software on the CPU) limits it rather than the memory; the "
    "tensor rule and nvfp4 read the input once more first (the amax row is that pass)";
static const char reason_amax[] =
    "the amax pass reads the input and writes nothing: its time is what the tensor rule and nvfp4 spend before their "
    "codes (and what delayed scaling avoids)";

static void expectations(const q_run *run, const q_result *res, double amax_ms, bool built) {
  bench_expectations e = {.schema = &bench_quantize_expectations_schema};
  const uint64_t bytes = (uint64_t)run->n * sizeof(float);
  const uint64_t llc = run->dev->facts->l2_bytes ? run->dev->facts->l2_bytes : (uint64_t)32 << 20;
  char name[200], detail[256];
  for (int i = 0; i < RECIPES; i++) {
    const recipe *r = &kRecipes[i];
    char block[32];
    block_text(r, block, sizeof block);
    snprintf(name, sizeof name, "%s %s %s %s at %llu MiB: at least %.1fx the copy reference's bytes per second",
             r->format, hl_dtype_format_name(r->element), hl_scale_rule_name(r->rule), block,
             (unsigned long long)(bytes >> 20), RATIO_LOW);
    if (!built || !res[i].done) {
      bench_expect_skip(&e, run->dev, name, "not built: this backend has no quantizers", reason_stream);
      continue;
    }
    snprintf(detail, sizeof detail, "%.2f GB/s = %.2fx %s %.2f GB/s", res[i].gb_per_s, res[i].ratio, run->ref_name,
             run->ref_gb_per_s);
    if (run->gpu) bench_expect_info(&e, run->dev, name, res[i].ratio, detail, reason_stream);
    else if (bytes < 2 * llc) {
      snprintf(detail, sizeof detail, "%llu MiB is below twice the %.0f MiB last-level cache: partly cached",
               (unsigned long long)(bytes >> 20), (double)llc / 1048576.0);
      bench_expect_skip(&e, run->dev, name, detail, reason_stream);
    } else bench_expect(&e, run->dev, name, res[i].ratio, RATIO_LOW, NAN, detail, reason_stream);
  }
  snprintf(name, sizeof name, "the amax pass at %llu MiB against the copy reference", (unsigned long long)(bytes >> 20));
  if (amax_ms > 0) {
    const double gb_per_s = (double)bytes / (amax_ms * 1e-3) / 1e9;
    snprintf(detail, sizeof detail, "%.3f ms: %.2f GB/s read = %.2fx %s", amax_ms, gb_per_s, gb_per_s / run->ref_gb_per_s,
             run->ref_name);
    bench_expect_info(&e, run->dev, name, gb_per_s / run->ref_gb_per_s, detail, reason_amax);
  } else bench_expect_skip(&e, run->dev, name, "not built: this backend has no amax kernel", reason_amax);
  bench_expectations_write(&e, run->outdir);
}

/* ---------------------------------------------------------------- main -- */

/* The input: uniform in [-1, 1) times 2^(row % 16 - 8), so that the blocks' scales differ */
static void fill_input(float *xh, size_t rows, size_t cols, uint64_t seed) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++) {
      const uint32_t u = hl_philox_u32(seed, 0, (uint64_t)i * cols + j);
      xh[i * cols + j] = ((float)(u >> 8) * 0x1p-23f - 1.0f) * hl_pow2f((int)(i % 16) - 8);
    }
}

static void unit_text(q_run *run) {
  if (run->gpu) {
    snprintf(run->unit, sizeof run->unit, "cuda kernels (%s)", run->dev->facts->name);
    return;
  }
  const bool avx2 = hl_cpu_features_get()->avx2 && !hl_cpu_units_get()->portable;
  snprintf(run->unit, sizeof run->unit, "cpu: %s (software codes)", avx2 ? "AVX2 integer lanes" : "portable C");
}

static void record_metadata(const q_run *run) {
  hl_meta_set("method", "%s", bench_method_text(run->dev, &run->method));
  hl_meta_set("bytes", "the quantizer's: 4 bytes read per fp32 element, 1 written per code (fp6 and fp4 one a byte), "
              "4 per block scale and 1 per E8M0 or E4M3 scale code; the tensor rule and nvfp4 read the input once "
              "more for its amax, not counted (the amax row times that pass); the copies: read and written; gb_per_s "
              "from the median time, gb_per_s_best from the minimum");
  hl_meta_set("reference", "the fastest of the backend's reference copies of the input's bytes, timed in the same run "
              "(ref_kernel names it, ref_gb_per_s is its rate); ref_ratio = gb_per_s / ref_gb_per_s");
  hl_meta_set("codes", "%s", run->gpu ? "the backend's CUDA kernels"
                                      : "computed in software on the CPU (integer arithmetic; no fp8, fp6 or fp4 "
                                        "conversion instruction: x86 CPUs before AVX10.2 have none); a measured speed "
                                        "of that software");
  hl_meta_set("input", "%zu x %zu fp32, uniform in [-1, 1) times 2^(row mod 16 - 8)", run->rows, run->cols);
  hl_meta_set("validation", "after each quantizer's timed runs a sample of up to 512 blocks (the tensor rule: 64 rows) "
              "against the rules' definition (kernels/quantize_math.h): each block's scale and every code in it");
}

int bench_quantize_main(int argc, char **argv) {
  q_options opt;
  parse_options(argc, argv, &opt);
  bench_device dev;
  char notice[512];
  bench_device_open_deferred(&dev, opt.common.cli.device, notice, sizeof notice);
  if (!dev.be->stream) hl_fatal("the %s backend of this build has no reference copies", dev.name);
  q_run run = {.dev = &dev, .gpu = dev.kind == HL_DEVICE_CUDA, .cols = COLS};
  run.n = (size_t)(opt.size / sizeof(float));
  run.rows = run.n / COLS;
  const size_t max_blocks = run.n / 16; /* nvfp4's 1x16: the most blocks of the recipes */
  bench_require_memory(&dev, "quantize (input, copy target, codes, scales)", 2 * opt.size + run.n + 5 * max_blocks,
                       run.gpu ? opt.size + run.n + 5 * max_blocks : 0);
  run.outdir = bench_outdir(opt.common.cli.out, dev.kind, BENCH_TABLES("quantize.csv", "quantize_expectations.csv"),
                            run.outbuf, sizeof run.outbuf);
  fputs(notice, stderr);
  run.method = bench_method_for(&dev, opt.reps, opt.common.cli.quick);
  run.method.target_s = opt.common.cli.quick ? 0.1 : 0.5;
  run.method.min_reps = opt.common.cli.quick ? 3 : 5;
  run.method.max_reps = 50;
  unit_text(&run);
  record_metadata(&run);

  float *xh = bench_host_alloc(opt.size, "the input");
  fill_input(xh, run.rows, run.cols, opt.common.cli.seed);
  float amax_all = 0.0f;
  for (size_t i = 0; i < run.n; i++) {
    const float a = hl_f32_from_bits(hl_f32_bits(xh[i]) & 0x7fffffffu);
    amax_all = a > amax_all ? a : amax_all;
  }
  run.x = run.gpu ? bench_alloc(&dev, opt.size, "the input") : xh;
  if (run.gpu) dev.be->copy_from_host(run.x, xh, opt.size);
  run.copy_target = bench_alloc(&dev, opt.size, "the copy target");
  run.codes = bench_alloc(&dev, run.n, "codes");
  run.block_scales = bench_alloc(&dev, max_blocks * sizeof(float), "block scales");
  run.scale_codes = bench_alloc(&dev, max_blocks, "scale codes");

  printf("%-8s %-6s %-10s %-8s %-8s %12s %9s %9s\n", "format", "elem", "rule", "block", "dir", "time_ms_med",
         "gb_per_s", "ref_ratio");
  hl_range_push("quantize");
  time_references(&run);
  const struct hl_quantize_kernels *k = dev.be->quantize;
  const bool built = k && k->quantize;
  double amax_ms = 0;
  if (k && k->amax) amax_ms = time_amax(&run);
  else fprintf(stderr, "%s: quantize: the %s backend's amax pass is not built\n", hl_prog(), dev.name);
  q_result res[RECIPES] = {{0}};
  if (built)
    for (int i = 0; i < RECIPES; i++) res[i] = time_recipe(&run, &kRecipes[i], xh, amax_all);
  else fprintf(stderr, "%s: quantize: the %s backend's quantizers are not built\n", hl_prog(), dev.name);
  hl_range_pop();
  bench_rows_write(&run.rows_out, run.outdir, &bench_quantize_schema);
  hl_csv_rows_free(&run.rows_out);
  expectations(&run, res, amax_ms, built);
  if (run.gpu) bench_free(&dev, run.x);
  bench_free(&dev, run.copy_target), bench_free(&dev, run.codes), bench_free(&dev, run.block_scales);
  bench_free(&dev, run.scale_codes);
  free(xh);
  fprintf(stderr, "%s: quantize: wrote %s/quantize.csv\n", hl_prog(), run.outdir);
  return 0;
}
