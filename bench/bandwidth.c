/* bandwidth.c — halflab-bench bandwidth: BabelStream's kernels (copy, scale,
 * add, triad, dot) over fp32, fp16 and bf16 arrays from 1 MiB to 1 GiB per
 * array (CPU: 512 MiB), next to the copy reference and the datasheet figure;
 * on a GPU also host<->device copies, pageable and pinned
 * (bandwidth_host.csv). The copy reference at a size is the fastest of the
 * backend's reference copies (kernels/stream.h copy_ref: on the CPU memcpy,
 * memcpy per thread, and vector copy loops with regular and with streaming
 * stores; on the GPU cudaMemcpy and a copy kernel), each timed at that size
 * in the same run on the kernels' threads: past the caches no kernel should
 * beat it by more than 10% (docs/bench.md says why), and the expectations
 * check that.
 *
 * Bytes moved are BabelStream's: arrays read + written x element size x n
 * (copy 2, scale 2, add 3, triad 3, dot 2; the reference copies 2). GB/s are
 * 10^9 bytes per second; Gelem/s the elements moved per second, so the same
 * GB/s at half the width is twice the Gelem/s. Arrays start as BabelStream's
 * (a = 0.1, b = 0.2, c = 0, s = 0.4, each rounded to the type); after the
 * timed runs every element of a, b and c is compared bit for bit with the
 * values the same arithmetic gives on one element (kernels/stream_ops.h), and
 * dot with n a b: a mismatch stops the run with exit status 1 and no CSV. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/csv.h"
#include "core/base/profiler_ranges.h"
#include "bench/bench.h"
#include "kernels/stream.h"
#include "kernels/stream_ops.h"

static const char usage[] =
    "Usage: halflab-bench bandwidth [OPTIONS]\n"
    "\n"
    "Memory bandwidth of BabelStream's kernels per element type, next to the copy reference (the\n"
    "fastest of several copies of the same size, measured in the same run) and the datasheet figure.\n"
    "Writes bandwidth.csv, bandwidth_expectations.csv and, on a GPU, bandwidth_host.csv\n"
    "(host<->device copies).\n"
    "\n"
    "Kernels: copy c=a, scale b=s*c, add c=a+b, triad a=b+s*c, dot sum(a*b)\n"
    "\n"
    "Options:\n"
    "  --sizes LIST    bytes per array, comma-separated (e.g. 1MiB,64MiB,1GiB); default 1 MiB .. 1 GiB\n"
    "                  by powers of two on a GPU, .. 512 MiB on the CPU (further where twice the\n"
    "                  last-level cache is larger)\n"
    "  --dtypes LIST   fp32, fp16, bf16 (default: all three)\n"
    "  --kernels LIST  copy, scale, add, triad, dot (default: all five)\n"
    "  --reps N        timed samples per point (default: adaptive, see the CSV's method line)\n"
    "  --device D      auto (default: the GPU when usable, else the CPU), cpu, cuda\n"
    "  --out DIR       output folder (default results/<machine>/)\n"
    "  --quick         three sizes, the largest past the caches (what the expectations need)\n"
    "  --seed N        accepted for uniformity; the arrays hold BabelStream's fixed values\n"
    "  --help, --version\n";

enum { K_COPY, K_SCALE, K_ADD, K_TRIAD, K_DOT, NKERNELS };
static const char *kernel_names[NKERNELS] = {"copy", "scale", "add", "triad", "dot"};
static const int kernel_arrays[NKERNELS] = {2, 2, 3, 3, 2};

static const float kA = 0.1f, kB = 0.2f, kC = 0.0f, kScalar = 0.4f;

typedef struct {
  const bench_device *d;
  hl_dtype t;
  int kernel;      /* NKERNELS + i: reference copy i (kernels/stream.h copy_ref) */
  void *a, *b, *c;
  size_t n, bytes; /* elements, bytes per array */
  float s;
  double dot;
} run_ctx;

static void launch(void *p, long it) {
  (void)it;
  run_ctx *r = p;
  const struct hl_stream_kernels *k = r->d->be->stream;
  switch (r->kernel) {
    case K_COPY: k->copy(r->t, r->a, r->c, r->n); break;
    case K_SCALE: k->scale(r->t, r->b, r->c, r->s, r->n); break;
    case K_ADD: k->add(r->t, r->a, r->b, r->c, r->n); break;
    case K_TRIAD: k->triad(r->t, r->a, r->b, r->c, r->s, r->n); break;
    case K_DOT: r->dot = k->dot(r->t, r->a, r->b, r->n); break;
    default: k->copy_ref(r->kernel - NKERNELS, r->c, r->a, r->bytes); break;
  }
}

/* the expected values, one element run through the same arithmetic */
typedef struct {
  float a, b, c;
} golden;

static void golden_step(golden *g, hl_dtype t, int kernel, float s) {
  switch (kernel) {
    case K_COPY: g->c = g->a; break;
    case K_SCALE: g->b = hl_stream_round(t, hl_stream_scale_op(s, g->c)); break;
    case K_ADD: g->c = hl_stream_round(t, hl_stream_add_op(g->a, g->b)); break;
    case K_TRIAD: g->a = hl_stream_round(t, hl_stream_triad_op(g->b, s, g->c)); break;
    case K_DOT: break;
    default: g->c = g->a; break; /* the reference copies copy a to c */
  }
}

static uint32_t bits_of(hl_dtype t, float v) {
  if (t == HL_F32) return hl_f32_bits(v);
  return t == HL_F16 ? hl_f32_to_f16(v) : hl_f32_to_bf16(v);
}

/* every element of the array equal to v (bit for bit)? index of the first that is not, or -1 */
static long long first_mismatch(const void *host, hl_dtype t, size_t n, float v) {
  const uint32_t want = bits_of(t, v);
  for (size_t i = 0; i < n; i++) {
    const uint32_t got = t == HL_F32 ? ((const uint32_t *)host)[i] : ((const uint16_t *)host)[i];
    if (got != want) return (long long)i;
  }
  return -1;
}

static void validate(const run_ctx *r, const golden *g, void *scratch, double dot_value) {
  const void *arr[3] = {r->a, r->b, r->c};
  const float want[3] = {g->a, g->b, g->c};
  const char *names[3] = {"a", "b", "c"};
  const size_t es = hl_dtype_size(r->t);
  for (int j = 0; j < 3; j++) {
    const void *host = arr[j];
    if (r->d->kind == HL_DEVICE_CUDA) {
      r->d->be->copy_to_host(scratch, arr[j], r->n * es);
      host = scratch;
    }
    const long long bad = first_mismatch(host, r->t, r->n, want[j]);
    if (bad >= 0)
      hl_fatal("bandwidth %s %zu bytes: array %s is wrong at element %lld (expected %.9g after the kernels); no CSV "
               "written", hl_dtype_name(r->t), r->bytes, names[j], bad, (double)want[j]);
  }
  /* dot of n equal products: fp32 partials of at most a few thousand terms, added in fp64 */
  const double exact = (double)r->n * (double)g->a * (double)g->b;
  if (!(fabs(dot_value - exact) <= 1e-3 * fabs(exact)))
    hl_fatal("bandwidth %s %zu bytes: dot = %.9g, expected %.9g (relative tolerance 1e-3); no CSV written",
             hl_dtype_name(r->t), r->bytes, dot_value, exact);
}

/* "1MiB,64MiB": byte counts (cli/cli.h units), at least 64 bytes (a point needs them) */
static int parse_sizes(const char *s, uint64_t *out, int max) { return hl_parse_bytes_list("--sizes", s, 64, out, max); }

/* comma list of names -> mask of their indices */
static unsigned parse_mask(const char *opt, const char *s, const char *const *names, int count) {
  bool chosen[32];
  bench_parse_names(opt, s, "value", names, count, chosen);
  unsigned mask = 0;
  for (int i = 0; i < count; i++) mask |= chosen[i] ? 1u << i : 0u;
  return mask;
}

/* host <-> device copies through the backend (each waits for its copy) */
typedef struct {
  const bench_device *d;
  void *dev, *host;
  size_t bytes;
  int dir; /* 0: host to device, 1: device to host */
} host_copy;

static void launch_host_copy(void *p, long it) {
  (void)it;
  host_copy *h = p;
  if (h->dir == 0) h->d->be->copy_from_host(h->dev, h->host, h->bytes);
  else h->d->be->copy_to_host(h->host, h->dev, h->bytes);
}

enum { MAX_SIZES = 64 }; /* --sizes values, and the first dimension of bw_run's results */

typedef struct {
  bool done;
  double gb_per_s, gelem_per_s, ref_gb_per_s;
  double gb_per_s_best, ref_gb_per_s_best; /* from the minimum times: the kernel's, the fastest copy's */
  const char *ref;
} bw_result;

/* The command line, every value checked */
typedef struct {
  bench_common common;
  uint64_t sizes[MAX_SIZES];
  int nsizes;               /* 0 without --sizes, until plan_run() picks the device's defaults */
  unsigned dtypes, kernels; /* masks over the dtypes' slots and kernel_names */
  int reps;
} bw_options;

/* What the steps of one run share */
typedef struct {
  const bench_device *dev;
  bool gpu;
  const char *outdir;
  char outbuf[4096];
  bench_peaks peaks;
  bench_method method;
  void *scratch;    /* GPU: a host buffer of the largest size, for validation and the pageable copies */
  hl_csv_rows rows; /* bandwidth.csv, written once every point has been validated */
  bw_result res[MAX_SIZES][HL_STREAM_DTYPES][NKERNELS]; /* for the expectations */
} bw_run;

/* The fastest reference copy at one size: what every type's kernels at
 * that size are compared with */
typedef struct {
  double gb_per_s;      /* the fastest copy by its median time, */
  const char *name;     /* that copy */
  double gb_per_s_best; /* the fastest copy by its minimum time (disturbed runs leave it alone) */
} bw_reference;

/* Every option and value checked before anything is opened or allocated */
static void parse_options(int argc, char **argv, bw_options *o) {
  *o = (bw_options){.common = {.cli = hl_cli_common_defaults(usage)}};
  bench_common *c = &o->common;
  enum { OPT_SIZES = 1, OPT_DTYPES, OPT_KERNELS };
  static const struct option longopts[] = {BENCH_COMMON_LONGOPTS,
                                           {"sizes", required_argument, NULL, OPT_SIZES},
                                           {"dtypes", required_argument, NULL, OPT_DTYPES},
                                           {"kernels", required_argument, NULL, OPT_KERNELS},
                                           {NULL, 0, NULL, 0}};
  const char *sizes_s = NULL, *dtypes_s = NULL, *kernels_s = NULL;
  int opt;
  opterr = 0;
  optind = 1;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (bench_common_option(c, opt, argv)) continue;
    switch (opt) {
      case OPT_SIZES: sizes_s = optarg; break;
      case OPT_DTYPES: dtypes_s = optarg; break;
      case OPT_KERNELS: kernels_s = optarg; break;
      default: bench_bad_option(opt, argv, longopts);
    }
  }
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);

  o->nsizes = sizes_s ? parse_sizes(sizes_s, o->sizes, MAX_SIZES) : 0;
  o->dtypes = dtypes_s ? parse_mask("--dtypes", dtypes_s,
                         (const char *const[]){hl_dtype_format_name(HL_F32), hl_dtype_format_name(HL_F16),
                                               hl_dtype_format_name(HL_BF16)},
                         HL_STREAM_DTYPES) : 7u;
  o->kernels = kernels_s ? parse_mask("--kernels", kernels_s, kernel_names, NKERNELS) : 31u;
  o->reps = bench_parse_reps(c->reps);
}

/* Opens the device, gives it its default sizes where --sizes was not given
 * and refuses a run that would not fit, all before anything is allocated.
 * Returns the largest size. */
static uint64_t plan_run(bench_device *dev, bw_options *o, char *device_notice, size_t notice_len) {
  bench_device_open_deferred(dev, o->common.cli.device, device_notice, notice_len);
  if (!dev->be->stream) hl_fatal("the %s backend of this build has no bandwidth kernels", dev->name);
  const bool gpu = dev->kind == HL_DEVICE_CUDA;
  if (!o->nsizes) {
    /* the largest size at least twice the last-level cache, where the expectations apply */
    uint64_t top = o->common.cli.quick ? (gpu ? 1u << 30 : 128u << 20) : (gpu ? 1u << 30 : 512u << 20);
    while (top < 2 * dev->facts->l2_bytes) top *= 2;
    if (o->common.cli.quick) {
      const uint64_t q[3] = {4u << 20, 64u << 20, top};
      for (int i = 0; i < 3; i++) o->sizes[o->nsizes++] = q[i];
    } else {
      for (uint64_t s = 1u << 20; s <= top; s *= 2) o->sizes[o->nsizes++] = s;
    }
  }
  uint64_t largest = 0;
  for (int i = 0; i < o->nsizes; i++) largest = o->sizes[i] > largest ? o->sizes[i] : largest;
  /* device: the three arrays; host (GPU): a validation copy, pageable and pinned copy buffers */
  bench_require_memory(dev, "bandwidth (three arrays of the largest size)", 3 * largest, gpu ? 3 * largest : 0);
  return largest;
}

/* Once every input is accepted: the output folder, the device notice held
 * back until now, the peaks and the timing method */
static void start_run(bw_run *run, const bw_options *o, const char *device_notice) {
  const bench_device *dev = run->dev;
  const bool gpu = run->gpu, quick = o->common.cli.quick;
  run->outdir = bench_outdir(o->common.cli.out, dev->kind,
                             BENCH_TABLES("bandwidth.csv", "bandwidth_host.csv", "bandwidth_expectations.csv"), run->outbuf,
                             sizeof run->outbuf);
  fputs(device_notice, stderr);
  run->peaks = bench_peaks_for(dev->facts, dev->kind);
  run->method = bench_method_for(dev, o->reps, quick);
  run->method.target_s = gpu ? (quick ? 0.05 : 0.1) : (quick ? 0.1 : 0.25); /* many points: less per point than GEMM */
  run->method.min_reps = gpu ? 10 : 5;
  run->method.max_reps = 100;
}

static void record_metadata(const bw_run *run, bool quick) {
  const bench_device *dev = run->dev;
  const bool gpu = run->gpu;
  bench_peaks_record(&run->peaks);
  hl_meta_set("method", "%s", bench_method_text(dev, &run->method));
  hl_meta_set("bytes", "BabelStream's accounting: arrays moved x element size x n (copy 2, scale 2, add 3, triad 3, "
              "dot 2; reference copies 2); gb_per_s = 1e9 bytes/s from the median time, gb_per_s_best from the minimum");
  hl_meta_set("reference", "%s", gpu ? "the fastest of these copies of the same array size, timed in the same run (ref_kernel "
                                       "names it, ref_gb_per_s is its rate): memcpy-d2d, cudaMemcpyAsync device to device; "
                                       "copy-kernel, 16-byte vector loads and stores (the copy kernel's code)"
                                     : "the fastest of these copies of the same array size, timed in the same run on the "
                                       "kernels' threads (ref_kernel names it, ref_gb_per_s is its rate): memcpy, one call "
                                       "on one thread; memcpy-omp, a memcpy per thread over its share; copy-loop, 32-byte "
                                       "AVX loads and regular stores per thread (8-byte words without AVX2); copy-loop-nt, "
                                       "the same with non-temporal stores (where the CPU has AVX2)");
  if (!gpu)
    hl_meta_set("stores", "CPU kernels store regularly while the arrays a kernel touches fit the last-level cache (%.0f "
                "MiB) and with non-temporal (streaming) AVX stores beyond it, as glibc's memcpy does for large copies",
                (double)dev->facts->l2_bytes / 1048576.0);
  hl_meta_set("validation", "after the timed runs every element of a, b, c equals the value the same arithmetic gives "
              "on one element (bit for bit), dot within 1e-3 of n a b");
  if (quick) hl_meta_set("quick", "yes");
}

/* The cells every row of bandwidth.csv has: what moved, its timing, the
 * rates and the datasheet figure; the caller sets the rest */
static void moved_cells(hl_row *row, const bw_run *run, const char *kernel, const char *dtype, size_t array_bytes,
                        size_t elements, int arrays, const bench_timing *tm) {
  const int64_t moved_bytes = (int64_t)arrays * (int64_t)array_bytes;
  const double hbm = run->peaks.value[PEAK_HBM];
  hl_row_begin(row, &bench_bandwidth_schema);
  hl_row_text(row, "device", run->dev->name);
  hl_row_text(row, "kernel", kernel);
  hl_row_text(row, "dtype", dtype);
  hl_row_int(row, "array_bytes", (int64_t)array_bytes);
  hl_row_int(row, "elements", (int64_t)elements);
  hl_row_int(row, "arrays", arrays);
  hl_row_int(row, "moved_bytes", moved_bytes);
  bench_row_timing(row, tm);
  hl_row_real(row, "gb_per_s", (double)moved_bytes / (tm->ms.median * 1e-3) / 1e9);
  hl_row_real(row, "gb_per_s_best", (double)moved_bytes / (tm->ms.min * 1e-3) / 1e9);
  if (hbm > 0) hl_row_real(row, "datasheet_gb_per_s", hbm);
  else hl_row_missing(row, "datasheet_gb_per_s");
}

/* Every reference copy of the backend (kernels/stream.h copy_ref) on r's
 * arrays, each a row of its own; the fastest (median) goes to ref */
static void time_references(bw_run *run, run_ctx *r, golden *g, size_t bytes, bw_reference *ref) {
  const struct hl_stream_kernels *k = run->dev->be->stream;
  for (int which = 0; k->copy_ref_name(which); which++) {
    const char *name = k->copy_ref_name(which);
    char range[96];
    snprintf(range, sizeof range, "bandwidth %s %zu MiB", name, bytes >> 20);
    hl_range_push(range);
    r->kernel = NKERNELS + which;
    const bench_timing tm = bench_time(run->dev, &run->method, launch, r);
    hl_range_pop();
    golden_step(g, r->t, r->kernel, r->s);
    const int64_t moved_bytes = 2 * (int64_t)r->bytes;
    const double gb_per_s = (double)moved_bytes / (tm.ms.median * 1e-3) / 1e9;
    const double gb_per_s_best = (double)moved_bytes / (tm.ms.min * 1e-3) / 1e9;
    if (gb_per_s > ref->gb_per_s) ref->gb_per_s = gb_per_s, ref->name = name;
    if (gb_per_s_best > ref->gb_per_s_best) ref->gb_per_s_best = gb_per_s_best;
    hl_row row;
    moved_cells(&row, run, name, "bytes", r->bytes, r->bytes, 2, &tm);
    hl_row_missing(&row, "gelem_per_s");
    hl_row_missing(&row, "ref_kernel");
    hl_row_missing(&row, "ref_gb_per_s");
    hl_row_missing(&row, "ref_pct");
    hl_row_missing(&row, "datasheet_pct");
    hl_csv_rows_put(&run->rows, &row);
    printf("%-6s %-12s %10.1f %14.4f %9.2f %11s %7s\n", "-", name, r->bytes / 1048576.0, tm.ms.median, gb_per_s, "-", "-");
  }
}

/* Every chosen kernel on r's arrays, in BabelStream's order; size index si
 * of the requested bytes, results kept for the expectations */
static void time_kernels(bw_run *run, run_ctx *r, golden *g, int si, size_t bytes, unsigned kernels,
                         const bw_reference *ref) {
  const hl_dtype t = r->t;
  const size_t es = hl_dtype_size(r->t);
  const double hbm = run->peaks.value[PEAK_HBM];
  for (int k = 0; k < NKERNELS; k++) {
    if (!(kernels & (1u << k))) continue;
    r->kernel = k;
    char range[96];
    snprintf(range, sizeof range, "bandwidth %s %s %zu MiB", kernel_names[k], hl_dtype_format_name(t), bytes >> 20);
    bench_progress("%s", range);
    hl_range_push(range);
    const bench_timing tm = bench_time(run->dev, &run->method, launch, r);
    hl_range_pop();
    golden_step(g, r->t, k, r->s);
    const double moved_bytes = (double)kernel_arrays[k] * (double)r->bytes;
    const double gb_per_s = moved_bytes / (tm.ms.median * 1e-3) / 1e9, gelem_per_s = gb_per_s / (double)es;
    const double ref_pct = 100.0 * gb_per_s / ref->gb_per_s;
    bw_result *br = &run->res[si][hl_stream_slot(t)][k];
    br->done = true, br->gb_per_s = gb_per_s, br->gelem_per_s = gelem_per_s, br->ref_gb_per_s = ref->gb_per_s,
    br->ref = ref->name;
    br->gb_per_s_best = moved_bytes / (tm.ms.min * 1e-3) / 1e9, br->ref_gb_per_s_best = ref->gb_per_s_best;
    hl_row row;
    moved_cells(&row, run, kernel_names[k], hl_dtype_format_name(t), r->bytes, r->n, kernel_arrays[k], &tm);
    hl_row_real(&row, "gelem_per_s", gelem_per_s);
    hl_row_text(&row, "ref_kernel", ref->name);
    hl_row_real(&row, "ref_gb_per_s", ref->gb_per_s);
    hl_row_real(&row, "ref_pct", ref_pct);
    if (hbm > 0) hl_row_real(&row, "datasheet_pct", 100.0 * gb_per_s / hbm);
    else hl_row_missing(&row, "datasheet_pct");
    hl_csv_rows_put(&run->rows, &row);
    printf("%-6s %-12s %10.1f %14.4f %9.2f %11.3f %7.1f\n", hl_dtype_format_name(t), kernel_names[k], r->bytes / 1048576.0,
           tm.ms.median, gb_per_s, gelem_per_s, ref_pct);
    fflush(stdout);
  }
}

/* After the timed runs, r's arrays against g (exits 1 on a mismatch) */
static void check_arrays(const bw_run *run, run_ctx *r, const golden *g, unsigned kernels) {
  hl_range_push("validate");
  if (!(kernels & (1u << K_DOT))) r->dot = (double)r->n * g->a * g->b; /* dot not run: nothing to compare it with */
  validate(r, g, run->scratch, r->dot);
  hl_range_pop();
}

/* One element type at size index si: fresh arrays at BabelStream's starting
 * values, the references (only for the size's first type: ref still 0),
 * the kernels, then the check of what they left in the arrays */
static void run_type(bw_run *run, int si, size_t bytes, hl_dtype t, unsigned kernels, bw_reference *ref) {
  const bench_device *dev = run->dev;
  const size_t es = hl_dtype_size(t), n = bytes / es;
  run_ctx r = {.d = dev, .t = t, .n = n, .bytes = n * es};
  r.s = hl_stream_round(r.t, kScalar);
  r.a = bench_alloc(dev, r.bytes, "array a");
  r.b = bench_alloc(dev, r.bytes, "array b");
  r.c = bench_alloc(dev, r.bytes, "array c");
  dev->be->stream->init(r.t, r.a, r.b, r.c, n, kA, kB, kC);
  golden g = {hl_stream_round(r.t, kA), hl_stream_round(r.t, kB), hl_stream_round(r.t, kC)};
  if (ref->gb_per_s == 0) time_references(run, &r, &g, bytes, ref);
  time_kernels(run, &r, &g, si, bytes, kernels, ref);
  check_arrays(run, &r, &g, kernels);
  bench_free(dev, r.a), bench_free(dev, r.b), bench_free(dev, r.c);
}

static void run_sweep(bw_run *run, const bw_options *o) {
  printf("%-6s %-12s %10s %14s %9s %11s %7s\n", "dtype", "kernel", "array_MiB", "time_ms_median", "gb_per_s",
         "gelem_per_s", "ref_pct");
  hl_range_push("bandwidth");
  for (int si = 0; si < o->nsizes; si++) {
    bw_reference ref = {0, run->dev->be->stream->copy_ref_name(0), 0};
    for (hl_dtype t = HL_F32; t <= HL_BF16; t++)
      if (o->dtypes & (1u << hl_stream_slot(t))) run_type(run, si, (size_t)o->sizes[si], t, o->kernels, &ref);
  }
  hl_range_pop();
}

static void write_bandwidth_csv(bw_run *run) {
  bench_rows_write(&run->rows, run->outdir, &bench_bandwidth_schema);
  hl_csv_rows_free(&run->rows);
}

/* GPU: host to device and back at every size, from pageable memory (the
 * scratch buffer) and from pinned memory; written to bandwidth_host.csv */
static void time_host_copies(const bw_run *run, const bw_options *o, uint64_t largest) {
  const bench_device *dev = run->dev;
  hl_csv_rows host = {0};
  hl_range_push("bandwidth host<->device");
  void *dbuf = bench_alloc(dev, largest, "host copy target");
  void *pageable = run->scratch;
  void *pinned = dev->be->stream->host_alloc_pinned(largest);
  if (!pinned) hl_fatal("cudaMallocHost of %llu bytes failed: out of page-locked memory", (unsigned long long)largest);
  memset(pageable, 1, largest), memset(pinned, 1, largest);
  printf("%-6s %-9s %10s %14s %9s\n", "copy", "memory", "MiB", "time_ms_median", "gb_per_s");
  for (int si = 0; si < o->nsizes; si++)
    for (int dir = 0; dir < 2; dir++)
      for (int mem = 0; mem < 2; mem++) {
        host_copy hc = {dev, dbuf, mem ? pinned : pageable, (size_t)o->sizes[si], dir};
        const bench_timing tm = bench_time(dev, &run->method, launch_host_copy, &hc);
        const double gb_per_s = (double)hc.bytes / (tm.ms.median * 1e-3) / 1e9;
        hl_row row;
        hl_row_begin(&row, &bench_bandwidth_host_schema);
        hl_row_text(&row, "device", dev->name);
        hl_row_text(&row, "direction", dir ? "d2h" : "h2d");
        hl_row_text(&row, "memory", mem ? "pinned" : "pageable");
        hl_row_int(&row, "bytes", (int64_t)hc.bytes);
        bench_row_timing(&row, &tm);
        hl_row_real(&row, "gb_per_s", gb_per_s);
        hl_row_real(&row, "gb_per_s_best", (double)hc.bytes / (tm.ms.min * 1e-3) / 1e9);
        hl_csv_rows_put(&host, &row);
        printf("%-6s %-9s %10.1f %14.4f %9.2f\n", dir ? "d2h" : "h2d", mem ? "pinned" : "pageable",
               hc.bytes / 1048576.0, tm.ms.median, gb_per_s);
      }
  bench_rows_write(&host, run->outdir, &bench_bandwidth_host_schema);
  hl_range_pop();
  hl_csv_rows_free(&host);
  dev->be->stream->host_free_pinned(pinned);
  bench_free(dev, dbuf);
}

/* the last size index holding the largest size */
static int largest_index(const bw_options *o, uint64_t largest) {
  int li = 0;
  for (int si = 0; si < o->nsizes; si++)
    if (o->sizes[si] == largest) li = si;
  return li;
}

/* ------------------------------------------------------ expectations -- */
/* Past twice the last-level cache (GPU: L2) no array survives in cache
 * between two launches: every kernel streams from memory, and the bounds
 * below hold. In cache a core's load and store ports set the rate instead,
 * where triad (two loads per store) outruns a copy (one). */
static bool past_cache(const bw_run *run, uint64_t array_bytes) {
  const uint64_t llc = run->dev->facts->l2_bytes ? run->dev->facts->l2_bytes : (uint64_t)32 << 20;
  return array_bytes >= 2 * llc;
}

static void cache_skip_text(const bw_run *run, uint64_t array_bytes, char *out, size_t len) {
  snprintf(out, len, "%llu MiB arrays are below twice the %s (%.0f MiB): partly cached; no memory bound applies",
           (unsigned long long)(array_bytes >> 20), run->gpu ? "L2 cache" : "last-level cache",
           (double)run->dev->facts->l2_bytes / 1048576.0);
}

#define REFERENCE_LIMIT 1.10 /* the most a kernel may exceed the copy reference by, past the caches */
static const char reason_triad[] =
    "with streaming stores a copy moves the 2 arrays it counts and triad the 3 it counts: both stream at the memory's "
    "rate; so triad's bytes per second match the fastest copy's within the 10% a different mix of reads and writes "
    "allows; below the low bound triad leaves the memory idle part of the time";
static const char reason_narrow_triad[] =
    "shown beside fp32's: past the caches the narrow types move the same bytes per second where their conversions keep "
    "up with the memory (their bound is the Gelem/s expectation)";
static const char reason_reference[] =
    "the reference is the fastest of several copies at the same size with the same threads; past the caches every "
    "kernel streams at the memory's rate and moves the bytes it counts; a different mix of reads and writes changes "
    "that rate by a few per cent: a kernel more than 10% above the reference means the reference misses a faster way "
    "to copy on this machine; compared by the fastest samples of each so that other work on the machine is not "
    "taken for it";
static const char reason_half[] =
    "past the caches triad is memory-bound in every type: half the width streams twice the elements at the same bytes "
    "per second; above 2.1x fp32's run was slower than the memory allows (disturbed: rerun); below the low bound the "
    "conversions to and from fp32 limit the narrow kernel rather than the memory";

/* fp32's triad (BabelStream's) against the copy reference at size index li,
 * at or below it within REFERENCE_LIMIT; fp16 and bf16 are reported beside it */
static void expect_triad_against_copy(bench_expectations *e, const bw_run *run, int li, uint64_t largest) {
  const bench_device *dev = run->dev;
  const double low = run->gpu ? 0.95 : 0.80;
  char name[160], detail[256];
  for (hl_dtype t = HL_F32; t <= HL_BF16; t++) {
    const bw_result *tr = &run->res[li][hl_stream_slot(t)][K_TRIAD];
    if (t == HL_F32)
      snprintf(name, sizeof name, "fp32 triad at %llu MiB between %.0f%% and %.0f%% of the copy reference",
               (unsigned long long)(largest >> 20), 100 * low, 100 * REFERENCE_LIMIT);
    else
      snprintf(name, sizeof name, "%s triad at %llu MiB against the copy reference", hl_dtype_format_name(t),
               (unsigned long long)(largest >> 20));
    if (!tr->done) {
      if (t == HL_F32) bench_expect_skip(e, dev, name, "not run", reason_triad);
      continue;
    }
    snprintf(detail, sizeof detail, "%.1f GB/s = %.1f%% of %s %.1f GB/s", tr->gb_per_s,
             100.0 * tr->gb_per_s / tr->ref_gb_per_s, tr->ref, tr->ref_gb_per_s);
    if (t != HL_F32) {
      bench_expect_info(e, dev, name, tr->gb_per_s / tr->ref_gb_per_s, detail, reason_narrow_triad);
    } else if (!past_cache(run, largest)) {
      cache_skip_text(run, largest, detail, sizeof detail);
      bench_expect_skip(e, dev, name, detail, reason_triad);
    } else {
      bench_expect(e, dev, name, tr->gb_per_s / tr->ref_gb_per_s, low, REFERENCE_LIMIT, detail, reason_triad);
    }
  }
}

/* Every kernel and type at every size past the caches at most
 * REFERENCE_LIMIT x the copy reference: the reference's own check, by the
 * fastest samples of each (other work on the machine slows a median, rarely
 * every sample), so that a disturbed run is not taken for a wrong reference */
static void expect_reference_holds(bench_expectations *e, const bw_run *run, const bw_options *o) {
  char name[160], detail[320];
  snprintf(name, sizeof name, "every kernel past the caches at most %.0f%% of the copy reference (fastest samples)",
           100 * REFERENCE_LIMIT);
  double worst = -1;
  int ws = 0, wt = 0, wk = 0;
  for (int si = 0; si < o->nsizes; si++) {
    if (!past_cache(run, o->sizes[si])) continue;
    for (int t = 0; t < HL_STREAM_DTYPES; t++)
      for (int k = 0; k < NKERNELS; k++) {
        const bw_result *r = &run->res[si][t][k];
        const double ratio = r->done ? r->gb_per_s_best / r->ref_gb_per_s_best : -1;
        if (ratio > worst) worst = ratio, ws = si, wt = t, wk = k;
      }
  }
  if (worst < 0) {
    uint64_t largest = 0;
    for (int si = 0; si < o->nsizes; si++) largest = o->sizes[si] > largest ? o->sizes[si] : largest;
    cache_skip_text(run, largest, detail, sizeof detail);
    bench_expect_skip(e, run->dev, name, detail, reason_reference);
    return;
  }
  const bw_result *r = &run->res[ws][wt][wk];
  snprintf(detail, sizeof detail, "the highest: %s %s at %llu MiB: %.1f GB/s = %.1f%% of the fastest copy's %.1f GB/s "
           "(medians: %.1f%% of %s)", hl_dtype_format_name((hl_dtype)(HL_F32 + wt)), kernel_names[wk],
           (unsigned long long)(o->sizes[ws] >> 20), r->gb_per_s_best, 100 * worst, r->ref_gb_per_s_best,
           100 * r->gb_per_s / r->ref_gb_per_s, r->ref);
  bench_expect(e, run->dev, name, worst, NAN, REFERENCE_LIMIT, detail, reason_reference);
}

/* Half the width moves twice the elements per second at the memory's rate:
 * fp16 (and on the CPU bf16) triad at 1.9x (CPU: 1.8x, whose conversions
 * cost instructions beside the memory traffic) to 2.1x fp32's Gelem/s */
static void expect_half_rate(bench_expectations *e, const bw_run *run, int li, uint64_t largest) {
  const bw_result *f = &run->res[li][hl_stream_slot(HL_F32)][K_TRIAD];
  const double low = run->gpu ? 1.9 : 1.8, high = 2.1;
  for (hl_dtype t = HL_F16; t <= HL_BF16; t++) {
    if (run->gpu && t == HL_BF16) continue; /* the GPU's expectation is fp16's */
    const bw_result *h = &run->res[li][hl_stream_slot(t)][K_TRIAD];
    char name[160], detail[256];
    snprintf(name, sizeof name, "%s triad Gelem/s %.1fx to %.1fx fp32's at %llu MiB", hl_dtype_format_name(t), low, high,
             (unsigned long long)(largest >> 20));
    if (!h->done || !f->done) {
      bench_expect_skip(e, run->dev, name, "not both run", reason_half);
    } else if (!past_cache(run, largest)) {
      cache_skip_text(run, largest, detail, sizeof detail);
      bench_expect_skip(e, run->dev, name, detail, reason_half);
    } else {
      snprintf(detail, sizeof detail, "%.2f vs %.2f Gelem/s = %.2fx", h->gelem_per_s, f->gelem_per_s,
               h->gelem_per_s / f->gelem_per_s);
      bench_expect(e, run->dev, name, h->gelem_per_s / f->gelem_per_s, low, high, detail, reason_half);
    }
  }
}

int bench_bandwidth_main(int argc, char **argv) {
  bw_options opt;
  parse_options(argc, argv, &opt);
  /* ---- every input checked before anything is created */
  bench_device dev;
  char device_notice[512];
  const uint64_t largest = plan_run(&dev, &opt, device_notice, sizeof device_notice);

  bw_run run = {.dev = &dev, .gpu = dev.kind == HL_DEVICE_CUDA};
  start_run(&run, &opt, device_notice);
  record_metadata(&run, opt.common.cli.quick);
  run.scratch = run.gpu ? bench_host_alloc(largest, "validation copies") : NULL;
  run_sweep(&run, &opt);
  write_bandwidth_csv(&run);
  if (run.gpu) time_host_copies(&run, &opt, largest);
  free(run.scratch);

  /* ---- the expectations: at the largest size, and the reference at every size past the caches */
  bench_expectations expectations = {.schema = &bench_bandwidth_expectations_schema};
  const int li = largest_index(&opt, largest);
  expect_triad_against_copy(&expectations, &run, li, largest);
  expect_reference_holds(&expectations, &run, &opt);
  expect_half_rate(&expectations, &run, li, largest);
  bench_expectations_write(&expectations, run.outdir);
  fprintf(stderr, "%s: bandwidth: wrote %s/bandwidth.csv\n", hl_prog(), run.outdir);
  return 0;
}
