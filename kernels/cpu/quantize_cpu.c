/* quantize_cpu.c — the CPU twin of kernels/quantize.h. The rules' arithmetic
 * is kernels/quantize_math.h's; this file makes it stream:
 *
 *   - The matrix is cut into tiles of one block row (block_rows rows; the
 *     tensor rule: one row) by a run of whole blocks across (about 128 KiB
 *     of fp32), each OpenMP thread taking a consecutive share. A tile is
 *     read twice while it is in the cache: once for its blocks' amax (a
 *     block at a time where its width is a multiple of 8, else per column,
 *     then per block), once for the codes, during which the next tile is
 *     prefetched, so that the memory works while the codes are computed.
 *     Column blocks (32x1) are thus stripes of rows read along memory,
 *     never a column at a time.
 *   - Nearest-even codes come from kernels/cpu/quantize_lanes.h (eight AVX2
 *     lanes where the CPU has AVX2 and HALFLAB_CPU_UNITS allows it, else
 *     one element at a time): bit for bit the generic rounding. Stochastic
 *     codes take the generic rounding element by element
 *     (hl_quant_element_code), with Philox word i for element i.
 *   - A block clips where its amax does (scaling and rounding keep the
 *     order of magnitudes), so blocks_clipped needs no per-element record;
 *     the vector loop counts the other stats only when they are asked for.
 *   - Only the tensor rule with the tensor's own amax and nvfp4 read the
 *     whole tensor first (their scales need its amax); the other rules take
 *     the tensor's amax (for the stats) from their blocks'.
 *
 * Codes, scales and stats are those of the element-by-element loops of the
 * rules' definition (tests/stream/test_quantize_tiles.c keeps them and
 * compares). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fatal.h"
#include "formats/philox.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/quantize_lanes.h"
#include "kernels/quantize.h"
#include "kernels/quantize_math.h"

enum {
  TILE_ELEMENTS = 32768,      /* 128 KiB of fp32: the second read of a tile meets the L2 cache */
  PARALLEL_ELEMENTS = 1 << 16 /* below, one thread: waking the others costs more */
};

static const uint32_t kNaNBits = 0x7fc00000u;

/* NaN bits (any payload) to the canonical quiet NaN; |x| bits otherwise. As
 * integers, the bits of non-negative floats order as their values, and every
 * NaN above inf: the largest |x| bits are the amax, a NaN if there is one. */
static uint32_t amax_of_bits(uint32_t bits) { return bits > 0x7f800000u ? kNaNBits : bits; }

static bool avx2_allowed_;
static pthread_once_t avx2_once_ = PTHREAD_ONCE_INIT;

static void choose_avx2(void) {
  avx2_allowed_ = HL_HAVE_QUANTIZE_LANES_AVX2 && hl_cpu_features_get()->avx2 && !hl_cpu_units_get()->portable;
}

/* The AVX2 loops, where the CPU has AVX2 and HALFLAB_CPU_UNITS allows it (chosen once) */
static bool avx2_allowed(void) {
  pthread_once(&avx2_once_, choose_avx2);
  return avx2_allowed_;
}

/* ------------------------------------------------------------- amax -- */

/* max over i < n of |x[i]| as bits (NaN above everything), from `start` */
static uint32_t abs_bits_max_portable(const float *x, size_t n, uint32_t start) {
  uint32_t m = start;
  for (size_t i = 0; i < n; i++) {
    const uint32_t a = hl_f32_bits(x[i]) & 0x7fffffffu;
    m = a > m ? a : m;
  }
  return m;
}

/* colmax[c] = max(colmax[c], |row[c]| bits), c < w */
static void column_max_portable(const float *row, size_t w, uint32_t *colmax) {
  for (size_t c = 0; c < w; c++) {
    const uint32_t a = hl_f32_bits(row[c]) & 0x7fffffffu;
    colmax[c] = a > colmax[c] ? a : colmax[c];
  }
}

#if HL_HAVE_QUANTIZE_LANES_AVX2
HL_QUANT_AVX2_TARGET static uint32_t abs_bits_max_avx2(const float *x, size_t n, uint32_t start) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_epu32(m0, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i)), abs_mask));
    m1 = _mm256_max_epu32(m1, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 8)), abs_mask));
    m2 = _mm256_max_epu32(m2, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 16)), abs_mask));
    m3 = _mm256_max_epu32(m3, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i + 24)), abs_mask));
  }
  m0 = _mm256_max_epu32(_mm256_max_epu32(m0, m1), _mm256_max_epu32(m2, m3));
  uint32_t lanes[8];
  _mm256_storeu_si256((__m256i *)lanes, m0);
  uint32_t m = start;
  for (int k = 0; k < 8; k++) m = lanes[k] > m ? lanes[k] : m;
  return abs_bits_max_portable(x + i, n - i, m);
}

HL_QUANT_AVX2_TARGET static void column_max_avx2(const float *row, size_t w, uint32_t *colmax) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  size_t c = 0;
  for (; c + 8 <= w; c += 8) {
    const __m256i a = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(row + c)), abs_mask);
    __m256i *m = (__m256i *)(colmax + c);
    _mm256_storeu_si256(m, _mm256_max_epu32(_mm256_loadu_si256(m), a));
  }
  column_max_portable(row + c, w - c, colmax + c);
}
#endif

static uint32_t abs_bits_max(const float *x, size_t n, uint32_t start) {
#if HL_HAVE_QUANTIZE_LANES_AVX2
  if (avx2_allowed()) return abs_bits_max_avx2(x, n, start);
#endif
  return abs_bits_max_portable(x, n, start);
}

static void column_max(const float *row, size_t w, uint32_t *colmax) {
#if HL_HAVE_QUANTIZE_LANES_AVX2
  if (avx2_allowed()) {
    column_max_avx2(row, w, colmax);
    return;
  }
#endif
  column_max_portable(row, w, colmax);
}

/* The tensor's largest |x|, a NaN if it holds one (kernels/quantize.h's amax) */
static float cpu_amax(const float *x, size_t n) {
  uint32_t m = 0;
  const size_t chunk = 1u << 16;
  /* dynamic: on a shared machine a thread that loses its core for a while
   * leaves its chunks to the others instead of holding up the region */
#pragma omp parallel for schedule(dynamic) reduction(max : m) if (n >= PARALLEL_ELEMENTS)
  for (size_t i = 0; i < n; i += chunk) m = abs_bits_max(x + i, n - i < chunk ? n - i : chunk, m);
  return hl_f32_from_bits(amax_of_bits(m));
}

/* ------------------------------------------------------------- codes -- */

/* Counts over tiles, added into the stats at the end */
typedef struct {
  uint64_t zero_in, flushed_to_zero, subnormal, clipped;
} code_counts;

/* What every row of a quantization needs: the spec, the element's figures,
 * how an element is scaled, and nvfp4's scale tables */
typedef struct {
  const hl_quant_spec *spec;
  hl_quant_lanes lanes;
  float element_max;
  uint32_t magnitude_mask; /* a code without its sign */
  bool divide;             /* block-fp32: x / factor */
  bool counting;           /* stats asked for: the vector loop counts (the element loops always do) */
  /* nvfp4: each E4M3 scale code's decode and encode factors for this tensor scale */
  float nvfp4_decode[256], nvfp4_encode[256];
} row_coder;

/* hl_quant_nvfp4_scale with its E4M3 rounding by quantize_lanes.h (the
 * generic rounding's bits) and the factors from rc's tables */
static hl_block_scale nvfp4_scale(const row_coder *rc, float amax, float tensor_scale) {
  static const hl_quant_lanes e4m3 = {3, 121, 0x7e, 0x7f, 7, 0, 0, 0, 0}; /* what hl_quant_lanes_code reads of E4M3's */
  float t = hl_div_rn(hl_div_rn(amax, 6.0f), tensor_scale);
  if (t == t) t = t < 0x1p-6f ? 0x1p-6f : t > 448.0f ? 448.0f : t;
  const uint32_t code = hl_quant_lanes_code(&e4m3, t);
  return (hl_block_scale){rc->nvfp4_decode[code], rc->nvfp4_encode[code], false, (uint8_t)code};
}

static void nvfp4_tables(row_coder *rc, float tensor_scale) {
  const float inverse = hl_div_rn(1.0f, tensor_scale);
  for (uint32_t c = 0; c < 256; c++) {
    rc->nvfp4_decode[c] = hl_round_decode(HL_E4M3, c);
    rc->nvfp4_encode[c] = hl_div_rn(inverse, rc->nvfp4_decode[c]);
  }
}

/* x scaled: x * factor (x / factor where `divide`); a NaN x stays x's NaN,
 * as hl_quant_element_code says */
static inline float scaled_one(const row_coder *rc, float x, float factor) {
  if (x != x) return x;
  return rc->divide ? hl_div_rn(x, factor) : hl_mul_rn(x, factor);
}

/* One element, nearest even: hl_quant_element_code's arithmetic */
static inline uint8_t code_one(const row_coder *rc, float x, float factor, code_counts *n) {
  const float y = scaled_one(rc, x, factor);
  const uint32_t code = hl_quant_lanes_code(&rc->lanes, y), magnitude = code & rc->magnitude_mask;
  const bool zero_in = x == 0.0f;
  n->clipped += hl_f32_from_bits(hl_f32_bits(y) & 0x7fffffffu) > rc->element_max;
  n->zero_in += zero_in;
  n->flushed_to_zero += !zero_in && !magnitude;
  n->subnormal += magnitude && !(magnitude >> rc->lanes.man_bits);
  return (uint8_t)code;
}

static void code_row_portable(const row_coder *rc, const float *x, uint8_t *codes, size_t w, const float *factor,
                              code_counts *n) {
  for (size_t c = 0; c < w; c++) codes[c] = code_one(rc, x[c], factor[c], n);
}

/* Stochastic: the generic rounding, element i of the matrix taking word i */
static void code_row_stochastic(const row_coder *rc, const float *x, uint8_t *codes, size_t w, const float *factor,
                                code_counts *n, size_t first_index) {
  const hl_quant_spec *s = rc->spec;
  for (size_t c = 0; c < w; c++) {
    const hl_block_scale bs = {1.0f, factor[c], rc->divide, 0};
    bool clipped;
    const uint32_t code = hl_quant_element_code(s, bs, x[c], hl_philox_u32(s->seed, s->stream, first_index + c),
                                                &clipped);
    const uint32_t magnitude = code & rc->magnitude_mask;
    codes[c] = (uint8_t)code;
    n->clipped += clipped;
    n->zero_in += x[c] == 0.0f;
    n->flushed_to_zero += x[c] != 0.0f && !magnitude;
    n->subnormal += magnitude && !(magnitude >> rc->lanes.man_bits);
  }
}

#if HL_HAVE_QUANTIZE_LANES_AVX2
HL_QUANT_AVX2_TARGET static inline int32_t lane_sum(__m256i v) {
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1)));
}

/* code_row_portable on eight lanes; DIVIDE constant where it inlines */
HL_QUANT_AVX2_TARGET static inline void code_row_avx2_body(const row_coder *rc, const float *x, uint8_t *codes,
                                                           size_t w, const float *factor, code_counts *n,
                                                           const float *next, bool divide, bool counting) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), max = _mm256_set1_ps(rc->element_max);
  const __m256i magnitude_mask = _mm256_set1_epi32((int)rc->magnitude_mask);
  const __m256i smallest_normal = _mm256_set1_epi32(1 << rc->lanes.man_bits), zero = _mm256_setzero_si256();
  /* a local copy: the byte stores below may alias *rc, which would make
   * the compiler reload the figures for every vector */
  const hl_quant_lanes lanes = rc->lanes;
  __m256i zero_in = zero, flushed = zero, subnormal = zero, clipped = zero;
  size_t c = 0;
  for (; c + 8 <= w; c += 8) {
    /* the same place of the next tile, from memory into the cache while
     * this one is computed on: its amax pass then finds it there */
    _mm_prefetch((const char *)(next + c), _MM_HINT_T0);
    const __m256 xv = _mm256_loadu_ps(x + c), f = _mm256_loadu_ps(factor + c);
    const __m256 product = divide ? _mm256_div_ps(xv, f) : _mm256_mul_ps(xv, f);
    const __m256 y = _mm256_blendv_ps(product, xv, _mm256_cmp_ps(xv, xv, _CMP_UNORD_Q)); /* scaled_one's NaN rule */
    const __m256i code = hl_quant_lanes_code8(&lanes, y);
    hl_quant_lanes_store8(codes + c, code);
    if (!counting) continue;
    clipped = _mm256_sub_epi32(clipped, _mm256_castps_si256(_mm256_cmp_ps(_mm256_and_ps(y, abs_mask), max, _CMP_GT_OQ)));
    const __m256i is_zero_in = _mm256_castps_si256(_mm256_cmp_ps(xv, _mm256_setzero_ps(), _CMP_EQ_OQ));
    const __m256i magnitude = _mm256_and_si256(code, magnitude_mask);
    const __m256i zero_code = _mm256_cmpeq_epi32(magnitude, zero);
    zero_in = _mm256_sub_epi32(zero_in, is_zero_in);
    flushed = _mm256_sub_epi32(flushed, _mm256_andnot_si256(is_zero_in, zero_code));
    subnormal = _mm256_sub_epi32(subnormal,
                                 _mm256_andnot_si256(zero_code, _mm256_cmpgt_epi32(smallest_normal, magnitude)));
  }
  n->zero_in += (uint32_t)lane_sum(zero_in);
  n->flushed_to_zero += (uint32_t)lane_sum(flushed);
  n->subnormal += (uint32_t)lane_sum(subnormal);
  n->clipped += (uint32_t)lane_sum(clipped);
  code_row_portable(rc, x + c, codes + c, w - c, factor + c, n);
}

HL_QUANT_AVX2_TARGET static void code_row_avx2(const row_coder *rc, const float *x, uint8_t *codes, size_t w,
                                               const float *factor, code_counts *n, const float *next) {
  if (rc->divide) {
    if (rc->counting) code_row_avx2_body(rc, x, codes, w, factor, n, next, true, true);
    else code_row_avx2_body(rc, x, codes, w, factor, n, next, true, false);
  } else {
    if (rc->counting) code_row_avx2_body(rc, x, codes, w, factor, n, next, false, true);
    else code_row_avx2_body(rc, x, codes, w, factor, n, next, false, false);
  }
}
#endif

/* --------------------------------------------------------------- tiles -- */

/* How the matrix is cut: tiles of tile_rows x tile_cols (whole blocks) */
typedef struct {
  size_t rows, cols, block_rows, block_cols, grid_cols;
  size_t tile_rows, tile_cols, tiles_across, tiles;
  bool tensor;
} tile_plan;

static tile_plan plan_tiles(const hl_quant_spec *s, size_t rows, size_t cols) {
  tile_plan p = {.rows = rows, .cols = cols, .tensor = s->rule == HL_SCALE_TENSOR};
  size_t grid_rows;
  hl_quant_block_grid(s, rows, cols, &grid_rows, &p.grid_cols);
  p.block_rows = p.tensor ? 1 : s->block_rows;
  p.block_cols = p.tensor ? 1 : s->block_cols;
  p.tile_rows = p.block_rows;
  const size_t blocks_across = TILE_ELEMENTS / (p.block_rows * p.block_cols);
  p.tile_cols = p.block_cols * (blocks_across ? blocks_across : 1);
  if (p.tile_cols > cols && cols) p.tile_cols = cols;
  p.tiles_across = cols ? (cols + p.tile_cols - 1) / p.tile_cols : 0;
  p.tiles = (rows + p.tile_rows - 1) / p.tile_rows * p.tiles_across;
  return p;
}

/* What the threads add up */
typedef struct {
  code_counts counts;
  uint64_t blocks_clipped;
  uint32_t amax_bits; /* the largest |x| bits seen by the blocks' amax */
} tile_totals;

/* A thread's scratch: per tile column, the amax bits and the factor; per
 * block, MX's scale code */
typedef struct {
  uint32_t *colmax;
  float *factor;
  uint32_t *code;
} tile_scratch;

#if HL_HAVE_QUANTIZE_LANES_AVX2
/* amax bits of nb blocks of `rows` x bc (bc a multiple of 8) side by side
 * from x (row stride `cols`), read a block at a time */
HL_QUANT_AVX2_TARGET static void block_max_avx2(const float *x, size_t cols, size_t rows, size_t bc, size_t nb,
                                                uint32_t *out) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  for (size_t j = 0; j < nb; j++) {
    __m256i m = _mm256_setzero_si256();
    for (size_t r = 0; r < rows; r++)
      for (size_t c = j * bc; c < (j + 1) * bc; c += 8)
        m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + r * cols + c)), abs_mask));
    const __m128i h = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    const __m128i q = _mm_max_epu32(h, _mm_shuffle_epi32(h, 0x4e));
    out[j] = (uint32_t)_mm_cvtsi128_si32(_mm_max_epu32(q, _mm_shuffle_epi32(q, 0xb1)));
  }
}
#endif

/* t->colmax[j]: the amax bits (before NaN's canonical form) of the tile's block j */
static void tile_block_max(const tile_plan *p, const float *x, size_t r0, size_t r1, size_t c0, size_t w,
                           tile_scratch *t) {
  const size_t bc = p->block_cols, nb = (w + bc - 1) / bc;
#if HL_HAVE_QUANTIZE_LANES_AVX2
  if (avx2_allowed() && bc % 8 == 0 && w % bc == 0) {
    block_max_avx2(x + r0 * p->cols + c0, p->cols, r1 - r0, bc, nb, t->colmax);
    return;
  }
#endif
  memset(t->colmax, 0, w * sizeof *t->colmax);
  for (size_t r = r0; r < r1; r++) column_max(x + r * p->cols + c0, w, t->colmax);
  for (size_t j = 0; j < nb; j++) { /* in place: block j's columns start at or after j */
    uint32_t m = 0;
    for (size_t c = j * bc; c < w && c < (j + 1) * bc; c++) m = t->colmax[c] > m ? t->colmax[c] : m;
    t->colmax[j] = m;
  }
}

/* The tile's blocks: their amax, scale and scale code, and each column's factor */
/* hl_quant_mx_scale from its E8M0 code */
static hl_block_scale mx_scale_of_code(uint32_t code) {
  const float nan = hl_f32_from_bits(kNaNBits);
  if (code == 0xffu) return (hl_block_scale){nan, nan, false, 0xffu};
  return (hl_block_scale){hl_pow2f((int)code - 127), hl_pow2f(127 - (int)code), false, (uint8_t)code};
}

#if HL_HAVE_QUANTIZE_LANES_AVX2
/* hl_quant_mx_scale's E8M0 codes of nb blocks from their amax bits (a NaN
 * any bits above inf), eight at a time: FLOOR, clamp(E - emax, 0, 254) of
 * the amax's exponent field E (inf included); RCEIL, of d = amax / max
 * rounded once: E_d + (d is no power of two), at most 254 (inf: 254), and
 * for a subnormal d 1 when it exceeds 2^-127, else 0; a NaN amax 255 */
HL_QUANT_AVX2_TARGET static void mx_codes_avx2(const hl_quant_spec *s, const uint32_t *amax_bits, uint32_t *codes,
                                               size_t nb) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1), top = _mm256_set1_epi32(254);
  const __m256i emax = _mm256_set1_epi32(hl_quant_element_emax(s->element));
  const __m256 max = _mm256_set1_ps(hl_quant_element_max(s->element));
  size_t j = 0;
  for (; j + 8 <= nb; j += 8) {
    const __m256i a = _mm256_loadu_si256((const __m256i *)(amax_bits + j));
    const __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000));
    __m256i code;
    if (s->rule == HL_SCALE_MX_FLOOR) {
      code = _mm256_min_epi32(_mm256_max_epi32(_mm256_sub_epi32(_mm256_srli_epi32(a, 23), emax), zero), top);
    } else {
      const __m256i d = _mm256_castps_si256(_mm256_div_ps(_mm256_castsi256_ps(a), max));
      const __m256i field = _mm256_srli_epi32(d, 23);
      const __m256i fraction = _mm256_and_si256(d, _mm256_set1_epi32(0x007fffff));
      const __m256i inexact = _mm256_andnot_si256(_mm256_cmpeq_epi32(fraction, zero), one);
      const __m256i normal = _mm256_min_epi32(_mm256_add_epi32(field, inexact), top);
      const __m256i subnormal = _mm256_and_si256(_mm256_cmpgt_epi32(d, _mm256_set1_epi32(0x00400000)), one);
      code = _mm256_blendv_epi8(normal, subnormal, _mm256_cmpeq_epi32(field, zero));
    }
    _mm256_storeu_si256((__m256i *)(codes + j), _mm256_blendv_epi8(code, _mm256_set1_epi32(0xff), nan));
  }
  for (; j < nb; j++) codes[j] = hl_quant_mx_scale(s, hl_f32_from_bits(amax_of_bits(amax_bits[j]))).code;
}

/* nvfp4_scale's E4M3 codes of nb blocks, eight at a time: amax / 6 /
 * tensor_scale rounded twice as there, clamped to [2^-6, 448] but a NaN
 * kept (maxps and minps return their second operand when one is NaN), then
 * quantize_lanes.h's E4M3 rounding */
HL_QUANT_AVX2_TARGET static void nvfp4_codes_avx2(const row_coder *rc, const uint32_t *amax_bits, uint32_t *codes,
                                                  size_t nb, float tensor_scale) {
  const hl_quant_lanes e4m3 = hl_quant_lanes_of(HL_E4M3);
  const __m256 six = _mm256_set1_ps(6.0f), ts = _mm256_set1_ps(tensor_scale);
  const __m256 lo = _mm256_set1_ps(0x1p-6f), hi = _mm256_set1_ps(448.0f);
  size_t j = 0;
  for (; j + 8 <= nb; j += 8) {
    const __m256 amax = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(amax_bits + j)));
    const __m256 t = _mm256_div_ps(_mm256_div_ps(amax, six), ts);
    _mm256_storeu_si256((__m256i *)(codes + j), hl_quant_lanes_code8(&e4m3, _mm256_min_ps(hi, _mm256_max_ps(lo, t))));
  }
  for (; j < nb; j++) codes[j] = nvfp4_scale(rc, hl_f32_from_bits(amax_of_bits(amax_bits[j])), tensor_scale).code;
}
#endif

static void tile_scales(const row_coder *rc, const tile_plan *p, const float *x, size_t r0, size_t r1, size_t c0,
                        size_t w, const hl_quantized *q, tile_scratch *t, tile_totals *tot) {
  const hl_quant_spec *s = rc->spec;
  tile_block_max(p, x, r0, r1, c0, w, t);
  const size_t block_row = r0 / p->block_rows, nb = (w + p->block_cols - 1) / p->block_cols;
  bool mx_codes = false, nvfp4_codes = false; /* scales from codes worked out eight blocks at a time */
#if HL_HAVE_QUANTIZE_LANES_AVX2
  if ((s->rule == HL_SCALE_MX_FLOOR || s->rule == HL_SCALE_MX_RCEIL) && avx2_allowed()) {
    mx_codes_avx2(s, t->colmax, t->code, nb);
    mx_codes = true;
  } else if (s->rule == HL_SCALE_NVFP4 && avx2_allowed()) {
    nvfp4_codes_avx2(rc, t->colmax, t->code, nb, q->tensor_scale);
    nvfp4_codes = true;
  }
#endif
  for (size_t j = 0; j < nb; j++) {
    const size_t b0 = j * p->block_cols, b1 = b0 + p->block_cols < w ? b0 + p->block_cols : w;
    const uint32_t m = amax_of_bits(t->colmax[j]);
    tot->amax_bits = m > tot->amax_bits ? m : tot->amax_bits;
    const uint32_t code = mx_codes || nvfp4_codes ? t->code[j] : 0u;
    const hl_block_scale bs = mx_codes      ? mx_scale_of_code(code)
                              : nvfp4_codes ? (hl_block_scale){rc->nvfp4_decode[code], rc->nvfp4_encode[code], false,
                                                               (uint8_t)code}
                              : s->rule == HL_SCALE_NVFP4 ? nvfp4_scale(rc, hl_f32_from_bits(m), q->tensor_scale)
                                                          : hl_quant_block_scale(s, hl_f32_from_bits(m), q->tensor_scale);
    const size_t b = block_row * p->grid_cols + c0 / p->block_cols + j;
    q->block_scales[b] = bs.decode;
    if (q->scale_codes) q->scale_codes[b] = bs.code;
    for (size_t c = b0; c < b1; c++) t->factor[c] = bs.encode_factor;
    /* scaling and rounding keep the order of magnitudes: a block clips
     * where its amax does (a NaN amax makes every scaled value NaN: none) */
    const float amax = hl_f32_from_bits(m);
    const float scaled = s->rule == HL_SCALE_BLOCK_FP32 ? hl_div_rn(amax, bs.encode_factor)
                                                        : hl_mul_rn(amax, bs.encode_factor);
    tot->blocks_clipped += scaled > hl_quant_element_max(s->element);
  }
}

/* One tile: its scales (per block rules), its codes, its counts */
static void quantize_tile(const row_coder *rc, const tile_plan *p, const float *x, size_t tile, const hl_quantized *q,
                          tile_scratch *t, tile_totals *tot) {
  const hl_quant_spec *s = rc->spec;
  const size_t r0 = tile / p->tiles_across * p->tile_rows, c0 = tile % p->tiles_across * p->tile_cols;
  const size_t r1 = r0 + p->tile_rows < p->rows ? r0 + p->tile_rows : p->rows;
  const size_t w = c0 + p->tile_cols < p->cols ? p->tile_cols : p->cols - c0;
  if (!p->tensor) tile_scales(rc, p, x, r0, r1, c0, w, q, t, tot);
  const bool stochastic = s->rounding == HL_ROUNDING_STOCHASTIC;
  /* the next tile's first element (a thread's tiles are consecutive), for
   * the prefetches; past the matrix's end they fetch nothing that faults */
  const size_t next_r0 = (tile + 1) / p->tiles_across * p->tile_rows, next_c0 = (tile + 1) % p->tiles_across * p->tile_cols;
  const float *next = x + next_r0 * p->cols + next_c0;
  for (size_t r = r0; r < r1; r++) {
    const size_t i = r * p->cols + c0;
    if (p->tensor && rc->counting) /* the stats' amax, in the same pass */
      tot->amax_bits = abs_bits_max(x + i, w, tot->amax_bits);
    if (stochastic) code_row_stochastic(rc, x + i, q->codes + i, w, t->factor, &tot->counts, i);
#if HL_HAVE_QUANTIZE_LANES_AVX2
    else if (avx2_allowed()) code_row_avx2(rc, x + i, q->codes + i, w, t->factor, &tot->counts, next + (r - r0) * p->cols);
#endif
    else code_row_portable(rc, x + i, q->codes + i, w, t->factor, &tot->counts);
  }
}

/* The tensor rule's scale, and nvfp4's tensor scale, into q; the tensor
 * rule's block scale (every column's factor) */
static hl_block_scale tensor_scales(const hl_quant_spec *s, const float *x, size_t n, hl_quantized *q,
                                    float *amax_seen) {
  hl_block_scale tensor_bs = {1.0f, 1.0f, false, 0};
  q->tensor_scale = 1.0f;
  q->encode_scale = 1.0f;
  const bool own_amax = s->rule == HL_SCALE_NVFP4 || (s->rule == HL_SCALE_TENSOR && s->tensor_amax < 0.0f);
  *amax_seen = own_amax ? cpu_amax(x, n) : -1.0f;
  if (s->rule == HL_SCALE_NVFP4) q->tensor_scale = hl_quant_nvfp4_tensor_scale(*amax_seen);
  if (s->rule == HL_SCALE_TENSOR) {
    q->encode_scale = hl_quant_tensor_encode_scale(s, own_amax ? *amax_seen : s->tensor_amax);
    tensor_bs.encode_factor = q->encode_scale;
    tensor_bs.decode = hl_div_rn(1.0f, q->encode_scale);
  }
  return tensor_bs;
}

static void cpu_quantize(const hl_quant_spec *s, const float *x, size_t rows, size_t cols, hl_quantized *q,
                         hl_quant_stats *stats) {
  if (!hl_quant_spec_valid(s)) hl_fatal("quantize: not a quantization spec (rule %d, element %s)", (int)s->rule,
                                        hl_dtype_format_name(s->element));
  const tile_plan p = plan_tiles(s, rows, cols);
  float amax_seen;
  const hl_block_scale tensor_bs = tensor_scales(s, x, rows * cols, q, &amax_seen);
  if (p.tensor && rows && cols) q->block_scales[0] = tensor_bs.decode;
  if (p.tensor && rows && cols && q->scale_codes) q->scale_codes[0] = 0;
  const hl_format_layout L = hl_format_layout_of(s->element);
  row_coder rc = {s, hl_quant_lanes_of(s->element), hl_quant_element_max(s->element),
                  (1u << (L.exp_bits + L.man_bits)) - 1u, s->rule == HL_SCALE_BLOCK_FP32, stats != NULL, {0}, {0}};
  if (s->rule == HL_SCALE_NVFP4) nvfp4_tables(&rc, q->tensor_scale);
  uint64_t zero_in = 0, flushed = 0, subnormal = 0, clipped = 0, blocks_clipped = 0;
  uint32_t amax_bits = 0;
#pragma omp parallel if (rows * cols >= PARALLEL_ELEMENTS) \
    reduction(+ : zero_in, flushed, subnormal, clipped, blocks_clipped) reduction(max : amax_bits)
  {
    tile_scratch t = {malloc(p.tile_cols * sizeof(uint32_t)), malloc(p.tile_cols * sizeof(float)),
                      malloc(p.tile_cols * sizeof(uint32_t))};
    if (!t.colmax || !t.factor || !t.code) hl_fatal("quantize: out of memory for a tile of %zu columns", p.tile_cols);
    if (p.tensor)
      for (size_t c = 0; c < p.tile_cols; c++) t.factor[c] = tensor_bs.encode_factor;
    tile_totals tot = {{0, 0, 0, 0}, 0, 0};
#pragma omp for schedule(static) /* consecutive tiles, so that the prefetches serve the thread's next one */
    for (size_t tile = 0; tile < p.tiles; tile++) quantize_tile(&rc, &p, x, tile, q, &t, &tot);
    zero_in += tot.counts.zero_in, flushed += tot.counts.flushed_to_zero, subnormal += tot.counts.subnormal;
    clipped += tot.counts.clipped, blocks_clipped += tot.blocks_clipped;
    amax_bits = tot.amax_bits > amax_bits ? tot.amax_bits : amax_bits;
    free(t.colmax), free(t.factor), free(t.code);
  }
  if (!stats) return;
  size_t grid_rows, grid_cols;
  hl_quant_block_grid(s, rows, cols, &grid_rows, &grid_cols);
  stats->elements = (uint64_t)rows * cols;
  stats->blocks = (uint64_t)grid_rows * grid_cols;
  stats->zero_in = zero_in;
  stats->flushed_to_zero = flushed;
  stats->subnormal = subnormal;
  stats->clipped = clipped;
  stats->blocks_clipped = p.tensor ? clipped > 0 : blocks_clipped;
  stats->amax = amax_seen >= 0.0f || amax_seen != amax_seen ? amax_seen : hl_f32_from_bits(amax_of_bits(amax_bits));
}

static void cpu_dequantize(const hl_quant_spec *s, const hl_quantized *q, size_t rows, size_t cols, float *y) {
  if (!hl_quant_spec_valid(s)) hl_fatal("dequantize: not a quantization spec (rule %d, element %s)", (int)s->rule,
                                        hl_dtype_format_name(s->element));
  size_t grid_rows, grid_cols;
  hl_quant_block_grid(s, rows, cols, &grid_rows, &grid_cols);
  const size_t br = s->rule == HL_SCALE_TENSOR ? rows : s->block_rows, bc = s->rule == HL_SCALE_TENSOR ? cols : s->block_cols;
#pragma omp parallel for schedule(static)
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) {
      const float block_scale = q->block_scales[r / br * grid_cols + c / bc];
      y[r * cols + c] = hl_quant_dequantize_one(s->element, q->codes[r * cols + c], block_scale, q->tensor_scale);
    }
}

const struct hl_quantize_kernels hl_cpu_quantize_kernels = {cpu_quantize, cpu_dequantize, cpu_amax};
