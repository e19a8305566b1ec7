/* quantize_gemm.h — halflab-bench quantize-error's GEMM study: each linear
 * layer of a GPT whose input (an activations file) and weight (a weights
 * file) are both given, its product Y = X W^T with X and W quantized and
 * decoded per element format and scale rule, against the fp64 product of
 * the fp32 tensors (quantize_gemm.csv). Software on the CPU: emulated. */
#ifndef HL_BENCH_QUANTIZE_GEMM_H
#define HL_BENCH_QUANTIZE_GEMM_H

#include <stddef.h>

#include "core/models/weight_file.h"
#include "cli/csv.h"

/* The rows of model `model` into rows: the first x_rows_max rows of each X
 * (every row shapes X's scales); returns the layers studied (0: no layer's
 * input and weight are both in the files). */
int quantize_gemm_rows(const char *model, const hl_weight_file *weights, const hl_weight_file *activations,
                       size_t x_rows_max, hl_csv_rows *rows);

#endif
