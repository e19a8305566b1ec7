/* cli.h — what every halflab program does the same way with its command
 * line: the common options, strict number parsing, the two kinds of error
 * exit, the device choice and the output folder.
 *
 *   bad input      -> one line naming the problem and a hint, exit status 2,
 *                     and nothing written;
 *   runtime failure-> one line with what failed and why, exit status 1. */
#ifndef HL_CLI_H
#define HL_CLI_H

#include <getopt.h>
#include <math.h> /* HUGE_VAL */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/mem.h" /* hl_format_bytes */
#include "formats/fatal.h"  /* hl_fatal: runtime failures, exit status 1 */
#include "kernels/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HL_EXIT_USAGE 2 /* bad input; HL_EXIT_FAILURE (1) is formats/fatal.h's */

/* Records the program name and the run metadata (command line, date). */
void hl_cli_init(const char *prog, int argc, char **argv);
const char *hl_prog(void);

_Noreturn void hl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------ the common options -- */
/* --help, --version, --device, --out, --quick and --seed, for the programs
 * that take them (each takes the ones it lists): a program puts the entries
 * it takes into its getopt_long table and hands every option getopt_long
 * returns to hl_cli_common_option() first. */

/* getopt_long's values for them: letters, free since no program has short
 * options (optstring "" or ":"); a program's own values must differ. */
enum {
  HL_CLI_OPT_HELP = 'h',
  HL_CLI_OPT_VERSION = 'v',
  HL_CLI_OPT_DEVICE = 'd',
  HL_CLI_OPT_OUT = 'o',
  HL_CLI_OPT_QUICK = 'q',
  HL_CLI_OPT_SEED = 's',
};
#define HL_CLI_LONGOPT_HELP {"help", no_argument, NULL, HL_CLI_OPT_HELP}
#define HL_CLI_LONGOPT_VERSION {"version", no_argument, NULL, HL_CLI_OPT_VERSION}
#define HL_CLI_LONGOPT_DEVICE {"device", required_argument, NULL, HL_CLI_OPT_DEVICE}
#define HL_CLI_LONGOPT_OUT {"out", required_argument, NULL, HL_CLI_OPT_OUT}
#define HL_CLI_LONGOPT_QUICK {"quick", no_argument, NULL, HL_CLI_OPT_QUICK}
#define HL_CLI_LONGOPT_SEED {"seed", required_argument, NULL, HL_CLI_OPT_SEED}

/* The largest --seed: 2^53 - 1, so that a seed written to a CSV file (as
 * an integer) reads back exactly where a reader takes numbers as doubles. */
#define HL_CLI_SEED_MAX ((1ll << 53) - 1)

typedef struct {
  const char *help;   /* the program's --help text, printed as it is */
  const char *device; /* --device as given (hl_cli_device checks it); NULL: not given, auto */
  const char *out;    /* --out as given (hl_cli_outdir makes it); NULL: the default folder */
  bool quick;         /* --quick */
  uint64_t seed;      /* --seed, 0 to HL_CLI_SEED_MAX; 1 when not given */
} hl_cli_common;

/* Nothing given yet: the defaults above, and `help` for --help. */
hl_cli_common hl_cli_common_defaults(const char *help);
/* Takes getopt_long's `opt` with its `arg` (optarg) when it is one of the
 * common options: true when it was. --help prints c->help and --version
 * "PROG (halflab VERSION, REVISION)" on stdout, then exit 0; a bad --seed
 * exits 2 (hl_usage_error). */
bool hl_cli_common_option(hl_cli_common *c, int opt, const char *arg);

/* ------------------------------------------------------------- values -- */
/* One strict reading of every number, list, size and path a program takes,
 * on its command line. Refused, with a reason:
 *   - blanks anywhere, and a '+' sign;
 *   - a '-' sign where the value cannot be negative (so "-0" for a count);
 *   - a decimal that is not 0 but rounds to 0 (1e-400: underflow), and one
 *     beyond double's range (1e999: overflow), unless the range takes inf;
 *   - a subnormal double, unless the range says subnormal_ok;
 *   - inf and nan unless the range says nonfinite_ok;
 *   - an empty list item (64,,128, a leading or trailing comma);
 *   - an empty value.
 * The hl_read_* functions say why in `why` and return false; the
 * hl_parse_* ones exit 2 with "WHAT: why" (hl_usage_error). */

/* The values a real option takes: [lo, hi], an end open when *_open. */
typedef struct {
  double lo, hi;
  bool lo_open, hi_open;
  bool subnormal_ok; /* a magnitude below DBL_MIN (2.2e-308), not 0 */
  bool nonfinite_ok; /* inf, -inf and nan */
} hl_real_range;

/* The ranges most options take: > 0; >= 0; (0, 1). Finite, normal. */
#define HL_REAL_POSITIVE ((hl_real_range){.lo = 0, .hi = HUGE_VAL, .lo_open = true})
#define HL_REAL_NON_NEGATIVE ((hl_real_range){.lo = 0, .hi = HUGE_VAL})
#define HL_REAL_FRACTION ((hl_real_range){.lo = 0, .hi = 1, .lo_open = true, .hi_open = true})

bool hl_read_int(const char *s, long long lo, long long hi, long long *out, char *why, size_t len);
/* Decimal ("0.5", "3e-4") or hex float ("0x1p-24"); "inf" and "nan" only
 * where the range takes them. */
bool hl_read_real(const char *s, hl_real_range range, double *out, char *why, size_t len);
/* "4096", "512MiB", "1.5GB", "64KiB": a whole number of bytes >= lo. */
bool hl_read_bytes(const char *s, uint64_t lo, uint64_t *out, char *why, size_t len);
/* Comma-separated integers in [lo, hi]; how many (at most max), -1 when refused. */
int hl_read_int_list(const char *s, long long lo, long long hi, long long *out, int max, char *why, size_t len);

/* Integers in [lo, hi]; "what" names the option in messages ("--count"). */
long long hl_parse_int(const char *what, const char *s, long long lo, long long hi);
double hl_parse_real(const char *what, const char *s, hl_real_range range);
/* Byte counts >= lo (at least 1). */
uint64_t hl_parse_bytes(const char *what, const char *s, uint64_t lo);
/* Comma-separated integers in [lo, hi]; returns how many (at most max). */
int hl_parse_int_list(const char *what, const char *s, long long lo, long long hi, long long *out, int max);
/* Comma-separated byte counts, each >= lo; returns how many (at most max). */
int hl_parse_bytes_list(const char *what, const char *s, uint64_t lo, uint64_t *out, int max);
/* A path option's value: refused when empty ("--out ''"); returns s. */
const char *hl_parse_path(const char *what, const char *s);

/* ------------------------------------------------------ getopt errors -- */
/* The '?' and ':' cases of getopt_long (optstring ":"), named as typed:
 * "unknown option '--foo'", "option '--quick' takes no value", "option
 * '--seed' needs a value", "option '--s' is ambiguous (--seed, --steps)". */
_Noreturn void hl_cli_getopt_error(int opt, char **argv, const struct option *longopts);

/* --device auto|cpu|cuda -> device kind; exits 2 on a malformed value and 1
 * when the device asked for is not usable. When auto falls back to the CPU,
 * the line saying why goes to `notice` (NULL: straight to stderr), for a
 * caller that still checks other input to print once that is done. */
hl_device_kind hl_cli_device(const char *request, char *notice, size_t len);

/* The output folder: `requested`, or <root>/<machine> for the device, where
 * <root> is $HALFLAB_RESULTS when set and non-empty, else results/ (relative
 * to the working directory). Proven writable by a probe file (output_guard.h:
 * root passes access() where nothing can be made), then created if missing;
 * exits 2 when it cannot be created or written, having made nothing. */
const char *hl_cli_outdir(const char *requested, hl_device_kind kind, char *buf, size_t len);
/* The same check without making anything: a folder that does not exist
 * yet passes when its nearest existing ancestor is a folder files can be
 * made in. For a program that checks more input after the output folder
 * and creates it (hl_cli_outdir) only once all of it passed. */
const char *hl_cli_outdir_check(const char *requested, hl_device_kind kind, char *buf, size_t len);

/* "124,439,808" */
const char *hl_format_thousands(uint64_t v, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
