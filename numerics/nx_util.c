/* nx_util.c — CSV files, value formatting and device comparison for the
 * subcommands of halflab-numerics. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/output_guard.h"
#include "core/base/device.h"
#include "numerics/nx.h"

const char *nx_dev_name(const nx_ctx *c, int d) { return hl_device_kind_name(c->dev[d]); }

const char *nx_dev_label(const nx_ctx *c, int d) {
  static char buf[NX_MAX_DEVICES][320];
  snprintf(buf[d], sizeof buf[d], "%s (%s)", nx_dev_name(c, d), hl_device_facts_get(c->dev[d])->name);
  return buf[d];
}

void nx_lock_table(const nx_ctx *c, const char *name) {
  enum { MAX_TABLES = 32 };
  static char locked[MAX_TABLES][64]; /* released at exit by output_guard */
  static int n_locked;
  for (int i = 0; i < n_locked; i++)
    if (!strcmp(locked[i], name)) return;
  if (n_locked == MAX_TABLES) hl_fatal("more than %d tables in one run", MAX_TABLES);
  char err[4400];
  if (!hl_out_lock_take(c->outdir, name, err, sizeof err)) {
    if (errno != EWOULDBLOCK) hl_fatal("%s", err); /* the folder passed its probe: a runtime failure */
    hl_usage_error("--out: %s: wait for it, or give another --out", err);
  }
  snprintf(locked[n_locked++], sizeof locked[0], "%s", name);
}

hl_csv *nx_csv_open(const nx_ctx *c, const hl_schema *s) {
  char err[4200];
  nx_lock_table(c, s->file);
  hl_csv *f = hl_csv_open_schema(c->outdir, NULL, s, HL_CSV_TABLE, err, sizeof err);
  if (!f) hl_fatal("%s", err);
  return f;
}

void nx_csv_close(hl_csv *f) {
  char err[4200];
  if (!hl_csv_close(f, err, sizeof err)) hl_fatal("%s", err);
}

const char *nx_show(double v, char *buf, size_t len) {
  if (isnan(v)) snprintf(buf, len, "nan");
  else if (isinf(v)) snprintf(buf, len, v < 0 ? "-inf" : "inf");
  else snprintf(buf, len, "%.9g", v);
  return buf;
}

const char *nx_hex(hl_dtype f, uint32_t bits, char *buf, size_t len) {
  int digits = (hl_format_get(f)->bits + 3) / 4;
  snprintf(buf, len, "0x%0*x", digits, bits);
  return buf;
}

const char *nx_exact(double v, int maxdig, char *buf, size_t len) {
  if (!isfinite(v) || v == 0) return nx_show(v, buf, len);
  /* glibc prints the exact binary value; drop the zeros it pads with */
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%.*e", maxdig - 1, v);
  double back = strtod(tmp, NULL);
  if (back == v) {
    char *e = strchr(tmp, 'e');
    char *m = e - 1;
    while (*m == '0') m--;
    if (*m == '.') m--;
    int exp10 = atoi(e + 1);
    char mant[512];
    snprintf(mant, sizeof mant, "%.*s", (int)(m - tmp + 1), tmp);
    /* plain notation between 1e-5 and 1e15 reads better */
    if (exp10 >= -5 && exp10 < 16) {
      int sig = 0;
      for (const char *p = mant; *p; p++) sig += *p >= '0' && *p <= '9';
      int decimals = sig - 1 - exp10;
      snprintf(buf, len, "%.*f", decimals > 0 ? decimals : 0, v);
    } else {
      snprintf(buf, len, "%se%+03d", mant, exp10);
    }
    return buf;
  }
  snprintf(buf, len, "%.17g", v);
  return buf;
}

const char *nx_pow2(double v, char *buf, size_t len) {
  int e;
  double m = frexp(fabs(v), &e);
  if (isfinite(v) && v != 0 && m == 0.5) snprintf(buf, len, "%s2^%d", v < 0 ? "-" : "", e - 1);
  else nx_show(v, buf, len);
  return buf;
}

bool nx_same_bits(hl_dtype f, uint32_t a, uint32_t b) {
  if (a == b) return true;
  return hl_format_classify(f, a) == HL_CLASS_NAN && hl_format_classify(f, b) == HL_CLASS_NAN;
}

void nx_report_agreement(const nx_ctx *c, int d, const char *what, long mismatches, long total) {
  if (mismatches == 0)
    printf("  %s on %s: the same as on %s, all %ld values bit for bit (any NaN counts as NaN)\n", what,
           nx_dev_label(c, d), nx_dev_name(c, 0), total);
  else
    printf("  %s on %s: %ld of %ld values DIFFER from %s (see the CSV's device column)\n", what, nx_dev_label(c, d),
           mismatches, total, nx_dev_name(c, 0));
}

void nx_print_wrapped(const char *first, int indent, int width, const char *text) {
  int col = printf("%s", first);
  const char *p = text;
  while (*p) {
    while (*p == ' ') p++;
    size_t word = strcspn(p, " ");
    if (!word) break;
    if (col > indent && col + 1 + (int)word > width) col = printf("\n%*s", indent, "") - 1;
    else if (col > (int)strlen(first) || (col > 0 && first[strlen(first) - 1] != ' ')) col += printf(" ");
    col += printf("%.*s", (int)word, p);
    p += word;
  }
  printf("\n");
}

void nx_heading(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("\n== ");
  vprintf(fmt, ap);
  printf(" ==\n");
  va_end(ap);
}
