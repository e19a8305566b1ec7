/* stats.h — what the training runs measure about gradients and updates, on
 * host arrays (no tensors), so each counter can be checked by hand:
 *
 *   census   of gradient elements: exactly zero; zero, subnormal or overflow
 *            once expressed in fp16 (rounded to nearest even), at the
 *            gradient's own size and multiplied by the loss scale;
 *   histogram of log2 magnitudes (floor(log2|g|), zero bin separate), the
 *            chart of Micikevicius et al., "Mixed Precision Training" (2018);
 *   absorbed updates: weights whose update was non-zero but whose stored
 *            value did not change (1 + 0.0001 in fp16), counted
 *            by the optimizer for the run's own weights, and for fp32
 *            weights also what fp16 storage would have kept.
 *
 * fp16's boundaries: zero below 2^-25 (half the smallest subnormal, ties to
 * even), subnormal below 2^-14 (the smallest normal), overflow from 65520
 * (65504 + half an ulp). */
#ifndef HL_TRAIN_STATS_H
#define HL_TRAIN_STATS_H

#include <stdbool.h>
#include <stdint.h>

/* --------------------------------------------------------------- census -- */

typedef struct {
  int64_t n;              /* elements seen (finite and not) */
  int64_t nonfinite;      /* inf / NaN (not classified further) */
  int64_t exact_zero;     /* == 0 as given */
  int64_t fp16_zero;      /* round to +-0 in fp16 (exact zeros included) */
  int64_t fp16_subnormal; /* round to a non-zero fp16 subnormal */
  int64_t fp16_overflow;  /* round to +-inf in fp16 */
} grad_census;

/* Adds n values, each multiplied by scale in f32 first (scale 1: as given). */
void census_add(grad_census *c, const float *g, int64_t n, float scale);
/* (fp16_zero + fp16_subnormal) / finite elements; NaN when there are none. */
double census_underflow_frac(const grad_census *c);
double census_zero_frac(const grad_census *c);  /* fp16_zero / finite */
double census_exact_zero_frac(const grad_census *c);

/* ------------------------------------------------------------ histogram -- */

/* Bins of floor(log2 |x|) for every finite non-zero f32 (2^-149 .. 2^127). */
#define HIST_MIN_LOG2 (-149)
#define HIST_MAX_LOG2 127
#define HIST_BINS (HIST_MAX_LOG2 - HIST_MIN_LOG2 + 1)

typedef struct {
  int64_t zero;      /* exactly zero */
  int64_t nonfinite;
  int64_t bin[HIST_BINS]; /* bin[e - HIST_MIN_LOG2]: 2^e <= |x| < 2^(e+1) */
} grad_hist;

void hist_add(grad_hist *h, const float *g, int64_t n, float scale);
/* floor(log2 |x|) of a finite non-zero f32, exact (subnormals included). */
int hist_log2_floor(float x);
int64_t hist_total(const grad_hist *h);

/* The fp16 zone of the bin [2^e, 2^(e+1)): "zero" (every value rounds to 0:
 * e <= -26), "subnormal" (-25 <= e <= -15; 2^-25 itself rounds to 0, the
 * rest of that bin up), "normal" (-14 <= e <= 15), "overflow" (e >= 16:
 * 65520 and above round to inf, most of bin 15 does not). */
const char *hist_fp16_zone(int e);

/* ------------------------------------------------------------ absorption -- */

typedef struct {
  int64_t updated;       /* non-zero updates (changed, or absorbed by the optimizer's count) */
  int64_t changed;       /* stored weight changed */
  int64_t absorbed;      /* non-zero update, stored weight unchanged (the optimizer's count) */
  int64_t fp16_absorbed; /* ... as fp16 storage of the weight would have seen it */
} absorb_count;

/* Compares the stored weights before and after a step (as f32 values of
 * the stored dtype: fp16 weights are exact in f32). For fp32 storage
 * (fp32_weights) it also asks, for each changed weight, whether the update
 * (after - before) would have changed the weight's fp16 rounding: the
 * update added in f32 to the fp16 weight, rounded to fp16 once, as the
 * optimizer rounds a pure-fp16 weight. */
void absorb_compare(absorb_count *a, const float *before, const float *after, int64_t n, bool fp32_weights);
/* Adds the optimizer's count of absorbed updates (hl_optim_step). Those
 * are absorbed in fp16 storage too. */
void absorb_add_optimizer(absorb_count *a, int64_t absorbed);
double absorb_frac(const absorb_count *a);      /* absorbed / updated; NaN when nothing was updated */
double absorb_fp16_frac(const absorb_count *a); /* fp16_absorbed / updated */

#endif
