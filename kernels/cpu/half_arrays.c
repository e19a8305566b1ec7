/* half_arrays.c — see half_arrays.h. */
#include "kernels/cpu/half_arrays.h"

#include <pthread.h>

#include "formats/fatal.h"
#include "formats/half.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/half_simd.h"

/* ---------------------------------------------------------- portable -- */

static void widen_f16_portable(const uint16_t *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = hl_f16_to_f32(src[i]);
}
static void narrow_f16_portable(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = hl_f32_to_f16(src[i]);
}
static void widen_bf16_portable(const uint16_t *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = hl_bf16_to_f32(src[i]);
}
static void narrow_bf16_portable(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = hl_f32_to_bf16(src[i]);
}

/* ------------------------------------------------------------ vector -- */
#if HL_HAVE_HALF_SIMD
/* half.h's widening with a NaN's quiet bit set: what vcvtph2ps gives, for
 * the tail of the quieting loop */
static float quiet_f16_to_f32(uint16_t h) {
  const float f = hl_f16_to_f32(h);
  return hl_f16_isnan(h) ? hl_f32_from_bits(hl_f32_bits(f) | 0x00400000u) : f;
}

/* LANES at a time over the whole array, the tail element by element */
#define VECTOR_WIDEN(NAME, TARGET, LANES, WIDEN, STORE_F32, ONE)                  \
  TARGET static void NAME(const uint16_t *src, float *dst, size_t n) {          \
    size_t i = 0;                                                               \
    for (; i + LANES <= n; i += LANES) STORE_F32(dst + i, WIDEN(src + i));      \
    for (; i < n; i++) dst[i] = ONE(src[i]);                                    \
  }
#define VECTOR_NARROW(NAME, TARGET, LANES, LOAD_F32, NARROW, STORE_HALF, ONE)     \
  TARGET static void NAME(const float *src, uint16_t *dst, size_t n) {          \
    size_t i = 0;                                                               \
    for (; i + LANES <= n; i += LANES) STORE_HALF(dst + i, NARROW(LOAD_F32(src + i))); \
    for (; i < n; i++) dst[i] = ONE(src[i]);                                    \
  }
#define STORE8_HALF(p, v) _mm_storeu_si128((__m128i *)(p), v)
#define STORE16_HALF(p, v) _mm256_storeu_si256((__m256i *)(p), v)

VECTOR_WIDEN(widen_f16_avx2, HL_AVX2_TARGET, 8, hl_avx2_widen8_f16, _mm256_storeu_ps, hl_f16_to_f32)
VECTOR_WIDEN(widen_f16_avx2_quieting, HL_AVX2_TARGET, 8, hl_avx2_widen8_f16_quieting, _mm256_storeu_ps, quiet_f16_to_f32)
VECTOR_NARROW(narrow_f16_avx2, HL_AVX2_TARGET, 8, _mm256_loadu_ps, hl_avx2_narrow8_f16, STORE8_HALF, hl_f32_to_f16)
VECTOR_WIDEN(widen_bf16_avx2, HL_AVX2_TARGET, 8, hl_avx2_widen8_bf16, _mm256_storeu_ps, hl_bf16_to_f32)
VECTOR_NARROW(narrow_bf16_avx2, HL_AVX2_TARGET, 8, _mm256_loadu_ps, hl_avx2_narrow8_bf16, STORE8_HALF,
              hl_f32_to_bf16)
VECTOR_WIDEN(widen_bf16_avx512, HL_AVX512_BF16_TARGET, 16, hl_avx512_widen16_bf16, _mm512_storeu_ps,
             hl_bf16_to_f32)
VECTOR_NARROW(narrow_bf16_avx512, HL_AVX512_BF16_TARGET, 16, _mm512_loadu_ps, hl_avx512_narrow16_bf16,
              STORE16_HALF, hl_f32_to_bf16)
#define VECTOR_PATH(fn) fn
#else
#define VECTOR_PATH(fn) NULL /* never present */
#endif

/* [fp16, bf16][path]; NULL: no such path (fp16 has no avx512 one:
 * half_simd.h). widen_operand: the widening for values computed on at once,
 * where a signalling NaN may come out quiet (F16C's own behaviour); the
 * other paths have nothing to skip and give widen's bits. */
static const struct {
  hl_cpu_widen_fn widen;
  hl_cpu_narrow_fn narrow;
  hl_cpu_widen_fn widen_operand;
} paths_[2][HL_HALF_PATH_COUNT] = {
    {{widen_f16_portable, narrow_f16_portable, widen_f16_portable},
     {VECTOR_PATH(widen_f16_avx2), VECTOR_PATH(narrow_f16_avx2), VECTOR_PATH(widen_f16_avx2_quieting)},
     {NULL, NULL, NULL}},
    {{widen_bf16_portable, narrow_bf16_portable, widen_bf16_portable},
     {VECTOR_PATH(widen_bf16_avx2), VECTOR_PATH(narrow_bf16_avx2), VECTOR_PATH(widen_bf16_avx2)},
     {VECTOR_PATH(widen_bf16_avx512), VECTOR_PATH(narrow_bf16_avx512), VECTOR_PATH(widen_bf16_avx512)}},
};

static int type_index(hl_dtype t) { return t == HL_BF16; }

/* ------------------------------------------------------------- paths -- */

const char *hl_cpu_half_path_name(hl_cpu_half_path p) {
  static const char *const names[HL_HALF_PATH_COUNT] = {"portable", "avx2", "avx512"};
  return (unsigned)p < HL_HALF_PATH_COUNT ? names[p] : "?";
}

const char *hl_cpu_half_path_needs(hl_dtype t, hl_cpu_half_path p) {
  switch (p) {
    case HL_HALF_PATH_PORTABLE: return "nothing";
    case HL_HALF_PATH_AVX2: return t == HL_F16 ? "AVX2 and F16C" : "AVX2";
    default: return t == HL_F16 ? "nothing: fp16 has no avx512 path" : "AVX-512 (F, BW, VL, DQ, CD) and AVX512-BF16";
  }
}

bool hl_cpu_half_path_present(hl_dtype t, hl_cpu_half_path p) {
  const hl_cpu_features *f = hl_cpu_features_get();
  switch (p) {
    case HL_HALF_PATH_PORTABLE: return true;
    case HL_HALF_PATH_AVX2: return HL_HAVE_HALF_SIMD && f->avx2 && (t == HL_BF16 || f->f16c);
    case HL_HALF_PATH_AVX512: return HL_HAVE_HALF_SIMD && t == HL_BF16 && hl_cpu_has_avx512(f) && f->avx512_bf16;
    default: return false;
  }
}

/* What hl_cpu_units_get() lets the kernels use: fp16's avx2 path is the
 * f16c unit's, bf16's avx512 path the avx512_bf16 unit's; bf16's avx2 path
 * uses no half-precision unit, but HALFLAB_CPU_UNITS=portable means the
 * portable code, so it too is off then. */
static bool allowed(hl_dtype t, hl_cpu_half_path p) {
  const hl_cpu_units *u = hl_cpu_units_get();
  if (p == HL_HALF_PATH_PORTABLE) return true;
  if (u->portable) return false;
  if (t == HL_F16) return u->f16c;
  return p == HL_HALF_PATH_AVX2 || u->avx512_bf16;
}

static hl_cpu_half_path chosen_[2];
static pthread_once_t chosen_once_ = PTHREAD_ONCE_INIT;

static void choose(void) {
  static const hl_dtype types[2] = {HL_F16, HL_BF16};
  for (int k = 0; k < 2; k++) {
    hl_cpu_half_path p = HL_HALF_PATH_COUNT - 1;
    while (p > HL_HALF_PATH_PORTABLE && !(hl_cpu_half_path_present(types[k], p) && allowed(types[k], p))) p--;
    chosen_[k] = p;
  }
}

hl_cpu_half_path hl_cpu_half_path_chosen(hl_dtype t) {
  pthread_once(&chosen_once_, choose);
  return chosen_[type_index(t)];
}

hl_cpu_widen_fn hl_cpu_half_path_widen(hl_dtype t, hl_cpu_half_path p) { return paths_[type_index(t)][p].widen; }
hl_cpu_narrow_fn hl_cpu_half_path_narrow(hl_dtype t, hl_cpu_half_path p) { return paths_[type_index(t)][p].narrow; }
hl_cpu_widen_fn hl_cpu_half_path_widen_operand(hl_dtype t, hl_cpu_half_path p) {
  return paths_[type_index(t)][p].widen_operand;
}

/* ----------------------------------------------- the kernels' entries -- */

void hl_cpu_widen_f16(const uint16_t *src, float *dst, size_t n) {
  paths_[0][hl_cpu_half_path_chosen(HL_F16)].widen(src, dst, n);
}
void hl_cpu_narrow_f16(const float *src, uint16_t *dst, size_t n) {
  paths_[0][hl_cpu_half_path_chosen(HL_F16)].narrow(src, dst, n);
}
void hl_cpu_widen_bf16(const uint16_t *src, float *dst, size_t n) {
  paths_[1][hl_cpu_half_path_chosen(HL_BF16)].widen(src, dst, n);
}
void hl_cpu_narrow_bf16(const float *src, uint16_t *dst, size_t n) {
  paths_[1][hl_cpu_half_path_chosen(HL_BF16)].narrow(src, dst, n);
}
void hl_cpu_widen(hl_dtype t, const uint16_t *src, float *dst, size_t n) {
  paths_[type_index(t)][hl_cpu_half_path_chosen(t)].widen(src, dst, n);
}
void hl_cpu_narrow(hl_dtype t, const float *src, uint16_t *dst, size_t n) {
  paths_[type_index(t)][hl_cpu_half_path_chosen(t)].narrow(src, dst, n);
}
void hl_cpu_widen_operand(hl_dtype t, const uint16_t *src, float *dst, size_t n) {
  paths_[type_index(t)][hl_cpu_half_path_chosen(t)].widen_operand(src, dst, n);
}

/* ------------------------------------------------ by a rounding spec -- */

bool hl_cpu_round_array_vectorised(const hl_round_spec *spec) {
  return (spec->format == HL_F16 || spec->format == HL_BF16) && spec->rounding == HL_ROUNDING_NEAREST_EVEN &&
         spec->overflow == HL_OVERFLOW_IEEE && !spec->flush_subnormals;
}

/* one loop per code width, so that each stores its own type */
#define ROUND_LOOP(TYPE)                                                                   \
  for (size_t i = 0; i < n; i++) {                                                         \
    const uint32_t r = stochastic ? hl_round_random(spec, first_index + i) : 0u;           \
    ((TYPE *)dst)[i] = (TYPE)hl_round_bits(spec, src[i], r);                               \
  }

void hl_cpu_round_array(const hl_round_spec *spec, const float *src, void *dst, size_t n, uint64_t first_index) {
  if (!hl_round_spec_valid(spec))
    hl_fatal("invalid rounding spec: format %s, rounding %d, overflow %d, %d random bits",
             hl_dtype_format_name(spec->format), (int)spec->rounding, (int)spec->overflow, spec->random_bits);
  if (hl_cpu_round_array_vectorised(spec)) {
    hl_cpu_narrow(spec->format, src, (uint16_t *)dst, n);
    return;
  }
  const bool stochastic = spec->rounding == HL_ROUNDING_STOCHASTIC;
  switch (hl_format_code_bytes(spec->format)) {
    case 1: ROUND_LOOP(uint8_t) break;
    case 2: ROUND_LOOP(uint16_t) break;
    default: ROUND_LOOP(uint32_t) break;
  }
}
