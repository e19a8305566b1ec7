/* bandwidth.c — halflab-bench bandwidth: BabelStream's kernels (copy, scale,
 * add, triad, dot) over fp32, fp16 and bf16 arrays from 1 MiB to 1 GiB per
 * array (CPU: 512 MiB), next to the platform's own copy of the same size
 * measured in the same run (GPU: cudaMemcpy device to device; CPU: memcpy,
 * single-threaded and one per thread) and the datasheet figure; on a GPU also
 * host<->device copies, pageable and pinned (bandwidth_host.csv).
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
    "Memory bandwidth of BabelStream's kernels per element type, next to the platform's own\n"
    "copy of the same size (the practical limit) and the datasheet figure. Writes\n"
    "bandwidth.csv, bandwidth_targets.csv and, on a GPU, bandwidth_host.csv (host<->device copies).\n"
    "\n"
    "Kernels: copy c=a, scale b=s*c, add c=a+b, triad a=b+s*c, dot sum(a*b)\n"
    "\n"
    "Options:\n"
    "  --sizes LIST    bytes per array, comma-separated (e.g. 1MiB,64MiB,1GiB); default 1 MiB .. 1 GiB\n"
    "                  by powers of two on a GPU, .. 512 MiB on the CPU\n"
    "  --dtypes LIST   fp32, fp16, bf16 (default: all three)\n"
    "  --kernels LIST  copy, scale, add, triad, dot (default: all five)\n"
    "  --reps N        timed samples per point (default: adaptive, see the CSV's method line)\n"
    "  --device D      auto (default: the GPU when usable, else the CPU), cpu, cuda\n"
    "  --out DIR       output folder (default results/<machine>/)\n"
    "  --quick         three sizes, the largest included (what the issue's targets need)\n"
    "  --seed N        accepted for uniformity; the arrays hold BabelStream's fixed values\n"
    "  --help, --version\n";

enum { K_COPY, K_SCALE, K_ADD, K_TRIAD, K_DOT, NKERNELS };
static const char *kernel_names[NKERNELS] = {"copy", "scale", "add", "triad", "dot"};
static const int kernel_arrays[NKERNELS] = {2, 2, 3, 3, 2};
static const char *dtype_names[HL_STREAM_TYPES] = {"fp32", "fp16", "bf16"};

static const float kA = 0.1f, kB = 0.2f, kC = 0.0f, kScalar = 0.4f;

typedef struct {
  const bench_device *d;
  hl_stream_type t;
  int kernel;      /* NKERNELS + 0: reference copy (backend copy), + 1: copy_ref */
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
    case NKERNELS: r->d->be->copy(r->c, r->a, r->bytes); break;
    default: k->copy_ref(r->c, r->a, r->bytes); break;
  }
}

/* the expected values, one element run through the same arithmetic */
typedef struct {
  float a, b, c;
} golden;

static void golden_step(golden *g, hl_stream_type t, int kernel, float s) {
  switch (kernel) {
    case K_COPY: g->c = g->a; break;
    case K_SCALE: g->b = hl_stream_round(t, hl_stream_scale_op(s, g->c)); break;
    case K_ADD: g->c = hl_stream_round(t, hl_stream_add_op(g->a, g->b)); break;
    case K_TRIAD: g->a = hl_stream_round(t, hl_stream_triad_op(g->b, s, g->c)); break;
    case K_DOT: break;
    default: g->c = g->a; break; /* the reference copies copy a to c */
  }
}

static uint32_t bits_of(hl_stream_type t, float v) {
  if (t == HL_STREAM_F32) return hl_f32_bits(v);
  return t == HL_STREAM_F16 ? hl_f32_to_f16(v) : hl_f32_to_bf16(v);
}

/* every element of the array equal to v (bit for bit)? index of the first that is not, or -1 */
static long long first_mismatch(const void *host, hl_stream_type t, size_t n, float v) {
  const uint32_t want = bits_of(t, v);
  for (size_t i = 0; i < n; i++) {
    const uint32_t got = t == HL_STREAM_F32 ? ((const uint32_t *)host)[i] : ((const uint16_t *)host)[i];
    if (got != want) return (long long)i;
  }
  return -1;
}

static void validate(const run_ctx *r, const golden *g, void *scratch, double dot_value) {
  const void *arr[3] = {r->a, r->b, r->c};
  const float want[3] = {g->a, g->b, g->c};
  const char *names[3] = {"a", "b", "c"};
  const size_t es = hl_stream_type_size(r->t);
  for (int j = 0; j < 3; j++) {
    const void *host = arr[j];
    if (r->d->kind == HL_DEVICE_CUDA) {
      r->d->be->copy_to_host(scratch, arr[j], r->n * es);
      host = scratch;
    }
    const long long bad = first_mismatch(host, r->t, r->n, want[j]);
    if (bad >= 0)
      hl_fatal("bandwidth %s %zu bytes: array %s is wrong at element %lld (expected %.9g after the kernels); no CSV "
               "written", hl_stream_type_name(r->t), r->bytes, names[j], bad, (double)want[j]);
  }
  /* dot of n equal products: fp32 partials of at most a few thousand terms, added in fp64 */
  const double exact = (double)r->n * (double)g->a * (double)g->b;
  if (!(fabs(dot_value - exact) <= 1e-3 * fabs(exact)))
    hl_fatal("bandwidth %s %zu bytes: dot = %.9g, expected %.9g (relative tolerance 1e-3); no CSV written",
             hl_stream_type_name(r->t), r->bytes, dot_value, exact);
}

/* "1MiB,64MiB": byte counts (cli/cli.h units), at least 64 bytes */
static int parse_sizes(const char *s, uint64_t *out, int max) {
  char buf[1024];
  if (strlen(s) >= sizeof buf) hl_usage_error("--sizes: list too long");
  snprintf(buf, sizeof buf, "%s", s);
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == max) hl_usage_error("--sizes: more than %d values", max);
    if (t[0] == '-') hl_usage_error("--sizes: %s is negative", t);
    out[n] = hl_parse_bytes("--sizes", t);
    if (out[n] < 64) hl_usage_error("--sizes: %s is below the 64 bytes a point needs", t);
    n++;
  }
  if (!n) hl_usage_error("--sizes: empty list");
  return n;
}

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

typedef struct {
  bool done;
  double gbps, gelems, ref_gbps;
  const char *ref;
} bw_result;

int bench_bandwidth_main(int argc, char **argv) {
  bench_common c = {.cli = hl_cli_common_defaults(usage)};
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
    if (bench_common_option(&c, opt, argv)) continue;
    switch (opt) {
      case OPT_SIZES: sizes_s = optarg; break;
      case OPT_DTYPES: dtypes_s = optarg; break;
      case OPT_KERNELS: kernels_s = optarg; break;
      default: bench_bad_option(opt, argv);
    }
  }
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);

  /* ---- every input checked before anything is created */
  uint64_t sizes[64];
  int nsizes = sizes_s ? parse_sizes(sizes_s, sizes, 64) : 0;
  const unsigned dtypes = dtypes_s ? parse_mask("--dtypes", dtypes_s, dtype_names, HL_STREAM_TYPES) : 7u;
  const unsigned kernels = kernels_s ? parse_mask("--kernels", kernels_s, kernel_names, NKERNELS) : 31u;
  const int reps = bench_parse_reps(c.reps);
  bench_device dev;
  char device_notice[512];
  bench_device_open_deferred(&dev, c.cli.device, device_notice, sizeof device_notice);
  if (!dev.be->stream) hl_fatal("the %s backend of this build has no bandwidth kernels", dev.name);
  const bool gpu = dev.kind == HL_DEVICE_CUDA;
  if (!nsizes) {
    if (c.cli.quick) {
      const uint64_t q[3] = {4u << 20, 64u << 20, gpu ? 1u << 30 : 128u << 20};
      for (int i = 0; i < 3; i++) sizes[nsizes++] = q[i];
    } else {
      for (uint64_t s = 1u << 20; s <= (gpu ? 1u << 30 : 512u << 20); s *= 2) sizes[nsizes++] = s;
    }
  }
  uint64_t largest = 0;
  for (int i = 0; i < nsizes; i++) largest = sizes[i] > largest ? sizes[i] : largest;
  /* device: the three arrays; host (GPU): a validation copy, pageable and pinned copy buffers */
  bench_require_memory(&dev, "bandwidth (three arrays of the largest size)", 3 * largest, gpu ? 3 * largest : 0);

  char outbuf[4096];
  const char *outdir = hl_cli_outdir(c.cli.out, dev.kind, outbuf, sizeof outbuf);
  fputs(device_notice, stderr);
  const bench_peaks peaks = bench_peaks_for(dev.facts, dev.kind);
  bench_method method = bench_method_for(&dev, reps, c.cli.quick);
  /* many points: less per point than GEMM */
  method.target_s = gpu ? (c.cli.quick ? 0.05 : 0.1) : (c.cli.quick ? 0.1 : 0.25);
  method.min_reps = gpu ? 10 : 5;
  method.max_reps = 100;
  hl_meta_set("peak_source", "%s", peaks.source);
  hl_meta_set("method", "%s", bench_method_text(&dev, &method));
  hl_meta_set("bytes", "BabelStream's accounting: arrays moved x element size x n (copy 2, scale 2, add 3, triad 3, "
              "dot 2; reference copies 2); gbps = 1e9 bytes/s from the median time, gbps_best from the minimum");
  hl_meta_set("reference", "%s", gpu ? "memcpy-d2d: cudaMemcpyAsync device to device of the same array size, same run"
                                     : "memcpy: one memcpy call (one thread); memcpy-omp: a memcpy per OpenMP thread "
                                       "over its share; ref_gbps is the faster of the two at that size");
  if (!gpu)
    hl_meta_set("stores", "CPU kernels store regularly while the arrays a kernel touches fit the last-level cache (%.0f "
                "MiB) and with non-temporal (streaming) AVX stores beyond it, as glibc's memcpy does for large copies",
                (double)dev.facts->l2_bytes / 1048576.0);
  hl_meta_set("validation", "after the timed runs every element of a, b, c equals the value the same arithmetic gives "
              "on one element (bit for bit), dot within 1e-3 of n a b");
  if (c.cli.quick) hl_meta_set("quick", "yes");

  hl_csv_rows rows = {0};
  bw_result res[64][HL_STREAM_TYPES][NKERNELS];
  memset(res, 0, sizeof res);
  void *scratch = gpu ? bench_host_alloc(largest, "validation copies") : NULL;
  printf("%-6s %-11s %10s %10s %9s %9s %7s\n", "dtype", "kernel", "array_MiB", "median_ms", "GB/s", "Gelem/s", "%ref");
  hl_range_push("bandwidth");
  for (int si = 0; si < nsizes; si++) {
    const size_t bytes = (size_t)sizes[si];
    double ref_gbps = 0;
    const char *ref_name = gpu ? "memcpy-d2d" : "memcpy";
    for (int t = 0; t < HL_STREAM_TYPES; t++) {
      if (!(dtypes & (1u << t))) continue;
      const size_t es = hl_stream_type_size((hl_stream_type)t), n = bytes / es;
      run_ctx r = {.d = &dev, .t = (hl_stream_type)t, .n = n, .bytes = n * es};
      r.s = hl_stream_round(r.t, kScalar);
      r.a = bench_alloc(&dev, r.bytes, "array a");
      r.b = bench_alloc(&dev, r.bytes, "array b");
      r.c = bench_alloc(&dev, r.bytes, "array c");
      dev.be->stream->init(r.t, r.a, r.b, r.c, n, kA, kB, kC);
      golden g = {hl_stream_round(r.t, kA), hl_stream_round(r.t, kB), hl_stream_round(r.t, kC)};
      char range[96];
      /* the references: once per size, with the first type's arrays */
      if (ref_gbps == 0) {
        for (int k = 0; k < (gpu ? 1 : 2); k++) {
          const char *name = gpu ? "memcpy-d2d" : k == 0 ? "memcpy" : "memcpy-omp";
          snprintf(range, sizeof range, "bandwidth %s %zu MiB", name, bytes >> 20);
          hl_range_push(range);
          r.kernel = gpu ? NKERNELS + 1 : NKERNELS + k;
          const bench_timing tm = bench_time(&dev, &method, launch, &r);
          hl_range_pop();
          golden_step(&g, r.t, r.kernel, r.s);
          const double moved = 2.0 * (double)r.bytes, gbps = moved / (tm.ms.median * 1e-3) / 1e9;
          if (gbps > ref_gbps) ref_gbps = gbps, ref_name = name;
          char b1[32];
          hl_csv_rows_add(&rows, "%s,%s,%s,%zu,%zu,%d,%.0f,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,,,,,%s,,%d", dev.name, name, "bytes",
                         r.bytes, r.bytes, 2, moved, tm.warmups, tm.samples, tm.inner, tm.ms.min, tm.ms.median,
                         tm.ms.max, gbps, moved / (tm.ms.min * 1e-3) / 1e9,
                         peaks.value[PEAK_HBM] > 0 ? bench_num(peaks.value[PEAK_HBM], b1, sizeof b1) : "", tm.attempts);
          printf("%-6s %-11s %10.1f %10.4f %9.2f %9s %7s\n", "-", name, r.bytes / 1048576.0, tm.ms.median, gbps, "-", "-");
        }
      }
      for (int k = 0; k < NKERNELS; k++) {
        if (!(kernels & (1u << k))) continue;
        r.kernel = k;
        snprintf(range, sizeof range, "bandwidth %s %s %zu MiB", kernel_names[k], dtype_names[t], bytes >> 20);
        bench_progress("%s", range);
        hl_range_push(range);
        const bench_timing tm = bench_time(&dev, &method, launch, &r);
        hl_range_pop();
        golden_step(&g, r.t, k, r.s);
        const double moved = (double)kernel_arrays[k] * (double)r.bytes;
        const double gbps = moved / (tm.ms.median * 1e-3) / 1e9, gelems = gbps / (double)es;
        bw_result *br = &res[si][t][k];
        br->done = true, br->gbps = gbps, br->gelems = gelems, br->ref_gbps = ref_gbps, br->ref = ref_name;
        char b1[32], b2[32];
        const double hbm = peaks.value[PEAK_HBM];
        hl_csv_rows_add(&rows, "%s,%s,%s,%zu,%zu,%d,%.0f,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%s,%.6g,%.4g,%s,%s,%d",
                       dev.name, kernel_names[k], dtype_names[t], r.bytes, n, kernel_arrays[k], moved, tm.warmups,
                       tm.samples, tm.inner, tm.ms.min, tm.ms.median, tm.ms.max, gbps,
                       moved / (tm.ms.min * 1e-3) / 1e9, gelems, ref_name, ref_gbps, 100.0 * gbps / ref_gbps,
                       hbm > 0 ? bench_num(hbm, b1, sizeof b1) : "", hbm > 0 ? bench_num(100.0 * gbps / hbm, b2, sizeof b2) : "", tm.attempts);
        printf("%-6s %-11s %10.1f %10.4f %9.2f %9.3f %7.1f\n", dtype_names[t], kernel_names[k], r.bytes / 1048576.0,
               tm.ms.median, gbps, gelems, 100.0 * gbps / ref_gbps);
        fflush(stdout);
      }
      hl_range_push("validate");
      if (kernels & (1u << K_DOT)) validate(&r, &g, scratch, r.dot);
      else {
        r.dot = (double)n * g.a * g.b; /* dot not run: nothing to compare it with */
        validate(&r, &g, scratch, r.dot);
      }
      hl_range_pop();
      bench_free(&dev, r.a), bench_free(&dev, r.b), bench_free(&dev, r.c);
    }
  }
  hl_range_pop();
  bench_rows_write(&rows, outdir, "bandwidth.csv",
                   "device,kernel,dtype,array_bytes,elements,arrays,bytes_moved,warmups,samples,inner,time_ms_min,"
                   "time_ms_median,time_ms_max,gbps,gbps_best,gelems,ref_kernel,ref_gbps,pct_of_ref,datasheet_gbps,"
                   "pct_of_datasheet,attempts");
  hl_csv_rows_free(&rows);

  /* ---- host <-> device copies (GPU) */
  if (gpu) {
    hl_csv_rows host = {0};
    hl_range_push("bandwidth host<->device");
    void *dbuf = bench_alloc(&dev, largest, "host copy target");
    void *pageable = scratch;
    void *pinned = dev.be->stream->host_alloc_pinned(largest);
    if (!pinned) hl_fatal("cudaMallocHost of %llu bytes failed: out of page-locked memory", (unsigned long long)largest);
    memset(pageable, 1, largest), memset(pinned, 1, largest);
    printf("%-6s %-9s %10s %10s %9s\n", "copy", "memory", "MiB", "median_ms", "GB/s");
    for (int si = 0; si < nsizes; si++)
      for (int dir = 0; dir < 2; dir++)
        for (int mem = 0; mem < 2; mem++) {
          host_copy hc = {&dev, dbuf, mem ? pinned : pageable, (size_t)sizes[si], dir};
          const bench_timing tm = bench_time(&dev, &method, launch_host_copy, &hc);
          const double gbps = (double)hc.bytes / (tm.ms.median * 1e-3) / 1e9;
          hl_csv_rows_add(&host, "%s,%s,%s,%zu,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%d", dev.name, dir ? "d2h" : "h2d",
                         mem ? "pinned" : "pageable", hc.bytes, tm.warmups, tm.samples, tm.inner, tm.ms.min,
                         tm.ms.median, tm.ms.max, gbps, (double)hc.bytes / (tm.ms.min * 1e-3) / 1e9, tm.attempts);
          printf("%-6s %-9s %10.1f %10.4f %9.2f\n", dir ? "d2h" : "h2d", mem ? "pinned" : "pageable",
                 hc.bytes / 1048576.0, tm.ms.median, gbps);
        }
    bench_rows_write(&host, outdir, "bandwidth_host.csv",
                     "device,direction,memory,bytes,warmups,samples,inner,time_ms_min,time_ms_median,time_ms_max,gbps,"
                     "gbps_best,attempts");
    hl_range_pop();
    hl_csv_rows_free(&host);
    dev.be->stream->host_free_pinned(pinned);
    bench_free(&dev, dbuf);
  }
  free(scratch);

  /* ---- the targets at the largest size */
  bench_targets targets = {0};
  int li = 0;
  for (int si = 0; si < nsizes; si++)
    if (sizes[si] == largest) li = si;
  char name[128], detail[256];
  /* the target is fp32's triad (BabelStream's); fp16 and bf16 are reported beside it */
  for (int t = 0; t < HL_STREAM_TYPES; t++) {
    const bw_result *tr = &res[li][t][K_TRIAD];
    snprintf(name, sizeof name, "%s triad at %llu MiB >= %d%% of the same-run %s", dtype_names[t],
             (unsigned long long)(largest >> 20), gpu ? 95 : 80, gpu ? "device-to-device copy" : "memcpy");
    if (!tr->done) {
      if (t == HL_STREAM_F32) bench_target_skip(&targets, &dev, name, "not run");
      continue;
    }
    snprintf(detail, sizeof detail, "%.1f GB/s = %.1f%% of %s %.1f GB/s", tr->gbps, 100.0 * tr->gbps / tr->ref_gbps,
             tr->ref, tr->ref_gbps);
    if (t == HL_STREAM_F32) {
      bench_target(&targets, &dev, name, tr->gbps / tr->ref_gbps, gpu ? 0.95 : 0.80, detail);
    } else {
      snprintf(name, sizeof name, "%s triad at %llu MiB against the same-run %s", dtype_names[t],
               (unsigned long long)(largest >> 20), gpu ? "device-to-device copy" : "memcpy");
      bench_target_info(&targets, &dev, name, tr->gbps / tr->ref_gbps, detail);
    }
  }
  if (gpu) {
    const bw_result *h = &res[li][HL_STREAM_F16][K_TRIAD], *f = &res[li][HL_STREAM_F32][K_TRIAD];
    const char *nm = "fp16 triad Gelem/s >= 1.9x fp32's at the largest size";
    if (h->done && f->done) {
      snprintf(detail, sizeof detail, "%.2f vs %.2f Gelem/s = %.2fx", h->gelems, f->gelems, h->gelems / f->gelems);
      bench_target(&targets, &dev, nm, h->gelems / f->gelems, 1.9, detail);
    } else {
      bench_target_skip(&targets, &dev, nm, "fp16 and fp32 triad not both run");
    }
  }
  bench_targets_write(&targets, outdir, "bandwidth_targets.csv");
  fprintf(stderr, "%s: bandwidth: wrote %s/bandwidth.csv\n", hl_prog(), outdir);
  return 0;
}
