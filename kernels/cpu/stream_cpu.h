/* stream_cpu.h — a switch of the CPU bandwidth kernels, for tests: where
 * they write with non-temporal (streaming) stores. */
#ifndef HL_STREAM_CPU_H
#define HL_STREAM_CPU_H

#include <stddef.h>

typedef enum {
  HL_CPU_STORES_AUTO = 0, /* streaming stores once the arrays a kernel touches exceed the last-level cache */
  HL_CPU_STORES_REGULAR,  /* never */
  HL_CPU_STORES_STREAMING /* always (where the CPU has AVX2 and the arrays are aligned) */
} hl_cpu_store_mode;

void hl_cpu_stream_set_stores(hl_cpu_store_mode mode);
/* The byte count above which AUTO streams (the last-level cache size) */
size_t hl_cpu_stream_nt_threshold(void);

#endif
