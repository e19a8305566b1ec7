/* peak.c — the dense peaks of NVIDIA's datasheets (docs/bench.md, Peaks),
 * keyed by the device name and compute capability, and their scaling to what
 * this device can actually reach: on a MIG slice or a part with fewer SMs, by the
 * SM count; on a part whose maximum SM clock is capped below the datasheet's
 * boost clock, by the clock. Anything not in the table is "peak unknown":
 * no percentage is better than a wrong one. */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

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

bench_peaks bench_peaks_for(const hl_device_facts *f, hl_device_kind kind) {
  bench_peaks p;
  memset(&p, 0, sizeof p);
  if (kind == HL_DEVICE_CPU) {
    snprintf(p.source, sizeof p.source,
             "peak unknown: no datasheet figures for CPUs in the built-in table (compare with the OpenBLAS baseline "
             "measured in the same run instead)");
    return p;
  }
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
