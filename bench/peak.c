/* peak.c — the dense peaks a GEMM is measured against (docs/bench.md, Peaks).
 *
 * GPUs: NVIDIA's datasheets, keyed by the device name and compute
 * capability, scaled to what this device can actually reach: on a MIG slice
 * or a part with fewer SMs, by the SM count; on a part whose maximum SM
 * clock is capped below the datasheet's boost clock, by the clock.
 *
 * CPUs: FLOP per cycle per core of the unit each variant's products run on,
 * from the vendors' optimisation manuals, x the cores used x the clock
 * measured at start-up (clock.c), used only within the range the machine
 * reports. A half variant that widens to fp32 is held to the fp32 unit.
 *
 * Anything not in the tables is "peak unknown": no percentage is better
 * than a wrong one. */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "kernels/gemm_reference.h"
#include "kernels/host.h"

typedef struct {
  const char *label;
  const char *has, *and_has1, *and_has2; /* name must contain has, and and_has1 or and_has2 when given */
  const char *lacks;                     /* ... and must not contain this */
  int cc;
  double tflops[PEAK_FP8 + 1];           /* fp32, tf32, fp16, bf16, fp8; 0 = the part has no such unit */
  double hbm_gbps, hbm_gbps_small;       /* small: the smaller-memory variant (< 60 GiB) where it differs */
  int sms, boost_mhz;
} peak_entry;

/* Dense figures (no sparsity). fp16 with fp16 accumulation runs at the fp16
 * rate on these datacenter parts. fp8: the H100/H200 SXM datasheets' 3958
 * TFLOP/s "with sparsity", halved. */
static const peak_entry table[] = {
    {"NVIDIA V100 SXM2 (sm_70)", "V100", NULL, NULL, "PCIE", 70, {15.7, 0, 125, 0, 0}, 900, 900, 80, 1530},
    {"NVIDIA A100 SXM4 (sm_80)", "A100", "SXM", NULL, NULL, 80, {19.5, 156, 312, 312, 0}, 2039, 1555, 108, 1410},
    {"NVIDIA H100 SXM (sm_90)", "H100", "SXM", "HBM3", NULL, 90, {66.9, 494.7, 989.4, 989.4, 1978.9}, 3350, 3350, 132, 1980},
    {"NVIDIA H200 SXM (sm_90)", "H200", NULL, NULL, "NVL", 90, {66.9, 494.7, 989.4, 989.4, 1978.9}, 4800, 4800, 132, 1980},
};

static bool contains_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; *p; p++)
    if (strncasecmp(p, needle, n) == 0) return true;
  return false;
}

static const peak_entry *lookup(const hl_device_facts *f) {
  const int cc = f->cc_major * 10 + f->cc_minor;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const peak_entry *e = &table[i];
    if (e->cc != cc || !contains_ci(f->name, e->has)) continue;
    if (e->and_has1 && !contains_ci(f->name, e->and_has1) && !(e->and_has2 && contains_ci(f->name, e->and_has2)))
      continue;
    if (e->lacks && contains_ci(f->name, e->lacks)) continue;
    return e;
  }
  return NULL;
}

/* ----------------------------------------------------------------- CPU -- */

/* FLOP per cycle per core of each unit (a fused multiply-add counts 2).
 * Intel: two 512-bit FMA ports on Xeon Scalable with AVX-512 (Intel 64 and
 * IA-32 Architectures Optimization Reference Manual); AVX512-BF16's
 * vdpbf16ps and AVX512-FP16's vfmadd*ph do twice the fp32 lanes per
 * instruction; AMX-BF16: 1024 per cycle (Intel's figure for a core's tile
 * unit). AMD Zen 4: two 256-bit FMA pipes, a 512-bit instruction on both
 * halves at once, so half Intel's per-instruction rate (AMD's Software
 * Optimization Guide for the Zen 4 microarchitecture); no FP16 or AMX. */
typedef struct {
  const char *label;
  double fp32_fma, avx512_bf16_dot, avx512_fp16_fma, amx_bf16;
} cpu_unit_rates;

static const cpu_unit_rates intel_avx512 = {"Intel with AVX-512", 64, 128, 128, 1024};
static const cpu_unit_rates intel_avx2 = {"Intel with AVX2", 32, 0, 0, 0};
static const cpu_unit_rates amd_zen4 = {"AMD Zen 4", 32, 64, 0, 0};
static const cpu_unit_rates amd_zen2_3 = {"AMD Zen 2/3", 32, 0, 0, 0};

static const cpu_unit_rates *cpu_rates(const hl_cpu_features *c) {
  const bool avx512 = hl_cpu_has_avx512(c);
  if (!strcmp(c->vendor, "GenuineIntel") && c->family == 6) return avx512 ? &intel_avx512 : c->avx2 && c->fma ? &intel_avx2 : NULL;
  if (!strcmp(c->vendor, "AuthenticAMD") && c->family == 25) return avx512 ? &amd_zen4 : &amd_zen2_3; /* 0x19: Zen 3, Zen 4 */
  if (!strcmp(c->vendor, "AuthenticAMD") && c->family == 23 && c->model >= 0x30) return &amd_zen2_3; /* Zen 2 */
  return NULL;
}

static bench_peaks cpu_peaks(const hl_device_facts *f) {
  bench_peaks p;
  memset(&p, 0, sizeof p);
  const hl_cpu_features *c = hl_cpu_features_get();
  const hl_cpu_units *u = hl_cpu_units_get();
  const cpu_unit_rates *r = cpu_rates(c);
  const int cores = f->threads > 0 && f->threads < f->sm_count ? f->threads : f->sm_count;
  p.has_clock = true;
  p.clock = bench_clock_measure(f->name, f->clock_mhz);
  const bench_clock *clk = &p.clock;
  if (!r || cores <= 0) {
    snprintf(p.source, sizeof p.source,
             "peak unknown: %s family %d model %d is not in the built-in CPU table (Intel with AVX2 or AVX-512, AMD "
             "Zen 2 to Zen 4); compare with the OpenBLAS baseline measured in the same run instead",
             c->vendor[0] ? c->vendor : "this CPU", c->family, c->model);
    return p;
  }
  if (!clk->trusted) {
    if (clk->measured_mhz > 0)
      snprintf(p.source, sizeof p.source,
               "peak unknown: the clock measured, %d MHz, is outside the range this machine allows, %d..%d MHz "
               "(clock_bounds_mhz); no percentage rather than a wrong one",
               clk->measured_mhz, clk->low_mhz, clk->high_mhz);
    else
      snprintf(p.source, sizeof p.source, "peak unknown: the clock was not measured (%s)", clk->method);
    return p;
  }
  const int mhz = clk->measured_mhz;
  /* the unit the bf16 products run on: through oneDNN AMX, else
   * AVX512-BF16's dot product; without oneDNN, or without both, widened to
   * fp32 (the CPU backend's GEMM decides the same way) */
  const char *bf16_unit = "fp32 FMA (widened)";
  double bf16 = r->fp32_fma;
  const hl_gemm_desc probe = {.m = 1024, .n = 1024, .k = 1024, .batch = 1, .a_type = HL_BF16, .b_type = HL_BF16,
                              .c_type = HL_BF16, .compute = HL_COMPUTE_F32, .alpha = 1, .lda = 1024, .ldb = 1024,
                              .ldc = 1024};
  char how[160];
  const bool library = hl_onednn_gemm_describe(&probe, how, sizeof how); /* bf16 products on a bf16 unit at all */
  if (library && u->amx_bf16 && r->amx_bf16 > 0) bf16 = r->amx_bf16, bf16_unit = "AMX-BF16";
  else if (library && u->avx512_bf16 && r->avx512_bf16_dot > 0) bf16 = r->avx512_bf16_dot, bf16_unit = "AVX512-BF16 dot";
  const double scale = cores * (double)mhz * 1e6 / 1e12; /* FLOP/cycle -> TFLOP/s */
  p.known = true;
  p.value[PEAK_FP32] = r->fp32_fma * scale;
  p.value[PEAK_FP16] = r->fp32_fma * scale; /* fp16 products widen to fp32 (no library fp16 GEMM on the CPU) */
  p.value[PEAK_BF16] = bf16 * scale;
  snprintf(p.source, sizeof p.source,
           "CPU table (%s): fp32 FMA %.0f FLOP/cycle/core; bf16 on %s %.0f; fp16 widened to fp32 %.0f; x %d cores x "
           "%d MHz (measured with a multiply chain, within %d..%d MHz: see clock_method, clock_bounds_mhz); AVX512-FP16 "
           "%.0f and AMX-BF16 %.0f where the CPU has them",
           r->label, r->fp32_fma, bf16_unit, bf16, r->fp32_fma, cores, mhz, clk->low_mhz, clk->high_mhz,
           r->avx512_fp16_fma, r->amx_bf16);
  return p;
}

bench_peaks bench_peaks_for(const hl_device_facts *f, hl_device_kind kind) {
  bench_peaks p;
  memset(&p, 0, sizeof p);
  if (kind == HL_DEVICE_CPU) return cpu_peaks(f);
  const peak_entry *e = lookup(f);
  if (!e) {
    snprintf(p.source, sizeof p.source,
             "peak unknown: %s (sm_%d%d) is not in the built-in table (V100 SXM2, A100 SXM4, H100 "
             "SXM, H200 SXM)",
             f->name, f->cc_major, f->cc_minor);
    return p;
  }
  p.known = true;
  double scale = 1.0;
  char how[256] = "";
  size_t k = 0;
  if (f->sm_count > 0 && f->sm_count < e->sms) {
    scale *= (double)f->sm_count / e->sms;
    k += (size_t)snprintf(how + k, sizeof how - k, "; scaled by SMs %d/%d%s", f->sm_count, e->sms,
                          f->mig == 1 ? " (MIG slice)" : "");
  } else if (f->mig == 1) {
    k += (size_t)snprintf(how + k, sizeof how - k, "; MIG mode is enabled");
  }
  if (f->max_clock_mhz > 0 && f->max_clock_mhz < e->boost_mhz * 0.98 && k < sizeof how) {
    scale *= (double)f->max_clock_mhz / e->boost_mhz;
    k += (size_t)snprintf(how + k, sizeof how - k, "; scaled by the max SM clock %d/%d MHz (capped part)",
                          f->max_clock_mhz, e->boost_mhz);
  }
  for (int i = 0; i <= PEAK_FP8; i++) p.value[i] = e->tflops[i] * scale;
  const double gib = (double)f->total_mem / (1u << 30);
  /* HBM bandwidth belongs to the memory, not the SMs: quoted only for the whole chip */
  p.value[PEAK_HBM] = f->mig == 1 ? 0 : (gib < 60 ? e->hbm_gbps_small : e->hbm_gbps);
  snprintf(p.source, sizeof p.source,
           "datasheet %s: fp32 %.1f, tf32 %.1f, fp16 %.1f, bf16 %.1f, fp8 %.1f TFLOP/s dense (0 = no such unit), HBM %.0f "
           "GB/s%s%s",
           e->label, e->tflops[0], e->tflops[1], e->tflops[2], e->tflops[3], e->tflops[4],
           gib < 60 ? e->hbm_gbps_small : e->hbm_gbps, how,
           f->mig == 1 ? "; HBM figure not quoted on a MIG slice" : "");
  return p;
}

void bench_peaks_record(const bench_peaks *p) {
  hl_meta_set("peak_source", "%s", p->source);
  if (!p->has_clock) return;
  const bench_clock *c = &p->clock;
  if (c->measured_mhz > 0) hl_meta_set("clock_measured_mhz", "%d", c->measured_mhz);
  else hl_meta_set("clock_measured_mhz", "not measured");
  hl_meta_set("clock_trusted", "%s", c->trusted ? "yes" : "no");
  hl_meta_set("clock_method", "%s", c->method);
  hl_meta_set("clock_bounds_mhz", "%d..%d: %s", c->low_mhz, c->high_mhz, c->bounds);
}
