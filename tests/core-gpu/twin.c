/* twin.c — see twin.h. */
#include "tests/core-gpu/twin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/tensor_math.h"

const hl_backend *twin_gpu, *twin_cpu;
hl_device_kind twin_device = HL_DEVICE_CUDA;

void twin_init(void) {
  twin_cpu = hl_backend_for(HL_DEVICE_CPU);
#ifdef HL_TWIN_HARNESS_ON_CPU
  twin_gpu = twin_cpu;
  twin_device = HL_DEVICE_CPU;
#else
  hl_require_gpu();
  twin_gpu = hl_backend_for(HL_DEVICE_CUDA);
  if (!twin_gpu || !twin_gpu->tensor) {
    printf("the CUDA backend has no tensor kernels in this build\n");
    exit(1);
  }
#endif
}

twin_buf twin_alloc(size_t bytes) {
  twin_buf b;
  b.bytes = bytes ? bytes : 1;
  b.host = calloc(1, b.bytes);
  b.dev = twin_gpu->alloc(b.bytes);
  assert_non_null(b.host);
  assert_non_null(b.dev);
  twin_gpu->zero(b.dev, b.bytes);
  return b;
}

void twin_free(twin_buf *b) {
  free(b->host);
  twin_gpu->free(b->dev);
  b->host = b->dev = NULL;
}

void twin_upload(twin_buf *b) {
  if (b->dev != b->host) twin_gpu->copy_from_host(b->dev, b->host, b->bytes);
}

void twin_download(const twin_buf *b, void *host_out) {
  twin_gpu->synchronize();
  twin_gpu->copy_to_host(host_out, b->dev, b->bytes);
}

static void store(void *p, hl_dtype t, int64_t i, double v) {
  hl_kview d = {(char *)p + (size_t)i * hl_dtype_size(t), t, {0, 0, 0, 1}}, s = {&v, HL_F64, {0, 0, 0, 1}};
  const int64_t one[HL_MAX_DIMS] = {1, 1, 1, 1};
  twin_cpu->tensor->copy(&d, &s, one);
}

void twin_values(void *p, hl_dtype t, int64_t n, uint64_t stream, double lo, double hi, bool specials) {
  if (n <= 0) return;
  double *v = malloc(sizeof(double) * (size_t)n);
  assert_non_null(v);
  for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * ((double)hl_philox_u32(4242, stream, (uint64_t)i) * 0x1p-32);
  /* rounded by the CPU kernel's own conversion, so inputs are what a CPU cast gives */
  hl_kview d = {p, t, {0, 0, 0, 1}}, s = {v, HL_F64, {0, 0, 0, 1}};
  const int64_t size[HL_MAX_DIMS] = {1, 1, 1, n};
  twin_cpu->tensor->copy(&d, &s, size);
  free(v);
  if (!specials || !hl_dtype_is_float(t)) return;
  const double big = t == HL_F16 ? 65504.0 : t == HL_BF16 ? 3.3e38 : t == HL_F32 ? 3.4e38 : 1.7e308;
  const double tiny = t == HL_F16 ? 3e-6 : t == HL_BF16 ? 1e-39 : t == HL_F32 ? 1e-40 : 1e-310;
  const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, tiny, -tiny, big, -big, 1.0, -1.0};
  const int64_t nsp = (int64_t)(sizeof sp / sizeof sp[0]);
  for (int64_t k = 0; k < nsp; k++) {
    const int64_t at = (k * 7919 + 3) % (n > 0 ? n : 1);
    if (n > 0) store(p, t, at, sp[k]);
  }
}

double twin_get(const void *p, hl_dtype t, int64_t i) { return hl_load_as_f64(p, t, i); }

bool twin_isnan(const void *p, hl_dtype t, int64_t i) { return hl_dtype_is_float(t) && isnan(twin_get(p, t, i)); }

double twin_ulp(hl_dtype t, double v) {
  const int mant = t == HL_F64 ? 52 : t == HL_F32 ? 23 : t == HL_F16 ? 10 : t == HL_BF16 ? 7 : 0;
  const int emin = t == HL_F64 ? -1022 : t == HL_F32 ? -126 : t == HL_F16 ? -14 : t == HL_BF16 ? -126 : 0;
  if (!hl_dtype_is_float(t)) return 1.0;
  v = fabs(v);
  if (isinf(v) || isnan(v)) return INFINITY;
  int e = v > 0 ? ilogb(v) : emin;
  if (e < emin) e = emin;
  return ldexp(1.0, e - mant);
}

/* bit pattern as a signed integer ordered like the values (+0 and -0 both 0) */
static int64_t ordered(const void *p, hl_dtype t, int64_t i) {
  uint64_t u = 0, sign, mag;
  switch (t) {
    case HL_F64: memcpy(&u, (const double *)p + i, 8); sign = u >> 63; mag = u & 0x7fffffffffffffffull; break;
    case HL_F32: {
      uint32_t w;
      memcpy(&w, (const float *)p + i, 4);
      sign = w >> 31;
      mag = w & 0x7fffffffu;
      break;
    }
    default: {
      const uint16_t h = ((const uint16_t *)p)[i];
      sign = h >> 15;
      mag = h & 0x7fffu;
      break;
    }
  }
  return sign ? -(int64_t)mag : (int64_t)mag;
}

static bool same_bits(const void *a, const void *b, hl_dtype t, int64_t i) {
  const size_t es = hl_dtype_size(t);
  return !memcmp((const char *)a + (size_t)i * es, (const char *)b + (size_t)i * es, es);
}

double twin_expect_exact(const char *what, hl_dtype t, const void *ref, const void *got, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (same_bits(ref, got, t, i)) continue;
    if (twin_isnan(ref, t, i) && twin_isnan(got, t, i)) continue;
    fail_msg("%s (%s): element %lld differs: CPU %.17g, device %.17g (bit for bit expected)", what, hl_dtype_name(t),
             (long long)i, twin_get(ref, t, i), twin_get(got, t, i));
  }
  return 0;
}

double twin_expect_ulps(const char *what, hl_dtype t, const void *ref, const void *got, int64_t n, double ulps) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    const bool nr = twin_isnan(ref, t, i), ng = twin_isnan(got, t, i);
    if (nr || ng) {
      if (nr && ng) continue;
      fail_msg("%s (%s): element %lld: CPU %.17g, device %.17g (NaN on one side only)", what, hl_dtype_name(t),
               (long long)i, twin_get(ref, t, i), twin_get(got, t, i));
    }
    const double d = fabs((double)(ordered(ref, t, i) - ordered(got, t, i)));
    if (d > worst) worst = d;
    if (d > ulps)
      fail_msg("%s (%s): element %lld: CPU %.17g, device %.17g: %.0f ulps apart (at most %g)", what, hl_dtype_name(t),
               (long long)i, twin_get(ref, t, i), twin_get(got, t, i), d, ulps);
  }
  return worst;
}

double twin_expect_rel(const char *what, hl_dtype t, const void *ref, const void *got, int64_t n, const double *scale,
                       double tol) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    const bool nr = twin_isnan(ref, t, i), ng = twin_isnan(got, t, i);
    if (nr || ng) {
      if (nr && ng) continue;
      fail_msg("%s (%s): element %lld: CPU %.17g, device %.17g (NaN on one side only)", what, hl_dtype_name(t),
               (long long)i, twin_get(ref, t, i), twin_get(got, t, i));
    }
    const double r = twin_get(ref, t, i), g = twin_get(got, t, i);
    if (r == g) continue; /* also equal infinities */
    const double allowed = tol * scale[i] + ((t == HL_F16 || t == HL_BF16) ? twin_ulp(t, r) : 0.0);
    const double d = fabs(g - r);
    const double q = allowed > 0 ? d / allowed : INFINITY;
    if (q > worst) worst = q;
    if (!(d <= allowed))
      fail_msg("%s (%s): element %lld: CPU %.17g, device %.17g: |diff| %.3g > %.3g (tol %g x scale %.3g)", what,
               hl_dtype_name(t), (long long)i, r, g, d, allowed, tol, scale[i]);
  }
  return worst;
}

double twin_rel_tol(hl_dtype t) { return t == HL_F64 ? 1e-12 : 1e-5; }
