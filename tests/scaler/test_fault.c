/* test_fault.c — suite unit: step lists ("3,7,10-12") and gradient
 * poisoning on every float dtype and through strides. (Test vector 5
 * through fault injection is in test_scaler.c.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/training/fault.h"
#include "core/engine/ops.h"
#include "tests/scaler/scaler_test.h"

static void test_parse(void **state) {
  (void)state;
  hl_step_set s;
  OK(hl_step_set_parse("3,7,10-12", &s));
  const int64_t in[] = {3, 7, 10, 11, 12}, out[] = {1, 2, 4, 6, 8, 9, 13, 100};
  for (int i = 0; i < 5; i++) assert_true(hl_step_set_has(&s, in[i]));
  for (int i = 0; i < 8; i++) assert_false(hl_step_set_has(&s, out[i]));
  assert_int_equal(hl_step_set_count(&s), 5);
  char buf[64];
  assert_string_equal(hl_step_set_format(&s, buf, sizeof buf), "3,7,10-12");
  /* overlapping and adjacent items merge; order does not matter */
  OK(hl_step_set_parse("6,5,3-4,9-9,2-3", &s));
  assert_string_equal(hl_step_set_format(&s, buf, sizeof buf), "2-6,9");
  assert_int_equal(hl_step_set_count(&s), 6);
  OK(hl_step_set_parse("", &s));
  assert_int_equal(s.n, 0);
  OK(hl_step_set_parse("none", &s));
  assert_string_equal(hl_step_set_format(&s, buf, sizeof buf), "none");
  OK(hl_step_set_parse("1000000000000", &s));
  assert_true(hl_step_set_has(&s, 1000000000000LL));
}

static void test_parse_errors(void **state) {
  (void)state;
  const char *bad[] = {"0", "3,,4", "4-3", "a", "3-", "-3", " 3", "1e3", "3,", ",3", "2-x", "99999999999999999999"};
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    hl_step_set s = {.n = 5};
    REFUSED(hl_step_set_parse(bad[i], &s), "step list", "bad item");
    assert_int_equal(s.n, 0);
  }
  hl_fault_kind k;
  OK(hl_fault_kind_parse("nan", &k));
  assert_int_equal(k, HL_FAULT_NAN);
  OK(hl_fault_kind_parse("-inf", &k));
  assert_int_equal(k, HL_FAULT_NEG_INF);
  REFUSED(hl_fault_kind_parse("NaN", &k), "expected inf, -inf or nan");
}

static void test_poison(void **state) {
  (void)state;
  const hl_dtype dtypes[4] = {HL_F64, HL_F32, HL_F16, HL_BF16};
  for (int d = 0; d < 4; d++) {
    hl_tensor *t = tensor_of(HL_SHAPE(3, 4), NULL, 1.0f, dtypes[d], HL_DEVICE_CPU);
    OK(hl_fault_poison(t, 5, HL_FAULT_INF));
    OK(hl_fault_poison(t, -1, HL_FAULT_NAN));
    OK(hl_fault_poison(t, 0, HL_FAULT_NEG_INF));
    float *v = values_of(t);
    assert_true(isinf(v[5]) && v[5] > 0);
    assert_true(isnan(v[11]));
    assert_true(isinf(v[0]) && v[0] < 0);
    int finite = 0;
    for (int i = 0; i < 12; i++) finite += isfinite(v[i]);
    assert_int_equal(finite, 9);
    free(v);
    REFUSED(hl_fault_poison(t, 12, HL_FAULT_INF), "outside", "[3,4]");
    hl_release(t);
  }
  /* through a transposed view: element (r, c) of the view */
  hl_tensor *base = tensor_of(HL_SHAPE(2, 3), NULL, 0, HL_F32, HL_DEVICE_CPU);
  hl_tensor *view = hl_transpose(base, 0, 1); /* [3,2] */
  OK(hl_fault_poison(view, 1, HL_FAULT_INF)); /* view (0,1) = base (1,0) = base element 3 */
  assert_true(isinf(value_at(base, 3)));
  assert_true(value_at(base, 1) == 0.0f);
  hl_release(view);
  hl_release(base);
  hl_tensor *ints = hl_from_i32(HL_SHAPE(2), (const int32_t[]){1, 2}, HL_I32, HL_DEVICE_CPU);
  REFUSED(hl_fault_poison(ints, 0, HL_FAULT_INF), "not a float tensor");
  hl_release(ints);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_poison),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
