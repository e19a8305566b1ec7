/* host.h — the CPU a program runs on, as programs outside kernels/ may ask
 * about it: its half-precision units (and the HALFLAB_CPU_UNITS choice
 * among them), the libraries behind the CPU backend and their version lines
 * for the CSV metadata, and whole-array fp16/bf16 conversions on the CPU's
 * vector units. The backend folders (kernels/cpu/, kernels/cuda/) are
 * private to kernels/ (tools/check_layers.py); this header and
 * gemm_reference.h are what they show the programs. Defined in kernels/cpu/
 * (cpu_features.c, blas.c, onednn_gemm.c, half_arrays.c), whatever backend
 * a program computes on: the host is always a CPU. */
#ifndef HL_HOST_H
#define HL_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------ the CPU's features -- */
/* Read once with cpuid (and xgetbv for what the OS saves on a context
 * switch). A feature counts only when the OS has enabled its register
 * state: AVX-512 needs the opmask and ZMM state in XCR0, AMX needs the tile
 * state in XCR0 and, on Linux, a per-process permission (granted on request
 * through arch_prctl), which hl_cpu_features_get() asks for once. */
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

/* ---------------------------------------------------- the CPU's units -- */
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
/* The same units as words without commas, for a CSV cell: "f16c avx512_bf16" (in use), "portable"
 * (HALFLAB_CPU_UNITS=portable: none used) or "none" (the CPU has none). */
void hl_cpu_units_words(char *out, size_t len);

/* ------------------------------------------------------ the libraries -- */

/* The BLAS halflab opened (kernels/cpu/blas.h: it chooses OpenBLAS's kernel
 * set from the CPU's features before the library initialises). */
typedef struct {
  char library[512];   /* the file opened */
  char version[64];    /* "OpenBLAS 0.3.21", or "unknown" */
  char config[256];    /* openblas_get_config(), or "" */
  char kernels[64];    /* the kernel set that runs ("SkylakeX"), or "unknown" */
  char chosen_by[256]; /* who chose it, in words */
  bool generic;        /* a generic kernel set on a CPU with AVX2 or AVX-512 */
  char warning[320];   /* why `generic` matters, or "" */
  bool opened;         /* false in a build that runs no GEMM (-Dnumerics-only=true): `version` says so */
} hl_blas_info;

/* What was loaded and which kernels run (loads the library if needed; a
 * library that cannot be opened ends the process with file:line and
 * dlerror()'s text, exit status 1; while the process ends through hl_fatal
 * it loads nothing and says so in `version`). A build of halflab-numerics alone
 * (-Dnumerics-only=true) runs no GEMM and opens nothing here. */
const hl_blas_info *hl_blas_info_get(void);

/* For the CSV metadata (`# onednn:`): the version and what bf16 and fp16
 * GEMMs run on, or that oneDNN is not built in. */
void hl_onednn_line(char *out, size_t len);

/* ---------------------------------------------- array conversions -- */
/* fp16/bf16 <-> fp32 of whole arrays, bit for bit formats/half.h's
 * per-element functions, on the fastest path the CPU has that
 * hl_cpu_units_get() allows (kernels/cpu/half_arrays.h: F16C, AVX2,
 * AVX512-BF16, or portable C). Serial: callers split the work among their
 * threads. */
void hl_cpu_widen_f16(const uint16_t *src, float *dst, size_t n);
void hl_cpu_narrow_f16(const float *src, uint16_t *dst, size_t n);
void hl_cpu_widen_bf16(const uint16_t *src, float *dst, size_t n);
void hl_cpu_narrow_bf16(const float *src, uint16_t *dst, size_t n);
/* The same for t = HL_F16 or HL_BF16 (the type a loop carries at run time) */
void hl_cpu_widen(hl_dtype t, const uint16_t *src, float *dst, size_t n);
void hl_cpu_narrow(hl_dtype t, const float *src, uint16_t *dst, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* HL_HOST_H */
