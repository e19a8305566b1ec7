/* test_cuda_plan.c — suite unit: the host-side arithmetic of the CUDA tensor
 * kernels (kernels/cuda/tensor_cuda_plan.h), on the CPU, so that what can go
 * wrong without a GPU is caught without one:
 *   - division by invariant integers (multiply-high and shift) against '/'
 *     for every divisor up to 2^16, the powers of two and their neighbours,
 *     and random large divisors, at edge and random numerators below 2^31;
 *   - coalescing plus index splitting: for random shapes and strides
 *     (contiguous, transposed, sliced, broadcast), the offset of every linear
 *     index of every operand equals the naive row-major walk;
 *   - reduction chunks cover [0, r) exactly once, in order;
 *   - fill bits equal the CPU kernel's stored element for every dtype.
 * Plus a bug found while reviewing the GEMM path for CUDA: a batched
 * product with an empty batch dim but non-empty matrices must not run a
 * GEMM into the empty output (ASan caught the CPU backend writing there). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/engine/ops.h"
#include "formats/philox.h"
#include "core/engine/tensor.h"
#include "kernels/backend.h"
#include "kernels/cuda/tensor_cuda_plan.h"
#include "kernels/tensor_kernels.h"
#include "tests/support/hltest.h"

static uint32_t draw(uint64_t stream, uint64_t i) { return hl_philox_u32(77, stream, i); }

static void check_divisor(uint32_t d, uint64_t stream) {
  const hl_divider v = hl_divider_make(d);
  assert_int_equal(v.divisor, d);
  const uint32_t top = 0x7fffffffu;
  uint32_t edges[] = {0, 1, 2, d - 1, d, d + 1, 2 * d - 1, 2 * d, 2 * d + 1, top, top - 1, top - d + 1, top / d * d,
                      top / d * d - 1};
  for (size_t j = 0; j < sizeof edges / sizeof edges[0]; j++) {
    uint32_t n = edges[j];
    if (n > top) continue;
    if (hl_divider_div(v, n) != n / d) fail_msg("divider %u: %u / %u gave %u", d, n, d, hl_divider_div(v, n));
  }
  for (uint64_t j = 0; j < 64; j++) {
    uint32_t n = draw(stream, j) & top;
    if (hl_divider_div(v, n) != n / d) fail_msg("divider %u: %u / %u gave %u", d, n, d, hl_divider_div(v, n));
  }
}

static void test_divider(void **state) {
  (void)state;
  for (uint32_t d = 1; d <= 65536; d++) check_divisor(d, d);
  for (int s = 1; s <= 31; s++) {
    uint32_t p = 1u << s;
    check_divisor(p - 1, 100000 + (uint64_t)s);
    if (p <= 0x7fffffffu) check_divisor(p, 200000 + (uint64_t)s);
    if (p + 1 <= 0x7fffffffu) check_divisor(p + 1, 300000 + (uint64_t)s);
  }
  for (uint64_t j = 0; j < 20000; j++) {
    uint32_t d = draw(9, j) & 0x7fffffffu;
    if (d) check_divisor(d, 400000 + j);
  }
  /* every numerator for a few divisors, over a range that crosses their multiples */
  const uint32_t some[] = {3, 7, 641, 50257, 1000003};
  for (size_t k = 0; k < 5; k++) {
    const hl_divider v = hl_divider_make(some[k]);
    for (uint32_t n = 0; n < 3000000; n++) assert_true(hl_divider_div(v, n) == n / some[k]);
    for (uint32_t n = 0x7fffffffu - 3000000; n < 0x7fffffffu; n++) assert_true(hl_divider_div(v, n) == n / some[k]);
  }
}

/* naive offset of linear index i over size with strides st */
static int64_t naive_offset(const int64_t size[4], const int64_t st[4], int64_t i) {
  int64_t off = 0;
  for (int d = 3; d >= 0; d--) {
    off += (i % size[d]) * st[d];
    i /= size[d];
  }
  return off;
}

static void test_geometry(void **state) {
  (void)state;
  for (uint64_t trial = 0; trial < 3000; trial++) {
    int64_t size[4], st[3][4];
    for (int d = 0; d < 4; d++) size[d] = 1 + draw(1, trial * 8 + (uint64_t)d) % (d == 3 ? 9 : 5);
    /* operand 0 contiguous; operand 1 a permutation (transposed) or a slice; operand 2 broadcast in random dims */
    int64_t s = 1;
    for (int d = 3; d >= 0; d--) st[0][d] = s, s *= size[d];
    const uint32_t kind = draw(2, trial) % 3;
    if (kind == 0) { /* transposed: dims 2 and 3 swapped in storage */
      int64_t sz2 = size[2], sz3 = size[3];
      st[1][2] = 1, st[1][3] = sz2, st[1][1] = sz2 * sz3, st[1][0] = sz2 * sz3 * size[1];
    } else if (kind == 1) { /* a slice of a wider tensor: padded rows */
      int64_t pad = 1 + draw(3, trial) % 3;
      st[1][3] = 1, st[1][2] = size[3] + pad, st[1][1] = st[1][2] * size[2], st[1][0] = st[1][1] * size[1];
    } else {
      memcpy(st[1], st[0], sizeof st[0]);
    }
    for (int d = 0; d < 4; d++) st[2][d] = (draw(4, trial * 4 + (uint64_t)d) & 1) ? 0 : st[0][d];
    const int64_t *ops[3] = {st[0], st[1], st[2]};
    hl_cuda_geom g = hl_cuda_geom_make(size, ops, 3);
    int64_t total = size[0] * size[1] * size[2] * size[3];
    assert_int_equal(g.total, total);
    assert_true(g.small);
    for (int64_t i = 0; i < total; i++)
      for (int k = 0; k < 3; k++)
        if (hl_cuda_geom_offset(&g, k, i) != naive_offset(size, st[k], i))
          fail_msg("trial %llu operand %d index %lld: offset %lld, want %lld", (unsigned long long)trial, k,
                   (long long)i, (long long)hl_cuda_geom_offset(&g, k, i), (long long)naive_offset(size, st[k], i));
    /* the 64-bit path gives the same offsets */
    g.small = false;
    for (int64_t i = 0; i < total; i++)
      for (int k = 0; k < 3; k++) assert_true(hl_cuda_geom_offset(&g, k, i) == naive_offset(size, st[k], i));
  }
  /* contiguous detection */
  int64_t size[4] = {2, 3, 4, 5}, c[4] = {60, 20, 5, 1}, t[4] = {60, 20, 1, 4};
  const int64_t *cc[2] = {c, c}, *ct[2] = {c, t};
  hl_cuda_geom g = hl_cuda_geom_make(size, cc, 2);
  assert_true(hl_cuda_geom_contiguous(&g, 2));
  assert_int_equal(g.size[3], 120);
  g = hl_cuda_geom_make(size, ct, 2);
  assert_false(hl_cuda_geom_contiguous(&g, 2));
  int64_t one[4] = {1, 1, 1, 1}, z[4] = {0, 0, 0, 0};
  const int64_t *cz[2] = {z, z};
  g = hl_cuda_geom_make(one, cz, 2);
  assert_true(hl_cuda_geom_contiguous(&g, 2));
  /* beyond 2^31 elements: the 64-bit path, spot checks */
  int64_t big[4] = {3, 1000, 1000, 1000}, bs[4] = {1000000000, 1000000, 1000, 1}, bt[4] = {1, 3000000, 3000, 3};
  const int64_t *bo[2] = {bs, bt};
  g = hl_cuda_geom_make(big, bo, 2);
  assert_false(g.small);
  for (uint64_t j = 0; j < 100000; j++) {
    int64_t i = (int64_t)(((uint64_t)draw(5, j) << 32 | draw(6, j)) % (uint64_t)g.total);
    assert_true(hl_cuda_geom_offset(&g, 0, i) == naive_offset(big, bs, i));
    assert_true(hl_cuda_geom_offset(&g, 1, i) == naive_offset(big, bt, i));
  }
}

static void test_chunks(void **state) {
  (void)state;
  const int64_t rs[] = {0, 1, 5, 63, 64, 65, 1000, 1024, 1025, 4096, 50257, 1 << 20, 100000007};
  const int64_t outers[] = {1, 2, 7, 100, 10000, 1 << 20};
  for (size_t a = 0; a < sizeof rs / sizeof rs[0]; a++)
    for (size_t b = 0; b < sizeof outers / sizeof outers[0]; b++)
      for (int kind = 0; kind < 2; kind++) {
        const int64_t r = rs[a];
        const int64_t n = kind ? hl_cuda_row_chunks(outers[b], r, 132 * 64) : hl_cuda_col_chunks(outers[b], r, 132 * 8);
        assert_true(n >= 1 && n <= HL_CUDA_MAX_CHUNKS);
        if (kind && r > 0) assert_true(n == 1 || (r + n - 1) / n >= HL_CUDA_ROW_CHUNK_MIN / 2);
        int64_t next = 0;
        for (int64_t k = 0; k < n; k++) {
          int64_t lo, hi;
          hl_cuda_chunk(r, n, k, &lo, &hi);
          assert_true(lo == next || (lo == r && hi == r));
          assert_true(hi >= lo && hi <= r);
          next = hi;
        }
        assert_int_equal(next, r);
      }
  /* many rows: no splitting */
  assert_int_equal(hl_cuda_row_chunks(1 << 20, 768, 8448), 1);
  assert_int_equal(hl_cuda_col_chunks(1 << 20, 768, 1056), 1);
  /* one long row is split */
  assert_true(hl_cuda_row_chunks(1, 1 << 24, 8448) > 100);
}

static void test_fill_bits(void **state) {
  (void)state;
  const double values[] = {0.0, -0.0, 1.0, -2.5, 0.1, 1e-8, 65519.0, 65520.0, 1e40, -1e40, 3.0e38, 2147483647.6,
                           -2147483649.0, 127.5, 128.5, -128.5, 2.5, 3.5, NAN, INFINITY, -INFINITY, 1.0000000001};
  for (int t = 0; t < HL_TENSOR_DTYPES; t++)
    for (size_t j = 0; j < sizeof values / sizeof values[0]; j++) {
      unsigned char cpu[8] = {0};
      hl_backend_cpu.tensor->fill(cpu, (hl_dtype)t, 1, values[j]);
      uint64_t bits = hl_cuda_fill_bits((hl_dtype)t, values[j]);
      unsigned char mine[8];
      memcpy(mine, &bits, 8);
      if (memcmp(cpu, mine, hl_dtype_size((hl_dtype)t)))
        fail_msg("fill bits of %g as %s differ from the CPU fill", values[j], hl_dtype_name((hl_dtype)t));
      uint32_t words[4];
      hl_cuda_fill_pattern(bits, hl_dtype_size((hl_dtype)t), words);
      unsigned char pat[16];
      memcpy(pat, words, 16);
      for (size_t b = 0; b < 16; b += hl_dtype_size((hl_dtype)t)) assert_memory_equal(pat + b, cpu, hl_dtype_size((hl_dtype)t));
    }
}

/* bmm / matmul with an empty batch dim and non-empty matrices: an empty
 * result, no GEMM into it (a [0,m,n] output has no storage) */
static void test_empty_batch_product(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *a = hl_tmp(hl_zeros(HL_SHAPE(0, 3, 5), HL_F32, HL_DEVICE_CPU));
  hl_tensor *b = hl_tmp(hl_zeros(HL_SHAPE(0, 5, 4), HL_F32, HL_DEVICE_CPU));
  hl_tensor *c = hl_tmp(hl_bmm(a, b));
  if (!c) fail_msg("bmm of empty batches: %s", hl_error());
  assert_int_equal(c->ndim, 3);
  assert_int_equal(c->shape[0], 0);
  assert_int_equal(c->shape[2], 4);
  hl_tensor *a4 = hl_tmp(hl_zeros(HL_SHAPE(2, 0, 3, 5), HL_F32, HL_DEVICE_CPU));
  hl_tensor *w = hl_tmp(hl_zeros(HL_SHAPE(5, 4), HL_F32, HL_DEVICE_CPU));
  hl_tensor *d = hl_tmp(hl_matmul(a4, w));
  if (!d) fail_msg("matmul of empty batches: %s", hl_error());
  assert_int_equal(hl_numel(d), 0);
  /* k == 0: the product is zeros (plus the bias for linear) */
  hl_tensor *x0 = hl_tmp(hl_zeros(HL_SHAPE(3, 0), HL_F32, HL_DEVICE_CPU));
  hl_tensor *w0 = hl_tmp(hl_zeros(HL_SHAPE(4, 0), HL_F32, HL_DEVICE_CPU));
  hl_tensor *bias = hl_tmp(hl_full(HL_SHAPE(4), 1.5, HL_F32, HL_DEVICE_CPU));
  hl_tensor *y = hl_tmp(hl_linear(x0, w0, bias));
  hl_tensor *z = hl_tmp(hl_mm(x0, hl_tmp(hl_transpose(w0, 0, 1))));
  assert_non_null(y);
  assert_non_null(z);
  float yv[12], zv[12];
  assert_true(hl_read_f32(y, yv) && hl_read_f32(z, zv));
  for (int i = 0; i < 12; i++) assert_true(yv[i] == 1.5f && zv[i] == 0.0f);
  hl_pool_pop();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_divider),
      cmocka_unit_test(test_geometry),
      cmocka_unit_test(test_chunks),
      cmocka_unit_test(test_fill_bits),
      cmocka_unit_test(test_empty_batch_product),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
