/* test_optim_kernels.c — suite unit: the CPU optimizer and clipping kernels
 * (kernels/cpu/optim_cpu.c) called directly. Their fast paths for dense
 * f32 tensors must compute what the element formulas of kernels/optim_math.h
 * compute (the CUDA twins call those): AdamW bit for bit, with the same
 * count of absorbed updates; the L2 norm of many tensors and chunks within
 * one f32 ulp of the norm of an exact (long double) sum of squares, the same
 * whatever the number of threads, with inf and NaN propagating. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/optim_kernels.h"
#include "kernels/optim_math.h"
#include "tests/support/hltest.h"

static const struct hl_optim_kernels *K(void) { return hl_backend_cpu.optim; }

/* uniform in [-1, 1) times 2^e with e in [-20, 4]: gradients and weights of many magnitudes */
static float value(uint64_t stream, uint64_t i) {
  const float u = hl_u32_to_unit_float(hl_philox_u32(5, stream, 2 * i)) * 2.0f - 1.0f;
  const int e = (int)(hl_philox_u32(5, stream, 2 * i + 1) % 25) - 20;
  return ldexpf(u, e);
}

static float *filled(int64_t n, uint64_t stream, bool positive) {
  float *p = malloc(sizeof(float) * (size_t)n);
  assert_non_null(p);
  for (int64_t i = 0; i < n; i++) p[i] = positive ? fabsf(value(stream, (uint64_t)i)) : value(stream, (uint64_t)i);
  return p;
}

/* ---------------------------------------------------------------- AdamW -- */

static void adamw_matches_element_formula(const hl_adamw_args *a) {
  /* sizes around the chunk and vector widths, one above the parallel threshold */
  static const int64_t sizes[] = {1, 7, 8, 17, 16384, 16385, 300001};
  enum { N = sizeof sizes / sizeof sizes[0] };
  float *p[N], *g[N], *m[N], *v[N], *p_ref[N], *m_ref[N], *v_ref[N];
  hl_optim_entry e[N];
  uint64_t absorbed_ref = 0;
  for (int t = 0; t < N; t++) {
    const int64_t n = sizes[t];
    p[t] = filled(n, 10 * (uint64_t)t, false), g[t] = filled(n, 10 * (uint64_t)t + 1, false);
    m[t] = filled(n, 10 * (uint64_t)t + 2, false), v[t] = filled(n, 10 * (uint64_t)t + 3, true);
    /* some gradients zero and tiny: updates the weights absorb */
    for (int64_t i = 0; i < n; i += 5) g[t][i] = 0.0f, m[t][i] = 0.0f;
    p_ref[t] = malloc(sizeof(float) * (size_t)n), m_ref[t] = malloc(sizeof(float) * (size_t)n),
    v_ref[t] = malloc(sizeof(float) * (size_t)n);
    memcpy(p_ref[t], p[t], sizeof(float) * (size_t)n), memcpy(m_ref[t], m[t], sizeof(float) * (size_t)n),
        memcpy(v_ref[t], v[t], sizeof(float) * (size_t)n);
    e[t] = (hl_optim_entry){.param = p[t], .grad = g[t], .buf1 = m[t], .buf2 = v[t], .numel = n,
                            .step_size = 1e-3f / (1.0f - 0.9f), .bias_correction2_sqrt = sqrtf(1.0f - 0.999f),
                            .param_dtype = HL_F32};
    hl_optim_entry r = e[t];
    r.param = p_ref[t], r.buf1 = m_ref[t], r.buf2 = v_ref[t];
    for (int64_t i = 0; i < n; i++) absorbed_ref += (uint64_t)hl_om_adamw_at(&r, i, a);
  }
  uint64_t absorbed = 0;
  K()->adamw(e, N, a, &absorbed);
  for (int t = 0; t < N; t++) {
    for (int64_t i = 0; i < sizes[t]; i++) {
      if (hl_f32_bits(p[t][i]) != hl_f32_bits(p_ref[t][i]) || hl_f32_bits(m[t][i]) != hl_f32_bits(m_ref[t][i]) ||
          hl_f32_bits(v[t][i]) != hl_f32_bits(v_ref[t][i]))
        fail_msg("tensor %d element %lld: p %a m %a v %a, the element formula gives p %a m %a v %a", t, (long long)i,
                 (double)p[t][i], (double)m[t][i], (double)v[t][i], (double)p_ref[t][i], (double)m_ref[t][i],
                 (double)v_ref[t][i]);
    }
    free(p[t]), free(g[t]), free(m[t]), free(v[t]), free(p_ref[t]), free(m_ref[t]), free(v_ref[t]);
  }
  assert_true(absorbed_ref > 0); /* the case is exercised */
  assert_true(absorbed == absorbed_ref);
}

static void test_adamw_f32_bit_for_bit(void **state) {
  (void)state;
  hl_adamw_args a = {.decay = 1.0f - 1e-3f * 0.01f, .one_minus_beta1 = 0.1f, .beta2 = 0.999f, .one_minus_beta2 = 0.001f,
                     .eps = 1e-8f, .decoupled_decay = 1};
  adamw_matches_element_formula(&a);
  /* no weight decay, and beta1 below 0.5 (lerp's other branch) */
  a.decay = 1.0f, a.decoupled_decay = 0, a.one_minus_beta1 = 0.7f;
  adamw_matches_element_formula(&a);
}

/* ------------------------------------------------------------ L2 norm -- */

static float grad_norm(const hl_grad_view *g, int n) {
  void *scratch = malloc(K()->grad_norm_scratch(g, n));
  float out[2];
  K()->grad_norm(g, n, HL_NORM_L2, 1.0, scratch, out);
  free(scratch);
  return out[0];
}

static hl_grad_view dense_view(const float *x, int64_t n) {
  hl_grad_view v = {.dst = (void *)x, .src = x, .dst_dtype = HL_F32, .src_dtype = HL_F32, .numel = n, .dense = 1};
  v.size[HL_MAX_DIMS - 1] = n;
  v.dst_stride[HL_MAX_DIMS - 1] = v.src_stride[HL_MAX_DIMS - 1] = 1;
  return v;
}

static void test_l2_norm_f32(void **state) {
  (void)state;
  static const int64_t sizes[] = {3, 8, 9, 16383, 16384, 16385, 100000, 250001};
  enum { N = sizeof sizes / sizeof sizes[0] };
  float *x[N];
  hl_grad_view g[N];
  long double exact = 0;
  for (int t = 0; t < N; t++) {
    x[t] = filled(sizes[t], 100 + (uint64_t)t, false);
    g[t] = dense_view(x[t], sizes[t]);
    for (int64_t i = 0; i < sizes[t]; i++) exact += (long double)x[t][i] * x[t][i];
  }
  const float want = (float)sqrtl(exact);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const float one = grad_norm(g, N);
  omp_set_num_threads(threads > 1 ? threads : 2);
  const float many = grad_norm(g, N);
  omp_set_num_threads(threads);
  assert_true(hl_f32_bits(one) == hl_f32_bits(many));
  /* the f64 sum's relative error is far below one f32 ulp: the norm is the
   * exact one rounded, or its neighbour where the exact one is near a tie */
  assert_true(fabs((double)one - (double)want) <= ldexp(fabs((double)want), -23));
  /* inf and NaN propagate into the norm */
  x[3][77] = INFINITY;
  assert_true(isinf(grad_norm(g, N)));
  x[5][16384] = NAN;
  assert_true(isnan(grad_norm(g, N)));
  for (int t = 0; t < N; t++) free(x[t]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_adamw_f32_bit_for_bit),
      cmocka_unit_test(test_l2_norm_f32),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
