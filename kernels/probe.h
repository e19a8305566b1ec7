/* probe.h — the kernels behind halflab-numerics' probes: what each backend
 * computes so that the same demonstration can run on the CPU and on a GPU.
 *
 * Every entry point takes and returns HOST memory: the probes move a few
 * kilobytes, and keeping the copies inside the backend keeps the program
 * free of device pointers. The arithmetic itself lives in kernels/probe_math.h
 * as HL_HD inline functions that the CPU loop and the CUDA kernel both call;
 * on the GPU, formats/half.h turns every fp16/bf16 operation and conversion into
 * the hardware's own instruction (cuda_fp16 / cuda_bf16 / cuda_fp8
 * intrinsics), so the gpu test suite compares real hardware rounding with the
 * portable host code, bit for bit.
 *
 * Values of narrow formats travel as their bit patterns (uint32_t, right
 * aligned); decode them with hl_format_decode().
 */
#ifndef HL_PROBE_H
#define HL_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/format.h"
#include "formats/half.h" /* HL_HD */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- overflow -- */
/* Summing `count` copies of one value, seven ways. */
typedef enum {
  HL_SUM_FP16_SEQUENTIAL = 0, /* fp16 accumulator, one rounding per add */
  HL_SUM_FP16_PAIRWISE,       /* tree: adjacent pairs, then pairs of pairs... in fp16 */
  HL_SUM_FP16_KAHAN,          /* fp16 accumulator with an fp16 Kahan compensation */
  HL_SUM_FP32_TO_FP16,        /* fp16 inputs, fp32 accumulator, result cast to fp16 */
  HL_SUM_FP32,                /* fp32 inputs, fp32 accumulator, fp32 result */
  HL_SUM_BF16_SEQUENTIAL,
  HL_SUM_BF16_PAIRWISE,
  HL_SUM_STRATEGIES
} hl_sum_strategy;

/* Format of the strategy's inputs and of its result. */
HL_HD static inline hl_dtype hl_sum_format(hl_sum_strategy s) {
  switch (s) {
    case HL_SUM_FP32: return HL_F32;
    case HL_SUM_BF16_SEQUENTIAL:
    case HL_SUM_BF16_PAIRWISE: return HL_BF16;
    default: return HL_F16;
  }
}

/* Elements are counted from 1: "element k" is the k-th value added. The
 * running total of a strategy is the value its registers hold together after
 * k elements, exactly (Kahan: sum minus compensation; pairwise: the pending
 * partial sums added exactly; fp32 -> fp16: the fp32 accumulator). After the
 * last element it is the strategy's result (pairwise: the partials combined
 * in the format; fp32 -> fp16: the accumulator cast to fp16), so the final
 * step belongs to the last element. */
typedef struct {
  uint32_t result_bits;         /* the result, in hl_sum_format(strategy) */
  uint64_t first_lost;          /* first non-zero element that left the running total unchanged; 0: none */
  double total_at_lost;         /* the running total that element met */
  uint64_t first_overflow;      /* first element after which the running total is inf or NaN; 0: none */
  double total_before_overflow; /* the running total before that element */
  uint64_t first_nan;           /* first element after which the running total is NaN; 0: none */
} hl_sum_outcome;

/* ---------------------------------------------------------- arithmetic -- */
typedef enum { HL_ARITH_ADD = 0, HL_ARITH_SUB, HL_ARITH_MUL, HL_ARITH_DIV } hl_arith_op;

/* How a result in format F is produced from two fp32 operands a, b. */
typedef enum {
  HL_ROUND_NATIVE = 0, /* a and b rounded to F, then F's own operation (one rounding, in F) */
  HL_ROUND_VIA_FP32,   /* a op b in fp32, that result rounded to F: two roundings */
  HL_ROUND_ONCE        /* a op b exactly, rounded once to F */
} hl_arith_mode;

/* --------------------------------------------------------- lost update -- */
/* A weight w receives `steps` equal updates u. */
typedef enum {
  HL_UPDATE_FP16 = 0,       /* fp16 weight, fp16 update: w = fl16(w + u) */
  HL_UPDATE_BF16,           /* bf16 weight, bf16 update */
  HL_UPDATE_FP32_MASTER,    /* fp32 master weight, fp16 update widened to fp32 */
  HL_UPDATE_FP16_KAHAN,     /* fp16 weight with an fp16 Kahan compensation */
  HL_UPDATE_FP16_STOCHASTIC,/* fp16 weight, w + u formed in fp32, rounded stochastically */
  HL_UPDATE_STRATEGIES
} hl_update_strategy;

/* Format in which the strategy stores its weight and its update. */
HL_HD static inline hl_dtype hl_update_weight_format(hl_update_strategy s) {
  return s == HL_UPDATE_BF16 ? HL_BF16 : s == HL_UPDATE_FP32_MASTER ? HL_F32 : HL_F16;
}
HL_HD static inline hl_dtype hl_update_step_format(hl_update_strategy s) {
  return s == HL_UPDATE_BF16 ? HL_BF16 : HL_F16;
}

typedef struct {
  float weight;          /* starting weight, rounded to each strategy's format */
  float update;          /* the update, rounded to hl_update_step_format() */
  uint32_t steps;
  uint32_t sample_every; /* trajectory point every this many steps (and at step 0) */
  uint64_t seed;         /* stochastic rounding: Philox stream HL_PROBE_SR_STREAM, word = step - 1 */
} hl_update_params;

#define HL_PROBE_SR_STREAM 0x5352u /* "SR" */

/* Trajectory points: steps / sample_every + 1 (step 0 included). */
HL_HD static inline uint32_t hl_update_samples(const hl_update_params *p) {
  return p->steps / p->sample_every + 1u;
}

/* ------------------------------------------------------------ harmonic -- */
/* s = 1/1 + 1/2 + ... in one format, each term fl(1 / n), until a term no
 * longer changes s (the stall) or max_terms. */
typedef struct {
  uint64_t stall_n;  /* first n whose term left s unchanged; 0: none within max_terms */
  uint64_t terms;    /* terms added (stall_n - 1, or max_terms) */
  uint32_t sum_bits; /* s, in the format */
} hl_harmonic_outcome;

/* -------------------------------------------------------- subnormals -- */
/* One fixed operation whose exact result (or input) is subnormal. */
typedef struct {
  hl_dtype format;  /* HL_F32 or HL_F16 */
  hl_arith_op op;
  uint32_t a_bits, b_bits;
} hl_subnormal_case;

/* ------------------------------------------------------------- table -- */
typedef struct hl_probe_kernels {
  /* Sum `count` (>= 1) copies of `value` with every strategy. sample_at:
   * ascending element counts in [0, count]; trajectory[s * nsamples + i] =
   * running total of strategy s after sample_at[i] elements. */
  void (*sum)(float value, uint64_t count, const uint64_t *sample_at, int nsamples,
              hl_sum_outcome out[HL_SUM_STRATEGIES], double *trajectory);

  /* out[i] = bits of a[i] op b[i] produced as `mode` says, in fmt. NATIVE:
   * fp32, fp16, bf16, and the narrow formats e4m3, e5m2, e2m3, e3m2, e2m1 and
   * e8m0 (the exact result rounded once to fmt: probe_math.h);
   * VIA_FP32 and ONCE: the same formats. Overflow: the format's own rule. */
  void (*arith)(hl_arith_op op, hl_arith_mode mode, hl_dtype fmt, const float *a, const float *b,
                uint32_t *out, size_t n);

  /* out[i] = bits of x[i] rounded to fmt (fp32, tf32, fp16, bf16, e4m3, e5m2,
   * e2m3, e3m2, e2m1, e8m0), RNE. */
  void (*convert)(hl_dtype fmt, hl_overflow ov, const float *x, uint32_t *out, size_t n);

  /* Lost-update experiment: final[s] = the weight's bits after all steps;
   * trajectory[s * hl_update_samples(p) + i] = the weight after i * sample_every steps. */
  void (*update)(const hl_update_params *p, uint32_t final_bits[HL_UPDATE_STRATEGIES], double *trajectory);

  /* Harmonic series in fmt (fp32, fp16, bf16). */
  void (*harmonic)(hl_dtype fmt, uint64_t max_terms, hl_harmonic_outcome *out);

  /* The cases computed in two builds: variant 0 the backend's default, variant
   * 1 with fp32 subnormals flushed if the backend can (CUDA: a kernel compiled
   * with -ftz=true; CPU: MXCSR flush-to-zero and denormals-are-zero, what
   * -ffast-math sets). false when the variant does not exist here. */
  bool (*subnormals)(int variant, const hl_subnormal_case *cases, uint32_t *out, int n);
  const char *variant_names[2];
} hl_probe_kernels;

#ifdef __cplusplus
}
#endif

#endif /* HL_PROBE_H */
