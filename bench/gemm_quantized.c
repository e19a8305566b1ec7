/* gemm_quantized.c — gemm_quantized.h: quantize on the CPU backend's kernels
 * (kernels/cpu through hl_backend_cpu's table), read back. */
#include "bench/gemm_quantized.h"

#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "formats/fatal.h"
#include "formats/round.h"
#include "kernels/backend.h"

void quantized_operand_make(quantized_operand *q, const hl_quant_spec *spec, const float *x, size_t rows,
                            size_t rows_quantized, size_t k) {
  const size_t n = rows_quantized * k;
  size_t grid_rows, grid_cols;
  hl_quant_block_grid(spec, rows_quantized, k, &grid_rows, &grid_cols);
  const size_t br = spec->rule == HL_SCALE_TENSOR ? rows_quantized : spec->block_rows;
  const size_t bc = spec->rule == HL_SCALE_TENSOR ? k : spec->block_cols;
  hl_quantized made = {bench_host_alloc(n, "quantized codes"),
                       bench_host_alloc(sizeof(float) * grid_rows * grid_cols, "block scales"),
                       bench_host_alloc(grid_rows * grid_cols, "block scale codes"), 1.0f, 1.0f};
  float *values = bench_host_alloc(sizeof(float) * n, "dequantized operand");
  hl_backend_cpu.quantize->quantize(spec, x, rows_quantized, k, &made, NULL);
  hl_backend_cpu.quantize->dequantize(spec, &made, rows_quantized, k, values);
  q->rows = rows, q->k = k;
  q->dequantized = values; /* the first rows x k are the kept rows */
  q->codes = made.codes;
  q->element = bench_host_alloc(sizeof(float) * rows * k, "element values");
  q->scale = bench_host_alloc(sizeof(float) * rows * k, "element scales");
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < k; c++) {
      q->element[r * k + c] = hl_round_decode(spec->element, made.codes[r * k + c]);
      q->scale[r * k + c] = made.block_scales[r / br * grid_cols + c / bc] * made.tensor_scale;
    }
  q->tensor_decode = spec->rule == HL_SCALE_TENSOR ? made.block_scales[0] : 1.0f;
  q->scale_codes = made.scale_codes;
  q->blocks_per_row = grid_cols;
  q->tensor_scale = made.tensor_scale;
  free(made.block_scales);
}

void quantized_operand_free(quantized_operand *q) {
  free(q->dequantized), free(q->element), free(q->scale), free(q->codes), free(q->scale_codes);
  memset(q, 0, sizeof *q);
}
