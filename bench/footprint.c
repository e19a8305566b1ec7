/* footprint.c — halflab-bench footprint: how many bytes a model and its
 * training take, per weight dtype policy and per training mode.
 *
 * Parameters (footprint_params.csv): GPT-2 124M (and a shape of your own)
 * under fp32, fp16, bf16 and int8 (the policies of core/models/nn.h), three ways:
 *   analytic    counted from the shapes (core/models/nn.h);
 *   allocator   the core's accounting allocator, building the model;
 *   independent not through our allocator at all: on the CPU the process's
 *               resident set (/proc/self/statm) before and after building
 *               it, the heap trimmed (malloc_trim) both times so freed
 *               blocks do not count; on a GPU the device's free memory
 *               (cudaMemGetInfo) before and after.
 * The analytic and allocator figures must agree to the byte (a difference
 * is an error); the independent one is a measurement and is reported.
 *
 * Training state (footprint_training.csv), per mode of halflab-train:
 * weights, fp32 master weights, gradients, optimizer moments, autocast's
 * weight casts, activations saved for backward, the step's peak, and the
 * largest batch that fits in --memory — analytic at --batch x --seq, and
 * on the CPU also one measured step (forward, loss, backward through the
 * core, the optimizer's update with its state) at --measure-batch x
 * --measure-seq, where the allocator gives the ground truth.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "cli/cli.h"
#include "cli/csv.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/base/mem.h"
#include "core/models/nn.h"
#include "core/engine/ops.h"
#include "core/training/optim.h"
#include "core/base/profiler_ranges.h"
#include "bench/bench.h"

static const char usage[] =
    "Usage: halflab-bench footprint [OPTIONS]\n"
    "\n"
    "Memory footprint of GPT-2 124M (and of a shape of your own): parameter bytes per weight dtype policy\n"
    "(fp32, fp16, bf16, int8 = LLM.int8-style storage), analytic, through the accounting allocator and\n"
    "measured independently (process RSS on the CPU, cudaMemGetInfo on a GPU); and the training state per\n"
    "training mode (weights, master weights, gradients, optimizer moments, weight casts, activations, peak)\n"
    "with the largest batch that fits in a given memory. Writes footprint_params.csv and\n"
    "footprint_training.csv.\n"
    "\n"
    "Model shape (any of these adds a model \"custom\": GPT-2 124M with the values given):\n"
    "  --layers N --heads N --embd N --vocab N --block N\n"
    "\n"
    "Options:\n"
    "  --policies LIST       weight policies, of fp32,fp16,bf16,int8 (default all)\n"
    "  --modes LIST          training modes, of fp32,amp-fp16,amp-bf16,fp16-noscale,fp16-static,\n"
    "                        fp16-master,fp16-pure (default fp32,amp-fp16,amp-bf16,fp16-master,fp16-pure)\n"
    "  --optimizer NAME      adamw (2 moments), sgd-momentum (1) or sgd (0) (default adamw)\n"
    "  --batch N             sequences per step for the training state (default 8)\n"
    "  --seq N               tokens per sequence (default: the model's block size)\n"
    "  --memory BYTES        memory for the largest batch, e.g. 16GiB (default: the device's free memory)\n"
    "  --measure-batch N     the CPU's measured step: sequences (default 1; 0: no measured step)\n"
    "  --measure-seq N       the CPU's measured step: tokens per sequence (default 128; --quick 16)\n"
    "  --list                print every parameter's dtype, name, shape and bytes per policy; write nothing\n"
    "  --device D            auto, cpu or cuda (default auto: the GPU when there is one)\n"
    "  --out DIR             output folder (default results/<machine>/)\n"
    "  --quick               a shorter measured step\n"
    "  --seed N              weight seed (default 1)\n"
    "  --help, --version\n";

enum { OPT_LAYERS = 1, OPT_HEADS, OPT_EMBD, OPT_VOCAB, OPT_BLOCK, OPT_POLICIES, OPT_MODES, OPT_OPTIMIZER, OPT_BATCH,
       OPT_SEQ, OPT_MEMORY, OPT_MEASURE_BATCH, OPT_MEASURE_SEQ, OPT_LIST };

#define MAX_MODELS 2
#define MAX_MODES 8

typedef struct {
  const char *name;
  hl_gpt_config cfg;
} fp_model;

/* --optimizer's choices: an optimizer kind, and for SGD whether it keeps momentum */
typedef struct {
  const char *name;
  hl_optim_kind kind;
  bool momentum;
} fp_optimizer;
static const fp_optimizer optimizers[] = {
    {"sgd", HL_OPTIM_SGD, false}, {"sgd-momentum", HL_OPTIM_SGD, true}, {"adamw", HL_OPTIM_ADAMW, false}};
enum { N_OPTIMIZERS = sizeof optimizers / sizeof optimizers[0] };

static int fp_moments(const fp_optimizer *opt) { return hl_optim_moments(opt->kind, opt->momentum); }

typedef struct {
  fp_model models[MAX_MODELS];
  int nmodels;
  bool policy[HL_WEIGHT_POLICIES];
  const hl_train_setup *modes[MAX_MODES];
  int nmodes;
  const fp_optimizer *opt;
  int64_t batch, seq;           /* seq 0: each model's block size */
  uint64_t memory;              /* 0: the device's free memory */
  int64_t measure_batch, measure_seq;
  bool list;
} fp_options;

static int64_t seq_for(const fp_options *o, const fp_model *m, int64_t seq) {
  return seq > 0 ? seq : m->cfg.block_size;
}

/* ------------------------------------------------------------ listing -- */

static void describe_model(const fp_model *m, char *buf, size_t len) {
  snprintf(buf, len, "%s (%d layers, %d heads, width %d, vocabulary %d, block %d)", m->name, m->cfg.n_layer,
           m->cfg.n_head, m->cfg.n_embd, m->cfg.vocab_size, m->cfg.block_size);
}

/* A PyTorch user's listing (dtype, name, device in PyTorch's named_parameters
 * loop), with shapes and bytes, from the layout hl_gpt_new builds. */
static void list_params(const fp_options *o) {
  for (int mi = 0; mi < o->nmodels; mi++) {
    const fp_model *m = &o->models[mi];
    const int n = hl_gpt_layout(&m->cfg, NULL);
    hl_param_spec *specs = malloc(sizeof *specs * (size_t)n);
    if (!specs) hl_fatal("footprint: out of host memory listing %s", m->name);
    hl_gpt_layout(&m->cfg, specs);
    for (int p = 0; p < HL_WEIGHT_POLICIES; p++) {
      if (!o->policy[p]) continue;
      uint64_t total = 0;
      for (int i = 0; i < n; i++) total += hl_param_spec_bytes(&specs[i], (hl_weight_policy)p);
      char desc[200], b1[40], b2[40], b3[32];
      describe_model(m, desc, sizeof desc);
      printf("# %s, weight policy %s: %d parameters, %s elements, %s bytes (%s)\n", desc,
             hl_weight_policy_name((hl_weight_policy)p), n,
             hl_format_thousands((uint64_t)hl_gpt_param_count(&m->cfg), b1, sizeof b1),
             hl_format_thousands(total, b2, sizeof b2), hl_format_bytes(total, b3, sizeof b3));
      printf("%-5s %-40s %-14s %15s\n", "dtype", "name", "shape", "bytes");
      for (int i = 0; i < n; i++) {
        const hl_param_spec *s = &specs[i];
        const hl_dtype t = hl_weight_policy_dtype((hl_weight_policy)p, s->role);
        int64_t numel = 1;
        for (int d = 0; d < s->shape.ndim; d++) numel *= s->shape.d[d];
        printf("%-5s %-40s %-14s %15s", hl_dtype_name(t), s->name, hl_shape_desc(s->shape),
               hl_format_thousands((uint64_t)numel * hl_dtype_size(t), b1, sizeof b1));
        if (t == HL_I8)
          printf("  + f32 row scales [%lld]: %s", (long long)s->shape.d[0],
                 hl_format_thousands((uint64_t)s->shape.d[0] * 4, b2, sizeof b2));
        printf("\n");
      }
      printf("\n");
    }
    free(specs);
  }
}

/* ----------------------------------------------------- measurements -- */

/* Resident bytes of this process, the heap first given back to the system
 * (glibc keeps freed blocks; the core asks it to keep up to 1 GiB). */
static uint64_t resident_bytes(void) {
  malloc_trim(0);
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) hl_fatal("footprint: cannot open /proc/self/statm: %s", strerror(errno));
  unsigned long long size = 0, resident = 0;
  int got = fscanf(f, "%llu %llu", &size, &resident);
  fclose(f);
  if (got != 2) hl_fatal("footprint: cannot read /proc/self/statm");
  return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The independent reading: RSS on the CPU, the device's free memory on a GPU. */
static uint64_t independent_now(const bench_device *d) {
  if (d->kind == HL_DEVICE_CPU) return resident_bytes();
  d->be->synchronize();
  return hl_device_facts_get(d->kind)->free_mem;
}

static const char *independent_method(const bench_device *d) {
  return d->kind == HL_DEVICE_CPU ? "rss" : "cudaMemGetInfo";
}

typedef struct {
  uint64_t analytic, allocator;
  int64_t independent;
  int tensors;
} param_bytes;

static uint64_t device_current(const bench_device *d) { return hl_mem_get_stats(d->kind).current; }

/* Builds the model (kept in *out) and measures its parameter bytes. */
static param_bytes measure_params(const bench_device *d, const fp_model *m, hl_weight_policy p, uint64_t seed,
                                  hl_gpt **out) {
  param_bytes r;
  r.analytic = hl_gpt_param_bytes(&m->cfg, p);
  const uint64_t alloc0 = device_current(d);
  const uint64_t ind0 = independent_now(d);
  hl_gpt *g = hl_gpt_new(&m->cfg, p, d->kind, seed);
  if (!g) hl_fatal("footprint: building %s (%s): %s", m->name, hl_weight_policy_name(p), hl_error());
  const uint64_t ind1 = independent_now(d);
  r.allocator = device_current(d) - alloc0;
  /* a GPU's free memory goes down as the model goes up */
  r.independent = d->kind == HL_DEVICE_CPU ? (int64_t)(ind1 - ind0) : (int64_t)(ind0 - ind1);
  r.tensors = g->params.n;
  for (int i = 0; i < g->params.n; i++) r.tensors += g->params.items[i].scale != NULL;
  if (r.allocator != r.analytic || hl_params_bytes(&g->params) != r.analytic)
    hl_fatal("footprint: validation failed: %s (%s): the allocator counted %llu bytes, the parameters hold %llu, the "
             "analytic count is %llu",
             m->name, hl_weight_policy_name(p), (unsigned long long)r.allocator,
             (unsigned long long)hl_params_bytes(&g->params), (unsigned long long)r.analytic);
  *out = g;
  return r;
}

typedef struct {
  bool done;
  uint64_t weights, master, gradients, moments, saved, peak;
  double loss;
} step_bytes;

/* One training step of model g (built with s's policy, on its device),
 * with the real optimizer (core/training/optim.h): its state (moments; for
 * fp16-master the fp32 master weights and master gradients) allocated when
 * it is made, forward + loss under the mode's autocast, backward, the
 * update. Bytes from the allocator; the optimizer's allocation is split
 * into master weights, master gradients (the same size) and moments.
 * false with hl_error() when the device cannot run a step. */
static bool measure_step(hl_gpt *g, const hl_train_setup *s, const fp_optimizer *opt, int64_t B, int64_t T,
                         uint64_t weights_bytes, step_bytes *r) {
  memset(r, 0, sizeof *r);
  r->weights = weights_bytes;
  const hl_device_kind dev = g->params.device;
  const int n = g->params.n;
  hl_optim *o = NULL;
  hl_tensor *idx = NULL, *tg = NULL, *loss = NULL;
  hl_tensor **params = malloc(sizeof *params * (size_t)n);
  int32_t *tok = malloc(sizeof(int32_t) * (size_t)(B * T)), *next = malloc(sizeof(int32_t) * (size_t)(B * T));
  bool ok = false;
  if (!params || !tok || !next) {
    hl_fail("footprint: out of host memory");
    goto done;
  }
  const int trainable = hl_params_trainable(&g->params, params);
  const uint64_t c0 = hl_mem_get_stats(dev).current;
  /* lr 0: a real update that leaves the weights as they were, so every
   * mode's step starts from the same model (and reports the same loss up
   * to its precision) */
  if (opt->kind == HL_OPTIM_ADAMW) {
    hl_adamw_opts a = hl_adamw_defaults();
    a.lr = 0.0;
    a.master_weights = s->master;
    o = hl_adamw_new(params, trainable, a);
  } else {
    hl_sgd_opts a = hl_sgd_defaults();
    a.lr = 0.0;
    a.momentum = opt->momentum ? 0.9 : 0.0;
    a.master_weights = s->master;
    o = hl_sgd_new(params, trainable, a);
  }
  if (!o) goto done;
  const uint64_t state = hl_mem_get_stats(dev).current - c0;
  for (int i = 0; i < n; i++)
    if (hl_optim_master(o, i)) r->master += hl_tensor_nbytes(hl_optim_master(o, i));
  r->moments = state - 2 * r->master; /* the master gradients are as large as the masters */

  for (int64_t i = 0; i < B * T; i++) {
    tok[i] = (int32_t)((i * 2654435761u + 12345u) % (uint32_t)g->cfg.vocab_size);
    next[i] = (int32_t)((i * 40503u + 777u) % (uint32_t)g->cfg.vocab_size);
  }
  idx = hl_from_i32(HL_SHAPE(B, T), tok, HL_I32, dev);
  tg = hl_from_i32(HL_SHAPE(B, T), next, HL_I32, dev);
  if (!idx || !tg) goto done;

  hl_optim_zero_grad(o);
  const uint64_t before = hl_mem_get_stats(dev).current;
  hl_mem_reset_peak(dev);
  hl_range_push("footprint step forward");
  HL_AUTOCAST(dev, s->autocast, s->autocast != HL_DTYPE_NONE) {
    loss = hl_gpt_loss(g, idx, tg, NULL);
  }
  hl_range_pop();
  if (!loss) goto done;
  r->saved = hl_mem_get_stats(dev).current - before;
  r->loss = hl_item(loss);
  hl_range_push("footprint step backward");
  bool back = hl_backward(loss, NULL, false);
  hl_range_pop();
  if (!back) goto done;
  hl_release(loss);
  loss = NULL;
  for (int i = 0; i < n; i++) {
    hl_tensor *gr = hl_tensor_grad(g->params.items[i].tensor);
    if (!gr) {
      hl_fail("footprint: %s step: %s has no gradient", s->name, g->params.items[i].name);
      goto done;
    }
    r->gradients += hl_tensor_nbytes(gr);
  }
  r->gradients += r->master; /* and the fp32 master gradients */
  hl_range_push("footprint step update");
  bool stepped = hl_optim_step(o, NULL);
  hl_range_pop();
  if (!stepped) goto done;
  if (dev != HL_DEVICE_CPU) hl_backend_for(dev)->synchronize();
  r->peak = hl_mem_get_stats(dev).peak - before + r->weights + state;
  r->done = ok = true;
done:
  if (o) hl_optim_zero_grad(o);
  hl_optim_free(o);
  hl_release(loss);
  hl_release(idx);
  hl_release(tg);
  free(params);
  free(tok);
  free(next);
  return ok;
}

/* Can this device run the measured steps (tensor, GEMM and optimizer
 * kernels for every op of a GPT step in every mode asked)? A tiny model
 * tries; why says what failed. */
static bool steps_supported(const bench_device *d, const fp_options *o, char *why, size_t len) {
  const hl_gpt_config tiny = {.n_layer = 1, .n_head = 2, .n_embd = 8, .vocab_size = 16, .block_size = 8};
  for (int k = 0; k < o->nmodes; k++) {
    hl_gpt *g = hl_gpt_new(&tiny, o->modes[k]->weights, d->kind, 1);
    step_bytes r;
    bool ok = g && measure_step(g, o->modes[k], o->opt, 2, 8, 0, &r);
    hl_gpt_free(g);
    if (!ok) {
      snprintf(why, len, "%s: %s", o->modes[k]->name, hl_error());
      return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------ options -- */

static void parse_options(int argc, char **argv, bench_common *common, fp_options *o) {
  static const struct option longopts[] = {
      BENCH_COMMON_LONGOPTS,
      {"layers", required_argument, NULL, OPT_LAYERS},
      {"heads", required_argument, NULL, OPT_HEADS},
      {"embd", required_argument, NULL, OPT_EMBD},
      {"vocab", required_argument, NULL, OPT_VOCAB},
      {"block", required_argument, NULL, OPT_BLOCK},
      {"policies", required_argument, NULL, OPT_POLICIES},
      {"modes", required_argument, NULL, OPT_MODES},
      {"optimizer", required_argument, NULL, OPT_OPTIMIZER},
      {"batch", required_argument, NULL, OPT_BATCH},
      {"seq", required_argument, NULL, OPT_SEQ},
      {"memory", required_argument, NULL, OPT_MEMORY},
      {"measure-batch", required_argument, NULL, OPT_MEASURE_BATCH},
      {"measure-seq", required_argument, NULL, OPT_MEASURE_SEQ},
      {"list", no_argument, NULL, OPT_LIST},
      {NULL, 0, NULL, 0},
  };
  hl_gpt_config custom = HL_GPT2_124M;
  bool have_custom = false;
  const char *modes = "fp32,amp-fp16,amp-bf16,fp16-master,fp16-pure";
  const char *measure_seq = NULL;
  const int64_t big = (int64_t)1 << 30;
  for (int p = 0; p < HL_WEIGHT_POLICIES; p++) o->policy[p] = true;
  o->opt = &optimizers[2]; /* adamw */
  o->batch = 8;
  o->measure_batch = 1;
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (bench_common_option(common, c, argv)) continue;
    switch (c) {
      case OPT_LAYERS: custom.n_layer = (int)hl_parse_int("--layers", optarg, 1, 100000), have_custom = true; break;
      case OPT_HEADS: custom.n_head = (int)hl_parse_int("--heads", optarg, 1, 100000), have_custom = true; break;
      case OPT_EMBD: custom.n_embd = (int)hl_parse_int("--embd", optarg, 1, 1 << 20), have_custom = true; break;
      case OPT_VOCAB: custom.vocab_size = (int)hl_parse_int("--vocab", optarg, 1, 1 << 26), have_custom = true; break;
      case OPT_BLOCK: custom.block_size = (int)hl_parse_int("--block", optarg, 1, 1 << 24), have_custom = true; break;
      case OPT_POLICIES: {
        const char *names[HL_WEIGHT_POLICIES];
        for (int p = 0; p < HL_WEIGHT_POLICIES; p++) names[p] = hl_weight_policy_name((hl_weight_policy)p);
        bench_parse_names("--policies", optarg, "value", names, HL_WEIGHT_POLICIES, o->policy);
        break;
      }
      case OPT_MODES: modes = optarg; break;
      case OPT_OPTIMIZER: {
        int k = 0;
        while (k < N_OPTIMIZERS && strcmp(optarg, optimizers[k].name)) k++;
        if (k == N_OPTIMIZERS) hl_usage_error("--optimizer: unknown optimizer '%s' (adamw, sgd-momentum or sgd)", optarg);
        o->opt = &optimizers[k];
        break;
      }
      case OPT_BATCH: o->batch = hl_parse_int("--batch", optarg, 1, big); break;
      case OPT_SEQ: o->seq = hl_parse_int("--seq", optarg, 1, big); break;
      case OPT_MEMORY: o->memory = hl_parse_bytes("--memory", optarg, 1); break;
      case OPT_MEASURE_BATCH: o->measure_batch = hl_parse_int("--measure-batch", optarg, 0, big); break;
      case OPT_MEASURE_SEQ: measure_seq = optarg; break;
      case OPT_LIST: o->list = true; break;
      default: bench_bad_option(c, argv, longopts);
    }
  }
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);
  if (common->reps) hl_usage_error("--reps: footprint times nothing (it counts bytes)");
  o->measure_seq = measure_seq ? hl_parse_int("--measure-seq", measure_seq, 1, big) : common->cli.quick ? 16 : 128;

  /* modes */
  const char *mode_names[16];
  bool mode_on[16];
  for (int i = 0; i < hl_train_setup_count; i++) mode_names[i] = hl_train_setups[i].name;
  bench_parse_names("--modes", modes, "value", mode_names, hl_train_setup_count, mode_on);
  for (int i = 0; i < hl_train_setup_count; i++)
    if (mode_on[i]) o->modes[o->nmodes++] = &hl_train_setups[i];

  /* models */
  o->models[o->nmodels++] = (fp_model){"gpt2-124m", HL_GPT2_124M};
  if (have_custom) {
    char why[200];
    if (!hl_gpt_config_check(&custom, why, sizeof why)) hl_usage_error("model shape: %s", why);
    o->models[o->nmodels++] = (fp_model){"custom", custom};
  }
  for (int i = 0; i < o->nmodels; i++) {
    const fp_model *m = &o->models[i];
    if (o->seq > m->cfg.block_size)
      hl_usage_error("--seq %lld is longer than %s's block size %d", (long long)o->seq, m->name, m->cfg.block_size);
    if (o->measure_batch > 0 && o->measure_seq > m->cfg.block_size)
      hl_usage_error("--measure-seq %lld is longer than %s's block size %d", (long long)o->measure_seq, m->name,
                     m->cfg.block_size);
  }
}

/* ------------------------------------------------------------- main -- */

/* One run's state between its steps. */
typedef struct {
  const fp_options *o;
  bench_device dev;
  bool cpu;
  bool steps;         /* measured steps on this device */
  char no_steps[512]; /* why not, when not */
  uint64_t memory;    /* for the largest batch */
  const char *outdir;
  char outbuf[4096];
  step_bytes measured[MAX_MODELS][MAX_MODES];
  hl_csv_rows prow, trow;
} fp_run;

/* What the run allocates, checked before anything is: one model at a time
 * (and on a GPU its largest tensor staged on the host), and each measured
 * step's state at its peak. */
static void require_memory(fp_run *r) {
  const fp_options *o = r->o;
  uint64_t need = 0, host = 0;
  for (int mi = 0; mi < o->nmodels; mi++) {
    const fp_model *m = &o->models[mi];
    for (int p = 0; p < HL_WEIGHT_POLICIES; p++)
      if (o->policy[p] && hl_gpt_param_bytes(&m->cfg, (hl_weight_policy)p) > need)
        need = hl_gpt_param_bytes(&m->cfg, (hl_weight_policy)p);
    for (int k = 0; r->steps && k < o->nmodes; k++) {
      hl_train_bytes t = hl_gpt_train_bytes(&m->cfg, o->modes[k], fp_moments(o->opt), o->measure_batch, o->measure_seq);
      if (t.peak > need) need = t.peak;
    }
    uint64_t wte = (uint64_t)m->cfg.vocab_size * (uint64_t)m->cfg.n_embd * 4;
    if (!r->cpu && wte > host) host = wte;
  }
  bench_require_memory(&r->dev, "footprint", need, host);
}

static void record_metadata(const fp_run *r) {
  hl_meta_set("independent", "%s",
              r->cpu ? "rss: resident bytes of the process (/proc/self/statm) before and after building the model, "
                       "malloc_trim(0) before each reading"
                     : "cudaMemGetInfo: the device's free bytes before and after building the model");
  hl_meta_set("optimizer", "%s (%d moments per parameter)", r->o->opt->name, fp_moments(r->o->opt));
  hl_meta_set("memory_for_max_batch", "%.2f GiB = %llu bytes (%s)", (double)r->memory / (1u << 30),
              (unsigned long long)r->memory, r->o->memory ? "--memory" : "the device's free memory at start");
}

/* Warm-up: the allocator's settings, OpenMP's threads, the backend's
 * context; and whether a step runs here (every op on this device). */
static void warm_up(fp_run *r) {
  const hl_gpt_config t = {.n_layer = 1, .n_head = 1, .n_embd = 8, .vocab_size = 8, .block_size = 8};
  hl_gpt *w = hl_gpt_new(&t, HL_WEIGHTS_FP32, r->dev.kind, 1);
  if (!w) hl_fatal("footprint: %s", hl_error());
  hl_gpt_free(w);
  char why[400];
  if (r->steps && !steps_supported(&r->dev, r->o, why, sizeof why)) {
    if (r->cpu) hl_fatal("footprint: a training step fails on the CPU: %s", why);
    r->steps = false;
    snprintf(r->no_steps, sizeof r->no_steps, "a step does not run on %s in this build (%s)", r->dev.name, why);
  }
  hl_error_clear();
}

/* One model under one policy: its parameter bytes three ways (a row of
 * footprint_params.csv), then the measured steps of the modes that train
 * this policy's model. */
static void measure_policy(fp_run *r, int mi, hl_weight_policy p, uint64_t seed) {
  const fp_options *o = r->o;
  const fp_model *m = &o->models[mi];
  char range[96];
  snprintf(range, sizeof range, "footprint %s %s", m->name, hl_weight_policy_name(p));
  bench_progress("%s", range);
  hl_range_push(range);
  hl_gpt *g = NULL;
  param_bytes b = measure_params(&r->dev, m, p, seed, &g);
  hl_range_pop();
  const double pct = 100.0 * (double)b.independent / (double)b.analytic;
  hl_row row;
  hl_row_begin(&row, &bench_footprint_params_schema);
  hl_row_text(&row, "device", r->dev.name);
  hl_row_text(&row, "model", m->name);
  hl_row_int(&row, "layers", m->cfg.n_layer);
  hl_row_int(&row, "heads", m->cfg.n_head);
  hl_row_int(&row, "embd", m->cfg.n_embd);
  hl_row_int(&row, "vocab", m->cfg.vocab_size);
  hl_row_int(&row, "block", m->cfg.block_size);
  hl_row_text(&row, "policy", hl_weight_policy_name(p));
  hl_row_int(&row, "params", hl_gpt_param_count(&m->cfg));
  hl_row_int(&row, "tensors", b.tensors);
  hl_row_int(&row, "analytic_bytes", (int64_t)b.analytic);
  hl_row_int(&row, "allocator_bytes", (int64_t)b.allocator);
  hl_row_int(&row, "independent_bytes", b.independent);
  hl_row_text(&row, "independent_method", independent_method(&r->dev));
  hl_row_real(&row, "independent_of_analytic_pct", pct);
  hl_csv_rows_put(&r->prow, &row);
  printf("%-10s %-6s %12lld %16llu %16llu %16lld %7.2f%%\n", m->name, hl_weight_policy_name(p),
         (long long)hl_gpt_param_count(&m->cfg), (unsigned long long)b.analytic, (unsigned long long)b.allocator,
         (long long)b.independent, pct);
  fflush(stdout);
  for (int k = 0; r->steps && k < o->nmodes; k++) {
    if (o->modes[k]->weights != p) continue;
    snprintf(range, sizeof range, "footprint %s step %s", m->name, o->modes[k]->name);
    bench_progress("%s", range);
    hl_range_push(range);
    if (!measure_step(g, o->modes[k], o->opt, o->measure_batch, o->measure_seq, b.allocator, &r->measured[mi][k]))
      hl_fatal("footprint: %s step of %s: %s", o->modes[k]->name, m->name, hl_error());
    hl_range_pop();
  }
  hl_gpt_free(g);
}

static void measure_parameters(fp_run *r, uint64_t seed) {
  const fp_options *o = r->o;
  printf("Parameter bytes per weight policy (%s): analytic, accounting allocator, independent (%s)\n", r->dev.name,
         independent_method(&r->dev));
  printf("%-10s %-6s %12s %16s %16s %16s %8s\n", "model", "policy", "params", "analytic", "allocator", "independent",
         "ind/ana");
  for (int mi = 0; mi < o->nmodels; mi++)
    for (int p = 0; p < HL_WEIGHT_POLICIES; p++)
      if (o->policy[p]) measure_policy(r, mi, (hl_weight_policy)p, seed);
  if (!r->steps) {
    printf("\nmeasured step: not run (%s): the training state below is analytic only\n", r->no_steps);
    hl_meta_set("measured_step", "not run: %s", r->no_steps);
  } else {
    hl_meta_set("measured_step", "%lld x %lld tokens on %s, core/training/optim.h's %s with lr 0",
                (long long)o->measure_batch, (long long)o->measure_seq, r->dev.name, o->opt->name);
  }
}

/* One mode's training state at B x T: a row of footprint_training.csv, and
 * on the measured pass the allocator's figures below the estimate. */
static void training_state_row(fp_run *r, int mi, int k, int64_t B, int64_t T, bool measured_pass) {
  const fp_options *o = r->o;
  const fp_model *m = &o->models[mi];
  const hl_train_setup *s = o->modes[k];
  const hl_train_bytes e = hl_gpt_train_bytes(&m->cfg, s, fp_moments(o->opt), B, T);
  const int64_t maxb = hl_gpt_max_batch(&m->cfg, s, fp_moments(o->opt), T, r->memory);
  const step_bytes *ms = &r->measured[mi][k];
  const bool shown = measured_pass && ms->done;
  hl_row row;
  hl_row_begin(&row, &bench_footprint_training_schema);
  hl_row_text(&row, "device", r->dev.name);
  hl_row_text(&row, "model", m->name);
  hl_row_text(&row, "mode", s->name);
  hl_row_text(&row, "optimizer", o->opt->name);
  hl_row_int(&row, "batch", B);
  hl_row_int(&row, "seq", T);
  hl_row_int(&row, "weights_bytes", (int64_t)e.weights);
  hl_row_int(&row, "master_bytes", (int64_t)e.master);
  hl_row_int(&row, "gradients_bytes", (int64_t)e.gradients);
  hl_row_int(&row, "moments_bytes", (int64_t)e.moments);
  hl_row_int(&row, "weight_casts_bytes", (int64_t)e.weight_casts);
  hl_row_int(&row, "activations_bytes", (int64_t)e.activations);
  hl_row_int(&row, "peak_bytes", (int64_t)e.peak);
  hl_row_int(&row, "memory_bytes", (int64_t)r->memory);
  hl_row_int(&row, "max_batch", maxb);
  hl_row_bool(&row, "measured", shown);
  const char *alloc_columns[] = {"alloc_weights_bytes", "alloc_master_bytes", "alloc_gradients_bytes",
                                 "alloc_moments_bytes", "alloc_saved_bytes",  "alloc_peak_bytes"};
  const uint64_t alloc[] = {ms->weights, ms->master, ms->gradients, ms->moments, ms->saved, ms->peak};
  for (int i = 0; i < 6; i++)
    shown ? hl_row_int(&row, alloc_columns[i], (int64_t)alloc[i]) : hl_row_missing(&row, alloc_columns[i]);
  hl_csv_rows_put(&r->trow, &row);
  const double mib = 1048576.0;
  char bt[32];
  snprintf(bt, sizeof bt, "%lldx%lld", (long long)B, (long long)T);
  printf("%-10s %-12s %9s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10lld  MiB\n", m->name, s->name, bt,
         e.weights / mib, e.master / mib, e.gradients / mib, e.moments / mib, e.weight_casts / mib, e.activations / mib,
         e.peak / mib, (long long)maxb);
  if (shown)
    printf("%-10s %-12s %9s %10.1f %10.1f %10.1f %10.1f %21.1f %10.1f %10s  MiB measured (casts + activations "
           "together; loss %.4f)\n",
           "", "  allocator", "", ms->weights / mib, ms->master / mib, ms->gradients / mib, ms->moments / mib,
           ms->saved / mib, ms->peak / mib, "", ms->loss);
}

/* The training state per mode: at --batch x --seq, and at the measured
 * step's shape beside what the allocator saw. */
static void training_state(fp_run *r) {
  const fp_options *o = r->o;
  printf("\nTraining state per mode (%s, %d moments per parameter); memory for the largest batch: %.2f GiB\n",
         o->opt->name, fp_moments(o->opt), (double)r->memory / (1u << 30));
  printf("%-10s %-12s %9s %10s %10s %10s %10s %10s %10s %10s %10s\n", "model", "mode", "batch", "weights", "master",
         "grads", "moments", "casts", "activ", "peak", "max_batch");
  for (int mi = 0; mi < o->nmodels; mi++)
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 1 && !r->steps) break;
      const int64_t B = pass == 0 ? o->batch : o->measure_batch;
      const int64_t T = seq_for(o, &o->models[mi], pass == 0 ? o->seq : o->measure_seq);
      for (int k = 0; k < o->nmodes; k++) training_state_row(r, mi, k, B, T, pass == 1);
    }
}

static void write_csvs(fp_run *r) {
  bench_rows_write(&r->prow, r->outdir, &bench_footprint_params_schema);
  bench_rows_write(&r->trow, r->outdir, &bench_footprint_training_schema);
  hl_csv_rows_free(&r->prow);
  hl_csv_rows_free(&r->trow);
  fprintf(stderr, "%s: footprint: wrote %s/footprint_params.csv and footprint_training.csv\n", hl_prog(), r->outdir);
}

int bench_footprint_main(int argc, char **argv) {
  bench_common common = {.cli = hl_cli_common_defaults(usage)};
  fp_options o;
  memset(&o, 0, sizeof o);
  parse_options(argc, argv, &common, &o);
  if (o.list) {
    list_params(&o);
    return 0;
  }
  static fp_run r; /* large (the measured table); one per process */
  r.o = &o;
  bench_device_open(&r.dev, common.cli.device);
  r.cpu = r.dev.kind == HL_DEVICE_CPU;
  /* measured steps where the device has the core's tensor kernels */
  r.steps = o.measure_batch > 0 && r.dev.be->tensor;
  if (o.measure_batch == 0) snprintf(r.no_steps, sizeof r.no_steps, "--measure-batch 0");
  else if (!r.steps) snprintf(r.no_steps, sizeof r.no_steps, "the core's %s tensor kernels are not in this build", r.dev.name);
  r.memory = o.memory ? o.memory : r.dev.facts->free_mem;
  require_memory(&r);
  r.outdir = bench_outdir(common.cli.out, r.dev.kind, BENCH_TABLES("footprint_params.csv", "footprint_training.csv"),
                          r.outbuf, sizeof r.outbuf);
  record_metadata(&r);
  warm_up(&r);
  measure_parameters(&r, common.cli.seed);
  training_state(&r);
  write_csvs(&r);
  return 0;
}
