/* test_cli_parse.c — suite unit: the strict reading of every number, size
 * and list the programs take (cli/cli.h hl_read_*), case by case. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cli/cli.h"
#include "tests/support/hltest.h"

#define ANY_REAL ((hl_real_range){.lo = -HUGE_VAL, .hi = HUGE_VAL})
#define VALUE_RANGE ((hl_real_range){.lo = -HUGE_VAL, .hi = HUGE_VAL, .subnormal_ok = true, .nonfinite_ok = true})

static void test_integers(void **state) {
  (void)state;
  const struct {
    const char *text;
    long long lo, hi;
    bool ok;
    long long value;
    const char *why; /* a fragment of the refusal */
  } cases[] = {
      {"5", 1, 10, true, 5, NULL},
      {"0", 0, 10, true, 0, NULL},
      {"007", 0, 10, true, 7, NULL},
      {"-3", -5, 5, true, -3, NULL},
      {"9223372036854775807", 0, 9223372036854775807ll, true, 9223372036854775807ll, NULL},
      {"", 0, 10, false, 0, "empty value"},
      {" 5", 0, 10, false, 0, "blank"},
      {"5 ", 0, 10, false, 0, "blank"},
      {"\t5", 0, 10, false, 0, "blank"},
      {"+5", 0, 10, false, 0, "no '+' sign"},
      {"+5", -10, 10, false, 0, "no '+' sign"},
      {"-0", 0, 10, false, 0, "no sign"},
      {"-1", 1, 10, false, 0, "no sign"},
      {"-", -10, 10, false, 0, "not a"},
      {"--out", 0, 10, false, 0, "not a number"},
      {"1e3", 0, 10000, false, 0, "not an integer"},
      {"0x10", 0, 100, false, 0, "not an integer"},
      {"5x", 0, 10, false, 0, "not an integer"},
      {"11", 0, 10, false, 0, "out of range (0 to 10)"},
      {"0", 1, 10, false, 0, "out of range (1 to 10)"},
      {"99999999999999999999", 0, 10, false, 0, "out of range"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    long long v = -777;
    char why[256] = "";
    const bool ok = hl_read_int(cases[i].text, cases[i].lo, cases[i].hi, &v, why, sizeof why);
    if (ok != cases[i].ok) fail_msg("'%s': %s (%s)", cases[i].text, ok ? "taken" : "refused", why);
    if (ok) assert_int_equal(v, cases[i].value);
    else if (!strstr(why, cases[i].why)) fail_msg("'%s': '%s' does not say '%s'", cases[i].text, why, cases[i].why);
  }
}

static void test_reals(void **state) {
  (void)state;
  const struct {
    const char *text;
    hl_real_range range;
    bool ok;
    double value;
    const char *why;
  } cases[] = {
      {"3e-4", HL_REAL_POSITIVE, true, 3e-4, NULL},
      {"0.5", HL_REAL_FRACTION, true, 0.5, NULL},
      {".5", HL_REAL_FRACTION, true, 0.5, NULL},
      {"0", HL_REAL_NON_NEGATIVE, true, 0, NULL},
      {"1e308", HL_REAL_POSITIVE, true, 1e308, NULL},
      {"-2.5", ANY_REAL, true, -2.5, NULL},
      {"0x1p-24", HL_REAL_POSITIVE, true, 0x1p-24, NULL},
      {"1e-310", VALUE_RANGE, true, 1e-310, NULL},
      {"-0", VALUE_RANGE, true, 0, NULL},
      {"0e-999", VALUE_RANGE, true, 0, NULL},
      {"0.000", HL_REAL_NON_NEGATIVE, true, 0, NULL},
      {"", HL_REAL_POSITIVE, false, 0, "empty value"},
      {" 1", HL_REAL_POSITIVE, false, 0, "blank"},
      {"1 ", HL_REAL_POSITIVE, false, 0, "blank"},
      {"+1", HL_REAL_POSITIVE, false, 0, "no '+' sign"},
      {"-0", HL_REAL_NON_NEGATIVE, false, 0, "no sign"},
      {"-1", HL_REAL_POSITIVE, false, 0, "no sign"},
      {"0", HL_REAL_POSITIVE, false, 0, "out of range (must be > 0)"},
      {"1", HL_REAL_FRACTION, false, 0, "out of range (must be in (0, 1))"},
      {"1e-400", HL_REAL_POSITIVE, false, 0, "underflow"},
      {"1e-400", VALUE_RANGE, false, 0, "underflow"},
      {"-1e-400", VALUE_RANGE, false, 0, "underflow"},
      {"0x1p-1100", VALUE_RANGE, false, 0, "underflow"},
      {"1e-310", HL_REAL_POSITIVE, false, 0, "subnormal"},
      {"1e999", HL_REAL_POSITIVE, false, 0, "overflow"},
      {"-1e999", ANY_REAL, false, 0, "overflow"},
      {"inf", HL_REAL_POSITIVE, false, 0, "not a finite number"},
      {"nan", ANY_REAL, false, 0, "not a finite number"},
      {"infinity", HL_REAL_POSITIVE, false, 0, "not a finite number"},
      {"1,5", HL_REAL_POSITIVE, false, 0, "not a number"},
      {"e5", HL_REAL_POSITIVE, false, 0, "not a number"},
      {"1e", HL_REAL_POSITIVE, false, 0, "not a number"},
      {".", HL_REAL_POSITIVE, false, 0, "not a number"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double v = -777;
    char why[256] = "";
    const bool ok = hl_read_real(cases[i].text, cases[i].range, &v, why, sizeof why);
    if (ok != cases[i].ok) fail_msg("'%s': %s (%s)", cases[i].text, ok ? "taken" : "refused", why);
    if (ok && v != cases[i].value) fail_msg("'%s' read as %.17g", cases[i].text, v);
    if (!ok && !strstr(why, cases[i].why)) fail_msg("'%s': '%s' does not say '%s'", cases[i].text, why, cases[i].why);
  }
  /* inf and nan where the range takes them (numerics formats --value) */
  double v;
  char why[256];
  assert_true(hl_read_real("inf", VALUE_RANGE, &v, why, sizeof why) && isinf(v) && v > 0);
  assert_true(hl_read_real("-inf", VALUE_RANGE, &v, why, sizeof why) && isinf(v) && v < 0);
  assert_true(hl_read_real("nan", VALUE_RANGE, &v, why, sizeof why) && isnan(v));
  assert_true(hl_read_real("1e999", VALUE_RANGE, &v, why, sizeof why) && isinf(v));
}

static void test_bytes(void **state) {
  (void)state;
  const struct {
    const char *text;
    uint64_t lo;
    bool ok;
    uint64_t value;
    const char *why;
  } cases[] = {
      {"4096", 1, true, 4096, NULL},
      {"64KiB", 64, true, 65536, NULL},
      {"1.5GB", 1, true, 1500000000ull, NULL},
      {"16GiB", 1, true, 17179869184ull, NULL},
      {"1.5KiB", 1, true, 1536, NULL},
      {"1.5B", 1, false, 0, "not a whole number of bytes"},
      {"0.3KiB", 1, false, 0, "not a whole number of bytes"},
      {"", 1, false, 0, "empty value"},
      {" 64", 1, false, 0, "blank"},
      {"64 KiB", 1, false, 0, "blank"},
      {"+64", 1, false, 0, "no '+' sign"},
      {"-64", 1, false, 0, "no sign"},
      {"0", 1, false, 0, "out of range"},
      {"63", 64, false, 0, "out of range (64 bytes"},
      {"1e3", 1, false, 0, "unknown unit"},
      {"0x40", 1, false, 0, "unknown unit"},
      {"inf", 1, false, 0, "not a size"},
      {"1.KiB", 1, false, 0, "not a size"},
      {"64XB", 1, false, 0, "unknown unit"},
      {"99999999TB", 1, false, 0, "out of range"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint64_t v = 777;
    char why[256] = "";
    const bool ok = hl_read_bytes(cases[i].text, cases[i].lo, &v, why, sizeof why);
    if (ok != cases[i].ok) fail_msg("'%s': %s (%s)", cases[i].text, ok ? "taken" : "refused", why);
    if (ok && v != cases[i].value) fail_msg("'%s' read as %llu", cases[i].text, (unsigned long long)v);
    if (!ok && !strstr(why, cases[i].why)) fail_msg("'%s': '%s' does not say '%s'", cases[i].text, why, cases[i].why);
  }
}

static void test_lists(void **state) {
  (void)state;
  const struct {
    const char *text;
    int n; /* -1: refused */
    const char *why;
  } cases[] = {
      {"64,128", 2, NULL},
      {"7", 1, NULL},
      {"1,2,3,4", 4, NULL},
      {"64,,128", -1, "empty item (item 2)"},
      {",64", -1, "empty item (item 1)"},
      {"64,", -1, "empty item (item 2)"},
      {",", -1, "empty item"},
      {"", -1, "empty list"},
      {"1,2,3,4,5", -1, "more than 4 values"},
      {"64, 128", -1, "blank"},
      {"64,+128", -1, "no '+' sign"},
      {"64,0", -1, "out of range"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    long long out[4];
    char why[256] = "";
    const int n = hl_read_int_list(cases[i].text, 1, 1000, out, 4, why, sizeof why);
    if (n != cases[i].n) fail_msg("'%s': %d items (%s), expected %d", cases[i].text, n, why, cases[i].n);
    if (n < 0 && !strstr(why, cases[i].why)) fail_msg("'%s': '%s' does not say '%s'", cases[i].text, why, cases[i].why);
  }
  long long out[4];
  char why[256];
  assert_int_equal(hl_read_int_list("64,128", 1, 1000, out, 4, why, sizeof why), 2);
  assert_int_equal(out[0], 64);
  assert_int_equal(out[1], 128);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_reals),
      cmocka_unit_test(test_bytes),
      cmocka_unit_test(test_lists),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
