/* optim_math.h — the per-element arithmetic of kernels/optim_kernels.h:
 * unscaling, the scale update, SGD, AdamW and clipping. The CPU loops and
 * the CUDA kernels call these same functions, so the CPU tests cover what
 * the GPU computes.
 *
 * Every f32 operation is one correctly rounded +, -, *, / or sqrt
 * (kernels/round_ops.h), so the two backends agree bit for bit. */
#ifndef HL_OPTIM_MATH_H
#define HL_OPTIM_MATH_H

#include <stdint.h>

#include "formats/half.h"
#include "formats/round.h"
#include "kernels/optim_kernels.h"
#include "kernels/round_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

HL_HD static inline int hl_om_isfinite_f(float x) { return (hl_f32_bits(x) & 0x7f800000u) != 0x7f800000u; }
HL_HD static inline int hl_om_isfinite_d(double x) { return x - x == 0.0; }

/* --------------------------------------------------- loads and stores -- */
/* f32, f16 and bf16 widen to f32; f64 is handled by the callers. */

HL_HD static inline float hl_om_load(const void *p, int32_t dtype, int64_t i) {
  switch (dtype) {
    case HL_F16: return hl_f16_to_f32(((const uint16_t *)p)[i]);
    case HL_BF16: return hl_bf16_to_f32(((const uint16_t *)p)[i]);
    case HL_F64: return (float)((const double *)p)[i];
    default: return ((const float *)p)[i];
  }
}

/* The rounding of a weight, a gradient or a state element stored in a
 * 16-bit type: the IEEE default (formats/round.h), which picks half.h's
 * conversion (on the device the hardware's). */
HL_HD static inline uint32_t hl_om_round16(int32_t dtype, float v) {
  const hl_round_spec spec = hl_round_nearest((hl_dtype)dtype);
  return hl_round_bits(&spec, v, 0);
}

HL_HD static inline void hl_om_store(void *p, int32_t dtype, int64_t i, float v) {
  switch (dtype) {
    case HL_F16: ((uint16_t *)p)[i] = (uint16_t)hl_om_round16(HL_F16, v); break;
    case HL_BF16: ((uint16_t *)p)[i] = (uint16_t)hl_om_round16(HL_BF16, v); break;
    case HL_F64: ((double *)p)[i] = (double)v; break;
    default: ((float *)p)[i] = v; break;
  }
}

/* A double result: kept whole in an f64 element, else rounded to f32 first
 * (as torch's f64 -> f32 -> f16 chain does) */
HL_HD static inline void hl_om_store_d(void *p, int32_t dtype, int64_t i, double v) {
  if (dtype == HL_F64) ((double *)p)[i] = v;
  else hl_om_store(p, dtype, i, (float)v);
}

/* the bits a value has once stored (for "did the weight change?") */
HL_HD static inline uint32_t hl_om_stored_bits(int32_t dtype, float v) {
  switch (dtype) {
    case HL_F16: return hl_om_round16(HL_F16, v);
    case HL_BF16: return hl_om_round16(HL_BF16, v);
    default: return hl_f32_bits(v);
  }
}
HL_HD static inline uint32_t hl_om_bits_at(const void *p, int32_t dtype, int64_t i) {
  return dtype == HL_F16 || dtype == HL_BF16 ? ((const uint16_t *)p)[i] : ((const uint32_t *)p)[i];
}

/* Offset of element i (row-major over size) under stride. */
HL_HD static inline int64_t hl_om_offset(int64_t i, const int64_t *size, const int64_t *stride) {
  int64_t off = 0;
  for (int d = HL_MAX_DIMS - 1; d >= 0; d--) {
    int64_t q = i % size[d];
    i /= size[d];
    off += q * stride[d];
  }
  return off;
}

HL_HD static inline void hl_om_offsets(const hl_grad_view *v, int64_t i, int64_t *dst_off, int64_t *src_off) {
  if (v->dense) {
    *dst_off = *src_off = i;
  } else {
    *dst_off = hl_om_offset(i, v->size, v->dst_stride);
    *src_off = hl_om_offset(i, v->size, v->src_stride);
  }
}

/* ------------------------------------------------------------- scaler -- */

/* Element i of a gradient: test the (scaled) source value, then write it
 * times inv (unchanged when inv is exactly 1, as torch does). Returns 1
 * when the value was inf or NaN. */
HL_HD static inline int hl_om_unscale_at(const hl_grad_view *v, int64_t i, float inv) {
  int64_t d, s;
  hl_om_offsets(v, i, &d, &s);
  if (v->src_dtype == HL_F64) {
    double x = ((const double *)v->src)[s];
    double r = inv == 1.0f ? x : hl_dmul_rn(x, (double)inv);
    hl_om_store_d(v->dst, v->dst_dtype, d, r);
    return !hl_om_isfinite_d(x);
  }
  float x = hl_om_load(v->src, v->src_dtype, s);
  float r = inv == 1.0f ? x : hl_mul_rn(x, inv);
  hl_om_store(v->dst, v->dst_dtype, d, r);
  return !hl_om_isfinite_f(x);
}

HL_HD static inline float hl_om_reciprocal(float scale) { return (float)(1.0 / (double)scale); }

/* One _amp_update_scale_ on (scale, tracker) given the summed found_inf. */
HL_HD static inline void hl_om_update_scale(float *scale, int32_t *tracker, float found, double growth,
                                            double backoff, int32_t interval) {
  if (found != 0.0f) {
    *scale = (float)hl_dmul_rn((double)*scale, backoff);
    *tracker = 0;
    return;
  }
  int32_t successful = *tracker + 1;
  if (successful == interval) {
    float grown = (float)hl_dmul_rn((double)*scale, growth);
    if (hl_om_isfinite_f(grown)) *scale = grown;
    *tracker = 0;
  } else {
    *tracker = successful;
  }
}

HL_HD static inline float hl_om_found_sum(const float *found_inf, uint64_t mask) {
  float found = 0.0f;
  for (int i = 0; i < 64; i++)
    if (mask >> i & 1u) found = hl_add_rn(found, found_inf[i]);
  return found;
}

/* --------------------------------------------------------- optimizers -- */

/* SGD on one element (torch.optim.SGD, maximize=False):
 *   d = g + weight_decay * p
 *   momentum: b = first ? d : momentum * b + (1 - dampening) * d
 *             d = nesterov ? d + momentum * b : b
 *   p = p - lr * d
 * *update = lr * d (the intended change). */
HL_HD static inline float hl_om_sgd(float p, float g, float *b, const hl_sgd_args *a, int first, float *update) {
  float d = g;
  if (a->weight_decay != 0.0f) d = hl_add_rn(d, hl_mul_rn(a->weight_decay, p));
  if (a->momentum != 0.0f) {
    *b = first ? d : hl_add_rn(hl_mul_rn(a->momentum, *b), hl_mul_rn(a->one_minus_dampening, d));
    d = a->nesterov ? hl_add_rn(d, hl_mul_rn(a->momentum, *b)) : *b;
  }
  *update = hl_mul_rn(a->lr, d);
  return hl_sub_rn(p, *update);
}

/* torch.lerp(self, end, w) as PyTorch evaluates it */
HL_HD static inline float hl_om_lerp(float self, float end, float w) {
  return (w < 0.5f && w > -0.5f) ? hl_add_rn(self, hl_mul_rn(w, hl_sub_rn(end, self)))
                                 : hl_sub_rn(end, hl_mul_rn(hl_sub_rn(end, self), hl_sub_rn(1.0f, w)));
}

/* AdamW on one element (torch.optim.AdamW, amsgrad=False, maximize=False):
 *   p = p * (1 - lr * weight_decay)               decoupled decay
 *   m = lerp(m, g, 1 - beta1)
 *   v = v * beta2 + (1 - beta2) * g * g
 *   p = p - step_size * (m / (sqrt(v) / sqrt(1 - beta2^t) + eps))
 * with step_size = lr / (1 - beta1^t). *moved: some term of the update
 * was non-zero. */
HL_HD static inline float hl_om_adamw(float p, float g, float *m, float *v, const hl_adamw_args *a, float step_size,
                                      float bc2_sqrt, int *moved) {
  float decayed = a->decoupled_decay ? hl_mul_rn(p, a->decay) : p;
  *m = hl_om_lerp(*m, g, a->one_minus_beta1);
  *v = hl_add_rn(hl_mul_rn(*v, a->beta2), hl_mul_rn(hl_mul_rn(a->one_minus_beta2, g), g));
  float denom = hl_add_rn(hl_div_rn(hl_sqrt_rn(*v), bc2_sqrt), a->eps);
  float term = hl_mul_rn(step_size, hl_div_rn(*m, denom));
  *moved = decayed != p || term != 0.0f;
  return hl_sub_rn(decayed, term);
}

/* Master mode: the f32 master takes p_new, the fp16/bf16 model weight its
 * rounding. Returns 1 when a non-zero update left the model weight
 * bit-identical (absorbed there; the master keeps it). */
HL_HD static inline int hl_om_store_master(const hl_optim_entry *e, int64_t i, float p_new, int moved) {
  hl_om_store(e->param, e->param_dtype, i, p_new);
  uint32_t before = hl_om_bits_at(e->model, e->model_dtype, i);
  uint32_t after = hl_om_stored_bits(e->model_dtype, p_new);
  hl_om_store(e->model, e->model_dtype, i, p_new);
  return moved && before == after;
}

HL_HD static inline int hl_om_sgd_at(const hl_optim_entry *e, int64_t i, const hl_sgd_args *a) {
  const int32_t t = e->param_dtype;
  uint32_t before = hl_om_bits_at(e->param, t, i);
  float p = hl_om_load(e->param, t, i), g = hl_om_load(e->grad, t, i);
  float b = a->momentum != 0.0f && !e->first ? hl_om_load(e->buf1, t, i) : 0.0f, update;
  float p_new = hl_om_sgd(p, g, &b, a, e->first, &update);
  if (a->momentum != 0.0f) hl_om_store(e->buf1, t, i, b);
  int moved = update != 0.0f;
  if (e->model) return hl_om_store_master(e, i, p_new, moved);
  hl_om_store(e->param, t, i, p_new);
  return moved && hl_om_stored_bits(t, p_new) == before;
}

HL_HD static inline int hl_om_adamw_at(const hl_optim_entry *e, int64_t i, const hl_adamw_args *a) {
  const int32_t t = e->param_dtype;
  uint32_t before = hl_om_bits_at(e->param, t, i);
  float p = hl_om_load(e->param, t, i), g = hl_om_load(e->grad, t, i);
  float m = hl_om_load(e->buf1, t, i), v = hl_om_load(e->buf2, t, i);
  int moved;
  float p_new = hl_om_adamw(p, g, &m, &v, a, e->step_size, e->bias_correction2_sqrt, &moved);
  hl_om_store(e->buf1, t, i, m);
  hl_om_store(e->buf2, t, i, v);
  if (e->model) return hl_om_store_master(e, i, p_new, moved);
  hl_om_store(e->param, t, i, p_new);
  return moved && hl_om_stored_bits(t, p_new) == before;
}

/* ----------------------------------------------------------- clipping -- */

HL_HD static inline double hl_om_src_value(const hl_grad_view *v, int64_t i) {
  int64_t d, s;
  hl_om_offsets(v, i, &d, &s);
  return v->src_dtype == HL_F64 ? ((const double *)v->src)[s] : (double)hl_om_load(v->src, v->src_dtype, s);
}

/* The term of element x in a norm, and how partial results combine:
 * L2: x^2 (exact in f64 for f32 x) summed; L1: |x| summed; inf: max |x|
 * with NaN propagating (a plain max would drop it). */
HL_HD static inline double hl_om_norm_term(double x, int norm_type) {
  double a = x < 0 ? -x : x;
  if (x != x) a = x;
  return norm_type == HL_NORM_L2 ? hl_dmul_rn(x, x) : a;
}
HL_HD static inline double hl_om_norm_combine(double acc, double term, int norm_type) {
  if (norm_type != HL_NORM_INF) return hl_dadd_rn(acc, term);
  if (acc != acc) return acc;
  if (term != term) return term;
  return term > acc ? term : acc;
}

/* total (summed or max) -> out[0] norm, out[1] clip coefficient */
HL_HD static inline void hl_om_norm_finish(double total, int norm_type, double max_norm, float *out) {
#if HL_DEVICE_CODE
  double root = norm_type == HL_NORM_L2 ? __dsqrt_rn(total) : total;
#else
  double root = norm_type == HL_NORM_L2 ? __builtin_sqrt(total) : total;
#endif
  float norm = (float)root;
  float coef = hl_div_rn((float)max_norm, hl_add_rn(norm, 1e-6f));
  out[0] = norm;
  out[1] = coef > 1.0f ? 1.0f : coef; /* clamp(max=1); NaN stays NaN */
}

HL_HD static inline void hl_om_scale_at(const hl_grad_view *v, int64_t i, float coef) {
  int64_t d, s;
  hl_om_offsets(v, i, &d, &s);
  if (v->src_dtype == HL_F64) {
    double r = hl_dmul_rn(((const double *)v->src)[s], (double)coef);
    hl_om_store_d(v->dst, v->dst_dtype, d, r);
    return;
  }
  float r = hl_mul_rn(hl_om_load(v->src, v->src_dtype, s), coef);
  hl_om_store(v->dst, v->dst_dtype, d, r);
}

HL_HD static inline void hl_om_clamp_at(const hl_grad_view *v, int64_t i, double limit) {
  int64_t d, s;
  hl_om_offsets(v, i, &d, &s);
  if (v->src_dtype == HL_F64) {
    double x = ((const double *)v->src)[s];
    double r = x > limit ? limit : x < -limit ? -limit : x;
    hl_om_store_d(v->dst, v->dst_dtype, d, r);
    return;
  }
  float lim = (float)limit;
  float x = hl_om_load(v->src, v->src_dtype, s);
  float r = x > lim ? lim : x < -lim ? -lim : x;
  hl_om_store(v->dst, v->dst_dtype, d, r);
}

#ifdef __cplusplus
}
#endif

#endif /* HL_OPTIM_MATH_H */
