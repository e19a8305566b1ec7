/* test_half_paths.c — suite unit: the conversion paths of
 * kernels/cpu/half_arrays.h, each against formats/half.h's portable
 * conversions bit for bit, NaN payloads included: widening every fp16 and
 * bf16 encoding; narrowing about four million fp32 inputs (the edges —
 * subnormals, NaNs with payloads, infinities, ties, the largest values — the
 * ends of every binade, a stride through the subnormals, random encodings);
 * every length around the vector widths, unaligned, without writing past
 * the end; the operand widening the same, but for a NaN's quiet bit. Then
 * which path the kernels use. A path this CPU lacks is
 * skipped, saying so. meson runs it twice: as it is and under
 * HALFLAB_CPU_UNITS=portable. (All 2^32 narrowing inputs: suite numerics.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/half_arrays.h"
#include "kernels/cpu/stream_cpu.h"
#include "tests/support/hltest.h"

static uint16_t portable_narrow(hl_dtype t, float f) {
  return t == HL_F16 ? hl_f32_to_f16_soft(f) : hl_f32_to_bf16_soft(f);
}
static uint32_t portable_widen_bits(hl_dtype t, uint16_t h) {
  return hl_f32_bits(t == HL_F16 ? hl_f16_to_f32_soft(h) : hl_bf16_to_f32_soft(h));
}

/* fp32 encodings where conversions go wrong, each for a reason */
static const uint32_t edges[] = {
    0x00000000u, 0x80000000u,                           /* signed zeros */
    0x00000001u, 0x80000001u, 0x00400000u, 0x007fffffu, /* fp32 subnormals: bf16 0x0000, 0x8000, 0x0040, 0x0080 */
    0x807fffffu, 0x80400000u, 0x00008000u, 0x00018000u, /* ... and bf16 ties between subnormals (to 0, to 2) */
    0x00008001u, 0x007f8000u, 0x007f7fffu, 0x00800000u, /* ... the tie that carries into the smallest normal */
    0x7f800000u, 0xff800000u,                           /* infinities */
    0x7f800001u, 0xff800001u, 0x7fbfffffu, 0x7f80ffffu, /* signalling NaNs: payloads in the high and low bits */
    0x7fa00000u, 0x7f802000u, 0x7fc00000u, 0xffc00000u, /* ... quiet ones */
    0x7fc00001u, 0x7fffffffu, 0xffffffffu, 0x7fe00000u,
    0x7f7fffffu, 0xff7fffffu, 0x7f7f7fffu, 0x7f7f8000u, /* largest fp32: bf16 inf; below and at the tie to inf */
    0x477fe000u, 0x477fefffu, 0x477ff000u, 0xc77ff000u, /* fp16 65504, just under and at 65520 (-> inf) */
    0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f801000u, /* ties: bf16 at 1 (to even, up), above; fp16 at 1 */
    0x3f803000u, 0x3f801001u, 0x33000000u, 0x33000001u, /* fp16: tie up to even; 2^-25 (tie to 0), above */
    0x33c00000u, 0x38800000u, 0x387fffffu, 0x387fe000u, /* fp16: 1.5 * 2^-24 (to 2), smallest normal, below */
};

enum { EDGE_COUNT = sizeof edges / sizeof edges[0], BINADE_END = 64, SUBNORMAL_STRIDE = 127, RANDOM = 1 << 22 };

/* The inputs: edges, both ends of each binade (every exponent, both signs),
 * a stride through the subnormals, random encodings. Returns the count. */
static size_t narrowing_inputs(float **out) {
  const size_t n = EDGE_COUNT + 512 * 2 * BINADE_END + 2 * ((1u << 23) / SUBNORMAL_STRIDE + 1) + RANDOM;
  float *f = malloc(n * sizeof *f);
  assert_non_null(f);
  size_t k = 0;
  for (size_t i = 0; i < EDGE_COUNT; i++) f[k++] = hl_f32_from_bits(edges[i]);
  for (uint32_t se = 0; se < 512; se++)
    for (uint32_t m = 0; m < BINADE_END; m++) {
      f[k++] = hl_f32_from_bits(se << 23 | m);
      f[k++] = hl_f32_from_bits(se << 23 | (0x7fffffu - m));
    }
  for (uint32_t sign = 0; sign < 2; sign++)
    for (uint32_t m = 0; m < (1u << 23); m += SUBNORMAL_STRIDE) f[k++] = hl_f32_from_bits(sign << 31 | m);
  for (uint32_t i = 0; i < RANDOM; i++) f[k++] = hl_f32_from_bits(hl_philox_u32(12, 0, i));
  assert_true(k <= n);
  *out = f;
  return k;
}

/* What an operand widening may give for h: the portable bits, or, for a
 * NaN, those bits with the quiet bit set (got decides which is expected) */
static uint32_t operand_widen_bits(hl_dtype t, uint16_t h, uint32_t got) {
  const uint32_t exact = portable_widen_bits(t, h);
  const bool nan = t == HL_F16 ? hl_f16_isnan(h) : hl_bf16_isnan(h);
  return nan && got == (exact | 0x00400000u) ? got : exact;
}

typedef struct {
  hl_dtype type;
  hl_cpu_half_path path;
} half_path;

static void skip_unless_present(const half_path *c) {
  if (hl_cpu_half_path_present(c->type, c->path)) return;
  printf("skipped: %s path %s needs %s, which this CPU does not have\n", hl_dtype_format_name(c->type),
         hl_cpu_half_path_name(c->path), hl_cpu_half_path_needs(c->type, c->path));
  skip();
}

static void test_path(void **state) {
  const half_path *c = *state;
  skip_unless_present(c);
  const hl_cpu_widen_fn widen = hl_cpu_half_path_widen(c->type, c->path);
  const hl_cpu_narrow_fn narrow = hl_cpu_half_path_narrow(c->type, c->path);
  const hl_cpu_widen_fn widen_operand = hl_cpu_half_path_widen_operand(c->type, c->path);
  const char *type = hl_dtype_format_name(c->type), *path = hl_cpu_half_path_name(c->path);

  /* widening: every encoding */
  enum { CODES = 1 << 16 };
  uint16_t *codes = malloc(CODES * sizeof *codes);
  float *wide = malloc(CODES * sizeof *wide);
  assert_true(codes && wide);
  for (uint32_t h = 0; h < CODES; h++) codes[h] = (uint16_t)h;
  widen(codes, wide, CODES);
  for (uint32_t h = 0; h < CODES; h++)
    if (hl_f32_bits(wide[h]) != portable_widen_bits(c->type, (uint16_t)h))
      fail_msg("%s 0x%04x widened on path %s: 0x%08x, portable 0x%08x", type, h, path, hl_f32_bits(wide[h]),
               portable_widen_bits(c->type, (uint16_t)h));
  /* the operand widening: the same bits, but a NaN may have its quiet bit set */
  widen_operand(codes, wide, CODES);
  for (uint32_t h = 0; h < CODES; h++)
    if (hl_f32_bits(wide[h]) != operand_widen_bits(c->type, (uint16_t)h, hl_f32_bits(wide[h])))
      fail_msg("%s 0x%04x widened as an operand on path %s: 0x%08x, portable 0x%08x", type, h, path,
               hl_f32_bits(wide[h]), portable_widen_bits(c->type, (uint16_t)h));
  free(codes), free(wide);

  /* narrowing */
  float *in;
  const size_t n = narrowing_inputs(&in);
  uint16_t *out = malloc(n * sizeof *out);
  assert_non_null(out);
  narrow(in, out, n);
  for (size_t i = 0; i < n; i++)
    if (out[i] != portable_narrow(c->type, in[i]))
      fail_msg("fp32 0x%08x (%a) to %s on path %s: 0x%04x, portable 0x%04x", hl_f32_bits(in[i]), (double)in[i],
               type, path, out[i], portable_narrow(c->type, in[i]));

  /* lengths 0..40 at offsets 0..3 (vector steps, tails, unaligned), the
   * edges in every lane; nothing written past the end */
  enum { MAX_LEN = 40, GUARD = 0x5a5a };
  uint16_t half_buf[MAX_LEN + 8];
  float wide_buf[MAX_LEN + 8];
  for (size_t off = 0; off < 4; off++)
    for (size_t len = 0; len <= MAX_LEN; len++)
      for (size_t shift = 0; shift < EDGE_COUNT; shift += 7) {
        const float *src = in + shift;
        for (size_t i = 0; i < MAX_LEN + 8; i++) half_buf[i] = GUARD;
        narrow(src, half_buf + off, len);
        for (size_t i = 0; i < len; i++) assert_int_equal(half_buf[off + i], portable_narrow(c->type, src[i]));
        assert_int_equal(half_buf[off + len], GUARD);
        for (size_t i = 0; i < MAX_LEN + 8; i++) wide_buf[i] = -1.0f;
        widen(half_buf + off, wide_buf + off, len);
        for (size_t i = 0; i < len; i++)
          assert_int_equal(hl_f32_bits(wide_buf[off + i]), portable_widen_bits(c->type, half_buf[off + i]));
        assert_true(wide_buf[off + len] == -1.0f);
        for (size_t i = 0; i < MAX_LEN + 8; i++) wide_buf[i] = -1.0f;
        widen_operand(half_buf + off, wide_buf + off, len);
        for (size_t i = 0; i < len; i++) {
          const uint32_t got = hl_f32_bits(wide_buf[off + i]);
          assert_int_equal(got, operand_widen_bits(c->type, half_buf[off + i], got));
        }
        assert_true(wide_buf[off + len] == -1.0f);
      }
  free(in), free(out);
}

/* The fastest path the CPU has that hl_cpu_units_get() allows: the f16c unit
 * for fp16's avx2 path (fp16 has no avx512 one), avx512_bf16 for bf16's
 * avx512 path; none under portable. */
static hl_cpu_half_path expected_choice(hl_dtype t) {
  const hl_cpu_units *u = hl_cpu_units_get();
  for (hl_cpu_half_path p = HL_HALF_PATH_AVX512; p > HL_HALF_PATH_PORTABLE; p--) {
    const bool unit = t == HL_F16 ? u->f16c : p == HL_HALF_PATH_AVX2 ? !u->portable : u->avx512_bf16;
    if (unit && hl_cpu_half_path_present(t, p)) return p;
  }
  return HL_HALF_PATH_PORTABLE;
}

static void test_choice(void **state) {
  (void)state;
  const char *units = getenv("HALFLAB_CPU_UNITS");
  const bool portable = units && !strcmp(units, "portable");
  assert_int_equal(hl_cpu_units_get()->portable, portable);
  static const hl_dtype types[2] = {HL_F16, HL_BF16};
  for (int k = 0; k < 2; k++) {
    const hl_dtype t = types[k];
    const hl_cpu_half_path want = portable ? HL_HALF_PATH_PORTABLE : expected_choice(t);
    if (hl_cpu_half_path_chosen(t) != want)
      fail_msg("%s: the kernels use path %s, want %s", hl_dtype_format_name(t),
               hl_cpu_half_path_name(hl_cpu_half_path_chosen(t)), hl_cpu_half_path_name(want));
    assert_int_equal(hl_cpu_stream_path(t), want); /* the stream kernels follow the same choice */
    printf("%s: path %s\n", hl_dtype_format_name(t), hl_cpu_half_path_name(want));
  }
  /* with the default units: bf16 rounds with vcvtneps2bf16 where the CPU has
   * AVX512-BF16, fp16 converts with F16C where it has F16C */
  const hl_cpu_features *f = hl_cpu_features_get();
  if (!portable && hl_cpu_has_avx512(f) && f->avx512_bf16)
    assert_int_equal(hl_cpu_half_path_chosen(HL_BF16), HL_HALF_PATH_AVX512);
  if (!portable && f->f16c && f->avx2) assert_int_equal(hl_cpu_half_path_chosen(HL_F16), HL_HALF_PATH_AVX2);
  assert_false(hl_cpu_half_path_present(HL_F16, HL_HALF_PATH_AVX512));
}

int main(void) {
  static const half_path paths[] = {
      {HL_F16, HL_HALF_PATH_PORTABLE},  {HL_F16, HL_HALF_PATH_AVX2},
      {HL_BF16, HL_HALF_PATH_PORTABLE}, {HL_BF16, HL_HALF_PATH_AVX2}, {HL_BF16, HL_HALF_PATH_AVX512},
  };
  const struct CMUnitTest tests[] = {
      {"fp16-portable", test_path, NULL, NULL, (void *)&paths[0]},
      {"fp16-avx2", test_path, NULL, NULL, (void *)&paths[1]},
      {"bf16-portable", test_path, NULL, NULL, (void *)&paths[2]},
      {"bf16-avx2", test_path, NULL, NULL, (void *)&paths[3]},
      {"bf16-avx512", test_path, NULL, NULL, (void *)&paths[4]},
      cmocka_unit_test(test_choice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
