/* test_bench_clock.c — suite unit: the CPU clock the peaks are scaled by
 * (bench/clock.c, compiled in here). The measurement agrees with itself
 * within 10% over five runs in one process and lies within the range the
 * machine reports; the range is built from fake reports as the code says
 * (a measurement past the maximum, below half the base clock, or past any
 * x86-64 core's clock where nothing is reported, is not trusted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bench/bench.h"
#include "core/base/device.h"
#include "kernels/host.h"

enum { RUNS = 5 };

/* The cores this program measures (clock.c: imul_latency_cycles) */
static bool measurable(void) {
#if defined(__x86_64__)
  const hl_cpu_features *c = hl_cpu_features_get();
  return (!strcmp(c->vendor, "GenuineIntel") && c->family == 6 && c->avx2) ||
         (!strcmp(c->vendor, "AuthenticAMD") && c->family >= 0x17);
#else
  return false;
#endif
}

static void test_measurement_agrees_and_is_within_bounds(void **state) {
  (void)state;
  if (!measurable()) skip();
  const hl_device_facts *f = hl_device_facts_get(HL_DEVICE_CPU);
  int lo = 0, hi = 0;
  for (int i = 0; i < RUNS; i++) {
    const bench_clock c = bench_clock_measure(f->name, f->clock_mhz);
    print_message("run %d: %d MHz, range %d..%d (%s)\n", i + 1, c.measured_mhz, c.low_mhz, c.high_mhz, c.bounds);
    assert_true(c.measured_mhz > 0);
    if (!c.trusted) fail_msg("%d MHz outside %d..%d MHz (%s)", c.measured_mhz, c.low_mhz, c.high_mhz, c.bounds);
    if (i == 0 || c.measured_mhz < lo) lo = c.measured_mhz;
    if (i == 0 || c.measured_mhz > hi) hi = c.measured_mhz;
  }
  if (hi > 1.10 * lo) fail_msg("the runs disagree: %d to %d MHz", lo, hi);
}

/* An Intel Xeon with cpuid leaf 0x16 (base 2100, max 4000 MHz): a folded
 * add chain's 10893 MHz is refused, the true 2897 accepted */
static void test_above_the_maximum_is_not_trusted(void **state) {
  (void)state;
  const bench_clock_reports r = {.cpuid_base_mhz = 2100, .cpuid_max_mhz = 4000, .cpuinfo_mhz = 2100};
  bench_clock c = {.measured_mhz = 10893};
  bench_clock_judge(&c, &r);
  assert_int_equal(c.low_mhz, 1050);
  assert_int_equal(c.high_mhz, 4200);
  assert_true(c.bounded);
  assert_false(c.trusted);
  assert_non_null(strstr(c.bounds, "cpuid 0x16 max"));
  c.measured_mhz = 2897;
  bench_clock_judge(&c, &r);
  assert_true(c.trusted);
  c.measured_mhz = 4200, bench_clock_judge(&c, &r), assert_true(c.trusted); /* 1.05 x max: the edge is inside */
  c.measured_mhz = 4201, bench_clock_judge(&c, &r), assert_false(c.trusted);
}

static void test_below_half_the_base_is_not_trusted(void **state) {
  (void)state;
  const bench_clock_reports r = {.cpufreq_base_mhz = 2600, .cpufreq_max_mhz = 4500, .model_mhz = 2600};
  bench_clock c = {.measured_mhz = 1299};
  bench_clock_judge(&c, &r);
  assert_int_equal(c.low_mhz, 1300);
  assert_int_equal(c.high_mhz, 4725);
  assert_false(c.trusted);
  c.measured_mhz = 1300, bench_clock_judge(&c, &r), assert_true(c.trusted);
}

/* Nothing reported (a VM without leaf 0x16 or cpufreq): the range any
 * x86-64 core runs in, said so, and not marked bounded */
static void test_no_reports_gives_the_generic_range(void **state) {
  (void)state;
  const bench_clock_reports r = {0};
  bench_clock c = {.measured_mhz = 3500};
  bench_clock_judge(&c, &r);
  assert_int_equal(c.low_mhz, BENCH_CLOCK_FLOOR_MHZ);
  assert_int_equal(c.high_mhz, BENCH_CLOCK_CEILING_MHZ);
  assert_false(c.bounded);
  assert_true(c.trusted);
  assert_non_null(strstr(c.bounds, "no maximum reported"));
  c.measured_mhz = 10893, bench_clock_judge(&c, &r), assert_false(c.trusted);
  c.measured_mhz = 0, bench_clock_judge(&c, &r), assert_false(c.trusted); /* not measured */
}

/* A VM's /proc/cpuinfo shows its nominal clock: it raises the low bound
 * only, as turbo runs above it */
static void test_cpuinfo_clock_is_a_low_bound_only(void **state) {
  (void)state;
  const bench_clock_reports r = {.cpuinfo_mhz = 2445};
  bench_clock c = {.measured_mhz = 3600};
  bench_clock_judge(&c, &r);
  assert_int_equal(c.low_mhz, 1223);
  assert_int_equal(c.high_mhz, BENCH_CLOCK_CEILING_MHZ);
  assert_true(c.trusted);
  assert_non_null(strstr(c.bounds, "/proc/cpuinfo cpu MHz"));
}

/* acpi-cpufreq with boost on lists the base clock as its maximum: a boost
 * clock above it is accepted */
static void test_acpi_cpufreq_maximum_is_the_base(void **state) {
  (void)state;
  bench_clock_reports r = {.cpufreq_max_mhz = 2450, .cpufreq_max_is_base = true};
  bench_clock c = {.measured_mhz = 3500};
  bench_clock_judge(&c, &r);
  assert_true(c.trusted);
  assert_int_equal(c.low_mhz, 1225);
  r.cpufreq_max_is_base = false; /* another driver: its maximum includes turbo */
  bench_clock_judge(&c, &r);
  assert_false(c.trusted);
}

static void test_model_name_clock(void **state) {
  (void)state;
  assert_int_equal(bench_clock_model_mhz("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz"), 2400);
  assert_int_equal(bench_clock_model_mhz("Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz"), 3200);
  assert_int_equal(bench_clock_model_mhz("AMD EPYC"), 0);
  assert_int_equal(bench_clock_model_mhz("INTEL(R) XEON(R) PLATINUM 8581C"), 0);
  assert_int_equal(bench_clock_model_mhz("odd @ GHz"), 0);
  assert_int_equal(bench_clock_model_mhz("odd @ 2.4MHz"), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_measurement_agrees_and_is_within_bounds),
      cmocka_unit_test(test_above_the_maximum_is_not_trusted),
      cmocka_unit_test(test_below_half_the_base_is_not_trusted),
      cmocka_unit_test(test_no_reports_gives_the_generic_range),
      cmocka_unit_test(test_cpuinfo_clock_is_a_low_bound_only),
      cmocka_unit_test(test_acpi_cpufreq_maximum_is_the_base),
      cmocka_unit_test(test_model_name_clock),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
