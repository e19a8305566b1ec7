/* gemm_block_scaled.h — the operands of a block-scaled GEMM (kernels/gemm.h's
 * block_scaling) as cuBLASLt reads them, made on the host from
 * kernels/quantize.h's codes (one per byte) and scale codes (row-major over
 * the block grid).
 *
 * Scales: cuBLASLt's tiled layout for VEC32_UE8M0 and VEC16_UE4M3 (cuBLAS
 * documentation, "1D block scaling factors layout"): the rows x blocks
 * matrix of scale codes (rows: an operand's outer dimension, blocks along
 * k) is cut into 128 x 4 tiles of 512 bytes, padded, tiles row-major; inside
 * a tile, row r and block c sit at (r % 32) * 16 + (r / 32) * 4 + c.
 * Elements: e4m3 one per byte as they are; e2m1 two per byte, element 2i in
 * the low nibble (CUDA_R_4F_E2M1, as PyTorch's float4_e2m1fn_x2). */
#ifndef HL_GEMM_BLOCK_SCALED_H
#define HL_GEMM_BLOCK_SCALED_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Bytes of the tiled layout of a rows x blocks scale matrix */
static inline size_t hl_gemm_block_scales_bytes(int64_t rows, int64_t blocks) {
  return (size_t)(((rows + 127) / 128) * ((blocks + 3) / 4) * 512);
}

/* The byte of the tiled layout that holds the scale of row r, block c */
static inline size_t hl_gemm_block_scale_offset(int64_t r, int64_t c, int64_t blocks) {
  const int64_t tiles_along_k = (blocks + 3) / 4;
  return (size_t)(((r / 128) * tiles_along_k + c / 4) * 512 + (r % 32) * 16 + (r % 128 / 32) * 4 + c % 4);
}

/* codes (rows x blocks, row-major) into tiled (hl_gemm_block_scales_bytes; the padding zero) */
static inline void hl_gemm_block_scales_tile(const uint8_t *codes, int64_t rows, int64_t blocks, uint8_t *tiled) {
  memset(tiled, 0, hl_gemm_block_scales_bytes(rows, blocks));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < blocks; c++) tiled[hl_gemm_block_scale_offset(r, c, blocks)] = codes[r * blocks + c];
}

/* n e2m1 codes (one per byte, n even) packed two per byte into packed (n / 2 bytes) */
static inline void hl_gemm_pack_e2m1(const uint8_t *codes, int64_t n, uint8_t *packed) {
  for (int64_t i = 0; i + 1 < n; i += 2) packed[i / 2] = (uint8_t)((codes[i] & 0xfu) | (codes[i + 1] & 0xfu) << 4);
}

#endif /* HL_GEMM_BLOCK_SCALED_H */
