/* dtype.h — halflab's one list of element types: what a tensor holds, what
 * a GEMM multiplies and accumulates, what the streaming kernels move and
 * what the numerics probes describe, with one table of their names and
 * sizes.
 *
 * Each type has two names, both in this table: the short one tensors,
 * GEMM CSV columns, op traces and messages use ("f16"), and the format name
 * of the numerics and bandwidth CSVs and format tables ("fp16"). */
#ifndef HL_DTYPE_H
#define HL_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  /* A tensor's element types. Their numbers are stored in checkpoint files;
   * float types first, widest first. i8 is a storage type (int8 weights),
   * i32 holds indices (targets, token ids). */
  HL_F64 = 0,
  HL_F32,
  HL_F16,
  HL_BF16,
  HL_I32,
  HL_I8,
  HL_TENSOR_DTYPES,
  /* Formats only products, quantizers and probes use: tf32 (fp32's range,
   * 10 fraction bits, in an fp32 container), OCP fp8, OCP MX's fp6 and fp4
   * elements and its E8M0 block scale (unsigned powers of two). */
  HL_TF32 = HL_TENSOR_DTYPES,
  HL_E4M3,
  HL_E5M2,
  HL_E2M3,
  HL_E3M2,
  HL_E2M1,
  HL_E8M0,
  HL_DTYPES,
  HL_DTYPE_NONE = HL_DTYPES /* no type: no autocast region, no data input */
} hl_dtype;

typedef struct {
  const char *name;        /* "f16" */
  const char *format_name; /* "fp16" */
  size_t size;             /* bytes of one stored element (fp6 and fp4 codes: one byte each, unpacked) */
  bool is_float;
} hl_dtype_info;

static inline const hl_dtype_info *hl_dtype_info_of(hl_dtype t) {
  /* in the enum's order (positional: nvcc's C++ has no array designators) */
  static const hl_dtype_info table[HL_DTYPES] = {
      {"f64", "fp64", 8, true},   {"f32", "fp32", 4, true}, {"f16", "fp16", 2, true},
      {"bf16", "bf16", 2, true},  {"i32", "int32", 4, false}, {"i8", "int8", 1, false},
      {"tf32", "tf32", 4, true},  {"e4m3", "e4m3", 1, true}, {"e5m2", "e5m2", 1, true},
      {"e2m3", "e2m3", 1, true},  {"e3m2", "e3m2", 1, true}, {"e2m1", "e2m1", 1, true},
      {"e8m0", "e8m0", 1, true},
  };
  return (unsigned)t < HL_DTYPES ? &table[t] : NULL;
}

/* "f16"; "?" for no type */
static inline const char *hl_dtype_name(hl_dtype t) {
  const hl_dtype_info *i = hl_dtype_info_of(t);
  return i ? i->name : "?";
}

/* "fp16"; "?" for no type */
static inline const char *hl_dtype_format_name(hl_dtype t) {
  const hl_dtype_info *i = hl_dtype_info_of(t);
  return i ? i->format_name : "?";
}

/* bytes per element; 0 for no type */
static inline size_t hl_dtype_size(hl_dtype t) {
  const hl_dtype_info *i = hl_dtype_info_of(t);
  return i ? i->size : 0;
}

static inline bool hl_dtype_is_float(hl_dtype t) {
  const hl_dtype_info *i = hl_dtype_info_of(t);
  return i && i->is_float;
}

/* Ordinary type promotion of two float types, as PyTorch's: the same type
 * stays, f64 wins, and anything else meets in f32 (f32 with a narrower
 * type, or f16 with bf16). */
static inline hl_dtype hl_promote(hl_dtype a, hl_dtype b) {
  if (a == b) return a;
  if (a == HL_F64 || b == HL_F64) return HL_F64;
  return HL_F32;
}

#ifdef __cplusplus
}
#endif

#endif
