/* cuda_kernels.h — the CUDA backend's kernel tables, one per family, each
 * defined in its family's file (probe_cuda.cu, stream_cuda.cu, ...) and
 * gathered into the backend in backend_cuda.cu. */
#ifndef HL_CUDA_KERNELS_H
#define HL_CUDA_KERNELS_H

extern "C" const struct hl_probe_kernels hl_cuda_probe_kernels;
extern "C" const struct hl_stream_kernels hl_cuda_stream_kernels;
extern "C" const struct hl_gemm_kernels hl_cuda_gemm_kernels;
extern "C" const struct hl_tensor_kernels hl_cuda_tensor_kernels;
extern "C" const struct hl_optim_kernels hl_cuda_optim_kernels;
extern "C" const struct hl_convert_kernels hl_cuda_convert_kernels;
extern "C" const struct hl_quantize_kernels hl_cuda_quantize_kernels;
#ifdef HL_HAVE_NCCL
extern "C" const struct hl_comm_kernels hl_cuda_comm_kernels; /* comm_nccl.cu */
#endif

#endif
