/* bench.h — what the subcommands of halflab-bench share: the options every
 * subcommand takes, the timing method (docs/bench.md), the device metadata,
 * the built-in peak table, memory checks before allocating, result rows held
 * until the run is complete, and the PASS/MISS expectation lines.
 *
 * One subcommand is one file (gemm.c, bandwidth.c, ...) with an entry point
 * declared here and listed in main.c. */
#ifndef HL_BENCH_H
#define HL_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/cli.h"
#include "cli/csv.h"
#include "cli/stats.h"
#include "cli/timer.h"
#include "kernels/backend.h"

/* ------------------------------------------------------- subcommands -- */

int bench_gemm_main(int argc, char **argv);
int bench_bandwidth_main(int argc, char **argv);
int bench_mlp_step_main(int argc, char **argv); /* mlp_step.c: the AMP core's cost per training step */
int bench_footprint_main(int argc, char **argv); /* footprint.c: parameter and training-state bytes */
int bench_quantize_error_main(int argc, char **argv); /* quantize_error.c: narrow formats on a GPT's tensors */
int bench_quantize_main(int argc, char **argv);  /* quantize.c: the block quantizers' GB/s */

/* ------------------------------------------------- common options -- */

/* The options every subcommand takes: cli.h's common ones and --reps.
 * bench_common_option() consumes them in a getopt_long loop (returns true
 * when it handled opt). */
typedef struct {
  hl_cli_common cli; /* cli.help: the subcommand's --help text */
  const char *reps;
} bench_common;

enum { BENCH_OPT_REPS = 1000 };
#define BENCH_COMMON_LONGOPTS                                                                                   \
  HL_CLI_LONGOPT_DEVICE, HL_CLI_LONGOPT_OUT, HL_CLI_LONGOPT_QUICK, HL_CLI_LONGOPT_SEED,                         \
      {"reps", required_argument, NULL, BENCH_OPT_REPS}, HL_CLI_LONGOPT_HELP, HL_CLI_LONGOPT_VERSION
bool bench_common_option(bench_common *c, int opt, char **argv);
/* getopt's errors (unknown option, missing value) as one-line usage errors */
_Noreturn void bench_bad_option(int opt, char **argv, const struct option *longopts);

/* The run's device and backend, with its metadata recorded (devices, SM
 * count, clocks, ECC, MIG, cache size, threads, versions). */
typedef struct {
  hl_device_kind kind;
  const hl_backend *be;
  const hl_device_facts *facts;
  const char *name;  /* "cpu" / "cuda": the CSV device column */
} bench_device;
void bench_device_open(bench_device *d, const char *request);
/* The same, but the "no usable GPU, running on the CPU" line of --device auto
 * goes to `notice`, for the caller to print once all input has been checked */
void bench_device_open_deferred(bench_device *d, const char *request, char *notice, size_t len);

/* --reps N: 1 .. 100000, or 0 (adaptive) when not given */
int bench_parse_reps(const char *s);

/* OPT's comma list s, each item one of names[0..count): chosen[i] set for
 * each one named (the rest cleared). An unknown item (KIND names what it
 * should have been, e.g. "variant") or an empty list exits 2 with one line
 * that lists the names expected. */
void bench_parse_names(const char *opt, const char *s, const char *kind, const char *const *names, int count,
                       bool *chosen);

/* ------------------------------------------------------------ timing -- */
/* Warm up at least 3 launches and while a warm-up is still
 * more than 2% faster than the one before; then repeat and report min,
 * median and max. Each sample times `inner` back-to-back launches between
 * two events (GPU) or clock reads (CPU) and divides; inner > 1 only where one
 * launch is too short for an event pair to time it well. */
typedef struct {
  int reps;           /* fixed repetitions (>0), or 0: adaptive */
  double target_s;    /* adaptive: aim for about this much timed work per point */
  int min_reps, max_reps;
  double min_sample_ms; /* GPU: make a sample at least this long (inner launches) */
  int max_warmup;
} bench_method;

/* The method for a device: GPU events, or the CPU's clock; quick shortens it. */
bench_method bench_method_for(const bench_device *d, int reps, bool quick);

typedef void (*bench_launch)(void *ctx, long iteration);

typedef struct {
  hl_stats ms; /* per launch, over the samples (of the attempt kept) */
  int samples, inner, warmups;
  int attempts; /* sample sets measured: more than 1 when other work disturbed one */
} bench_timing;

/* A point is measured again, up to BENCH_MAX_ATTEMPTS sample sets in all,
 * while its median exceeds its minimum by more than BENCH_UNSTABLE_SPREAD
 * (a sign of other work on the machine); the attempt with the lowest median
 * is kept, and the CSV says how many were needed. */
#define BENCH_MAX_ATTEMPTS 3
#define BENCH_UNSTABLE_SPREAD 1.25
bool bench_unstable(const hl_stats *ms);

bench_timing bench_time(const bench_device *d, const bench_method *m, bench_launch launch, void *ctx);
/* Describes the method for the CSV metadata */
const char *bench_method_text(const bench_device *d, const bench_method *m);

/* ---------------------------------------------------------- clock -- */
/* The CPU's clock (clock.c): measured with a dependent multiply chain,
 * accepted only within the range the machine reports. */

/* The range: [max(FLOOR, LOW_FACTOR x the lowest base clock reported),
 * HIGH_FACTOR x the highest maximum reported, else CEILING] */
#define BENCH_CLOCK_FLOOR_MHZ 400    /* no x86-64 core runs a loaded thread slower */
#define BENCH_CLOCK_CEILING_MHZ 7000 /* none runs faster (the fastest boost clocks are near 6200) */
#define BENCH_CLOCK_LOW_FACTOR 0.5
#define BENCH_CLOCK_HIGH_FACTOR 1.05
/* Test switch: the measurement replaced by this many MHz (the metadata says so) */
#define BENCH_TEST_CLOCK_MHZ "HALFLAB_TEST_CLOCK_MHZ"

/* What the machine says about its clock, in MHz; 0 = not reported */
typedef struct {
  int cpuid_base_mhz, cpuid_max_mhz; /* cpuid leaf 0x16 (Intel) */
  int cpufreq_base_mhz;              /* sysfs base_frequency (intel_pstate) */
  int cpufreq_max_mhz;               /* sysfs cpuinfo_max_freq */
  bool cpufreq_max_is_base;          /* acpi-cpufreq with boost on: cpuinfo_max_freq is the base clock */
  int model_mhz;                     /* the model name's "@ 2.10GHz" */
  int cpuinfo_mhz;                   /* /proc/cpuinfo "cpu MHz" (a VM's nominal clock, else the current one) */
} bench_clock_reports;

typedef struct {
  int measured_mhz;       /* 0: not measured */
  int low_mhz, high_mhz;  /* the range a measurement is accepted in */
  bool bounded;           /* high_mhz is the machine's maximum, not BENCH_CLOCK_CEILING_MHZ */
  bool trusted;           /* measured and within [low_mhz, high_mhz]: the peaks use it */
  char method[320];       /* how it was measured, or why not */
  char bounds[400];       /* where low_mhz and high_mhz come from */
} bench_clock;

/* Measures the clock (about 40 ms of each OpenMP thread) and judges it
 * against what this machine reports; model: the CPU's model name,
 * cpuinfo_mhz: /proc/cpuinfo's clock (hl_device_facts name, clock_mhz) */
bench_clock bench_clock_measure(const char *model, int cpuinfo_mhz);
bench_clock_reports bench_clock_reports_read(const char *model, int cpuinfo_mhz);
/* Sets c's range, its description and trusted from r and c->measured_mhz */
void bench_clock_judge(bench_clock *c, const bench_clock_reports *r);
/* "... @ 2.10GHz" -> 2100; 0 without such a figure */
int bench_clock_model_mhz(const char *model);

/* ---------------------------------------------------------- peaks -- */

typedef enum { PEAK_FP32, PEAK_TF32, PEAK_FP16, PEAK_BF16, PEAK_FP8, PEAK_HBM, PEAK_KINDS } bench_peak_kind;

typedef struct {
  bool known;           /* the device is in the built-in table */
  double value[PEAK_KINDS]; /* TFLOP/s (dense) or GB/s; 0 where the device has no such unit / unknown */
  char source[512];     /* "datasheet NVIDIA H200 SXM (sm_90) ...; scaled ..." or "peak unknown: ..." */
  bool has_clock;       /* a CPU: clock is what the peaks were scaled by (or why they are unknown) */
  bench_clock clock;
} bench_peaks;

/* The built-in datasheet figures (peak.c) for this device, scaled from SM
 * count x clock on a MIG slice or a clock-capped part (and said so). */
bench_peaks bench_peaks_for(const hl_device_facts *f, hl_device_kind kind);

/* The peaks' metadata lines: peak_source and, on a CPU, clock_measured_mhz,
 * clock_trusted, clock_method and clock_bounds_mhz */
void bench_peaks_record(const bench_peaks *p);

/* ---------------------------------------------------------- memory -- */

/* Refuses (exit 2, one line) a run needing more than the device (or, for a
 * GPU run, the host) has: "needs X GiB, device has Y GiB free". */
void bench_require_memory(const bench_device *d, const char *what, uint64_t device_bytes, uint64_t host_bytes);

/* Allocation that was checked beforehand: out of memory now is a runtime failure (exit 1). */
void *bench_alloc(const bench_device *d, size_t bytes, const char *what);
void bench_free(const bench_device *d, void *p);
void *bench_host_alloc(size_t bytes, const char *what);

/* ------------------------------------------------------ output folder -- */
/* The output folder (cli.h's hl_cli_outdir: proven writable, then made),
 * and a lock on each table of `tables` (NULL-terminated) in it, held to the
 * end of the process (cli/output_guard.h): a second run writing one of them
 * is refused (exit 2) naming the first's PID. Called once every input has
 * been accepted, before any measurement. */
const char *bench_outdir(const char *requested, hl_device_kind kind, const char *const *tables, char *buf, size_t len);
#define BENCH_TABLES(...) ((const char *const[]){__VA_ARGS__, NULL})

/* --------------------------------------------------------- schemas -- */
/* The column table of every CSV halflab-bench writes (schemas.c): each
 * writes its file's header, "# units:" line and rows (cli/schema.h). */
extern const hl_schema bench_gemm_schema, bench_gemm_expectations_schema, bench_gemm_accuracy_schema;
extern const hl_schema bench_bandwidth_schema, bench_bandwidth_host_schema, bench_bandwidth_expectations_schema;
extern const hl_schema bench_mlp_step_schema, bench_mlp_step_expectations_schema;
extern const hl_schema bench_footprint_params_schema, bench_footprint_training_schema;
extern const hl_schema bench_quantize_error_schema, bench_quantize_sweep_schema, bench_quantize_gemm_schema;
extern const hl_schema bench_quantize_schema, bench_quantize_expectations_schema;
/* All of them, NULL-terminated, in the order `halflab-bench --columns-md` prints them */
extern const hl_schema *const bench_schemas[];

/* ---------------------------------------------------------- rows -- */
/* Result rows (cli/csv.h's hl_csv_rows, each filled by hl_row_* and kept by
 * hl_csv_rows_put) are kept until the run is complete and validated, then
 * written at once: a failed run leaves no CSV behind. Writes DIR/FILE of the
 * schema (atomic table) with its units line, header and rows; exit 1 on
 * failure. The file is one of bench_outdir's tables (else it is locked now). */
void bench_rows_write(const hl_csv_rows *r, const char *dir, const hl_schema *s);

/* A measured point's timing cells: warmups, samples, inner, time_ms_min,
 * time_ms_median, time_ms_max and attempts */
void bench_row_timing(hl_row *row, const bench_timing *t);

/* ----------------------------------------------------- expectations -- */
/* What a run should show, each with its physical or peer reason: a ratio
 * held between bounds. Prints "PASS|MISS|INFO|SKIP expectation: detail" on
 * stdout and keeps a row for the schema's NAME_expectations.csv. A reason
 * is one CSV cell: no commas. */
typedef struct {
  const hl_schema *schema; /* bench_*_expectations_schema */
  hl_csv_rows rows;
  int pass, miss, skip;
} bench_expectations;
/* PASS when low <= value <= high; NAN for a bound is none on that side */
void bench_expect(bench_expectations *e, const bench_device *d, const char *name, double value, double low, double high,
                  const char *detail, const char *reason);
void bench_expect_skip(bench_expectations *e, const bench_device *d, const char *name, const char *why,
                       const char *reason);
/* A ratio reported beside the expectations that is not one of them ("INFO") */
void bench_expect_info(bench_expectations *e, const bench_device *d, const char *name, double value, const char *detail,
                       const char *reason);
/* The schema's file in dir, when there is a row */
void bench_expectations_write(bench_expectations *e, const char *dir);

/* -------------------------------------------------------- progress -- */
/* A line on stderr, only when stderr is a terminal */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
