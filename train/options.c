/* options.c — halflab-train's command line: presets, every flag, and the
 * checks that refuse bad input (one line, exit 2) before anything is
 * allocated or written. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/base/error.h"
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
    "  --optimizer sgd|adamw (default adamw)   --lr X (adamw: tiny 3e-3, small and gpt2 3e-4; sgd 0.1)\n"
    "  --momentum X (sgd)   --weight-decay X\n"
    "  --schedule cosine|constant  cosine (default): lr x (1 + cos(pi (step - 1) / steps)) / 2\n"
    "  --clip-norm X         clip the unscaled gradients' L2 norm to X\n"
    "  --accum N             micro-batches per optimizer step (gradient accumulation, default 1)\n"
    "  --grad-penalty L      add L x ||grad||_2 (the seed's gradient penalty recipe; MLP only)\n"
    "  --init-scale X        the scaler's initial scale (default 65536; fp16-static: its fixed scale, default 1024)\n"
    "  --growth-interval N   steps without inf/NaN before the scale doubles (default 2000)\n"
    "  --inject-nonfinite STEPS  put an inf into a gradient at these steps, e.g. 3,7,10-12\n"
    "  --steps N             optimizer steps (tiny: 600; small: 200; gpt2: 70; 0: only --save-init /\n"
    "                        --export-batches)\n"
    "  --warmup N            first steps left out of the timing summary (tiny: 5; small: 5; gpt2: 20)\n"
    "  --checkpoint FILE     save the run's state at the end (and every --checkpoint-every N steps)\n"
    "  --stop-after K        stop after step K of the --steps schedule (with --checkpoint: resume it later)\n"
    "  --resume FILE         continue a run from its checkpoint, bit for bit\n"
    "\n"
    "Measurements:\n"
    "  --stats-every N       gradient census and absorbed updates every N steps (tiny: 1; small, gpt2: 10)\n"
    "  --hist-steps LIST     steps whose gradient histogram is written (default: first, middle, last)\n"
    "  --list-params         print each parameter's dtype, name, shape and bytes under --mode; write nothing\n"
    "  --trace-ops           print the first step's ops with their dtypes on stderr\n"
    "\n"
    "For peers (bench/peers/):\n"
    "  --save-init FILE      write the initial weights (core/models/nn.h weight file, f32)\n"
    "  --init-weights FILE   start from these weights instead of the seeded init\n"
    "  --export-batches FILE write the token batches of the first --export-steps steps and the held-out set\n"
    "  --export-steps N      (default: --steps)\n"
    "  --dump-grads FILE     write the first step's unscaled gradients (weight-file format, f32), before clipping\n"
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
    "train_NAME_MODE_summary.csv, and the run's row in train_summary.csv.\n"
    "Exit status: 0 done, 1 failed run (e.g. a non-finite loss in fp32), 2 bad input, 130/143 stopped by\n"
    "SIGINT/SIGTERM (the CSVs hold complete lines and the summary is written).\n";

enum {
  OPT_MODEL = 1, OPT_PRESET, OPT_LAYERS, OPT_HEADS, OPT_EMBD, OPT_VOCAB, OPT_SEQ, OPT_INPUTS, OPT_HIDDEN, OPT_CLASSES,
  OPT_INIT_GAIN, OPT_TASK, OPT_TEXT, OPT_SORT_LEN, OPT_DIGITS, OPT_BATCH, OPT_EVAL_SAMPLES, OPT_EVAL_EVERY,
  OPT_EVAL_FRAC, OPT_MODE, OPT_OPTIMIZER, OPT_SCHEDULE, OPT_LR, OPT_MOMENTUM, OPT_WEIGHT_DECAY, OPT_CLIP_NORM, OPT_ACCUM,
  OPT_GRAD_PENALTY, OPT_INIT_SCALE, OPT_GROWTH_INTERVAL, OPT_INJECT, OPT_STEPS, OPT_WARMUP, OPT_CHECKPOINT,
  OPT_CHECKPOINT_EVERY, OPT_STOP_AFTER, OPT_RESUME, OPT_STATS_EVERY, OPT_HIST_STEPS, OPT_LIST_PARAMS, OPT_TRACE_OPS, OPT_SAVE_INIT,
  OPT_INIT_WEIGHTS, OPT_EXPORT, OPT_EXPORT_STEPS, OPT_DUMP_GRADS, OPT_NAME
};

const char *train_task_name(task_kind t) {
  static const char *names[] = {"sort", "text", "classify"};
  return names[t];
}

const char *train_optimizer_name(optimizer_kind k) { return k == OPTIMIZER_SGD ? "sgd" : "adamw"; }

double train_lr_at(const train_opts *o, int64_t step) {
  if (!o->cosine || o->steps <= 0) return o->lr;
  return o->lr * 0.5 * (1.0 + cos(3.14159265358979323846 * (double)(step - 1) / (double)o->steps));
}

/* What the user gave, before presets fill in the rest (NULL / -1: not given). */
typedef struct {
  const char *model, *preset, *task, *optimizer, *schedule, *mode, *hidden, *hist, *inject, *name;
  long long layers, heads, embd, vocab, seq, inputs, classes, sort_len, digits, batch, eval_samples, eval_every,
      accum, growth_interval, steps, stop_after, warmup, checkpoint_every, stats_every, export_steps;
  double init_gain, eval_frac, lr, momentum, weight_decay, clip_norm, grad_penalty, init_scale;
} given;

static double positive(const char *what, const char *s) {
  double v = hl_parse_double(what, s, true);
  if (!(v > 0)) hl_usage_error("%s: %s must be positive", what, s);
  return v;
}

static double non_negative(const char *what, const char *s) {
  double v = hl_parse_double(what, s, true);
  if (!(v >= 0)) hl_usage_error("%s: %s must be >= 0", what, s);
  return v;
}

static bool name_ok(const char *s) {
  if (!*s || strlen(s) >= 48) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
          *p == '.'))
      return false;
  return true;
}

#define PICK(v, dflt) ((v) >= 0 ? (v) : (dflt))

void train_parse_options(int argc, char **argv, train_opts *o) {
  static const struct option longopts[] = {
      {"model", required_argument, NULL, OPT_MODEL},
      {"preset", required_argument, NULL, OPT_PRESET},
      {"layers", required_argument, NULL, OPT_LAYERS},
      {"heads", required_argument, NULL, OPT_HEADS},
      {"embd", required_argument, NULL, OPT_EMBD},
      {"vocab", required_argument, NULL, OPT_VOCAB},
      {"seq", required_argument, NULL, OPT_SEQ},
      {"inputs", required_argument, NULL, OPT_INPUTS},
      {"hidden", required_argument, NULL, OPT_HIDDEN},
      {"classes", required_argument, NULL, OPT_CLASSES},
      {"init-gain", required_argument, NULL, OPT_INIT_GAIN},
      {"task", required_argument, NULL, OPT_TASK},
      {"text", required_argument, NULL, OPT_TEXT},
      {"sort-len", required_argument, NULL, OPT_SORT_LEN},
      {"digits", required_argument, NULL, OPT_DIGITS},
      {"batch", required_argument, NULL, OPT_BATCH},
      {"eval-samples", required_argument, NULL, OPT_EVAL_SAMPLES},
      {"eval-every", required_argument, NULL, OPT_EVAL_EVERY},
      {"eval-frac", required_argument, NULL, OPT_EVAL_FRAC},
      {"mode", required_argument, NULL, OPT_MODE},
      {"optimizer", required_argument, NULL, OPT_OPTIMIZER},
      {"schedule", required_argument, NULL, OPT_SCHEDULE},
      {"lr", required_argument, NULL, OPT_LR},
      {"momentum", required_argument, NULL, OPT_MOMENTUM},
      {"weight-decay", required_argument, NULL, OPT_WEIGHT_DECAY},
      {"clip-norm", required_argument, NULL, OPT_CLIP_NORM},
      {"accum", required_argument, NULL, OPT_ACCUM},
      {"grad-penalty", required_argument, NULL, OPT_GRAD_PENALTY},
      {"init-scale", required_argument, NULL, OPT_INIT_SCALE},
      {"growth-interval", required_argument, NULL, OPT_GROWTH_INTERVAL},
      {"inject-nonfinite", required_argument, NULL, OPT_INJECT},
      {"steps", required_argument, NULL, OPT_STEPS},
      {"warmup", required_argument, NULL, OPT_WARMUP},
      {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
      {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
      {"stop-after", required_argument, NULL, OPT_STOP_AFTER},
      {"resume", required_argument, NULL, OPT_RESUME},
      {"stats-every", required_argument, NULL, OPT_STATS_EVERY},
      {"hist-steps", required_argument, NULL, OPT_HIST_STEPS},
      {"list-params", no_argument, NULL, OPT_LIST_PARAMS},
      {"trace-ops", no_argument, NULL, OPT_TRACE_OPS},
      {"save-init", required_argument, NULL, OPT_SAVE_INIT},
      {"init-weights", required_argument, NULL, OPT_INIT_WEIGHTS},
      {"export-batches", required_argument, NULL, OPT_EXPORT},
      {"export-steps", required_argument, NULL, OPT_EXPORT_STEPS},
      {"dump-grads", required_argument, NULL, OPT_DUMP_GRADS},
      HL_CLI_LONGOPT_DEVICE,
      HL_CLI_LONGOPT_OUT,
      {"name", required_argument, NULL, OPT_NAME},
      HL_CLI_LONGOPT_QUICK,
      HL_CLI_LONGOPT_SEED,
      HL_CLI_LONGOPT_HELP,
      HL_CLI_LONGOPT_VERSION,
      {NULL, 0, NULL, 0},
  };
  memset(o, 0, sizeof *o);
  given g;
  memset(&g, 0, sizeof g);
  long long *ints[] = {&g.layers, &g.heads, &g.embd, &g.vocab, &g.seq, &g.inputs, &g.classes, &g.sort_len,
                       &g.digits, &g.batch, &g.eval_samples, &g.eval_every, &g.accum, &g.growth_interval, &g.steps, &g.stop_after,
                       &g.warmup, &g.checkpoint_every, &g.stats_every, &g.export_steps};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) *ints[i] = -1;
  double *reals[] = {&g.init_gain, &g.eval_frac, &g.lr, &g.momentum, &g.weight_decay, &g.clip_norm, &g.grad_penalty,
                     &g.init_scale};
  for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) *reals[i] = -1;
  hl_cli_common common = hl_cli_common_defaults(usage);
  const long long big = 1ll << 40;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (hl_cli_common_option(&common, c, optarg)) continue;
    switch (c) {
      case OPT_MODEL: g.model = optarg; break;
      case OPT_PRESET: g.preset = optarg; break;
      case OPT_LAYERS: g.layers = hl_parse_int("--layers", optarg, 0, 10000); break;
      case OPT_HEADS: g.heads = hl_parse_int("--heads", optarg, 0, 10000); break;
      case OPT_EMBD: g.embd = hl_parse_int("--embd", optarg, 0, 1 << 20); break;
      case OPT_VOCAB: g.vocab = hl_parse_int("--vocab", optarg, 1, 1 << 24); break;
      case OPT_SEQ: g.seq = hl_parse_int("--seq", optarg, 1, 1 << 20); break;
      case OPT_INPUTS: g.inputs = hl_parse_int("--inputs", optarg, 1, 1 << 24); break;
      case OPT_HIDDEN: g.hidden = optarg; break;
      case OPT_CLASSES: g.classes = hl_parse_int("--classes", optarg, 2, 1 << 20); break;
      case OPT_INIT_GAIN: g.init_gain = positive("--init-gain", optarg); break;
      case OPT_TASK: g.task = optarg; break;
      case OPT_TEXT: o->text_path = optarg; break;
      case OPT_SORT_LEN: g.sort_len = hl_parse_int("--sort-len", optarg, 1, 255); break;
      case OPT_DIGITS: g.digits = hl_parse_int("--digits", optarg, 2, 1 << 20); break;
      case OPT_BATCH: g.batch = hl_parse_int("--batch", optarg, 1, big); break;
      case OPT_EVAL_SAMPLES: g.eval_samples = hl_parse_int("--eval-samples", optarg, 1, big); break;
      case OPT_EVAL_EVERY: g.eval_every = hl_parse_int("--eval-every", optarg, 1, big); break;
      case OPT_EVAL_FRAC:
        g.eval_frac = hl_parse_double("--eval-frac", optarg, true);
        if (!(g.eval_frac > 0 && g.eval_frac < 1)) hl_usage_error("--eval-frac: %s is not between 0 and 1", optarg);
        break;
      case OPT_MODE: g.mode = optarg; break;
      case OPT_OPTIMIZER: g.optimizer = optarg; break;
      case OPT_SCHEDULE: g.schedule = optarg; break;
      case OPT_LR: g.lr = non_negative("--lr", optarg); break;
      case OPT_MOMENTUM:
        g.momentum = non_negative("--momentum", optarg);
        if (g.momentum >= 1) hl_usage_error("--momentum: %s must be below 1", optarg);
        break;
      case OPT_WEIGHT_DECAY: g.weight_decay = non_negative("--weight-decay", optarg); break;
      case OPT_CLIP_NORM: g.clip_norm = positive("--clip-norm", optarg); break;
      case OPT_ACCUM: g.accum = hl_parse_int("--accum", optarg, 1, 1 << 20); break;
      case OPT_GRAD_PENALTY: g.grad_penalty = positive("--grad-penalty", optarg); break;
      case OPT_INIT_SCALE:
        g.init_scale = positive("--init-scale", optarg);
        if (g.init_scale > 3.4028234663852886e38) hl_usage_error("--init-scale: %s is beyond fp32's range", optarg);
        break;
      case OPT_GROWTH_INTERVAL: g.growth_interval = hl_parse_int("--growth-interval", optarg, 1, 2147483647); break;
      case OPT_INJECT: g.inject = optarg; break;
      case OPT_STEPS: g.steps = hl_parse_int("--steps", optarg, 0, 100000000); break;
      case OPT_WARMUP: g.warmup = hl_parse_int("--warmup", optarg, 0, 100000000); break;
      case OPT_CHECKPOINT: o->checkpoint = optarg; break;
      case OPT_CHECKPOINT_EVERY: g.checkpoint_every = hl_parse_int("--checkpoint-every", optarg, 1, 100000000); break;
      case OPT_STOP_AFTER: g.stop_after = hl_parse_int("--stop-after", optarg, 1, 100000000); break;
      case OPT_RESUME: o->resume = optarg; break;
      case OPT_STATS_EVERY: g.stats_every = hl_parse_int("--stats-every", optarg, 0, 100000000); break;
      case OPT_HIST_STEPS: g.hist = optarg; break;
      case OPT_LIST_PARAMS: o->list_params = true; break;
      case OPT_TRACE_OPS: o->trace_ops = true; break;
      case OPT_SAVE_INIT: o->save_init = optarg; break;
      case OPT_INIT_WEIGHTS: o->init_weights = optarg; break;
      case OPT_EXPORT: o->export_batches = optarg; break;
      case OPT_EXPORT_STEPS: g.export_steps = hl_parse_int("--export-steps", optarg, 1, 100000000); break;
      case OPT_DUMP_GRADS: o->dump_grads = optarg; break;
      case OPT_NAME: g.name = optarg; break;
      case ':': hl_usage_error("option '%s' needs a value", argv[optind - 1]);
      default:
        if (optopt) hl_usage_error("unknown option '-%c'", optopt);
        hl_usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);
  o->device = common.device;
  o->out = common.out;
  o->quick = common.quick;
  o->seed = common.seed;

  /* ---- model and preset */
  if (!g.model || !strcmp(g.model, "gpt")) o->model = MODEL_GPT;
  else if (!strcmp(g.model, "mlp")) o->model = MODEL_MLP;
  else hl_usage_error("--model: unknown model '%s' (gpt or mlp)", g.model);
  const bool gpt = o->model == MODEL_GPT;
  o->preset = g.preset ? g.preset : "tiny";
  const bool gpt2 = !strcmp(o->preset, "gpt2"), small = !strcmp(o->preset, "small");
  if (strcmp(o->preset, "tiny") && !gpt2 && !small)
    hl_usage_error("--preset: unknown preset '%s' (tiny, small or gpt2)", o->preset);
  if ((gpt2 || small) && !gpt) hl_usage_error("--preset %s is a GPT preset (the MLP has tiny only)", o->preset);
  const bool custom_shape = g.layers >= 0 || g.heads >= 0 || g.embd >= 0 || g.vocab >= 0 || g.inputs >= 0 ||
                            g.hidden || g.classes >= 0;

  /* ---- task */
  if (o->text_path && g.task && strcmp(g.task, "text")) hl_usage_error("--text goes with --task text (or no --task)");
  if (o->text_path || (g.task && !strcmp(g.task, "text"))) o->task = TASK_TEXT;
  else if (!g.task) o->task = small ? TASK_TEXT : gpt ? TASK_SORT : TASK_CLASSIFY;
  else if (!strcmp(g.task, "sort")) o->task = TASK_SORT;
  else if (!strcmp(g.task, "classify")) o->task = TASK_CLASSIFY;
  else hl_usage_error("--task: unknown task '%s' (sort, text or classify)", g.task);
  if (gpt && o->task == TASK_CLASSIFY) hl_usage_error("--task classify is the MLP's task (--model mlp)");
  if (!gpt && o->task != TASK_CLASSIFY) hl_usage_error("--task %s needs --model gpt (the MLP classifies)", train_task_name(o->task));
  if (!gpt && (g.layers >= 0 || g.heads >= 0 || g.embd >= 0 || g.vocab >= 0 || g.seq >= 0 || g.sort_len >= 0 ||
               g.digits >= 0))
    hl_usage_error("--layers, --heads, --embd, --vocab, --seq, --sort-len and --digits are GPT options");
  if (gpt && (g.inputs >= 0 || g.hidden || g.classes >= 0))
    hl_usage_error("--inputs, --hidden and --classes are MLP options (--model mlp)");
  if (o->task != TASK_SORT && (g.sort_len >= 0 || g.digits >= 0)) hl_usage_error("--sort-len and --digits belong to --task sort");
  if (o->task != TASK_TEXT && g.eval_frac >= 0) hl_usage_error("--eval-frac belongs to --task text");
  o->sort_len = (int)PICK(g.sort_len, 8);
  o->sort_digits = (int)PICK(g.digits, 10);
  o->eval_frac = g.eval_frac >= 0 ? g.eval_frac : 0.1;

  /* ---- shapes */
  o->init_gain = g.init_gain > 0 ? g.init_gain : 1.0;
  if (gpt) {
    hl_gpt_config *c = &o->gpt;
    c->n_layer = (int)PICK(g.layers, gpt2 ? 12 : small ? 6 : 2);
    c->n_head = (int)PICK(g.heads, gpt2 ? 12 : small ? 6 : 4);
    c->n_embd = (int)PICK(g.embd, gpt2 ? 768 : small ? 384 : 64);
    o->seq = PICK(g.seq, gpt2 ? 1024 : small ? 128 : o->task == TASK_SORT ? 2 * o->sort_len : 64);
    c->block_size = (int)o->seq;
    const int task_vocab = o->task == TASK_TEXT ? 256 : o->sort_digits + 1;
    c->vocab_size = (int)PICK(g.vocab, gpt2 ? 50257 : small ? 256 : task_vocab);
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
    c->n_in = (int)PICK(g.inputs, 32);
    o->classes = (int)PICK(g.classes, 10);
    c->n_out = o->classes;
    if (g.hidden) {
      long long w[HL_MLP_MAX_HIDDEN];
      c->n_hidden = hl_parse_int_list("--hidden", g.hidden, 1, 1 << 24, w, HL_MLP_MAX_HIDDEN);
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

  /* ---- mode and optimizer */
  o->mode = hl_train_setup_find(g.mode ? g.mode : "fp32");
  if (!o->mode)
    hl_usage_error("--mode: unknown mode '%s' (fp32, amp-fp16, amp-bf16, fp16-noscale, fp16-static, fp16-master, "
                   "fp16-pure)",
                   g.mode);
  if (!g.optimizer || !strcmp(g.optimizer, "adamw")) o->optimizer = OPTIMIZER_ADAMW;
  else if (!strcmp(g.optimizer, "sgd")) o->optimizer = OPTIMIZER_SGD;
  else hl_usage_error("--optimizer: unknown optimizer '%s' (sgd or adamw)", g.optimizer);
  if (g.momentum > 0 && o->optimizer != OPTIMIZER_SGD) hl_usage_error("--momentum is SGD's (--optimizer sgd)");
  if (!g.schedule || !strcmp(g.schedule, "cosine")) o->cosine = true;
  else if (strcmp(g.schedule, "constant")) hl_usage_error("--schedule: unknown schedule '%s' (cosine or constant)", g.schedule);
  const bool adam = o->optimizer == OPTIMIZER_ADAMW;
  /* small: 3e-4, as gpt2 (halflab-train has no lr warm-up; at 6e-4 and 1e-3 its loss spikes within ten steps) */
  o->lr = g.lr >= 0 ? g.lr : adam ? (gpt ? (gpt2 || small ? 3e-4 : 3e-3) : 1e-3) : 0.1;
  o->momentum = g.momentum >= 0 ? g.momentum : 0.0;
  o->weight_decay = g.weight_decay >= 0 ? g.weight_decay : 0.0;
  o->clip_norm = g.clip_norm > 0 ? g.clip_norm : 0.0;
  o->accum = (int)PICK(g.accum, 1);
  o->grad_penalty = g.grad_penalty > 0 ? g.grad_penalty : 0.0;
  if (o->grad_penalty > 0 && gpt)
    hl_usage_error("--grad-penalty needs second derivatives, and the GPT's layer_norm is differentiable once "
                   "(docs/core.md): use --model mlp");
  const bool is_static = o->mode->scaling == HL_LOSS_SCALE_FIXED;
  o->init_scale = g.init_scale > 0 ? g.init_scale : is_static ? 1024.0 : 65536.0;
  o->growth_interval = PICK(g.growth_interval, 2000);
  if (o->mode->scaling == HL_LOSS_SCALE_NONE && (g.init_scale > 0 || g.growth_interval >= 0))
    hl_usage_error("--init-scale and --growth-interval need a mode with a loss scaler (amp-fp16, fp16-static, "
                   "fp16-master); %s has none",
                   o->mode->name);
  if (is_static && g.growth_interval >= 0) hl_usage_error("--growth-interval: fp16-static's scale never changes");

  /* ---- lengths */
  o->batch = PICK(g.batch, gpt ? (gpt2 ? 8 : small ? 16 : 64) : 256);
  o->steps = PICK(g.steps, o->quick ? (gpt2 ? 10 : small ? 20 : 100) : gpt2 ? 70 : small ? 200 : 600);
  o->warmup = PICK(g.warmup, gpt2 ? (o->quick ? 3 : 20) : small && o->quick ? 3 : 5);
  o->eval_every = (int)PICK(g.eval_every, gpt2 ? 10 : small ? (o->quick ? 10 : 50) : o->quick ? 25 : 50);
  o->eval_samples = PICK(g.eval_samples, gpt ? (gpt2 ? 16 : small ? 64 : 512) : 2048);
  o->stats_every = (int)PICK(g.stats_every, gpt2 || small ? 10 : 1);
  o->checkpoint_every = (int)PICK(g.checkpoint_every, 0);
  o->stop_after = PICK(g.stop_after, 0);
  if (o->stop_after && o->stop_after >= o->steps)
    hl_usage_error("--stop-after %lld must be below --steps %lld", (long long)o->stop_after, (long long)o->steps);
  if (o->checkpoint_every && !o->checkpoint) hl_usage_error("--checkpoint-every needs --checkpoint FILE");
  if (o->steps == 0 && !o->save_init && !o->export_batches && !o->list_params)
    hl_usage_error("--steps 0 trains nothing: give it with --save-init or --export-batches");
  if (!hl_step_set_parse(g.inject ? g.inject : "none", &o->inject)) hl_usage_error("--inject-nonfinite: %s", hl_error());
  if (hl_step_set_count(&o->inject) > 0 && o->inject.hi[o->inject.n - 1] > o->steps)
    hl_usage_error("--inject-nonfinite: step %lld is past the last step (%lld)", (long long)o->inject.hi[o->inject.n - 1],
                   (long long)o->steps);
  if (g.hist) {
    long long h[TRAIN_MAX_HIST_STEPS];
    o->n_hist = hl_parse_int_list("--hist-steps", g.hist, 1, o->steps > 0 ? o->steps : 1, h, TRAIN_MAX_HIST_STEPS);
    for (int i = 0; i < o->n_hist; i++) o->hist_steps[i] = h[i];
  } else if (o->steps > 0) {
    const int64_t pick[3] = {1, (o->steps + 1) / 2, o->steps};
    for (int i = 0; i < 3; i++)
      if (o->n_hist == 0 || o->hist_steps[o->n_hist - 1] != pick[i]) o->hist_steps[o->n_hist++] = pick[i];
  }

  /* ---- peers */
  if (o->export_batches && !gpt) hl_usage_error("--export-batches writes token batches: it needs --model gpt");
  o->export_steps = PICK(g.export_steps, o->steps);
  if (g.export_steps >= 0 && !o->export_batches) hl_usage_error("--export-steps needs --export-batches FILE");
  if (o->dump_grads && o->steps == 0) hl_usage_error("--dump-grads writes the first step's gradients: it needs --steps >= 1");
  if (o->resume && o->init_weights) hl_usage_error("--resume and --init-weights exclude each other (the checkpoint holds the weights)");

  /* ---- name */
  if (g.name) {
    if (!name_ok(g.name)) hl_usage_error("--name: '%s' must be 1 to 47 letters, digits, '-' or '.'", g.name);
    snprintf(o->name, sizeof o->name, "%s", g.name);
  } else {
    /* the task joins the name where it is not the preset's own */
    const char *task_suffix = small ? (o->task == TASK_TEXT ? "" : "-sort") : o->task == TASK_TEXT ? "-text" : "";
    snprintf(o->name, sizeof o->name, "%s%s%s", gpt ? "" : "mlp-", custom_shape ? "custom" : o->preset, task_suffix);
  }
}
