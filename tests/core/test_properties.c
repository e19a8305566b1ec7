/* test_properties.c — suite unit: properties that must hold for every
 * shape, checked over a few hundred random shapes (Philox-drawn, so the
 * same cases every run): broadcasting against a naive loop, reductions
 * against double sums, views that undo each other, cat/split round trips. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/philox.h"
#include "tests/core/core_test.h"

static uint64_t draw_i;
static int draw(int n) { return (int)(hl_philox_u32(77, 0, draw_i++) % (uint32_t)n); }

static hl_shape random_shape(int min_dims) {
  hl_shape s;
  s.ndim = min_dims + draw(HL_MAX_DIMS - min_dims + 1);
  for (int i = 0; i < s.ndim; i++) s.d[i] = 1 + draw(5);
  return s;
}

/* index of element `flat` of shape out in a tensor of shape in broadcast to out */
static int64_t broadcast_index(hl_shape in, hl_shape out, int64_t flat) {
  int64_t idx = 0, stride = 1;
  for (int d = out.ndim - 1; d >= 0; d--) {
    int64_t coord = flat % out.d[d];
    flat /= out.d[d];
    int id = d - (out.ndim - in.ndim);
    if (id >= 0) {
      if (in.d[id] != 1) idx += coord * stride;
      stride *= in.d[id];
    }
  }
  return idx;
}

static void test_broadcasting_matches_naive_loops(void **state) {
  (void)state;
  for (int c = 0; c < 200; c++) {
    hl_pool_push();
    hl_shape out = random_shape(1), a = out, b = out;
    /* drop leading dims and set random dims to 1 in each operand */
    a.ndim = out.ndim - draw(out.ndim);
    b.ndim = out.ndim - draw(out.ndim);
    for (int i = 0; i < a.ndim; i++) a.d[i] = draw(3) ? out.d[i + out.ndim - a.ndim] : 1;
    for (int i = 0; i < b.ndim; i++) b.d[i] = draw(3) ? out.d[i + out.ndim - b.ndim] : 1;
    hl_dtype t = draw(2) ? HL_F32 : HL_F64;
    hl_tensor *x = hl_tmp(hl_randn(a, 0, 1, 5, (uint64_t)c, t, HL_DEVICE_CPU));
    hl_tensor *y = hl_tmp(hl_randn(b, 2, 1, 6, (uint64_t)c, t, HL_DEVICE_CPU));
    hl_tensor *ops[4] = {hl_tmp(hl_add(x, y)), hl_tmp(hl_sub(x, y)), hl_tmp(hl_mul(x, y)), hl_tmp(hl_div(x, y))};
    double *xv = hl_tensor_values(x), *yv = hl_tensor_values(y);
    for (int o = 0; o < 4; o++) {
      OK(ops[o]);
      hl_shape got = hl_tensor_shape(ops[o]);
      double *r = hl_tensor_values(ops[o]);
      int64_t n = hl_numel(ops[o]);
      for (int64_t i = 0; i < n; i++) {
        double p = xv[broadcast_index(a, got, i)], q = yv[broadcast_index(b, got, i)];
        double want;
        if (t == HL_F32) { /* one float rounding, as the kernel does */
          float fp = (float)p, fq = (float)q;
          want = o == 0 ? fp + fq : o == 1 ? fp - fq : o == 2 ? fp * fq : fp / fq;
        } else {
          want = o == 0 ? p + q : o == 1 ? p - q : o == 2 ? p * q : p / q;
        }
        if (r[i] != want) fail_msg("case %d op %d element %lld: %g, expected %g", c, o, (long long)i, r[i], want);
      }
      free(r);
    }
    free(xv);
    free(yv);
    hl_pool_pop();
  }
}

static void test_reductions_match_double_sums(void **state) {
  (void)state;
  for (int c = 0; c < 150; c++) {
    hl_pool_push();
    hl_shape s = random_shape(1);
    hl_tensor *x = hl_tmp(hl_randn(s, 0, 1, 8, (uint64_t)c, HL_F64, HL_DEVICE_CPU));
    double *xv = hl_tensor_values(x);
    int d = draw(s.ndim);
    bool keep = draw(2);
    hl_tensor *r = hl_tmp(hl_sum_dim(x, d, keep)), *m = hl_tmp(hl_mean_dim(x, d - s.ndim, keep));
    OK(r && m);
    assert_int_equal(r->ndim, keep ? s.ndim : s.ndim - 1);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < d; i++) outer *= s.d[i];
    for (int i = d + 1; i < s.ndim; i++) inner *= s.d[i];
    double *rv = hl_tensor_values(r), *mv = hl_tensor_values(m);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) {
        double want = 0;
        for (int64_t j = 0; j < s.d[d]; j++) want += xv[(o * s.d[d] + j) * inner + i];
        assert_true(fabs(rv[o * inner + i] - want) <= 1e-12 * (1 + fabs(want)));
        assert_true(fabs(mv[o * inner + i] - want / (double)s.d[d]) <= 1e-12 * (1 + fabs(want)));
      }
    /* sum_to a random broadcast-compatible target equals summing the other dims */
    hl_shape target = s;
    for (int i = 0; i < s.ndim; i++)
      if (draw(2)) target.d[i] = 1;
    hl_tensor *st = hl_tmp(hl_sum_to(x, target));
    OK(st);
    double total = 0, got = 0;
    for (int64_t i = 0; i < hl_numel(x); i++) total += xv[i];
    double *sv = hl_tensor_values(st);
    for (int64_t i = 0; i < hl_numel(st); i++) got += sv[i];
    assert_true(fabs(got - total) <= 1e-12 * (1 + fabs(total)));
    free(xv), free(rv), free(mv), free(sv);
    hl_pool_pop();
  }
}

static void test_views_undo_each_other(void **state) {
  (void)state;
  for (int c = 0; c < 150; c++) {
    hl_pool_push();
    hl_shape s = random_shape(2);
    hl_tensor *x = hl_tmp(hl_randn(s, 0, 1, 9, (uint64_t)c, HL_F32, HL_DEVICE_CPU));
    int perm[HL_MAX_DIMS], inv[HL_MAX_DIMS];
    for (int i = 0; i < s.ndim; i++) perm[i] = i;
    for (int i = s.ndim - 1; i > 0; i--) {
      int j = draw(i + 1), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    for (int i = 0; i < s.ndim; i++) inv[perm[i]] = i;
    hl_tensor *p = hl_tmp(hl_permute(x, perm));
    /* a reshape of the permuted view to 1-D and back, then the inverse permutation */
    hl_tensor *flat = hl_tmp(hl_reshape(p, HL_SHAPE(-1)));
    hl_tensor *back = hl_tmp(hl_permute(hl_tmp(hl_reshape(flat, hl_tensor_shape(p))), inv));
    OK(back);
    assert_true(hl_shape_equal(hl_tensor_shape(back), s));
    float *a = malloc(sizeof(float) * (size_t)hl_numel(x)), *b = malloc(sizeof(float) * (size_t)hl_numel(x));
    OK(hl_read_f32(x, a) && hl_read_f32(back, b));
    assert_memory_equal(a, b, sizeof(float) * (size_t)hl_numel(x));
    /* cat of a split along a random dim gives the tensor back */
    int d = draw(s.ndim);
    hl_tensor *parts[2] = {hl_tmp(hl_slice(x, d, 0, s.d[d] / 2)), hl_tmp(hl_slice(x, d, s.d[d] / 2, s.d[d]))};
    hl_tensor *joined = hl_tmp(hl_cat(parts, 2, d));
    OK(joined);
    OK(hl_read_f32(joined, b));
    assert_memory_equal(a, b, sizeof(float) * (size_t)hl_numel(x));
    free(a);
    free(b);
    hl_pool_pop();
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_broadcasting_matches_naive_loops),
      cmocka_unit_test(test_reductions_match_double_sums),
      cmocka_unit_test(test_views_undo_each_other),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
