/* narrow_accumulator.h — a model of the accumulator of Hopper's FP8 tensor
 * cores, for the CPU emulations that stand beside cuBLASLt's FP8 products
 * (halflab-bench gemm --accuracy, the gpu suite's twins).
 *
 * The published description (DeepSeek-V3 technical report, arXiv:2412.19437,
 * sections 3.3.2 and 3.5.2): after aligning 32 products by right-shifting
 * their significands to the largest exponent, the tensor core keeps only the
 * highest 14 bits of each and truncates the rest; the sums are accumulated
 * into registers with 14-bit precision too (about 2% maximum relative error
 * on random matrices at K = 4096). Khattak and Mikaitis ("Accurate models of
 * NVIDIA tensor cores", arXiv:2512.07004) build bit-accurate models of the
 * H100's tensor cores, fp8 included; this one follows DeepSeek-V3's shorter
 * description. Its accumulator, 8 exponent and 13 fraction bits, is named
 * e8m13 in gemm --accuracy's CSV.
 *
 * The model, exactly: products are formed exactly; the running sum and each
 * group of 32 products are aligned to the largest exponent among them (the
 * leading bit 2^e of the largest magnitude); every addend is truncated toward
 * zero to a multiple of 2^(e - 13); they are added exactly; the result is
 * truncated toward zero to 14 significant bits. DeepSeek-V3's remedy,
 * promotion: every 128 products the narrow partial sum is multiplied by its
 * blocks' scales and added to an fp32 accumulator (round to nearest) on the
 * CUDA cores, and the narrow sum restarts from zero. */
#ifndef HL_NARROW_ACCUMULATOR_H
#define HL_NARROW_ACCUMULATOR_H

#include <math.h>
#include <stdint.h>

enum {
  HL_NARROW_ACC_BITS = 14,      /* significant bits the accumulator keeps */
  HL_NARROW_ACC_GROUP = 32,     /* products aligned together */
  HL_NARROW_ACC_PROMOTE = 128,  /* DeepSeek-V3's promotion interval N_C */
};

/* x truncated toward zero to a multiple of 2^q */
static inline double hl_truncate_to_quantum(double x, int q) { return ldexp(trunc(ldexp(x, -q)), q); }

/* e with 2^e <= |x| < 2^(e+1), for x != 0 */
static inline int hl_leading_exponent(double x) {
  int e;
  frexp(x, &e);
  return e - 1;
}

/* x truncated toward zero to `bits` significant bits */
static inline double hl_truncate_significand(double x, int bits) {
  return x == 0.0 ? 0.0 : hl_truncate_to_quantum(x, hl_leading_exponent(x) - (bits - 1));
}

/* One step of the model: the running sum acc plus products[0..n) (n <= 32).
 * Exact in double: at most 33 addends of 14 bits on one grid. */
static inline double hl_narrow_acc_add_group(double acc, const double *products, int n, int bits) {
  double largest = fabs(acc);
  for (int i = 0; i < n; i++) largest = fabs(products[i]) > largest ? fabs(products[i]) : largest;
  if (largest == 0.0) return 0.0;
  const int q = hl_leading_exponent(largest) - (bits - 1);
  double sum = hl_truncate_to_quantum(acc, q);
  for (int i = 0; i < n; i++) sum += hl_truncate_to_quantum(products[i], q);
  return hl_truncate_significand(sum, bits);
}

/* sum_p a[p * stride_a] * b[p * stride_b] for p < k, in the narrow
 * accumulator from zero, products in groups of 32 */
static inline double hl_narrow_acc_dot(const float *a, const float *b, int64_t k, int bits) {
  double acc = 0.0, group[HL_NARROW_ACC_GROUP];
  for (int64_t p = 0; p < k; p += HL_NARROW_ACC_GROUP) {
    const int n = k - p < HL_NARROW_ACC_GROUP ? (int)(k - p) : HL_NARROW_ACC_GROUP;
    for (int i = 0; i < n; i++) group[i] = (double)a[p + i] * (double)b[p + i];
    acc = hl_narrow_acc_add_group(acc, group, n, bits);
  }
  return acc;
}

/* The promoted product: the narrow sum of each `every` products, times
 * scale(chunk) (the product of A's and B's block scales there, fp32), added
 * to an fp32 accumulator. every >= k: one chunk, no promotion (cuBLASLt's
 * fast accumulation, the scale applied at the end). */
static inline float hl_narrow_acc_promoted_dot(const float *a, const float *b, const float *chunk_scale, int64_t k,
                                               int64_t every, int bits) {
  float acc = 0.0f;
  for (int64_t p = 0, chunk = 0; p < k; p += every, chunk++) {
    const int64_t n = k - p < every ? k - p : every;
    const float partial = (float)hl_narrow_acc_dot(a + p, b + p, n, bits); /* 14 bits: exact in fp32 */
    const volatile float scaled = partial * chunk_scale[chunk];          /* one fp32 rounding each */
    acc = acc + scaled;
  }
  return acc;
}

#endif /* HL_NARROW_ACCUMULATOR_H */
