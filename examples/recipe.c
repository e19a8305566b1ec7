/* recipe.c — command line, MLP, data and comparisons of the training recipes. */
#include "examples/recipe.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/autograd.h"
#include "cli/cli.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/engine/op_trace.h"
#include "core/engine/ops.h"
#include "core/engine/registry.h"

/* The most --steps a recipe takes: its self-checks' tolerances are set for
 * runs this long (past some 10^4 steps the updates of a converged model are
 * so small that the fp16 recipes' relative difference from f32 exceeds them). */
#define RECIPE_MAX_STEPS 2000

/* The --help text of a recipe: the options it takes, its defaults. */
static char *recipe_help(const char *prog, const char *what, unsigned extras, int default_steps,
                         const char *default_inject) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) hl_fatal("out of host memory");
  fprintf(f,
          "Usage: %s [OPTIONS]\n\n%s\n\nOptions:\n"
          "  --device D        auto (default: the GPU when the core has kernels there, else the CPU), cpu, cuda\n"
          "  --seed N          seed of the weights and the data (default 1)\n",
          prog, what);
  if (extras & RECIPE_STEPS)
    fprintf(f, "  --steps N         optimizer steps, 1 to %d (default %d)\n", RECIPE_MAX_STEPS, default_steps);
  if (extras & RECIPE_INJECT)
    fprintf(f,
            "  --inject STEPS    make a gradient non-finite at these steps, e.g. 3,7,10-12 (default %s, where\n"
            "                    --steps reaches it)\n"
            "  --inject-kind K   inf (default), -inf or nan\n",
            default_inject ? default_inject : "none");
  if (extras & RECIPE_CHECKPOINT)
    fprintf(f, "  --dir DIR         where the checkpoint goes (default: a scratch folder, removed at the end)\n"
               "  --stop-after K    train K steps, save DIR/run.ckpt and stop (needs --dir)\n"
               "  --resume          load DIR/run.ckpt and train on to --steps (needs --dir)\n");
  fprintf(f, "  --trace-ops       print every op with its input and output dtypes on stderr\n"
             "  --help, --version\n");
  if (fclose(f) != 0) hl_fatal("out of host memory");
  return text;
}

/* The steps of `s` up to `last` */
static void drop_steps_after(hl_step_set *s, int64_t last) {
  int kept = 0;
  for (int i = 0; i < s->n; i++)
    if (s->lo[i] <= last) s->lo[kept] = s->lo[i], s->hi[kept] = s->hi[i] < last ? s->hi[i] : last, kept++;
  s->n = kept;
}

recipe_opts recipe_init(const char *prog, const char *what, unsigned extras, int default_steps,
                        const char *default_inject, int argc, char **argv) {
  hl_cli_init(prog, argc, argv);
  recipe_opts o = {.device = HL_DEVICE_CPU, .steps = default_steps, .inject_kind = HL_FAULT_INF};
  const char *inject = default_inject ? default_inject : "none";
  bool inject_given = false;
  bool trace = false;
  enum { OPT_TRACE = 256, OPT_STEPS, OPT_INJECT, OPT_INJECT_KIND, OPT_DIR, OPT_STOP, OPT_RESUME };
  static const struct option longopts[] = {HL_CLI_LONGOPT_DEVICE,
                                           HL_CLI_LONGOPT_SEED,
                                           {"trace-ops", no_argument, NULL, OPT_TRACE},
                                           {"steps", required_argument, NULL, OPT_STEPS},
                                           {"inject", required_argument, NULL, OPT_INJECT},
                                           {"inject-kind", required_argument, NULL, OPT_INJECT_KIND},
                                           {"dir", required_argument, NULL, OPT_DIR},
                                           {"stop-after", required_argument, NULL, OPT_STOP},
                                           {"resume", no_argument, NULL, OPT_RESUME},
                                           HL_CLI_LONGOPT_HELP,
                                           HL_CLI_LONGOPT_VERSION,
                                           {0}};
  char *help = recipe_help(prog, what, extras, default_steps, default_inject); /* for hl_cli_common_option */
  hl_cli_common common = hl_cli_common_defaults(help);
  int opt, index = -1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":", longopts, &index)) != -1) {
    char name[64];
    if (index >= 0) snprintf(name, sizeof name, "--%s", longopts[index].name);
    else snprintf(name, sizeof name, "%s", optind > 0 && optind <= argc ? argv[optind - 1] : "?");
    index = -1;
    unsigned needs = opt == OPT_STEPS ? RECIPE_STEPS
                     : opt == OPT_INJECT || opt == OPT_INJECT_KIND ? RECIPE_INJECT
                     : opt == OPT_DIR || opt == OPT_STOP || opt == OPT_RESUME ? RECIPE_CHECKPOINT
                                                                                : 0;
    if (needs && !(extras & needs)) hl_usage_error("option '%s' is not known to %s", name, prog);
    if (hl_cli_common_option(&common, opt, optarg)) continue;
    switch (opt) {
      case OPT_TRACE: trace = true; break;
      case OPT_STEPS: o.steps = (int)hl_parse_int("--steps", optarg, 1, RECIPE_MAX_STEPS); break;
      case OPT_INJECT: inject = optarg, inject_given = true; break;
      case OPT_INJECT_KIND:
        if (!hl_fault_kind_parse(optarg, &o.inject_kind)) hl_usage_error("--inject-kind: %s", hl_error());
        break;
      case OPT_DIR: o.dir = hl_parse_path("--dir", optarg); break;
      case OPT_STOP: o.stop_after = (int)hl_parse_int("--stop-after", optarg, 1, RECIPE_MAX_STEPS - 1); break;
      case OPT_RESUME: o.resume = true; break;
      default: hl_cli_getopt_error(opt, argv, longopts);
    }
  }
  free(help);
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);
  if (!hl_step_set_parse(inject, &o.inject)) hl_usage_error("--inject: %s", hl_error());
  if (!inject_given) drop_steps_after(&o.inject, o.steps); /* the example's default, where --steps reaches it */
  if (hl_step_set_count(&o.inject) > 0 && o.inject.hi[o.inject.n - 1] > o.steps)
    hl_usage_error("--inject: step %lld is past the last step (%d)", (long long)o.inject.hi[o.inject.n - 1], o.steps);
  if ((o.stop_after || o.resume) && !o.dir) hl_usage_error("--stop-after and --resume need --dir");
  if (o.stop_after && o.resume) hl_usage_error("--stop-after and --resume exclude each other");
  if (o.stop_after >= o.steps) hl_usage_error("--stop-after %d must be below --steps %d", o.stop_after, o.steps);
  o.seed = common.seed;
  o.device = example_start(prog, common.device ? common.device : "auto", trace);
  return o;
}

/* ------------------------------------------------------------------ MLP -- */

recipe_mlp recipe_mlp_new(const char *prefix, uint64_t seed, uint64_t stream, hl_device_kind device) {
  recipe_mlp m;
  const int64_t shapes[4][2] = {{RECIPE_HIDDEN, RECIPE_IN}, {RECIPE_HIDDEN, 0}, {RECIPE_OUT, RECIPE_HIDDEN}, {RECIPE_OUT, 0}};
  const double stds[4] = {1.0 / sqrt(RECIPE_IN), 0.05, 1.0 / sqrt(RECIPE_HIDDEN), 0.05};
  const char *names[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  for (int i = 0; i < 4; i++) {
    hl_shape s = shapes[i][1] ? HL_SHAPE(shapes[i][0], shapes[i][1]) : HL_SHAPE(shapes[i][0]);
    m.p[i] = hl_randn(s, 0.0, stds[i], seed, stream * 8 + (uint64_t)i, HL_F32, device);
    HL_CHECK(m.p[i] && hl_set_requires_grad(m.p[i], true));
    char name[128];
    snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", names[i]);
    hl_tensor_set_name(m.p[i], name);
  }
  return m;
}

void recipe_mlp_free(recipe_mlp *m) {
  for (int i = 0; i < 4; i++) hl_release(m->p[i]);
}

hl_tensor *recipe_mlp_forward(const recipe_mlp *m, hl_tensor *x) {
  hl_pool_push();
  hl_tensor *h = hl_tmp(hl_relu(hl_tmp(hl_linear(x, m->p[0], m->p[1]))));
  hl_tensor *y = hl_linear(h, m->p[2], m->p[3]);
  hl_pool_pop();
  return y;
}

void recipe_mlp_copy(recipe_mlp *dst, const recipe_mlp *src) {
  HL_NO_GRAD {
    for (int i = 0; i < 4; i++) HL_CHECK(hl_copy_(dst->p[i], src->p[i]));
  }
}

static recipe_mlp teacher;
static uint64_t teacher_seed;
static hl_device_kind teacher_device;
static bool made;

int recipe_finish(void) {
  if (made) recipe_mlp_free(&teacher);
  made = false;
  return example_finish();
}

void recipe_batch(uint64_t seed, int64_t index, int rows, hl_device_kind device, hl_tensor **x, hl_tensor **y) {
  if (!made || teacher_seed != seed || teacher_device != device) {
    if (made) recipe_mlp_free(&teacher);
    teacher = recipe_mlp_new("teacher", seed ^ 0x7eac4e2u, 0, device);
    teacher_seed = seed, teacher_device = device, made = true;
  }
  *x = hl_randn(HL_SHAPE(rows, RECIPE_IN), 0.0, 1.0, seed, 1000 + (uint64_t)index, HL_F32, device);
  HL_CHECK(*x);
  HL_NO_GRAD { *y = recipe_mlp_forward(&teacher, *x); }
  HL_CHECK(*y);
}

/* -------------------------------------------------------------- compare -- */

float *recipe_values(hl_tensor *const *t, int n, int64_t *count) {
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += hl_numel(t[i]);
  float *v = malloc((size_t)(total ? total : 1) * sizeof *v);
  if (!v) hl_fatal("out of host memory");
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    HL_CHECK(hl_read_f32(t[i], v + at));
    at += hl_numel(t[i]);
  }
  *count = total;
  return v;
}

bool recipe_any_nonfinite(hl_tensor *const *t, int n) {
  for (int i = 0; i < n; i++) {
    if (!t[i]) continue;
    int64_t c;
    float *v = recipe_values(&t[i], 1, &c);
    bool bad = false;
    for (int64_t j = 0; j < c && !bad; j++) bad = !isfinite(v[j]);
    free(v);
    if (bad) return true;
  }
  return false;
}

double recipe_update_error(const float *w0, const recipe_mlp *a, const recipe_mlp *b) {
  int64_t n;
  float *wa = recipe_values(a->p, 4, &n), *wb = recipe_values(b->p, 4, &n);
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < n; i++) {
    double ua = (double)wa[i] - w0[i], ub = (double)wb[i] - w0[i];
    diff += (ua - ub) * (ua - ub);
    norm += ub * ub;
  }
  free(wa);
  free(wb);
  return norm > 0 ? sqrt(diff / norm) : INFINITY;
}
