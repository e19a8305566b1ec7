/* test_stream_cpu.c — suite unit: the CPU backend of kernels/stream.h
 * against references written here element by element with formats/half.h,
 * on every path (kernels/cpu/stream_cpu.h's loops: portable, avx2, avx512)
 * this CPU has for each type.
 *
 * Element-wise kernels must match bit for bit, NaN payloads included (a NaN
 * from two NaN operands may carry either's payload), at lengths
 * around the 8- and 16-lane vector steps and the 4096-element chunk, with
 * values that overflow, underflow into fp16 and fp32 subnormals and include
 * inf and NaN (with payloads). dot must be within (4096 + 8) u32 sum|a b| of
 * the exact sum: fp32 partial sums of at most one chunk, added in fp64; the
 * vector paths must give the same bits. (The array conversions of
 * kernels/cpu/half_arrays.h: tests/format/test_half_paths.c.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/cpu/stream_cpu.h"
#include "kernels/stream.h"
#include "tests/support/hltest.h"

static const struct hl_stream_kernels *S(void) { return hl_backend_cpu.stream; }

static float widen(hl_dtype t, const void *p, size_t i) {
  if (t == HL_F32) return ((const float *)p)[i];
  uint16_t v = ((const uint16_t *)p)[i];
  return t == HL_F16 ? hl_f16_to_f32(v) : hl_bf16_to_f32(v);
}

static uint32_t narrow_bits(hl_dtype t, float v) {
  if (t == HL_F32) return hl_f32_bits(v);
  return t == HL_F16 ? hl_f32_to_f16(v) : hl_f32_to_bf16(v);
}

static uint32_t bits_at(hl_dtype t, const void *p, size_t i) {
  return t == HL_F32 ? ((const uint32_t *)p)[i] : ((const uint16_t *)p)[i];
}

static int is_nan_bits(hl_dtype t, uint32_t b) {
  return t == HL_F32 ? isnan(hl_f32_from_bits(b)) : t == HL_F16 ? hl_f16_isnan((uint16_t)b)
                                                                              : hl_bf16_isnan((uint16_t)b);
}

/* Random values of every kind: ordinary magnitudes, large ones that
 * overflow fp16 once scaled, tiny ones in fp16's and fp32's subnormal
 * ranges (bf16 keeps fp32's), inf, NaN with a random payload. */
static float draw(uint64_t stream, size_t i) {
  uint32_t u = hl_philox_u32(77, stream, i), k = hl_philox_u32(78, stream, i);
  float x = hl_u32_to_unit_float(u) * 2.0f - 1.0f;
  switch (k % 16) {
    case 0: return x * 60000.0f;
    case 1: return x * 1e-6f;
    case 2: return x * 3e-8f;
    case 3: return k & 16 ? INFINITY : -INFINITY;
    case 4: return (k & 32) ? hl_f32_from_bits(0x7f800000u | (k & 0x807fffffu) | 0x100u) : x * 1e30f;
    case 5: return x * 0x1p-127f;
    default: return x * 4.0f;
  }
}

static void *array(hl_dtype t, size_t n, uint64_t stream) {
  void *p = hl_backend_cpu.alloc(n * hl_dtype_size(t) + 1);
  assert_non_null(p);
  for (size_t i = 0; i < n; i++) {
    uint32_t b = narrow_bits(t, draw(stream, i));
    if (t == HL_F32) ((uint32_t *)p)[i] = b;
    else ((uint16_t *)p)[i] = (uint16_t)b;
  }
  return p;
}

/* two_nans: the operands were both NaN, so which payload survives is the
 * compiler's choice of operand order (IEEE 754 leaves it open) */
static void expect_bits(hl_dtype t, const char *path, const void *got, size_t i, float want, bool two_nans,
                        const char *what, size_t n) {
  uint32_t g = bits_at(t, got, i), w = narrow_bits(t, want);
  if (two_nans && is_nan_bits(t, w) && is_nan_bits(t, g)) return;
  if (g != w)
    fail_msg("%s %s (path %s) n=%zu: element %zu is 0x%x, want 0x%x (%.9g)", hl_dtype_name(t), what, path, n, i, g,
             w, (double)want);
}

static const size_t lengths[] = {0, 1, 7, 8, 9, 17, 4095, 4096, 4097, 3 * 4096 + 13, 100003};
#define NLENGTHS (sizeof lengths / sizeof lengths[0])

/* Runs check(t) on every path this CPU has for t, then restores the choice */
static void on_every_path(hl_dtype t, void (*check)(hl_dtype t, const char *path)) {
  const hl_cpu_half_path chosen = hl_cpu_stream_path(t);
  for (hl_cpu_half_path p = HL_HALF_PATH_PORTABLE; p < HL_HALF_PATH_COUNT; p++)
    if (hl_cpu_stream_set_path(t, p)) check(t, hl_cpu_half_path_name(p));
  assert_true(hl_cpu_stream_set_path(t, chosen));
}

/* every kernel, both store kinds (regular; streaming where the arrays are
 * aligned), aligned arrays and arrays one element off alignment */
static void elementwise_bit_exact(hl_dtype t, const char *path) {
  const float s = 3.0f; /* 60000 * 3 overflows fp16 */
  static const hl_cpu_store_mode modes[2] = {HL_CPU_STORES_REGULAR, HL_CPU_STORES_STREAMING};
  for (int mode = 0; mode < 2; mode++)
    for (int offset = 0; offset < 2; offset++)
      for (size_t li = 0; li < NLENGTHS; li++) {
        hl_cpu_stream_set_stores(modes[mode]);
        const size_t n = lengths[li], es = hl_dtype_size(t);
        char *ba = array(t, n + 1, 1), *bb = array(t, n + 1, 2), *bc = array(t, n + 1, 3), *bo = array(t, n + 1, 4);
        void *a = ba + offset * es, *b = bb + offset * es, *c = bc + offset * es, *o = bo + offset * es;
        S()->copy(t, a, o, n);
        for (size_t i = 0; i < n; i++) assert_int_equal(bits_at(t, o, i), bits_at(t, a, i));
        S()->scale(t, o, c, s, n);
        for (size_t i = 0; i < n; i++) expect_bits(t, path, o, i, s * widen(t, c, i), false, "scale", n);
        S()->add(t, a, b, o, n);
        for (size_t i = 0; i < n; i++) {
          const float x = widen(t, a, i), y = widen(t, b, i);
          expect_bits(t, path, o, i, x + y, isnan(x) && isnan(y), "add", n);
        }
        S()->triad(t, o, b, c, s, n);
        for (size_t i = 0; i < n; i++) {
          const float x = widen(t, b, i), p = s * widen(t, c, i); /* rounded to fp32 before the sum, as the kernels do */
          expect_bits(t, path, o, i, x + p, isnan(x) && isnan(p), "triad", n);
        }
        hl_backend_cpu.free(ba), hl_backend_cpu.free(bb), hl_backend_cpu.free(bc), hl_backend_cpu.free(bo);
      }
  hl_cpu_stream_set_stores(HL_CPU_STORES_AUTO);
}

static void test_elementwise_bit_exact(void **state) {
  (void)state;
  for (hl_dtype t = HL_F32; t <= HL_BF16; t++) on_every_path(t, elementwise_bit_exact);
  assert_true(hl_cpu_stream_nt_threshold() >= (1u << 20)); /* a last-level cache, not zero */
}

/* finite values only: dot of arrays holding inf/NaN is inf/NaN, not a bound */
static void *finite_array(hl_dtype t, size_t n, uint64_t stream) {
  void *p = hl_backend_cpu.alloc(n * hl_dtype_size(t) + 1);
  assert_non_null(p);
  for (size_t i = 0; i < n; i++) {
    uint32_t b = narrow_bits(t, (hl_u32_to_unit_float(hl_philox_u32(5, stream, i)) - 0.25f) * 2.0f);
    if (t == HL_F32) ((uint32_t *)p)[i] = b;
    else ((uint16_t *)p)[i] = (uint16_t)b;
  }
  return p;
}

/* the result on the first vector path, which every other one must equal */
static double vector_dot_[HL_STREAM_DTYPES][NLENGTHS];
static bool vector_dot_seen_[HL_STREAM_DTYPES][NLENGTHS];

static void dot_bound(hl_dtype t, const char *path) {
  for (size_t li = 0; li < NLENGTHS; li++) {
    const size_t n = lengths[li] * 3; /* also 300009 elements: many chunks */
    void *a = finite_array(t, n, 1), *b = finite_array(t, n, 2);
    double exact = 0, mag = 0;
    for (size_t i = 0; i < n; i++) {
      double p = (double)widen(t, a, i) * widen(t, b, i);
      exact += p;
      mag += fabs(p);
    }
    double got = S()->dot(t, a, b, n);
    double bound = (4096.0 + 8.0) * 0x1p-24 * mag;
    /* a missed or doubled element would be far outside */
    if (!(fabs(got - exact) <= bound))
      fail_msg("%s dot (path %s) n=%zu: %.12g, exact %.12g, bound %.3g", hl_dtype_name(t), path, n, got, exact,
               bound);
    if (strcmp(path, "portable")) {
      double *first = &vector_dot_[hl_stream_slot(t)][li];
      if (vector_dot_seen_[hl_stream_slot(t)][li] && got != *first)
        fail_msg("%s dot n=%zu: path %s gives %.17g, another vector path %.17g", hl_dtype_name(t), n, path, got,
                 *first);
      *first = got, vector_dot_seen_[hl_stream_slot(t)][li] = true;
    }
    hl_backend_cpu.free(a), hl_backend_cpu.free(b);
  }
}

static void test_dot_bound(void **state) {
  (void)state;
  for (hl_dtype t = HL_F32; t <= HL_BF16; t++) on_every_path(t, dot_bound);
}

static void test_init(void **state) {
  (void)state;
  for (hl_dtype t = HL_F32; t <= HL_BF16; t++) {
    const size_t n = 3 * 4096 + 5;
    void *a = array(t, n, 1), *b = array(t, n, 2), *c = array(t, n, 3);
    S()->init(t, a, b, c, n, 0.1f, 0.2f, 0.0f);
    for (size_t i = 0; i < n; i++) {
      assert_int_equal(bits_at(t, a, i), narrow_bits(t, 0.1f));
      assert_int_equal(bits_at(t, b, i), narrow_bits(t, 0.2f));
      assert_int_equal(bits_at(t, c, i), narrow_bits(t, 0.0f));
    }
    hl_backend_cpu.free(a), hl_backend_cpu.free(b), hl_backend_cpu.free(c);
  }
  assert_null(S()->host_alloc_pinned);
}

/* every reference copy copies every byte and nothing past the end, at
 * sizes below one element, one vector, one chunk and across threads, from
 * and to addresses off any alignment */
static void test_reference_copies(void **state) {
  (void)state;
  static const size_t sizes[] = {1, 3, 31, 63, 64, 65, 16384, 16385, 3 * 16384 + 7, 1000001};
  int copies = 0;
  while (S()->copy_ref_name(copies)) copies++;
  assert_true(copies >= 3); /* memcpy, memcpy-omp, copy-loop; copy-loop-nt where the CPU has AVX2 */
  assert_string_equal(S()->copy_ref_name(0), "memcpy");
  for (int which = 0; which < copies; which++)
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
      for (size_t off = 0; off < 2; off++) {
        const size_t bytes = sizes[k];
        unsigned char *src = malloc(bytes + 48), *dst = malloc(bytes + 48);
        assert_non_null(src);
        assert_non_null(dst);
        for (size_t i = 0; i < bytes + 48; i++) src[i] = (unsigned char)(i * 7 + 3), dst[i] = 0xee;
        S()->copy_ref(which, dst + off * 5, src + off * 3, bytes);
        assert_memory_equal(dst + off * 5, src + off * 3, bytes);
        for (size_t i = 0; i < off * 5; i++) assert_int_equal(dst[i], 0xee);                 /* nothing before */
        for (size_t i = bytes + off * 5; i < bytes + 48; i++) assert_int_equal(dst[i], 0xee); /* nor past the end */
        free(src), free(dst);
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_elementwise_bit_exact),
      cmocka_unit_test(test_dot_bound),
      cmocka_unit_test(test_init),
      cmocka_unit_test(test_reference_copies),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
