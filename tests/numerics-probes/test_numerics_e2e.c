/* test_numerics_e2e.c — suite e2e: halflab-numerics run end to end on the
 * CPU, its CSV files read back and checked against the values that
 * docs/numerics.md gives. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  hl_rmtree(dir);
  free(dir);
}

/* ----------------------------------------------------------- subnormal -- */

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
  hl_table_free(t);
  t = read_csv(dir, "formats.csv");
  row = ROW(t, "format", "fp16");
  assert_string_equal(hl_table_get(t, row, "max_finite"), "65504");
  assert_true(hl_table_num(t, row, "min_subnormal") == 0x1p-24);
  assert_true(hl_table_num(t, ROW(t, "format", "bf16"), "min_subnormal") == 0x1p-133);
  assert_string_equal(hl_table_get(t, ROW(t, "format", "e4m3"), "max_finite"), "448");
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
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);

  dir = run_ok("formats --value -nan", NULL);
  t = read_csv(dir, "formats_value.csv");
  for (int i = 0; i < t->nrows; i++) {
    assert_string_equal(hl_table_get(t, i, "class"), "nan");
    assert_string_equal(hl_table_get(t, i, "input"), "nan"); /* one way for every NaN; bits_hex keeps the sign */
    assert_string_equal(hl_table_get(t, i, "abs_error"), ""); /* no error to speak of: an empty cell */
    assert_string_equal(hl_table_get(t, i, "rel_error"), "");
  }
  assert_string_equal(hl_table_get(t, ROW(t, "format", "fp16"), "bits_hex"), "0xfe00");
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

static void test_tour(void **state) {
  (void)state;
  hl_run_result r;
  char *dir = run_ok("tour", &r);
  const char *titles[] = {"1. 0.4 as a float", "2. Overflow", "3. Underflow of an update", "4. The smallest fp16",
                          "5. The largest fp16"};
  const char *at = r.out;
  for (int i = 0; i < 5; i++) { /* present, and in the tour's order */
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
