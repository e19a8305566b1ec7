/* test_round_sweep.c — suite numerics: formats/round.h on all 2^32 fp32
 * inputs, in one pass shared by every check (the inputs are the cost):
 *
 *   - the generic rounding, for tf32, fp16, bf16, e4m3 and e5m2 and each of
 *     the five deterministic roundings, against a reference written here
 *     from first principles (the two neighbours of |x| at the format's
 *     spacing, in double, exactly; past the largest finite value inf, or
 *     NaN in e4m3, which has no inf, but that value itself where the
 *     rounding goes toward zero); with saturating overflow where it can
 *     differ (|x| at least the largest finite value); with flushed
 *     subnormals where that can differ (|x| below the smallest normal);
 *     NaNs by half.h's rule (fp8: the sign and the all-ones magnitude).
 *     fp8 by blocks of 2^14 inputs, which all but the first round alike:
 *     the reference on three of each, every spec on every input (see
 *     check_fp8_block); fp8's fast path (half.h's conversion) is
 *     test_exhaustive's e4m3 and e5m2;
 *   - the fast paths hl_round_bits picks, bit for bit against the generic
 *     rounding: half.h's tf32 nearest-even and ties-away conversions, and
 *     the GPU's cvt.rna.tf32.f32 as its SASS reads (on every input but the
 *     NaNs the device's rule takes first: counted);
 *   - the CPU's array conversions (kernels/cpu/half_arrays.h), every path
 *     this CPU has (portable: half.h's fp16 and bf16 conversions; avx2 with
 *     F16C; avx512 with AVX512-BF16), bit for bit against the generic
 *     rounding; a path the CPU lacks is named as skipped.
 *
 * OpenMP splits the inputs among the cores. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/format.h"
#include "formats/round.h"
#include "kernels/cpu/half_arrays.h"
#include "tests/support/hltest.h"

#define ALL_F32 (UINT64_C(1) << 32)
#define MAX_REPORTS 5
enum { BLOCK = 1 << 14, DETERMINISTIC = HL_ROUNDING_STOCHASTIC };

/* ------------------------------------------------------------ reference -- */

/* A format as the reference sees it: precision, range, and the value of each code */
typedef struct {
  hl_dtype format;
  int man_bits, emin;
  double max, min_normal;
  double overflow;        /* past max under IEEE overflow: INFINITY, or NAN where the format has no inf (e4m3) */
  const double *value_of; /* fp16, bf16, fp8: every code's value (format.c); tf32: NULL, its code << 13 is fp32 */
} ref_format;

/* Where |x| lies in the format: between lo and lo + quantum (inf: past max) */
typedef struct {
  double lo, quantum;
  double fraction; /* (|x| - lo) / quantum, in [0, 1) */
  int lo_odd;      /* lo / quantum odd */
} neighbours;

static double pow2(int e) {
  uint64_t u = (uint64_t)(e + 1023) << 52;
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

static neighbours neighbours_of(const ref_format *R, uint32_t a /* |x|'s bits, finite */) {
  const double v = hl_f32_from_bits(a);
  int e = (int)(a >> 23) - 127; /* an fp32 subnormal: below every emin here */
  if (e < R->emin) e = R->emin;
  neighbours n;
  n.quantum = pow2(e - R->man_bits);
  const double t = v * pow2(R->man_bits - e); /* exact: < 2^(man_bits + 2) */
  const double below = (double)(int64_t)t;
  n.fraction = t - below;
  n.lo = below * n.quantum;
  n.lo_odd = (int)((int64_t)below & 1);
  return n;
}

/* IEEE 754's rounding of finite x (|x|'s neighbours n), as the spec says */
static inline double ref_round(const ref_format *R, const neighbours *n, int negative, int fp32_subnormal,
                               hl_rounding r, hl_overflow ov, int flush) {
  if (flush && fp32_subnormal) return negative ? -0.0 : 0.0;
  int up;
  switch (r) {
    case HL_ROUNDING_NEAREST_EVEN: up = n->fraction > 0.5 || (n->fraction == 0.5 && n->lo_odd); break;
    case HL_ROUNDING_NEAREST_AWAY: up = n->fraction >= 0.5; break;
    case HL_ROUNDING_TOWARD_ZERO: up = 0; break;
    case HL_ROUNDING_TOWARD_POSITIVE: up = n->fraction > 0 && !negative; break;
    default: up = n->fraction > 0 && negative; break;
  }
  double v = up ? n->lo + n->quantum : n->lo;
  if (v > R->max) {
    const int toward_zero = r == HL_ROUNDING_TOWARD_ZERO || (r == HL_ROUNDING_TOWARD_POSITIVE && negative) ||
                            (r == HL_ROUNDING_TOWARD_NEGATIVE && !negative);
    v = ov == HL_OVERFLOW_SATURATE || toward_zero ? R->max : R->overflow;
  }
  if (flush && v < R->min_normal) v = 0.0;
  return negative ? -v : v;
}

/* an infinite x: exact (e4m3: a NaN of its sign), or +-max when saturating */
static double ref_infinity(const ref_format *R, float x, hl_overflow ov) {
  return copysign(ov == HL_OVERFLOW_SATURATE ? R->max : R->overflow, x);
}

/* half.h's NaN rule written out: sign, quiet bit, the top of the payload;
 * fp8 (OCP): the sign and the all-ones magnitude, e4m3's one NaN and one of e5m2's */
static uint32_t ref_nan(const ref_format *R, uint32_t x) {
  switch (R->format) {
    case HL_F16: return ((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x03ffu);
    case HL_BF16: return (x >> 16) | 0x0040u;
    case HL_E4M3:
    case HL_E5M2: return (x >> 24 & 0x80u) | 0x7fu;
    default: return ((x & 0xffffe000u) | 0x00400000u) >> 13;
  }
}

static double code_value(const ref_format *R, uint32_t code) {
  return R->value_of ? R->value_of[code] : (double)hl_f32_from_bits(code << 13);
}

/* same value, zeros and NaNs (e4m3's overflow) by sign */
static int same(double got, double want) {
  return (got == want || (isnan(got) && isnan(want))) && signbit(got) == signbit(want);
}

/* ------------------------------------------------------------- counting -- */

enum { GENERIC_IEEE, GENERIC_SATURATE, GENERIC_FLUSH, FAST, CHECKS };
static const char *const check_names[CHECKS] = {"generic", "generic, saturating", "generic, flushing",
                                                "fast path"};
enum { TF32, F16, BF16, E4M3, E5M2, FORMATS };
static uint64_t bad_[FORMATS][CHECKS][DETERMINISTIC];

__attribute__((noinline)) static void report(int k, const ref_format *R, int check, int r, uint32_t x, uint32_t got,
                                             double want) {
  uint64_t n;
#pragma omp atomic capture
  n = bad_[k][check][r]++;
  if (n < MAX_REPORTS)
#pragma omp critical(report)
    print_error("%s %s, %s: fp32 0x%08x (%a) gives 0x%05x (%a), want %a\n", hl_dtype_format_name(R->format),
                hl_rounding_name((hl_rounding)r), check_names[check], x, (double)hl_f32_from_bits(x), got,
                code_value(R, got), want);
}

/* Every spec of format R on x, plainly: each code against ref_round, each
 * wrong one reported. Run for the inputs check_input finds wrong (and the
 * infinities and NaNs); returns how many codes were wrong. */
__attribute__((noinline)) static int check_input_slowly(int k, const ref_format *R, uint32_t x) {
  const hl_dtype f = R->format;
  const float fx = hl_f32_from_bits(x);
  const uint32_t a = x & 0x7fffffffu;
  int wrong = 0;
  if (a > 0x7f800000u) {
    for (int r = 0; r < DETERMINISTIC; r++)
      for (int variant = 0; variant < 3; variant++) {
        const hl_round_spec s = hl_round_spec_make(f, (hl_rounding)r, (hl_overflow)(variant == 1), variant == 2);
        const uint32_t got = hl_round_bits_generic(&s, fx, 0);
        if (got != ref_nan(R, x)) wrong++, report(k, R, variant, r, x, got, NAN);
      }
    return wrong;
  }
  const int negative = x >> 31, infinite = a == 0x7f800000u, fp32_subnormal = a < 0x00800000u;
  const neighbours n = infinite ? (neighbours){0, 0, 0, 0} : neighbours_of(R, a);
  for (int r = 0; r < DETERMINISTIC; r++)
    for (int variant = 0; variant < 3; variant++) {
      const hl_overflow ov = variant == 1 ? HL_OVERFLOW_SATURATE : HL_OVERFLOW_IEEE;
      const hl_round_spec s = hl_round_spec_make(f, (hl_rounding)r, ov, variant == 2);
      const uint32_t got = hl_round_bits_generic(&s, fx, 0);
      const double want = infinite ? ref_infinity(R, fx, ov)
                                   : ref_round(R, &n, negative, fp32_subnormal, (hl_rounding)r, ov, variant == 2);
      if (!same(code_value(R, got), want)) wrong++, report(k, R, variant, r, x, got, want);
    }
  return wrong;
}

/* Every spec of format R on x, quickly: the IEEE-overflow codes (to codes[],
 * for the fast paths' checks), and the saturating and flushing ones where
 * they can differ (|x| at least max; below the smallest normal). The code
 * rounded toward zero must hold |x|'s neighbour below (by value); the others
 * that code plus 0 or 1 (the next magnitude up: codes of a sign-magnitude
 * format count up with the magnitude, inf right after max), as the
 * reference's neighbours say. Past max, every rounding overflows. An input
 * found wrong is checked again slowly, which reports. Inlined with R's
 * format a constant, so the compiler shares the roundings' common work. */
static uint64_t unexplained_; /* found wrong quickly, not slowly: this test's own fault */

static inline __attribute__((always_inline)) void check_input(int k, const ref_format *R, hl_dtype f, uint32_t x,
                                                              uint32_t codes[DETERMINISTIC]) {
  const float fx = hl_f32_from_bits(x);
  const uint32_t a = x & 0x7fffffffu;
#pragma GCC unroll 5
  for (int r = 0; r < DETERMINISTIC; r++) {
    const hl_round_spec s = hl_round_spec_make(f, (hl_rounding)r, HL_OVERFLOW_IEEE, false);
    codes[r] = hl_round_bits_generic(&s, fx, 0);
  }
  if (a >= 0x7f800000u) { /* inf and NaN: 2^24 inputs */
    check_input_slowly(k, R, x);
    return;
  }
  const int negative = x >> 31, fp32_subnormal = a < 0x00800000u;
  const neighbours n = neighbours_of(R, a);
  const int may_overflow = hl_f32_from_bits(a) >= R->max, may_flush = hl_f32_from_bits(a) < R->min_normal;
  int wrong = 0;
  if (n.lo > R->max) { /* toward zero: max; away from it: inf, the code after max's */
    const double below = code_value(R, codes[HL_ROUNDING_TOWARD_ZERO]);
    wrong |= !same(below, negative ? -R->max : R->max);
    const uint32_t to_inf[DETERMINISTIC] = {1, 1, 0, (uint32_t)!negative, (uint32_t)negative};
#pragma GCC unroll 5
    for (int r = 0; r < DETERMINISTIC; r++) {
      const hl_round_spec sat = hl_round_spec_make(f, (hl_rounding)r, HL_OVERFLOW_SATURATE, false);
      wrong |= codes[r] != codes[HL_ROUNDING_TOWARD_ZERO] + to_inf[r];
      wrong |= hl_round_bits_generic(&sat, fx, 0) != codes[HL_ROUNDING_TOWARD_ZERO];
    }
  } else {
    const double below = code_value(R, codes[HL_ROUNDING_TOWARD_ZERO]);
    wrong |= below != (negative ? -n.lo : n.lo) || !!signbit(below) != negative;
    const uint32_t inexact = n.fraction > 0, above = n.fraction > 0.5, tie = n.fraction == 0.5;
    const uint32_t up[DETERMINISTIC] = {above | (tie & (uint32_t)n.lo_odd), above | tie, 0, inexact & !negative,
                                        inexact & (uint32_t)negative};
#pragma GCC unroll 5
    for (int r = 0; r < DETERMINISTIC; r++) {
      wrong |= codes[r] != codes[HL_ROUNDING_TOWARD_ZERO] + up[r];
      if (may_overflow) { /* the neighbour below is max: saturating stays there */
        const hl_round_spec sat = hl_round_spec_make(f, (hl_rounding)r, HL_OVERFLOW_SATURATE, false);
        wrong |= hl_round_bits_generic(&sat, fx, 0) != codes[HL_ROUNDING_TOWARD_ZERO];
      }
      if (may_flush) { /* a subnormal result or input gives zero */
        const hl_round_spec flush = hl_round_spec_make(f, (hl_rounding)r, HL_OVERFLOW_IEEE, true);
        const uint32_t got = hl_round_bits_generic(&flush, fx, 0);
        const double kept = code_value(R, codes[r]), flushed = code_value(R, got);
        if (fp32_subnormal || fabs(kept) < R->min_normal) wrong |= flushed != 0.0 || !!signbit(flushed) != negative;
        else wrong |= got != codes[r];
      }
    }
  }
  if (wrong && !check_input_slowly(k, R, x)) {
#pragma omp atomic
    unexplained_++;
  }
}

/* cvt.rna.tf32.f32 as ptxas 13 compiles it for sm_80 and sm_90 (cuobjdump -sass):
 *   FSETP.GEU.AND P0, PT, |R0|, +INF, PT      (true for inf and NaN)
 *   @!P0 IMAD.IADD.U32 R0, R0, 0x1, 0x1000
 *   LOP3.LUT R7, R0, 0xffffe000, RZ, 0xc0, !PT */
static uint32_t cvt_rna_tf32_sass(uint32_t x) {
  if ((x & 0x7fffffffu) < 0x7f800000u) x += 0x1000u;
  return x & 0xffffe000u;
}

/* half.h's tf32 conversions (hl_round_bits' fast paths; fp16's and bf16's
 * are the portable array paths) against the generic rounding's codes */
static inline __attribute__((always_inline)) void check_fast(const ref_format *refs, uint32_t x, const uint32_t *tf32,
                                                             uint64_t *nan_to_inf, uint64_t *nan_unquieted) {
  const float fx = hl_f32_from_bits(x);
  uint32_t got = hl_f32_bits(hl_f32_round_tf32_rne(fx));
  if (got >> 13 != tf32[0] || (got & 0x1fffu)) report(0, &refs[0], FAST, 0, x, got >> 13, code_value(&refs[0], tf32[0]));
  got = hl_f32_bits(hl_f32_round_tf32_rna(fx));
  if (got >> 13 != tf32[1] || (got & 0x1fffu)) report(0, &refs[0], FAST, 1, x, got >> 13, code_value(&refs[0], tf32[1]));
  /* the device runs the instruction on everything but NaNs (hl_tf32_rna_bits) */
  const uint32_t instr = cvt_rna_tf32_sass(x);
  if (instr >> 13 != tf32[1] || (instr & 0x1fffu)) {
    if ((x & 0x7fffffffu) <= 0x7f800000u) report(0, &refs[0], FAST, 1, x, instr >> 13, code_value(&refs[0], tf32[1]));
    else if ((instr & 0x7fffffffu) == 0x7f800000u) ++*nan_to_inf;
    else ++*nan_unquieted;
  }
}

/* ------------------------------------------------------ fp8 by blocks -- */

/* An fp8 spacing spans at least 2^20 consecutive fp32 codes (of one sign,
 * in one binade or in fp32's subnormals), and blocks start at multiples of
 * BLOCK = 2^14: past its first input, a block lies strictly inside one
 * spacing, on one side of its midpoint, so every spec rounds those inputs
 * alike. The reference confirms it for each block (its second and last
 * inputs have the same neighbour below, both inexact, on the same side of
 * the tie; between them |x| only grows), checks every spec on the first,
 * second and last inputs, and every other input must round as the second
 * does. Each spec still runs on every input; the reference, the cost of
 * tf32, fp16 and bf16, runs three times a block. */
static uint64_t blocks_unexplained_; /* a block the argument above does not cover: this test's own fault */

static int ref_side(double fraction) { return fraction == 0 ? 0 : fraction < 0.5 ? 1 : fraction == 0.5 ? 2 : 3; }

/* whether the reference rounds every input from second to last (one block) alike */
static int rounds_alike(const ref_format *R, uint32_t second, uint32_t last) {
  const uint32_t a = second & 0x7fffffffu, b = last & 0x7fffffffu;
  if (a > 0x7f800000u) return b > 0x7f800000u && ref_nan(R, second) == ref_nan(R, last);
  if (b >= 0x7f800000u || (a < 0x00800000u) != (b < 0x00800000u)) return 0;
  const neighbours n = neighbours_of(R, a), m = neighbours_of(R, b);
  const int side = ref_side(n.fraction);
  return n.lo == m.lo && side == ref_side(m.fraction) && (side == 1 || side == 3);
}

static inline __attribute__((always_inline)) hl_round_spec variant_spec(hl_dtype f, int r, int variant) {
  return hl_round_spec_make(f, (hl_rounding)r, variant == 1 ? HL_OVERFLOW_SATURATE : HL_OVERFLOW_IEEE, variant == 2);
}

/* the bits where inputs 2 to BLOCK - 2 of in[] round unlike want[variant][r]
 * under variant_spec(f, r, variant): every rounding, with IEEE overflow, and
 * saturating (variants & 1) and flushing (variants & 2). One loop for all,
 * so that the compiler shares the specs' common work. */
static inline __attribute__((always_inline)) uint32_t block_differs(hl_dtype f, const float *in,
                                                                    const uint32_t want[3][DETERMINISTIC],
                                                                    int variants) {
  uint32_t diff = 0;
  for (uint32_t j = 2; j < BLOCK - 1; j++)
#pragma GCC unroll 5
    for (int r = 0; r < DETERMINISTIC; r++)
#pragma GCC unroll 3
      for (int variant = 0; variant < 3; variant++)
        if (!variant || (variants >> (variant - 1) & 1)) {
          const hl_round_spec s = variant_spec(f, r, variant);
          diff |= hl_round_bits_generic(&s, in[j], 0) ^ want[variant][r];
        }
  return diff;
}

/* format R's every spec on the block of in[] from `first`, the saturating
 * and flushing ones where they can differ (as check_input: |x| at least max;
 * below the smallest normal) */
static inline __attribute__((always_inline)) void check_fp8_block(int k, const ref_format *R, hl_dtype f,
                                                                  uint32_t first, const float *in) {
  const uint32_t second = first + 1, last = first + BLOCK - 1;
  if (!rounds_alike(R, second, last)) {
#pragma omp atomic
    blocks_unexplained_++;
    return;
  }
  check_input_slowly(k, R, first);
  check_input_slowly(k, R, last);
  const int second_wrong = check_input_slowly(k, R, second); /* then the rest are too: count them */
  uint32_t want[3][DETERMINISTIC];
  for (int r = 0; r < DETERMINISTIC; r++)
    for (int variant = 0; variant < 3; variant++) {
      const hl_round_spec s = variant_spec(f, r, variant);
      want[variant][r] = hl_round_bits_generic(&s, in[1], 0);
    }
  const float a = fabsf(in[BLOCK - 1]);
  const int may_overflow = a >= R->max, may_flush = a < R->min_normal; /* false for NaNs */
  uint32_t diff;
  switch (may_overflow | may_flush << 1) { /* each a loop of its own, the specs constants */
    case 0: diff = block_differs(f, in, want, 0); break;
    case 1: diff = block_differs(f, in, want, 1); break;
    default: diff = block_differs(f, in, want, 2); break;
  }
  if (!diff && !second_wrong) return;
  int wrong = second_wrong; /* some input rounds unlike the reference: find and report each */
  for (uint32_t j = 2; j < BLOCK - 1; j++) wrong += check_input_slowly(k, R, first + j);
  if (!wrong) {
#pragma omp atomic
    unexplained_++;
  }
}

__attribute__((flatten, noinline)) static void check_e4m3_block(const ref_format *refs, uint32_t first,
                                                                const float *in) {
  check_fp8_block(E4M3, &refs[E4M3], HL_E4M3, first, in);
}

__attribute__((flatten, noinline)) static void check_e5m2_block(const ref_format *refs, uint32_t first,
                                                                const float *in) {
  check_fp8_block(E5M2, &refs[E5M2], HL_E5M2, first, in);
}

/* ---------------------------------------------------- array conversions -- */

typedef struct {
  hl_dtype type;
  hl_cpu_half_path path;
  hl_cpu_narrow_fn narrow; /* NULL: this CPU lacks the path */
} array_path;

static array_path array_paths_[] = {
    {HL_F16, HL_HALF_PATH_PORTABLE, NULL}, {HL_F16, HL_HALF_PATH_AVX2, NULL},   {HL_BF16, HL_HALF_PATH_PORTABLE, NULL},
    {HL_BF16, HL_HALF_PATH_AVX2, NULL},    {HL_BF16, HL_HALF_PATH_AVX512, NULL},
};
enum { ARRAY_PATHS = sizeof array_paths_ / sizeof array_paths_[0] };
static uint64_t array_bad_[ARRAY_PATHS];

/* each present path's conversion of the block against the generic codes (f16[], bf16[]) */
static void check_arrays(uint32_t first, const float *in, const uint16_t *f16, const uint16_t *bf16, uint16_t *out) {
  for (int p = 0; p < ARRAY_PATHS; p++) {
    const array_path *ap = &array_paths_[p];
    if (!ap->narrow) continue;
    ap->narrow(in, out, BLOCK);
    const uint16_t *want = ap->type == HL_F16 ? f16 : bf16;
    if (!memcmp(out, want, sizeof *out * BLOCK)) continue;
    for (uint32_t j = 0; j < BLOCK; j++) {
      if (out[j] == want[j]) continue;
      uint64_t n;
#pragma omp atomic capture
      n = array_bad_[p]++;
      if (n < MAX_REPORTS)
#pragma omp critical(report)
        print_error("%s array path %s: fp32 0x%08x gives 0x%04x, the generic rounding 0x%04x\n",
                    hl_dtype_format_name(ap->type), hl_cpu_half_path_name(ap->path), first + j, out[j], want[j]);
    }
  }
}

/* ------------------------------------------------------------------ test -- */

static void test_every_input(void **state) {
  (void)state;
  static double f16_values[65536], bf16_values[65536], e4m3_values[256], e5m2_values[256];
  for (uint32_t c = 0; c < 65536; c++) {
    f16_values[c] = hl_format_decode(HL_F16, c);
    bf16_values[c] = hl_format_decode(HL_BF16, c);
  }
  for (uint32_t c = 0; c < 256; c++) {
    e4m3_values[c] = hl_format_decode(HL_E4M3, c);
    e5m2_values[c] = hl_format_decode(HL_E5M2, c);
  }
  static const hl_dtype formats[FORMATS] = {HL_TF32, HL_F16, HL_BF16, HL_E4M3, HL_E5M2};
  const double *const values[FORMATS] = {NULL, f16_values, bf16_values, e4m3_values, e5m2_values};
  ref_format refs[FORMATS];
  for (int k = 0; k < FORMATS; k++) {
    const hl_format_info *fi = hl_format_get(formats[k]);
    refs[k] = (ref_format){formats[k], fi->man_bits, fi->emin, fi->max, fi->min_normal,
                           fi->has_inf ? INFINITY : NAN, values[k]};
  }
  for (int p = 0; p < ARRAY_PATHS; p++) {
    array_path *ap = &array_paths_[p];
    if (hl_cpu_half_path_present(ap->type, ap->path)) ap->narrow = hl_cpu_half_path_narrow(ap->type, ap->path);
    else printf("skipped: %s array path %s needs %s, which this CPU does not have\n", hl_dtype_format_name(ap->type),
                hl_cpu_half_path_name(ap->path), hl_cpu_half_path_needs(ap->type, ap->path));
  }
  uint64_t nan_to_inf = 0, nan_unquieted = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : nan_to_inf, nan_unquieted)
  for (uint64_t base = 0; base < ALL_F32; base += BLOCK) {
    float in[BLOCK];
    uint16_t f16[BLOCK], bf16[BLOCK], out[BLOCK];
    for (uint32_t j = 0; j < BLOCK; j++) {
      const uint32_t x = (uint32_t)base + j;
      uint32_t tf32_codes[DETERMINISTIC], f16_codes[DETERMINISTIC], bf16_codes[DETERMINISTIC];
      in[j] = hl_f32_from_bits(x);
      check_input(TF32, &refs[TF32], HL_TF32, x, tf32_codes);
      check_input(F16, &refs[F16], HL_F16, x, f16_codes);
      check_input(BF16, &refs[BF16], HL_BF16, x, bf16_codes);
      f16[j] = (uint16_t)f16_codes[0], bf16[j] = (uint16_t)bf16_codes[0];
      check_fast(refs, x, tf32_codes, &nan_to_inf, &nan_unquieted);
    }
    check_arrays((uint32_t)base, in, f16, bf16, out);
    check_e4m3_block(refs, (uint32_t)base, in);
    check_e5m2_block(refs, (uint32_t)base, in);
  }
  uint64_t bad = 0;
  for (int k = 0; k < FORMATS; k++)
    for (int c = 0; c < CHECKS; c++)
      for (int r = 0; r < DETERMINISTIC; r++)
        if (bad_[k][c][r]) {
          bad += bad_[k][c][r];
          print_error("%s %s, %s: %llu of 2^32 inputs wrong\n", hl_dtype_format_name(formats[k]),
                      hl_rounding_name((hl_rounding)r), check_names[c], (unsigned long long)bad_[k][c][r]);
        }
  for (int p = 0; p < ARRAY_PATHS; p++)
    if (array_bad_[p]) {
      bad += array_bad_[p];
      print_error("%s array path %s: %llu of 2^32 inputs differ from the generic rounding\n",
                  hl_dtype_format_name(array_paths_[p].type), hl_cpu_half_path_name(array_paths_[p].path),
                  (unsigned long long)array_bad_[p]);
    }
  /* where the device's NaN branch matters: NaNs with a payload only in the low 13 bits (either
   * sign) come out of the bare instruction as inf; other signalling NaNs stay NaN, unquieted */
  printf("cvt.rna.tf32.f32 alone: %llu NaN inputs become inf, %llu stay signalling NaNs\n",
         (unsigned long long)nan_to_inf, (unsigned long long)nan_unquieted);
  if (unexplained_) print_error("%llu inputs failed the quick check alone\n", (unsigned long long)unexplained_);
  if (blocks_unexplained_)
    print_error("%llu blocks where the reference does not round all but the first input alike\n",
                (unsigned long long)blocks_unexplained_);
  if (bad || unexplained_ || blocks_unexplained_)
    fail_msg("%llu wrong roundings of 2^32 fp32 inputs", (unsigned long long)bad);
  assert_true(nan_to_inf == 2 * 8191);
  assert_true(nan_unquieted == 2 * ((UINT64_C(1) << 22) - 1) - 2 * 8191);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_input)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
