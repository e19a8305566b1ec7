/* main.c — halflab-numerics: the command line. Every option is read and
 * checked before anything is created; then the subcommand runs its probes on
 * each chosen device and writes its CSV files. */
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/csv.h"
#include "core/base/device.h"
#include "numerics/nx.h"

static const char usage_text[] =
    "Usage: halflab-numerics SUBCOMMAND [OPTIONS]\n"
    "\n"
    "What half precision does to numbers: overflow, updates that vanish, subnormals.\n"
    "Each probe runs on the CPU and, when one is usable, on the GPU with its own half\n"
    "arithmetic; tables go to stdout, CSV files to the output folder.\n"
    "\n"
    "Subcommands:\n"
    "  formats     fields, range and precision of fp32, tf32, fp16, bf16, fp8, fp6, fp4 and\n"
    "              the e8m0 block scale, with their bit layouts (formats.csv);\n"
    "              with --value X: X in every format, bit by bit (formats_value.csv)\n"
    "  overflow    N copies of V summed seven ways: where fp16 overflows or stops growing\n"
    "              (overflow.csv, overflow_trajectory.csv)\n"
    "  absorption  1 + 0.0001, updates too small to move a weight, the lost-update experiment,\n"
    "              the harmonic series (absorption.csv, absorption_sweep.csv, lost_update.csv,\n"
    "              harmonic.csv)\n"
    "  subnormal   the ladders to zero (fp16, bf16, fp8, fp6, fp4), loss scaling, flush-to-zero\n"
    "              (subnormal_ladder.csv, loss_scale.csv, loss_scale_distribution.csv, ftz.csv)\n"
    "  tour        the classic demonstrations in order, for a live class (tour.csv,\n"
    "              tour_fp8.csv)\n"
    "  all         formats, overflow, absorption, subnormal and tour\n"
    "\n"
    "Options:\n"
    "  --value X     formats: any number, also inf, nan, subnormal doubles and hex floats\n"
    "                such as 0x1p-24; overflow: the value summed, finite in fp32 (default 16).\n"
    "                A decimal that is not 0 but rounds to 0 as a double (1e-400) is refused\n"
    "  --count N     overflow: how many copies, 1 to 2147483647 (default 4096). Without\n"
    "                --count and --value, overflow also runs two contrasts\n"
    "                (4000 x 16, 4096 x 1)\n"
    "  --list        tour: list the demonstrations, numbered and named, and run none\n"
    "  --only N      tour: show demonstration N alone (its number or name from --list);\n"
    "                it writes no file\n"
    "  --step        tour: pause after each demonstration until Enter (q then Enter\n"
    "                stops), when stdin is a terminal\n"
    "  --device D    auto (default: the CPU, and the GPU as well when one is usable), cpu, cuda\n"
    "  --out DIR     output folder (default results/<machine>/, named after the GPU if used)\n"
    "  --quick       smaller sweeps and samples\n"
    "  --seed N      seed of the random streams (stochastic rounding, gradient sample); default 1\n"
    "  --columns-md  print the columns of every CSV the program writes, as Markdown (unit, type,\n"
    "                meaning, where each is computed), and write no file; no subcommand\n"
    "  --help        this text\n"
    "  --version     version and git revision\n";

typedef enum { SUB_FORMATS, SUB_OVERFLOW, SUB_ABSORPTION, SUB_SUBNORMAL, SUB_TOUR, SUB_ALL, SUB_NONE } subcommand;
static const char *sub_names[] = {"formats", "overflow", "absorption", "subnormal", "tour", "all"};

static subcommand parse_subcommand(const char *s) {
  for (int i = 0; i < SUB_NONE; i++)
    if (!strcmp(s, sub_names[i])) return (subcommand)i;
  hl_usage_error("unknown subcommand '%s' (expected formats, overflow, absorption, subnormal, tour or all)", s);
}

/* --device auto: the CPU always, the GPU too when usable. `notice` gets the
 * line saying why there is no GPU, printed once the output folder is known
 * to be usable, so that a bad --out still yields a one-line error. */
static void choose_devices(const char *request, nx_ctx *c, char *notice, size_t len) {
  c->ndev = 0;
  notice[0] = '\0';
  if (!request || !strcmp(request, "auto")) {
    char why[256];
    c->dev[c->ndev++] = HL_DEVICE_CPU;
    if (hl_device_available(HL_DEVICE_CUDA, why, sizeof why)) c->dev[c->ndev++] = HL_DEVICE_CUDA;
    else snprintf(notice, len, "%s: no usable GPU (%s): the probes run on the CPU only\n", hl_prog(), why);
  } else {
    c->dev[c->ndev++] = hl_cli_device(request, NULL, 0);
  }
  for (int d = 0; d < c->ndev; d++) {
    const hl_backend *b = hl_backend_for(c->dev[d]);
    if (!b || !b->probe) hl_fatal("the %s backend of this build has no probe kernels", hl_device_kind_name(c->dev[d]));
    c->k[d] = b->probe;
  }
}

/* The tables each subcommand writes (its usage text lists them), in the
 * order of the usage text. */
static const hl_schema *const tables[SUB_ALL][5] = {
    [SUB_FORMATS] = {&nx_formats_schema, &nx_formats_value_schema},
    [SUB_OVERFLOW] = {&nx_overflow_schema, &nx_overflow_trajectory_schema},
    [SUB_ABSORPTION] = {&nx_absorption_schema, &nx_absorption_sweep_schema, &nx_lost_update_schema,
                        &nx_harmonic_schema},
    [SUB_SUBNORMAL] = {&nx_subnormal_ladder_schema, &nx_loss_scale_schema, &nx_loss_scale_distribution_schema,
                       &nx_ftz_schema},
    [SUB_TOUR] = {&nx_tour_schema, &nx_tour_fp8_schema},
};

/* The options of `tour` alone, checked before anything is made. --list
 * prints the list and ends the run (exit 0); --only and --list write no
 * file, so they take no --out. */
static void tour_options(subcommand sub, bool list, const char *only_s, bool step, const char *out, nx_tour_opts *o) {
  const char *given = list ? "--list" : only_s ? "--only" : step ? "--step" : NULL;
  if (given && sub != SUB_TOUR) hl_usage_error("%s applies to 'tour' only, not '%s'", given, sub_names[sub]);
  if (list && (only_s || step))
    hl_usage_error("--list runs no demonstration: it takes no %s", only_s ? "--only" : "--step");
  if (only_s) {
    o->only = nx_tour_demo(only_s);
    if (!o->only)
      hl_usage_error("--only: '%s' is no demonstration of the tour (1 to %d or a name; tour --list shows them)", only_s,
                     NX_TOUR_DEMOS);
  }
  if ((list || only_s) && out) hl_usage_error("--out: 'tour %s' writes no file", list ? "--list" : "--only");
  o->step = step;
  if (list) {
    nx_tour_list();
    exit(0);
  }
}

/* --columns-md: every table's section of docs/columns.md. */
static void print_columns_markdown(void) {
  for (int s = 0; s < SUB_ALL; s++)
    for (int i = 0; i < 5 && tables[s][i]; i++) hl_schema_markdown(tables[s][i], stdout);
}

/* The tables a run writes, locked before it starts (formats_value.csv only
 * with --value). */
static void lock_tables(const nx_ctx *c, subcommand sub, bool formats_value) {
  for (int s = 0; s < SUB_ALL; s++)
    if (sub == SUB_ALL || sub == (subcommand)s)
      for (int i = 0; i < 5 && tables[s][i]; i++)
        if (tables[s][i] != &nx_formats_value_schema || formats_value) nx_lock_table(c, tables[s][i]->file);
}

int main(int argc, char **argv) {
  hl_cli_init("halflab-numerics", argc, argv);
  enum { OPT_VALUE = 256, OPT_COUNT, OPT_COLUMNS_MD, OPT_LIST, OPT_ONLY, OPT_STEP };
  static const struct option longopts[] = {
      {"value", required_argument, NULL, OPT_VALUE}, {"count", required_argument, NULL, OPT_COUNT},
      {"columns-md", no_argument, NULL, OPT_COLUMNS_MD}, {"list", no_argument, NULL, OPT_LIST},
      {"only", required_argument, NULL, OPT_ONLY},     {"step", no_argument, NULL, OPT_STEP},
      HL_CLI_LONGOPT_DEVICE,                         HL_CLI_LONGOPT_OUT,
      HL_CLI_LONGOPT_QUICK,                          HL_CLI_LONGOPT_SEED,
      HL_CLI_LONGOPT_HELP,                           HL_CLI_LONGOPT_VERSION,
      {NULL, 0, NULL, 0}};
  hl_cli_common common = hl_cli_common_defaults(usage_text);
  const char *value_s = NULL, *count_s = NULL, *seed_s = NULL, *only_s = NULL;
  bool columns_md = false, list = false, step = false;
  opterr = 0; /* our own one-line messages */
  int opt;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (opt == HL_CLI_OPT_SEED) { /* checked with the other values, once the subcommand is known */
      seed_s = optarg;
      continue;
    }
    if (hl_cli_common_option(&common, opt, optarg)) continue;
    switch (opt) {
      case OPT_VALUE: value_s = optarg; break;
      case OPT_COUNT: count_s = optarg; break;
      case OPT_COLUMNS_MD: columns_md = true; break;
      case OPT_LIST: list = true; break;
      case OPT_ONLY: only_s = optarg; break;
      case OPT_STEP: step = true; break;
      default: hl_cli_getopt_error(opt, argv, longopts);
    }
  }
  if (columns_md) {
    if (optind < argc) hl_usage_error("--columns-md takes no subcommand ('%s' given)", argv[optind]);
    print_columns_markdown();
    return 0;
  }
  if (optind >= argc) hl_usage_error("no subcommand given (formats, overflow, absorption, subnormal, tour or all)");
  subcommand sub = parse_subcommand(argv[optind]);
  if (optind + 1 < argc) hl_usage_error("unexpected argument '%s'", argv[optind + 1]);

  /* every value checked before anything is created */
  if (seed_s) hl_cli_common_option(&common, HL_CLI_OPT_SEED, seed_s);
  nx_ctx c = {0};
  c.quick = common.quick;
  c.seed = common.seed;
  if (count_s && sub != SUB_OVERFLOW) hl_usage_error("--count applies to 'overflow' only, not '%s'", sub_names[sub]);
  if (value_s && sub != SUB_OVERFLOW && sub != SUB_FORMATS)
    hl_usage_error("--value applies to 'formats' and 'overflow' only, not '%s'", sub_names[sub]);
  nx_overflow_opts ov = {.count = 4096, .value = 16.0};
  double formats_value = 0;
  if (sub == SUB_OVERFLOW) {
    if (count_s) ov.count = (uint64_t)hl_parse_int("--count", count_s, 1, 2147483647), ov.has_count = true;
    if (value_s) {
      ov.value = hl_parse_real("--value", value_s, (hl_real_range){.lo = -HUGE_VAL, .hi = HUGE_VAL, .subnormal_ok = true});
      if (fabs(ov.value) > FLT_MAX)
        hl_usage_error("--value: %s is beyond fp32's range (largest finite %.9g)", value_s, (double)FLT_MAX);
      ov.has_value = true;
    }
  }
  if (sub == SUB_FORMATS && value_s) formats_value = hl_parse_real(
      "--value", value_s, (hl_real_range){.lo = -HUGE_VAL, .hi = HUGE_VAL, .subnormal_ok = true, .nonfinite_ok = true});
  nx_tour_opts tour = {0};
  tour_options(sub, list, only_s, step, common.out, &tour);

  char notice[512];
  choose_devices(common.device, &c, notice, sizeof notice);
  hl_device_kind primary = c.dev[c.ndev - 1]; /* the GPU names the folder when it is used */
  char outdir[4096];
  if (!tour.only) { /* tour --only writes nothing */
    c.outdir = hl_cli_outdir(common.out, primary, outdir, sizeof outdir);
    lock_tables(&c, sub, sub == SUB_FORMATS && value_s);
  }
  fputs(notice, stderr);
  hl_meta_set_devices(c.dev, c.ndev);
  hl_meta_set("seed", "%llu", (unsigned long long)c.seed);
  if (c.quick) hl_meta_set("quick", "yes");

  switch (sub) {
    case SUB_FORMATS: return nx_formats(&c, value_s ? &formats_value : NULL);
    case SUB_OVERFLOW: return nx_overflow(&c, &ov);
    case SUB_ABSORPTION: return nx_absorption(&c);
    case SUB_SUBNORMAL: return nx_subnormal(&c);
    case SUB_TOUR: return nx_tour(&c, &tour);
    default: {
      int rc = nx_formats(&c, NULL);
      if (!rc) rc = nx_overflow(&c, &ov);
      if (!rc) rc = nx_absorption(&c);
      if (!rc) rc = nx_subnormal(&c);
      if (!rc) rc = nx_tour(&c, &tour);
      if (!rc) fprintf(stderr, "%s: CSV files written to %s/\n", hl_prog(), c.outdir);
      return rc;
    }
  }
}
