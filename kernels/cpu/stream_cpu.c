/* stream_cpu.c — the bandwidth kernels of kernels/stream.h on the CPU.
 *
 * Every loop, init included, hands out the arrays in chunks of CHUNK
 * elements under one static OpenMP schedule, so a thread touches the same
 * pages when it first writes them (first touch places them) and in every
 * kernel.
 *
 * The arithmetic is kernels/stream_ops.h, the bodies the CUDA kernels run.
 * A vector loop loads a vector of elements (fp16/bf16 widened in registers:
 * kernels/cpu/half_simd.h), combines them in fp32 by those bodies and stores
 * the vector back, rounded, in the same pass; a portable loop does the same
 * one element at a time with formats/half.h. Which loops run is chosen once
 * per type, on first use: fp16 and bf16 follow hl_cpu_half_path_chosen()
 * (kernels/cpu/half_arrays.h: fp16 with F16C on 8 lanes, bf16 with
 * vcvtneps2bf16 on 16 where the CPU has AVX512-BF16, else AVX2 on 8;
 * portable under HALFLAB_CPU_UNITS=portable), fp32 has no conversion and
 * takes the 8-lane loops wherever the CPU has AVX2. The element-wise kernels
 * store the same bits on every path: the vector conversions give half.h's
 * bits lane for lane (fp16's widening quiets a signalling NaN, as the
 * arithmetic after it does anyway), and only which payload a NaN + NaN keeps
 * is the compiler's choice of operand order, as in any C. dot runs 8 lanes on
 * every vector path, so these add in one order; the portable loop's order
 * differs, within dot's bound.
 * Measured on the development machine: widening a whole chunk first and
 * rounding it afterwards was slower (the memory streams idle while a chunk is
 * computed), and converting element by element with the portable code ran at
 * a few GB/s, compute-bound.
 *
 * Stores: once the arrays a kernel touches exceed the last-level cache, the
 * results are written with non-temporal (streaming) stores, as glibc's memcpy
 * does for large copies: a regular store first reads the line it writes (an
 * extra transfer the byte count does not include), so a triad with regular
 * stores moves 4 lines per 3 counted and cannot match a streaming memcpy. */
#include "kernels/cpu/stream_cpu.h"

#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/half_simd.h"
#include "kernels/stream.h"
#include "kernels/stream_ops.h"

/* elements per scheduling unit; also the length of dot's fp32 partial sums */
enum { CHUNK = 4096 };

static size_t chunks_of(size_t n) { return (n + CHUNK - 1) / CHUNK; }
static size_t chunk_end(size_t k, size_t n) { return n - k * CHUNK < CHUNK ? n : k * CHUNK + CHUNK; }

/* The loops of one type and path over elements [lo, hi). The _nt loops write
 * with streaming stores; only vector loops have them. */
typedef struct {
  void (*scale)(void *b, const void *c, float s, size_t lo, size_t hi);
  void (*add)(const void *a, const void *b, void *c, size_t lo, size_t hi);
  void (*triad)(void *a, const void *b, const void *c, float s, size_t lo, size_t hi);
  void (*scale_nt)(void *b, const void *c, float s, size_t lo, size_t hi);
  void (*add_nt)(const void *a, const void *b, void *c, size_t lo, size_t hi);
  void (*triad_nt)(void *a, const void *b, const void *c, float s, size_t lo, size_t hi);
  float (*dot)(const void *a, const void *b, size_t lo, size_t hi);
  size_t store_bytes; /* one vector store: the alignment a streaming store needs */
} stream_loops;

/* -------------------------------------------------- portable loops -- */
/* LOAD1/STORE1: one element (formats/half.h) */

#define LOAD1_F32(x) (x)
#define STORE1_F32(p, v) (*(p) = (v))
#define LOAD1_F16(x) hl_f16_to_f32(x)
#define STORE1_F16(p, v) (*(p) = hl_f32_to_f16(v))
#define LOAD1_BF16(x) hl_bf16_to_f32(x)
#define STORE1_BF16(p, v) (*(p) = hl_f32_to_bf16(v))

#define PORTABLE(TY, T, LOAD1, STORE1)                                                                    \
  static void scale_##TY(void *b_, const void *c_, float s, size_t lo, size_t hi) {                      \
    T *restrict b = b_;                                                                                  \
    const T *restrict c = c_;                                                                            \
    _Pragma("omp simd") for (size_t i = lo; i < hi; i++) STORE1(&b[i], hl_stream_scale_op(s, LOAD1(c[i]))); \
  }                                                                                                      \
  static void add_##TY(const void *a_, const void *b_, void *c_, size_t lo, size_t hi) {                 \
    const T *restrict a = a_, *restrict b = b_;                                                          \
    T *restrict c = c_;                                                                                  \
    _Pragma("omp simd") for (size_t i = lo; i < hi; i++)                                                 \
        STORE1(&c[i], hl_stream_add_op(LOAD1(a[i]), LOAD1(b[i])));                                       \
  }                                                                                                      \
  static void triad_##TY(void *a_, const void *b_, const void *c_, float s, size_t lo, size_t hi) {      \
    T *restrict a = a_;                                                                                  \
    const T *restrict b = b_, *restrict c = c_;                                                          \
    _Pragma("omp simd") for (size_t i = lo; i < hi; i++)                                                 \
        STORE1(&a[i], hl_stream_triad_op(LOAD1(b[i]), s, LOAD1(c[i])));                                  \
  }                                                                                                      \
  static float dot_##TY(const void *a_, const void *b_, size_t lo, size_t hi) {                          \
    const T *restrict a = a_, *restrict b = b_;                                                          \
    float part = 0;                                                                                      \
    _Pragma("omp simd reduction(+ : part)") for (size_t i = lo; i < hi; i++) part +=                     \
        hl_stream_dot_term(LOAD1(a[i]), LOAD1(b[i]));                                                    \
    return part;                                                                                         \
  }                                                                                                      \
  static const stream_loops loops_##TY##_portable = {scale_##TY, add_##TY, triad_##TY, NULL, NULL, NULL, dot_##TY, 0};

PORTABLE(f32, float, LOAD1_F32, STORE1_F32)
PORTABLE(f16, uint16_t, LOAD1_F16, STORE1_F16)
PORTABLE(bf16, uint16_t, LOAD1_BF16, STORE1_BF16)

static void copy_bytes(const char *a, char *c, size_t lo, size_t hi) { memcpy(c + lo, a + lo, hi - lo); }

/* ------------------------------------------------------ vector loops -- */
#if HL_HAVE_HALF_SIMD
/* Per type and path: LOAD_<TY>_<PATH>(p), a vector of elements as fp32;
 * STORE_/STREAM_<TY>_<PATH>(p, v), a vector of fp32 stored as the type,
 * regular or streaming. SPILL/FILL move an fp32 vector to and from an array
 * of floats: the shared scalar bodies run on those lanes, and the compiler
 * keeps x, y, o in registers. */
#define SPILL_8(x, v) _mm256_storeu_ps(x, v)
#define FILL_8(o) _mm256_loadu_ps(o)
#define SPILL_16(x, v) _mm512_storeu_ps(x, v)
#define FILL_16(o) _mm512_loadu_ps(o)

#define LOAD_F32_AVX2(p) _mm256_loadu_ps(p)
#define STORE_F32_AVX2(p, v) _mm256_storeu_ps(p, v)
#define STREAM_F32_AVX2(p, v) _mm256_stream_ps(p, v)
#define LOAD_F16_AVX2(p) hl_avx2_widen8_f16_quieting(p) /* only computed on: see half_simd.h */
#define STORE_F16_AVX2(p, v) _mm_storeu_si128((__m128i *)(p), hl_avx2_narrow8_f16(v))
#define STREAM_F16_AVX2(p, v) _mm_stream_si128((__m128i *)(p), hl_avx2_narrow8_f16(v))
#define LOAD_BF16_AVX2(p) hl_avx2_widen8_bf16(p)
#define STORE_BF16_AVX2(p, v) _mm_storeu_si128((__m128i *)(p), hl_avx2_narrow8_bf16(v))
#define STREAM_BF16_AVX2(p, v) _mm_stream_si128((__m128i *)(p), hl_avx2_narrow8_bf16(v))
#define LOAD_BF16_AVX512(p) hl_avx512_widen16_bf16(p)
#define STORE_BF16_AVX512(p, v) _mm256_storeu_si256((__m256i *)(p), hl_avx512_narrow16_bf16(v))
#define STREAM_BF16_AVX512(p, v) _mm256_stream_si256((__m256i *)(p), hl_avx512_narrow16_bf16(v))

/* The element-wise loops of one type and path with one kind of store (PUT);
 * FENCE orders streaming stores before the parallel region ends. */
#define VECTOR(TY, T, PATH, TARGET, LANES, LOAD, PUT, LOAD1, STORE1, KIND, FENCE)                          \
  TARGET static void scale_##TY##_##PATH##KIND(void *b_, const void *c_, float s, size_t lo, size_t hi) { \
    T *b = b_;                                                                                           \
    const T *c = c_;                                                                                     \
    size_t i = lo;                                                                                       \
    for (; i + LANES <= hi; i += LANES) {                                                                \
      float x[LANES], o[LANES];                                                                          \
      SPILL_##LANES(x, LOAD(c + i));                                                                     \
      for (int j = 0; j < LANES; j++) o[j] = hl_stream_scale_op(s, x[j]);                                \
      PUT(b + i, FILL_##LANES(o));                                                                       \
    }                                                                                                    \
    for (; i < hi; i++) STORE1(&b[i], hl_stream_scale_op(s, LOAD1(c[i])));                               \
    FENCE;                                                                                               \
  }                                                                                                      \
  TARGET static void add_##TY##_##PATH##KIND(const void *a_, const void *b_, void *c_, size_t lo, size_t hi) { \
    const T *a = a_, *b = b_;                                                                            \
    T *c = c_;                                                                                           \
    size_t i = lo;                                                                                       \
    for (; i + LANES <= hi; i += LANES) {                                                                \
      float x[LANES], y[LANES], o[LANES];                                                                \
      SPILL_##LANES(x, LOAD(a + i));                                                                     \
      SPILL_##LANES(y, LOAD(b + i));                                                                     \
      for (int j = 0; j < LANES; j++) o[j] = hl_stream_add_op(x[j], y[j]);                               \
      PUT(c + i, FILL_##LANES(o));                                                                       \
    }                                                                                                    \
    for (; i < hi; i++) STORE1(&c[i], hl_stream_add_op(LOAD1(a[i]), LOAD1(b[i])));                       \
    FENCE;                                                                                               \
  }                                                                                                      \
  TARGET static void triad_##TY##_##PATH##KIND(void *a_, const void *b_, const void *c_, float s, size_t lo, \
                                               size_t hi) {                                              \
    T *a = a_;                                                                                           \
    const T *b = b_, *c = c_;                                                                            \
    size_t i = lo;                                                                                       \
    for (; i + LANES <= hi; i += LANES) {                                                                \
      float x[LANES], y[LANES], o[LANES];                                                                \
      SPILL_##LANES(x, LOAD(b + i));                                                                     \
      SPILL_##LANES(y, LOAD(c + i));                                                                     \
      for (int j = 0; j < LANES; j++) o[j] = hl_stream_triad_op(x[j], s, y[j]);                          \
      PUT(a + i, FILL_##LANES(o));                                                                       \
    }                                                                                                    \
    for (; i < hi; i++) STORE1(&a[i], hl_stream_triad_op(LOAD1(b[i]), s, LOAD1(c[i])));                  \
    FENCE;                                                                                               \
  }

/* dot on 8 lanes on every vector path: it only widens, which costs little, and
 * with one width every vector path adds in the same order (8 partial sums,
 * then the tail), so it gives the same bits. */
#define VECTOR_DOT(TY, T, LOAD, LOAD1)                                                                  \
  HL_AVX2_TARGET static float dot_##TY##_AVX2(const void *a_, const void *b_, size_t lo, size_t hi) {   \
    const T *a = a_, *b = b_;                                                                          \
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                          \
    size_t i = lo;                                                                                     \
    for (; i + 8 <= hi; i += 8) {                                                                      \
      float x[8], y[8];                                                                                \
      SPILL_8(x, LOAD(a + i));                                                                         \
      SPILL_8(y, LOAD(b + i));                                                                         \
      for (int j = 0; j < 8; j++) lane[j] += hl_stream_dot_term(x[j], y[j]);                          \
    }                                                                                                  \
    float part = 0;                                                                                    \
    for (int j = 0; j < 8; j++) part += lane[j];                                                       \
    for (; i < hi; i++) part += hl_stream_dot_term(LOAD1(a[i]), LOAD1(b[i]));                          \
    return part;                                                                                       \
  }

/* Every element-wise loop of one type and path, and their table (dot:
 * the 8-lane one; a CPU with AVX-512 has AVX2) */
#define VECTOR_LOOPS(TY, T, UP, PATH, TARGET, LANES, LOAD1, STORE1)                                       \
  VECTOR(TY, T, PATH, TARGET, LANES, LOAD_##UP##_##PATH, STORE_##UP##_##PATH, LOAD1, STORE1, , (void)0)   \
  VECTOR(TY, T, PATH, TARGET, LANES, LOAD_##UP##_##PATH, STREAM_##UP##_##PATH, LOAD1, STORE1, _nt,        \
         _mm_sfence())                                                                                    \
  static const stream_loops loops_##TY##_##PATH = {                                                       \
      scale_##TY##_##PATH,    add_##TY##_##PATH,    triad_##TY##_##PATH, scale_##TY##_##PATH##_nt,        \
      add_##TY##_##PATH##_nt, triad_##TY##_##PATH##_nt, dot_##TY##_AVX2, LANES * sizeof(T)};

VECTOR_DOT(f32, float, LOAD_F32_AVX2, LOAD1_F32)
VECTOR_DOT(f16, uint16_t, LOAD_F16_AVX2, LOAD1_F16)
VECTOR_DOT(bf16, uint16_t, LOAD_BF16_AVX2, LOAD1_BF16)
VECTOR_LOOPS(f32, float, F32, AVX2, HL_AVX2_TARGET, 8, LOAD1_F32, STORE1_F32)
VECTOR_LOOPS(f16, uint16_t, F16, AVX2, HL_AVX2_TARGET, 8, LOAD1_F16, STORE1_F16)
VECTOR_LOOPS(bf16, uint16_t, BF16, AVX2, HL_AVX2_TARGET, 8, LOAD1_BF16, STORE1_BF16)
VECTOR_LOOPS(bf16, uint16_t, BF16, AVX512, HL_AVX512_BF16_TARGET, 16, LOAD1_BF16, STORE1_BF16)
#define VECTOR_TABLE(name) &name
#else
#define VECTOR_TABLE(name) NULL /* never present */
#endif

/* [type - HL_F32][path]; NULL: no such loops (fp32 converts nothing, fp16 has
 * no avx512 path) */
static const stream_loops *const all_loops_[HL_STREAM_DTYPES][HL_HALF_PATH_COUNT] = {
    {&loops_f32_portable, VECTOR_TABLE(loops_f32_AVX2), NULL},
    {&loops_f16_portable, VECTOR_TABLE(loops_f16_AVX2), NULL},
    {&loops_bf16_portable, VECTOR_TABLE(loops_bf16_AVX2), VECTOR_TABLE(loops_bf16_AVX512)},
};

static hl_cpu_half_path path_[HL_STREAM_DTYPES];
static pthread_once_t path_once_ = PTHREAD_ONCE_INIT;

static bool fp32_path_present(hl_cpu_half_path p) {
  return p == HL_HALF_PATH_PORTABLE || (p == HL_HALF_PATH_AVX2 && HL_HAVE_HALF_SIMD && hl_cpu_features_get()->avx2);
}

static void choose_paths(void) {
  path_[0] = fp32_path_present(HL_HALF_PATH_AVX2) ? HL_HALF_PATH_AVX2 : HL_HALF_PATH_PORTABLE;
  path_[HL_F16 - HL_F32] = hl_cpu_half_path_chosen(HL_F16);
  path_[HL_BF16 - HL_F32] = hl_cpu_half_path_chosen(HL_BF16);
}

hl_cpu_half_path hl_cpu_stream_path(hl_dtype t) {
  pthread_once(&path_once_, choose_paths);
  return path_[hl_stream_slot(t)];
}

bool hl_cpu_stream_set_path(hl_dtype t, hl_cpu_half_path p) {
  pthread_once(&path_once_, choose_paths);
  if (!hl_stream_dtype_ok(t) || (unsigned)p >= HL_HALF_PATH_COUNT || !all_loops_[hl_stream_slot(t)][p]) return false;
  if (!(t == HL_F32 ? fp32_path_present(p) : hl_cpu_half_path_present(t, p))) return false;
  path_[hl_stream_slot(t)] = p;
  return true;
}

static const stream_loops *loops_for(hl_dtype t) { return all_loops_[hl_stream_slot(t)][hl_cpu_stream_path(t)]; }

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
static int use_streaming(const stream_loops *L, size_t n, size_t es, int arrays, const void *out) {
  /* streaming stores are whole vectors at aligned addresses; chunks keep the alignment */
  if (!L->store_bytes || !aligned(out, L->store_bytes)) return 0;
  if (store_mode_ == HL_CPU_STORES_REGULAR) return 0;
  if (store_mode_ == HL_CPU_STORES_STREAMING) return 1;
  return n * es * (size_t)arrays > hl_cpu_stream_nt_threshold();
}

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

/* This thread's bytes [*lo, *hi) of an array of `bytes` held as elements of
 * es bytes: libgomp's split of the whole CHUNKs under schedule(static), so
 * the pages cpu_init's threads first touched. Call inside a parallel region. */
static void thread_share(size_t bytes, size_t es, size_t *lo, size_t *hi) {
  const size_t n = bytes / es, chunks = chunks_of(n);
  const size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
  const size_t q = chunks / nt, r = chunks % nt;
  const size_t first = q * id + (id < r ? id : r), count = q + (id < r ? 1 : 0);
  *lo = *hi = 0;
  if (count) *lo = first * CHUNK * es, *hi = chunk_end(first + count - 1, n) * es;
  /* bytes past the last whole element: the last share's, or thread 0's when there is no element */
  if ((count && *hi == n * es) || (!chunks && id == 0)) *hi = bytes;
}

/* a copy moves bits: no conversion for any type. Each thread copies the
 * chunks a static schedule gives it (the pages it first touched) with one
 * memcpy, so glibc chooses its own large-copy path (streaming stores past
 * its threshold). */
static void cpu_copy(hl_dtype t, const void *a, void *c, size_t n) {
  const size_t es = hl_dtype_size(t);
#pragma omp parallel
  {
    size_t lo, hi;
    thread_share(n * es, es, &lo, &hi);
    if (lo < hi) copy_bytes(a, c, lo, hi);
  }
}

static void cpu_scale(hl_dtype t, void *b, const void *c, float s, size_t n) {
  const stream_loops *L = loops_for(t);
  void (*scale)(void *, const void *, float, size_t, size_t) =
      use_streaming(L, n, hl_dtype_size(t), 2, b) ? L->scale_nt : L->scale;
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) scale(b, c, s, k * CHUNK, chunk_end(k, n));
}

static void cpu_add(hl_dtype t, const void *a, const void *b, void *c, size_t n) {
  const stream_loops *L = loops_for(t);
  void (*add)(const void *, const void *, void *, size_t, size_t) =
      use_streaming(L, n, hl_dtype_size(t), 3, c) ? L->add_nt : L->add;
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) add(a, b, c, k * CHUNK, chunk_end(k, n));
}

static void cpu_triad(hl_dtype t, void *a, const void *b, const void *c, float s, size_t n) {
  const stream_loops *L = loops_for(t);
  void (*triad)(void *, const void *, const void *, float, size_t, size_t) =
      use_streaming(L, n, hl_dtype_size(t), 3, a) ? L->triad_nt : L->triad;
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks_of(n); k++) triad(a, b, c, s, k * CHUNK, chunk_end(k, n));
}

/* fp32 partial sums of one chunk each (so the fp32 rounding error stays that
 * of a CHUNK-term sum at any n), chunks added in fp64 */
static double cpu_dot(hl_dtype t, const void *a, const void *b, size_t n) {
  float (*dot)(const void *, const void *, size_t, size_t) = loops_for(t)->dot;
  double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
  for (size_t k = 0; k < chunks_of(n); k++) sum += dot(a, b, k * CHUNK, chunk_end(k, n));
  return sum;
}

/* ------------------------------------------------ reference copies -- */
/* The copies the bandwidth reference is the best of. The per-thread ones
 * split the bytes as the kernels split fp32 arrays (thread_share), so each
 * thread copies the pages it first touched. */
enum { REF_MEMCPY, REF_MEMCPY_OMP, REF_LOOP, REF_LOOP_NT, REF_COPIES };
static const char *const ref_names_[REF_COPIES] = {"memcpy", "memcpy-omp", "copy-loop", "copy-loop-nt"};

/* A copy loop of the widest vector the CPU has: 32-byte AVX loads and
 * stores, regular or streaming (non-temporal: the stores skip the cache and
 * do not read the lines they write first). Bytes up to the first 32-byte
 * aligned destination and after the last whole vector go through memcpy. */
#if HL_HAVE_HALF_SIMD
#define COPY_LOOP(NAME, PUT, FENCE)                                                                      \
  HL_AVX2_TARGET static void NAME(char *dst, const char *src, size_t lo, size_t hi) {                    \
    size_t head = (32 - ((uintptr_t)(dst + lo) & 31)) & 31, i;                                           \
    if (head > hi - lo) head = hi - lo;                                                                  \
    memcpy(dst + lo, src + lo, head);                                                                    \
    for (i = lo + head; i + 32 <= hi; i += 32) PUT((__m256i *)(dst + i), _mm256_loadu_si256((const __m256i *)(src + i))); \
    memcpy(dst + i, src + i, hi - i);                                                                    \
    FENCE;                                                                                               \
  }
COPY_LOOP(copy_loop_avx2, _mm256_store_si256, (void)0)
COPY_LOOP(copy_loop_nt_avx2, _mm256_stream_si256, _mm_sfence())
#endif

/* without AVX2: 8-byte words, regular stores (no streaming loop) */
static void copy_loop_words(char *dst, const char *src, size_t lo, size_t hi) {
  size_t i = lo;
  for (; i + 8 <= hi && ((uintptr_t)(dst + i) & 7); i++) dst[i] = src[i];
  for (; i + 8 <= hi; i += 8) {
    uint64_t w;
    memcpy(&w, src + i, 8);
    memcpy(dst + i, &w, 8);
  }
  for (; i < hi; i++) dst[i] = src[i];
}

static bool have_avx2_loops(void) { return HL_HAVE_HALF_SIMD && hl_cpu_features_get()->avx2; }

static const char *cpu_copy_ref_name(int which) {
  if (which < 0 || which >= REF_COPIES || (which == REF_LOOP_NT && !have_avx2_loops())) return NULL;
  return ref_names_[which];
}

static void cpu_copy_ref(int which, void *dst, const void *src, size_t bytes) {
  if (which == REF_MEMCPY) {
    memcpy(dst, src, bytes); /* one call on one thread: glibc's own choice of stores */
    return;
  }
  void (*loop)(char *, const char *, size_t, size_t) = copy_loop_words;
#if HL_HAVE_HALF_SIMD
  if (have_avx2_loops()) loop = which == REF_LOOP_NT ? copy_loop_nt_avx2 : copy_loop_avx2;
#endif
#pragma omp parallel
  {
    size_t lo, hi;
    thread_share(bytes, 4, &lo, &hi);
    if (lo < hi) {
      if (which == REF_MEMCPY_OMP) copy_bytes(src, dst, lo, hi);
      else loop(dst, src, lo, hi);
    }
  }
}

const struct hl_stream_kernels hl_cpu_stream_kernels = {
    .init = cpu_init,
    .copy = cpu_copy,
    .scale = cpu_scale,
    .add = cpu_add,
    .triad = cpu_triad,
    .dot = cpu_dot,
    .copy_ref_name = cpu_copy_ref_name,
    .copy_ref = cpu_copy_ref,
    .host_alloc_pinned = NULL,
    .host_free_pinned = NULL,
};
