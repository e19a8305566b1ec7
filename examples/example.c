/* example.c — command line, device choice and self-checks of the examples. */
#include "examples/example.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/engine/op_trace.h"
#include "core/engine/registry.h"

static int failures_;

example_opts example_init(const char *prog, const char *what, int argc, char **argv) {
  hl_cli_init(prog, argc, argv);
  enum { OPT_TRACE = 't' };
  static const struct option longopts[] = {HL_CLI_LONGOPT_DEVICE, HL_CLI_LONGOPT_SEED,
                                           {"trace-ops", no_argument, NULL, OPT_TRACE},
                                           HL_CLI_LONGOPT_HELP, HL_CLI_LONGOPT_VERSION, {0}};
  char *help; /* composed first: hl_cli_common_option prints it for --help */
  if (asprintf(&help,
               "Usage: %s [OPTIONS]\n\n%s\n\nOptions:\n"
               "  --device D    auto (default: the GPU when the core has kernels there, else the CPU), cpu, cuda\n"
               "  --seed N      seed of the random inputs (default 1)\n"
               "  --trace-ops   print every op with its input and output dtypes on stderr\n"
               "  --help, --version\n",
               prog, what) < 0)
    hl_fatal("out of host memory");
  hl_cli_common common = hl_cli_common_defaults(help);
  bool trace = false;
  int opt;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (hl_cli_common_option(&common, opt, optarg)) continue;
    switch (opt) {
      case OPT_TRACE: trace = true; break;
      default: hl_cli_getopt_error(opt, argv, longopts);
    }
  }
  free(help);
  if (optind < argc) hl_usage_error("unexpected argument '%s'", argv[optind]);
  const hl_device_kind device = example_start(prog, common.device ? common.device : "auto", trace);
  return (example_opts){.device = device, .seed = common.seed, .trace = trace};
}

hl_device_kind example_start(const char *prog, const char *request, bool trace) {
  hl_device_kind device = hl_cli_device(request, NULL, 0);
  char why[256];
  if (!hl_op_supported(hl_op_get(HL_OP_MM), device, HL_F32, why, sizeof why)) {
    if (strcmp(request, "auto")) hl_fatal("--device %s: %s", request, why);
    fprintf(stderr, "%s: %s; running on the CPU\n", prog, why);
    device = HL_DEVICE_CPU;
  }
  if (trace) hl_op_trace_to(stderr);
  hl_pool_push(); /* the example's temporaries, released by example_finish */
  return device;
}

void example_fail(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: CHECK FAILED: %s\n", hl_prog(), msg); /* one call, one write: lines do not interleave */
  failures_++;
}

void example_expect(const char *line, const hl_tensor *t, hl_dtype want) {
  if (!t) {
    printf("%-52s failed: %s\n", line, hl_error());
    example_fail("%s: %s", line, hl_error());
    return;
  }
  printf("%-52s %s %s\n", line, hl_dtype_name(t->dtype), hl_device_kind_name(t->device));
  if (t->dtype != want) example_fail("%s gave %s, expected %s", line, hl_dtype_name(t->dtype), hl_dtype_name(want));
}

int example_finish(void) {
  hl_pool_pop();
  fflush(stdout);
  if (failures_) {
    fprintf(stderr, "%s: %d check(s) failed\n", hl_prog(), failures_);
    return 1;
  }
  return 0;
}
