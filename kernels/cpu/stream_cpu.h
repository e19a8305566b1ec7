/* stream_cpu.h — switches of the CPU bandwidth kernels, for tests: where
 * they write with non-temporal (streaming) stores, and which loops (which
 * conversions) they run for each element type. */
#ifndef HL_STREAM_CPU_H
#define HL_STREAM_CPU_H

#include <stdbool.h>
#include <stddef.h>

#include "formats/dtype.h"
#include "kernels/cpu/half_arrays.h"

typedef enum {
  HL_CPU_STORES_AUTO = 0, /* streaming stores once the arrays a kernel touches exceed the last-level cache */
  HL_CPU_STORES_REGULAR,  /* never */
  HL_CPU_STORES_STREAMING /* always (in the vector loops, where the output is aligned to a vector) */
} hl_cpu_store_mode;

void hl_cpu_stream_set_stores(hl_cpu_store_mode mode);
/* The byte count above which AUTO streams (the last-level cache size) */
size_t hl_cpu_stream_nt_threshold(void);

/* The loops the kernels run for t (fp32, fp16 or bf16). Chosen on first
 * use: fp16 and bf16 take hl_cpu_half_path_chosen(t), fp32 the avx2 loops
 * where the CPU has AVX2, else the portable ones. */
hl_cpu_half_path hl_cpu_stream_path(hl_dtype t);
/* Makes the kernels run path p for t from now on; false, changing nothing,
 * where this CPU cannot run it or there are no such loops (fp32 has
 * portable and avx2 loops only). */
bool hl_cpu_stream_set_path(hl_dtype t, hl_cpu_half_path p);

#endif
