/* dp_threads.c — the "多GPU情况" (DataParallel) lesson: autocast state is per thread,
 * so a forward that runs in a thread of its own must enter autocast there.
 *
 * PyTorch's DataParallel splits the batch and runs the model's forward on
 * each shard in a thread of its own, one per device. An autocast region the
 * caller opened around the DataParallel call does not reach those threads;
 * the fix is to enter autocast inside forward (or decorate it). Here the
 * threads are plain pthreads of one process sharing one model on one device,
 * which is all the lesson needs:
 *
 *   case A  the main thread enters autocast and starts the threads, which
 *           run the forward on their shards without entering it: their
 *           outputs are fp32 (no cast was made, the products ran in fp32),
 *           while the main thread's own forward under the region gives the
 *           lower precision (bf16 on the CPU, fp16 on a GPU);
 *   case B  each thread enters autocast inside its forward: the outputs are
 *           in the lower precision and, gathered, equal the main thread's
 *           autocast forward of the whole batch (see shard_match_tolerance);
 *   case C  backward in the main thread over the gathered outputs of case
 *           B: the shared weights' gradients, summed over the shards' graphs,
 *           agree with the single-thread step's within a stated bound.
 *
 * Every line is checked; the exit status is 1 when one is wrong. What each
 * thread must do for itself besides autocast: open its own pool for hl_tmp
 * (pools are per thread) and copy hl_error() out before it ends (the
 * message is per thread). */
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "core/engine/ops.h"
#include "examples/example.h"
#include "kernels/gemm_reference.h"

enum { BATCH = 64, IN = 32, HIDDEN = 64, OUT = 16, MAX_THREADS = BATCH /* a row per shard at least */ };

/* x [rows, IN] -> relu(x W1^T + b1) W2^T + b2; shared read-only by every thread */
typedef struct {
  hl_tensor *p[4]; /* fc1.weight [HIDDEN, IN], fc1.bias, fc2.weight [OUT, HIDDEN], fc2.bias */
} model;

static const char *const param_names[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};

static model model_new(uint64_t seed, hl_device_kind device) {
  model m;
  const hl_shape shapes[4] = {HL_SHAPE(HIDDEN, IN), HL_SHAPE(HIDDEN), HL_SHAPE(OUT, HIDDEN), HL_SHAPE(OUT)};
  const double stds[4] = {1.0 / sqrt(IN), 0.1, 1.0 / sqrt(HIDDEN), 0.1};
  for (int i = 0; i < 4; i++) {
    m.p[i] = hl_tmp(hl_randn(shapes[i], 0.0, stds[i], seed, (uint64_t)i, HL_F32, device));
    HL_CHECK(m.p[i] && hl_set_requires_grad(m.p[i], true));
    hl_tensor_set_name(m.p[i], param_names[i]);
  }
  return m;
}

/* The forward opens its own pool: a pool belongs to the thread that pushed
 * it, so the example's pool (the main thread's) does not serve the others. */
static hl_tensor *model_forward(const model *m, hl_tensor *x) {
  hl_pool_push();
  hl_tensor *h = hl_tmp(hl_relu(hl_tmp(hl_linear(x, m->p[0], m->p[1]))));
  hl_tensor *y = hl_linear(h, m->p[2], m->p[3]);
  hl_pool_pop();
  return y;
}

/* ------------------------------------------------------------- threads -- */

typedef struct {
  const model *m;
  hl_tensor *shard;     /* rows [row0, row1) of the batch: a view, read only */
  int64_t row0, row1;
  bool enter_autocast;  /* case B: the region is entered inside the thread */
  hl_device_kind device;
  /* results, read by the main thread after pthread_join */
  hl_tensor *out;       /* one reference, the main thread's to release */
  bool saw_autocast;    /* hl_autocast_enabled() at the forward, in this thread */
  hl_dtype saw_dtype;
  uint64_t casts;       /* conversions autocast made in this thread during the forward */
  char error[512];      /* hl_error() of this thread when the forward failed */
} shard_job;

static void shard_forward(shard_job *j) {
  j->saw_autocast = hl_autocast_enabled(j->device);
  j->saw_dtype = hl_autocast_dtype(j->device);
  const uint64_t casts_before = hl_autocast_conversions();
  j->out = model_forward(j->m, j->shard);
  j->casts = hl_autocast_conversions() - casts_before;
  if (!j->out) snprintf(j->error, sizeof j->error, "%s", hl_error());
}

static void *shard_thread(void *arg) {
  shard_job *j = arg;
  if (j->enter_autocast) {
    HL_AUTOCAST(j->device, HL_AUTOCAST_DEFAULT, true) { shard_forward(j); }
  } else {
    shard_forward(j);
  }
  return NULL;
}

/* One thread per shard, N shards of the batch as even as rows allow; waits
 * for all of them. */
static void run_shards(shard_job *jobs, int n, const model *m, hl_tensor *batch, bool enter_autocast,
                       hl_device_kind device) {
  pthread_t threads[MAX_THREADS];
  for (int t = 0; t < n; t++) {
    const int64_t row0 = (int64_t)t * BATCH / n, row1 = (int64_t)(t + 1) * BATCH / n;
    jobs[t] = (shard_job){.m = m, .row0 = row0, .row1 = row1, .enter_autocast = enter_autocast, .device = device};
    jobs[t].shard = hl_slice(batch, 0, row0, row1);
    HL_CHECK(jobs[t].shard);
    const int err = pthread_create(&threads[t], NULL, shard_thread, &jobs[t]);
    if (err) hl_fatal("pthread_create: %s", strerror(err));
  }
  for (int t = 0; t < n; t++) {
    const int err = pthread_join(threads[t], NULL);
    if (err) hl_fatal("pthread_join: %s", strerror(err));
    hl_release(jobs[t].shard);
    jobs[t].shard = NULL;
  }
}

static void release_outputs(shard_job *jobs, int n) {
  for (int t = 0; t < n; t++) hl_release(jobs[t].out), jobs[t].out = NULL;
}

/* ------------------------------------------------------------- checks -- */

/* What each thread saw and gave, one line each; false when a forward failed. */
static bool report_threads(const shard_job *jobs, int n, bool want_autocast, hl_dtype want) {
  bool all_ran = true;
  for (int t = 0; t < n; t++) {
    const shard_job *j = &jobs[t];
    char line[96];
    snprintf(line, sizeof line, "  thread %d sees autocast", t);
    if (j->saw_autocast) printf("%-52s on (%s), %llu casts made\n", line, hl_dtype_name(j->saw_dtype),
                                (unsigned long long)j->casts);
    else printf("%-52s off, %llu casts made\n", line, (unsigned long long)j->casts);
    if (j->saw_autocast != want_autocast)
      example_fail("thread %d: autocast %s, expected %s", t, j->saw_autocast ? "on" : "off",
                   want_autocast ? "on" : "off");
    /* no cast at all is what shows that its products ran in fp32 */
    if (!want_autocast && j->casts) example_fail("thread %d: autocast made %llu casts outside any region", t,
                                                 (unsigned long long)j->casts);
    if (want_autocast && !j->casts) example_fail("thread %d: autocast made no cast inside its region", t);
    snprintf(line, sizeof line, "  thread %d, rows %lld-%lld: output", t, (long long)j->row0,
             (long long)j->row1 - 1);
    if (!j->out) {
      printf("%-52s failed: %s\n", line, j->error);
      example_fail("%s: %s", line, j->error);
      all_ran = false;
      continue;
    }
    example_expect(line, j->out, want);
  }
  return all_ran;
}

/* The shards' outputs joined along the batch, as DataParallel's gather does
 * (a differentiable cat: case C runs backward through it). */
static hl_tensor *gather(const shard_job *jobs, int n) {
  hl_tensor *outs[MAX_THREADS];
  for (int t = 0; t < n; t++) outs[t] = jobs[t].out;
  return hl_cat(outs, n, 0);
}

static float *values(hl_tensor *t) {
  float *v = malloc(sizeof(float) * (size_t)hl_numel(t));
  if (!v) hl_fatal("out of host memory");
  HL_CHECK(hl_read_f32(t, v));
  return v;
}

/* Largest |a - b| and largest |b| over all elements. */
static void compare(hl_tensor *a, hl_tensor *b, double *diff, double *scale, int64_t *differing) {
  float *va = values(a), *vb = values(b);
  *diff = *scale = 0;
  *differing = 0;
  for (int64_t i = 0; i < hl_numel(b); i++) {
    *diff = fmax(*diff, fabs((double)va[i] - vb[i]));
    *scale = fmax(*scale, fabs((double)vb[i]));
    *differing += memcmp(&va[i], &vb[i], sizeof va[i]) != 0;
  }
  free(va), free(vb);
}

/* Whether every product of the forward, on the whole batch and on each
 * shard, runs on oneDNN's bf16 matmul (kernels/gemm_reference.h): the
 * path on which case B's shards match the whole batch bit for bit. */
static bool products_on_onednn(hl_device_kind device, hl_dtype lower, int shards) {
  if (device != HL_DEVICE_CPU || lower != HL_BF16) return false;
  const int64_t layers[2][2] = {{HIDDEN, IN}, {OUT, HIDDEN}}; /* n, k of each linear */
  for (int t = 0; t <= shards; t++) {
    const int64_t rows = t == shards ? BATCH : (int64_t)(t + 1) * BATCH / shards - (int64_t)t * BATCH / shards;
    for (int l = 0; l < 2; l++) {
      /* the core's linear: x [rows, k] times w [n, k] transposed, into a bf16 C holding the bias */
      const hl_gemm_desc d = {.trans_b = true, .m = rows, .n = layers[l][0], .k = layers[l][1], .batch = 1,
                              .a_type = HL_BF16, .b_type = HL_BF16, .c_type = HL_BF16, .compute = HL_COMPUTE_F32,
                              .alpha = 1, .beta = 1, .lda = layers[l][1], .ldb = layers[l][1], .ldc = layers[l][0]};
      char why[256];
      if (!hl_onednn_gemm_describe(&d, why, sizeof why)) return false;
    }
  }
  return true;
}

/* How far case B's gathered outputs may be from the single-thread forward,
 * relative to its largest element. Every row of a linear is a dot product
 * over the input features, and oneDNN's matmul sums each row in an order
 * fixed by those features alone, whatever the number of rows (measured for
 * 1 to 64 rows with 32 to 1024 features): there a shard's rows come out bit
 * for bit as in the whole batch, since bias, ReLU and the casts are element-
 * wise. OpenBLAS's sgemm, under the widening path (fp16, or bf16 without
 * bf16 units), sums a row in another order when the product has few rows
 * (measured: every row count up to 18 for these layers); cuBLAS may
 * likewise pick another algorithm for another row count. There
 * the fp32 sums differ in their last bits and a rounding to the lower dtype
 * may move by one unit: four of its unit roundoffs (2^-6 for bf16, 2^-9 for
 * fp16) bound one such move in each of the two layers. */
static double shard_match_tolerance(bool exact_rows, hl_dtype lower) {
  if (exact_rows) return 0;
  return lower == HL_BF16 ? 0x1p-6 : 0x1p-9;
}

/* Case A's fp32 outputs against the fp32 forward of the whole batch: only
 * the order of fp32 sums may differ (measured: at most 2.1e-7, about 2^-22,
 * of the largest value); 2^-16 leaves room for that and stays far below the
 * bf16 forward's distance (about 2^-8). */
static const double fp32_reorder_tolerance = 0x1p-16;

static void expect_same(const char *line, hl_tensor *got, hl_tensor *want, double tol) {
  double diff, scale;
  int64_t differing;
  compare(got, want, &diff, &scale, &differing);
  if (differing == 0) {
    printf("%-52s bit for bit equal (%lld elements)\n", line, (long long)hl_numel(want));
    return;
  }
  printf("%-52s %lld of %lld elements differ, by up to %.3g (%.3g of the largest |value| %.3g)\n", line,
         (long long)differing, (long long)hl_numel(want), diff, diff / scale, scale);
  if (!(diff <= tol * scale))
    example_fail("%s: differs by %.3g, more than %.3g x the largest |value| %.3g", line, diff, tol, scale);
}

/* --------------------------------------------------------------- cases -- */

/* Case A; returns the main thread's autocast forward of the whole batch
 * (the reference of case B). */
static hl_tensor *case_main_thread_only(const model *m, hl_tensor *batch, int n, hl_device_kind device,
                                        hl_dtype lower) {
  printf("case A: autocast entered in the main thread only; the threads do not enter it\n");
  shard_job jobs[MAX_THREADS];
  hl_tensor *whole = NULL;
  HL_AUTOCAST(device, HL_AUTOCAST_DEFAULT, true) {
    whole = hl_tmp(model_forward(m, batch));
    char line[96];
    snprintf(line, sizeof line, "  main thread, all %d rows: output", BATCH);
    example_expect(line, whole, lower);
    run_shards(jobs, n, m, batch, false, device); /* started from inside the region */
  }
  HL_CHECK(whole);
  if (report_threads(jobs, n, false, HL_F32)) {
    hl_tensor *gathered = hl_tmp(gather(jobs, n));
    HL_CHECK(gathered);
    /* what the threads computed is the fp32 model, not the one the main thread asked for */
    hl_tensor *fp32 = hl_tmp(model_forward(m, batch));
    HL_CHECK(fp32);
    expect_same("  gathered vs the fp32 forward of the batch", gathered, fp32, fp32_reorder_tolerance);
    double diff, scale;
    int64_t differing;
    compare(gathered, whole, &diff, &scale, &differing);
    printf("%-52s up to %.3g apart (%.3g of the largest |value|)\n", "  gathered vs the main thread's autocast forward",
           diff, diff / scale);
    if (differing == 0) example_fail("case A: the threads' fp32 outputs equal the %s forward", hl_dtype_name(lower));
  }
  release_outputs(jobs, n);
  return whole;
}

/* Case B, then case C on its gathered outputs. */
static void case_inside_each_thread(const model *m, hl_tensor *batch, int n, hl_device_kind device, hl_dtype lower,
                                    hl_tensor *whole) {
  printf("case B: autocast entered inside each thread's forward\n");
  shard_job jobs[MAX_THREADS];
  run_shards(jobs, n, m, batch, true, device);
  if (!report_threads(jobs, n, true, lower)) {
    release_outputs(jobs, n);
    return;
  }
  hl_tensor *gathered = hl_tmp(gather(jobs, n));
  release_outputs(jobs, n); /* the gathered tensor's graph keeps what backward needs */
  HL_CHECK(gathered);
  example_expect("  gathered outputs", gathered, lower);
  const bool exact_rows = products_on_onednn(device, lower, n);
  printf("%-52s %s\n", "  products", exact_rows ? "on oneDNN's matmul: shards must match bit for bit"
                                                    : "not all on oneDNN's matmul: a stated tolerance");
  expect_same("  gathered vs the main thread's autocast forward", gathered, whole,
              shard_match_tolerance(exact_rows, lower));

  /* Case C: one loss over the gathered outputs, backward in the main thread
   * through the graphs the threads recorded, against the same loss over the
   * single-thread forward. The weights are shared, so each shard's graph
   * adds its part into the same .grad, as DataParallel's replicas' gradients
   * are summed into the one model. */
  printf("case C: backward in the main thread over the gathered outputs\n");
  hl_tensor *grads[2][4];
  hl_tensor *outputs[2] = {gathered, whole};
  for (int k = 0; k < 2; k++) {
    hl_tensor *y = hl_tmp(hl_to_f32(outputs[k]));
    hl_tensor *loss = hl_tmp(hl_mean(hl_tmp(hl_mul(y, y))));
    HL_CHECK(loss && hl_backward(loss, NULL, false));
    for (int i = 0; i < 4; i++) {
      grads[k][i] = hl_retain(hl_tensor_grad(m->p[i]));
      hl_zero_grad(m->p[i]);
    }
  }
  /* Not bit for bit: the threaded step sums a weight's gradient shard by
   * shard, each part a product over its own rows rounded to the lower dtype
   * (the backward runs in the forward's dtypes), where the single-thread step
   * rounds one product over all rows. Each part and the whole are rounded
   * once; four unit roundoffs of the largest element bound that and the f32
   * sums' differences while no part is much larger than the whole (parts
   * cancelling each other would need more; measured here: at most 0.0051
   * for bf16, a third of the bound). */
  const double grad_tol = lower == HL_BF16 ? 0x1p-6 : 0x1p-9;
  for (int i = 0; i < 4; i++) {
    char line[96];
    snprintf(line, sizeof line, "  gradient of %s", param_names[i]);
    example_expect(line, grads[0][i], HL_F32);
    if (!grads[0][i] || !grads[1][i]) continue;
    double diff, scale;
    int64_t differing;
    compare(grads[0][i], grads[1][i], &diff, &scale, &differing);
    snprintf(line, sizeof line, "  %s: threaded vs single-thread step", param_names[i]);
    printf("%-52s %s %.3g of its largest |element| (bound %.3g)\n", line, differing ? "up to" : "equal,",
           diff / scale, grad_tol);
    if (!(diff <= grad_tol * scale))
      example_fail("gradient of %s: threaded and single-thread steps differ by %.3g of the largest element, above %.3g",
                   param_names[i], diff / scale, grad_tol);
  }
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 4; i++) hl_release(grads[k][i]);
}

/* ---------------------------------------------------------------- main -- */

static const char what_[] =
    "The DataParallel lesson: threads in one process each run the forward on a shard of the batch. "
    "Autocast state is per thread, so a thread that does not enter autocast itself runs in fp32.";

int main(int argc, char **argv) {
  const char *prog = "dp-threads";
  hl_cli_init(prog, argc, argv);
  enum { OPT_TRACE = 256, OPT_THREADS };
  static const struct option longopts[] = {HL_CLI_LONGOPT_DEVICE,
                                           HL_CLI_LONGOPT_SEED,
                                           {"threads", required_argument, NULL, OPT_THREADS},
                                           {"trace-ops", no_argument, NULL, OPT_TRACE},
                                           HL_CLI_LONGOPT_HELP,
                                           HL_CLI_LONGOPT_VERSION,
                                           {0}};
  char *help; /* composed first: hl_cli_common_option prints it for --help */
  if (asprintf(&help,
               "Usage: %s [OPTIONS]\n\n%s\n\nOptions:\n"
               "  --threads N   threads, one shard of the %d-row batch each (default 2, 1 to %d)\n"
               "  --device D    auto (default: the GPU when the core has kernels there, else the CPU), cpu, cuda\n"
               "  --seed N      seed of the weights and the batch (default 1)\n"
               "  --trace-ops   print every op with its input and output dtypes on stderr\n"
               "  --help, --version\n",
               prog, what_, BATCH, MAX_THREADS) < 0)
    hl_fatal("out of host memory");
  hl_cli_common common = hl_cli_common_defaults(help);
  int threads = 2;
  bool trace = false;
  int opt;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (hl_cli_common_option(&common, opt, optarg)) continue;
    switch (opt) {
      case OPT_THREADS: threads = (int)hl_parse_int("--threads", optarg, 1, MAX_THREADS); break;
      case OPT_TRACE: trace = true; break;
      default: hl_cli_getopt_error(opt, argv, longopts);
    }
  }
  free(help);
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);
  const hl_device_kind device = example_start(prog, common.device ? common.device : "auto", trace);
  const hl_dtype lower = hl_autocast_default_dtype(device);

  model m = model_new(common.seed, device);
  hl_tensor *batch = hl_tmp(hl_randn(HL_SHAPE(BATCH, IN), 0.0, 1.0, common.seed, 100, HL_F32, device));
  HL_CHECK(batch);
  printf("%d threads, %d rows of %d features on %s; the device's autocast dtype: %s\n", threads, BATCH, IN,
         hl_device_kind_name(device), hl_dtype_name(lower));

  hl_tensor *whole = case_main_thread_only(&m, batch, threads, device, lower);
  case_inside_each_thread(&m, batch, threads, device, lower, whole);
  return example_finish();
}
