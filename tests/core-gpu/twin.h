/* twin.h — what the gpu-suite tests of the CUDA tensor kernels share: the
 * backend under test (CUDA, or the CPU itself when built with
 * -DHL_TWIN_HARNESS_ON_CPU: then the tests check their own harness, buffers
 * and comparisons, and nothing about CUDA), host/device buffer pairs,
 * Philox inputs, and comparisons by tolerance class:
 *   exact   the same bits (a NaN matches any NaN: payloads are not part of
 *           the contract);
 *   ulps    at most k ulps of the storage type (ordered bit patterns);
 *   rel     |got - ref| <= tol * scale[i], plus one ulp of the storage type
 *           for f16/bf16 results (the last rounding may go either way when
 *           the compute-type values differ in their last bits). */
#ifndef HL_CORE_GPU_TWIN_H
#define HL_CORE_GPU_TWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/backend.h"
#include "kernels/tensor_kernels.h"
#include "tests/support/hltest.h"

extern const hl_backend *twin_gpu, *twin_cpu;
extern hl_device_kind twin_device; /* HL_DEVICE_CUDA, or HL_DEVICE_CPU for the harness check */

/* hl_require_gpu() unless the harness runs on the CPU; sets the backends. */
void twin_init(void);

/* A host array (the CPU kernels work on it) and its device copy, with
 * `pad` spare bytes in front of both so that views can start misaligned. */
typedef struct {
  char *host, *dev;
  size_t bytes;
} twin_buf;

twin_buf twin_alloc(size_t bytes);
void twin_free(twin_buf *b);
void twin_upload(twin_buf *b);            /* host -> device, all bytes */
void twin_download(const twin_buf *b, void *host_out); /* device -> host_out */

/* n values of dtype t at p: lo + (hi - lo) u from Philox (seed 4242, the
 * stream), rounded once to t; `specials` puts +-0, +-inf, NaN, a subnormal
 * and values near the type's limits at fixed positions. */
void twin_values(void *p, hl_dtype t, int64_t n, uint64_t stream, double lo, double hi, bool specials);

/* element i of an array of dtype t, as double */
double twin_get(const void *p, hl_dtype t, int64_t i);
bool twin_isnan(const void *p, hl_dtype t, int64_t i);
/* one ulp of the storage type at |v| */
double twin_ulp(hl_dtype t, double v);

/* The comparisons: on failure they fail the test with `what`, the index and
 * both values; each returns the worst distance seen (ulps, or the largest
 * |got - ref| / (tol * scale)), for print_message. */
double twin_expect_exact(const char *what, hl_dtype t, const void *ref, const void *got, int64_t n);
double twin_expect_ulps(const char *what, hl_dtype t, const void *ref, const void *got, int64_t n, double ulps);
double twin_expect_rel(const char *what, hl_dtype t, const void *ref, const void *got, int64_t n, const double *scale,
                       double tol);

/* the relative tolerance of the reduction class: 1e-5 (f32 accumulation),
 * 1e-12 for f64 (kernels/tensor_kernels.h) */
double twin_rel_tol(hl_dtype t);

#endif
