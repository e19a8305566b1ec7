/* test_bench_timing.c — suite unit: the benchmark timer's re-measure rule
 * (bench/bench.h bench_time): a point whose median exceeds its minimum by
 * more than BENCH_UNSTABLE_SPREAD is measured again, at most
 * BENCH_MAX_ATTEMPTS sample sets in all, and the set with the lowest
 * median is kept. Launches here busy-wait on the CPU backend's clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "bench/bench.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static void spin_ms(double ms) {
  const double end = now_ms() + ms;
  while (now_ms() < end) {
  }
}

/* Every other launch takes four times as long: each set of samples has a
 * median well above its minimum, however busy the machine. */
static void always_disturbed(void *ctx, long iteration) {
  (void)ctx;
  spin_ms(iteration % 2 ? 4.0 : 1.0);
}

static void test_unstable_rule(void **state) {
  (void)state;
  hl_stats s = {.min = 1.0, .median = 1.25, .max = 2.0};
  assert_false(bench_unstable(&s));
  s.median = 1.2501;
  assert_true(bench_unstable(&s));
}

static void test_disturbed_point_measured_again(void **state) {
  (void)state;
  bench_device d;
  bench_device_open(&d, "cpu");
  bench_method m = bench_method_for(&d, 10, true); /* 10 samples per set */
  const bench_timing t = bench_time(&d, &m, always_disturbed, NULL);
  assert_int_equal(t.attempts, BENCH_MAX_ATTEMPTS);
  assert_int_equal(t.samples, 10);
  assert_true(t.ms.min >= 0.99 && t.ms.min < t.ms.median && t.ms.median <= t.ms.max);
  assert_true(t.ms.max >= 3.99);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unstable_rule),
      cmocka_unit_test(test_disturbed_point_measured_again),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
