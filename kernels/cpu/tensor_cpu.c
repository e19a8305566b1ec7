/* tensor_cpu.c — the CPU table of tensor kernels, and its data-movement
 * entries: fill, strided copy with dtype conversion, Philox random fill. */
#include <math.h>

#include "formats/philox.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/half_arrays.h"
#include "kernels/cpu/tensor_cpu.h"
#include "kernels/tensor_index.h"

/* ---------------------------------------------------------------- fill -- */

void hl_cpu_fill(void *dst, hl_dtype t, int64_t n, double value) {
  switch (t) {
    case HL_F64: {
      double *d = dst;
      for (int64_t i = 0; i < n; i++) d[i] = value;
      break;
    }
    case HL_F32: {
      float *d = dst, v = (float)value;
      for (int64_t i = 0; i < n; i++) d[i] = v;
      break;
    }
    case HL_F16:
    case HL_BF16: {
      uint16_t *d = dst, v = t == HL_F16 ? hl_f64_to_f16(value) : hl_f64_to_bf16(value);
      for (int64_t i = 0; i < n; i++) d[i] = v;
      break;
    }
    case HL_I32: {
      int32_t *d = dst, v = hl_f64_to_i32_sat(value);
      for (int64_t i = 0; i < n; i++) d[i] = v;
      break;
    }
    case HL_I8: memset(dst, (unsigned char)hl_f64_to_i8_sat(value), (size_t)n); break;
    default: break;
  }
}

/* ---------------------------------------------------------------- copy -- */

/* Rows of the innermost dim; the common pairs get their own loops. */
HL_VECTOR_CLONES static void copy_row(void *dst, hl_dtype dt, int64_t ds, const void *src, hl_dtype st, int64_t ss,
                                      int64_t n) {
  if (dt == st && ds == 1 && ss == 1) {
    memcpy(dst, src, (size_t)n * hl_dtype_size(dt));
  } else if (ds == 1 && ss == 1 && dt == HL_F32 && (st == HL_F16 || st == HL_BF16)) {
    /* contiguous conversions on the CPU's conversion path (half_arrays.h: bit for bit half.h's) */
    hl_cpu_widen(st, src, dst, (size_t)n);
  } else if (ds == 1 && ss == 1 && st == HL_F32 && (dt == HL_F16 || dt == HL_BF16)) {
    hl_cpu_narrow(dt, src, dst, (size_t)n);
  } else if (dt == HL_F32 && st == HL_F16) {
    float *d = dst;
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) d[i * ds] = hl_f16_to_f32(s[i * ss]);
  } else if (dt == HL_F32 && st == HL_BF16) {
    float *d = dst;
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) d[i * ds] = hl_bf16_to_f32(s[i * ss]);
  } else if (dt == HL_F16 && st == HL_F32) {
    uint16_t *d = dst;
    const float *s = src;
    for (int64_t i = 0; i < n; i++) d[i * ds] = hl_f32_to_f16(s[i * ss]);
  } else if (dt == HL_BF16 && st == HL_F32) {
    uint16_t *d = dst;
    const float *s = src;
    for (int64_t i = 0; i < n; i++) d[i * ds] = hl_f32_to_bf16(s[i * ss]);
  } else if (dt == st && hl_dtype_size(dt) == 4) {
    uint32_t *d = dst;
    const uint32_t *s = src;
    for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];
  } else if (dt == st && hl_dtype_size(dt) == 2) {
    uint16_t *d = dst;
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];
  } else if (dt == st && hl_dtype_size(dt) == 8) {
    uint64_t *d = dst;
    const uint64_t *s = src;
    for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];
  } else {
    for (int64_t i = 0; i < n; i++) hl_store_from_f64(dst, dt, i * ds, hl_load_as_f64(src, st, i * ss));
  }
}

void hl_cpu_copy(const hl_kview *dst, const hl_kview *src, const int64_t size_in[HL_MAX_DIMS]) {
  int64_t size[HL_MAX_DIMS], ds[HL_MAX_DIMS], ss[HL_MAX_DIMS];
  int64_t total = 1;
  for (int d = 0; d < HL_MAX_DIMS; d++) {
    size[d] = size_in[d];
    ds[d] = dst->stride[d];
    ss[d] = src->stride[d];
    total *= size[d];
  }
  if (total == 0) return;
  int64_t *strides[2] = {ds, ss};
  hl_coalesce(size, strides, 2);
  const size_t de = hl_dtype_size(dst->dtype), se = hl_dtype_size(src->dtype);
  const int64_t rows = size[0] * size[1] * size[2], n = size[3];
  if (rows == 1) {
    /* one long row: split it into chunks */
    int64_t chunks = (n + HL_CHUNK - 1) / HL_CHUNK;
#pragma omp parallel for schedule(static) if (n >= HL_PAR_MIN)
    for (int64_t c = 0; c < chunks; c++) {
      int64_t lo = c * HL_CHUNK, len = hl_min64(HL_CHUNK, n - lo);
      copy_row((char *)dst->data + lo * ds[3] * (int64_t)de, dst->dtype, ds[3],
               (const char *)src->data + lo * ss[3] * (int64_t)se, src->dtype, ss[3], len);
    }
    return;
  }
#pragma omp parallel for schedule(static) if (total >= HL_PAR_MIN)
  for (int64_t r = 0; r < rows; r++) {
    int64_t i0 = r / (size[1] * size[2]), i1 = r / size[2] % size[1], i2 = r % size[2];
    int64_t doff = i0 * ds[0] + i1 * ds[1] + i2 * ds[2], soff = i0 * ss[0] + i1 * ss[1] + i2 * ss[2];
    copy_row((char *)dst->data + doff * (int64_t)de, dst->dtype, ds[3], (const char *)src->data + soff * (int64_t)se,
             src->dtype, ss[3], n);
  }
}

/* -------------------------------------------------------------- random -- */

void hl_cpu_random(void *dst, hl_dtype t, int64_t n, hl_random_kind kind, double a, double b, uint64_t seed,
                   uint64_t stream) {
#pragma omp parallel for schedule(static) if (n >= 4096)
  for (int64_t i = 0; i < n; i++) {
    if (t == HL_F64) {
      double v = kind == HL_RANDOM_UNIFORM
                     ? a + (b - a) * (double)hl_u32_to_unit_float(hl_philox_u32(seed, stream, (uint64_t)i))
                     : a + b * hl_normal_from_words_f64(hl_philox_u32(seed, stream, 2 * (uint64_t)i),
                                                        hl_philox_u32(seed, stream, 2 * (uint64_t)i + 1));
      ((double *)dst)[i] = v;
      continue;
    }
    float fa = (float)a, fb = (float)b;
    float v = kind == HL_RANDOM_UNIFORM
                  ? fa + (fb - fa) * hl_u32_to_unit_float(hl_philox_u32(seed, stream, (uint64_t)i))
                  : fa + fb * hl_normal_from_words_f32(hl_philox_u32(seed, stream, 2 * (uint64_t)i),
                                                       hl_philox_u32(seed, stream, 2 * (uint64_t)i + 1));
    if (t == HL_F32) ((float *)dst)[i] = v;
    else if (t == HL_F16) ((uint16_t *)dst)[i] = hl_f32_to_f16(v);
    else ((uint16_t *)dst)[i] = hl_f32_to_bf16(v);
  }
}

/* --------------------------------------------------------------- table -- */

const struct hl_tensor_kernels hl_cpu_tensor_kernels = HL_TENSOR_KERNEL_TABLE(hl_cpu_);
