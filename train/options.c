/* options.c — halflab-train's command line: presets, every flag, and the
 * checks that refuse bad input (one line, exit 2) before anything is
 * allocated or written; with --resume, the checkpoint's values for the
 * options not given and the refusal of those given otherwise (resume.c). */
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/output_guard.h"
#include "core/base/error.h"
#include "core/training/checkpoint.h"
#include "core/training/dist.h"
#include "train/train.h"

static const char usage[] =
    "Usage: halflab-train [OPTIONS]\n"
    "\n"
    "Trains a GPT (or an MLP classifier) on generated data or a text file, in one precision mode, and\n"
    "writes per-step CSV (loss, eval loss/accuracy, loss scale, skipped steps, gradient norm, the share of\n"
    "gradient elements zero or subnormal in fp16 before and after scaling, absorbed updates, step time,\n"
    "throughput, memory), gradient histograms and a summary. See docs/train.md.\n"
    "\n"
    "Model:\n"
    "  --model gpt|mlp       the GPT (GPT-2 layout, tied head; default) or an MLP classifier\n"
    "  --preset tiny|small|gpt2   tiny: a CPU run of minutes (default; the accuracy runs); small: 6 layers,\n"
    "                        6 heads, width 384, 16 x 128 tokens of the generated text, ~10.8 M parameters (the\n"
    "                        CPU timing preset); gpt2: GPT-2 124M's shape, 8 x 1024 tokens, 20 warm-up + 50 timed\n"
    "                        steps (a GPU run)\n"
    "  --layers N --heads N --embd N   GPT shape (override the preset)\n"
    "  --vocab N             GPT vocabulary (default: what the task uses; small: 256; gpt2: 50257)\n"
    "  --seq N               tokens per sequence, also the block size (tiny: 2 x --sort-len, 64 for text;\n"
    "                        small: 128; gpt2: 1024)\n"
    "  --inputs N --hidden LIST --classes N   MLP shape (tiny: 32, 128,128, 10)\n"
    "  --init-gain G         initial weights x G (GPT: std 0.02 G; MLP: nn.Linear's bound x G) (default 1)\n"
    "\n"
    "Data (no download):\n"
    "  --task sort|text|classify   sort (tiny and gpt2 default): sort --sort-len numbers of --digits digits;\n"
    "                        classify (MLP): labels of a random teacher network; text (small default): the\n"
    "                        bytes of --text FILE, else of English-like sentences generated from --seed\n"
    "  --text FILE           train the GPT on the bytes of FILE (vocabulary 256), its tail held out\n"
    "  --sort-len N --digits K   the sorting problem (default 8 numbers of 10 digits)\n"
    "  --batch N             sequences (GPT) or samples (MLP) per micro-batch (tiny: 64 / 256; small: 16;\n"
    "                        gpt2: 8)\n"
    "  --eval-samples N      held-out sequences or samples (tiny: 512 / 2048; small: 64; gpt2: 16)\n"
    "  --eval-every N        evaluate every N steps and after the last (tiny: 50; small: 50; gpt2: 10)\n"
    "  --eval-frac F         --task text: the share of the text held out (default 0.1)\n"
    "\n"
    "Precision mode and training:\n"
    "  --mode MODE           fp32 (default), amp-fp16, amp-bf16, fp16-noscale, fp16-static, fp16-master,\n"
    "                        fp16-pure (docs/train.md)\n"
    "  --optimizer sgd|adamw (default adamw)   --lr X > 0 (adamw: tiny 3e-3, small and gpt2 3e-4; sgd 0.1)\n"
    "  --momentum X (sgd)   --weight-decay X\n"
    "  --schedule cosine|constant  cosine (default): lr x (1 + cos(pi (step - 1) / steps)) / 2\n"
    "  --clip-norm X         clip the unscaled gradients' L2 norm to X\n"
    "  --accum N             micro-batches per optimizer step (gradient accumulation, default 1)\n"
    "  --grad-penalty L      add L x ||grad||_2 (the gradient penalty recipe; MLP only)\n"
    "  --init-scale X        the scaler's initial scale, 2^-126 to fp32's largest (default 65536; fp16-static: its\n"
    "                        fixed scale, default 1024)\n"
    "  --growth-interval N   steps without inf/NaN before the scale doubles (default 2000)\n"
    "  --inject-nonfinite STEPS[@RANK]  put an inf into a gradient at these steps, e.g. 3,7,10-12; with @RANK\n"
    "                        (e.g. 5@1) into that rank's gradients only, after the gradient all-reduce\n"
    "  --steps N             optimizer steps (tiny: 600; small: 200; gpt2: 70; 0: only --save-init /\n"
    "                        --export-batches)\n"
    "  --warmup N            first steps left out of the timing summary (tiny: 5; small: 5; gpt2: 20)\n"
    "  --checkpoint FILE     save the run's state at the end (and every --checkpoint-every N steps)\n"
    "  --stop-after K        stop after step K of the --steps schedule (with --checkpoint: resume it later)\n"
    "  --resume FILE         continue a run from its checkpoint, bit for bit: options not given take the\n"
    "                        checkpoint's values; one given otherwise is refused, but --steps, --stats-every\n"
    "                        and --hist-steps (recorded as resume-overrides)\n"
    "\n"
    "Measurements:\n"
    "  --stats-every N       gradient census and absorbed updates every N steps (tiny: 1; small, gpt2: 10)\n"
    "  --hist-steps LIST     steps whose gradient histogram is written (default: first, middle, last)\n"
    "  --list-params         print each parameter's dtype, name, shape and bytes under --mode; write nothing\n"
    "  --columns-md          print the columns of every CSV this program writes (name, unit, type, meaning, the\n"
    "                        function computing it), as Markdown; write nothing\n"
    "  --trace-ops           print the first step's ops with their dtypes on stderr\n"
    "  --profile             time, bytes and calls per op and phase (forward, backward, optimizer, other) over\n"
    "                        the steps after --warmup: train_NAME_MODE_profile.csv\n"
    "\n"
    "For peers (bench/peers/):\n"
    "  --save-init FILE      write the initial weights (core/models/nn.h weight file, f32)\n"
    "  --init-weights FILE   start from these weights instead of the seeded init\n"
    "  --export-batches FILE write the token batches of the first --export-steps steps and the held-out set\n"
    "  --export-steps N      (default: --steps)\n"
    "  --dump-grads FILE     write the first step's unscaled gradients (weight-file format, f32), before clipping\n"
    "  --dump-activations FILE  write each linear layer's input in the first step's forward (GPT, first micro-\n"
    "                        batch; weight-file format, f32), named after the layer: transformer.h.0.mlp.c_fc.input\n"
    "\n"
    "Data-parallel training (mpirun -n N halflab-train ...; docs/train.md):\n"
    "  --batch stays the global batch: each rank trains on its --batch / N rows of every micro-batch\n"
    "  --device cpu: CPU ranks, the gradients all-reduced over MPI; --device cuda: GPU ranks, one GPU each,\n"
    "                        the gradients all-reduced by NCCL on the devices (auto: GPU ranks when every\n"
    "                        node has a GPU for each of its ranks, else CPU ranks)\n"
    "  --check-replicas N    every N steps, check that every rank holds the same weights and scaler state\n"
    "                        (exit 1 naming the step when they differ)\n"
    "  --rank-timeout S      end the whole job (MPI_Abort, exit 1) when a rank has waited S seconds in one\n"
    "                        collective: another rank died or hangs (default 300; 0: wait for ever)\n"
    "  --allreduce-dtype fp32|bf16|fp16  the gradients' type on the wire (default fp32; half: half the bytes,\n"
    "                        each sum rounded to it; fp16 carries the gradients still scaled by the loss scale)\n"
    "  --bucket-mb X         all-reduce the gradients in buckets of X MiB (of f32 values), each started by a\n"
    "                        communication thread as soon as the backward has finished its gradients, as\n"
    "                        DistributedDataParallel does (default 25; 0: in one piece after the backward)\n"
    "%DIST%"
    "\n"
    "Common:\n"
    "  --device D            auto, cpu or cuda (default auto: the GPU when the core runs there, else the CPU)\n"
    "  --out DIR             output folder (default results/<machine>/)\n"
    "  --name NAME           run name in the file names (default: the preset, e.g. tiny; mlp-tiny)\n"
    "  --quick               a short run (tiny: 100 steps; small: 20; gpt2: 3 + 7)\n"
    "  --seed N              seed of the weights and the data (default 1)\n"
    "  --help, --version\n"
    "\n"
    "Files (in --out): train_NAME_MODE_steps.csv (per step, written line by line), train_NAME_MODE_hist.csv,\n"
    "train_NAME_MODE_summary.csv, the run's row in train_summary.csv; with --profile train_NAME_MODE_profile.csv.\n"
    "Exit status: 0 done, 1 failed run (e.g. a non-finite loss in fp32) or stdout not written, 2 bad input,\n"
    "128+N stopped by signal N: 130 SIGINT, 143 SIGTERM, 129 SIGHUP, 141 SIGPIPE (the CSVs hold complete lines\n"
    "and the summary is written).\n";

/* ------------------------------------------------------------ names -- */

/* Indexed by the enums of train.h; NULL-terminated for choice(). */
static const char *const model_names[] = {[MODEL_GPT] = "gpt", [MODEL_MLP] = "mlp", NULL};
static const char *const task_names[] = {[TASK_SORT] = "sort", [TASK_TEXT] = "text", [TASK_CLASSIFY] = "classify",
                                         NULL};
/* the words --optimizer takes, by hl_optim_kind (hl_optim_kind_name's) */
static const char *const optimizer_names[] = {[HL_OPTIM_SGD] = "sgd", [HL_OPTIM_ADAMW] = "adamw", NULL};
static const char *const preset_names[] = {"tiny", "small", "gpt2", NULL};
static const char *const schedule_names[] = {"cosine", "constant", NULL};

const char *train_task_name(task_kind t) { return task_names[t]; }


double train_lr_at(const train_opts *o, int64_t step) {
  if (!o->cosine || o->steps <= 0) return o->lr;
  return o->lr * 0.5 * (1.0 + cos(3.14159265358979323846 * (double)(step - 1) / (double)o->steps));
}

/* The index of `value` among `names`; anything else exits 2 with
 * "--OPTION: unknown OPTION 'value' (a, b or c)". */
static int choice(const char *option, const char *value, const char *const *names) {
  int n = 0;
  for (; names[n]; n++)
    if (!strcmp(value, names[n])) return n;
  char list[256];
  size_t at = 0;
  for (int i = 0; i < n && at < sizeof list; i++)
    at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
  hl_usage_error("--%s: unknown %s '%s' (%s)", option, option, value, list);
}

/* ---------------------------------------------------------- the table -- */

/* What the user gave, before presets fill in the rest (NULL / false / -1:
 * not given; every number an option takes is >= 0). */
typedef struct {
  const char *model, *preset, *task, *optimizer, *schedule, *mode, *hidden, *hist, *inject, *name, *allreduce_dtype;
  const char *text_path, *checkpoint, *resume, *save_init, *init_weights, *export_batches, *dump_grads,
      *dump_activations;
  bool list_params, columns_md, trace_ops, profile;
  long long layers, heads, embd, vocab, seq, inputs, classes, sort_len, digits, batch, eval_samples, eval_every,
      accum, growth_interval, steps, stop_after, warmup, checkpoint_every, stats_every, export_steps, check_replicas;
  double init_gain, eval_frac, lr, momentum, weight_decay, clip_norm, grad_penalty, init_scale, rank_timeout, bucket_mb;
  hl_cli_common common; /* --device, --out, --quick, --seed, --help, --version */
} given;

/* How an option's value is read into its field of `given`. */
typedef enum {
  ARG_FLAG,         /* no value: the bool is set */
  ARG_TEXT,         /* the string as given (a choice or a list: checked after parsing) */
  ARG_INT,          /* a long long in [lo, hi] */
  ARG_REAL,         /* a finite double */
  ARG_POSITIVE,     /* a finite double > 0 */
  ARG_NON_NEGATIVE, /* a finite double >= 0 */
} arg_kind;

typedef struct {
  const char *name; /* without the leading "--" */
  arg_kind kind;
  size_t field;     /* offsetof(given, ...), of the type the kind names */
  long long lo, hi; /* ARG_INT */
  void (*check)(const char *arg, double v); /* the real kinds: a further bound, with its own message */
  bool path;        /* ARG_TEXT: a file name, refused when empty */
} train_option;

static void eval_frac_bound(const char *arg, double v) {
  if (!(v > 0 && v < 1)) hl_usage_error("--eval-frac: %s is not between 0 and 1", arg);
}

static void momentum_bound(const char *arg, double v) {
  if (v >= 1) hl_usage_error("--momentum: %s must be below 1", arg);
}

static void check_bucket_mb(const char *arg, double v) {
  if (v > 65536) hl_usage_error("--bucket-mb: %s is above 65536 (64 GiB of gradients per bucket)", arg);
}

static void init_scale_bound(const char *arg, double v) {
  if (v > 3.4028234663852886e38) hl_usage_error("--init-scale: %s is beyond fp32's range", arg);
  if (v < 1.1754943508222875e-38) hl_usage_error("--init-scale: %s is below fp32's smallest normal number", arg);
}

/* One entry maker per kind (designated: each kind leaves the others' fields unset) */
#define OPT_FLAG(opt, f) {.name = opt, .kind = ARG_FLAG, .field = offsetof(given, f)}
#define OPT_TEXT(opt, f) {.name = opt, .kind = ARG_TEXT, .field = offsetof(given, f)}
#define OPT_PATH(opt, f) {.name = opt, .kind = ARG_TEXT, .field = offsetof(given, f), .path = true}
#define OPT_INT(opt, f, min, max) {.name = opt, .kind = ARG_INT, .field = offsetof(given, f), .lo = min, .hi = max}
#define OPT_REAL(opt, k, f, bound) {.name = opt, .kind = k, .field = offsetof(given, f), .check = bound}

#define MAX_STEPS 100000000
#define MAX_ROWS (1ll << 40) /* batch and held-out sizes: the memory check says what fits */

/* halflab-train's own options, by --help's sections (the common ones come
 * from cli.h). getopt_long returns an option's index + 1. */
static const train_option train_options[] = {
    /* model */
    OPT_TEXT("model", model),
    OPT_TEXT("preset", preset),
    OPT_INT("layers", layers, 0, 10000),
    OPT_INT("heads", heads, 0, 10000),
    OPT_INT("embd", embd, 0, 1 << 20),
    OPT_INT("vocab", vocab, 1, 1 << 24),
    OPT_INT("seq", seq, 1, 1 << 20),
    OPT_INT("inputs", inputs, 1, 1 << 24),
    OPT_TEXT("hidden", hidden),
    OPT_INT("classes", classes, 2, 1 << 20),
    OPT_REAL("init-gain", ARG_POSITIVE, init_gain, NULL),
    /* data */
    OPT_TEXT("task", task),
    OPT_PATH("text", text_path),
    OPT_INT("sort-len", sort_len, 1, 255),
    OPT_INT("digits", digits, 2, 1 << 20),
    OPT_INT("batch", batch, 1, MAX_ROWS),
    OPT_INT("eval-samples", eval_samples, 1, MAX_ROWS),
    OPT_INT("eval-every", eval_every, 1, MAX_ROWS),
    OPT_REAL("eval-frac", ARG_POSITIVE, eval_frac, eval_frac_bound),
    /* precision mode and training */
    OPT_TEXT("mode", mode),
    OPT_TEXT("optimizer", optimizer),
    OPT_TEXT("schedule", schedule),
    OPT_REAL("lr", ARG_POSITIVE, lr, NULL),
    OPT_REAL("momentum", ARG_NON_NEGATIVE, momentum, momentum_bound),
    OPT_REAL("weight-decay", ARG_NON_NEGATIVE, weight_decay, NULL),
    OPT_REAL("clip-norm", ARG_POSITIVE, clip_norm, NULL),
    OPT_INT("accum", accum, 1, 1 << 20),
    OPT_REAL("grad-penalty", ARG_POSITIVE, grad_penalty, NULL),
    OPT_REAL("init-scale", ARG_POSITIVE, init_scale, init_scale_bound),
    OPT_INT("growth-interval", growth_interval, 1, 2147483647),
    OPT_TEXT("inject-nonfinite", inject),
    OPT_INT("steps", steps, 0, MAX_STEPS),
    OPT_INT("warmup", warmup, 0, MAX_STEPS),
    OPT_PATH("checkpoint", checkpoint),
    OPT_INT("checkpoint-every", checkpoint_every, 1, MAX_STEPS),
    OPT_INT("stop-after", stop_after, 1, MAX_STEPS),
    OPT_PATH("resume", resume),
    /* measurements */
    OPT_INT("stats-every", stats_every, 0, MAX_STEPS),
    OPT_TEXT("hist-steps", hist),
    OPT_FLAG("list-params", list_params),
    OPT_FLAG("columns-md", columns_md),
    OPT_FLAG("trace-ops", trace_ops),
    OPT_FLAG("profile", profile),
    /* for peers */
    OPT_PATH("save-init", save_init),
    OPT_PATH("init-weights", init_weights),
    OPT_PATH("export-batches", export_batches),
    OPT_INT("export-steps", export_steps, 1, MAX_STEPS),
    OPT_PATH("dump-grads", dump_grads),
    OPT_PATH("dump-activations", dump_activations),
    /* data-parallel */
    OPT_INT("check-replicas", check_replicas, 1, MAX_STEPS),
    OPT_TEXT("allreduce-dtype", allreduce_dtype),
    OPT_REAL("rank-timeout", ARG_NON_NEGATIVE, rank_timeout, NULL),
    OPT_REAL("bucket-mb", ARG_NON_NEGATIVE, bucket_mb, check_bucket_mb),
    /* common (the others come from cli.h) */
    OPT_TEXT("name", name),
};
enum { N_TRAIN_OPTIONS = sizeof train_options / sizeof train_options[0] };
_Static_assert(N_TRAIN_OPTIONS < ':', "index + 1 must stay clear of getopt's ':' and '?' and of cli.h's letters");

static const struct option common_longopts[] = {HL_CLI_LONGOPT_DEVICE, HL_CLI_LONGOPT_OUT, HL_CLI_LONGOPT_QUICK,
                                                HL_CLI_LONGOPT_SEED,   HL_CLI_LONGOPT_HELP, HL_CLI_LONGOPT_VERSION,
                                                {NULL, 0, NULL, 0}};
enum { N_LONGOPTS = N_TRAIN_OPTIONS + sizeof common_longopts / sizeof common_longopts[0] };

static void fill_longopts(struct option table[N_LONGOPTS]) {
  for (int i = 0; i < N_TRAIN_OPTIONS; i++)
    table[i] = (struct option){.name = train_options[i].name,
                               .has_arg = train_options[i].kind == ARG_FLAG ? no_argument : required_argument,
                               .val = i + 1};
  memcpy(table + N_TRAIN_OPTIONS, common_longopts, sizeof common_longopts);
}

static bool is_real(arg_kind k) { return k == ARG_REAL || k == ARG_POSITIVE || k == ARG_NON_NEGATIVE; }

/* --help, with this build's data-parallel status in place of %DIST% */
static const char *usage_text(void) {
  static char text[sizeof usage + 1024];
  char status[1024];
  if (hl_dist_built() && hl_dist_nccl_built())
    snprintf(status, sizeof status, "  (built in this build: MPI; GPU ranks over NCCL, not yet run on a GPU)\n");
  else if (hl_dist_built())
    snprintf(status, sizeof status, "  (built in this build: MPI; GPU ranks NOT BUILT: %s; --device cuda under mpirun\n"
             "  with more than one rank is refused)\n", hl_dist_nccl_not_built_why());
  else
    snprintf(status, sizeof status, "  NOT BUILT in this build: %s; mpirun, --check-replicas, --rank-timeout and\n"
             "  --allreduce-dtype are refused\n",
             hl_dist_not_built_why());
  const char *mark = strstr(usage, "%DIST%");
  snprintf(text, sizeof text, "%.*s%s%s", (int)(mark - usage), usage, status, mark + strlen("%DIST%"));
  return text;
}

static given nothing_given(void) {
  given g = {.common = hl_cli_common_defaults(usage_text())};
  for (int i = 0; i < N_TRAIN_OPTIONS; i++) {
    char *field = (char *)&g + train_options[i].field;
    if (train_options[i].kind == ARG_INT) *(long long *)field = -1;
    else if (is_real(train_options[i].kind)) *(double *)field = -1;
  }
  return g;
}

static double read_real(const train_option *opt, const char *what, const char *arg) {
  const hl_real_range any = {.lo = -HUGE_VAL, .hi = HUGE_VAL};
  const double v = hl_parse_real(what, arg, opt->kind == ARG_POSITIVE       ? HL_REAL_POSITIVE
                                            : opt->kind == ARG_NON_NEGATIVE ? HL_REAL_NON_NEGATIVE
                                                                            : any);
  if (opt->check) opt->check(arg, v);
  return v;
}

static void take_value(const train_option *opt, const char *arg, given *g) {
  char what[64];
  snprintf(what, sizeof what, "--%s", opt->name);
  char *field = (char *)g + opt->field;
  switch (opt->kind) {
    case ARG_FLAG: *(bool *)field = true; break;
    case ARG_TEXT: *(const char **)field = opt->path ? hl_parse_path(what, arg) : arg; break;
    case ARG_INT: *(long long *)field = hl_parse_int(what, arg, opt->lo, opt->hi); break;
    case ARG_REAL:
    case ARG_POSITIVE:
    case ARG_NON_NEGATIVE: *(double *)field = read_real(opt, what, arg); break;
  }
}

/* ------------------------------------------------------- --resume -- */

static const train_option *option_named(const char *name) {
  for (int i = 0; i < N_TRAIN_OPTIONS; i++)
    if (!strcmp(train_options[i].name, name)) return &train_options[i];
  return NULL;
}

/* Whether the command line gave the option (nothing_given's marks). */
static bool was_given(const train_option *opt, const given *g) {
  const char *field = (const char *)g + opt->field;
  switch (opt->kind) {
    case ARG_FLAG: return *(const bool *)field;
    case ARG_TEXT: return *(const char *const *)field != NULL;
    case ARG_INT: return *(const long long *)field >= 0;
    default: return *(const double *)field >= 0;
  }
}

static bool is_choice(const char *name) {
  static const char *const choices[] = {"model", "preset", "task", "mode", "optimizer", "schedule", "allreduce-dtype"};
  for (size_t i = 0; i < sizeof choices / sizeof choices[0]; i++)
    if (!strcmp(name, choices[i])) return true;
  return false;
}

/* The checkpoint's value of every option not given. A choice or a number
 * given otherwise is refused here already, before the checks between
 * options could name a consequence of it instead (--init-scale under
 * --mode fp32); lists and paths are compared once resolved (resume_check). */
static void take_checkpoint_values(const run_definition *saved, const char *path, bool seed_given, given *g) {
  /* an option of the definition that the checkpoint's run does not have (--clip-norm, --momentum under adamw) */
  for (int i = 0; i < N_TRAIN_OPTIONS; i++) {
    const train_option *opt = &train_options[i];
    if (!was_given(opt, g) || !run_definition_key(opt->name) || run_definition_overridable(opt->name) ||
        run_definition_get(saved, opt->name))
      continue;
    char value[64];
    const char *field = (const char *)g + opt->field;
    if (opt->kind == ARG_TEXT) snprintf(value, sizeof value, "%s", *(const char *const *)field);
    else if (opt->kind == ARG_INT) snprintf(value, sizeof value, "%lld", *(const long long *)field);
    else snprintf(value, sizeof value, "%g", *(const double *)field);
    hl_usage_error("--resume %s: %s is not set in the checkpoint, %s on the command line", path, opt->name, value);
  }
  for (int i = 0; i < saved->n; i++) {
    const char *key = saved->key[i], *value = saved->value[i];
    if (!strcmp(key, "seed")) {
      const uint64_t seed = (uint64_t)hl_parse_int("--seed", value, 0, HL_CLI_SEED_MAX);
      if (!seed_given) g->common.seed = seed;
      else if (seed != g->common.seed)
        hl_usage_error("--resume %s: seed is %s in the checkpoint, %llu on the command line", path, value,
                       (unsigned long long)g->common.seed);
      continue;
    }
    const train_option *opt = option_named(key);
    if (!opt) continue; /* text-contents: resume_check */
    if (!was_given(opt, g) && !strcmp(key, "hist-steps") && g->steps >= 0) {
      /* a new --steps: the histogram steps past it go (resume_check lists the change) */
      static char kept[1024];
      long long steps[TRAIN_MAX_HIST_STEPS];
      const int n = hl_parse_int_list("--resume's hist-steps", value, 1, MAX_STEPS, steps, TRAIN_MAX_HIST_STEPS);
      size_t at = 0;
      for (int k = 0; k < n; k++)
        if (steps[k] <= g->steps && at < sizeof kept)
          at += (size_t)snprintf(kept + at, sizeof kept - at, "%s%lld", at ? "," : "", steps[k]);
      if (at) take_value(opt, kept, g);
      continue;
    }
    if (!was_given(opt, g)) {
      take_value(opt, value, g);
      continue;
    }
    if (run_definition_overridable(key) || (opt->kind == ARG_TEXT && !is_choice(key))) continue;
    given saved_value = nothing_given();
    take_value(opt, value, &saved_value);
    const size_t at = opt->field;
    char mine[64];
    bool differs;
    if (opt->kind == ARG_TEXT) {
      const char *a = *(const char **)((char *)&saved_value + at), *b = *(const char **)((char *)g + at);
      differs = strcmp(a, b) != 0;
      snprintf(mine, sizeof mine, "%s", b);
    } else if (opt->kind == ARG_INT) {
      const long long a = *(long long *)((char *)&saved_value + at), b = *(long long *)((char *)g + at);
      differs = a != b;
      snprintf(mine, sizeof mine, "%lld", b);
    } else {
      const double a = *(double *)((char *)&saved_value + at), b = *(double *)((char *)g + at);
      differs = a != b;
      snprintf(mine, sizeof mine, "%.17g", b);
      for (int digits = 1; digits < 17; digits++) { /* the shortest form that is b */
        char shorter[64];
        snprintf(shorter, sizeof shorter, "%.*g", digits, b);
        if (strtod(shorter, NULL) == b) {
          snprintf(mine, sizeof mine, "%s", shorter);
          break;
        }
      }
    }
    if (differs)
      hl_usage_error("--resume %s: %s is %s in the checkpoint, %s on the command line", path, key, value, mine);
  }
}

/* -------------------------------------------------- after parsing -- */
/* The values with their presets filled in and the checks between options,
 * section by section in this order, so that a command line with several
 * faults is always refused for the same one. */

/* What the defaults depend on: the model and the preset. */
typedef struct {
  bool gpt, gpt2, small;
} run_preset;

#define PICK(v, dflt) ((v) >= 0 ? (v) : (dflt))

static bool name_ok(const char *s) {
  if (!*s || strlen(s) >= 48) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
          *p == '.'))
      return false;
  return true;
}

/* The values that no preset or other option changes. */
static void copy_plain_values(const given *g, train_opts *o) {
  o->text_path = g->text_path;
  o->checkpoint = g->checkpoint;
  o->resume = g->resume;
  o->list_params = g->list_params;
  o->columns_md = g->columns_md;
  o->trace_ops = g->trace_ops;
  o->profile = g->profile;
  o->save_init = g->save_init;
  o->init_weights = g->init_weights;
  o->export_batches = g->export_batches;
  o->dump_grads = g->dump_grads;
  o->dump_activations = g->dump_activations;
  o->device = g->common.device;
  o->out = g->common.out;
  o->quick = g->common.quick;
  o->seed = g->common.seed;
}

static run_preset resolve_model_and_preset(const given *g, train_opts *o) {
  o->model = g->model ? (model_kind)choice("model", g->model, model_names) : MODEL_GPT;
  o->preset = g->preset ? preset_names[choice("preset", g->preset, preset_names)] : "tiny";
  const run_preset p = {
      .gpt = o->model == MODEL_GPT, .gpt2 = !strcmp(o->preset, "gpt2"), .small = !strcmp(o->preset, "small")};
  if ((p.gpt2 || p.small) && !p.gpt) hl_usage_error("--preset %s is a GPT preset (the MLP has tiny only)", o->preset);
  return p;
}

static void resolve_task(const given *g, const run_preset *p, train_opts *o) {
  if (o->text_path && g->task && strcmp(g->task, "text")) hl_usage_error("--text goes with --task text (or no --task)");
  if (g->task) o->task = (task_kind)choice("task", g->task, task_names);
  else o->task = o->text_path || p->small ? TASK_TEXT : p->gpt ? TASK_SORT : TASK_CLASSIFY;
  if (p->gpt && o->task == TASK_CLASSIFY) hl_usage_error("--task classify is the MLP's task (--model mlp)");
  if (!p->gpt && o->task != TASK_CLASSIFY)
    hl_usage_error("--task %s needs --model gpt (the MLP classifies)", train_task_name(o->task));
  if (!p->gpt && (g->layers >= 0 || g->heads >= 0 || g->embd >= 0 || g->vocab >= 0 || g->seq >= 0 ||
                  g->sort_len >= 0 || g->digits >= 0))
    hl_usage_error("--layers, --heads, --embd, --vocab, --seq, --sort-len and --digits are GPT options");
  if (p->gpt && (g->inputs >= 0 || g->hidden || g->classes >= 0))
    hl_usage_error("--inputs, --hidden and --classes are MLP options (--model mlp)");
  if (o->task != TASK_SORT && (g->sort_len >= 0 || g->digits >= 0))
    hl_usage_error("--sort-len and --digits belong to --task sort");
  if (o->task != TASK_TEXT && g->eval_frac >= 0) hl_usage_error("--eval-frac belongs to --task text");
  o->sort_len = (int)PICK(g->sort_len, 8);
  o->sort_digits = (int)PICK(g->digits, 10);
  o->eval_frac = g->eval_frac >= 0 ? g->eval_frac : 0.1;
}

static void resolve_shapes(const given *g, const run_preset *p, train_opts *o) {
  o->init_gain = g->init_gain > 0 ? g->init_gain : 1.0;
  if (p->gpt) {
    hl_gpt_config *c = &o->gpt;
    c->n_layer = (int)PICK(g->layers, p->gpt2 ? 12 : p->small ? 6 : 2);
    c->n_head = (int)PICK(g->heads, p->gpt2 ? 12 : p->small ? 6 : 4);
    c->n_embd = (int)PICK(g->embd, p->gpt2 ? 768 : p->small ? 384 : 64);
    o->seq = PICK(g->seq, p->gpt2 ? 1024 : p->small ? 128 : o->task == TASK_SORT ? 2 * o->sort_len : 64);
    c->block_size = (int)o->seq;
    const int task_vocab = o->task == TASK_TEXT ? 256 : o->sort_digits + 1;
    c->vocab_size = (int)PICK(g->vocab, p->gpt2 ? 50257 : p->small ? 256 : task_vocab);
    if (c->vocab_size < task_vocab)
      hl_usage_error("--vocab %d is smaller than the %d tokens %s uses", c->vocab_size, task_vocab,
                     o->task == TASK_TEXT ? "--text" : "the sorting task");
    c->init_std = 0.02 * o->init_gain;
    char why[200];
    if (!hl_gpt_config_check(c, why, sizeof why)) hl_usage_error("model shape: %s", why);
    if (o->task == TASK_SORT && o->seq < 2 * o->sort_len)
      hl_usage_error("--seq %lld is shorter than one sorting problem (2 x --sort-len = %d tokens)", (long long)o->seq,
                     2 * o->sort_len);
  } else {
    hl_mlp_config *c = &o->mlp;
    c->n_in = (int)PICK(g->inputs, 32);
    o->classes = (int)PICK(g->classes, 10);
    c->n_out = o->classes;
    if (g->hidden) {
      long long w[HL_MLP_MAX_HIDDEN];
      c->n_hidden = hl_parse_int_list("--hidden", g->hidden, 1, 1 << 24, w, HL_MLP_MAX_HIDDEN);
      for (int i = 0; i < c->n_hidden; i++) c->hidden[i] = (int)w[i];
    } else {
      c->n_hidden = 2;
      c->hidden[0] = c->hidden[1] = 128;
    }
    c->act = HL_ACT_RELU;
    c->init_gain = o->init_gain;
    char why[200];
    if (!hl_mlp_config_check(c, why, sizeof why)) hl_usage_error("model shape: %s", why);
    o->seq = 1;
  }
}

/* --inject-nonfinite STEPS[@RANK]: the steps, and the one rank (-1: every rank) */
static void parse_inject(const char *text, train_opts *o) {
  char steps[1024];
  snprintf(steps, sizeof steps, "%s", text ? text : "none");
  o->inject_rank = -1;
  char *at = strchr(steps, '@');
  if (at) {
    *at = '\0';
    o->inject_rank = (int)hl_parse_int("--inject-nonfinite's @RANK", at + 1, 0, 1 << 20);
    if (o->inject_rank >= hl_dist_size())
      hl_usage_error("--inject-nonfinite %s: rank %d does not exist: the run has %d rank%s%s", text, o->inject_rank,
                     hl_dist_size(), hl_dist_size() == 1 ? "" : "s",
                     hl_dist_built() ? "" : " (data-parallel training is not built)");
  }
  if (!hl_step_set_parse(steps, &o->inject)) hl_usage_error("--inject-nonfinite: %s", hl_error());
}

static void resolve_mode_and_optimizer(const given *g, const run_preset *p, train_opts *o) {
  o->mode = hl_train_setup_find(g->mode ? g->mode : "fp32");
  if (!o->mode)
    hl_usage_error("--mode: unknown mode '%s' (fp32, amp-fp16, amp-bf16, fp16-noscale, fp16-static, fp16-master, "
                   "fp16-pure)",
                   g->mode);
  o->optimizer = g->optimizer ? (hl_optim_kind)choice("optimizer", g->optimizer, optimizer_names) : HL_OPTIM_ADAMW;
  if (g->momentum > 0 && o->optimizer != HL_OPTIM_SGD) hl_usage_error("--momentum is SGD's (--optimizer sgd)");
  o->cosine = !g->schedule || choice("schedule", g->schedule, schedule_names) == 0;
  const bool adam = o->optimizer == HL_OPTIM_ADAMW;
  /* small: 3e-4, as gpt2 (halflab-train has no lr warm-up; at 6e-4 and 1e-3 its loss spikes within ten steps) */
  o->lr = g->lr >= 0 ? g->lr : adam ? (p->gpt ? (p->gpt2 || p->small ? 3e-4 : 3e-3) : 1e-3) : 0.1;
  o->momentum = g->momentum >= 0 ? g->momentum : 0.0;
  o->weight_decay = g->weight_decay >= 0 ? g->weight_decay : 0.0;
  o->clip_norm = g->clip_norm > 0 ? g->clip_norm : 0.0;
  o->accum = (int)PICK(g->accum, 1);
  o->grad_penalty = g->grad_penalty > 0 ? g->grad_penalty : 0.0;
  if (o->grad_penalty > 0 && p->gpt)
    hl_usage_error("--grad-penalty needs second derivatives, and the GPT's layer_norm is differentiable once "
                   "(docs/core.md): use --model mlp");
  const bool is_static = o->mode->scaling == HL_LOSS_SCALE_FIXED;
  o->init_scale = g->init_scale > 0 ? g->init_scale : is_static ? 1024.0 : 65536.0;
  o->growth_interval = PICK(g->growth_interval, 2000);
  if (o->mode->scaling == HL_LOSS_SCALE_NONE && (g->init_scale > 0 || g->growth_interval >= 0))
    hl_usage_error("--init-scale and --growth-interval need a mode with a loss scaler (amp-fp16, fp16-static, "
                   "fp16-master); %s has none",
                   o->mode->name);
  if (is_static && g->growth_interval >= 0) hl_usage_error("--growth-interval: fp16-static's scale never changes");
}

static void resolve_lengths(const given *g, const run_preset *p, train_opts *o) {
  const bool gpt = p->gpt, gpt2 = p->gpt2, small = p->small;
  o->batch = PICK(g->batch, gpt ? (gpt2 ? 8 : small ? 16 : 64) : 256);
  o->steps = PICK(g->steps, o->quick ? (gpt2 ? 10 : small ? 20 : 100) : gpt2 ? 70 : small ? 200 : 600);
  o->warmup = PICK(g->warmup, gpt2 ? (o->quick ? 3 : 20) : small && o->quick ? 3 : 5);
  o->eval_every = (int)PICK(g->eval_every, gpt2 ? 10 : small ? (o->quick ? 10 : 50) : o->quick ? 25 : 50);
  o->eval_samples = PICK(g->eval_samples, gpt ? (gpt2 ? 16 : small ? 64 : 512) : 2048);
  o->stats_every = (int)PICK(g->stats_every, gpt2 || small ? 10 : 1);
  o->checkpoint_every = (int)PICK(g->checkpoint_every, 0);
  o->stop_after = PICK(g->stop_after, 0);
  if (o->stop_after && o->stop_after >= o->steps)
    hl_usage_error("--stop-after %lld must be below --steps %lld", (long long)o->stop_after, (long long)o->steps);
  if (o->checkpoint_every && !o->checkpoint) hl_usage_error("--checkpoint-every needs --checkpoint FILE");
  if (o->steps == 0 && !o->save_init && !o->export_batches && !o->list_params)
    hl_usage_error("--steps 0 trains nothing: give it with --save-init or --export-batches");
  parse_inject(g->inject, o);
  if (hl_step_set_count(&o->inject) > 0 && o->inject.hi[o->inject.n - 1] > o->steps)
    hl_usage_error("--inject-nonfinite: step %lld is past the last step (%lld)", (long long)o->inject.hi[o->inject.n - 1],
                   (long long)o->steps);
  if (g->hist) {
    long long h[TRAIN_MAX_HIST_STEPS];
    o->n_hist = hl_parse_int_list("--hist-steps", g->hist, 1, o->steps > 0 ? o->steps : 1, h, TRAIN_MAX_HIST_STEPS);
    for (int i = 0; i < o->n_hist; i++) o->hist_steps[i] = h[i];
  } else if (o->steps > 0) {
    const int64_t pick[3] = {1, (o->steps + 1) / 2, o->steps};
    for (int i = 0; i < 3; i++)
      if (o->n_hist == 0 || o->hist_steps[o->n_hist - 1] != pick[i]) o->hist_steps[o->n_hist++] = pick[i];
  }
}

/* --allreduce-dtype's names and the types they stand for */
static const char *const wire_names[] = {"fp32", "bf16", "fp16", NULL};
static const hl_dtype wire_types[] = {HL_F32, HL_BF16, HL_F16};

const char *train_wire_name(hl_dtype wire) {
  for (int i = 0; wire_names[i]; i++)
    if (wire_types[i] == wire) return wire_names[i];
  return "?";
}

/* Data-parallel runs: the launcher's rank count against this build, and
 * what a global batch split over the ranks needs. */
static void resolve_data_parallel(const given *g, train_opts *o) {
  const int launched = hl_dist_launcher_size(), ranks = hl_dist_size();
  if (launched < 0) hl_usage_error("%s", hl_error());
  if (!hl_dist_built() && launched > 1)
    hl_usage_error("started by mpirun with %d ranks, but data-parallel training is not built: %s", launched,
                   hl_dist_not_built_why());
  if (g->check_replicas >= 0 && !hl_dist_built())
    hl_usage_error("--check-replicas: data-parallel training is not built: %s", hl_dist_not_built_why());
  o->check_replicas = (int)PICK(g->check_replicas, 0);
  if (g->rank_timeout >= 0 && !hl_dist_built())
    hl_usage_error("--rank-timeout: data-parallel training is not built: %s", hl_dist_not_built_why());
  o->rank_timeout = g->rank_timeout >= 0 ? g->rank_timeout : TRAIN_RANK_TIMEOUT_DEFAULT;
  if (g->bucket_mb >= 0 && !hl_dist_built())
    hl_usage_error("--bucket-mb: data-parallel training is not built: %s", hl_dist_not_built_why());
  o->bucket_mb = g->bucket_mb >= 0 ? g->bucket_mb : TRAIN_BUCKET_MB_DEFAULT;
  o->allreduce_dtype = wire_types[choice("allreduce-dtype", g->allreduce_dtype ? g->allreduce_dtype : "fp32", wire_names)];
  if (o->allreduce_dtype != HL_F32 && ranks == 1)
    hl_usage_error("--allreduce-dtype %s: %s", g->allreduce_dtype,
                   hl_dist_built() ? "one process all-reduces nothing: start it with mpirun -n N (N >= 2)"
                                   : "data-parallel training is not built");
  if (ranks == 1) return;
  if (o->batch < ranks)
    hl_usage_error("--batch %lld: fewer rows than ranks (%d): every rank needs at least one row", (long long)o->batch, ranks);
  if (o->batch % ranks)
    hl_usage_error("--batch %lld does not split evenly over %d ranks: give a multiple of %d", (long long)o->batch, ranks,
                   ranks);
  /* GPU ranks: here what the build lacks; the GPUs each node has are counted with the device (main.c) */
  if (o->device && (!strcmp(o->device, "cuda") || !strcmp(o->device, "gpu")) && !hl_dist_nccl_built())
    hl_usage_error("--device %s: data-parallel training on GPUs is not built: %s", o->device, hl_dist_nccl_not_built_why());
}

static void resolve_peers(const given *g, const run_preset *p, train_opts *o) {
  if (o->export_batches && !p->gpt) hl_usage_error("--export-batches writes token batches: it needs --model gpt");
  o->export_steps = PICK(g->export_steps, o->steps);
  if (g->export_steps >= 0 && !o->export_batches) hl_usage_error("--export-steps needs --export-batches FILE");
  if (o->profile && o->steps == 0) hl_usage_error("--profile times the training steps: it needs --steps >= 1");
  if (o->dump_grads && o->steps == 0) hl_usage_error("--dump-grads writes the first step's gradients: it needs --steps >= 1");
  if (o->dump_activations && o->steps == 0)
    hl_usage_error("--dump-activations writes the first step's activations: it needs --steps >= 1");
  if (o->dump_activations && !p->gpt) hl_usage_error("--dump-activations records the GPT's linear layers: it needs --model gpt");
  if (o->resume && o->init_weights) hl_usage_error("--resume and --init-weights exclude each other (the checkpoint holds the weights)");
}

static void resolve_name(const given *g, const run_preset *p, train_opts *o) {
  if (g->name) {
    if (!name_ok(g->name)) hl_usage_error("--name: '%s' must be 1 to 47 letters, digits, '-' or '.'", g->name);
    snprintf(o->name, sizeof o->name, "%s", g->name);
    return;
  }
  const bool custom_shape = g->layers >= 0 || g->heads >= 0 || g->embd >= 0 || g->vocab >= 0 || g->inputs >= 0 ||
                            g->hidden || g->classes >= 0;
  /* the task joins the name where it is not the preset's own */
  const char *task_suffix = p->small ? (o->task == TASK_TEXT ? "" : "-sort") : o->task == TASK_TEXT ? "-text" : "";
  snprintf(o->name, sizeof o->name, "%s%s%s", p->gpt ? "" : "mlp-", custom_shape ? "custom" : o->preset, task_suffix);
}

/* Inputs that must be regular files, looked at before anything opens them:
 * opening a FIFO would block, and a device or a folder is not data. */
static void check_inputs(const train_opts *o) {
  const struct {
    const char *option, *path;
  } inputs[] = {{"--text", o->text_path}, {"--init-weights", o->init_weights}, {"--resume", o->resume}};
  char err[4400];
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
    if (inputs[i].path && !hl_input_regular_file(inputs[i].path, err, sizeof err))
      hl_usage_error("%s: %s", inputs[i].option, err);
}

/* ------------------------------------------------------------- parse -- */

void train_parse_options(int argc, char **argv, train_opts *o) {
  struct option longopts[N_LONGOPTS];
  fill_longopts(longopts);
  given g = nothing_given();
  int c;
  bool seed_given = false;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    seed_given |= c == HL_CLI_OPT_SEED;
    if (hl_cli_common_option(&g.common, c, optarg)) continue;
    if (c < 1 || c > N_TRAIN_OPTIONS) hl_cli_getopt_error(c, argv, longopts);
    take_value(&train_options[c - 1], optarg, &g);
  }
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);

  hl_checkpoint *resumed = NULL;
  run_definition saved = {0};
  char run_id[RUN_ID_LEN + 1] = "";
  if (g.resume) {
    /* a FIFO would block the open, a folder or device is no checkpoint */
    char err[4400];
    if (!hl_input_regular_file(g.resume, err, sizeof err)) hl_usage_error("--resume: %s", err);
    resumed = resume_open(g.resume, &saved, run_id);
    take_checkpoint_values(&saved, g.resume, seed_given, &g);
  }

  memset(o, 0, sizeof *o);
  copy_plain_values(&g, o);
  const run_preset p = resolve_model_and_preset(&g, o);
  resolve_task(&g, &p, o);
  resolve_shapes(&g, &p, o);
  resolve_mode_and_optimizer(&g, &p, o);
  resolve_lengths(&g, &p, o);
  resolve_peers(&g, &p, o);
  resolve_data_parallel(&g, o);
  resolve_name(&g, &p, o);
  check_inputs(o);
  if (resumed) {
    o->resumed = resumed;
    o->resumed_step = hl_checkpoint_step(resumed);
    resume_check(o, &saved);
    run_definition_free(&saved);
    memcpy(o->run_id, run_id, sizeof run_id);
  } else run_id_compute(o, o->run_id);
}
