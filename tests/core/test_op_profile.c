/* test_op_profile.c — suite unit: the --profile table (core/engine/op_profile.h).
 *   - off (never resumed, or paused) records nothing;
 *   - calls and bytes per op: inputs plus output, a view's 0, a failed
 *     op's call without bytes, autocast's casts as `to` ops of their own
 *     with the product's bytes in the lower dtype;
 *   - phases: the program's, and the autograd engine's backward functions
 *     in the backward phase whatever the program said (restored after);
 *     the optimizer's kernel as a named span;
 *   - self time: a nested span's time is not counted again in the
 *     enclosing one, and the entries add up to no more than the phases'
 *     wall time;
 *   - reset forgets everything. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "core/engine/op_profile.h"
#include "core/training/optim.h"
#include "tests/core/core_test.h"

#define CPU HL_DEVICE_CPU

/* The entry of (op, phase), or a zeroed one with calls 0. */
static hl_op_profile_entry entry(const char *op, hl_profile_phase p) {
  hl_op_profile_entry e[256];
  const int n = hl_op_profile_entries(e, 256);
  assert_true(n <= 256);
  for (int i = 0; i < n; i++)
    if (!strcmp(e[i].op, op) && e[i].phase == p) return e[i];
  return (hl_op_profile_entry){.op = op, .phase = p};
}

static int entries(void) { return hl_op_profile_entries(NULL, 0); }

static hl_tensor *f32(hl_shape s, uint64_t stream) {
  hl_tensor *t = hl_randn(s, 0, 1, 5, stream, HL_F32, CPU);
  OK(t);
  return hl_tmp(t);
}

static void sleep_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

static void test_off_records_nothing(void **state) {
  (void)state;
  hl_op_profile_reset();
  hl_pool_push();
  hl_tensor *a = f32(HL_SHAPE(4, 8), 1), *b = f32(HL_SHAPE(8, 5), 2);
  OK(hl_tmp(hl_mm(a, b)));
  assert_false(hl_op_profiling());
  assert_int_equal(entries(), 0);
  /* paused: the same */
  hl_op_profile_resume(HL_PROFILE_OTHER, CPU);
  assert_true(hl_op_profiling());
  hl_op_profile_pause();
  OK(hl_tmp(hl_mm(a, b)));
  assert_int_equal(entries(), 0);
  for (int p = 0; p < HL_PROFILE_PHASES; p++) assert_true(hl_op_profile_phase_ns(p) < 100000000u);
  hl_pool_pop();
}

static void test_calls_and_bytes(void **state) {
  (void)state;
  hl_op_profile_reset();
  hl_pool_push();
  hl_tensor *a = f32(HL_SHAPE(4, 8), 1), *b = f32(HL_SHAPE(8, 5), 2), *c = f32(HL_SHAPE(4, 5), 3);
  hl_op_profile_resume(HL_PROFILE_FORWARD, CPU);
  for (int i = 0; i < 3; i++) OK(hl_tmp(hl_mm(a, b)));
  OK(hl_tmp(hl_add(c, c)));
  OK(hl_tmp(hl_add(c, c)));
  OK(hl_tmp(hl_transpose(a, 0, 1)));
  assert_null(hl_mm(a, a)); /* [4, 8] x [4, 8]: refused, but it ran */
  hl_error_clear();
  HL_AUTOCAST(CPU, HL_BF16, true) { OK(hl_tmp(hl_mm(a, b))); }
  hl_op_profile_pause();
  OK(hl_tmp(hl_mm(a, b))); /* after the pause: not counted */

  const hl_op_profile_entry mm = entry("mm", HL_PROFILE_FORWARD), add = entry("add", HL_PROFILE_FORWARD);
  assert_int_equal(mm.calls, 3 + 1 + 1);
  /* f32: (4x8 + 8x5 + 4x5) x 4 bytes three times; bf16: the same elements x 2; the refusal: none */
  assert_int_equal(mm.bytes, 3 * 92 * 4 + 92 * 2);
  assert_int_equal(add.calls, 2);
  assert_int_equal(add.bytes, 2 * 3 * 20 * 4);
  const hl_op_profile_entry t = entry("transpose", HL_PROFILE_FORWARD);
  assert_int_equal(t.calls, 1);
  assert_int_equal(t.bytes, 0); /* a view moves nothing */
  /* autocast's casts: one `to` per operand, f32 in and bf16 out */
  const hl_op_profile_entry to = entry("to", HL_PROFILE_FORWARD);
  assert_int_equal(to.calls, 2);
  assert_int_equal(to.bytes, (32 + 40) * (4 + 2));
  assert_true(mm.self_ns > 0);
  /* nothing in the other phases */
  for (int p = HL_PROFILE_BACKWARD; p < HL_PROFILE_PHASES; p++) assert_int_equal(entry("mm", p).calls, 0);
  hl_pool_pop();
}

static void test_phases(void **state) {
  (void)state;
  hl_op_profile_reset();
  hl_pool_push();
  hl_tensor *w = hl_randn(HL_SHAPE(8, 5), 0, 1, 5, 9, HL_F32, CPU);
  OK(w);
  OK(hl_set_requires_grad(w, true));
  hl_tensor *x = f32(HL_SHAPE(4, 8), 1);
  OK(hl_set_requires_grad(x, true));
  hl_op_profile_resume(HL_PROFILE_FORWARD, CPU);
  hl_tensor *loss = hl_tmp(hl_sum(hl_tmp(hl_mm(x, w))));
  OK(loss);
  OK(hl_backward(loss, NULL, false));
  /* the engine gave the phase back */
  assert_int_equal(hl_op_profile_set_phase(HL_PROFILE_OPTIMIZER), HL_PROFILE_FORWARD);
  hl_optim *opt = hl_adamw_new(&w, 1, hl_adamw_defaults());
  OK(opt);
  OK(hl_optim_step(opt, NULL));
  hl_op_profile_pause();

  assert_int_equal(entry("mm", HL_PROFILE_FORWARD).calls, 1);
  assert_int_equal(entry("sum", HL_PROFILE_FORWARD).calls, 1);
  assert_int_equal(entry("mm", HL_PROFILE_BACKWARD).calls, 2); /* dx = g w^T, dw = x^T g */
  assert_int_equal(entry("sum", HL_PROFILE_BACKWARD).calls, 0);
  const hl_op_profile_entry step = entry("optim.adamw", HL_PROFILE_OPTIMIZER);
  assert_int_equal(step.calls, 1);
  assert_int_equal(step.bytes, 40 * 4 * (1 + 2 * 3)); /* the gradient read; weight and both moments read and written */
  for (int p = 0; p < HL_PROFILE_PHASES; p++)
    if (p != HL_PROFILE_OTHER) assert_true(hl_op_profile_phase_ns(p) > 0);
  hl_optim_free(opt);
  hl_release(w);
  hl_pool_pop();
}

static void test_self_time(void **state) {
  (void)state;
  hl_op_profile_reset();
  hl_op_profile_resume(HL_PROFILE_OTHER, CPU);
  hl_op_span outer, inner;
  assert_true(hl_op_span_begin(&outer));
  sleep_ms(20);
  assert_true(hl_op_span_begin(&inner));
  sleep_ms(30);
  hl_op_span_end(&inner, "test.inner", 0);
  hl_op_span_end(&outer, "test.outer", 0);
  hl_op_profile_pause();
  const uint64_t o = entry("test.outer", HL_PROFILE_OTHER).self_ns, i = entry("test.inner", HL_PROFILE_OTHER).self_ns;
  assert_true(i >= 30000000u);
  assert_true(o >= 20000000u && o < 20000000u + 30000000u); /* its own 20 ms, not the inner 30 again */
  assert_true(o + i <= hl_op_profile_phase_ns(HL_PROFILE_OTHER));
  hl_op_span unrecorded;
  assert_false(hl_op_span_begin(&unrecorded)); /* paused: spans do not start */
  hl_op_profile_reset();
  assert_int_equal(entries(), 0);
  assert_int_equal(hl_op_profile_phase_ns(HL_PROFILE_OTHER), 0);
}

/* A thread marked beside the program's records its spans apart: the same
 * (op, phase) from the main thread and from it are two entries. */
static void *side_thread(void *arg) {
  (void)arg;
  hl_op_profile_thread_beside();
  for (int i = 0; i < 3; i++) {
    hl_op_span s;
    if (hl_op_span_begin(&s)) hl_op_span_end(&s, "test.side", 10);
  }
  return NULL;
}

static void test_beside(void **state) {
  (void)state;
  hl_op_profile_reset();
  hl_op_profile_resume(HL_PROFILE_BACKWARD, CPU);
  hl_op_span s;
  assert_true(hl_op_span_begin(&s));
  hl_op_span_end(&s, "test.side", 1);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, side_thread, NULL), 0);
  pthread_join(t, NULL);
  hl_op_profile_pause();
  hl_op_profile_entry e[256];
  const int n = hl_op_profile_entries(e, 256);
  int mine = -1, beside = -1;
  for (int i = 0; i < n; i++)
    if (!strcmp(e[i].op, "test.side")) *(e[i].beside ? &beside : &mine) = i;
  assert_true(mine >= 0 && beside >= 0);
  assert_int_equal(e[mine].calls, 1);
  assert_int_equal(e[mine].bytes, 1);
  assert_int_equal(e[beside].calls, 3);
  assert_int_equal(e[beside].bytes, 30);
  assert_int_equal(e[beside].phase, HL_PROFILE_BACKWARD);
  hl_op_profile_reset();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_off_records_nothing),
      cmocka_unit_test(test_calls_and_bytes),
      cmocka_unit_test(test_phases),
      cmocka_unit_test(test_self_time),
      cmocka_unit_test(test_beside),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
