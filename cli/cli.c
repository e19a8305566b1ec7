/* cli.c — the common options, argument parsing and exits shared by the
 * programs. */
#include "cli/cli.h"
#include "cli/csv_text.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/csv.h"
#include "cli/output_guard.h"
#include "cli/std_streams.h"
#include "core/base/device.h"
#include "kernels/host.h"
#include "version.h"

static const char *prog_ = "halflab";

/* The numbers halflab reads from the environment, read as strictly as an
 * option's: a bad one stops the program before any file is written, rather
 * than being replaced by a default without a word (empty: not set). */
static void check_environment_numbers(void) {
  char why[256];
  double seconds;
  if (!hl_out_lock_wait_seconds(&seconds, why, sizeof why)) hl_usage_error("HALFLAB_LOCK_WAIT_SECONDS: %s", why);
}

void hl_cli_init(const char *prog, int argc, char **argv) {
  hl_std_streams_guard(); /* before anything is opened: no file takes a closed stdout's number */
  hl_out_guard_install(); /* SIGINT, SIGTERM, SIGHUP, SIGPIPE: locks and half-written files removed, then the end */
  prog_ = prog;
  hl_fatal_set_program(prog);
  (void)hl_cpu_units_get(); /* a bad HALFLAB_CPU_UNITS stops here, before any file is written */
  check_environment_numbers();
  hl_meta_init(argc, argv);
}

const char *hl_prog(void) { return prog_; }

void hl_usage_error(const char *fmt, ...) {
  char message[2048], one_line[4 * sizeof message], line[sizeof one_line + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  hl_text_one_line(message, one_line, sizeof one_line); /* the value quoted may hold a line break: still one line */
  const int made = snprintf(line, sizeof line, "%s: %s (see '%s --help')\n", prog_, one_line, prog_);
  hl_write_made_line(STDERR_FILENO, line, sizeof line, made); /* one write(2): ranks' lines do not interleave */
  exit(HL_EXIT_USAGE);
}

hl_cli_common hl_cli_common_defaults(const char *help) {
  return (hl_cli_common){.help = help, .seed = 1};
}

bool hl_cli_common_option(hl_cli_common *c, int opt, const char *arg) {
  switch (opt) {
    case HL_CLI_OPT_HELP: fputs(c->help, stdout); exit(0);
    case HL_CLI_OPT_VERSION: printf("%s (halflab %s, %s)\n", prog_, HL_VERSION, HL_GIT_DESCRIBE); exit(0);
    case HL_CLI_OPT_DEVICE: c->device = arg; return true;
    case HL_CLI_OPT_OUT: c->out = hl_parse_path("--out", arg); return true;
    case HL_CLI_OPT_QUICK: c->quick = true; return true;
    case HL_CLI_OPT_SEED: c->seed = (uint64_t)hl_parse_int("--seed", arg, 0, HL_CLI_SEED_MAX); return true;
    default: return false;
  }
}

/* ------------------------------------------------------------- values -- */

#define REFUSE(...) return (snprintf(why, len, __VA_ARGS__), false)

/* The sign a value may carry: none, or '-' where the range goes below 0.
 * Returns the text after it, NULL (with why) when refused. */
static const char *after_sign(const char *s, bool negative_ok, char *why, size_t len) {
  if (!s || !*s) return snprintf(why, len, "empty value"), NULL;
  for (const char *p = s; *p; p++)
    if (isspace((unsigned char)*p)) return snprintf(why, len, "'%s' holds a blank", s), NULL;
  if (*s == '+') return snprintf(why, len, "'%s': no '+' sign (write the number alone)", s), NULL;
  if (*s != '-') return s;
  if (!isalnum((unsigned char)s[1]) && s[1] != '.') /* "--out": an option where a value was missing */
    return snprintf(why, len, "'%s' is not a number", s), NULL;
  if (!negative_ok) return snprintf(why, len, "'%s': no sign (the value cannot be negative)", s), NULL;
  return s + 1;
}

bool hl_read_int(const char *s, long long lo, long long hi, long long *out, char *why, size_t len) {
  const char *digits = after_sign(s, lo < 0, why, len);
  if (!digits) return false;
  if (!*digits) REFUSE("'%s' is not an integer", s);
  for (const char *p = digits; *p; p++)
    if (!isdigit((unsigned char)*p)) REFUSE("'%s' is not an integer", s);
  errno = 0;
  const long long v = strtoll(s, NULL, 10);
  if (errno == ERANGE || v < lo || v > hi) REFUSE("%s is out of range (%lld to %lld)", s, lo, hi);
  *out = v;
  return true;
}

/* Whether the mantissa of a decimal or hex float (digits after the sign)
 * holds a digit other than 0: the number is not 0, whatever it rounds to. */
static bool mantissa_nonzero(const char *p) {
  const bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
  if (hex) p += 2;
  for (; *p && *p != (hex ? 'p' : 'e') && *p != (hex ? 'P' : 'E'); p++)
    if (*p != '0' && *p != '.') return true;
  return false;
}

/* "> 0", "0 to 1", "in (0, 1)": the range in words for a refusal */
static const char *range_words(hl_real_range r, char *buf, size_t len) {
  const bool has_lo = isfinite(r.lo), has_hi = isfinite(r.hi);
  if (has_lo && has_hi)
    snprintf(buf, len, "in %c%.17g, %.17g%c", r.lo_open ? '(' : '[', r.lo, r.hi, r.hi_open ? ')' : ']');
  else if (has_lo) snprintf(buf, len, "%s %.17g", r.lo_open ? ">" : ">=", r.lo);
  else if (has_hi) snprintf(buf, len, "%s %.17g", r.hi_open ? "<" : "<=", r.hi);
  else snprintf(buf, len, "any value");
  return buf;
}

bool hl_read_real(const char *s, hl_real_range r, double *out, char *why, size_t len) {
  const char *p = after_sign(s, r.lo < 0, why, len);
  if (!p) return false;
  const bool word = !strcasecmp(p, "inf") || !strcasecmp(p, "infinity") || !strcasecmp(p, "nan");
  if (word && !r.nonfinite_ok) REFUSE("%s is not a finite number", s);
  if (!word && !isdigit((unsigned char)p[0]) && !(p[0] == '.' && isdigit((unsigned char)p[1])))
    REFUSE("'%s' is not a number", s);
  char *end;
  errno = 0;
  const double v = strtod(s, &end);
  if (*end) REFUSE("'%s' is not a number", s);
  if (!word && isinf(v) && !r.nonfinite_ok) REFUSE("%s is beyond the double range (overflow)", s);
  if (!word && v == 0 && mantissa_nonzero(p)) REFUSE("%s is not 0 but rounds to 0 as a double (underflow)", s);
  if (v != 0 && fabs(v) < DBL_MIN && !r.subnormal_ok)
    REFUSE("%s is subnormal as a double (magnitude below %.17g)", s, DBL_MIN);
  char words[128];
  if (!isnan(v) && ((r.lo_open ? !(v > r.lo) : v < r.lo) || (r.hi_open ? !(v < r.hi) : v > r.hi)))
    REFUSE("%s is out of range (must be %s)", s, range_words(r, words, sizeof words));
  *out = v;
  return true;
}

bool hl_read_bytes(const char *s, uint64_t lo, uint64_t *out, char *why, size_t len) {
  const char *p = after_sign(s, false, why, len);
  if (!p) return false;
  /* digits, a fraction, a unit: no exponent, no hex, no inf */
  const char *unit = p;
  while (isdigit((unsigned char)*unit)) unit++;
  if (*unit == '.') do unit++; while (isdigit((unsigned char)*unit));
  if (unit == p || !isdigit((unsigned char)p[0]) || unit[-1] == '.') REFUSE("'%s' is not a size (e.g. 4096, 64KiB, 1.5GB)", s);
  static const struct { const char *suffix; double mult; } units[] = {
      {"", 1}, {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(unit, units[i].suffix) != 0) continue;
    const double bytes = strtod(p, NULL) * units[i].mult;
    if (bytes != floor(bytes)) REFUSE("%s is not a whole number of bytes", s);
    if (!(bytes >= (double)(lo ? lo : 1)) || bytes > 1.8e19)
      REFUSE("%s is out of range (%llu bytes to 16 EiB)", s, (unsigned long long)(lo ? lo : 1));
    *out = (uint64_t)bytes;
    return true;
  }
  REFUSE("'%s' has an unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s);
}

/* The items of a comma-separated list, none empty, each read by `item`
 * into out[i]; how many, -1 when refused. */
static int read_list(const char *s, int max, char *why, size_t len,
                     bool (*item)(const char *text, int i, void *ctx, char *why, size_t len), void *ctx) {
  if (!s || !*s) return snprintf(why, len, "empty list"), -1;
  int n = 0;
  for (const char *p = s;; n++) {
    const char *comma = strchr(p, ',');
    const size_t item_len = comma ? (size_t)(comma - p) : strlen(p);
    if (!item_len) return snprintf(why, len, "'%s' has an empty item (item %d)", s, n + 1), -1;
    if (n == max) return snprintf(why, len, "'%s' has more than %d values", s, max), -1;
    char text[128];
    if (item_len >= sizeof text) return snprintf(why, len, "item %d of '%s' is too long", n + 1, s), -1;
    memcpy(text, p, item_len);
    text[item_len] = '\0';
    if (!item(text, n, ctx, why, len)) return -1;
    if (!comma) return n + 1;
    p = comma + 1;
  }
}

typedef struct {
  long long lo, hi, *out;
} int_items;

static bool int_item(const char *text, int i, void *ctx, char *why, size_t len) {
  const int_items *c = ctx;
  return hl_read_int(text, c->lo, c->hi, &c->out[i], why, len);
}

int hl_read_int_list(const char *s, long long lo, long long hi, long long *out, int max, char *why, size_t len) {
  int_items c = {lo, hi, out};
  return read_list(s, max, why, len, int_item, &c);
}

typedef struct {
  uint64_t lo, *out;
} bytes_items;

static bool bytes_item(const char *text, int i, void *ctx, char *why, size_t len) {
  const bytes_items *c = ctx;
  return hl_read_bytes(text, c->lo, &c->out[i], why, len);
}

#undef REFUSE

long long hl_parse_int(const char *what, const char *s, long long lo, long long hi) {
  char why[512];
  long long v;
  if (!hl_read_int(s, lo, hi, &v, why, sizeof why)) hl_usage_error("%s: %s", what, why);
  return v;
}

double hl_parse_real(const char *what, const char *s, hl_real_range range) {
  char why[512];
  double v;
  if (!hl_read_real(s, range, &v, why, sizeof why)) hl_usage_error("%s: %s", what, why);
  return v;
}

uint64_t hl_parse_bytes(const char *what, const char *s, uint64_t lo) {
  char why[512];
  uint64_t v;
  if (!hl_read_bytes(s, lo, &v, why, sizeof why)) hl_usage_error("%s: %s", what, why);
  return v;
}

int hl_parse_int_list(const char *what, const char *s, long long lo, long long hi, long long *out, int max) {
  char why[512];
  const int n = hl_read_int_list(s, lo, hi, out, max, why, sizeof why);
  if (n < 0) hl_usage_error("%s: %s", what, why);
  return n;
}

int hl_parse_bytes_list(const char *what, const char *s, uint64_t lo, uint64_t *out, int max) {
  char why[512];
  bytes_items c = {lo, out};
  const int n = read_list(s, max, why, sizeof why, bytes_item, &c);
  if (n < 0) hl_usage_error("%s: %s", what, why);
  return n;
}

const char *hl_parse_path(const char *what, const char *s) {
  if (!s || !*s) hl_usage_error("%s: empty path", what);
  return s;
}

/* ------------------------------------------------------ getopt errors -- */

void hl_cli_getopt_error(int opt, char **argv, const struct option *longopts) {
  const char *typed = optind > 0 ? argv[optind - 1] : "";
  if (strncmp(typed, "--", 2) != 0 || !typed[2]) {
    /* no program has short options: "-x", or a cluster "-xy" that getopt is inside of */
    if (optopt && optopt != '?') hl_usage_error("unknown option '-%c'", optopt);
    hl_usage_error("unknown option '%s'", typed);
  }
  const char *eq = strchr(typed, '=');
  const size_t name_len = eq ? (size_t)(eq - typed) : strlen(typed);
  /* the options the typed name is an abbreviation of (getopt_long's rule), an exact one first */
  const struct option *match = NULL;
  char candidates[512] = "";
  size_t used = 0;
  int n = 0;
  for (const struct option *o = longopts; o && o->name; o++) {
    if (strncmp(o->name, typed + 2, name_len - 2) != 0) continue;
    if (strlen(o->name) == name_len - 2) {
      match = o, n = 1;
      break;
    }
    match = o, n++;
    if (used < sizeof candidates)
      used += (size_t)snprintf(candidates + used, sizeof candidates - used, "%s--%s", used ? ", " : "", o->name);
  }
  if (n > 1) hl_usage_error("option '%.*s' is ambiguous (%s)", (int)name_len, typed, candidates);
  if (n == 0) hl_usage_error("unknown option '%.*s'", (int)name_len, typed);
  if (opt == ':') hl_usage_error("option '--%s' needs a value", match->name);
  if (eq && match->has_arg == no_argument) hl_usage_error("option '--%s' takes no value ('%s' given)", match->name, typed);
  hl_usage_error("option '%s' is not understood", typed);
}

hl_device_kind hl_cli_device(const char *request, char *notice, size_t len) {
  hl_device_kind k;
  bool unusable;
  char err[512];
  if (notice && len) notice[0] = '\0';
  if (!hl_device_resolve(request, &k, &unusable, err, sizeof err)) {
    if (unusable) hl_fatal("%s", err);
    hl_usage_error("%s", err);
  }
  if (err[0]) { /* auto, and no usable GPU */
    char line[768];
    snprintf(line, sizeof line, "%s: no usable GPU (%s): running on the CPU\n", hl_prog(), err);
    if (notice) snprintf(notice, len, "%s", line);
    else fputs(line, stderr);
  }
  return k;
}

static const char *outdir_name(const char *requested, hl_device_kind kind, char *buf, size_t len) {
  const char *root = getenv("HALFLAB_RESULTS"); /* bench-quick points this away from results/ */
  if (requested && *requested) snprintf(buf, len, "%s", requested);
  else snprintf(buf, len, "%s/%s", root && *root ? root : "results", hl_device_slug(kind));
  return buf;
}

const char *hl_cli_outdir_check(const char *requested, hl_device_kind kind, char *buf, size_t len) {
  char err[4400];
  if (!hl_out_probe_dir(outdir_name(requested, kind, buf, len), false, err, sizeof err)) hl_usage_error("--out: %s", err);
  return buf;
}

const char *hl_cli_outdir(const char *requested, hl_device_kind kind, char *buf, size_t len) {
  char err[4400];
  if (!hl_out_probe_dir(outdir_name(requested, kind, buf, len), true, err, sizeof err)) hl_usage_error("--out: %s", err);
  return buf;
}

const char *hl_format_thousands(uint64_t v, char *buf, size_t len) {
  char raw[32];
  snprintf(raw, sizeof raw, "%llu", (unsigned long long)v);
  size_t n = strlen(raw), o = 0;
  for (size_t i = 0; i < n && o + 2 < len; i++) {
    buf[o++] = raw[i];
    if ((n - 1 - i) % 3 == 0 && i + 1 < n) buf[o++] = ',';
  }
  buf[o] = '\0';
  return buf;
}
