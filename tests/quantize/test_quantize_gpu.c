/* test_quantize_gpu.c — suite gpu: the CUDA quantizers against the CPU's,
 * bit for bit: codes, scale codes, block and tensor scales, dequantized
 * values and counts, for every rule and element format, along rows, down
 * columns and in square blocks, nearest-even and stochastic, on random
 * matrices with zeros, ties, fp32 subnormals, inf and NaN. A NaN matches any
 * NaN; where a NaN was scaled (a NaN input, a block whose scale is NaN) the
 * sign is left out (x86 keeps a NaN's sign, the GPU makes it +, and fp6 and
 * fp4 turn a NaN into +-max). Exits 77 (skipped) without a usable GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/quantize.h"
#include "tests/support/hltest.h"

static const hl_backend *gpu_backend;

static bool same_float(float a, float b) { return hl_f32_bits(a) == hl_f32_bits(b) || (a != a && b != b); }

/* Random values over many binades, with zeros, ties of the narrow formats,
 * fp32 subnormals and (special) an inf and a NaN. */
static float *matrix(size_t n, uint64_t seed, bool special) {
  float *x = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) {
    const uint32_t u = hl_philox_u32(seed, 0, i), v = hl_philox_u32(seed, 1, i);
    const int e = (int)(v % 40) - 20;
    float m = 1.0f + (float)(u & 0xff) / 256.0f; /* few mantissa bits: many ties */
    if ((v >> 8) % 13 == 0) m = 0.0f;
    if ((v >> 8) % 29 == 1) m = 0x1p-130f;
    x[i] = (u >> 31 ? -m : m) * ldexpf(1.0f, e);
  }
  if (special && n > 100) x[37] = INFINITY, x[n - 5] = NAN;
  return x;
}

typedef struct {
  hl_quantized q;
  hl_quant_stats stats;
  float *y;
} outputs;

static void run_cpu(const hl_quant_spec *s, const float *x, size_t rows, size_t cols, size_t blocks, outputs *o) {
  o->q.codes = malloc(rows * cols), o->q.block_scales = malloc(blocks * 4), o->q.scale_codes = malloc(blocks);
  o->y = malloc(rows * cols * 4);
  hl_backend_cpu.quantize->quantize(s, x, rows, cols, &o->q, &o->stats);
  hl_backend_cpu.quantize->dequantize(s, &o->q, rows, cols, o->y);
}

static void run_gpu(const hl_quant_spec *s, const float *x, size_t rows, size_t cols, size_t blocks, outputs *o) {
  const hl_backend *g = gpu_backend;
  const size_t n = rows * cols;
  float *dx = g->alloc(n * 4 + 4), *dy = g->alloc(n * 4 + 4);
  hl_quantized d = {g->alloc(n + 1), g->alloc(blocks * 4 + 4), g->alloc(blocks + 1), 0.0f, 0.0f};
  g->copy_from_host(dx, x, n * 4);
  g->quantize->quantize(s, dx, rows, cols, &d, &o->stats);
  g->quantize->dequantize(s, &d, rows, cols, dy);
  o->q.codes = malloc(n), o->q.block_scales = malloc(blocks * 4), o->q.scale_codes = malloc(blocks);
  o->y = malloc(n * 4);
  g->copy_to_host(o->q.codes, d.codes, n);
  g->copy_to_host(o->q.block_scales, d.block_scales, blocks * 4);
  g->copy_to_host(o->q.scale_codes, d.scale_codes, blocks);
  g->copy_to_host(o->y, dy, n * 4);
  o->q.tensor_scale = d.tensor_scale, o->q.encode_scale = d.encode_scale;
  g->free(dx), g->free(dy), g->free(d.codes), g->free(d.block_scales), g->free(d.scale_codes);
}

static void outputs_free(outputs *o) { free(o->q.codes), free(o->q.block_scales), free(o->q.scale_codes), free(o->y); }

static void compare(const hl_quant_spec *s, const float *x, size_t rows, size_t cols, const char *what) {
  size_t gr, gc;
  hl_quant_block_grid(s, rows, cols, &gr, &gc);
  outputs a, b;
  run_cpu(s, x, rows, cols, gr * gc, &a);
  run_gpu(s, x, rows, cols, gr * gc, &b);
  const bool scale_codes = s->rule >= HL_SCALE_MX_FLOOR;
  for (size_t k = 0; k < gr * gc; k++)
    if (!same_float(a.q.block_scales[k], b.q.block_scales[k]) || (scale_codes && a.q.scale_codes[k] != b.q.scale_codes[k]))
      fail_msg("%s: block %zu: cpu %a (%#x), gpu %a (%#x)", what, k, a.q.block_scales[k], a.q.scale_codes[k],
               b.q.block_scales[k], b.q.scale_codes[k]);
  const size_t br = s->rule == HL_SCALE_TENSOR ? rows : s->block_rows, bc = s->rule == HL_SCALE_TENSOR ? cols : s->block_cols;
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) {
      const size_t i = r * cols + c;
      /* a NaN's sign is the platform's: x86 keeps the input's, the GPU makes it + */
      const bool nan_sign = isnan(a.q.block_scales[r / br * gc + c / bc]) || isnan(x[i]);
      const uint8_t magnitude = s->element == HL_E2M1 ? 0x7 : s->element == HL_E2M3 || s->element == HL_E3M2 ? 0x1f : 0x7f;
      const bool codes_differ = nan_sign ? (a.q.codes[i] & magnitude) != (b.q.codes[i] & magnitude) && !isnan(a.y[i])
                                         : a.q.codes[i] != b.q.codes[i];
      if (codes_differ || !same_float(nan_sign ? fabsf(a.y[i]) : a.y[i], nan_sign ? fabsf(b.y[i]) : b.y[i]))
        fail_msg("%s: (%zu, %zu) x = %a: cpu code %#x value %a, gpu code %#x value %a", what, r, c, x[i], a.q.codes[i],
                 a.y[i], b.q.codes[i], b.y[i]);
    }
  if (!same_float(a.q.tensor_scale, b.q.tensor_scale) || !same_float(a.q.encode_scale, b.q.encode_scale))
    fail_msg("%s: tensor scale cpu %a gpu %a, encode scale cpu %a gpu %a", what, a.q.tensor_scale, b.q.tensor_scale,
             a.q.encode_scale, b.q.encode_scale);
  const hl_quant_stats *p = &a.stats, *g = &b.stats;
  if (p->elements != g->elements || p->blocks != g->blocks || p->zero_in != g->zero_in ||
      p->flushed_to_zero != g->flushed_to_zero || p->subnormal != g->subnormal || p->clipped != g->clipped ||
      p->blocks_clipped != g->blocks_clipped || !same_float(p->amax, g->amax))
    fail_msg("%s: counts differ: cpu zero %llu flushed %llu subnormal %llu clipped %llu blocks_clipped %llu, "
             "gpu %llu %llu %llu %llu %llu",
             what, (unsigned long long)p->zero_in, (unsigned long long)p->flushed_to_zero,
             (unsigned long long)p->subnormal, (unsigned long long)p->clipped, (unsigned long long)p->blocks_clipped,
             (unsigned long long)g->zero_in, (unsigned long long)g->flushed_to_zero, (unsigned long long)g->subnormal,
             (unsigned long long)g->clipped, (unsigned long long)g->blocks_clipped);
  outputs_free(&a), outputs_free(&b);
}

static void test_every_rule(void **state) {
  (void)state;
  const size_t rows = 300, cols = 260; /* no block shape divides both */
  const hl_dtype elements[] = {HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1};
  for (int special = 0; special < 2; special++) {
    float *x = matrix(rows * cols, 11 + special, special);
    for (int rule = HL_SCALE_TENSOR; rule < HL_SCALE_RULES; rule++)
      for (int e = 0; e < 5; e++)
        for (int shape = 0; shape < 3; shape++)
          for (int stochastic = 0; stochastic < 2; stochastic++) {
            hl_quant_spec s = hl_quant_spec_make(elements[e], (hl_scale_rule)rule);
            if (!hl_quant_spec_valid(&s)) continue;
            const uint32_t along = s.block_cols;
            if (shape == 1) s.block_rows = along, s.block_cols = 1;          /* down columns */
            if (shape == 2) s.block_rows = 128, s.block_cols = 128;          /* square */
            if (stochastic) s.rounding = HL_ROUNDING_STOCHASTIC, s.seed = 99, s.stream = 3, s.random_bits = 8 + e;
            char what[128];
            snprintf(what, sizeof what, "%s %s %ux%u%s%s", hl_scale_rule_name((hl_scale_rule)rule),
                     hl_dtype_format_name(elements[e]), s.block_rows, s.block_cols, stochastic ? " stochastic" : "",
                     special ? " (inf, NaN)" : "");
            compare(&s, x, rows, cols, what);
          }
    free(x);
  }
}

/* The tensor rule's margin, given amax and kept scale. */
static void test_tensor_rule_options(void **state) {
  (void)state;
  float *x = matrix(64 * 64, 5, false);
  const float given[] = {-1.0f, 0.0f, 3.5f, INFINITY, NAN};
  for (int k = 0; k < 5; k++) {
    hl_quant_spec s = hl_quant_spec_make(HL_E5M2, HL_SCALE_TENSOR);
    s.margin = k - 2, s.tensor_amax = given[k], s.previous_scale = 0.75f;
    compare(&s, x, 64, 64, "tensor options");
  }
  free(x);
}

/* the amax pass alone (the quantize benchmark's row), with and without a NaN, and of nothing */
static void test_amax(void **state) {
  (void)state;
  const hl_backend *g = gpu_backend;
  if (!g->quantize->amax || !hl_backend_cpu.quantize->amax) fail_msg("a backend has no amax pass");
  for (int special = 0; special < 2; special++)
    for (size_t n = 0; n < 300000; n = n * 7 + 1) {
      float *x = matrix(n, 11 + n, special), *dx = g->alloc(n * 4 + 4);
      g->copy_from_host(dx, x, n * 4);
      const float want = hl_backend_cpu.quantize->amax(x, n), got = g->quantize->amax(dx, n);
      if (!same_float(want, got)) fail_msg("amax of %zu values (special %d): cpu %a, gpu %a", n, special, want, got);
      g->free(dx), free(x);
    }
}

int main(void) {
  hl_require_gpu();
#ifdef HL_HAVE_CUDA
  gpu_backend = &hl_backend_cuda;
#endif
  if (!gpu_backend || !gpu_backend->quantize || !hl_backend_cpu.quantize) {
    fprintf(stderr, "a backend has no quantizers\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_rule),
      cmocka_unit_test(test_tensor_rule_options),
      cmocka_unit_test(test_amax),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
