/* test_stream_gpu.c — suite gpu: the CUDA bandwidth kernels against the CPU
 * twins on the same inputs. Exits 77 (skipped) without a GPU.
 *
 * Element-wise kernels: bit for bit (NaN: any NaN), on the 16-byte vector
 * path and on the one-element path (arrays offset by one element), at lengths
 * that leave a tail after the last whole vector. dot: both within
 * (4096 + 256 + 8) u32 sum|a b| of the exact sum (fp32 partials of at most a
 * chunk / a thread's share plus a block's tree, added in fp64). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/stream.h"
#include "tests/support/hltest.h"

static const hl_backend *gpu, *cpu;

static uint32_t encode(hl_dtype t, float v) {
  if (t == HL_F32) return hl_f32_bits(v);
  return t == HL_F16 ? hl_f32_to_f16(v) : hl_f32_to_bf16(v);
}

static uint32_t bits_at(hl_dtype t, const void *p, size_t i) {
  return t == HL_F32 ? ((const uint32_t *)p)[i] : ((const uint16_t *)p)[i];
}

static double value_at(hl_dtype t, const void *p, size_t i) {
  uint32_t b = bits_at(t, p, i);
  return t == HL_F32 ? hl_f32_from_bits(b) : t == HL_F16 ? hl_f16_to_f32((uint16_t)b) : hl_bf16_to_f32((uint16_t)b);
}

static int nan_bits(hl_dtype t, uint32_t b) {
  return t == HL_F32 ? isnan(hl_f32_from_bits(b)) : t == HL_F16 ? hl_f16_isnan((uint16_t)b) : hl_bf16_isnan((uint16_t)b);
}

/* ordinary values, overflowing ones, subnormal-range ones, inf and NaN */
static float draw(uint64_t s, size_t i, bool finite) {
  uint32_t u = hl_philox_u32(5, s, i), k = hl_philox_u32(6, s, i);
  float x = hl_u32_to_unit_float(u) * 2.0f - 1.0f;
  if (finite) return x;
  switch (k % 16) {
    case 0: return x * 60000.0f;
    case 1: return x * 1e-6f;
    case 2: return x * 3e-8f;
    case 3: return INFINITY;
    case 4: return NAN;
    default: return x * 4.0f;
  }
}

/* host array of n + 1 elements (room for the offset views) */
static void *host_array(hl_dtype t, size_t n, uint64_t s, bool finite) {
  size_t es = hl_dtype_size(t);
  void *p = malloc(es * (n + 1));
  assert_non_null(p);
  for (size_t i = 0; i < n + 1; i++) {
    uint32_t b = encode(t, draw(s, i, finite));
    if (es == 4) ((uint32_t *)p)[i] = b;
    else ((uint16_t *)p)[i] = (uint16_t)b;
  }
  return p;
}

static void *device_copy(const void *h, size_t bytes) {
  void *d = gpu->alloc(bytes);
  assert_non_null(d);
  gpu->copy_from_host(d, h, bytes);
  return d;
}

static void same_bits(hl_dtype t, const void *want, const void *got, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    uint32_t w = bits_at(t, want, i), g = bits_at(t, got, i);
    if (w == g || (nan_bits(t, w) && nan_bits(t, g))) continue;
    fail_msg("%s %s n=%zu: element %zu GPU 0x%x, CPU 0x%x", hl_dtype_name(t), what, n, i, g, w);
  }
}

static const size_t lengths[] = {1, 7, 8, 9, 4097, 100003, 1 << 20};

static void test_elementwise_bit_exact(void **state) {
  (void)state;
  const float s = 3.0f;
  for (hl_dtype t = HL_F32; t <= HL_BF16; t++)
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
      for (int offset = 0; offset < 2; offset++) { /* 0: vector path; 1: misaligned, one-element path */
        const size_t n = lengths[li], es = hl_dtype_size(t), bytes = es * (n + 1);
        void *a = host_array(t, n, 1, false), *b = host_array(t, n, 2, false), *c = host_array(t, n, 3, false);
        void *o = malloc(bytes), *back = malloc(bytes);
        assert_true(o && back);
        void *da = device_copy(a, bytes), *db = device_copy(b, bytes), *dc = device_copy(c, bytes);
        void *dout = gpu->alloc(bytes);
        assert_non_null(dout);
        char *ga = (char *)da + offset * es, *gb = (char *)db + offset * es, *gc = (char *)dc + offset * es;
        char *go = (char *)dout + offset * es;
        char *ha = (char *)a + offset * es, *hb = (char *)b + offset * es, *hc = (char *)c + offset * es;
        const char *names[4] = {"copy", "scale", "add", "triad"};
        for (int k = 0; k < 4; k++) {
          switch (k) {
            case 0: cpu->stream->copy(t, ha, o, n), gpu->stream->copy(t, ga, go, n); break;
            case 1: cpu->stream->scale(t, o, hc, s, n), gpu->stream->scale(t, go, gc, s, n); break;
            case 2: cpu->stream->add(t, ha, hb, o, n), gpu->stream->add(t, ga, gb, go, n); break;
            default: cpu->stream->triad(t, o, hb, hc, s, n), gpu->stream->triad(t, go, gb, gc, s, n); break;
          }
          gpu->synchronize();
          gpu->copy_to_host(back, go, es * n);
          same_bits(t, o, back, n, names[k]);
        }
        gpu->free(da), gpu->free(db), gpu->free(dc), gpu->free(dout);
        free(a), free(b), free(c), free(o), free(back);
      }
}

static void test_dot(void **state) {
  (void)state;
  for (hl_dtype t = HL_F32; t <= HL_BF16; t++)
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
      for (int offset = 0; offset < 2; offset++) {
        const size_t n = lengths[li] * 3, es = hl_dtype_size(t), bytes = es * (n + 1);
        void *a = host_array(t, n, 7, true), *b = host_array(t, n, 8, true);
        void *da = device_copy(a, bytes), *db = device_copy(b, bytes);
        const char *ha = (char *)a + offset * es, *hb = (char *)b + offset * es;
        double exact = 0, mag = 0;
        for (size_t i = 0; i < n; i++) {
          double p = value_at(t, ha, i) * value_at(t, hb, i);
          exact += p, mag += fabs(p);
        }
        const double bound = (4096.0 + 256.0 + 8.0) * 0x1p-24 * mag;
        const double g = gpu->stream->dot(t, (char *)da + offset * es, (char *)db + offset * es, n);
        const double c = cpu->stream->dot(t, ha, hb, n);
        if (!(fabs(g - exact) <= bound))
          fail_msg("%s dot n=%zu offset %d: GPU %.12g, exact %.12g, bound %.3g", hl_dtype_name(t), n, offset, g,
                   exact, bound);
        assert_true(fabs(c - exact) <= bound);
        gpu->free(da), gpu->free(db);
        free(a), free(b);
      }
}

static void test_init_copy_ref_pinned(void **state) {
  (void)state;
  for (hl_dtype t = HL_F32; t <= HL_BF16; t++) {
    const size_t n = 100003, es = hl_dtype_size(t);
    void *d[3];
    for (int j = 0; j < 3; j++) assert_non_null(d[j] = gpu->alloc(es * n));
    gpu->stream->init(t, d[0], d[1], d[2], n, 0.1f, 0.2f, 0.0f);
    void *h = malloc(es * n);
    assert_non_null(h);
    const float want[3] = {0.1f, 0.2f, 0.0f};
    for (int j = 0; j < 3; j++) {
      gpu->synchronize();
      gpu->copy_to_host(h, d[j], es * n);
      for (size_t i = 0; i < n; i++) assert_int_equal(bits_at(t, h, i), encode(t, want[j]));
      gpu->free(d[j]);
    }
    free(h);
  }
  const size_t bytes = 1000001;
  unsigned char *src = gpu->stream->host_alloc_pinned(bytes), *dst = gpu->stream->host_alloc_pinned(bytes + 16);
  assert_true(src && dst);
  for (size_t i = 0; i < bytes; i++) src[i] = (unsigned char)(i * 13 + 1);
  memset(dst, 0xee, bytes + 16);
  void *d1 = gpu->alloc(bytes), *d2 = gpu->alloc(bytes);
  gpu->copy_from_host(d1, src, bytes);
  assert_non_null(gpu->stream->copy_ref_name(1)); /* the driver's copy and a copy kernel */
  for (int which = 0; gpu->stream->copy_ref_name(which); which++) {
    memset(dst, 0, bytes); /* d2 cleared between the copies */
    gpu->copy_from_host(d2, dst, bytes);
    gpu->stream->copy_ref(which, d2, d1, bytes);
    gpu->synchronize();
    memset(dst, 0xee, bytes + 16);
    gpu->copy_to_host(dst, d2, bytes);
    assert_memory_equal(dst, src, bytes);
    assert_int_equal(dst[bytes], 0xee);
  }
  gpu->free(d1), gpu->free(d2);
  gpu->stream->host_free_pinned(src), gpu->stream->host_free_pinned(dst);
}

int main(void) {
  hl_require_gpu();
  gpu = hl_backend_for(HL_DEVICE_CUDA);
  cpu = hl_backend_for(HL_DEVICE_CPU);
  if (!gpu || !gpu->stream) {
    printf("the CUDA backend has no stream table\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_elementwise_bit_exact),
      cmocka_unit_test(test_dot),
      cmocka_unit_test(test_init_copy_ref_pinned),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
