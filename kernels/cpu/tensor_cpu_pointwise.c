/* tensor_cpu_pointwise.c — element-wise kernels on the CPU: binary ops
 * with broadcasting, unary ops, fused activation backward, causal mask.
 *
 * Each (dtype, op) pair gets its own loop (a switch outside the loop, the
 * tensor_math.h function with a constant op inside), so nothing is
 * dispatched per element and the f32 loops vectorise. fp16 and bf16 rows
 * go through the f32 loops a block at a time: widened (the CPU's conversion
 * instructions where allowed: half_arrays.h's operand widening), computed,
 * rounded once on the way back — the same f32 arithmetic and the same
 * single rounding as an element-by-element loop, bit for bit, but
 * vectorised (the per-element conversions kept the half loops scalar: fp16
 * GELU and its gradient took a third of an amp-fp16 training step). */
#include "kernels/cpu/half_arrays.h"
#include "kernels/cpu/tensor_cpu.h"
#include "kernels/tensor_index.h"

/* ------------------------------------------------- fp16 / bf16 blocks -- */

enum { HALF_BLOCK = 512 }; /* f32 elements per block: three blocks stay in L1 */

/* -------------------------------------------------------------- binary -- */

/* One row of the innermost dim. a and b strides are 0 (broadcast) or 1 in
 * the loops that matter; anything else takes the generic loop. */
#define BINARY_ROW(SUF, T, CT, CS)                                                                   \
  HL_VECTOR_CLONES static void binary_row_##SUF(hl_binary_op op, T *o, const T *a, int64_t sa, const T *b, \
                                                int64_t sb, int64_t n) {                             \
    switch (op) {                                                                                    \
      BINARY_CASES(SUF, CT, CS, HL_BIN_ADD)                                                          \
      BINARY_CASES(SUF, CT, CS, HL_BIN_SUB)                                                          \
      BINARY_CASES(SUF, CT, CS, HL_BIN_MUL)                                                          \
      BINARY_CASES(SUF, CT, CS, HL_BIN_DIV)                                                          \
      default: break;                                                                                \
    }                                                                                                \
  }

#define BINARY_LOOP(SUF, CT, CS, OP, IA, IB)                                                      \
  for (int64_t i = 0; i < n; i++)                                                                 \
    o[i] = HL_ST_##SUF(hl_binary_##CS(OP, (CT)HL_LD_##SUF(a[IA]), (CT)HL_LD_##SUF(b[IB])));

#define BINARY_CASES(SUF, CT, CS, OP)                                   \
  case OP:                                                              \
    if (sa == 1 && sb == 1) {                                           \
      BINARY_LOOP(SUF, CT, CS, OP, i, i)                                \
    } else if (sa == 1 && sb == 0) {                                    \
      BINARY_LOOP(SUF, CT, CS, OP, i, 0)                                \
    } else if (sa == 0 && sb == 1) {                                    \
      BINARY_LOOP(SUF, CT, CS, OP, 0, i)                                \
    } else {                                                            \
      BINARY_LOOP(SUF, CT, CS, OP, i * sa, i * sb)                      \
    }                                                                   \
    break;

HL_FOR_FLOAT_TYPES(BINARY_ROW)

/* `len` half elements from src, stride `stride` (0: one, broadcast; 1:
 * contiguous), widened into f. A strided operand (a transposed gradient
 * added into its slice) is gathered as 16-bit words first, so that the
 * widening still runs on the conversion instructions. */
static void widen_block(hl_dtype t, const uint16_t *src, int64_t stride, float *f, int64_t len) {
  if (stride == 1) {
    hl_cpu_widen_operand(t, src, f, (size_t)len);
    return;
  }
  uint16_t gathered[HALF_BLOCK];
  for (int64_t i = 0; i < len; i++) gathered[i] = src[i * stride];
  hl_cpu_widen_operand(t, gathered, f, (size_t)len);
}

/* A half row through the f32 loop block by block (o contiguous). */
static void binary_row_half(hl_binary_op op, hl_dtype t, uint16_t *o, const uint16_t *a, int64_t sa,
                            const uint16_t *b, int64_t sb, int64_t n) {
  float fa[HALF_BLOCK], fb[HALF_BLOCK], fo[HALF_BLOCK];
  if (!sa) hl_cpu_widen_operand(t, a, fa, 1);
  if (!sb) hl_cpu_widen_operand(t, b, fb, 1);
  for (int64_t lo = 0; lo < n; lo += HALF_BLOCK) {
    const int64_t len = hl_min64(HALF_BLOCK, n - lo);
    if (sa) widen_block(t, a + lo * sa, sa, fa, len);
    if (sb) widen_block(t, b + lo * sb, sb, fb, len);
    binary_row_F32(op, fo, fa, sa ? 1 : 0, fb, sb ? 1 : 0, len);
    hl_cpu_narrow(t, fo, o + lo, (size_t)len);
  }
}

static void binary_row(hl_binary_op op, hl_dtype t, void *o, const void *a, int64_t sa, const void *b, int64_t sb,
                       int64_t n) {
  if ((t == HL_F16 || t == HL_BF16) && n > 1) {
    binary_row_half(op, t, o, a, sa, b, sb, n);
    return;
  }
  switch (t) {
    case HL_F64: binary_row_F64(op, o, a, sa, b, sb, n); break;
    case HL_F32: binary_row_F32(op, o, a, sa, b, sb, n); break;
    case HL_F16: binary_row_F16(op, o, a, sa, b, sb, n); break;
    case HL_BF16: binary_row_BF16(op, o, a, sa, b, sb, n); break;
    default: break;
  }
}

void hl_cpu_binary(hl_binary_op op, const hl_kview *out, const hl_kview *a, const hl_kview *b,
                   const int64_t size_in[HL_MAX_DIMS]) {
  int64_t size[HL_MAX_DIMS], os[HL_MAX_DIMS], as[HL_MAX_DIMS], bs[HL_MAX_DIMS], total = 1;
  for (int d = 0; d < HL_MAX_DIMS; d++) {
    size[d] = size_in[d];
    os[d] = out->stride[d];
    as[d] = a->stride[d];
    bs[d] = b->stride[d];
    total *= size[d];
  }
  if (total == 0) return;
  int64_t *strides[3] = {os, as, bs};
  hl_coalesce(size, strides, 3);
  const hl_dtype t = out->dtype;
  const int64_t es = (int64_t)hl_dtype_size(t);
  const int64_t rows = size[0] * size[1] * size[2], n = size[3];
  char *o = out->data;
  const char *pa = a->data, *pb = b->data;
  if (rows == 1) {
    int64_t chunks = (n + HL_CHUNK - 1) / HL_CHUNK;
#pragma omp parallel for schedule(static) if (n >= HL_PAR_MIN)
    for (int64_t c = 0; c < chunks; c++) {
      int64_t lo = c * HL_CHUNK, len = hl_min64(HL_CHUNK, n - lo);
      binary_row(op, t, o + lo * os[3] * es, pa + lo * as[3] * es, as[3], pb + lo * bs[3] * es, bs[3], len);
    }
    return;
  }
  /* out is written contiguously by the core, but keep its strides general */
#pragma omp parallel for schedule(static) if (total >= HL_PAR_MIN)
  for (int64_t r = 0; r < rows; r++) {
    int64_t i0 = r / (size[1] * size[2]), i1 = r / size[2] % size[1], i2 = r % size[2];
    int64_t oo = i0 * os[0] + i1 * os[1] + i2 * os[2];
    int64_t ao = i0 * as[0] + i1 * as[1] + i2 * as[2];
    int64_t bo = i0 * bs[0] + i1 * bs[1] + i2 * bs[2];
    if (os[3] == 1) {
      binary_row(op, t, o + oo * es, pa + ao * es, as[3], pb + bo * es, bs[3], n);
    } else {
      /* strided output (rare): element by element through a one-element row */
      for (int64_t i = 0; i < n; i++)
        binary_row(op, t, o + (oo + i * os[3]) * es, pa + (ao + i * as[3]) * es, 0, pb + (bo + i * bs[3]) * es, 0, 1);
    }
  }
}

/* --------------------------------------------------------------- unary -- */

#define UNARY_CASE(SUF, CT, CS, OP) \
  case OP:                          \
    for (int64_t i = 0; i < n; i++) o[i] = HL_ST_##SUF(hl_unary_##CS(OP, (CT)HL_LD_##SUF(x[i]), p)); \
    break;

#define UNARY_CHUNK(SUF, T, CT, CS)                                                                          \
  HL_VECTOR_CLONES static void unary_chunk_##SUF(hl_unary_op op, T *o, const T *x, int64_t n, CT p) {        \
    switch (op) {                                                                                            \
      UNARY_CASE(SUF, CT, CS, HL_UN_NEG)                                                                     \
      UNARY_CASE(SUF, CT, CS, HL_UN_EXP)                                                                     \
      UNARY_CASE(SUF, CT, CS, HL_UN_LOG)                                                                     \
      UNARY_CASE(SUF, CT, CS, HL_UN_SQRT)                                                                    \
      UNARY_CASE(SUF, CT, CS, HL_UN_RELU)                                                                    \
      UNARY_CASE(SUF, CT, CS, HL_UN_GELU)                                                                    \
      UNARY_CASE(SUF, CT, CS, HL_UN_GELU_GRAD)                                                               \
      UNARY_CASE(SUF, CT, CS, HL_UN_GELU_GRAD2)                                                              \
      UNARY_CASE(SUF, CT, CS, HL_UN_ADD_SCALAR)                                                              \
      UNARY_CASE(SUF, CT, CS, HL_UN_MUL_SCALAR)                                                              \
      UNARY_CASE(SUF, CT, CS, HL_UN_DIV_SCALAR)                                                              \
      UNARY_CASE(SUF, CT, CS, HL_UN_RDIV_SCALAR)                                                             \
      UNARY_CASE(SUF, CT, CS, HL_UN_RSUB_SCALAR)                                                             \
      UNARY_CASE(SUF, CT, CS, HL_UN_STEP)                                                                    \
      case HL_UN_POW:                                                                                        \
        /* the exponent is loop-invariant: pick the special case once */                                    \
        if (p == (CT)2) {                                                                                    \
          for (int64_t i = 0; i < n; i++) {                                                                  \
            CT v = (CT)HL_LD_##SUF(x[i]);                                                                    \
            o[i] = HL_ST_##SUF(v * v);                                                                       \
          }                                                                                                  \
        } else {                                                                                             \
          for (int64_t i = 0; i < n; i++) o[i] = HL_ST_##SUF(hl_pow_##CS((CT)HL_LD_##SUF(x[i]), p));         \
        }                                                                                                    \
        break;                                                                                               \
      default: break;                                                                                        \
    }                                                                                                        \
  }

/* f64 and f32 (fp16 / bf16 go through the f32 loop in blocks, below) */
UNARY_CHUNK(F64, double, double, f64)
UNARY_CHUNK(F32, float, float, f32)

static void unary_chunk_half(hl_unary_op op, hl_dtype t, uint16_t *o, const uint16_t *x, int64_t n, float p) {
  float f[HALF_BLOCK];
  for (int64_t lo = 0; lo < n; lo += HALF_BLOCK) {
    const int64_t len = hl_min64(HALF_BLOCK, n - lo);
    hl_cpu_widen_operand(t, x + lo, f, (size_t)len);
    unary_chunk_F32(op, f, f, len, p);
    hl_cpu_narrow(t, f, o + lo, (size_t)len);
  }
}

void hl_cpu_unary(hl_unary_op op, hl_dtype t, int64_t n, void *out, const void *x, double p) {
  const int64_t es = (int64_t)hl_dtype_size(t);
  const int64_t chunks = (n + HL_CHUNK - 1) / HL_CHUNK;
#pragma omp parallel for schedule(static) if (n >= HL_PAR_MIN)
  for (int64_t c = 0; c < chunks; c++) {
    int64_t lo = c * HL_CHUNK, len = hl_min64(HL_CHUNK, n - lo);
    void *o = (char *)out + lo * es;
    const void *xi = (const char *)x + lo * es;
    switch (t) {
      case HL_F64: unary_chunk_F64(op, o, xi, len, p); break;
      case HL_F32: unary_chunk_F32(op, o, xi, len, (float)p); break;
      case HL_F16:
      case HL_BF16: unary_chunk_half(op, t, o, xi, len, (float)p); break;
      default: break;
    }
  }
}

/* ---------------------------------------------------------- unary_grad -- */

#define UNARY_GRAD_CHUNK(SUF, T, CT, CS)                                                                      \
  HL_VECTOR_CLONES static void unary_grad_chunk_##SUF(hl_unary_grad_op op, T *dx, const T *dy, const T *x,    \
                                                      int64_t n) {                                            \
    if (op == HL_GRAD_RELU) {                                                                                 \
      for (int64_t i = 0; i < n; i++)                                                                         \
        dx[i] = HL_ST_##SUF(hl_unary_grad_##CS(HL_GRAD_RELU, (CT)HL_LD_##SUF(dy[i]), (CT)HL_LD_##SUF(x[i]))); \
    } else {                                                                                                  \
      for (int64_t i = 0; i < n; i++)                                                                         \
        dx[i] = HL_ST_##SUF(hl_unary_grad_##CS(HL_GRAD_GELU, (CT)HL_LD_##SUF(dy[i]), (CT)HL_LD_##SUF(x[i]))); \
    }                                                                                                         \
  }

UNARY_GRAD_CHUNK(F64, double, double, f64)
UNARY_GRAD_CHUNK(F32, float, float, f32)

static void unary_grad_chunk_half(hl_unary_grad_op op, hl_dtype t, uint16_t *dx, const uint16_t *dy, const uint16_t *x,
                                  int64_t n) {
  float fdy[HALF_BLOCK], fx[HALF_BLOCK], fdx[HALF_BLOCK];
  for (int64_t lo = 0; lo < n; lo += HALF_BLOCK) {
    const int64_t len = hl_min64(HALF_BLOCK, n - lo);
    hl_cpu_widen_operand(t, dy + lo, fdy, (size_t)len);
    hl_cpu_widen_operand(t, x + lo, fx, (size_t)len);
    unary_grad_chunk_F32(op, fdx, fdy, fx, len);
    hl_cpu_narrow(t, fdx, dx + lo, (size_t)len);
  }
}

void hl_cpu_unary_grad(hl_unary_grad_op op, hl_dtype t, int64_t n, void *dx, const void *dy, const void *x) {
  const int64_t es = (int64_t)hl_dtype_size(t);
  const int64_t chunks = (n + HL_CHUNK - 1) / HL_CHUNK;
#pragma omp parallel for schedule(static) if (n >= HL_PAR_MIN)
  for (int64_t c = 0; c < chunks; c++) {
    int64_t lo = c * HL_CHUNK, len = hl_min64(HL_CHUNK, n - lo);
    void *o = (char *)dx + lo * es;
    const void *g = (const char *)dy + lo * es, *xi = (const char *)x + lo * es;
    switch (t) {
      case HL_F64: unary_grad_chunk_F64(op, o, g, xi, len); break;
      case HL_F32: unary_grad_chunk_F32(op, o, g, xi, len); break;
      case HL_F16:
      case HL_BF16: unary_grad_chunk_half(op, t, o, g, xi, len); break;
      default: break;
    }
  }
}

/* --------------------------------------------------------- causal mask -- */

/* One row: columns [0, keep) copied, the rest set to fill. The element's
 * bytes move as an unsigned integer of its size, so one loop serves every
 * dtype of that size (the mask neither computes nor rounds) and the fill
 * is a vector store, not a memcpy call per element. */
#define MASK_ROW(BITS)                                                                                   \
  static void mask_row_u##BITS(uint##BITS##_t *o, const uint##BITS##_t *x, int64_t keep, int64_t cols,  \
                               uint##BITS##_t fill) {                                                    \
    if (o != x) memcpy(o, x, (size_t)keep * sizeof *o);                                                  \
    for (int64_t c = keep; c < cols; c++) o[c] = fill;                                                   \
  }
MASK_ROW(8)
MASK_ROW(16)
MASK_ROW(32)
MASK_ROW(64)

void hl_cpu_causal_mask(hl_dtype t, void *out, const void *x, int64_t batch, int64_t rows, int64_t cols,
                        double value) {
  const size_t es = hl_dtype_size(t);
  /* the masked value in the storage type, as its bytes */
  union {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
  } fill = {0};
  hl_cpu_fill(&fill, t, 1, value);
  const int64_t shift = cols - rows;
#pragma omp parallel for schedule(static) if (batch * rows * cols >= HL_PAR_MIN)
  for (int64_t br = 0; br < batch * rows; br++) {
    const int64_t r = br % rows, at = br * cols;
    int64_t keep = r + shift + 1; /* columns 0 .. r + shift stay */
    keep = keep < 0 ? 0 : (keep > cols ? cols : keep);
    switch (es) {
      case 1: mask_row_u8((uint8_t *)out + at, (const uint8_t *)x + at, keep, cols, fill.u8); break;
      case 2: mask_row_u16((uint16_t *)out + at, (const uint16_t *)x + at, keep, cols, fill.u16); break;
      case 4: mask_row_u32((uint32_t *)out + at, (const uint32_t *)x + at, keep, cols, fill.u32); break;
      default: mask_row_u64((uint64_t *)out + at, (const uint64_t *)x + at, keep, cols, fill.u64); break;
    }
  }
}
