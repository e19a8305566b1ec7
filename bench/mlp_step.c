/* mlp_step.c — halflab-bench mlp-step: what the AMP core costs on top of
 * the arithmetic it runs. One training step of an MLP 784-1024-1024-10
 * (ReLU, mean cross-entropy, batch 256, fp32, CPU) through the core —
 * ops, autograd tape, backward engine — against the same arithmetic
 * written by hand as direct sgemm calls and plain loops, measured in the
 * same run on the same threads. Goal (issue 4): the core costs at most
 * 1.25x the hand-written step.
 *
 * A step is forward, loss, backward (every weight and bias gradient) and a
 * plain SGD update; the update is the same loop on both sides (the
 * optimizers are another issue's). Before anything is timed, one step of
 * each from the same weights is compared: loss and every gradient must
 * agree to 1e-4 relative, else the run stops with exit status 1 and no CSV.
 */
#include <cblas.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "amp/autograd.h"
#include "amp/cli.h"
#include "amp/csv.h"
#include "amp/error.h"
#include "amp/ops.h"
#include "amp/tensor.h"
#include "bench/bench.h"

static const char usage[] =
    "Usage: halflab-bench mlp-step [OPTIONS]\n"
    "\n"
    "One training step (forward, cross-entropy, backward, SGD) of an MLP 784-1024-1024-10, batch 256,\n"
    "fp32, on the CPU: the AMP core against the same arithmetic as direct sgemm calls, in the same run.\n"
    "Writes mlp_step.csv and mlp_step_targets.csv (goal: core / direct <= 1.25).\n"
    "\n"
    "Options:\n"
    "  --batch N       batch size (default 256)\n"
    "  --reps N        timed samples per side (default: adaptive)\n"
    "  --device D      auto or cpu (the core's CUDA kernels are not built yet)\n"
    "  --out DIR       output folder (default results/<machine>/)\n"
    "  --quick         shorter timing\n"
    "  --seed N        weight and data seed (default 1)\n"
    "  --help, --version\n";

enum { IN = 784, H1 = 1024, H2 = 1024, OUT = 10, LAYERS = 3 };
static const int fan_in[LAYERS] = {IN, H1, H2}, fan_out[LAYERS] = {H1, H2, OUT};
static const float lr = 0.01f;

/* -------------------------------------------------- the shared update -- */

static void sgd(float *p, const float *g, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 32768)
  for (int64_t i = 0; i < n; i++) p[i] -= lr * g[i];
}

/* ----------------------------------------------------------- the core -- */

typedef struct {
  int batch;
  hl_tensor *x, *t, *w[LAYERS], *b[LAYERS];
  double loss;
} core_mlp;

static void core_step(void *p, long it) {
  (void)it;
  core_mlp *m = p;
  hl_pool_push();
  hl_tensor *h = m->x;
  for (int l = 0; l < LAYERS; l++) {
    h = hl_tmp(hl_linear(h, m->w[l], m->b[l]));
    if (l < LAYERS - 1) h = hl_tmp(hl_relu(h));
  }
  hl_tensor *loss = hl_tmp(hl_cross_entropy(h, m->t));
  if (!loss || !hl_backward(loss, NULL, false)) hl_fatal("mlp-step: core step failed: %s", hl_error());
  m->loss = hl_item(loss);
  hl_pool_pop();
  /* the update, then "zero_grad" as set-to-none: the next backward stores fresh gradients */
  for (int l = 0; l < LAYERS; l++) {
    hl_tensor *params[2] = {m->w[l], m->b[l]};
    for (int k = 0; k < 2; k++) {
      sgd(hl_tensor_data(params[k]), hl_tensor_data(hl_tensor_grad(params[k])), hl_numel(params[k]));
      hl_tensor_mark_modified(params[k]);
      hl_zero_grad(params[k]);
    }
  }
}

/* ------------------------------------------------- the direct version -- */

typedef struct {
  int batch;
  float *x;
  int32_t *t;
  float *w[LAYERS], *b[LAYERS], *dw[LAYERS], *db[LAYERS];
  float *a[LAYERS + 1]; /* a[0] = x, a[1], a[2] relu outputs, a[3] logits */
  float *d[LAYERS + 1]; /* gradients of the same */
  double loss;
} direct_mlp;

static void direct_step(void *p, long it) {
  (void)it;
  direct_mlp *m = p;
  const int B = m->batch;
  /* forward: a[l+1] = act(a[l] W^T + b) */
  for (int l = 0; l < LAYERS; l++) {
    const int k = fan_in[l], n = fan_out[l];
    float *y = m->a[l + 1];
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B; r++) memcpy(y + (size_t)r * n, m->b[l], sizeof(float) * (size_t)n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, n, k, 1.0f, m->a[l], k, m->w[l], k, 1.0f, y, n);
    if (l < LAYERS - 1) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < (int64_t)B * n; i++) y[i] = y[i] > 0 ? y[i] : 0;
    }
  }
  /* loss and d logits = (softmax - onehot) / B */
  double loss = 0;
  float *logits = m->a[LAYERS], *dl = m->d[LAYERS];
  for (int r = 0; r < B; r++) {
    const float *z = logits + r * OUT;
    float mx = z[0], s = 0;
    for (int c = 1; c < OUT; c++) mx = z[c] > mx ? z[c] : mx;
    for (int c = 0; c < OUT; c++) s += expf(z[c] - mx);
    float lse = mx + logf(s);
    loss += lse - z[m->t[r]];
    for (int c = 0; c < OUT; c++) dl[r * OUT + c] = (expf(z[c] - lse) - (c == m->t[r])) / (float)B;
  }
  m->loss = loss / B;
  /* backward */
  for (int l = LAYERS - 1; l >= 0; l--) {
    const int k = fan_in[l], n = fan_out[l];
    float *dy = m->d[l + 1];
    if (l < LAYERS - 1) {
      const float *y = m->a[l + 1];
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < (int64_t)B * n; i++) dy[i] = y[i] > 0 ? dy[i] : 0;
    }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, k, B, 1.0f, dy, n, m->a[l], k, 0.0f, m->dw[l], k);
    /* bias gradient: column sums, rows streamed through a block of accumulators */
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < n; c0 += 256) {
      const int w = n - c0 < 256 ? n - c0 : 256;
      float acc[256] = {0};
      for (int r = 0; r < B; r++)
        for (int c = 0; c < w; c++) acc[c] += dy[(size_t)r * n + c0 + c];
      memcpy(m->db[l] + c0, acc, sizeof(float) * (size_t)w);
    }
    if (l > 0)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, k, n, 1.0f, dy, n, m->w[l], k, 0.0f, m->d[l], k);
  }
  for (int l = 0; l < LAYERS; l++) {
    sgd(m->w[l], m->dw[l], (int64_t)fan_out[l] * fan_in[l]);
    sgd(m->b[l], m->db[l], fan_out[l]);
  }
}

/* ---------------------------------------------------------- set-up -- */

static float *host_copy(const hl_tensor *t) {
  float *p = bench_host_alloc(sizeof(float) * (size_t)hl_numel(t), "mlp-step weights");
  if (!hl_read_f32(t, p)) hl_fatal("mlp-step: %s", hl_error());
  return p;
}

static void setup(core_mlp *c, direct_mlp *d, int batch, uint64_t seed) {
  c->batch = d->batch = batch;
  /* data: Philox normals, targets from the same stream family */
  c->x = hl_randn(HL_SHAPE(batch, IN), 0, 1, seed, 1000, HL_F32, HL_DEVICE_CPU);
  int32_t *t = bench_host_alloc(sizeof(int32_t) * (size_t)batch, "targets");
  for (int r = 0; r < batch; r++) t[r] = (int32_t)((r * 7 + (int)seed) % OUT);
  c->t = hl_from_i32(HL_SHAPE(batch), t, HL_I32, HL_DEVICE_CPU);
  d->t = t;
  if (!c->x || !c->t) hl_fatal("mlp-step: %s", hl_error());
  d->x = host_copy(c->x);
  d->a[0] = d->x;
  for (int l = 0; l < LAYERS; l++) {
    double bound = 1.0 / sqrt((double)fan_in[l]); /* PyTorch's default Linear init range */
    c->w[l] = hl_rand(HL_SHAPE(fan_out[l], fan_in[l]), -bound, bound, seed, 2 * (uint64_t)l, HL_F32, HL_DEVICE_CPU);
    c->b[l] = hl_rand(HL_SHAPE(fan_out[l]), -bound, bound, seed, 2 * (uint64_t)l + 1, HL_F32, HL_DEVICE_CPU);
    if (!c->w[l] || !c->b[l] || !hl_set_requires_grad(c->w[l], true) || !hl_set_requires_grad(c->b[l], true))
      hl_fatal("mlp-step: %s", hl_error());
    d->w[l] = host_copy(c->w[l]);
    d->b[l] = host_copy(c->b[l]);
    d->dw[l] = bench_host_alloc(sizeof(float) * (size_t)fan_out[l] * fan_in[l], "gradients");
    d->db[l] = bench_host_alloc(sizeof(float) * (size_t)fan_out[l], "gradients");
    d->a[l + 1] = bench_host_alloc(sizeof(float) * (size_t)batch * fan_out[l], "activations");
    d->d[l + 1] = bench_host_alloc(sizeof(float) * (size_t)batch * fan_out[l], "activations");
  }
  d->d[0] = NULL;
}

/* One step of each from the same weights: losses and updated weights agree. */
static void validate(core_mlp *c, direct_mlp *d) {
  core_step(c, 0);
  direct_step(d, 0);
  if (!(fabs(c->loss - d->loss) <= 1e-5 * fabs(d->loss)))
    hl_fatal("mlp-step: validation failed: loss %.9g (core) vs %.9g (direct)", c->loss, d->loss);
  for (int l = 0; l < LAYERS; l++) {
    const hl_tensor *ct[2] = {c->w[l], c->b[l]};
    const float *dt[2] = {d->w[l], d->b[l]};
    for (int k = 0; k < 2; k++) {
      float *v = host_copy(ct[k]);
      double worst = 0, scale = 0;
      for (int64_t i = 0; i < hl_numel(ct[k]); i++) {
        worst = fmax(worst, fabs(v[i] - dt[k][i]));
        scale = fmax(scale, fabs(dt[k][i]));
      }
      free(v);
      /* the updates are lr * gradient: compare against the weights' scale */
      if (!(worst <= 1e-4 * scale))
        hl_fatal("mlp-step: validation failed: layer %d %s differs by %.3g after one step", l, k ? "bias" : "weight",
                 worst);
    }
  }
}

int bench_mlp_step_main(int argc, char **argv) {
  bench_common common = {.usage = usage, .seed = 1};
  long long batch = 256;
  static const struct option longopts[] = {{"batch", required_argument, NULL, 'b'}, BENCH_COMMON_LONGOPTS, {0}};
  int opt;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    if (bench_common_option(&common, opt, argv)) continue;
    if (opt == 'b') batch = hl_parse_int("--batch", optarg, 1, 65536);
    else bench_bad_option(opt, argv);
  }
  if (optind < argc) hl_usage_error("mlp-step: unexpected argument '%s'", argv[optind]);
  if (common.device && strcmp(common.device, "auto") && strcmp(common.device, "cpu"))
    hl_usage_error("mlp-step: --device %s: this benchmark measures the CPU (the core's CUDA tensor kernels are not "
                   "built yet); use --device cpu",
                   common.device);
  const int reps = bench_parse_reps(common.reps);
  bench_device dev;
  bench_device_open(&dev, "cpu");
  char dirbuf[4096];
  const char *dir = hl_cli_outdir(common.out, dev.kind, dirbuf, sizeof dirbuf);

  core_mlp c = {0};
  direct_mlp d = {0};
  setup(&c, &d, (int)batch, common.seed);
  validate(&c, &d);

  bench_method m = bench_method_for(&dev, reps, common.quick);
  bench_progress("mlp-step: timing the direct sgemm step");
  bench_timing td = bench_time(&dev, &m, direct_step, &d);
  bench_progress("mlp-step: timing the core's step");
  bench_timing tc = bench_time(&dev, &m, core_step, &c);
  const double ratio = tc.ms.median / td.ms.median;
  const double flops = 3.0 * 2.0 * (double)batch * ((double)IN * H1 + (double)H1 * H2 + (double)H2 * OUT);

  printf("mlp-step: MLP %d-%d-%d-%d, batch %lld, fp32, %d threads\n", IN, H1, H2, OUT, batch, omp_get_max_threads());
  printf("%-8s %10s %10s %10s %9s\n", "impl", "min ms", "median ms", "max ms", "GFLOP/s");
  const bench_timing *tt[2] = {&td, &tc};
  const char *names[2] = {"direct", "core"};
  bench_rows rows = {0};
  for (int i = 0; i < 2; i++) {
    printf("%-8s %10.3f %10.3f %10.3f %9.1f\n", names[i], tt[i]->ms.min, tt[i]->ms.median, tt[i]->ms.max,
           flops / (tt[i]->ms.median * 1e6));
    bench_rows_add(&rows, "%s,%s,%lld,%d,%.4f,%.4f,%.4f,%d,%.2f,%.4f", names[i], dev.name, batch,
                   omp_get_max_threads(), tt[i]->ms.min, tt[i]->ms.median, tt[i]->ms.max, tt[i]->ms.n,
                   flops / (tt[i]->ms.median * 1e6), tt[i]->ms.median / td.ms.median);
  }
  printf("core / direct: %.3f (median step times)\n", ratio);
  /* libgomp's default spin-wait starves OpenBLAS's pthreads between the
   * kernels (docs/core.md): step times then scatter by several times */
  const char *wait = getenv("OMP_WAIT_POLICY");
  hl_meta_set("omp_wait_policy", "%s", wait ? wait : "unset (libgomp spins after each parallel region)");
  if (!wait || strcasecmp(wait, "passive"))
    fprintf(stderr,
            "mlp-step: note: OMP_WAIT_POLICY is %s; OpenMP's spinning threads compete with OpenBLAS's and the times "
            "scatter; set OMP_WAIT_POLICY=passive for stable numbers\n",
            wait ? wait : "unset");
  hl_meta_set("method", "%s", bench_method_text(&dev, &m));
  hl_meta_set("model", "MLP %d-%d-%d-%d relu, mean cross-entropy, SGD lr %g, fp32", IN, H1, H2, OUT, lr);
  bench_rows_write(&rows, dir, "mlp_step.csv",
                   "impl,device,batch,threads,time_ms_min,time_ms_median,time_ms_max,samples,gflops,ratio_to_direct");
  bench_rows_free(&rows);
  bench_targets targets = {0};
  char detail[256];
  snprintf(detail, sizeof detail, "core step %.3f ms vs direct sgemm %.3f ms: %.3fx (goal <= 1.25x)", tc.ms.median,
           td.ms.median, ratio);
  bench_target(&targets, &dev, "mlp_step_core_overhead", td.ms.median / tc.ms.median, 1.0 / 1.25, detail);
  bench_targets_write(&targets, dir, "mlp_step_targets.csv");

  for (int l = 0; l < LAYERS; l++) {
    hl_release(c.w[l]);
    hl_release(c.b[l]);
    free(d.w[l]), free(d.b[l]), free(d.dw[l]), free(d.db[l]), free(d.a[l + 1]), free(d.d[l + 1]);
  }
  hl_release(c.x);
  hl_release(c.t);
  free(d.x);
  free(d.t);
  return 0;
}
