/* check.h — every CUDA, cuBLAS, cuBLASLt and cuRAND call goes through one of
 * these: a failure stops the program through formats/fatal.h with the call,
 * the library's own error text and file:line (exit status 1). */
#ifndef HL_CUDA_CHECK_H
#define HL_CUDA_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include "formats/fatal.h"

#ifdef __cplusplus
extern "C" {
#endif

const char *hl_curand_status_string(curandStatus_t s);

#ifdef __cplusplus
}
#endif

#define HL_CUDA_CHECK(call)                                                       \
  do {                                                                            \
    cudaError_t hl_e_ = (call);                                                   \
    if (hl_e_ != cudaSuccess)                                                     \
      hl_fatal_at(__FILE__, __LINE__, "CUDA: %s failed: %s", #call, cudaGetErrorString(hl_e_)); \
  } while (0)

/* after a kernel launch: launch-configuration errors surface here */
#define HL_CUDA_CHECK_LAUNCH() HL_CUDA_CHECK(cudaGetLastError())

#define HL_CUBLAS_CHECK(call)                                                         \
  do {                                                                                \
    cublasStatus_t hl_s_ = (call);                                                    \
    if (hl_s_ != CUBLAS_STATUS_SUCCESS)                                               \
      hl_fatal_at(__FILE__, __LINE__, "cuBLAS: %s failed: %s", #call, cublasGetStatusString(hl_s_)); \
  } while (0)

#define HL_CURAND_CHECK(call)                                                              \
  do {                                                                                     \
    curandStatus_t hl_s_ = (call);                                                         \
    if (hl_s_ != CURAND_STATUS_SUCCESS)                                                    \
      hl_fatal_at(__FILE__, __LINE__, "cuRAND: %s failed: %s", #call, hl_curand_status_string(hl_s_));   \
  } while (0)

/* The stream every halflab kernel and library call runs on. */
cudaStream_t hl_cuda_stream(void);
/* SMs of the current device (queried once). */
int hl_cuda_sm_count(void);
/* Whether p may be read and written as 16-byte vectors (uint4). */
static inline bool hl_cuda_aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }
/* Grid size for n elements at `block` threads, capped to keep grid-stride loops busy. */
static inline unsigned hl_cuda_grid(size_t n, unsigned block) {
  size_t g = (n + block - 1) / block;
  if (g > 65535u * 8u) g = 65535u * 8u;
  return g ? (unsigned)g : 1u;
}

#endif
