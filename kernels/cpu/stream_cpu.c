/* stream_cpu.c — the bandwidth kernels of kernels/stream.h on the CPU.
 *
 * Every loop, init included, hands out the arrays in chunks of CHUNK
 * elements under one static OpenMP schedule, so a thread touches the same
 * pages when it first writes them (first touch places them) and in every
 * kernel.
 *
 * The arithmetic is kernels/stream_ops.h, the bodies the CUDA kernels run.
 * Where the CPU has AVX2 and F16C, eight elements at a time are loaded
 * (fp16/bf16 widened: kernels/cpu/half_simd.h), combined in fp32 by those
 * bodies and stored back in the same pass; elsewhere a portable loop does the
 * same one element at a time. Measured on the development machine: widening a
 * whole chunk first and rounding it afterwards was slower (the memory streams
 * idle while a chunk is computed), and converting element by element with the
 * portable code ran at a few GB/s, compute-bound.
 *
 * Stores: once the arrays a kernel touches exceed the last-level cache, the
 * results are written with non-temporal (streaming) stores, as glibc's memcpy
 * does for large copies: a regular store first reads the line it writes (an
 * extra transfer the byte count does not include), so a triad with regular
 * stores moves 4 lines per 3 counted and cannot match a streaming memcpy. */
#include "kernels/cpu/stream_cpu.h"

#include <omp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/half_simd.h"
#include "kernels/stream.h"
#include "kernels/stream_ops.h"

/* elements per scheduling unit; also the length of dot's fp32 partial sums */
enum { CHUNK = 4096 };

static size_t chunks_of(size_t n) { return (n + CHUNK - 1) / CHUNK; }
static size_t chunk_end(size_t k, size_t n) { return n - k * CHUNK < CHUNK ? n : k * CHUNK + CHUNK; }

/* ------------------------------------------------------ store policy -- */

static hl_cpu_store_mode store_mode_ = HL_CPU_STORES_AUTO;

void hl_cpu_stream_set_stores(hl_cpu_store_mode mode) { store_mode_ = mode; }

size_t hl_cpu_stream_nt_threshold(void) {
  static size_t llc;
  if (!llc) {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    llc = l3 > 0 ? (size_t)l3 : l2 > 0 ? (size_t)l2 : (size_t)32 << 20;
  }
  return llc;
}

static int aligned(const void *p, uintptr_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

/* Stream the output of a kernel touching `arrays` arrays of n elements of size es? */
static int use_streaming(size_t n, size_t es, int arrays, const void *out) {
  /* the vector stores need 32 bytes (fp32) / 16 bytes (fp16, bf16) alignment; chunks keep it */
  if (!hl_simd_available() || !aligned(out, es == 4 ? 32 : 16)) return 0;
  if (store_mode_ == HL_CPU_STORES_REGULAR) return 0;
  if (store_mode_ == HL_CPU_STORES_STREAMING) return 1;
  return n * es * (size_t)arrays > hl_cpu_stream_nt_threshold();
}

/* -------------------------------------------------- portable loops -- */
/* LOAD1/STORE1: one element (formats/half.h) */

#define LOAD1_F32(x) (x)
#define STORE1_F32(p, v) (*(p) = (v))
#define LOAD1_F16(x) hl_f16_to_f32(x)
#define STORE1_F16(p, v) (*(p) = hl_f32_to_f16(v))
#define LOAD1_BF16(x) hl_bf16_to_f32(x)
#define STORE1_BF16(p, v) (*(p) = hl_f32_to_bf16(v))

#define PORTABLE(TY, T, LOAD1, STORE1)                                                                   \
  static void scale_##TY(T *restrict b, const T *restrict c, float s, size_t lo, size_t hi) {           \
    _Pragma("omp simd") for (size_t i = lo; i < hi; i++) STORE1(&b[i], hl_stream_scale_op(s, LOAD1(c[i]))); \
  }                                                                                                     \
  static void add_##TY(const T *restrict a, const T *restrict b, T *restrict c, size_t lo, size_t hi) { \
    _Pragma("omp simd") for (size_t i = lo; i < hi; i++)                                                \
        STORE1(&c[i], hl_stream_add_op(LOAD1(a[i]), LOAD1(b[i])));                                      \
  }                                                                                                     \
  static void triad_##TY(T *restrict a, const T *restrict b, const T *restrict c, float s, size_t lo,   \
                         size_t hi) {                                                                   \
    _Pragma("omp simd") for (size_t i = lo; i < hi; i++)                                                \
        STORE1(&a[i], hl_stream_triad_op(LOAD1(b[i]), s, LOAD1(c[i])));                                 \
  }                                                                                                     \
  static float dot_##TY(const T *restrict a, const T *restrict b, size_t lo, size_t hi) {               \
    float part = 0;                                                                                     \
    _Pragma("omp simd reduction(+ : part)") for (size_t i = lo; i < hi; i++) part +=                    \
        hl_stream_dot_term(LOAD1(a[i]), LOAD1(b[i]));                                                   \
    return part;                                                                                        \
  }

PORTABLE(f32, float, LOAD1_F32, STORE1_F32)
PORTABLE(f16, uint16_t, LOAD1_F16, STORE1_F16)
PORTABLE(bf16, uint16_t, LOAD1_BF16, STORE1_BF16)

static void copy_bytes(const char *a, char *c, size_t lo, size_t hi) { memcpy(c + lo, a + lo, hi - lo); }

/* ------------------------------------------------------ vector loops -- */
#if HL_HAVE_HALF_SIMD
/* LOAD8: eight elements as fp32; STORE8 / STREAM8 (p, v): eight fp32
 * values stored as the type, regular or streaming. The shared scalar bodies
 * run on eight lanes: the compiler keeps x, y, o in registers. */
#define LOAD8_F32(p) _mm256_loadu_ps(p)
#define STORE8_F32(p, v) _mm256_storeu_ps(p, v)
#define STREAM8_F32(p, v) _mm256_stream_ps(p, v)
#define LOAD8_F16(p) hl_load8_f16(p)
#define STORE8_F16(p, v) hl_store8_f16(p, v)
#define STREAM8_F16(p, v) _mm_stream_si128((__m128i *)(p), hl_pack8_f16(v))
#define LOAD8_BF16(p) hl_load8_bf16(p)
#define STORE8_BF16(p, v) hl_store8_bf16(p, v)
#define STREAM8_BF16(p, v) _mm_stream_si128((__m128i *)(p), hl_pack8_bf16(v))

/* One set of vector loops per type and store kind; FENCE orders streaming
 * stores before the parallel region ends. */
#define SIMD(TY, T, LOAD8, PUT8, LOAD1, STORE1, KIND, FENCE)                                              \
  HL_SIMD_TARGET static void scale_##TY##_##KIND(T *b, const T *c, float s, size_t lo, size_t hi) {      \
    size_t i = lo;                                                                                       \
    for (; i + 8 <= hi; i += 8) {                                                                        \
      float x[8], o[8];                                                                                  \
      _mm256_storeu_ps(x, LOAD8(c + i));                                                                 \
      for (int j = 0; j < 8; j++) o[j] = hl_stream_scale_op(s, x[j]);                                    \
      PUT8(b + i, _mm256_loadu_ps(o));                                                                   \
    }                                                                                                    \
    for (; i < hi; i++) STORE1(&b[i], hl_stream_scale_op(s, LOAD1(c[i])));                               \
    FENCE;                                                                                               \
  }                                                                                                      \
  HL_SIMD_TARGET static void add_##TY##_##KIND(const T *a, const T *b, T *c, size_t lo, size_t hi) {     \
    size_t i = lo;                                                                                       \
    for (; i + 8 <= hi; i += 8) {                                                                        \
      float x[8], y[8], o[8];                                                                            \
      _mm256_storeu_ps(x, LOAD8(a + i));                                                                 \
      _mm256_storeu_ps(y, LOAD8(b + i));                                                                 \
      for (int j = 0; j < 8; j++) o[j] = hl_stream_add_op(x[j], y[j]);                                   \
      PUT8(c + i, _mm256_loadu_ps(o));                                                                   \
    }                                                                                                    \
    for (; i < hi; i++) STORE1(&c[i], hl_stream_add_op(LOAD1(a[i]), LOAD1(b[i])));                       \
    FENCE;                                                                                               \
  }                                                                                                      \
  HL_SIMD_TARGET static void triad_##TY##_##KIND(T *a, const T *b, const T *c, float s, size_t lo,       \
                                                 size_t hi) {                                            \
    size_t i = lo;                                                                                       \
    for (; i + 8 <= hi; i += 8) {                                                                        \
      float x[8], y[8], o[8];                                                                            \
      _mm256_storeu_ps(x, LOAD8(b + i));                                                                 \
      _mm256_storeu_ps(y, LOAD8(c + i));                                                                 \
      for (int j = 0; j < 8; j++) o[j] = hl_stream_triad_op(x[j], s, y[j]);                              \
      PUT8(a + i, _mm256_loadu_ps(o));                                                                   \
    }                                                                                                    \
    for (; i < hi; i++) STORE1(&a[i], hl_stream_triad_op(LOAD1(b[i]), s, LOAD1(c[i])));                  \
    FENCE;                                                                                               \
  }

#define NO_FENCE ((void)0)
SIMD(f32, float, LOAD8_F32, STORE8_F32, LOAD1_F32, STORE1_F32, simd, NO_FENCE)
SIMD(f16, uint16_t, LOAD8_F16, STORE8_F16, LOAD1_F16, STORE1_F16, simd, NO_FENCE)
SIMD(bf16, uint16_t, LOAD8_BF16, STORE8_BF16, LOAD1_BF16, STORE1_BF16, simd, NO_FENCE)
SIMD(f32, float, LOAD8_F32, STREAM8_F32, LOAD1_F32, STORE1_F32, stream, _mm_sfence())
SIMD(f16, uint16_t, LOAD8_F16, STREAM8_F16, LOAD1_F16, STORE1_F16, stream, _mm_sfence())
SIMD(bf16, uint16_t, LOAD8_BF16, STREAM8_BF16, LOAD1_BF16, STORE1_BF16, stream, _mm_sfence())

#define SIMD_DOT(TY, T, LOAD8, LOAD1)                                                                   \
  HL_SIMD_TARGET static float dot_##TY##_simd(const T *a, const T *b, size_t lo, size_t hi) {          \
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                          \
    size_t i = lo;                                                                                     \
    for (; i + 8 <= hi; i += 8) {                                                                      \
      float x[8], y[8];                                                                                \
      _mm256_storeu_ps(x, LOAD8(a + i));                                                               \
      _mm256_storeu_ps(y, LOAD8(b + i));                                                               \
      for (int j = 0; j < 8; j++) lane[j] += hl_stream_dot_term(x[j], y[j]);                          \
    }                                                                                                  \
    float part = 0;                                                                                    \
    for (int j = 0; j < 8; j++) part += lane[j];                                                       \
    for (; i < hi; i++) part += hl_stream_dot_term(LOAD1(a[i]), LOAD1(b[i]));                          \
    return part;                                                                                       \
  }
SIMD_DOT(f32, float, LOAD8_F32, LOAD1_F32)
SIMD_DOT(f16, uint16_t, LOAD8_F16, LOAD1_F16)
SIMD_DOT(bf16, uint16_t, LOAD8_BF16, LOAD1_BF16)

/* the vector loop (streaming stores or not) where the CPU has it, else the portable one */
#define RUN(name, TY, ...) \
  (nt ? name##_##TY##_stream(__VA_ARGS__) : simd ? name##_##TY##_simd(__VA_ARGS__) : name##_##TY(__VA_ARGS__))
#define RUN_DOT(TY, ...) (simd ? dot_##TY##_simd(__VA_ARGS__) : dot_##TY(__VA_ARGS__))
#else
#define RUN(name, TY, ...) (name##_##TY(__VA_ARGS__))
#define RUN_DOT(TY, ...) (dot_##TY(__VA_ARGS__))
#endif

/* --------------------------------------------------------- drivers -- */

static void cpu_init(hl_dtype t, void *a, void *b, void *c, size_t n, float va, float vb, float vc) {
  float v[3] = {va, vb, vc};
  uint32_t word[3];
  for (int j = 0; j < 3; j++) {
    if (t == HL_F32) memcpy(&word[j], &v[j], 4);
    else word[j] = t == HL_F16 ? hl_f32_to_f16(v[j]) : hl_f32_to_bf16(v[j]);
  }
  void *arr[3] = {a, b, c};
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) {
    const size_t hi = chunk_end(k, n);
    for (int j = 0; j < 3; j++) {
      if (t == HL_F32)
        for (size_t i = k * CHUNK; i < hi; i++) ((uint32_t *)arr[j])[i] = word[j];
      else
        for (size_t i = k * CHUNK; i < hi; i++) ((uint16_t *)arr[j])[i] = (uint16_t)word[j];
    }
  }
}

/* a copy moves bits: no conversion for any type. Each thread copies the
 * chunks a static schedule gives it (the pages it first touched) with one
 * memcpy, so glibc chooses its own large-copy path (streaming stores past
 * its threshold): the kernel then runs at the reference copy's rate. */
static void cpu_copy(hl_dtype t, const void *a, void *c, size_t n) {
  const size_t es = hl_dtype_size(t), chunks = chunks_of(n);
#pragma omp parallel
  {
    /* libgomp's split of `chunks` iterations under schedule(static) */
    const size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
    const size_t q = chunks / nt, r = chunks % nt;
    const size_t first = q * id + (id < r ? id : r), count = q + (id < r ? 1 : 0);
    if (count) {
      const size_t lo = first * CHUNK * es, hi = chunk_end(first + count - 1, n) * es;
      copy_bytes(a, c, lo, hi);
    }
  }
}

static void cpu_scale(hl_dtype t, void *b, const void *c, float s, size_t n) {
  const int simd = hl_simd_available(), nt = use_streaming(n, hl_dtype_size(t), 2, b);
  (void)simd, (void)nt;
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) {
    const size_t lo = k * CHUNK, hi = chunk_end(k, n);
    if (t == HL_F32) RUN(scale, f32, b, c, s, lo, hi);
    else if (t == HL_F16) RUN(scale, f16, b, c, s, lo, hi);
    else RUN(scale, bf16, b, c, s, lo, hi);
  }
}

static void cpu_add(hl_dtype t, const void *a, const void *b, void *c, size_t n) {
  const int simd = hl_simd_available(), nt = use_streaming(n, hl_dtype_size(t), 3, c);
  (void)simd, (void)nt;
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) {
    const size_t lo = k * CHUNK, hi = chunk_end(k, n);
    if (t == HL_F32) RUN(add, f32, a, b, c, lo, hi);
    else if (t == HL_F16) RUN(add, f16, a, b, c, lo, hi);
    else RUN(add, bf16, a, b, c, lo, hi);
  }
}

static void cpu_triad(hl_dtype t, void *a, const void *b, const void *c, float s, size_t n) {
  const int simd = hl_simd_available(), nt = use_streaming(n, hl_dtype_size(t), 3, a);
  (void)simd, (void)nt;
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) {
    const size_t lo = k * CHUNK, hi = chunk_end(k, n);
    if (t == HL_F32) RUN(triad, f32, a, b, c, s, lo, hi);
    else if (t == HL_F16) RUN(triad, f16, a, b, c, s, lo, hi);
    else RUN(triad, bf16, a, b, c, s, lo, hi);
  }
}

/* fp32 partial sums of one chunk each (so the fp32 rounding error stays that
 * of a CHUNK-term sum at any n), chunks added in fp64 */
static double cpu_dot(hl_dtype t, const void *a, const void *b, size_t n) {
  const int simd = hl_simd_available();
  (void)simd;
  double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
  for (size_t k = 0; k < chunks_of(n); k++) {
    const size_t lo = k * CHUNK, hi = chunk_end(k, n);
    if (t == HL_F32) sum += RUN_DOT(f32, a, b, lo, hi);
    else if (t == HL_F16) sum += RUN_DOT(f16, a, b, lo, hi);
    else sum += RUN_DOT(bf16, a, b, lo, hi);
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
