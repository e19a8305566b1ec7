/* probe_ftz.cu — the subnormal cases once more, in a kernel compiled with
 * -ftz=true (what --use_fast_math implies): there the fp32 operations flush
 * subnormal inputs and results to zero (PTX .ftz). kernels/cuda/meson.build
 * builds this file alone, in a static library of its own, because that flag
 * applies to a whole compilation unit. fp16 +, -, * are the cuda_fp16
 * intrinsics, which the flag does not touch; fp16 division is fp32 division
 * here too (formats/half.h), flushed by the flag, but fp16 quotients never
 * reach fp32's subnormal range. */
#include "kernels/cuda/check.h"
#include "kernels/probe.h"
#include "kernels/probe_math.h"

namespace {

__global__ void subnormal_ftz_kernel(const hl_subnormal_case *cases, uint32_t *out, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = hl_subnormal_case_run(&cases[i]);
}

}  // namespace

extern "C" void hl_cuda_subnormals_ftz(const hl_subnormal_case *cases, uint32_t *out, int n) {
  if (n <= 0) return;
  hl_subnormal_case *d_cases = nullptr;
  uint32_t *d_out = nullptr;
  const size_t case_bytes = sizeof *cases * (size_t)n, out_bytes = sizeof(uint32_t) * (size_t)n;
  cudaStream_t stream = hl_cuda_stream();
  HL_CUDA_CHECK(cudaMalloc(&d_cases, case_bytes));
  HL_CUDA_CHECK(cudaMalloc(&d_out, out_bytes));
  HL_CUDA_CHECK(cudaMemcpyAsync(d_cases, cases, case_bytes, cudaMemcpyHostToDevice, stream));
  subnormal_ftz_kernel<<<1, 32, 0, stream>>>(d_cases, d_out, n);
  HL_CUDA_CHECK_LAUNCH();
  HL_CUDA_CHECK(cudaMemcpyAsync(out, d_out, out_bytes, cudaMemcpyDeviceToHost, stream));
  HL_CUDA_CHECK(cudaStreamSynchronize(stream));
  HL_CUDA_CHECK(cudaFree(d_cases));
  HL_CUDA_CHECK(cudaFree(d_out));
}
