/* test_numerics_e2e.c — suite e2e: halflab-numerics run end to end on the
 * CPU, its CSV files read back and checked against the values that
 * docs/numerics.md gives. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/format.h"
#include "tests/support/hltest.h"

static const char *prog(void) { return hl_test_prog("halflab-numerics"); }

/* Runs `halflab-numerics ARGS --device cpu --out DIR`; returns DIR. */
static char *run_ok(const char *args, hl_run_result *out) {
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("'%s' %s --device cpu --out '%s'", prog(), args, dir);
  if (out) *out = r;
  else hl_run_free(&r);
  return dir;
}

static hl_table *read_csv(const char *dir, const char *name) {
  const char *path = hl_path(dir, name);
  hl_table *t = hl_table_read(path);
  if (!t) fail_msg("%s is missing or malformed", path);
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  assert_false(hl_file_exists(tmp)); /* renamed into place */
  return t;
}

/* The columns schema FILE lists in `halflab-numerics --columns-md`: its
 * header ("a,b,c") and the value of its "# units:" line ("a=1,b=bits"). */
static void schema_of(const char *file, char *header, size_t hlen, char *units, size_t ulen) {
  hl_run_result r = hl_run_ok("'%s' --columns-md", prog());
  char heading[128];
  snprintf(heading, sizeof heading, "## %s\n", file);
  const char *p = strstr(r.out, heading);
  if (!p) fail_msg("--columns-md has no section for %s", file);
  size_t hk = 0, uk = 0;
  header[0] = units[0] = '\0';
  for (p = strchr(p, '\n') + 1; *p && strncmp(p, "## ", 3); p = strchr(p, '\n') + 1) {
    char name[64], unit[32];
    if (sscanf(p, "| `%63[^`]` | %31[^ |] |", name, unit) == 2) {
      hk += (size_t)snprintf(header + hk, hlen - hk, "%s%s", hk ? "," : "", name);
      if (strcmp(unit, "-")) uk += (size_t)snprintf(units + uk, ulen - uk, "%s%s=%s", uk ? "," : "", name, unit);
    }
    if (!strchr(p, '\n')) break;
  }
  hl_run_free(&r);
  if (!hk) fail_msg("--columns-md lists no column for %s", file);
}

/* The file's header is its schema's, and its "# units:" line gives the
 * schema's units. */
static void assert_schema_followed(const hl_table *t, const char *file) {
  char want_header[4096], want_units[4096], header[4096] = "", units_line[4200];
  schema_of(file, want_header, sizeof want_header, want_units, sizeof want_units);
  size_t k = 0;
  for (int i = 0; i < t->ncols; i++) k += (size_t)snprintf(header + k, sizeof header - k, "%s%s", i ? "," : "", t->cols[i]);
  if (strcmp(header, want_header)) fail_msg("%s: header\n  %s\nand not its schema's\n  %s", file, header, want_header);
  snprintf(units_line, sizeof units_line, "# units: %s", want_units);
  const char *at = strstr(t->meta, units_line);
  if (!at || (at[strlen(units_line)] != '\n' && at[strlen(units_line)] != '\0'))
    fail_msg("%s: no metadata line \"%s\"", file, units_line);
}

/* Row matching the NULL-terminated (column, value) pairs; fails if none. */
#define ROW(t, ...) row_or_fail((t), hl_table_find((t), __VA_ARGS__, NULL), #__VA_ARGS__)
static int row_or_fail(const hl_table *t, int row, const char *what) {
  if (row < 0) fail_msg("no row with %s", what);
  return row;
}

/* ------------------------------------------------------------ overflow -- */

static void test_overflow_spec_values(void **state) {
  (void)state;
  hl_run_result r;
  char *dir = run_ok("overflow", &r);
  hl_table *t = read_csv(dir, "overflow.csv");
  static const struct { const char *strategy, *result, *lost, *overflow; } want[] = {
      {"fp16_sequential", "32768", "2049", ""}, {"fp16_pairwise", "inf", "", "4096"},
      {"fp16_kahan", "nan", "", "4095"},        {"fp32_acc_fp16_result", "inf", "", "4096"},
      {"fp32", "65536", "", ""},                {"bf16_sequential", "4096", "257", ""},
      {"bf16_pairwise", "65536", "", ""}}; /* empty: the event never happened */
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int row = ROW(t, "device", "cpu", "count", "4096", "value", "16", "strategy", want[i].strategy);
    double got = hl_table_num(t, row, "result");
    if (!strcmp(want[i].result, "nan")) assert_true(isnan(got));
    else assert_true(got == strtod(want[i].result, NULL));
    assert_string_equal(hl_table_get(t, row, "first_lost_add"), want[i].lost);
    assert_string_equal(hl_table_get(t, row, "first_overflow_add"), want[i].overflow);
    if (!*want[i].lost) assert_string_equal(hl_table_get(t, row, "total_at_lost"), "");
    if (!*want[i].overflow) assert_string_equal(hl_table_get(t, row, "total_before_overflow"), "");
    assert_true(hl_table_num(t, row, "exact_sum") == 65536.0);
  }
  assert_string_equal(hl_table_get(t, ROW(t, "count", "4096", "value", "16", "strategy", "fp16_kahan"), "first_nan_add"),
                      "4096");
  /* the contrasts that avoid overflow */
  static const struct { const char *count, *value, *strategy, *result; } contrast[] = {
      {"4000", "16", "fp16_sequential", "32768"}, {"4000", "16", "fp16_pairwise", "64000"},
      {"4000", "16", "fp32", "64000"},            {"4000", "16", "fp16_kahan", "64000"},
      {"4096", "1", "fp16_sequential", "2048"},   {"4096", "1", "bf16_sequential", "256"},
      {"4096", "1", "fp16_pairwise", "4096"},     {"4096", "1", "fp32", "4096"}};
  for (size_t i = 0; i < sizeof contrast / sizeof contrast[0]; i++) {
    int row = ROW(t, "count", contrast[i].count, "value", contrast[i].value, "strategy", contrast[i].strategy);
    assert_string_equal(hl_table_get(t, row, "result"), contrast[i].result);
  }
  hl_table_free(t);

  t = read_csv(dir, "overflow_trajectory.csv");
  assert_int_equal(t->nrows, 7 * 4097);
  assert_string_equal(hl_table_get(t, ROW(t, "strategy", "fp16_sequential", "adds", "2048"), "running_sum"), "32768");
  assert_string_equal(hl_table_get(t, ROW(t, "strategy", "fp16_sequential", "adds", "4096"), "running_sum"), "32768");
  assert_string_equal(hl_table_get(t, ROW(t, "strategy", "fp32", "adds", "4096"), "running_sum"), "65536");
  assert_string_equal(hl_table_get(t, ROW(t, "strategy", "fp16_pairwise", "adds", "4095"), "running_sum"), "65520");
  assert_string_equal(hl_table_get(t, ROW(t, "strategy", "fp16_pairwise", "adds", "4096"), "running_sum"), "inf");
  hl_table_free(t);

  /* the teacher reads why on stdout */
  assert_non_null(strstr(r.out, "element 2049 is lost: 32768 + 16 is a tie"));
  assert_non_null(strstr(r.out, "inf - inf = NaN"));
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void test_overflow_user_case(void **state) {
  (void)state;
  char *dir = run_ok("overflow --count 300 --value 1", NULL);
  hl_table *t = read_csv(dir, "overflow.csv");
  assert_int_equal(t->nrows, 7); /* no contrasts when the user names a case */
  int row = ROW(t, "strategy", "bf16_sequential");
  assert_string_equal(hl_table_get(t, row, "result"), "256");
  assert_string_equal(hl_table_get(t, row, "first_lost_add"), "257");
  assert_string_equal(hl_table_get(t, ROW(t, "strategy", "fp16_sequential"), "result"), "300");
  hl_table_free(t);
  t = read_csv(dir, "overflow_trajectory.csv");
  assert_int_equal(t->nrows, 7 * 301);
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);
}

/* ---------------------------------------------------------- absorption -- */

static const hl_dtype narrow_formats[] = {HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
#define NNARROW ((int)(sizeof narrow_formats / sizeof narrow_formats[0]))

/* 1 + b in the narrow formats, read back: the threshold cases against
 * format.c's rounding of the exact sum, and every sweep row the same way:
 * u rounded to the format, then 1 + that rounded once. */
static void check_narrow_absorption(const char *dir) {
  hl_table *t = read_csv(dir, "absorption.csv");
  for (int fi = 0; fi < NNARROW; fi++) {
    const hl_format_info *info = hl_format_get(narrow_formats[fi]);
    const char *name = hl_dtype_format_name(info->id);
    int row = ROW(t, "case", "1+u", "format", name);
    assert_true(hl_table_num(t, row, "b") == info->unit_roundoff);
    double b = hl_table_num(t, row, "b_stored"), want = hl_format_round(info->id, 1.0 + b, HL_OVERFLOW_IEEE);
    assert_true(b == hl_format_round(info->id, info->unit_roundoff, HL_OVERFLOW_IEEE));
    if (hl_table_num(t, row, "result") != want) fail_msg("%s: 1 + %g gives %s, not %g", name, b, hl_table_get(t, row, "result"), want);
    row = ROW(t, "case", "1+next_above_u", "format", name);
    b = hl_table_num(t, row, "b_stored");
    assert_true(b > info->unit_roundoff && b == hl_format_round(info->id, b, HL_OVERFLOW_IEEE)); /* a value of the format */
    want = hl_format_round(info->id, 1.0 + b, HL_OVERFLOW_IEEE);
    assert_true(want > 1.0 && hl_table_num(t, row, "result") == want);
    row = ROW(t, "case", "1+0.0001", "format", name);
    assert_true(hl_table_num(t, row, "result") == 1.0); /* every narrow format loses 0.0001 */
  }
  hl_table_free(t);

  t = read_csv(dir, "absorption_sweep.csv");
  int checked[NNARROW] = {0};
  for (int i = 0; i < t->nrows; i++)
    for (int fi = 0; fi < NNARROW; fi++) {
      const hl_format_info *info = hl_format_get(narrow_formats[fi]);
      if (strcmp(hl_table_get(t, i, "format"), hl_dtype_format_name(info->id))) continue;
      double u = hl_table_num(t, i, "update"), eff = hl_table_num(t, i, "effective_update");
      double stored = hl_format_round(info->id, u, HL_OVERFLOW_IEEE);
      assert_true(hl_table_num(t, i, "update_stored") == stored);
      if (eff != hl_format_round(info->id, 1.0 + stored, HL_OVERFLOW_IEEE) - 1.0)
        fail_msg("%s: 1 + %g moved by %g", info->long_name, u, eff);
      if (u < info->unit_roundoff / 2) assert_true(eff == 0); /* below the threshold: lost */
      if (u >= info->epsilon) assert_true(eff > 0);           /* a whole spacing: kept */
      checked[fi]++;
    }
  for (int fi = 0; fi < NNARROW; fi++) assert_int_equal(checked[fi], 30 * 16 + 1);
  hl_table_free(t);
}

static void test_absorption_spec_values(void **state) {
  (void)state;
  char *dir = run_ok("absorption", NULL);
  hl_table *t = read_csv(dir, "absorption.csv");
  int row = ROW(t, "case", "1+0.0001", "format", "fp16");
  assert_true(fabs(hl_table_num(t, row, "b_stored") - 1.00016594e-4) < 1e-12); /* 0x068E */
  assert_string_equal(hl_table_get(t, row, "result_hex"), "0x3c00");           /* 1 + 0.0001 = 1 */
  assert_string_equal(hl_table_get(t, ROW(t, "case", "1+0.0001", "format", "bf16"), "result"), "1");
  assert_true(hl_table_num(t, ROW(t, "case", "1+0.0001", "format", "fp32"), "result") == 1.00010001659393310546875);
  row = ROW(t, "case", "1+u", "format", "fp16");
  assert_true(hl_table_num(t, row, "b") == 0x1p-11);
  assert_string_equal(hl_table_get(t, row, "result"), "1"); /* the tie goes to even */
  row = ROW(t, "case", "1+next_above_u", "format", "fp16");
  assert_true(fabs(hl_table_num(t, row, "b_stored") - 4.88758e-4) < 1e-9); /* 0x1001 */
  assert_string_equal(hl_table_get(t, row, "result_hex"), "0x3c01");
  assert_string_equal(
      hl_table_get(t, ROW(t, "case", "1+(2^-11+2^-34)", "rounding", "fp32_then_round"), "result"), "1");
  assert_string_equal(hl_table_get(t, ROW(t, "case", "1+(2^-11+2^-34)", "rounding", "rounded_once"), "result"),
                      "1.0009765625");
  assert_true(hl_table_num(t, ROW(t, "case", "1.9+1.9/2100"), "change") == 0x1p-10);
  hl_table_free(t);

  t = read_csv(dir, "harmonic.csv");
  row = ROW(t, "format", "fp16");
  assert_string_equal(hl_table_get(t, row, "stall_n"), "513");
  assert_string_equal(hl_table_get(t, row, "sum"), "7.0859375");
  row = ROW(t, "format", "bf16");
  assert_string_equal(hl_table_get(t, row, "stall_n"), "65");
  assert_string_equal(hl_table_get(t, row, "sum"), "5.0625");
  hl_table_free(t);

  t = read_csv(dir, "lost_update.csv");
  assert_string_equal(hl_table_get(t, ROW(t, "strategy", "fp16", "step", "10000"), "weight"), "1");
  assert_string_equal(hl_table_get(t, ROW(t, "strategy", "bf16", "step", "10000"), "weight"), "1");
  static const struct { const char *strategy; double tolerance; } reach2[] = {
      {"fp32_master", 1e-3}, {"fp16_kahan", 0x1p-9}, {"fp16_stochastic", 0.25}};
  for (size_t i = 0; i < 3; i++) {
    row = ROW(t, "strategy", reach2[i].strategy, "step", "10000");
    double w = hl_table_num(t, row, "weight"), exact = hl_table_num(t, row, "exact_weight");
    assert_true(fabs(exact - 2.00016594) < 1e-7);
    if (fabs(w - exact) > reach2[i].tolerance) fail_msg("%s reached %g, not about 2", reach2[i].strategy, w);
  }
  hl_table_free(t);

  /* the sweep: fp16 loses every u up to 2^-11, then moves in steps of 2^-10 */
  t = read_csv(dir, "absorption_sweep.csv");
  int checked = 0;
  for (int i = 0; i < t->nrows; i++) {
    if (strcmp(hl_table_get(t, i, "format"), "fp16")) continue;
    double u = hl_table_num(t, i, "update"), eff = hl_table_num(t, i, "effective_update");
    double stored = hl_table_num(t, i, "update_stored"); /* u rounded to fp16 first */
    if (u <= 0x1p-11) assert_true(eff == 0);
    else assert_true(eff > 0 && fmod(eff, 0x1p-10) == 0 && fabs(eff - stored) <= 0x1p-11);
    checked++;
  }
  assert_int_equal(checked, 30 * 16 + 1);
  hl_table_free(t);
  check_narrow_absorption(dir);
  hl_rmtree(dir);
  free(dir);
}

/* ----------------------------------------------------------- subnormal -- */

/* Each narrow format's ladder: every value as format.c rounds it, the
 * powers of two classed by the format's smallest normal and subnormal, the
 * rungs down to two octaves below the smallest subnormal; e8m0 has none. */
static void check_narrow_ladders(const hl_table *t) {
  for (int fi = 0; fi < NNARROW; fi++) {
    const hl_format_info *info = hl_format_get(narrow_formats[fi]);
    const char *name = hl_dtype_format_name(info->id);
    int rows = 0, k_max = -1000, zeros = 0, subnormals = 0;
    for (int i = 0; i < t->nrows; i++) {
      if (strcmp(hl_table_get(t, i, "format"), name)) continue;
      rows++;
      double x = hl_table_num(t, i, "x"), stored = hl_table_num(t, i, "stored");
      if (stored != hl_format_round(info->id, x, HL_OVERFLOW_IEEE)) fail_msg("%s: %g stored as %g", name, x, stored);
      if (strcmp(hl_table_get(t, i, "series"), "2^-k")) continue;
      int k = (int)hl_table_num(t, i, "k");
      k_max = k > k_max ? k : k_max;
      const char *cls = hl_table_get(t, i, "class");
      const char *want = x >= info->min_normal ? "normal" : x >= info->min_subnormal ? "subnormal" : "zero";
      if (strcmp(cls, want)) fail_msg("%s: 2^-%d is %s, not %s", name, k, cls, want);
      zeros += !strcmp(cls, "zero"), subnormals += !strcmp(cls, "subnormal");
    }
    if (info->id == HL_E8M0) {
      assert_int_equal(rows, 0); /* no subnormals, no zero: no ladder */
      continue;
    }
    assert_int_equal(k_max, -ilogb(info->min_subnormal) + 2);
    assert_int_equal(zeros, 2);                      /* half the smallest subnormal (a tie) and a quarter */
    assert_int_equal(subnormals, info->man_bits);    /* one subnormal power of two per mantissa bit */
  }
}

static void test_subnormal_spec_values(void **state) {
  (void)state;
  char *dir = run_ok("subnormal", NULL);
  hl_table *t = read_csv(dir, "subnormal_ladder.csv");
  static const struct { const char *format, *series, *k, *hex, *cls; } want[] = {
      {"fp16", "2^-k", "14", "0x0400", "normal"},    {"fp16", "2^-k", "15", "0x0200", "subnormal"},
      {"fp16", "2^-k", "24", "0x0001", "subnormal"}, {"fp16", "2^-k", "25", "0x0000", "zero"},
      {"fp16", "2^-k", "26", "0x0000", "zero"},      {"fp16", "1.5*2^-k", "25", "0x0001", "subnormal"}, /* 3*2^-26 */
      {"fp16", "1.5*2^-k", "24", "0x0002", "subnormal"}, /* 3*2^-25: tie, to even */
      {"bf16", "2^-k", "26", "0x3280", "normal"}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int row = ROW(t, "format", want[i].format, "series", want[i].series, "k", want[i].k);
    assert_string_equal(hl_table_get(t, row, "stored_hex"), want[i].hex);
    assert_string_equal(hl_table_get(t, row, "class"), want[i].cls);
  }
  /* relative error doubles with each subnormal step of the 4/3 series, then 1/2, then 1 */
  double prev = hl_table_num(t, ROW(t, "format", "fp16", "series", "4/3*2^-k", "k", "15"), "rel_error");
  for (int k = 16; k <= 24; k++) {
    char ks[8];
    snprintf(ks, sizeof ks, "%d", k);
    double e = hl_table_num(t, ROW(t, "format", "fp16", "series", "4/3*2^-k", "k", ks), "rel_error");
    assert_true(fabs(e / prev - 2.0) < 0.01);
    prev = e;
  }
  /* x = fl32(4/3) * 2^-k, a hair above 4/3 * 2^-k */
  assert_true(fabs(hl_table_num(t, ROW(t, "format", "fp16", "series", "4/3*2^-k", "k", "25"), "rel_error") - 0.5) < 1e-7);
  assert_true(hl_table_num(t, ROW(t, "format", "fp16", "series", "4/3*2^-k", "k", "26"), "rel_error") == 1.0);
  check_narrow_ladders(t);
  hl_table_free(t);

  t = read_csv(dir, "loss_scale.csv");
  /* 1e-3 * 2^25 = 33554 fits; * 2^26 = 67109 overflows; 1e-8 is 0 in fp16 until scaled */
  assert_string_equal(hl_table_get(t, ROW(t, "format", "fp16", "gradient", "0.00100000005", "scale_log2", "25"), "class"),
                      "normal");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "fp16", "gradient", "0.00100000005", "scale_log2", "26"), "class"),
                      "inf");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "fp16", "gradient", "9.99999994e-09", "scale_log2", "0"), "class"),
                      "zero");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "bf16", "gradient", "9.99999994e-09", "scale_log2", "0"), "class"),
                      "normal");
  hl_table_free(t);

  t = read_csv(dir, "loss_scale_distribution.csv");
  double sum = 0;
  int row = ROW(t, "scale_log2", "16");
  for (int i = 0; i < 4; i++) sum += hl_table_num(t, row, (const char *[]){"frac_zero", "frac_subnormal", "frac_normal",
                                                                           "frac_overflow"}[i]);
  assert_true(fabs(sum - 1.0) < 1e-12);
  assert_true(hl_table_num(t, ROW(t, "scale_log2", "0"), "frac_overflow") == 0);
  assert_true(hl_table_num(t, ROW(t, "scale_log2", "32"), "frac_overflow") > 0.2);
  hl_table_free(t);

  t = read_csv(dir, "ftz.csv");
  for (int i = 0; i < t->nrows; i++)
    if (!strcmp(hl_table_get(t, i, "build"), "default MXCSR")) assert_string_equal(hl_table_get(t, i, "flushed"), "0");
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------------- formats -- */

static void test_formats_value(void **state) {
  (void)state;
  hl_run_result r;
  char *dir = run_ok("formats --value 0.4", &r);
  assert_non_null(strstr(r.out, "0 01111101 10011001100110011001101"));
  hl_run_free(&r);
  hl_table *t = read_csv(dir, "formats_value.csv");
  assert_schema_followed(t, "formats_value.csv");
  int row = ROW(t, "format", "fp32");
  assert_string_equal(hl_table_get(t, row, "sign"), "0");
  assert_string_equal(hl_table_get(t, row, "exponent"), "01111101");
  assert_string_equal(hl_table_get(t, row, "mantissa"), "10011001100110011001101");
  assert_string_equal(hl_table_get(t, row, "bits_hex"), "0x3ecccccd");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "fp16"), "bits_hex"), "0x3666");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "bf16"), "bits_hex"), "0x3ecd");
  /* 0.4 in fp6, fp4 and e8m0: 0.375, 0.375, 0.5 (between 0 and 0.5, nearer 0.5), 2^-1 */
  row = ROW(t, "format", "e2m3");
  assert_string_equal(hl_table_get(t, row, "bits_hex"), "0x03");
  assert_string_equal(hl_table_get(t, row, "exponent"), "00");
  assert_string_equal(hl_table_get(t, row, "mantissa"), "011");
  assert_string_equal(hl_table_get(t, row, "class"), "subnormal");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e3m2"), "value"), "0.375");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e2m1"), "bits_hex"), "0x1");
  row = ROW(t, "format", "e8m0", "rounding", "nearest-even not saturating");
  assert_string_equal(hl_table_get(t, row, "bits_hex"), "0x7e");
  assert_string_equal(hl_table_get(t, row, "sign"), ""); /* unsigned: no sign bit */
  assert_string_equal(hl_table_get(t, row, "exponent"), "01111110");
  assert_string_equal(hl_table_get(t, row, "mantissa"), "");
  assert_string_equal(hl_table_get(t, row, "value"), "0.5");
  hl_table_free(t);
  t = read_csv(dir, "formats.csv");
  row = ROW(t, "format", "fp16");
  assert_string_equal(hl_table_get(t, row, "max_finite"), "65504");
  assert_true(hl_table_num(t, row, "min_subnormal") == 0x1p-24);
  assert_true(hl_table_num(t, ROW(t, "format", "bf16"), "min_subnormal") == 0x1p-133);
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e4m3"), "max_finite"), "448");
  /* every format, OCP MX's fp6, fp4 and E8M0 scale included */
  assert_int_equal(t->nrows, 10);
  row = ROW(t, "format", "e2m1");
  assert_string_equal(hl_table_get(t, row, "max_finite"), "6");
  assert_string_equal(hl_table_get(t, row, "min_subnormal"), "0.5");
  assert_string_equal(hl_table_get(t, row, "has_inf"), "0");
  assert_string_equal(hl_table_get(t, row, "has_nan"), "0");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e2m3"), "max_finite"), "7.5");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e3m2"), "max_finite"), "28");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e4m3"), "has_nan"), "1");
  row = ROW(t, "format", "e8m0");
  assert_string_equal(hl_table_get(t, row, "sign_bits"), "0");
  assert_string_equal(hl_table_get(t, row, "exponent_bits"), "8");
  assert_string_equal(hl_table_get(t, row, "mantissa_bits"), "0");
  assert_true(hl_table_num(t, row, "max_finite") == 0x1p127);
  assert_true(hl_table_num(t, row, "min_normal") == 0x1p-127);
  assert_string_equal(hl_table_get(t, row, "has_nan"), "1");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "fp16"), "sign_bits"), "1");
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);
}

/* inf, nan and hex floats are values like any other */
static void test_formats_special_values(void **state) {
  (void)state;
  char *dir = run_ok("formats --value inf", NULL);
  hl_table *t = read_csv(dir, "formats_value.csv");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "fp16"), "bits_hex"), "0x7c00");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e4m3", "rounding", "nearest-even saturating"), "bits_hex"), "0x7e");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e4m3", "rounding", "nearest-even not saturating"), "class"), "nan");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e5m2", "rounding", "nearest-even not saturating"), "class"), "inf");
  /* no inf in fp6, fp4 and e8m0: their largest value, or e8m0's NaN */
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e2m1"), "value"), "6");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e3m2"), "bits_hex"), "0x1f");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e8m0", "rounding", "nearest-even saturating"), "bits_hex"), "0xfe");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e8m0", "rounding", "nearest-even not saturating"), "class"), "nan");
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);

  dir = run_ok("formats --value -nan", NULL);
  t = read_csv(dir, "formats_value.csv");
  for (int i = 0; i < t->nrows; i++) {
    const char *format = hl_table_get(t, i, "format");
    if (!strcmp(format, "e2m3") || !strcmp(format, "e3m2") || !strcmp(format, "e2m1")) { /* no NaN: -max */
      assert_string_equal(hl_table_get(t, i, "class"), "normal");
      assert_string_equal(hl_table_get(t, i, "sign"), "1");
      continue;
    }
    assert_string_equal(hl_table_get(t, i, "class"), "nan");
    assert_string_equal(hl_table_get(t, i, "input"), "nan"); /* one way for every NaN; bits_hex keeps the sign */
    assert_string_equal(hl_table_get(t, i, "abs_error"), ""); /* no error to speak of: an empty cell */
    assert_string_equal(hl_table_get(t, i, "rel_error"), "");
  }
  assert_string_equal(hl_table_get(t, ROW(t, "format", "fp16"), "bits_hex"), "0xfe00");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e2m1"), "bits_hex"), "0xf");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e8m0", "rounding", "nearest-even saturating"), "bits_hex"), "0xff");
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);

  /* e8m0 has no sign and no zero: a negative number is its NaN code; 3 (between 2 and 4) goes to the even 2 */
  hl_run_result r;
  dir = run_ok("formats --value -3", &r);
  assert_non_null(strstr(r.out, "e8m0 has no sign and no zero: a negative number is stored as its NaN code 0xff"));
  hl_run_free(&r);
  t = read_csv(dir, "formats_value.csv");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e8m0", "rounding", "nearest-even saturating"), "bits_hex"), "0xff");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e2m1"), "bits_hex"), "0xd");
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);
  dir = run_ok("formats --value 3", NULL);
  t = read_csv(dir, "formats_value.csv");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e8m0", "rounding", "nearest-even not saturating"), "value"), "2");
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);

  dir = run_ok("formats --value 0x1p-24", NULL);
  t = read_csv(dir, "formats_value.csv");
  int row = ROW(t, "format", "fp16");
  assert_string_equal(hl_table_get(t, row, "bits_hex"), "0x0001");
  assert_string_equal(hl_table_get(t, row, "class"), "subnormal");
  assert_string_equal(hl_table_get(t, row, "abs_error"), "0");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e5m2", "rounding", "nearest-even saturating"), "class"), "zero");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "bf16"), "class"), "normal");
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);

  dir = run_ok("formats --value 65519.996", NULL); /* just below fp16's midpoint 65520 */
  t = read_csv(dir, "formats_value.csv");
  assert_string_equal(hl_table_get(t, ROW(t, "format", "fp16"), "bits_hex"), "0x7bff");
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------- tour and all -- */

static double demo6(const hl_table *t, const char *what) { return hl_table_num(t, ROW(t, "demo", "6", "what", what), "result"); }

/* Demonstration 6 against format.c's facts and the scale rules' definitions,
 * and tour_fp8.csv's tensor against format.c's rounding. */
static void check_tour_fp8(const hl_table *t, const char *dir) {
  const hl_format_info *e4m3 = hl_format_get(HL_E4M3), *e5m2 = hl_format_get(HL_E5M2), *e2m1 = hl_format_get(HL_E2M1);
  for (int i = 0; i < t->nrows; i++) /* cells the report's awk splits on commas: none may hold one */
    if (strchr(hl_table_get(t, i, "title"), ',') || strchr(hl_table_get(t, i, "what"), ','))
      fail_msg("tour.csv row %d: a comma in '%s' / '%s'", i, hl_table_get(t, i, "title"), hl_table_get(t, i, "what"));
  assert_true(demo6(t, "448 in e4m3") == e4m3->max);
  assert_true(demo6(t, "464 in e4m3 (halfway to 480)") == e4m3->max); /* the tie goes to the even 448 */
  assert_true(isnan(demo6(t, "480 in e4m3")));
  assert_true(demo6(t, "480 in e4m3 saturating") == e4m3->max);
  assert_true(demo6(t, "57344 in e5m2") == e5m2->max);
  assert_true(isinf(demo6(t, "61440 in e5m2 (halfway to 65536)")));
  assert_true(demo6(t, "6 in e2m1") == e2m1->max && demo6(t, "7 in e2m1") == e2m1->max);
  assert_true(isnan(demo6(t, "tensor amax 1000: 1000 in e4m3")));
  assert_true(demo6(t, "per-tensor scale 448 / amax") == (double)(448.0f / 1000.0f));
  assert_true(demo6(t, "1000 x scale in e4m3") == e4m3->max);
  assert_true(demo6(t, "MXFP4 block E8M0 scale (FLOOR)") == ldexp(1.0, ilogb(1000.0) - e2m1->emax));
  assert_true(demo6(t, "MXFP4 block E8M0 scale (RCEIL)") == ldexp(1.0, (int)ceil(log2(1000.0 / e2m1->max))));

  hl_table *f = read_csv(dir, "tour_fp8.csv");
  assert_int_equal(f->nrows, 5 * 32);
  for (int i = 0; i < f->nrows; i++) {
    const char *way = hl_table_get(f, i, "way");
    double x = hl_table_num(f, i, "x"), stored = hl_table_num(f, i, "stored"), want;
    if (!strcmp(way, "e4m3")) want = hl_format_round(HL_E4M3, x, HL_OVERFLOW_IEEE);
    else if (!strcmp(way, "e4m3-saturated")) want = hl_format_round(HL_E4M3, x, HL_OVERFLOW_SATURATE);
    else if (!strcmp(way, "e4m3-tensor-scale")) {
      want = stored; /* x * scale is rounded in fp32 first: within e4m3's half spacing of x */
      if (!(fabs(stored - x) / fabs(x) <= e4m3->unit_roundoff * (1 + 1e-6))) fail_msg("scaled e4m3: %g stored as %g", x, stored);
    } else {
      double s = hl_table_num(f, i, "scale");
      want = hl_format_round(HL_E2M1, x / s, HL_OVERFLOW_SATURATE) * s; /* s is a power of two: x / s is exact */
    }
    if (isnan(want) ? !isnan(stored) : stored != want) fail_msg("tour_fp8.csv: %s stores %g as %g, not %g", way, x, stored, want);
  }
  hl_table_free(f);
}

static void test_tour(void **state) {
  (void)state;
  hl_run_result r;
  char *dir = run_ok("tour", &r);
  const char *titles[] = {"1. 0.4 as a float", "2. Overflow", "3. Underflow of an update", "4. The smallest fp16",
                          "5. The largest fp16", "6. FP8 and below"};
  const char *at = r.out;
  for (int i = 0; i < 6; i++) { /* present, and in the tour's order */
    const char *p = strstr(at, titles[i]);
    if (!p) fail_msg("'%s' missing or out of order", titles[i]);
    at = p;
  }
  hl_run_free(&r);
  hl_table *t = read_csv(dir, "tour.csv");
  assert_string_equal(hl_table_get(t, ROW(t, "demo", "2", "what", "fp16 data + fp32 accumulator (torch)"), "result"),
                      "inf");
  assert_string_equal(hl_table_get(t, ROW(t, "demo", "2", "what", "fp32 accumulator and result"), "result"), "65536");
  assert_string_equal(hl_table_get(t, ROW(t, "demo", "3", "format", "fp16"), "result"), "1");
  assert_string_equal(hl_table_get(t, ROW(t, "demo", "4", "what", "2^-24 in fp16"), "result_hex"), "0x0001");
  assert_string_equal(hl_table_get(t, ROW(t, "demo", "4", "what", "2^-25 in fp16"), "result"), "0");
  assert_string_equal(hl_table_get(t, ROW(t, "demo", "5", "what", "65519.996 in fp16"), "result"), "65504");
  assert_string_equal(hl_table_get(t, ROW(t, "demo", "5", "what", "65520 in fp16"), "result"), "inf");
  check_tour_fp8(t, dir);
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);
}

static void test_all_writes_every_csv(void **state) {
  (void)state;
  char *dir = run_ok("all --quick", NULL);
  const char *files[] = {"formats.csv",         "overflow.csv",      "overflow_trajectory.csv", "absorption.csv",
                         "absorption_sweep.csv", "lost_update.csv",   "harmonic.csv",            "subnormal_ladder.csv",
                         "loss_scale.csv",       "loss_scale_distribution.csv", "ftz.csv",       "tour.csv",
                         "tour_fp8.csv"};
  const int n = (int)(sizeof files / sizeof files[0]);
  for (int i = 0; i < n; i++) {
    hl_table *t = read_csv(dir, files[i]);
    assert_schema_followed(t, files[i]);
    assert_true(t->nrows > 0);
    assert_non_null(strstr(t->meta, "# device: cpu"));
    int dev = hl_table_col(t, "device");
    if (strcmp(files[i], "formats.csv")) {
      assert_true(dev >= 0); /* every probe's rows say where they ran */
      for (int row = 0; row < t->nrows; row++) assert_string_equal(t->cells[row][dev], "cpu");
    }
    hl_table_free(t);
  }
  assert_int_equal(hl_count_files(dir), n);
  hl_rmtree(dir);
  free(dir);
}

/* --columns-md: a Markdown section per CSV, in the order of --help, and no file written */
static void test_columns_md(void **state) {
  (void)state;
  char *cwd = hl_tmpdir();
  hl_run_result r = hl_run_ok("cd '%s' && '%s' --columns-md", cwd, prog());
  const char *files[] = {"formats.csv",  "formats_value.csv",    "overflow.csv",
                         "overflow_trajectory.csv", "absorption.csv", "absorption_sweep.csv",
                         "lost_update.csv", "harmonic.csv", "subnormal_ladder.csv",
                         "loss_scale.csv", "loss_scale_distribution.csv", "ftz.csv", "tour.csv"};
  const char *at = r.out;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char heading[64];
    snprintf(heading, sizeof heading, "## %s\n", files[i]);
    const char *p = strstr(at, heading);
    if (!p) fail_msg("--columns-md: no section %s after the previous one", files[i]);
    at = p;
  }
  assert_non_null(strstr(r.out, "| `first_lost_add` | 1 | integer |"));
  assert_non_null(strstr(r.out, "| `result_hex` | - | text |"));
  assert_string_equal(r.err, "");
  assert_int_equal(hl_count_files(cwd), 0);
  hl_run_free(&r);
  hl_rmtree(cwd);
  free(cwd);
}

static void test_help_and_version(void **state) {
  (void)state;
  hl_run_result r = hl_run("'%s' --help", prog());
  assert_int_equal(r.status, 0);
  const char *subs[] = {"formats", "overflow", "absorption", "subnormal", "tour", "all", "--count", "--value", "--columns-md"};
  for (int i = 0; i < 9; i++) assert_non_null(strstr(r.out, subs[i]));
  hl_run_free(&r);
  r = hl_run("'%s' --version", prog());
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "halflab"));
  hl_run_free(&r);
}

/* Without --out a program writes to results/<machine>/ under the working
 * directory, or under $HALFLAB_RESULTS when that is set (bench-quick's
 * folder): the reference results are never touched by a smoke run. */
static void test_results_root(void **state) {
  (void)state;
  char *cwd = hl_tmpdir(), *root = hl_tmpdir();
  hl_run_result r = hl_run_ok("cd '%s' && HALFLAB_RESULTS='%s' '%s' formats --device cpu", cwd, root, prog());
  hl_run_free(&r);
  assert_int_equal(hl_count_files(cwd), 0); /* no results/ here */
  assert_int_equal(hl_count_files(root), 1); /* one <machine> folder */
  r = hl_run_ok("cd '%s' && HALFLAB_RESULTS= '%s' formats --device cpu", cwd, prog());
  hl_run_free(&r);
  assert_int_equal(hl_count_files(hl_path(cwd, "results")), 1);
  hl_rmtree(cwd), hl_rmtree(root);
  free(cwd), free(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_overflow_spec_values), cmocka_unit_test(test_overflow_user_case),
      cmocka_unit_test(test_absorption_spec_values), cmocka_unit_test(test_subnormal_spec_values),
      cmocka_unit_test(test_formats_value),        cmocka_unit_test(test_formats_special_values),
      cmocka_unit_test(test_tour),                 cmocka_unit_test(test_all_writes_every_csv),
      cmocka_unit_test(test_help_and_version),     cmocka_unit_test(test_results_root),
      cmocka_unit_test(test_columns_md),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
