/* test_fatal.c — suite unit: formats/fatal.h, the one way halflab stops on a
 * failure. Each case runs in a child process (it must exit), whose stderr
 * must be one line: the program's name, what failed with the library's
 * message, and file:line; exit status 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/fatal.h"
#include "tests/support/hltest.h"

static int run_child(void (*fn)(void), char *buf, size_t len) { return hl_child_stderr(fn, "test-fatal", buf, len); }

/* each call on the line after its line number, for the expected text */
static const int fatal_call_line = __LINE__ + 1;
static void call_fatal(void) { hl_fatal("cannot write %s: %s", "/x/y.csv", strerror(ENOSPC)); }

static const int alloc_call_line = __LINE__ + 1;
static void call_alloc_check(void) { (void)HL_CHECK_ALLOC(NULL, (size_t)3 << 20, "the test's buffer"); }

static void call_alloc_ok(void) {
  static char buf[16];
  if (HL_CHECK_ALLOC(buf, sizeof buf, "a buffer that exists") == buf) _exit(0);
}

static void fatal_names_program_failure_and_place(void **state) {
  (void)state;
  char err[512], want[512];
  assert_int_equal(run_child(call_fatal, err, sizeof err), 1);
  snprintf(want, sizeof want, "test-fatal: cannot write /x/y.csv: %s (%s:%d)\n", strerror(ENOSPC), __FILE__, fatal_call_line);
  assert_string_equal(err, want);
}

static void alloc_check_stops_with_size_and_reason(void **state) {
  (void)state;
  char err[512], want[512];
  assert_int_equal(run_child(call_alloc_check, err, sizeof err), 1);
  snprintf(want, sizeof want, "test-fatal: out of memory: the test's buffer (3.0 MiB): %s (%s:%d)\n", strerror(ENOMEM),
           __FILE__, alloc_call_line);
  assert_string_equal(err, want);
}

static void alloc_check_passes_a_pointer_through(void **state) {
  (void)state;
  char err[64];
  assert_int_equal(run_child(call_alloc_ok, err, sizeof err), 0);
  assert_string_equal(err, "");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fatal_names_program_failure_and_place),
      cmocka_unit_test(alloc_check_stops_with_size_and_reason),
      cmocka_unit_test(alloc_check_passes_a_pointer_through),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
