/* test_quantize.c — suite unit: kernels/quantize.h's rules on the CPU, fact
 * by fact: FLOOR clips a block maximum whose mantissa passes the element's
 * and RCEIL does not; blocks of zeros, NaN, inf and fp32 subnormals; NVFP4's
 * two levels; Transformer Engine's margin and kept scale; blocks cut by the
 * matrix's edges; columns as the transpose's rows; the counts; stochastic
 * elements reproducible and unbiased. (quantize_reference.py checks the
 * same kernels against ml_dtypes and torchao on many matrices.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/quantize.h"
#include "tests/support/hltest.h"

static const struct hl_quantize_kernels *cpu;

/* One quantization's outputs, in host memory. */
typedef struct {
  size_t rows, cols, grid_rows, grid_cols;
  hl_quantized q;
  hl_quant_stats stats;
  float *dequantized;
} result;

static result quantize(const hl_quant_spec *s, const float *x, size_t rows, size_t cols) {
  result r = {rows, cols, 0, 0, {0}, {0}, NULL};
  hl_quant_block_grid(s, rows, cols, &r.grid_rows, &r.grid_cols);
  const size_t blocks = r.grid_rows * r.grid_cols;
  r.q.codes = malloc(rows * cols);
  r.q.block_scales = malloc(blocks * sizeof(float));
  r.q.scale_codes = malloc(blocks);
  r.dequantized = malloc(rows * cols * sizeof(float));
  cpu->quantize(s, x, rows, cols, &r.q, &r.stats);
  cpu->dequantize(s, &r.q, rows, cols, r.dequantized);
  return r;
}

static void result_free(result *r) {
  free(r->q.codes), free(r->q.block_scales), free(r->q.scale_codes), free(r->dequantized);
}

static hl_quant_spec spec(hl_dtype element, hl_scale_rule rule) { return hl_quant_spec_make(element, rule); }

static float *filled(size_t n, float v) {
  float *x = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = v;
  return x;
}

/* e4m3: a block maximum of 15 = 1.875 * 2^3 (mantissa above 448's 1.75).
 * FLOOR: 2^(3 - 8), 15 / 2^-5 = 480 clips to 448 (dequantized 14); RCEIL:
 * 2^ceil(log2(15 / 448)) = 2^-4, 15 * 16 = 240 exact. */
static void test_floor_clips_rceil_does_not(void **state) {
  (void)state;
  float *x = filled(32, 1.0f);
  x[7] = 15.0f;
  hl_quant_spec f = spec(HL_E4M3, HL_SCALE_MX_FLOOR), c = spec(HL_E4M3, HL_SCALE_MX_RCEIL);
  result rf = quantize(&f, x, 1, 32), rc = quantize(&c, x, 1, 32);
  assert_int_equal(rf.q.scale_codes[0], 127 - 5);
  assert_true(rf.q.block_scales[0] == 0x1p-5f);
  assert_int_equal(rf.q.codes[7], 0x7e);
  assert_true(rf.dequantized[7] == 14.0f);
  assert_true(rf.dequantized[0] == 1.0f);
  assert_int_equal(rf.stats.clipped, 1);
  assert_int_equal(rf.stats.blocks_clipped, 1);
  assert_int_equal(rc.q.scale_codes[0], 127 - 4);
  assert_true(rc.dequantized[7] == 15.0f);
  assert_int_equal(rc.stats.clipped, 0);
  assert_int_equal(rc.stats.blocks_clipped, 0);
  /* e2m1: 7 = 1.75 * 2^2 passes 6's mantissa 1.5: FLOOR's scale 1 clips it to 6, RCEIL's 2 does not */
  x[7] = 7.0f;
  hl_quant_spec f4 = spec(HL_E2M1, HL_SCALE_MX_FLOOR), c4 = spec(HL_E2M1, HL_SCALE_MX_RCEIL);
  result rf4 = quantize(&f4, x, 1, 32), rc4 = quantize(&c4, x, 1, 32);
  assert_int_equal(rf4.q.scale_codes[0], 127);
  assert_true(rf4.dequantized[7] == 6.0f);
  assert_int_equal(rc4.q.scale_codes[0], 128);
  assert_true(rc4.dequantized[7] == 8.0f); /* 7 / 2 = 3.5: a tie of 3 and 4, to even 4 */
  assert_int_equal(rf4.stats.blocks_clipped, 1);
  assert_int_equal(rc4.stats.blocks_clipped, 0);
  result_free(&rf), result_free(&rc), result_free(&rf4), result_free(&rc4);
  free(x);
}

/* A block of zeros: MX's smallest scale (code 0, 2^-127), NVFP4's smallest
 * E4M3 normal (2^-6, code 0x08) under a tensor scale of 1, the fp32 and
 * power-of-two rules' 1; every code a zero, nothing flushed. */
static void test_zero_block(void **state) {
  (void)state;
  float *x = filled(64, 0.0f);
  x[3] = -0.0f;
  const struct { hl_scale_rule rule; hl_dtype element; uint8_t code; float scale; } cases[] = {
      {HL_SCALE_MX_FLOOR, HL_E4M3, 0, 0x1p-127f}, {HL_SCALE_MX_RCEIL, HL_E2M3, 0, 0x1p-127f},
      {HL_SCALE_NVFP4, HL_E2M1, 0x08, 0x1p-6f},   {HL_SCALE_BLOCK_FP32, HL_E4M3, 0, 1.0f},
      {HL_SCALE_BLOCK_POW2, HL_E4M3, 0, 1.0f}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    hl_quant_spec s = spec(cases[k].element, cases[k].rule);
    result r = quantize(&s, x, 1, 64);
    if (cases[k].rule >= HL_SCALE_MX_FLOOR) assert_int_equal(r.q.scale_codes[0], cases[k].code);
    assert_true(r.q.block_scales[0] == cases[k].scale);
    assert_true(r.q.tensor_scale == 1.0f);
    for (int i = 0; i < 64; i++) assert_true(r.dequantized[i] == 0.0f);
    assert_true(signbit(r.dequantized[3])); /* -0 keeps its sign */
    assert_int_equal(r.stats.zero_in, 64);
    assert_int_equal(r.stats.flushed_to_zero, 0);
    assert_true(r.stats.amax == 0.0f);
    result_free(&r);
  }
  free(x);
}

/* A NaN makes its block's scale NaN (E8M0 0xff, E4M3 0x7f) and every value
 * of that block NaN; the other blocks keep theirs. */
static void test_nan_block(void **state) {
  (void)state;
  float *x = filled(64, 1.5f);
  x[40] = NAN;
  const hl_scale_rule rules[] = {HL_SCALE_MX_FLOOR, HL_SCALE_MX_RCEIL, HL_SCALE_BLOCK_FP32, HL_SCALE_BLOCK_POW2};
  for (size_t k = 0; k < 4; k++) {
    hl_quant_spec s = spec(HL_E4M3, rules[k]);
    s.block_cols = 32;
    result r = quantize(&s, x, 1, 64);
    if (rules[k] <= HL_SCALE_MX_RCEIL && rules[k] >= HL_SCALE_MX_FLOOR) assert_int_equal(r.q.scale_codes[1], 0xff);
    assert_true(isnan(r.q.block_scales[1]));
    for (int i = 32; i < 64; i++) assert_true(isnan(r.dequantized[i]));
    /* block-fp32's 1.5 / (1.5 / 448) may land an ulp from 448 */
    for (int i = 0; i < 32; i++) assert_true(fabsf(r.dequantized[i] - 1.5f) <= 2e-6f);
    assert_true(isnan(r.stats.amax));
    result_free(&r);
  }
  hl_quant_spec s = spec(HL_E2M1, HL_SCALE_NVFP4);
  result r = quantize(&s, x, 1, 64);
  assert_int_equal(r.q.scale_codes[2], 0x7f);
  for (int i = 32; i < 48; i++) assert_true(isnan(r.dequantized[i]));
  assert_true(r.q.tensor_scale == 1.0f); /* a NaN tensor amax: no tensor scale */
  assert_true(r.dequantized[0] == 1.5f); /* scale 1.5 / 6 = 0.25 */
  result_free(&r);
  free(x);
}

/* inf: FLOOR reads fp32's exponent field 255 as 2^128 (2^(128 - 8), code
 * 247 for e4m3, as torchao), RCEIL takes E8M0's largest scale (code 254); the
 * inf saturates to the element's max and counts as clipped. */
static void test_inf_block(void **state) {
  (void)state;
  float *x = filled(32, 1.0f);
  x[5] = -INFINITY;
  hl_quant_spec f = spec(HL_E4M3, HL_SCALE_MX_FLOOR), c = spec(HL_E4M3, HL_SCALE_MX_RCEIL);
  result rf = quantize(&f, x, 1, 32), rc = quantize(&c, x, 1, 32);
  assert_int_equal(rf.q.scale_codes[0], 247);
  assert_int_equal(rc.q.scale_codes[0], 254);
  assert_int_equal(rf.q.codes[5], 0xfe);
  assert_int_equal(rc.q.codes[5], 0xfe);
  assert_true(rf.dequantized[5] == -448.0f * 0x1p120f);
  assert_int_equal(rf.stats.clipped, 1);
  assert_int_equal(rf.stats.flushed_to_zero, 31); /* 1 / 2^120 */
  result_free(&rf), result_free(&rc);
  free(x);
}

/* A block of fp32 subnormals: 2^-142 under FLOOR wants 2^-157, clamped to
 * E8M0's 2^-127, so the elements are 2^-15: a subnormal in e5m2 (normal from
 * 2^-14), a zero in e4m3 (whose least value is 2^-9); RCEIL the same. */
static void test_subnormal_block(void **state) {
  (void)state;
  float *x = filled(32, 0x1p-142f);
  x[0] = 0.0f;
  hl_quant_spec s5 = spec(HL_E5M2, HL_SCALE_MX_FLOOR), s4 = spec(HL_E4M3, HL_SCALE_MX_RCEIL);
  result r5 = quantize(&s5, x, 1, 32), r4 = quantize(&s4, x, 1, 32);
  assert_int_equal(r5.q.scale_codes[0], 0);
  assert_int_equal(r4.q.scale_codes[0], 0);
  assert_true(r5.dequantized[1] == 0x1p-142f);
  assert_int_equal(r5.stats.subnormal, 31);
  assert_int_equal(r5.stats.flushed_to_zero, 0);
  assert_true(r4.dequantized[1] == 0.0f);
  assert_int_equal(r4.stats.flushed_to_zero, 31);
  assert_int_equal(r4.stats.zero_in, 1);
  result_free(&r5), result_free(&r4);
  free(x);
}

/* NVFP4: tensor scale amax / (448 * 6) = 4 for amax 10752; the block holding
 * it gets E4M3's 448 (0x7e), a block of amax 3 gets 3 / 6 / 4 = 0.125
 * (0x20), a block of 1e-6 the clamp at 2^-6 (0x08). */
static void test_nvfp4_two_levels(void **state) {
  (void)state;
  float *x = filled(48, 1e-6f);
  x[3] = -10752.0f;
  for (int i = 16; i < 32; i++) x[i] = i == 20 ? 3.0f : 1.5f;
  hl_quant_spec s = spec(HL_E2M1, HL_SCALE_NVFP4);
  result r = quantize(&s, x, 1, 48);
  assert_true(r.q.tensor_scale == 4.0f);
  assert_int_equal(r.q.scale_codes[0], 0x7e);
  assert_int_equal(r.q.scale_codes[1], 0x20);
  assert_int_equal(r.q.scale_codes[2], 0x08);
  assert_true(r.q.block_scales[1] == 0.125f);
  assert_int_equal(r.q.codes[3], 0xf); /* -6 */
  assert_true(r.dequantized[3] == -10752.0f);
  assert_true(r.dequantized[20] == 3.0f);
  assert_true(r.dequantized[16] == 1.5f);
  assert_true(r.dequantized[40] == 0.0f);
  result_free(&r);
  free(x);
}

/* Transformer Engine: scale = (max / amax) / 2^margin; the codes are x *
 * scale, the block scale 1 / scale; amax 0, inf or NaN (own or given) keeps
 * the previous scale; a scale past fp32 is fp32's largest. */
static void test_tensor_scale(void **state) {
  (void)state;
  float x[4] = {2.0f, -1.0f, 0.5f, 0.0f};
  hl_quant_spec s = spec(HL_E4M3, HL_SCALE_TENSOR);
  s.margin = 1;
  result r = quantize(&s, x, 2, 2);
  assert_true(r.q.encode_scale == 112.0f); /* 448 / 2 / 2 */
  assert_true(r.q.block_scales[0] == 1.0f / 112.0f);
  assert_true(r.dequantized[0] == 224.0f * (1.0f / 112.0f));
  assert_int_equal(r.stats.blocks, 1);
  result_free(&r);
  s.previous_scale = 3.0f;
  const float given[] = {0.0f, INFINITY, NAN, 4.0f};
  const float expect[] = {3.0f, 3.0f, 3.0f, 56.0f};
  for (int k = 0; k < 4; k++) {
    s.tensor_amax = given[k];
    r = quantize(&s, x, 2, 2);
    assert_true(r.q.encode_scale == expect[k]);
    result_free(&r);
  }
  s.tensor_amax = -1.0f;
  s.margin = 0;
  float zeros[4] = {0.0f, 0.0f, 0.0f, 0.0f}, nans[4] = {1.0f, NAN, 0.0f, 0.0f}, tiny[4] = {1e-44f, 0.0f, 0.0f, 0.0f};
  r = quantize(&s, zeros, 2, 2);
  assert_true(r.q.encode_scale == 3.0f);
  result_free(&r);
  r = quantize(&s, nans, 2, 2);
  assert_true(r.q.encode_scale == 3.0f);
  result_free(&r);
  r = quantize(&s, tiny, 2, 2);
  assert_true(r.q.encode_scale == 0x1.fffffep127f);
  for (int i = 1; i < 4; i++) assert_int_equal(r.q.codes[i], 0); /* 0 * scale, not 0 * inf = NaN */
  result_free(&r);
}

/* Blocks cut by the edges: 3 x 70 in 1x32 blocks is a 3 x 3 grid whose last
 * column of blocks holds 6 elements; 130 x 131 in 128x128 is 2 x 2. A block
 * takes its scale from its own elements only. */
static void test_block_edges(void **state) {
  (void)state;
  const size_t rows = 3, cols = 70;
  float *x = filled(rows * cols, 1.0f);
  x[1 * cols + 66] = 1000.0f;
  hl_quant_spec s = spec(HL_E4M3, HL_SCALE_MX_RCEIL);
  result r = quantize(&s, x, rows, cols);
  assert_int_equal(r.grid_rows, 3);
  assert_int_equal(r.grid_cols, 3);
  assert_int_equal(r.stats.blocks, 9);
  for (int b = 0; b < 9; b++) assert_int_equal(r.q.scale_codes[b], b == 5 ? 127 + 2 : 127 - 8);
  assert_true(r.dequantized[1 * cols + 66] == 1024.0f); /* 1000 / 4 = 250 -> 256 in e4m3 */
  assert_true(r.dequantized[1 * cols + 65] == 1.0f);    /* 1 / 4 is exact in e4m3 */
  result_free(&r);
  free(x);

  const size_t n = 130, m = 131;
  float *y = filled(n * m, 0.5f);
  y[129 * m + 130] = 448.0f * 64.0f;
  hl_quant_spec b = spec(HL_E4M3, HL_SCALE_BLOCK_POW2);
  b.block_rows = 128, b.block_cols = 128;
  r = quantize(&b, y, n, m);
  assert_int_equal(r.grid_rows, 2);
  assert_int_equal(r.grid_cols, 2);
  assert_true(r.q.block_scales[0] == 0x1p-9f && r.q.block_scales[1] == 0x1p-9f && r.q.block_scales[2] == 0x1p-9f);
  assert_true(r.q.block_scales[3] == 64.0f);
  assert_true(r.dequantized[129 * m + 130] == 448.0f * 64.0f);
  result_free(&r);
  free(y);
}

static bool stats_equal(const hl_quant_stats *a, const hl_quant_stats *b) {
  return a->elements == b->elements && a->blocks == b->blocks && a->zero_in == b->zero_in &&
         a->flushed_to_zero == b->flushed_to_zero && a->subnormal == b->subnormal && a->clipped == b->clipped &&
         a->blocks_clipped == b->blocks_clipped && !memcmp(&a->amax, &b->amax, sizeof a->amax);
}

/* Random values spread over many binades, with zeros, ties and a few large ones. */
static float *random_matrix(size_t n, uint64_t seed) {
  float *x = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) {
    const uint32_t u = hl_philox_u32(seed, 0, i), v = hl_philox_u32(seed, 1, i);
    const float mant = 1.0f + (float)(u & 0xffff) / 65536.0f;
    const int e = (int)(v % 24) - 12;
    x[i] = (u >> 31 ? -mant : mant) * ldexpf(1.0f, e) * ((v >> 8) % 17 == 0 ? 0.0f : 1.0f);
  }
  return x;
}

/* Columns are the transpose's rows: X in 32x1 (or 16x1, 128x1, 128x128)
 * blocks gives X^T's codes, scales and counts in 1x32 blocks, transposed. */
static void test_columns_are_transposed_rows(void **state) {
  (void)state;
  const size_t rows = 70, cols = 45;
  float *x = random_matrix(rows * cols, 7), *xt = malloc(rows * cols * sizeof(float));
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) xt[c * rows + r] = x[r * cols + c];
  const hl_dtype elements[] = {HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1};
  for (int rule = HL_SCALE_TENSOR; rule < HL_SCALE_RULES; rule++)
    for (int e = 0; e < 5; e++) {
      hl_quant_spec along_rows = spec(elements[e], (hl_scale_rule)rule);
      if (!hl_quant_spec_valid(&along_rows)) continue;
      for (int square = 0; square < 2; square++) {
        hl_quant_spec down_columns = along_rows;
        if (square) along_rows.block_rows = along_rows.block_cols = down_columns.block_rows = down_columns.block_cols = 20;
        else down_columns.block_rows = along_rows.block_cols, down_columns.block_cols = 1;
        result a = quantize(&down_columns, x, rows, cols), b = quantize(&along_rows, xt, cols, rows);
        assert_int_equal(a.grid_rows, b.grid_cols);
        assert_int_equal(a.grid_cols, b.grid_rows);
        for (size_t r = 0; r < rows; r++)
          for (size_t c = 0; c < cols; c++) {
            if (a.q.codes[r * cols + c] != b.q.codes[c * rows + r])
              fail_msg("%s %s: (%zu, %zu) code %#x, transposed %#x", hl_scale_rule_name((hl_scale_rule)rule),
                       hl_dtype_format_name(elements[e]), r, c, a.q.codes[r * cols + c], b.q.codes[c * rows + r]);
            assert_memory_equal(&a.dequantized[r * cols + c], &b.dequantized[c * rows + r], sizeof(float));
          }
        for (size_t i = 0; i < a.grid_rows; i++)
          for (size_t j = 0; j < a.grid_cols; j++) {
            assert_memory_equal(&a.q.block_scales[i * a.grid_cols + j], &b.q.block_scales[j * b.grid_cols + i],
                                sizeof(float));
            if (rule >= HL_SCALE_MX_FLOOR)
              assert_int_equal(a.q.scale_codes[i * a.grid_cols + j], b.q.scale_codes[j * b.grid_cols + i]);
          }
        assert_true(stats_equal(&a.stats, &b.stats));
        result_free(&a), result_free(&b);
      }
    }
  free(x), free(xt);
}

/* The counts, made by hand: e2m1 FLOOR, block 0 with amax 7 (scale 1):
 * 7 and 6.5 clip to 6, 0.2 flushes to 0, 0.5 is e2m1's one subnormal; block
 * 1 of 1.0 and one 1.5, nothing clipped. */
static void test_counts(void **state) {
  (void)state;
  float *x = filled(64, 1.0f);
  x[0] = 7.0f, x[1] = -6.5f, x[2] = 0.2f, x[3] = 0.2f, x[4] = -0.5f, x[5] = 0.0f, x[6] = 0.0f;
  x[40] = 1.5f; /* block 1's scale 2^-2: 1.5 lands on 6 itself, which is not clipped */
  hl_quant_spec s = spec(HL_E2M1, HL_SCALE_MX_FLOOR);
  result r = quantize(&s, x, 1, 64);
  assert_int_equal(r.stats.elements, 64);
  assert_int_equal(r.stats.blocks, 2);
  assert_int_equal(r.stats.clipped, 2);
  assert_int_equal(r.stats.blocks_clipped, 1);
  assert_int_equal(r.stats.flushed_to_zero, 2);
  assert_int_equal(r.stats.subnormal, 1);
  assert_int_equal(r.stats.zero_in, 2);
  assert_true(r.stats.amax == 7.0f);
  assert_int_equal(r.q.codes[1], 0xf);
  assert_int_equal(r.q.codes[4], 0x9);
  assert_int_equal(r.q.codes[40], 0x7);
  result_free(&r);
  free(x);
}

/* Stochastic elements: the same seed and stream give the same codes, another
 * seed others; RCEIL e2m1 with a 6 in every block keeps the scale at 1, so
 * 2.4 rounds to 3 with probability 0.4 and to 2 otherwise: the mean of
 * 31 * 4096 draws is 2.4 within 6 standard deviations (0.0083), nearest-even
 * would give 2. */
static void test_stochastic(void **state) {
  (void)state;
  const size_t n = 32 * 4096;
  float *x = filled(n, 2.4f);
  for (size_t i = 0; i < n; i += 32) x[i] = 6.0f;
  hl_quant_spec s = spec(HL_E2M1, HL_SCALE_MX_RCEIL);
  s.rounding = HL_ROUNDING_STOCHASTIC;
  s.seed = 1234, s.stream = 5;
  result a = quantize(&s, x, 1, n), b = quantize(&s, x, 1, n);
  assert_memory_equal(a.q.codes, b.q.codes, n);
  s.seed = 1235;
  result c = quantize(&s, x, 1, n);
  assert_memory_not_equal(a.q.codes, c.q.codes, n);
  double sum = 0.0;
  size_t count = 0;
  for (size_t i = 0; i < n; i++)
    if (i % 32) sum += a.dequantized[i], count++;
  const double mean = sum / (double)count, sd = sqrt(0.4 * 0.6 / (double)count);
  if (fabs(mean - 2.4) > 6.0 * sd) fail_msg("stochastic mean %.6f, expected 2.4 +- %.6f", mean, 6.0 * sd);
  for (size_t i = 1; i < n; i++)
    if (i % 32) assert_true(a.dequantized[i] == 2.0f || a.dequantized[i] == 3.0f);
  result_free(&a), result_free(&b), result_free(&c);
  free(x);
}

int main(void) {
  cpu = hl_backend_cpu.quantize;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_floor_clips_rceil_does_not),
      cmocka_unit_test(test_zero_block),
      cmocka_unit_test(test_nan_block),
      cmocka_unit_test(test_inf_block),
      cmocka_unit_test(test_subnormal_block),
      cmocka_unit_test(test_nvfp4_two_levels),
      cmocka_unit_test(test_tensor_scale),
      cmocka_unit_test(test_block_edges),
      cmocka_unit_test(test_columns_are_transposed_rows),
      cmocka_unit_test(test_counts),
      cmocka_unit_test(test_stochastic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
