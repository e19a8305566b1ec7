/* gemm_bench.h — what gemm.c (throughput) and gemm_accuracy.c share: the
 * variants and how they are labelled. */
#ifndef HL_GEMM_BENCH_H
#define HL_GEMM_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/bench.h"
#include "kernels/gemm.h"

/* The CPU references: a library's own GEMM called directly, with no
 * halflab code in the timed call, the figure halflab's path of the same
 * types is held to */
typedef enum {
  GEMM_THROUGH_HALFLAB = 0, /* the backend's GEMM entry point */
  GEMM_REF_OPENBLAS,        /* cblas_sgemm (the fp32 path's reference) */
  GEMM_REF_ONEDNN,          /* oneDNN's bf16 matmul primitive (the bf16 path's) */
  GEMM_CPU_FALLBACK,        /* the CPU backend's widening path, which runs a half GEMM
                               where the CPU has no unit for it or HALFLAB_CPU_UNITS=portable */
} gemm_reference;

typedef struct {
  const char *name; /* --dtypes and the CSV's variant column */
  hl_dtype in, out;
  hl_gemm_compute compute;
  bench_peak_kind peak;
  gemm_reference reference;
} gemm_variant;

enum { GEMM_VARIANTS = 9 };
extern const gemm_variant gemm_variants[GEMM_VARIANTS];

int gemm_variant_index(const char *name);
/* Does the device run v at all? If not, why (one line). */
bool gemm_variant_runs(const bench_device *d, const gemm_variant *v, char *why, size_t len);
/* Does v run on tensor cores on this device? (selects the validation bound) */
bool gemm_tensor_cores(const bench_device *d, const gemm_variant *v);
/* What runs v on desc's shape, in words, for the implementation column (no commas) */
void gemm_implementation(const bench_device *d, const gemm_variant *v, const hl_gemm_desc *desc, char *buf, size_t len);

/* gemm --accuracy; ks: the k values (NULL: the default sweep); notice: printed once input is checked */
int gemm_accuracy_main(const bench_device *d, const bench_common *c, const char *dtypes, const long long *ks, int nks,
                       const char *notice);

#endif
