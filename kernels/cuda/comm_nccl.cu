/* comm_nccl.cu — kernels/comm.h on NCCL: one communicator per process,
 * its collectives on the backend's stream (hl_cuda_stream), so that they
 * follow the backward's kernels without a host wait. Built only where
 * meson found NCCL (option nccl); its include path is this file's alone. */
#include <stdio.h>
#include <string.h>

#include <nccl.h>

#include "kernels/comm.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_kernels.h"

static_assert(sizeof(ncclUniqueId) <= HL_COMM_ID_MAX, "kernels/comm.h: HL_COMM_ID_MAX is too small for NCCL's id");

static ncclComm_t comm_;

/* NCCL's text for the status, and for the last failure where it keeps one
 * (which peer, which transport). */
static void nccl_fail(ncclResult_t r, const char *call, const char *file, int line) {
  const char *last = ncclGetLastError(comm_);
  hl_fatal_at(file, line, "NCCL: %s failed: %s%s%s", call, ncclGetErrorString(r), last && *last ? ": " : "",
              last && *last ? last : "");
}
#define HL_NCCL_CHECK(call)                                              \
  do {                                                                   \
    ncclResult_t hl_r_ = (call);                                         \
    if (hl_r_ != ncclSuccess) nccl_fail(hl_r_, #call, __FILE__, __LINE__); \
  } while (0)

static void nccl_version(char *out, size_t len) {
  int v = 0;
  HL_NCCL_CHECK(ncclGetVersion(&v));
  /* NCCL_VERSION's code: major*10000 + minor*100 + patch since 2.9, major*1000 + ... before */
  if (v >= 20900) snprintf(out, len, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  else snprintf(out, len, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}

static int nccl_device_count(char *why, size_t len) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (why && len) why[0] = '\0';
  if (e == cudaSuccess && n > 0) return n;
  if (why && len) {
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) snprintf(why, len, "no CUDA device is visible");
    else if (e == cudaErrorInsufficientDriver) snprintf(why, len, "no NVIDIA driver, or one older than the CUDA runtime");
    else snprintf(why, len, "cudaGetDeviceCount failed: %s", cudaGetErrorString(e));
  }
  (void)cudaGetLastError(); /* the failed query is answered; later calls must not see it */
  return 0;
}

static void nccl_use_device(int index) { HL_CUDA_CHECK(cudaSetDevice(index)); }

static void nccl_make_id(void *id) {
  ncclUniqueId u;
  HL_NCCL_CHECK(ncclGetUniqueId(&u));
  memcpy(id, &u, sizeof u);
}

static void nccl_join(const void *id, int rank, int size) {
  ncclUniqueId u;
  memcpy(&u, id, sizeof u);
  HL_NCCL_CHECK(ncclCommInitRank(&comm_, size, u, rank));
}

static ncclDataType_t nccl_type(hl_dtype t) {
  switch (t) {
    case HL_F32: return ncclFloat32;
    case HL_F16: return ncclFloat16;
    case HL_BF16: return ncclBfloat16;
    default: hl_fatal("NCCL all-reduce: %s is not a wire type (f32, f16, bf16)", hl_dtype_name(t));
  }
}

static void nccl_allreduce_sum(int count, void *const *buffers, const int64_t *n, const hl_dtype *types) {
  if (!comm_) hl_fatal("NCCL all-reduce before the communicator was made (comm.h: join)");
  /* one group: NCCL fuses the calls into one launch, every tensor's sum
   * in the order the ranks agree on */
  HL_NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < count; i++)
    HL_NCCL_CHECK(ncclAllReduce(buffers[i], buffers[i], (size_t)n[i], nccl_type(types[i]), ncclSum, comm_,
                                hl_cuda_stream()));
  HL_NCCL_CHECK(ncclGroupEnd());
}

static void nccl_leave(void) {
  if (!comm_) return;
  HL_NCCL_CHECK(ncclCommFinalize(comm_)); /* waits for its operations; then the rest is freed locally */
  HL_NCCL_CHECK(ncclCommDestroy(comm_));
  comm_ = NULL;
}

extern "C" const hl_comm_kernels hl_cuda_comm_kernels = {
    "NCCL",
    nccl_version,
    nccl_device_count,
    nccl_use_device,
    sizeof(ncclUniqueId),
    nccl_make_id,
    nccl_join,
    nccl_allreduce_sum,
    nccl_leave,
};
