/* cpu_kernels.h — the CPU backend's kernel tables, one per family, each
 * defined in its family's file (probe_cpu.c, stream_cpu.c, ...) and
 * gathered into the backend in backend_cpu.c. */
#ifndef HL_CPU_KERNELS_H
#define HL_CPU_KERNELS_H

#include "kernels/gemm.h"
#include "kernels/gemm_reference.h"

extern const struct hl_probe_kernels hl_cpu_probe_kernels;
extern const struct hl_stream_kernels hl_cpu_stream_kernels;
extern const struct hl_gemm_kernels hl_cpu_gemm_kernels;
extern const struct hl_tensor_kernels hl_cpu_tensor_kernels;
extern const struct hl_optim_kernels hl_cpu_optim_kernels;
extern const struct hl_convert_kernels hl_cpu_convert_kernels;
extern const struct hl_quantize_kernels hl_cpu_quantize_kernels;

/* The CPU's GEMM without oneDNN, hl_cpu_gemm_blas (gemm_cpu.c), is public:
 * kernels/gemm_reference.h. Tests hold oneDNN's results to it. */

/* The fp32 working copies hl_cpu_gemm_blas keeps for the calling thread
 * between calls: their bytes (what malloc was asked for), and their release
 * (they are otherwise freed when the thread exits). tests/gemm holds the
 * copies to the bounds gemm_cpu.c states. */
size_t hl_cpu_gemm_working_bytes(void);
void hl_cpu_gemm_release_working(void);

#endif
