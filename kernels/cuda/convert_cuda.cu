/* convert_cuda.cu — the device's conversions and half arithmetic, one
 * element per thread, for comparison with the CPU twin (gpu suite). A
 * rounding spec takes the device's instruction where formats/round.h has one
 * for it (hl_round_bits_fast) and the generic rounding otherwise. */
#include "formats/fatal.h"
#include "kernels/convert_math.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_kernels.h"

__global__ void encode_kernel(hl_round_spec spec, uint32_t first, size_t n, void *out) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    hl_convert_one(&spec, first + (uint32_t)i, (uint64_t)first + i, out, i);
}

__global__ void decode_kernel(hl_dtype format, uint32_t first, size_t n, uint32_t *out) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = hl_decode_one(format, first + (uint32_t)i);
}

__global__ void binop_kernel(hl_dtype type, char op, const uint16_t *a, const uint16_t *b, uint16_t *out,
                             size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = hl_binop_one(type, op, a[i], b[i]);
}

static void cuda_encode_range(const hl_round_spec *spec, uint32_t first, size_t n, void *out) {
  if (!hl_round_spec_valid(spec)) hl_fatal("invalid rounding spec for %s", hl_dtype_format_name(spec->format));
  encode_kernel<<<hl_cuda_grid(n, 256), 256, 0, hl_cuda_stream()>>>(*spec, first, n, out);
  HL_CUDA_CHECK_LAUNCH();
}

static void cuda_decode_range(hl_dtype format, uint32_t first, size_t n, uint32_t *out) {
  decode_kernel<<<hl_cuda_grid(n, 256), 256, 0, hl_cuda_stream()>>>(format, first, n, out);
  HL_CUDA_CHECK_LAUNCH();
}

static void cuda_binop(hl_dtype type, char op, const uint16_t *a, const uint16_t *b, uint16_t *out, size_t n) {
  binop_kernel<<<hl_cuda_grid(n, 256), 256, 0, hl_cuda_stream()>>>(type, op, a, b, out, n);
  HL_CUDA_CHECK_LAUNCH();
}

extern "C" const struct hl_convert_kernels hl_cuda_convert_kernels = {
    cuda_encode_range,
    cuda_decode_range,
    cuda_binop,
};
