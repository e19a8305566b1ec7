/* stats.c — see stats.h. */
#include "train/gradient_stats.h"

#include <math.h>
#include <string.h>

#include "formats/half.h"

/* --------------------------------------------------------------- census -- */

void census_add(grad_census *c, const float *g, int64_t n, float scale) {
  int64_t nonfinite = 0, exact = 0, zero = 0, sub = 0, over = 0;
  for (int64_t i = 0; i < n; i++) {
    const float v = g[i] * scale;
    if (!isfinite(g[i]) || isnan(v)) {
      nonfinite++;
      continue;
    }
    exact += g[i] == 0.0f;
    const hl_f16 h = hl_f32_to_f16_soft(v);
    const uint16_t mag = h & 0x7fffu;
    zero += mag == 0;
    sub += mag != 0 && mag < 0x0400u;
    over += mag == 0x7c00u;
  }
  c->n += n;
  c->nonfinite += nonfinite;
  c->exact_zero += exact;
  c->fp16_zero += zero;
  c->fp16_subnormal += sub;
  c->fp16_overflow += over;
}

static double frac(int64_t part, int64_t whole) { return whole > 0 ? (double)part / (double)whole : NAN; }

double census_underflow_frac(const grad_census *c) {
  return frac(c->fp16_zero + c->fp16_subnormal, c->n - c->nonfinite);
}
double census_zero_frac(const grad_census *c) { return frac(c->fp16_zero, c->n - c->nonfinite); }
double census_exact_zero_frac(const grad_census *c) { return frac(c->exact_zero, c->n - c->nonfinite); }

/* ------------------------------------------------------------ histogram -- */

int hist_log2_floor(float x) {
  int e;
  (void)frexpf(fabsf(x), &e); /* |x| = m 2^e, m in [0.5, 1): exact for subnormals too */
  return e - 1;
}

void hist_add(grad_hist *h, const float *g, int64_t n, float scale) {
  for (int64_t i = 0; i < n; i++) {
    const float v = g[i] * scale;
    if (!isfinite(v)) {
      h->nonfinite++;
      continue;
    }
    if (v == 0.0f) {
      h->zero++;
      continue;
    }
    h->bin[hist_log2_floor(v) - HIST_MIN_LOG2]++;
  }
}

int64_t hist_total(const grad_hist *h) {
  int64_t t = h->zero + h->nonfinite;
  for (int i = 0; i < HIST_BINS; i++) t += h->bin[i];
  return t;
}

const char *hist_fp16_zone(int e) {
  if (e <= -26) return "zero";
  if (e <= -15) return "subnormal";
  if (e <= 15) return "normal";
  return "overflow";
}

/* ------------------------------------------------------------ absorption -- */

void absorb_compare(absorb_count *a, const float *before, const float *after, int64_t n, bool fp32_weights) {
  int64_t changed = 0, lost = 0;
  for (int64_t i = 0; i < n; i++) {
    uint32_t b, f;
    memcpy(&b, &before[i], 4);
    memcpy(&f, &after[i], 4);
    if (b == f) continue;
    changed++;
    if (!fp32_weights || !isfinite(before[i]) || !isfinite(after[i])) continue;
    /* the same update applied to the weight's fp16 rounding */
    const hl_f16 w16 = hl_f32_to_f16_soft(before[i]);
    const float update = (float)((double)after[i] - (double)before[i]);
    const hl_f16 moved = hl_f32_to_f16_soft(hl_f16_to_f32_soft(w16) + update);
    lost += moved == w16;
  }
  a->changed += changed;
  a->updated += changed;
  a->fp16_absorbed += lost;
}

void absorb_add_optimizer(absorb_count *a, int64_t absorbed) {
  a->absorbed += absorbed;
  a->fp16_absorbed += absorbed;
  a->updated += absorbed;
}

double absorb_frac(const absorb_count *a) { return frac(a->absorbed, a->updated); }
double absorb_fp16_frac(const absorb_count *a) { return frac(a->fp16_absorbed, a->updated); }
