/* test_gpu_half.c — suite gpu: the device's conversion instructions and half
 * arithmetic against formats/half.h's portable code on the CPU, bit for bit.
 *   - every fp32 encoding -> fp16, bf16, e4m3 / e5m2 (saturating and not), tf32 (rne,
 *     rna): the rounding specs the device has an instruction for;
 *   - every fp32 encoding -> e4m3, e5m2, e2m3, e3m2, e2m1 (nearest even) and
 *     e8m0 (nearest, ties away): the specs the numerics suite checks against
 *     ml_dtypes on the CPU, here the generic rounding on the device (fp6,
 *     fp4, e8m0) against the CPU's;
 *   - every other spec of formats/round.h (each format, fp6, fp4 and e8m0
 *     included, rounding, overflow rule, flushing; stochastic from a Philox
 *     stream), 2^26 inputs each;
 *   - every fp16 / bf16 / fp8 / fp6 / fp4 / e8m0 code decoded;
 *   - +, -, * on every fp16 and bf16 value against 1024 Philox-drawn partners;
 *   - / on every pair of fp16 codes and every pair of bf16 codes (2^32 each).
 * NaN results of the instructions are compared as NaN (payloads differ
 * between instruction sets), except tf32's, which half.h's rule defines on
 * both backends; the generic rounding's bit for bit.
 * Exit 77 (skipped) without a usable GPU; a failure under HALFLAB_REQUIRE_GPU=1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "formats/round.h"
#include "kernels/convert.h"
#include "tests/support/hltest.h"

#define CHUNK (UINT64_C(1) << 26)

static const hl_backend *gpu, *cpu;

static int is_nan_code(hl_dtype f, uint32_t v) {
  const float x = hl_round_decode(f, v);
  return x != x;
}

static uint32_t element(const void *p, size_t size, size_t i) {
  return size == 1 ? ((const uint8_t *)p)[i] : size == 2 ? ((const uint16_t *)p)[i] : ((const uint32_t *)p)[i];
}

static const char *spec_name(const hl_round_spec *s, char *buf, size_t len) {
  snprintf(buf, len, "%s %s%s%s", hl_dtype_format_name(s->format), hl_rounding_name(s->rounding),
           s->overflow == HL_OVERFLOW_SATURATE ? ", saturating" : "", s->flush_subnormals ? ", flushing" : "");
  return buf;
}

/* The device's codes for `n` inputs from `first` against the CPU's; NaN
 * matches NaN where the device runs its instruction (payload rules differ),
 * bit for bit otherwise (tf32's NaN rule is half.h's on both). Returns the
 * differences, the first five printed. */
static uint64_t encode_differences(const hl_round_spec *s, uint32_t first, size_t n, void *dev, void *from_gpu,
                                   void *from_cpu) {
  const size_t size = hl_format_code_bytes(s->format);
  uint32_t ignored;
  const int nan_is_nan = hl_round_bits_fast(s, 0.0f, &ignored) && s->format != HL_TF32;
  gpu->convert->encode_range(s, first, n, dev);
  cpu->convert->encode_range(s, first, n, from_cpu);
  gpu->copy_to_host(from_gpu, dev, n * size);
  if (!memcmp(from_gpu, from_cpu, n * size)) return 0;
  uint64_t bad = 0;
  char name[96];
  for (size_t i = 0; i < n; i++) {
    uint32_t g = element(from_gpu, size, i), h = element(from_cpu, size, i);
    if (g == h || (nan_is_nan && is_nan_code(s->format, g) && is_nan_code(s->format, h))) continue;
    if (bad++ < 5)
      print_error("%s: fp32 0x%08llx -> GPU 0x%x, CPU 0x%x\n", spec_name(s, name, sizeof name),
                  (unsigned long long)first + i, g, h);
  }
  return bad;
}

typedef struct {
  void *dev, *from_gpu, *from_cpu;
} encode_buffers;

static encode_buffers encode_buffers_new(void) {
  encode_buffers b = {gpu->alloc(CHUNK * 4), malloc(CHUNK * 4), malloc(CHUNK * 4)};
  assert_true(b.dev && b.from_gpu && b.from_cpu);
  return b;
}

static void encode_buffers_free(encode_buffers *b) {
  gpu->free(b->dev);
  free(b->from_gpu);
  free(b->from_cpu);
}

/* The specs the device has an instruction for (round.h's fast paths): every fp32 input */
static void test_encode_every_fp32(void **state) {
  (void)state;
  static const struct {
    hl_dtype f;
    hl_rounding r;
    hl_overflow ov;
  } fast[] = {
      {HL_F16, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_IEEE},  {HL_BF16, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_IEEE},
      {HL_TF32, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_IEEE}, {HL_TF32, HL_ROUNDING_NEAREST_AWAY, HL_OVERFLOW_IEEE},
      {HL_E4M3, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_IEEE}, {HL_E4M3, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_SATURATE},
      {HL_E5M2, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_IEEE}, {HL_E5M2, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_SATURATE},
  };
  encode_buffers b = encode_buffers_new();
  char name[96];
  for (size_t k = 0; k < sizeof fast / sizeof fast[0]; k++) {
    const hl_round_spec s = hl_round_spec_make(fast[k].f, fast[k].r, fast[k].ov, false);
    uint32_t ignored;
    assert_true(hl_round_bits_fast(&s, 0.0f, &ignored));
    uint64_t bad = 0;
    for (uint64_t first = 0; first < (UINT64_C(1) << 32); first += CHUNK)
      bad += encode_differences(&s, (uint32_t)first, CHUNK, b.dev, b.from_gpu, b.from_cpu);
    if (bad) fail_msg("%s: %llu of 2^32 conversions differ between GPU and CPU", spec_name(&s, name, sizeof name),
                      (unsigned long long)bad);
  }
  encode_buffers_free(&b);
}

/* The specs test_ml_dtypes.py compares with ml_dtypes on the CPU: every fp32 input */
static void test_encode_every_fp32_narrow(void **state) {
  (void)state;
  static const struct {
    hl_dtype f;
    hl_rounding r;
  } checked[] = {
      {HL_E4M3, HL_ROUNDING_NEAREST_EVEN}, {HL_E5M2, HL_ROUNDING_NEAREST_EVEN}, {HL_E2M3, HL_ROUNDING_NEAREST_EVEN},
      {HL_E3M2, HL_ROUNDING_NEAREST_EVEN}, {HL_E2M1, HL_ROUNDING_NEAREST_EVEN}, {HL_E8M0, HL_ROUNDING_NEAREST_AWAY},
      {HL_E8M0, HL_ROUNDING_NEAREST_EVEN},
  };
  encode_buffers b = encode_buffers_new();
  char name[96];
  for (size_t k = 0; k < sizeof checked / sizeof checked[0]; k++) {
    const hl_round_spec s = hl_round_spec_make(checked[k].f, checked[k].r, HL_OVERFLOW_IEEE, false);
    uint64_t bad = 0;
    for (uint64_t first = 0; first < (UINT64_C(1) << 32); first += CHUNK)
      bad += encode_differences(&s, (uint32_t)first, CHUNK, b.dev, b.from_gpu, b.from_cpu);
    if (bad) fail_msg("%s: %llu of 2^32 conversions differ between GPU and CPU", spec_name(&s, name, sizeof name),
                      (unsigned long long)bad);
  }
  encode_buffers_free(&b);
}

/* Every other spec (the generic rounding on both): 2^26 inputs each, 64 runs
 * of 2^20 spread over the encodings (every sign and exponent) */
static void test_encode_every_spec(void **state) {
  (void)state;
  static const hl_dtype formats[] = {HL_F32, HL_TF32, HL_F16, HL_BF16, HL_E4M3,
                                     HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
  encode_buffers b = encode_buffers_new();
  char name[96];
  for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++)
    for (int r = 0; r < HL_ROUNDINGS; r++)
      for (int ov = 0; ov < 2; ov++)
        for (int flush = 0; flush < 2; flush++) {
          hl_round_spec s = hl_round_spec_make(formats[k], (hl_rounding)r, (hl_overflow)ov, flush);
          s.random_bits = (uint8_t)(ov ? 32 : 5), s.seed = 11, s.stream = k;
          uint64_t bad = 0;
          for (uint64_t run = 0; run < 64; run++)
            bad += encode_differences(&s, (uint32_t)(run << 26 | (run * 0x9e3779u & 0x3f00000u)), 1u << 20, b.dev,
                                      b.from_gpu, b.from_cpu);
          if (bad) fail_msg("%s: %llu conversions differ between GPU and CPU", spec_name(&s, name, sizeof name),
                            (unsigned long long)bad);
        }
  encode_buffers_free(&b);
}

static void test_decode_every_code(void **state) {
  (void)state;
  const hl_dtype kinds[] = {HL_F16, HL_BF16, HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
  uint32_t *dev = gpu->alloc(65536 * sizeof(uint32_t));
  uint32_t from_gpu[65536], from_cpu[65536];
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    const size_t n = (size_t)1 << hl_format_code_width(kinds[k]);
    gpu->convert->decode_range(kinds[k], 0, n, dev);
    gpu->copy_to_host(from_gpu, dev, n * sizeof(uint32_t));
    cpu->convert->decode_range(kinds[k], 0, n, from_cpu);
    for (size_t i = 0; i < n; i++) {
      int both_nan = (from_gpu[i] & 0x7fffffffu) > 0x7f800000u && (from_cpu[i] & 0x7fffffffu) > 0x7f800000u;
      if (from_gpu[i] != from_cpu[i] && !both_nan)
        fail_msg("%s code 0x%zx decodes to 0x%08x on the GPU, 0x%08x on the CPU", hl_dtype_format_name(kinds[k]), i, from_gpu[i],
                 from_cpu[i]);
    }
  }
  gpu->free(dev);
}

/* Operands and results of n binary operations, on the host and on the device. */
typedef struct {
  size_t n;
  uint16_t *a, *b, *from_gpu, *from_cpu; /* host */
  uint16_t *da, *db, *dout;              /* device */
} binop_buffers;

static binop_buffers binop_buffers_new(size_t n) {
  binop_buffers p = {n, malloc(n * 2), malloc(n * 2), malloc(n * 2), malloc(n * 2),
                     gpu->alloc(n * 2), gpu->alloc(n * 2), gpu->alloc(n * 2)};
  assert_true(p.a && p.b && p.from_gpu && p.from_cpu && p.da && p.db && p.dout);
  return p;
}

static void binop_buffers_free(binop_buffers *p) {
  gpu->free(p->da);
  gpu->free(p->db);
  gpu->free(p->dout);
  free(p->a);
  free(p->b);
  free(p->from_gpu);
  free(p->from_cpu);
}

/* `op` on the operands (already on the device) on both backends; the results that
 * differ (NaN matches NaN), the first five printed. */
static uint64_t binop_differences(binop_buffers *p, hl_dtype kind, char op) {
  gpu->convert->binop(kind, op, p->da, p->db, p->dout, p->n);
  cpu->convert->binop(kind, op, p->a, p->b, p->from_cpu, p->n);
  gpu->copy_to_host(p->from_gpu, p->dout, p->n * 2);
  if (!memcmp(p->from_gpu, p->from_cpu, p->n * 2)) return 0;
  uint64_t bad = 0;
  for (size_t i = 0; i < p->n; i++) {
    uint32_t g = p->from_gpu[i], h = p->from_cpu[i];
    if (g == h || (is_nan_code(kind, g) && is_nan_code(kind, h))) continue;
    if (bad++ < 5)
      print_error("%s 0x%04x %c 0x%04x: GPU 0x%04x, CPU 0x%04x\n", hl_dtype_format_name(kind), p->a[i], op, p->b[i], g, h);
  }
  return bad;
}

static const hl_dtype half_kinds[] = {HL_F16, HL_BF16};

static void test_half_arithmetic(void **state) {
  (void)state;
  binop_buffers p = binop_buffers_new(65536 * 1024); /* every value against 1024 partners */
  for (size_t i = 0; i < p.n; i++) {
    p.a[i] = (uint16_t)(i & 0xffffu);
    p.b[i] = (uint16_t)hl_philox_u32(2024, 7, i);
  }
  gpu->copy_from_host(p.da, p.a, p.n * 2);
  gpu->copy_from_host(p.db, p.b, p.n * 2);
  for (int k = 0; k < 2; k++)
    for (const char *op = "+-*"; *op; op++) {
      const uint64_t bad = binop_differences(&p, half_kinds[k], *op);
      if (bad) fail_msg("%s '%c': %llu of %zu results differ", hl_dtype_format_name(half_kinds[k]), *op, (unsigned long long)bad, p.n);
    }
  binop_buffers_free(&p);
}

/* '/' on all 2^32 operand pairs of each type, 2^26 at a time: a runs through
 * the 65536 codes, b holds the chunk's 1024 divisors, each 65536 times. */
static void test_half_division_every_pair(void **state) {
  (void)state;
  binop_buffers p = binop_buffers_new(CHUNK);
  for (size_t i = 0; i < p.n; i++) p.a[i] = (uint16_t)(i & 0xffffu);
  gpu->copy_from_host(p.da, p.a, p.n * 2);
  for (int k = 0; k < 2; k++) {
    uint64_t bad = 0;
    for (uint64_t first = 0; first < (UINT64_C(1) << 32); first += p.n) {
      for (size_t i = 0; i < p.n; i++) p.b[i] = (uint16_t)((first + i) >> 16);
      gpu->copy_from_host(p.db, p.b, p.n * 2);
      bad += binop_differences(&p, half_kinds[k], '/');
    }
    if (bad) fail_msg("%s '/': %llu of 2^32 quotients differ", hl_dtype_format_name(half_kinds[k]), (unsigned long long)bad);
  }
  binop_buffers_free(&p);
}

int main(void) {
  hl_require_gpu();
  gpu = hl_backend_for(HL_DEVICE_CUDA);
  cpu = hl_backend_for(HL_DEVICE_CPU);
  printf("GPU: %s\n", hl_device_describe(HL_DEVICE_CUDA));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode_every_code),
      cmocka_unit_test(test_half_arithmetic),
      cmocka_unit_test(test_half_division_every_pair),
      cmocka_unit_test(test_encode_every_fp32),
      cmocka_unit_test(test_encode_every_fp32_narrow),
      cmocka_unit_test(test_encode_every_spec),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
