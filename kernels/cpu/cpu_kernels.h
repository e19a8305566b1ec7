/* cpu_kernels.h — which kernel families the CPU backend has. Each family's
 * file defines its table and turns its macro from NULL into the table. */
#ifndef HL_CPU_KERNELS_H
#define HL_CPU_KERNELS_H

extern const struct hl_probe_kernels hl_cpu_probe_kernels;
#define HL_CPU_PROBE_KERNELS (&hl_cpu_probe_kernels)
extern const struct hl_stream_kernels hl_cpu_stream_kernels;
#define HL_CPU_STREAM_KERNELS (&hl_cpu_stream_kernels)
extern const struct hl_gemm_kernels hl_cpu_gemm_kernels;
#define HL_CPU_GEMM_KERNELS (&hl_cpu_gemm_kernels)
extern const struct hl_tensor_kernels hl_cpu_tensor_kernels;
#define HL_CPU_TENSOR_KERNELS (&hl_cpu_tensor_kernels)
extern const struct hl_optim_kernels hl_cpu_optim_kernels;
#define HL_CPU_OPTIM_KERNELS (&hl_cpu_optim_kernels)

extern const struct hl_convert_kernels hl_cpu_convert_kernels;

#endif
