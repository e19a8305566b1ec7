/* probe_cpu.c — the numerics probes on the CPU: plain loops over the
 * HL_HD bodies of kernels/probe_math.h (the same code the CUDA kernels run). */
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define HL_HAVE_MXCSR 1
#else
#define HL_HAVE_MXCSR 0
#endif

#include "kernels/backend.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/probe.h"
#include "kernels/probe_math.h"

static void cpu_sum(float value, uint64_t count, const uint64_t *sample_at, int nsamples,
                    hl_sum_outcome out[HL_SUM_STRATEGIES], double *trajectory) {
  /* the strategies are independent chains: one thread each */
#pragma omp parallel for schedule(dynamic, 1)
  for (int s = 0; s < HL_SUM_STRATEGIES; s++)
    hl_sum_run((hl_sum_strategy)s, value, count, sample_at, nsamples, &out[s], trajectory + (size_t)s * (size_t)nsamples);
}

static void cpu_arith(hl_arith_op op, hl_arith_mode mode, hl_dtype fmt, const float *a, const float *b, uint32_t *out,
                      size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = hl_probe_arith(op, mode, fmt, a[i], b[i]);
}

static void cpu_convert(hl_dtype fmt, hl_overflow ov, const float *x, uint32_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = hl_probe_encode(fmt, x[i], ov == HL_OVERFLOW_SATURATE);
}

static void cpu_update(const hl_update_params *p, uint32_t final_bits[HL_UPDATE_STRATEGIES], double *trajectory) {
  const size_t samples = hl_update_samples(p);
  for (int s = 0; s < HL_UPDATE_STRATEGIES; s++)
    final_bits[s] = hl_update_run((hl_update_strategy)s, p, trajectory + (size_t)s * samples);
}

static void cpu_harmonic(hl_dtype fmt, uint64_t max_terms, hl_harmonic_outcome *out) {
  hl_harmonic_run(fmt, max_terms, out);
}

/* Variant 1 sets the SSE control register's flush-to-zero (results) and
 * denormals-are-zero (inputs) bits for the duration of the cases, as
 * -ffast-math's start-up code does for a whole program. */
static bool cpu_subnormals(int variant, const hl_subnormal_case *cases, uint32_t *out, int n) {
  if (variant != 0 && variant != 1) return false;
#if HL_HAVE_MXCSR
  unsigned saved = _mm_getcsr();
  if (variant == 1) _mm_setcsr(saved | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
  __asm__ volatile("" ::: "memory"); /* keep the cases' loads and arithmetic after the switch... */
  for (int i = 0; i < n; i++) {
    hl_subnormal_case c = cases[i];
    volatile uint32_t r = hl_subnormal_case_run(&c); /* computed here, under this MXCSR */
    out[i] = r;
  }
  __asm__ volatile("" ::: "memory"); /* ...and before the restore */
  _mm_setcsr(saved);
  return true;
#else
  if (variant == 1) return false;
  for (int i = 0; i < n; i++) out[i] = hl_subnormal_case_run(&cases[i]);
  return true;
#endif
}

const hl_probe_kernels hl_cpu_probe_kernels = {
    .sum = cpu_sum,
    .arith = cpu_arith,
    .convert = cpu_convert,
    .update = cpu_update,
    .harmonic = cpu_harmonic,
    .subnormals = cpu_subnormals,
    .variant_names = {"default MXCSR", "MXCSR FTZ+DAZ (what -ffast-math sets)"},
};
