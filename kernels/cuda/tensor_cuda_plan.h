/* tensor_cuda_plan.h — the host-side arithmetic of the CUDA tensor kernels:
 * how a coalesced index space (kernels/tensor_index.h, the CPU's rule) is
 * split into coordinates without a hardware division, how a reduction is
 * cut into chunks, and the stored bits of a fill value. Plain C that nvcc also compiles (HL_HD), with
 * no CUDA API call, so the unit suite checks it on the CPU
 * (tests/core-gpu/test_cuda_plan.c): the parts of the CUDA twin that can go
 * wrong without a GPU are tested without one. */
#ifndef HL_TENSOR_CUDA_PLAN_H
#define HL_TENSOR_CUDA_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "formats/half.h"
#include "kernels/tensor_index.h"
#include "kernels/tensor_kernels.h"
#include "kernels/tensor_math.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------- division by invariants -- */
/* n / d for a divisor fixed at launch, as a multiply-high, an add and a shift
 * (Granlund and Montgomery, "Division by invariant integers using
 * multiplication", PLDI 1994): an integer division costs dozens of
 * instructions on a GPU, this costs three. Valid for 1 <= d < 2^31 and
 * 0 <= n < 2^31 (so that hi + n cannot wrap); the kernels take this path only
 * when every linear index of the launch is below 2^31. */
typedef struct {
  uint32_t divisor, magic, shift;
} hl_divider;

static inline hl_divider hl_divider_make(uint32_t d) {
  hl_divider v;
  v.divisor = d ? d : 1u;
  uint32_t s = 0;
  while (s < 31u && (1u << s) < v.divisor) s++;
  /* magic = floor(2^32 (2^s - d) / d) + 1 < 2^32 because d > 2^(s-1) */
  v.magic = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << s) - v.divisor)) / v.divisor + 1u);
  v.shift = s;
  return v;
}

HL_HD static inline uint32_t hl_divider_div(hl_divider v, uint32_t n) {
#if HL_DEVICE_CODE
  const uint32_t hi = __umulhi(n, v.magic);
#else
  const uint32_t hi = (uint32_t)(((uint64_t)n * v.magic) >> 32);
#endif
  return (hi + n) >> v.shift;
}

/* A strided index space of up to 3 operands, ready for a kernel: the sizes,
 * each operand's strides, and the dividers of the three inner sizes (used
 * when `small`: every linear index below 2^31). */
typedef struct {
  int64_t size[HL_MAX_DIMS];
  int64_t stride[3][HL_MAX_DIMS];
  int64_t total;
  bool small;
  hl_divider div3, div2, div1;
} hl_cuda_geom;

/* Coalesces and fills in the dividers; strides[k] for k < nops. */
static inline hl_cuda_geom hl_cuda_geom_make(const int64_t size[HL_MAX_DIMS], const int64_t *const strides[], int nops) {
  hl_cuda_geom g;
  memset(&g, 0, sizeof g);
  g.total = 1;
  for (int d = 0; d < HL_MAX_DIMS; d++) {
    g.size[d] = size[d];
    g.total *= size[d];
    for (int k = 0; k < nops; k++) g.stride[k][d] = strides[k][d];
  }
  if (g.total > 0) {
    int64_t *const rows[3] = {g.stride[0], g.stride[1], g.stride[2]};
    hl_coalesce(g.size, rows, nops);
  }
  g.small = g.total < ((int64_t)1 << 31);
  if (g.small && g.total > 0) {
    g.div3 = hl_divider_make((uint32_t)g.size[3]);
    g.div2 = hl_divider_make((uint32_t)g.size[2]);
    g.div1 = hl_divider_make((uint32_t)g.size[1]);
  }
  return g;
}

/* Linear index i (row-major over g.size) -> element offset of operand k. */
HL_HD static inline int64_t hl_cuda_geom_offset(const hl_cuda_geom *g, int k, int64_t i) {
  int64_t i0, i1, i2, i3;
  if (g->small) {
    uint32_t u = (uint32_t)i, q = hl_divider_div(g->div3, u);
    i3 = (int64_t)(u - q * g->div3.divisor);
    u = q;
    q = hl_divider_div(g->div2, u);
    i2 = (int64_t)(u - q * g->div2.divisor);
    u = q;
    q = hl_divider_div(g->div1, u);
    i1 = (int64_t)(u - q * g->div1.divisor);
    i0 = (int64_t)q;
  } else {
    i3 = i % g->size[3];
    i /= g->size[3];
    i2 = i % g->size[2];
    i /= g->size[2];
    i1 = i % g->size[1];
    i0 = i / g->size[1];
  }
  return i0 * g->stride[k][0] + i1 * g->stride[k][1] + i2 * g->stride[k][2] + i3 * g->stride[k][3];
}

/* One contiguous run with unit strides in every operand (after coalescing). */
static inline bool hl_cuda_geom_contiguous(const hl_cuda_geom *g, int nops) {
  if (g->size[0] != 1 || g->size[1] != 1 || g->size[2] != 1) return false;
  if (g->size[3] == 1) return true;
  for (int k = 0; k < nops; k++)
    if (g->stride[k][3] != 1) return false;
  return true;
}

/* ------------------------------------------------------ reduction plans -- */
/* Reductions are cut into a fixed number of chunks, each summed by one warp
 * (rows) or one block column (columns) in a fixed order, and the chunk
 * partials folded in chunk order by a second kernel: no atomics, the same
 * bits on every run. The chunk count only depends on the shape and the SM
 * count, never on timing. */

#define HL_CUDA_ROW_CHUNK_MIN 1024 /* elements per warp chunk of a long row */
#define HL_CUDA_COL_CHUNK_MIN 64   /* rows per block chunk of a column sum */
#define HL_CUDA_MAX_CHUNKS 1024

/* Chunks along r, of at least `min` elements each and at most
 * HL_CUDA_MAX_CHUNKS, for `items` independent sums, about `units` launch
 * units wanted to fill the GPU: 1 when there are items enough. */
static inline int64_t hl_cuda_chunks(int64_t items, int64_t r, int64_t units, int64_t min) {
  if (items <= 0 || r <= min) return 1;
  int64_t want = (units + items - 1) / items;
  int64_t most = (r + min - 1) / min;
  int64_t c = want < most ? want : most;
  if (c > HL_CUDA_MAX_CHUNKS) c = HL_CUDA_MAX_CHUNKS;
  return c < 1 ? 1 : c;
}

/* Chunks per row for `outer` rows of r elements summed by warps, about
 * `warps` warps wanted. */
static inline int64_t hl_cuda_row_chunks(int64_t outer, int64_t r, int64_t warps) {
  return hl_cuda_chunks(outer, r, warps, HL_CUDA_ROW_CHUNK_MIN);
}

/* Chunks along r for column sums with `tiles` column tiles (one block per
 * tile and chunk), about `blocks` blocks wanted. */
static inline int64_t hl_cuda_col_chunks(int64_t tiles, int64_t r, int64_t blocks) {
  return hl_cuda_chunks(tiles, r, blocks, HL_CUDA_COL_CHUNK_MIN);
}

/* Chunk k of n chunks over [0, r): [*lo, *hi), in order, covering r exactly
 * (the last chunks may be empty when r is small). */
HL_HD static inline void hl_cuda_chunk(int64_t r, int64_t n, int64_t k, int64_t *lo, int64_t *hi) {
  const int64_t per = n > 0 ? (r + n - 1) / n : r;
  int64_t a = k * per, b = a + per;
  *lo = a < r ? a : r;
  *hi = b < r ? b : r;
}

/* ------------------------------------------------------------ fill bits -- */
/* The stored bits of `value` in dtype t, rounded once as the CPU's fill
 * does (integers: nearest even, saturated, NaN -> 0), in the low bytes. */
static inline uint64_t hl_cuda_fill_bits(hl_dtype t, double value) {
  uint64_t bits = 0;
  switch (t) {
    case HL_F64: memcpy(&bits, &value, 8); break;
    case HL_F32: {
      float f = (float)value;
      uint32_t u;
      memcpy(&u, &f, 4);
      bits = u;
      break;
    }
    case HL_F16: bits = hl_f64_to_f16(value); break;
    case HL_BF16: bits = hl_f64_to_bf16(value); break;
    case HL_I32: bits = (uint32_t)hl_f64_to_i32_sat(value); break;
    case HL_I8: bits = (uint8_t)hl_f64_to_i8_sat(value); break;
    default: break;
  }
  return bits;
}

/* 16 bytes of an element of `size` bytes (1, 2, 4, 8) repeated, for
 * vectorised fills: words[0..3] little-endian. */
static inline void hl_cuda_fill_pattern(uint64_t bits, size_t size, uint32_t words[4]) {
  unsigned char b[16];
  for (size_t i = 0; i < 16; i++) b[i] = (unsigned char)(bits >> (8 * (i % size)));
  memcpy(words, b, 16);
}

#ifdef __cplusplus
}
#endif

#endif /* HL_TENSOR_CUDA_PLAN_H */
