/* stream_cpu.c — the bandwidth kernels of kernels/stream.h on the CPU.
 *
 * Every loop, init included, hands out the arrays in chunks of CHUNK
 * elements under one static OpenMP schedule, so a thread touches the same
 * pages when it first writes them (first touch places them) and in every
 * kernel.
 *
 * The arithmetic is kernels/stream_ops.h, the bodies the CUDA kernels run.
 * fp16/bf16 elements are widened eight at a time (AVX2 + F16C, see
 * kernels/cpu/half_simd.h), combined in fp32 by those bodies and rounded back
 * in the same pass. Widening a whole chunk first and rounding it afterwards
 * was measured slower (the memory streams idle while a chunk is computed);
 * converting element by element with the portable code runs at a few GB/s,
 * compute-bound, far from the memory system this benchmark measures. CPUs
 * without AVX2/F16C take that portable loop. */
#include <omp.h>
#include <string.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/half_simd.h"
#include "kernels/stream.h"
#include "kernels/stream_ops.h"

/* elements per scheduling unit; also the length of dot's fp32 partial sums */
enum { CHUNK = 4096 };

static size_t chunks_of(size_t n) { return (n + CHUNK - 1) / CHUNK; }
static size_t chunk_end(size_t k, size_t n) { return n - k * CHUNK < CHUNK ? n : k * CHUNK + CHUNK; }

/* ------------------------------------------------------------- fp32 -- */

static void scale_f32(float *restrict b, const float *restrict c, float s, size_t lo, size_t hi) {
#pragma omp simd
  for (size_t i = lo; i < hi; i++) b[i] = hl_stream_scale_op(s, c[i]);
}
static void add_f32(const float *restrict a, const float *restrict b, float *restrict c, size_t lo, size_t hi) {
#pragma omp simd
  for (size_t i = lo; i < hi; i++) c[i] = hl_stream_add_op(a[i], b[i]);
}
static void triad_f32(float *restrict a, const float *restrict b, const float *restrict c, float s, size_t lo,
                      size_t hi) {
#pragma omp simd
  for (size_t i = lo; i < hi; i++) a[i] = hl_stream_triad_op(b[i], s, c[i]);
}
static float dot_f32(const float *restrict a, const float *restrict b, size_t lo, size_t hi) {
  float part = 0;
#pragma omp simd reduction(+ : part)
  for (size_t i = lo; i < hi; i++) part += hl_stream_dot_term(a[i], b[i]);
  return part;
}

/* ------------------------------------------------------ fp16 / bf16 -- */
/* LOAD1/STORE1: one element (amp/half.h); LOAD8/STORE8: eight (half_simd.h) */

#define LOAD1_F16(x) hl_f16_to_f32(x)
#define STORE1_F16(p, v) (*(p) = hl_f32_to_f16(v))
#define LOAD1_BF16(x) hl_bf16_to_f32(x)
#define STORE1_BF16(p, v) (*(p) = hl_f32_to_bf16(v))

#define HALF_PORTABLE(TY, LOAD1, STORE1)                                                                  \
  static void scale_##TY(uint16_t *b, const uint16_t *c, float s, size_t lo, size_t hi) {                \
    for (size_t i = lo; i < hi; i++) STORE1(&b[i], hl_stream_scale_op(s, LOAD1(c[i])));                  \
  }                                                                                                      \
  static void add_##TY(const uint16_t *a, const uint16_t *b, uint16_t *c, size_t lo, size_t hi) {        \
    for (size_t i = lo; i < hi; i++) STORE1(&c[i], hl_stream_add_op(LOAD1(a[i]), LOAD1(b[i])));          \
  }                                                                                                      \
  static void triad_##TY(uint16_t *a, const uint16_t *b, const uint16_t *c, float s, size_t lo,          \
                         size_t hi) {                                                                    \
    for (size_t i = lo; i < hi; i++) STORE1(&a[i], hl_stream_triad_op(LOAD1(b[i]), s, LOAD1(c[i])));     \
  }                                                                                                      \
  static float dot_##TY(const uint16_t *a, const uint16_t *b, size_t lo, size_t hi) {                    \
    float part = 0;                                                                                      \
    for (size_t i = lo; i < hi; i++) part += hl_stream_dot_term(LOAD1(a[i]), LOAD1(b[i]));               \
    return part;                                                                                         \
  }

HALF_PORTABLE(f16, LOAD1_F16, STORE1_F16)
HALF_PORTABLE(bf16, LOAD1_BF16, STORE1_BF16)

#if HL_HAVE_HALF_SIMD
/* Eight lanes through the shared scalar bodies: the compiler keeps x, y, o in
 * registers and emits one vector operation per body operation. */
#define HALF_SIMD(TY, LOAD8, STORE8, LOAD1, STORE1)                                                       \
  HL_SIMD_TARGET static void scale_##TY##_simd(uint16_t *b, const uint16_t *c, float s, size_t lo,       \
                                               size_t hi) {                                              \
    size_t i = lo;                                                                                       \
    for (; i + 8 <= hi; i += 8) {                                                                        \
      float x[8], o[8];                                                                                  \
      _mm256_storeu_ps(x, LOAD8(c + i));                                                                 \
      for (int j = 0; j < 8; j++) o[j] = hl_stream_scale_op(s, x[j]);                                    \
      STORE8(b + i, _mm256_loadu_ps(o));                                                                 \
    }                                                                                                    \
    for (; i < hi; i++) STORE1(&b[i], hl_stream_scale_op(s, LOAD1(c[i])));                               \
  }                                                                                                      \
  HL_SIMD_TARGET static void add_##TY##_simd(const uint16_t *a, const uint16_t *b, uint16_t *c, size_t lo, \
                                             size_t hi) {                                                \
    size_t i = lo;                                                                                       \
    for (; i + 8 <= hi; i += 8) {                                                                        \
      float x[8], y[8], o[8];                                                                            \
      _mm256_storeu_ps(x, LOAD8(a + i));                                                                 \
      _mm256_storeu_ps(y, LOAD8(b + i));                                                                 \
      for (int j = 0; j < 8; j++) o[j] = hl_stream_add_op(x[j], y[j]);                                   \
      STORE8(c + i, _mm256_loadu_ps(o));                                                                 \
    }                                                                                                    \
    for (; i < hi; i++) STORE1(&c[i], hl_stream_add_op(LOAD1(a[i]), LOAD1(b[i])));                       \
  }                                                                                                      \
  HL_SIMD_TARGET static void triad_##TY##_simd(uint16_t *a, const uint16_t *b, const uint16_t *c, float s, \
                                               size_t lo, size_t hi) {                                   \
    size_t i = lo;                                                                                       \
    for (; i + 8 <= hi; i += 8) {                                                                        \
      float x[8], y[8], o[8];                                                                            \
      _mm256_storeu_ps(x, LOAD8(b + i));                                                                 \
      _mm256_storeu_ps(y, LOAD8(c + i));                                                                 \
      for (int j = 0; j < 8; j++) o[j] = hl_stream_triad_op(x[j], s, y[j]);                              \
      STORE8(a + i, _mm256_loadu_ps(o));                                                                 \
    }                                                                                                    \
    for (; i < hi; i++) STORE1(&a[i], hl_stream_triad_op(LOAD1(b[i]), s, LOAD1(c[i])));                  \
  }                                                                                                      \
  HL_SIMD_TARGET static float dot_##TY##_simd(const uint16_t *a, const uint16_t *b, size_t lo, size_t hi) { \
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                            \
    size_t i = lo;                                                                                       \
    for (; i + 8 <= hi; i += 8) {                                                                        \
      float x[8], y[8];                                                                                  \
      _mm256_storeu_ps(x, LOAD8(a + i));                                                                 \
      _mm256_storeu_ps(y, LOAD8(b + i));                                                                 \
      for (int j = 0; j < 8; j++) lane[j] += hl_stream_dot_term(x[j], y[j]);                             \
    }                                                                                                    \
    float part = 0;                                                                                      \
    for (int j = 0; j < 8; j++) part += lane[j];                                                         \
    for (; i < hi; i++) part += hl_stream_dot_term(LOAD1(a[i]), LOAD1(b[i]));                            \
    return part;                                                                                         \
  }

HALF_SIMD(f16, hl_load8_f16, hl_store8_f16, LOAD1_F16, STORE1_F16)
HALF_SIMD(bf16, hl_load8_bf16, hl_store8_bf16, LOAD1_BF16, STORE1_BF16)
/* the vector loop where the CPU has it, else the portable one */
#define PICK(name, TY) (simd ? name##_##TY##_simd : name##_##TY)
#else
#define PICK(name, TY) (name##_##TY)
#endif

/* --------------------------------------------------------- drivers -- */

static void cpu_init(hl_stream_type t, void *a, void *b, void *c, size_t n, float va, float vb, float vc) {
  float v[3] = {va, vb, vc};
  uint32_t word[3];
  for (int j = 0; j < 3; j++) {
    if (t == HL_STREAM_F32) memcpy(&word[j], &v[j], 4);
    else word[j] = t == HL_STREAM_F16 ? hl_f32_to_f16(v[j]) : hl_f32_to_bf16(v[j]);
  }
  void *arr[3] = {a, b, c};
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) {
    const size_t hi = chunk_end(k, n);
    for (int j = 0; j < 3; j++) {
      if (t == HL_STREAM_F32)
        for (size_t i = k * CHUNK; i < hi; i++) ((uint32_t *)arr[j])[i] = word[j];
      else
        for (size_t i = k * CHUNK; i < hi; i++) ((uint16_t *)arr[j])[i] = (uint16_t)word[j];
    }
  }
}

/* a copy moves bits: no conversion for any type */
static void cpu_copy(hl_stream_type t, const void *a, void *c, size_t n) {
  const size_t es = hl_stream_type_size(t);
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++)
    memcpy((char *)c + k * CHUNK * es, (const char *)a + k * CHUNK * es, (chunk_end(k, n) - k * CHUNK) * es);
}

static void cpu_scale(hl_stream_type t, void *b, const void *c, float s, size_t n) {
  const int simd = hl_simd_available();
  (void)simd;
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) {
    const size_t lo = k * CHUNK, hi = chunk_end(k, n);
    if (t == HL_STREAM_F32) scale_f32(b, c, s, lo, hi);
    else if (t == HL_STREAM_F16) PICK(scale, f16)(b, c, s, lo, hi);
    else PICK(scale, bf16)(b, c, s, lo, hi);
  }
}

static void cpu_add(hl_stream_type t, const void *a, const void *b, void *c, size_t n) {
  const int simd = hl_simd_available();
  (void)simd;
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) {
    const size_t lo = k * CHUNK, hi = chunk_end(k, n);
    if (t == HL_STREAM_F32) add_f32(a, b, c, lo, hi);
    else if (t == HL_STREAM_F16) PICK(add, f16)(a, b, c, lo, hi);
    else PICK(add, bf16)(a, b, c, lo, hi);
  }
}

static void cpu_triad(hl_stream_type t, void *a, const void *b, const void *c, float s, size_t n) {
  const int simd = hl_simd_available();
  (void)simd;
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) {
    const size_t lo = k * CHUNK, hi = chunk_end(k, n);
    if (t == HL_STREAM_F32) triad_f32(a, b, c, s, lo, hi);
    else if (t == HL_STREAM_F16) PICK(triad, f16)(a, b, c, s, lo, hi);
    else PICK(triad, bf16)(a, b, c, s, lo, hi);
  }
}

/* fp32 partial sums of one chunk each (so the fp32 rounding error stays that
 * of a CHUNK-term sum at any n), chunks added in fp64 */
static double cpu_dot(hl_stream_type t, const void *a, const void *b, size_t n) {
  const int simd = hl_simd_available();
  (void)simd;
  double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
  for (size_t k = 0; k < chunks_of(n); k++) {
    const size_t lo = k * CHUNK, hi = chunk_end(k, n);
    if (t == HL_STREAM_F32) sum += dot_f32(a, b, lo, hi);
    else if (t == HL_STREAM_F16) sum += PICK(dot, f16)(a, b, lo, hi);
    else sum += PICK(dot, bf16)(a, b, lo, hi);
  }
  return sum;
}

/* memcpy of each thread's share: the copy rate all cores together reach */
static void cpu_copy_ref(void *dst, const void *src, size_t bytes) {
#pragma omp parallel
  {
    const size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
    const size_t lines = (bytes + 63) / 64, per = (lines + nt - 1) / nt; /* whole cache lines */
    size_t lo = id * per * 64, hi = lo + per * 64;
    if (hi > bytes) hi = bytes;
    if (lo < hi) memcpy((char *)dst + lo, (const char *)src + lo, hi - lo);
  }
}

const struct hl_stream_kernels hl_cpu_stream_kernels = {
    .init = cpu_init,
    .copy = cpu_copy,
    .scale = cpu_scale,
    .add = cpu_add,
    .triad = cpu_triad,
    .dot = cpu_dot,
    .copy_ref = cpu_copy_ref,
    .host_alloc_pinned = NULL,
    .host_free_pinned = NULL,
};
