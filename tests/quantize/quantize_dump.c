/* quantize_dump.c — the CPU quantizers for quantize_reference.py: reads jobs
 * on stdin, each a line "RULE ELEMENT BLOCK_ROWS BLOCK_COLS ROWS COLS" (rule
 * and element by name: mx-floor e4m3 1 32 64 96) and ROWS x COLS
 * little-endian fp32 values, row-major; writes for each, on stdout: the
 * codes (one byte each), the scale codes (one byte per block), the block
 * scales (fp32), the tensor scale and encode scale (fp32), the dequantized
 * values (fp32), then the counts (elements, blocks, zero_in,
 * flushed_to_zero, subnormal, clipped, blocks_clipped as uint64, amax as fp32). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/dtype.h"
#include "kernels/backend.h"
#include "kernels/quantize.h"

static int die(const char *what) {
  fprintf(stderr, "quantize_dump: %s\n", what);
  return 2;
}

static void put(const void *p, size_t bytes) {
  if (bytes && fwrite(p, 1, bytes, stdout) != bytes) exit(die("cannot write stdout"));
}

int main(void) {
  const struct hl_quantize_kernels *k = hl_backend_cpu.quantize;
  char rule_name[32], element_name[32];
  unsigned block_rows, block_cols;
  size_t rows, cols;
  while (scanf("%31s %31s %u %u %zu %zu", rule_name, element_name, &block_rows, &block_cols, &rows, &cols) == 6) {
    if (getchar() != '\n') return die("a job's line does not end after its six fields");
    hl_quant_spec s = hl_quant_spec_make(HL_DTYPE_NONE, HL_SCALE_RULES);
    for (int r = 0; r < HL_SCALE_RULES; r++)
      if (!strcmp(rule_name, hl_scale_rule_name((hl_scale_rule)r))) s = hl_quant_spec_make(HL_DTYPE_NONE, (hl_scale_rule)r);
    for (int t = 0; t < HL_DTYPES; t++)
      if (!strcmp(element_name, hl_dtype_name((hl_dtype)t))) s.element = (hl_dtype)t;
    s.block_rows = block_rows, s.block_cols = block_cols;
    if (!hl_quant_spec_valid(&s)) return die("not a quantization spec");
    size_t grid_rows, grid_cols;
    hl_quant_block_grid(&s, rows, cols, &grid_rows, &grid_cols);
    const size_t n = rows * cols, blocks = grid_rows * grid_cols;
    float *x = malloc(n * sizeof(float) + 1), *y = malloc(n * sizeof(float) + 1);
    hl_quantized q = {malloc(n + 1), malloc(blocks * sizeof(float) + 1), malloc(blocks + 1), 0.0f, 0.0f};
    if (fread(x, sizeof(float), n, stdin) != n) return die("a job's values end early");
    hl_quant_stats st;
    k->quantize(&s, x, rows, cols, &q, &st);
    k->dequantize(&s, &q, rows, cols, y);
    put(q.codes, n);
    put(q.scale_codes, blocks);
    put(q.block_scales, blocks * sizeof(float));
    put(&q.tensor_scale, sizeof(float));
    put(&q.encode_scale, sizeof(float));
    put(y, n * sizeof(float));
    const uint64_t counts[7] = {st.elements, st.blocks, st.zero_in, st.flushed_to_zero,
                                st.subnormal, st.clipped, st.blocks_clipped};
    put(counts, sizeof counts);
    put(&st.amax, sizeof(float));
    free(x), free(y), free(q.codes), free(q.block_scales), free(q.scale_codes);
  }
  return fflush(stdout) ? die("cannot write stdout") : 0;
}
