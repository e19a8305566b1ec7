/* test_quantize_tiles.c — suite unit: the CPU quantizers
 * (kernels/cpu/quantize_cpu.c: tiles, the amax by columns, AVX2 lanes)
 * against the rules' definition written here element by element from
 * kernels/quantize_math.h: a block's amax, its scale, then each element's
 * hl_quant_element_code. Codes, block scales, scale codes, the tensor and
 * encode scales and every stat must match bit for bit, for every rule and
 * element format, row blocks, column blocks, square and odd blocks, odd
 * matrix sizes, nearest-even and stochastic rounding, on random matrices
 * and adversarial ones (zeros, ties, fp32 subnormals, inf, NaN of both
 * signs, values past every scale). Run with every unit the CPU has, and
 * with HALFLAB_CPU_UNITS=portable (meson.build). Also the backend's amax. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/quantize.h"
#include "kernels/quantize_math.h"
#include "tests/support/hltest.h"

/* ------------------------------------------------------------ reference -- */

static float block_amax(const float *x, size_t cols, size_t r0, size_t r1, size_t c0, size_t c1) {
  float amax = 0.0f;
  bool nan = false;
  for (size_t r = r0; r < r1; r++)
    for (size_t c = c0; c < c1; c++) {
      const float a = hl_f32_from_bits(hl_f32_bits(x[r * cols + c]) & 0x7fffffffu);
      nan |= a != a;
      amax = a > amax ? a : amax;
    }
  return nan ? hl_f32_from_bits(0x7fc00000u) : amax;
}

static void reference_quantize(const hl_quant_spec *s, const float *x, size_t rows, size_t cols, hl_quantized *q,
                               hl_quant_stats *st) {
  size_t grid_rows, grid_cols;
  hl_quant_block_grid(s, rows, cols, &grid_rows, &grid_cols);
  const bool tensor = s->rule == HL_SCALE_TENSOR;
  const size_t br = tensor ? rows : s->block_rows, bc = tensor ? cols : s->block_cols;
  const float amax_all = block_amax(x, cols, 0, rows, 0, cols);
  q->tensor_scale = s->rule == HL_SCALE_NVFP4 ? hl_quant_nvfp4_tensor_scale(amax_all) : 1.0f;
  q->encode_scale = 1.0f;
  hl_block_scale tensor_bs = {1.0f, 1.0f, false, 0};
  if (tensor) {
    q->encode_scale = hl_quant_tensor_encode_scale(s, s->tensor_amax >= 0.0f ? s->tensor_amax : amax_all);
    tensor_bs.encode_factor = q->encode_scale;
    tensor_bs.decode = hl_div_rn(1.0f, q->encode_scale);
  }
  memset(st, 0, sizeof *st);
  for (size_t b = 0; b < grid_rows * grid_cols; b++) {
    const size_t r0 = b / grid_cols * br, c0 = b % grid_cols * bc;
    const size_t r1 = r0 + br < rows ? r0 + br : rows, c1 = c0 + bc < cols ? c0 + bc : cols;
    const hl_block_scale bs =
        tensor ? tensor_bs : hl_quant_block_scale(s, block_amax(x, cols, r0, r1, c0, c1), q->tensor_scale);
    q->block_scales[b] = bs.decode;
    if (q->scale_codes) q->scale_codes[b] = bs.code;
    bool block_clipped = false;
    for (size_t r = r0; r < r1; r++)
      for (size_t c = c0; c < c1; c++) {
        const size_t i = r * cols + c;
        const uint32_t random = s->rounding == HL_ROUNDING_STOCHASTIC ? hl_philox_u32(s->seed, s->stream, i) : 0u;
        bool clipped;
        const uint8_t code = hl_quant_element_code(s, bs, x[i], random, &clipped);
        q->codes[i] = code;
        st->zero_in += x[i] == 0.0f;
        st->flushed_to_zero += x[i] != 0.0f && hl_quant_code_is_zero(s->element, code);
        st->subnormal += hl_quant_code_is_subnormal(s->element, code);
        st->clipped += clipped;
        block_clipped |= clipped;
      }
    st->blocks_clipped += block_clipped;
  }
  st->elements = (uint64_t)rows * cols;
  st->blocks = (uint64_t)grid_rows * grid_cols;
  st->amax = amax_all;
}

/* ------------------------------------------------------------- matrices -- */

enum { KINDS = 7 };
static const char *const kKindNames[KINDS] = {"normal", "wide", "ties", "specials", "zeros", "huge", "tiny"};

/* value i of a matrix of kind `kind` */
static float value(int kind, uint64_t seed, size_t i) {
  const uint32_t u = hl_philox_u32(seed, 1, i), v = hl_philox_u32(seed, 2, i);
  const float unit = (float)(u >> 8) * 0x1p-24f * 2.0f - 1.0f;
  switch (kind) {
    case 0: return unit * 3.0f;
    case 1: return ldexpf(unit, (int)(v % 80) - 50); /* 2^-50 .. 2^30 */
    case 2: /* few-bit mantissas: exact ties of every narrow format after power-of-two scales */
      return ldexpf((float)((int)(u % 64) - 32) * 0.0625f, (int)(v % 24) - 12);
    case 3: {
      static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1e-45f, -1e-40f, 0x1p-126f, 448.0f,
                                       464.0f, 480.0f, 57344.0f, 61440.0f, 6.0f, 7.5f, 28.0f, 3.4e38f};
      if (v % 7 == 0) return hl_f32_from_bits((v & 1u) << 31 | 0x7f800001u | (u & 0x7fffffu)); /* NaN, either sign */
      return v % 3 ? specials[u % 16] : unit;
    }
    case 4: return v % 50 ? (v & 1 ? 0.0f : -0.0f) : unit * 1e-30f;
    case 5: return unit * 3e38f;
    default: /* amax whose scales reach E8M0's and fp32's smallest: 2^-100 .. 2^-149 */
      return ldexpf(unit, -100 - (int)(v % 50));
  }
}

static float *matrix(int kind, uint64_t seed, size_t n) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = value(kind, seed, i);
  return x;
}

/* ------------------------------------------------------------ comparing -- */

typedef struct {
  uint8_t *codes, *scale_codes;
  float *block_scales;
  hl_quantized q;
} buffers;

static buffers buffers_make(const hl_quant_spec *s, size_t rows, size_t cols) {
  size_t gr, gc;
  hl_quant_block_grid(s, rows, cols, &gr, &gc);
  buffers b;
  b.codes = malloc(rows * cols + 1);
  b.block_scales = malloc((gr * gc + 1) * sizeof(float));
  b.scale_codes = malloc(gr * gc + 1);
  memset(b.codes, 0xaa, rows * cols + 1), memset(b.block_scales, 0xaa, (gr * gc + 1) * sizeof(float));
  memset(b.scale_codes, 0xaa, gr * gc + 1);
  b.q = (hl_quantized){b.codes, b.block_scales, b.scale_codes, -7.0f, -7.0f};
  return b;
}

static void buffers_free(buffers *b) { free(b->codes), free(b->block_scales), free(b->scale_codes); }

static int compared, failures;

static void compare(const hl_quant_spec *s, const char *kind, const float *x, size_t rows, size_t cols) {
  buffers want = buffers_make(s, rows, cols), got = buffers_make(s, rows, cols);
  hl_quant_stats ws, gs;
  reference_quantize(s, x, rows, cols, &want.q, &ws);
  memset(&gs, 0x55, sizeof gs);
  hl_backend_cpu.quantize->quantize(s, x, rows, cols, &got.q, &gs);
  size_t gr, gc;
  hl_quant_block_grid(s, rows, cols, &gr, &gc);
  char where[200];
  snprintf(where, sizeof where, "%s %s %ux%u %s %s, %zux%zu", hl_scale_rule_name(s->rule),
           hl_dtype_format_name(s->element), s->block_rows, s->block_cols, hl_rounding_name(s->rounding), kind, rows,
           cols);
  const char *bad = NULL;
  if (memcmp(want.codes, got.codes, rows * cols)) bad = "codes";
  else if (memcmp(want.block_scales, got.block_scales, gr * gc * sizeof(float))) bad = "block scales";
  else if (memcmp(want.scale_codes, got.scale_codes, gr * gc)) bad = "scale codes";
  else if (hl_f32_bits(want.q.tensor_scale) != hl_f32_bits(got.q.tensor_scale)) bad = "tensor scale";
  else if (hl_f32_bits(want.q.encode_scale) != hl_f32_bits(got.q.encode_scale)) bad = "encode scale";
  else if (ws.elements != gs.elements || ws.blocks != gs.blocks || ws.zero_in != gs.zero_in) bad = "counts";
  else if (ws.flushed_to_zero != gs.flushed_to_zero || ws.subnormal != gs.subnormal) bad = "flushed or subnormal";
  else if (ws.clipped != gs.clipped || ws.blocks_clipped != gs.blocks_clipped) bad = "clipped";
  else if (hl_f32_bits(ws.amax) != hl_f32_bits(gs.amax)) bad = "amax";
  buffers quiet = buffers_make(s, rows, cols); /* without stats the vector loop counts nothing: the same codes */
  hl_backend_cpu.quantize->quantize(s, x, rows, cols, &quiet.q, NULL);
  if (!bad && (memcmp(want.codes, quiet.codes, rows * cols) ||
               memcmp(want.block_scales, quiet.block_scales, gr * gc * sizeof(float)) ||
               memcmp(want.scale_codes, quiet.scale_codes, gr * gc)))
    bad = "codes or scales without stats";
  buffers_free(&quiet);
  if (bad && failures++ < 8) fprintf(stderr, "%s: %s differ\n", where, bad);
  if (bad && !strcmp(bad, "codes"))
    for (size_t i = 0; i < rows * cols; i++)
      if (want.codes[i] != got.codes[i]) {
        fprintf(stderr, "  first at %zu: x %a (0x%08x), code 0x%02x, want 0x%02x\n", i, (double)x[i],
                hl_f32_bits(x[i]), got.codes[i], want.codes[i]);
        break;
      }
  compared++;
  buffers_free(&want), buffers_free(&got);
}

/* ---------------------------------------------------------------- specs -- */

static const hl_dtype kElements[] = {HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1};
/* row blocks, column blocks, square, and odd shapes that leave edge blocks */
static const uint32_t kShapes[][2] = {{1, 0}, {0, 1}, {128, 128}, {32, 1}, {3, 5}, {1, 7}, {16, 16}};
/* every kind at the small sizes; the last two (more than one tile across
 * for row blocks, several block rows of 128) with the specials only */
static const size_t kSizes[][2] = {{1, 1}, {37, 45}, {7, 300}, {150, 9}, {2, 33000}, {140, 130}};
enum { SIZES_ALL_KINDS = 4 };

static void compare_spec(const hl_quant_spec *s) {
  for (size_t z = 0; z < sizeof kSizes / sizeof kSizes[0]; z++)
    for (int kind = 0; kind < KINDS; kind++) {
      if (z >= SIZES_ALL_KINDS && kind != 3) continue;
      const size_t rows = kSizes[z][0], cols = kSizes[z][1];
      float *x = matrix(kind, 1000u * z + (uint64_t)kind, rows * cols);
      compare(s, kKindNames[kind], x, rows, cols);
      free(x);
    }
}

static void for_each_shape(hl_quant_spec s) {
  const uint32_t usual = s.block_cols;
  for (size_t k = 0; k < sizeof kShapes / sizeof kShapes[0]; k++) {
    s.block_rows = kShapes[k][0] ? kShapes[k][0] : usual;
    s.block_cols = kShapes[k][1] ? kShapes[k][1] : usual;
    compare_spec(&s);
  }
}

static void test_block_rules(void **state) {
  (void)state;
  const hl_scale_rule rules[] = {HL_SCALE_BLOCK_FP32, HL_SCALE_BLOCK_POW2, HL_SCALE_MX_FLOOR, HL_SCALE_MX_RCEIL};
  for (size_t r = 0; r < 4; r++)
    for (size_t e = 0; e < 5; e++) for_each_shape(hl_quant_spec_make(kElements[e], rules[r]));
  for_each_shape(hl_quant_spec_make(HL_E2M1, HL_SCALE_NVFP4));
  printf("%d comparisons\n", compared);
  assert_int_equal(failures, 0);
}

static void test_tensor_rule(void **state) {
  (void)state;
  for (size_t e = 0; e < 5; e++) {
    hl_quant_spec s = hl_quant_spec_make(kElements[e], HL_SCALE_TENSOR);
    compare_spec(&s);
    s.margin = 3, s.tensor_amax = 100.0f; /* a given amax (delayed scaling) */
    compare_spec(&s);
    s.tensor_amax = 0.0f, s.previous_scale = 0.375f; /* keeps the previous scale */
    compare_spec(&s);
  }
  assert_int_equal(failures, 0);
}

static void test_stochastic(void **state) {
  (void)state;
  const hl_scale_rule rules[] = {HL_SCALE_TENSOR, HL_SCALE_BLOCK_FP32, HL_SCALE_MX_FLOOR, HL_SCALE_MX_RCEIL};
  for (size_t r = 0; r < 4; r++)
    for (size_t e = 0; e < 5; e++) {
      hl_quant_spec s = hl_quant_spec_make(kElements[e], rules[r]);
      s.rounding = HL_ROUNDING_STOCHASTIC, s.random_bits = e % 2 ? 8 : 32, s.seed = 77 + e, s.stream = r;
      compare_spec(&s);
    }
  hl_quant_spec s = hl_quant_spec_make(HL_E2M1, HL_SCALE_NVFP4);
  s.rounding = HL_ROUNDING_STOCHASTIC, s.block_rows = 16, s.block_cols = 1;
  compare_spec(&s);
  assert_int_equal(failures, 0);
}

/* the backend's amax: the largest |x| bit for bit, NaN over all */
static void test_amax(void **state) {
  (void)state;
  for (int kind = 0; kind < KINDS; kind++)
    for (size_t n = 0; n < 300; n += 37) {
      float *x = matrix(kind, 9u + (uint64_t)kind, n);
      const float want = block_amax(x, n ? n : 1, 0, n ? 1 : 0, 0, n);
      assert_int_equal(hl_f32_bits(hl_backend_cpu.quantize->amax(x, n)), hl_f32_bits(want));
      free(x);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_block_rules), cmocka_unit_test(test_tensor_rule),
                                     cmocka_unit_test(test_stochastic), cmocka_unit_test(test_amax)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
