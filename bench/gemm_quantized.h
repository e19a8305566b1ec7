/* gemm_quantized.h — the block-scaled operands of gemm --accuracy's emulated
 * rows: an fp32 operand quantized by kernels/quantize.h on the CPU (its
 * blocks run along k, the reduction: A is m x k, B is stored n x k), then
 * read back three ways: the fp32 values it holds (for a GEMM on dequantized
 * inputs), the element codes' values before any scale and each element's
 * scale (for the narrow accumulator, which sums unscaled products and applies
 * the scales where the hardware does), and the codes themselves (for a
 * library's fp8 GEMM on the same data). */
#ifndef HL_GEMM_QUANTIZED_H
#define HL_GEMM_QUANTIZED_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/quantize.h"

typedef struct {
  size_t rows, k;
  float *dequantized; /* rows x k */
  float *element;     /* rows x k: decode(code), no scale */
  float *scale;       /* rows x k: the element's block scale times the tensor scale */
  uint8_t *codes;     /* rows x k */
  float tensor_decode; /* the tensor rule's decode scale (1 / TE's scale); 1 for the others */
  uint8_t *scale_codes; /* rows x blocks_per_row: the E8M0 (mx) or E4M3 (nvfp4) block scale codes */
  size_t blocks_per_row; /* along k; blocks one row high only (1 x n blocks) */
  float tensor_scale;   /* nvfp4's per-tensor decode scale; 1 for the others */
} quantized_operand;

/* x (rows_quantized x k, row-major) quantized by spec; the first `rows` rows
 * kept (rows <= rows_quantized: the rows below only shape the blocks and the
 * amax, as a weight's other rows do in a 128x128 block). */
void quantized_operand_make(quantized_operand *q, const hl_quant_spec *spec, const float *x, size_t rows,
                            size_t rows_quantized, size_t k);
void quantized_operand_free(quantized_operand *q);

#endif
