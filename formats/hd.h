/* hd.h — HL_HD marks a function that both the host compiler and nvcc
 * compile, for the CPU and for the GPU (element formulas written once,
 * kernels/tensor_math.h). HL_DEVICE_CODE is 1 in nvcc's device pass, where
 * a function may use the GPU's own instructions instead. */
#ifndef HL_HD_H
#define HL_HD_H

#ifdef __CUDACC__
#define HL_HD __host__ __device__
#else
#define HL_HD
#endif

#if defined(__CUDA_ARCH__)
#define HL_DEVICE_CODE 1
#else
#define HL_DEVICE_CODE 0
#endif

#endif
