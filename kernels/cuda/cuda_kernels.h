/* cuda_kernels.h — which kernel families the CUDA backend has. Each family's
 * file defines its table and turns its macro from NULL into the table. */
#ifndef HL_CUDA_KERNELS_H
#define HL_CUDA_KERNELS_H

extern "C" const struct hl_probe_kernels hl_cuda_probe_kernels;
#define HL_CUDA_PROBE_KERNELS (&hl_cuda_probe_kernels)
extern "C" const struct hl_stream_kernels hl_cuda_stream_kernels;
#define HL_CUDA_STREAM_KERNELS (&hl_cuda_stream_kernels)
extern "C" const struct hl_gemm_kernels hl_cuda_gemm_kernels;
#define HL_CUDA_GEMM_KERNELS (&hl_cuda_gemm_kernels)
extern "C" const struct hl_tensor_kernels hl_cuda_tensor_kernels;
#define HL_CUDA_TENSOR_KERNELS (&hl_cuda_tensor_kernels)
extern "C" const struct hl_optim_kernels hl_cuda_optim_kernels;
#define HL_CUDA_OPTIM_KERNELS (&hl_cuda_optim_kernels)

extern "C" const struct hl_convert_kernels hl_cuda_convert_kernels;

#endif
