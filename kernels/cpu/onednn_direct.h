/* onednn_direct.h — oneDNN's bf16 matmul with nothing of halflab's around
 * it (hl_onednn_direct), for the benchmarks' reference variants. Public:
 * kernels/gemm_reference.h declares it; this name stays for the CPU
 * backend's own files (onednn_gemm.c defines it). Only in builds with oneDNN
 * (HL_HAVE_ONEDNN). */
#ifndef HL_CPU_ONEDNN_DIRECT_H
#define HL_CPU_ONEDNN_DIRECT_H

#include "kernels/gemm_reference.h"

#endif
