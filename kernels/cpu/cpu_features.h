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

/* Which of the CPU's half-precision units halflab's kernels use: every one
 * the CPU has (the default), or none when HALFLAB_CPU_UNITS=portable, so
 * that the portable C paths (software conversions, half GEMMs widened to
 * fp32) run, and are tested, on any CPU. A kernel asks here, never cpuid
 * itself. HALFLAB_CPU_UNITS=all is the default spelled out; any other value
 * stops the program with exit status 2 on the first call (programs make it
 * at start-up, cli.h's hl_cli_init, before writing anything). */
typedef struct {
  bool portable;     /* HALFLAB_CPU_UNITS=portable */
  bool f16c;         /* fp16 <-> fp32 conversions (vcvtph2ps / vcvtps2ph) */
  bool avx512_bf16;  /* fp32 -> bf16 rounding (vcvtneps2bf16), bf16 dot products */
  bool avx512_fp16;  /* fp16 arithmetic and conversions on ZMM registers */
  bool amx_bf16;     /* bf16 tile products (the OS's permission included) */
} hl_cpu_units;

const hl_cpu_units *hl_cpu_units_get(void);

/* For the CSV metadata: "f16c, avx512_bf16" (the units in use), "none of
 * f16c, ... (HALFLAB_CPU_UNITS=portable)", or "none (the CPU has no
 * half-precision unit)". */
void hl_cpu_units_line(char *out, size_t len);

#endif
