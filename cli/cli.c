/* cli.c — the common options, argument parsing and exits shared by the
 * programs. */
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/csv.h"
#include "cli/output_guard.h"
#include "cli/std_streams.h"
#include "core/base/device.h"
#include "kernels/host.h"
#include "version.h"

static const char *prog_ = "halflab";

void hl_cli_init(const char *prog, int argc, char **argv) {
  hl_std_streams_guard(); /* before anything is opened: no file takes a closed stdout's number */
  hl_out_guard_install(); /* SIGINT, SIGTERM, SIGHUP, SIGPIPE: locks and half-written files removed, then the end */
  prog_ = prog;
  hl_fatal_set_program(prog);
  (void)hl_cpu_units_get(); /* a bad HALFLAB_CPU_UNITS stops here, before any file is written */
  hl_meta_init(argc, argv);
}

const char *hl_prog(void) { return prog_; }

void hl_usage_error(const char *fmt, ...) {
  char msg[1024], line[1280];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int n = snprintf(line, sizeof line, "%s: %s (see '%s --help')\n", prog_, msg, prog_);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof line) { /* cut, but still one line */
    n = (int)sizeof line - 1;
    line[n - 1] = '\n';
  }
  hl_write_line(STDERR_FILENO, line, (size_t)n); /* one write(2): ranks' lines do not interleave */
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
    case HL_CLI_OPT_OUT: c->out = arg; return true;
    case HL_CLI_OPT_QUICK: c->quick = true; return true;
    case HL_CLI_OPT_SEED: c->seed = (uint64_t)hl_parse_int("--seed", arg, 0, HL_CLI_SEED_MAX); return true;
    default: return false;
  }
}

long long hl_parse_int(const char *what, const char *s, long long lo, long long hi) {
  if (!s || !*s) hl_usage_error("%s: empty value, expected an integer", what);
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end) hl_usage_error("%s: '%s' is not an integer", what, s);
  if (errno == ERANGE || v < lo || v > hi)
    hl_usage_error("%s: %s is out of range (%lld to %lld)", what, s, lo, hi);
  return v;
}

double hl_parse_double(const char *what, const char *s, bool finite_only) {
  if (!s || !*s) hl_usage_error("%s: empty value, expected a number", what);
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end) hl_usage_error("%s: '%s' is not a number", what, s);
  if (finite_only) {
    if (isnan(v)) hl_usage_error("%s: %s is not a finite number", what, s);
    if (isinf(v) || (errno == ERANGE && fabs(v) == HUGE_VAL))
      hl_usage_error("%s: %s is not a finite number (beyond the double range)", what, s);
  }
  return v;
}

uint64_t hl_parse_bytes(const char *what, const char *s) {
  if (!s || !*s) hl_usage_error("%s: empty value, expected a size such as 16GiB", what);
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno == ERANGE || !isfinite(v)) hl_usage_error("%s: '%s' is not a size", what, s);
  static const struct { const char *suffix; double mult; } units[] = {
      {"", 1}, {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(end, units[i].suffix) != 0) continue;
    double bytes = v * units[i].mult;
    if (!(bytes >= 1.0) || bytes > 1.8e19) hl_usage_error("%s: %s is out of range (1 byte to 16 EiB)", what, s);
    return (uint64_t)bytes;
  }
  hl_usage_error("%s: '%s' has an unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB)", what, s);
}

int hl_parse_int_list(const char *what, const char *s, long long lo, long long hi, long long *out, int max) {
  if (!s || !*s) hl_usage_error("%s: empty list", what);
  char buf[4096];
  if (strlen(s) >= sizeof buf) hl_usage_error("%s: list too long", what);
  snprintf(buf, sizeof buf, "%s", s);
  int n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (n == max) hl_usage_error("%s: more than %d values", what, max);
    out[n++] = hl_parse_int(what, tok, lo, hi);
  }
  if (n == 0) hl_usage_error("%s: empty list", what);
  return n;
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
