/* cpu_features.h — what this CPU's instruction set offers half precision,
 * read once with cpuid (and xgetbv for what the OS saves on a context
 * switch), in one place for every CPU kernel, the BLAS loader and the CSV
 * metadata. A feature counts only when the OS has enabled its register
 * state: AVX-512 needs the opmask and ZMM state in XCR0, AMX needs the tile
 * state in XCR0 and, on Linux, a per-process permission (granted on request
 * through arch_prctl), which hl_cpu_features() asks for once. */
#ifndef HL_CPU_FEATURES_H
#define HL_CPU_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  char vendor[13];  /* "GenuineIntel", "AuthenticAMD", "" off x86 */
  int family, model; /* display family and model, as /proc/cpuinfo shows them */
  bool fma, f16c, avx, avx2;
  bool avx512f, avx512bw, avx512vl, avx512dq, avx512cd; /* the set every AVX-512 BLAS kernel needs */
  bool avx512_bf16, avx512_fp16;
  bool amx_tile, amx_bf16, amx_fp16; /* what cpuid reports */
  bool amx_os_granted;               /* the OS let this process use the tile registers */
  char amx_note[96];                 /* why amx_os_granted is false, when AMX is there */
} hl_cpu_features;

/* The features of the CPU this process runs on (detected on the first call;
 * thread-safe). Off x86-64 every flag is false. */
const hl_cpu_features *hl_cpu_features_get(void);

/* AVX-512 as the BLAS kernels use it: F, BW, VL, DQ and CD, with OS support. */
bool hl_cpu_has_avx512(const hl_cpu_features *f);

/* One line for the CSV metadata: "fma yes, f16c yes, ..., amx_fp16 no;
 * AMX tile state: not granted (why)". */
void hl_cpu_features_line(const hl_cpu_features *f, char *out, size_t len);

#endif
