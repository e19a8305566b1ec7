/* weight_file.h — a weight file (nn.h's format) read whole, without a
 * model: its named tensors as f32 arrays, for a program that studies the
 * values (halflab-bench quantize-error reads the weights, gradients and
 * activations halflab-train writes). */
#ifndef HL_WEIGHT_FILE_H
#define HL_WEIGHT_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/tensor_kernels.h" /* HL_MAX_DIMS */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  char *name;
  int ndim;
  int64_t dims[HL_MAX_DIMS];
  int64_t numel;
  float *values; /* numel, row-major */
} hl_weight_entry;

typedef struct {
  hl_weight_entry *items;
  int n;
} hl_weight_file;

/* Reads every entry of PATH; false with hl_error() set (a missing file, a
 * wrong magic, a truncated or corrupt one, a checksum mismatch, bytes after
 * the checksum), and f left empty. Values are kept as written, inf and NaN
 * included. */
bool hl_weight_file_read(const char *path, hl_weight_file *f);
void hl_weight_file_free(hl_weight_file *f);

#ifdef __cplusplus
}
#endif

#endif /* HL_WEIGHT_FILE_H */
