/* onednn_absent.c — kernels/cpu/onednn_gemm.h in a build without oneDNN
 * (libdnnl-dev not found at configure time, -Donednn=disabled, or a build of
 * halflab-numerics alone, -Dnumerics-only=true): every
 * GEMM takes the widening path, and the words say why. */
#include <stdio.h>

#include "kernels/cpu/onednn_gemm.h"

static const char absent[] = "oneDNN is not built in (libdnnl-dev missing at configure time, -Donednn=disabled or -Dnumerics-only=true)";

bool hl_onednn_gemm(const hl_gemm_desc *d) {
  (void)d;
  return false;
}

bool hl_onednn_gemm_describe(const hl_gemm_desc *d, char *out, size_t len) {
  return hl_onednn_matmul_check(d, out, len);
}

bool hl_onednn_matmul_check(const hl_gemm_desc *d, char *out, size_t len) {
  (void)d;
  if (len) snprintf(out, len, "%s", absent);
  return false;
}

hl_onednn_cache_stats hl_onednn_cache_stats_get(void) { return (hl_onednn_cache_stats){0}; }

void hl_onednn_line(char *out, size_t len) {
  snprintf(out, len, "%s: bf16 and fp16 GEMMs widened to fp32 for sgemm", absent);
}
