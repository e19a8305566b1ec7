/* vector_clones.h — HL_VECTOR_CLONES: a function compiled for several x86
 * ISAs (target_clones, chosen once per process by the loader), for the CPU
 * kernels' innermost loops. The library is built for baseline x86-64;
 * AVX-512 doubles what SSE2 gets from exp, GELU or a sum of squares. The
 * build does not contract a*b+c (ISO C17) and floating-point sums are not
 * reordered, so every clone rounds the same way: results do not depend on
 * the machine's ISA. */
#ifndef HL_CPU_VECTOR_CLONES_H
#define HL_CPU_VECTOR_CLONES_H

/* Clones by ISA feature, not arch=: an arch= clone is chosen only on that
 * very CPU model (a Sapphire Rapids never takes "arch=skylake-avx512").
 * None under AddressSanitizer or ThreadSanitizer: the loader runs the clones'
 * resolvers before the sanitizer's runtime is set up, and their
 * instrumented code then crashes at start. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define HL_VECTOR_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define HL_VECTOR_CLONES
#endif

#endif
