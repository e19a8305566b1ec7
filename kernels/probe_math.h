/* probe_math.h — the arithmetic of the numerics probes, written once.
 *
 * Each function here is HL_HD: kernels/cpu/probe_cpu.c calls it in a plain
 * loop and kernels/cuda/probe_cuda.cu calls it from a kernel, so the CPU tests
 * cover exactly the code the GPU runs. What differs between the two is only
 * what formats/half.h does underneath: on the GPU every fp16/bf16/fp8 conversion
 * and every fp16/bf16 +,-,*,/ is the hardware's instruction.
 *
 * No multiply here feeds an add in the same chain, so nvcc has nothing to
 * contract into an FMA: fp32 results are single, correctly rounded operations
 * on both backends. Random numbers come from Philox4x32-10 (formats/philox.h),
 * a pure function of (seed, stream, index), so both backends draw the same.
 */
#ifndef HL_PROBE_MATH_H
#define HL_PROBE_MATH_H

#include <float.h>
#include <stdbool.h>
#include <stdint.h>

#include "formats/format.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "formats/round.h"
#include "kernels/probe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------ values held as bits -- */

HL_HD static inline bool hl_probe_isfinite(double t) { return t >= -DBL_MAX && t <= DBL_MAX; }

/* The value of an encoding of fp32, tf32, fp16, bf16, e4m3, e5m2, e2m3, e3m2,
 * e2m1 or e8m0 (the last four by their layout: no GPU before sm_100 has them). */
HL_HD static inline float hl_probe_decode(hl_dtype f, uint32_t bits) {
  switch (f) {
    case HL_E2M3:
    case HL_E3M2:
    case HL_E2M1:
    case HL_E8M0: return hl_round_decode(f, bits);
    case HL_TF32: return hl_f32_from_bits(bits << 13);
    case HL_F16: return hl_f16_to_f32((hl_f16)bits);
    case HL_BF16: return hl_bf16_to_f32((hl_bf16)bits);
    case HL_E4M3: return hl_fp8_to_f32((hl_fp8)bits, HL_FP8_E4M3);
    case HL_E5M2: return hl_fp8_to_f32((hl_fp8)bits, HL_FP8_E5M2);
    default: return hl_f32_from_bits(bits);
  }
}

/* x rounded to nearest, ties to even, in f (formats/round.h). saturate:
 * finite overflow and infinities become +-max (fp8's "satfinite"; the same
 * rule for the other formats). tf32 is rounded to nearest even here on both
 * backends (the GPU's own cvt.rna rounds ties away; see formats/half.h). */
HL_HD static inline uint32_t hl_probe_encode(hl_dtype f, float x, int saturate) {
  const hl_round_spec spec = hl_round_spec_make(f, HL_ROUNDING_NEAREST_EVEN,
                                                saturate ? HL_OVERFLOW_SATURATE : HL_OVERFLOW_IEEE, false);
  return hl_round_bits(&spec, x, 0);
}

/* Round-to-odd from double to float: truncate, and set the last bit when
 * anything was dropped. A value rounded to odd at 24 bits and then to nearest
 * at p <= 22 bits is the correctly rounded p-bit value (Boldo & Melquiond,
 * "Emulation of FMA and correctly rounded sums: proved algorithms using
 * rounding to odd", 2008), which is how the host rounds a double once. */
HL_HD static inline float hl_f64_to_f32_round_odd(double d) {
  float f = (float)d; /* nearest even */
  if ((double)f == d || f != f) return f;
  uint32_t b = hl_f32_bits(f);
  double af = f < 0.0f ? -(double)f : (double)f;
  double ad = d < 0.0 ? -d : d;
  if (af > ad) b -= 1u; /* rounded away from zero (possibly to inf): one step back */
  return hl_f32_from_bits(b | 1u);
}

/* d rounded once to f (fp32, tf32, fp16, bf16, and the narrow formats; the
 * format's own overflow). On the GPU the hardware converts from double
 * directly (cvt.rn.f16.f64, ...); it has no conversion from double to tf32,
 * fp6, fp4 or e8m0, so those take the host's way on both backends: to fp32
 * rounded to odd, then to the format (NaNs by half.h's rule). */
HL_HD static inline uint32_t hl_probe_encode_f64(hl_dtype f, double d) {
#if HL_DEVICE_CODE
  switch (f) {
    case HL_F16: return __half_as_ushort(__double2half(d));
    case HL_BF16: return __bfloat16_as_ushort(__double2bfloat16(d));
    case HL_E4M3: return (uint32_t)__nv_cvt_double_to_fp8(d, __NV_NOSAT, __NV_E4M3);
    case HL_E5M2: return (uint32_t)__nv_cvt_double_to_fp8(d, __NV_NOSAT, __NV_E5M2);
    case HL_F32: return hl_f32_bits(__double2float_rn(d));
    default: break; /* fp6, fp4, e8m0: no conversion from double; the host's way */
  }
#else
  if (f == HL_F32) return hl_f32_bits((float)d);
#endif
  return hl_probe_encode(f, hl_f64_to_f32_round_odd(d), 0);
}

/* ----------------------------------------------------------- arithmetic -- */

/* a op b in f itself: one correctly rounded operation. fp16 and bf16 use
 * half.h's operations; the fp8, fp6, fp4 formats and e8m0, which no hardware
 * computes in, take the double operation on their exact values rounded once
 * to f (hl_probe_encode_f64): double's 53 bits are at least 2p + 2 for their
 * p <= 4 significant bits, so the result is the correctly rounded one
 * (Figueroa, "When is double rounding innocuous?", 1995), and its range holds
 * e8m0's products, which fp32's does not (2^-127 x 2^-127). */
HL_HD static inline double hl_probe_exact_op(hl_arith_op op, double x, double y) {
  switch (op) {
    case HL_ARITH_ADD: return x + y;
    case HL_ARITH_SUB: return x - y;
    case HL_ARITH_MUL: return x * y;
    default: return x / y;
  }
}

HL_HD static inline uint32_t hl_probe_native_op(hl_arith_op op, hl_dtype f, uint32_t a, uint32_t b) {
  if (f == HL_F16) {
    switch (op) {
      case HL_ARITH_ADD: return hl_f16_add((hl_f16)a, (hl_f16)b);
      case HL_ARITH_SUB: return hl_f16_sub((hl_f16)a, (hl_f16)b);
      case HL_ARITH_MUL: return hl_f16_mul((hl_f16)a, (hl_f16)b);
      default: return hl_f16_div((hl_f16)a, (hl_f16)b);
    }
  }
  if (f == HL_BF16) {
    switch (op) {
      case HL_ARITH_ADD: return hl_bf16_add((hl_bf16)a, (hl_bf16)b);
      case HL_ARITH_SUB: return hl_bf16_sub((hl_bf16)a, (hl_bf16)b);
      case HL_ARITH_MUL: return hl_bf16_mul((hl_bf16)a, (hl_bf16)b);
      default: return hl_bf16_div((hl_bf16)a, (hl_bf16)b);
    }
  }
  if (f != HL_F32 && f != HL_TF32)
    return hl_probe_encode_f64(f, hl_probe_exact_op(op, hl_probe_decode(f, a), hl_probe_decode(f, b)));
  float x = hl_f32_from_bits(a), y = hl_f32_from_bits(b), r;
  switch (op) {
    case HL_ARITH_ADD: r = x + y; break;
    case HL_ARITH_SUB: r = x - y; break;
    case HL_ARITH_MUL: r = x * y; break;
    default: r = x / y; break;
  }
  return hl_f32_bits(r);
}

/* One probe operation on fp32 operands, as hl_arith_mode describes. */
HL_HD static inline uint32_t hl_probe_arith(hl_arith_op op, hl_arith_mode mode, hl_dtype f, float a, float b) {
  if (mode == HL_ROUND_NATIVE)
    return hl_probe_native_op(op, f, hl_probe_encode(f, a, 0), hl_probe_encode(f, b, 0));
  if (mode == HL_ROUND_VIA_FP32) {
    uint32_t r = hl_probe_native_op(op, HL_F32, hl_f32_bits(a), hl_f32_bits(b));
    return hl_probe_encode(f, hl_f32_from_bits(r), 0);
  }
  /* Exactly, then once: the double result of +,-,*,/ on fp32 operands is
   * rounded to 53 bits, and 53 >= 2 * 24 + 2 makes that first rounding
   * innocuous for every target of at most 24 bits. */
  return hl_probe_encode_f64(f, hl_probe_exact_op(op, a, b));
}

/* ---------------------------------------------------- stochastic rounding -- */

/* x rounded to fp16 up or down at random, up with probability equal to the
 * distance from the value below, in units of the spacing there: E[result] = x.
 * r is a uniform 32-bit word; the probability is resolved to 2^-32. Beyond
 * fp16's largest finite value (and for inf and NaN) the nearest-even rule
 * applies, so values from 65520 still overflow to inf. The lost-update
 * experiment's rounding: formats/round.h's stochastic spec with 32 bits. */
HL_HD static inline hl_f16 hl_f32_to_f16_stochastic(float x, uint32_t r) {
  const hl_round_spec sr = hl_round_stochastic(HL_F16, 32, 0, 0);
  return (hl_f16)hl_round_bits(&sr, x, r);
}

/* ---------------------------------------------------------------- sums -- */

/* Pairwise (tree) summation, streamed. The stack holds the sums of complete
 * aligned blocks of 2^i elements, largest first, like the digits of a binary
 * counter: element k is pushed, then merged with its neighbour as many times
 * as k has trailing zero bits, and at the end the pending partials are
 * combined from the smallest up. These are exactly the additions of the
 * level-by-level tree (adjacent pairs, then pairs of pairs, ..., an odd
 * element at the end of a level moving up unchanged), in O(log n) memory.
 * The stack needs 64 entries for any 64-bit element count. */
HL_HD static inline double hl_pairwise_push(hl_dtype f, uint32_t *stack, int *depth, uint64_t k, uint32_t v) {
  double delta = hl_probe_decode(f, v); /* change of the exact total of the partials */
  stack[(*depth)++] = v;
  for (uint64_t m = k; (m & 1u) == 0; m >>= 1) {
    uint32_t b = stack[--*depth], a = stack[*depth - 1];
    uint32_t r = hl_probe_native_op(HL_ARITH_ADD, f, a, b);
    stack[*depth - 1] = r;
    /* the merge's rounding error; exact in double for fp16, and for bf16
     * while the partials lie within 2^45 of each other */
    delta += (double)hl_probe_decode(f, r) - ((double)hl_probe_decode(f, a) + (double)hl_probe_decode(f, b));
  }
  return delta;
}

HL_HD static inline uint32_t hl_pairwise_fold(hl_dtype f, const uint32_t *stack, int depth) {
  uint32_t r = stack[depth - 1];
  for (int i = depth - 2; i >= 0; i--) r = hl_probe_native_op(HL_ARITH_ADD, f, stack[i], r);
  return r;
}

/* Record what element k did to the running total (before -> after). */
HL_HD static inline void hl_sum_note(hl_sum_outcome *o, uint64_t k, double before, double after,
                                     bool addend_nonzero) {
  if (!o->first_lost && addend_nonzero && hl_probe_isfinite(before) && after == before) {
    o->first_lost = k;
    o->total_at_lost = before;
  }
  if (!o->first_overflow && !hl_probe_isfinite(after)) {
    o->first_overflow = k;
    o->total_before_overflow = before;
  }
  if (!o->first_nan && after != after) o->first_nan = k;
}

/* Trajectory points due after k elements. */
HL_HD static inline void hl_sum_sample(const uint64_t *sample_at, int nsamples, int *j, uint64_t k, double total,
                                       double *trajectory) {
  while (*j < nsamples && sample_at[*j] == k) trajectory[(*j)++] = total;
}

/* A sequential strategy whose registers came out of element k unchanged is
 * at a fixed point: every later element repeats the same operation on the
 * same operands and gets the same result. Its remaining trajectory points are
 * filled in and the loop resumes at the last element, which (as everywhere)
 * also performs the strategy's final step. Returns the new k. */
HL_HD static inline uint64_t hl_sum_skip_fixed_point(const uint64_t *sample_at, int nsamples, int *j, uint64_t k,
                                                     uint64_t count, double total, double *trajectory) {
  if (k + 1 >= count) return k;
  while (*j < nsamples && sample_at[*j] < count) trajectory[(*j)++] = total;
  return count - 1;
}

/* Sum `count` copies of `value` with strategy s; fills *o and the strategy's
 * trajectory row (nsamples values). See kernels/probe.h for the definitions. */
HL_HD static inline void hl_sum_run(hl_sum_strategy s, float value, uint64_t count, const uint64_t *sample_at,
                                    int nsamples, hl_sum_outcome *o, double *trajectory) {
  const hl_dtype f = hl_sum_format(s);
  o->result_bits = 0;
  o->first_lost = o->first_overflow = o->first_nan = 0;
  o->total_at_lost = o->total_before_overflow = 0.0;
  int j = 0;
  hl_sum_sample(sample_at, nsamples, &j, 0, 0.0, trajectory);

  const uint32_t v = hl_probe_encode(f, value, 0); /* the addend as stored in the strategy's format */
  const double vd = hl_probe_decode(f, v);
  const bool nonzero = vd != 0.0;
  double total = 0.0;

  switch (s) {
    case HL_SUM_FP16_SEQUENTIAL:
    case HL_SUM_BF16_SEQUENTIAL:
    case HL_SUM_FP32: {
      uint32_t acc = 0; /* +0 in every format */
      for (uint64_t k = 1; k <= count; k++) {
        const uint32_t before = acc;
        acc = hl_probe_native_op(HL_ARITH_ADD, f, acc, v);
        double after = hl_probe_decode(f, acc);
        hl_sum_note(o, k, total, after, nonzero);
        total = after;
        hl_sum_sample(sample_at, nsamples, &j, k, total, trajectory);
        if (acc == before) k = hl_sum_skip_fixed_point(sample_at, nsamples, &j, k, count, total, trajectory);
      }
      o->result_bits = acc;
      break;
    }
    case HL_SUM_FP16_KAHAN: {
      /* Kahan: c holds (minus) what the last rounding of s dropped; the next
       * element is corrected by it before it is added. */
      hl_f16 sum = 0, c = 0;
      for (uint64_t k = 1; k <= count; k++) {
        const hl_f16 sum_before = sum, c_before = c;
        hl_f16 y = hl_f16_sub((hl_f16)v, c);
        hl_f16 t = hl_f16_add(sum, y);
        c = hl_f16_sub(hl_f16_sub(t, sum), y);
        sum = t;
        double sd = hl_f16_to_f32(sum), cd = hl_f16_to_f32(c);
        double after = hl_probe_isfinite(sd) && hl_probe_isfinite(cd) ? sd - cd : sd; /* exact */
        hl_sum_note(o, k, total, after, nonzero);
        total = after;
        hl_sum_sample(sample_at, nsamples, &j, k, total, trajectory);
        if (sum == sum_before && c == c_before)
          k = hl_sum_skip_fixed_point(sample_at, nsamples, &j, k, count, total, trajectory);
      }
      o->result_bits = sum;
      break;
    }
    case HL_SUM_FP32_TO_FP16: {
      float acc = 0.0f;
      const float vf = (float)vd; /* fp16 input widened: exact */
      for (uint64_t k = 1; k <= count; k++) {
        const uint32_t before = hl_f32_bits(acc);
        acc = acc + vf;
        double after = acc;
        if (k == count) after = hl_f16_to_f32(hl_f32_to_f16(acc)); /* the final cast */
        hl_sum_note(o, k, total, after, nonzero);
        total = after;
        hl_sum_sample(sample_at, nsamples, &j, k, total, trajectory);
        if (hl_f32_bits(acc) == before)
          k = hl_sum_skip_fixed_point(sample_at, nsamples, &j, k, count, total, trajectory);
      }
      o->result_bits = hl_f32_to_f16(acc);
      break;
    }
    case HL_SUM_FP16_PAIRWISE:
    case HL_SUM_BF16_PAIRWISE: {
      uint32_t stack[64];
      int depth = 0;
      for (uint64_t k = 1; k <= count; k++) {
        double after = total + hl_pairwise_push(f, stack, &depth, k, v);
        if (!hl_probe_isfinite(after)) { /* a partial is inf or NaN: add them up as they are */
          after = 0.0;
          for (int i = 0; i < depth; i++) after += hl_probe_decode(f, stack[i]);
        }
        if (k == count) {
          o->result_bits = hl_pairwise_fold(f, stack, depth);
          after = hl_probe_decode(f, o->result_bits);
        }
        hl_sum_note(o, k, total, after, nonzero);
        total = after;
        hl_sum_sample(sample_at, nsamples, &j, k, total, trajectory);
      }
      break;
    }
    default: break;
  }
}

/* --------------------------------------------------------- lost update -- */

/* One strategy of the lost-update experiment; returns the final weight's
 * bits (in hl_update_weight_format(s)) and fills the strategy's trajectory. */
HL_HD static inline uint32_t hl_update_run(hl_update_strategy s, const hl_update_params *p, double *trajectory) {
  const uint32_t every = p->sample_every;
  uint32_t out = 0;
  switch (s) {
    case HL_UPDATE_FP16:
    case HL_UPDATE_BF16: {
      hl_dtype f = hl_update_weight_format(s);
      uint32_t w = hl_probe_encode(f, p->weight, 0), u = hl_probe_encode(f, p->update, 0);
      trajectory[0] = hl_probe_decode(f, w);
      for (uint32_t step = 1; step <= p->steps; step++) {
        w = hl_probe_native_op(HL_ARITH_ADD, f, w, u);
        if (step % every == 0) trajectory[step / every] = hl_probe_decode(f, w);
      }
      out = w;
      break;
    }
    case HL_UPDATE_FP32_MASTER: {
      float w = p->weight, u = hl_f16_to_f32(hl_f32_to_f16(p->update));
      trajectory[0] = w;
      for (uint32_t step = 1; step <= p->steps; step++) {
        w = w + u;
        if (step % every == 0) trajectory[step / every] = w;
      }
      out = hl_f32_bits(w);
      break;
    }
    case HL_UPDATE_FP16_KAHAN: {
      hl_f16 w = hl_f32_to_f16(p->weight), u = hl_f32_to_f16(p->update), c = 0;
      trajectory[0] = hl_f16_to_f32(w);
      for (uint32_t step = 1; step <= p->steps; step++) {
        hl_f16 y = hl_f16_sub(u, c);
        hl_f16 t = hl_f16_add(w, y);
        c = hl_f16_sub(hl_f16_sub(t, w), y);
        w = t;
        if (step % every == 0) trajectory[step / every] = hl_f16_to_f32(w);
      }
      out = w;
      break;
    }
    case HL_UPDATE_FP16_STOCHASTIC: {
      /* up with probability the distance from below, resolved to 2^-32 (round.h) */
      const hl_round_spec sr = hl_round_stochastic(HL_F16, 32, p->seed, HL_PROBE_SR_STREAM);
      hl_f16 w = hl_f32_to_f16(p->weight), u = hl_f32_to_f16(p->update);
      trajectory[0] = hl_f16_to_f32(w);
      for (uint32_t step = 1; step <= p->steps; step++) {
        float x = hl_f16_to_f32(w) + hl_f16_to_f32(u); /* exact whenever the result needs <= 24 bits */
        w = (hl_f16)hl_round_bits(&sr, x, hl_round_random(&sr, step - 1u));
        if (step % every == 0) trajectory[step / every] = hl_f16_to_f32(w);
      }
      out = w;
      break;
    }
    default: break;
  }
  return out;
}

/* ------------------------------------------------------------ harmonic -- */

HL_HD static inline void hl_harmonic_run(hl_dtype f, uint64_t max_terms, hl_harmonic_outcome *o) {
  const uint32_t one = hl_probe_encode(f, 1.0f, 0);
  uint32_t sum = 0;
  o->stall_n = 0;
  o->terms = max_terms;
  for (uint64_t n = 1; n <= max_terms; n++) {
    uint32_t term = hl_probe_native_op(HL_ARITH_DIV, f, one, hl_probe_encode(f, (float)n, 0));
    uint32_t next = hl_probe_native_op(HL_ARITH_ADD, f, sum, term);
    if (next == sum) {
      o->stall_n = n;
      o->terms = n - 1;
      break;
    }
    sum = next;
  }
  o->sum_bits = sum;
}

/* ---------------------------------------------------------- subnormals -- */

/* The case's operation in its own format. Compiled into a kernel built with
 * -ftz=true, the fp32 operations flush subnormal inputs and results to zero. */
HL_HD static inline uint32_t hl_subnormal_case_run(const hl_subnormal_case *c) {
  return hl_probe_native_op(c->op, c->format, c->a_bits, c->b_bits);
}

#ifdef __cplusplus
}
#endif

#endif /* HL_PROBE_MATH_H */
