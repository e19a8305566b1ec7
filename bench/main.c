/* main.c — halflab-bench: one binary, one file per subcommand. A new
 * subcommand adds its entry point to bench.h and a line to `subcommands`. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "bench/bench.h"
#include "version.h"

static const struct {
  const char *name;
  int (*main)(int argc, char **argv);
  const char *what;
} subcommands[] = {
    {"gemm", bench_gemm_main, "matrix-product TFLOP/s per precision, % of peak; --accuracy: error vs k"},
    {"bandwidth", bench_bandwidth_main, "BabelStream copy/scale/add/triad/dot GB/s and Gelem/s per precision"},
    {"mlp-step", bench_mlp_step_main, "one MLP training step: the AMP core vs direct sgemm calls (CPU)"},
    {"footprint", bench_footprint_main, "parameter bytes per dtype policy; training state per mode, largest batch"},
    {"quantize-error", bench_quantize_error_main, "fp8/fp6/fp4 and their scale rules on a GPT's tensors: shares, SQNR (CPU)"},
    {"quantize", bench_quantize_main, "fp8/MX/NVFP4 block quantizers' GB/s against the copy reference"},
};
enum { NSUB = sizeof subcommands / sizeof subcommands[0] };

static void usage(FILE *f) {
  fprintf(f,
          "Usage: halflab-bench SUBCOMMAND [OPTIONS]   (halflab-bench SUBCOMMAND --help for its options)\n"
          "\n"
          "FP16/BF16 against FP32 on this machine's GPU (or its CPU), by the method of docs/bench.md:\n"
          "results on stdout, CSV in results/<machine>/.\n"
          "\n"
          "Subcommands:\n");
  for (int i = 0; i < NSUB; i++) fprintf(f, "  %-14s %s\n", subcommands[i].name, subcommands[i].what);
  fprintf(f,
          "\n"
          "Options every subcommand takes: --device auto|cpu|cuda, --out DIR, --quick, --seed N, --reps N,\n"
          "--help, --version\n"
          "\n"
          "halflab-bench --columns-md   prints the columns of every CSV the program writes (name, unit,\n"
          "                             type, meaning, the function that computes it) as Markdown\n");
}

/* "gemm, bandwidth, mlp-step, footprint, quantize-error or quantize" */
static const char *subcommand_list(void) {
  static char list[256];
  size_t k = 0;
  for (int i = 0; i < NSUB && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i == 0 ? "" : i + 1 < NSUB ? ", " : " or ",
                          subcommands[i].name);
  return list;
}

int main(int argc, char **argv) {
  hl_cli_init("halflab-bench", argc, argv);
  if (argc < 2) hl_usage_error("no subcommand given (%s)", subcommand_list());
  const char *sub = argv[1];
  if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(sub, "--columns-md")) {
    if (argc > 2) hl_usage_error("--columns-md takes no other argument ('%s')", argv[2]);
    for (const hl_schema *const *s = bench_schemas; *s; s++) hl_schema_markdown(*s, stdout);
    return 0;
  }
  if (!strcmp(sub, "--version")) {
    printf("halflab-bench (halflab %s, %s)\n", HL_VERSION, HL_GIT_DESCRIBE);
    return 0;
  }
  for (int i = 0; i < NSUB; i++)
    if (!strcmp(sub, subcommands[i].name)) return subcommands[i].main(argc - 1, argv + 1);
  if (sub[0] == '-') hl_usage_error("'%s' before the subcommand: options follow it (halflab-bench gemm %s)", sub, sub);
  hl_usage_error("unknown subcommand '%s' (expected %s)", sub, subcommand_list());
}
