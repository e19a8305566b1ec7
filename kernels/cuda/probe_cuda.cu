/* probe_cuda.cu — the numerics probes on the GPU: kernels that call the
 * HL_HD bodies of kernels/probe_math.h, where formats/half.h maps every fp16,
 * bf16 and fp8 operation to the hardware's own instruction.
 *
 * The sums, the lost-update experiment and the harmonic series are chains
 * of dependent operations: one thread runs one chain (one thread per
 * strategy), exactly as the CPU loop does; parallelism would change nothing
 * in them but the order of the operations, which is what they show. The
 * element-wise probes are grid-stride loops. */
#include <stdlib.h>

#include "kernels/backend.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/probe.h"
#include "kernels/probe_math.h"

/* kernels/cuda/probe_ftz.cu, compiled with -ftz=true */
extern "C" void hl_cuda_subnormals_ftz(const hl_subnormal_case *cases, uint32_t *out, int n);

namespace {

/* Device buffer holding a copy of host data, freed at scope exit. */
struct device_buffer {
  void *p = nullptr;
  size_t bytes = 0;
  explicit device_buffer(size_t n) : bytes(n ? n : 1) { HL_CUDA_CHECK(cudaMalloc(&p, bytes)); }
  device_buffer(const void *host, size_t n) : device_buffer(n) {
    if (n) HL_CUDA_CHECK(cudaMemcpyAsync(p, host, n, cudaMemcpyHostToDevice, hl_cuda_stream()));
  }
  ~device_buffer() { HL_CUDA_CHECK(cudaFree(p)); }
  void to_host(void *host, size_t n) const {
    HL_CUDA_CHECK(cudaMemcpyAsync(host, p, n, cudaMemcpyDeviceToHost, hl_cuda_stream()));
    HL_CUDA_CHECK(cudaStreamSynchronize(hl_cuda_stream()));
  }
  template <class T> T *as() const { return static_cast<T *>(p); }
  device_buffer(const device_buffer &) = delete;
  device_buffer &operator=(const device_buffer &) = delete;
};

__global__ void sum_kernel(float value, uint64_t count, const uint64_t *sample_at, int nsamples, hl_sum_outcome *out,
                           double *trajectory) {
  int s = threadIdx.x;
  if (s < HL_SUM_STRATEGIES)
    hl_sum_run((hl_sum_strategy)s, value, count, sample_at, nsamples, &out[s], trajectory + (size_t)s * nsamples);
}

__global__ void arith_kernel(hl_arith_op op, hl_arith_mode mode, hl_dtype fmt, const float *a, const float *b,
                             uint32_t *out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = hl_probe_arith(op, mode, fmt, a[i], b[i]);
}

__global__ void convert_kernel(hl_dtype fmt, int saturate, const float *x, uint32_t *out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = hl_probe_encode(fmt, x[i], saturate);
}

__global__ void update_kernel(hl_update_params p, uint32_t *final_bits, double *trajectory) {
  int s = threadIdx.x;
  if (s < HL_UPDATE_STRATEGIES)
    final_bits[s] = hl_update_run((hl_update_strategy)s, &p, trajectory + (size_t)s * hl_update_samples(&p));
}

__global__ void harmonic_kernel(hl_dtype fmt, uint64_t max_terms, hl_harmonic_outcome *out) {
  if (threadIdx.x == 0) hl_harmonic_run(fmt, max_terms, out);
}

__global__ void subnormal_kernel(const hl_subnormal_case *cases, uint32_t *out, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = hl_subnormal_case_run(&cases[i]);
}

void cuda_sum(float value, uint64_t count, const uint64_t *sample_at, int nsamples,
              hl_sum_outcome out[HL_SUM_STRATEGIES], double *trajectory) {
  const size_t traj_bytes = sizeof(double) * (size_t)HL_SUM_STRATEGIES * (size_t)nsamples;
  device_buffer d_samples(sample_at, sizeof(uint64_t) * (size_t)nsamples);
  device_buffer d_out(sizeof(hl_sum_outcome) * HL_SUM_STRATEGIES), d_traj(traj_bytes);
  sum_kernel<<<1, 32, 0, hl_cuda_stream()>>>(value, count, d_samples.as<uint64_t>(), nsamples,
                                             d_out.as<hl_sum_outcome>(), d_traj.as<double>());
  HL_CUDA_CHECK_LAUNCH();
  d_out.to_host(out, sizeof(hl_sum_outcome) * HL_SUM_STRATEGIES);
  d_traj.to_host(trajectory, traj_bytes);
}

void cuda_arith(hl_arith_op op, hl_arith_mode mode, hl_dtype fmt, const float *a, const float *b, uint32_t *out,
                size_t n) {
  if (n == 0) return;
  device_buffer d_a(a, n * sizeof(float)), d_b(b, n * sizeof(float)), d_out(n * sizeof(uint32_t));
  arith_kernel<<<hl_cuda_grid(n, 256), 256, 0, hl_cuda_stream()>>>(op, mode, fmt, d_a.as<float>(), d_b.as<float>(),
                                                                  d_out.as<uint32_t>(), n);
  HL_CUDA_CHECK_LAUNCH();
  d_out.to_host(out, n * sizeof(uint32_t));
}

void cuda_convert(hl_dtype fmt, hl_overflow ov, const float *x, uint32_t *out, size_t n) {
  if (n == 0) return;
  device_buffer d_x(x, n * sizeof(float)), d_out(n * sizeof(uint32_t));
  convert_kernel<<<hl_cuda_grid(n, 256), 256, 0, hl_cuda_stream()>>>(fmt, ov == HL_OVERFLOW_SATURATE, d_x.as<float>(),
                                                                    d_out.as<uint32_t>(), n);
  HL_CUDA_CHECK_LAUNCH();
  d_out.to_host(out, n * sizeof(uint32_t));
}

void cuda_update(const hl_update_params *p, uint32_t final_bits[HL_UPDATE_STRATEGIES], double *trajectory) {
  const size_t traj_bytes = sizeof(double) * HL_UPDATE_STRATEGIES * hl_update_samples(p);
  device_buffer d_final(sizeof(uint32_t) * HL_UPDATE_STRATEGIES), d_traj(traj_bytes);
  update_kernel<<<1, 32, 0, hl_cuda_stream()>>>(*p, d_final.as<uint32_t>(), d_traj.as<double>());
  HL_CUDA_CHECK_LAUNCH();
  d_final.to_host(final_bits, sizeof(uint32_t) * HL_UPDATE_STRATEGIES);
  d_traj.to_host(trajectory, traj_bytes);
}

void cuda_harmonic(hl_dtype fmt, uint64_t max_terms, hl_harmonic_outcome *out) {
  device_buffer d_out(sizeof *out);
  harmonic_kernel<<<1, 1, 0, hl_cuda_stream()>>>(fmt, max_terms, d_out.as<hl_harmonic_outcome>());
  HL_CUDA_CHECK_LAUNCH();
  d_out.to_host(out, sizeof *out);
}

bool cuda_subnormals(int variant, const hl_subnormal_case *cases, uint32_t *out, int n) {
  if (variant == 1) {
    hl_cuda_subnormals_ftz(cases, out, n);
    return true;
  }
  if (variant != 0) return false;
  if (n <= 0) return true;
  device_buffer d_cases(cases, sizeof *cases * (size_t)n), d_out(sizeof(uint32_t) * (size_t)n);
  subnormal_kernel<<<1, 32, 0, hl_cuda_stream()>>>(d_cases.as<hl_subnormal_case>(), d_out.as<uint32_t>(), n);
  HL_CUDA_CHECK_LAUNCH();
  d_out.to_host(out, sizeof(uint32_t) * (size_t)n);
  return true;
}

}  // namespace

extern "C" const hl_probe_kernels hl_cuda_probe_kernels = {
    cuda_sum,
    cuda_arith,
    cuda_convert,
    cuda_update,
    cuda_harmonic,
    cuda_subnormals,
    {"nvcc default (-ftz=false)", "nvcc -ftz=true"},
};
