/* mem.h — the accounting allocator. Every tensor, benchmark buffer and
 * optimizer state goes through it, so that current and peak bytes per device
 * are known exactly (the footprint benchmark and the training runs report them). */
#ifndef HL_MEM_H
#define HL_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint64_t current;   /* bytes live now */
  uint64_t peak;      /* high-water mark since start or the last reset */
  uint64_t allocs;    /* number of allocations so far */
  uint64_t total;     /* bytes ever allocated */
} hl_mem_stats;

/* NULL when the device is out of memory (nothing is counted then). */
void *hl_mem_alloc(hl_device_kind dev, size_t bytes);
/* bytes must be what was asked of hl_mem_alloc. */
void hl_mem_free(hl_device_kind dev, void *p, size_t bytes);
hl_mem_stats hl_mem_get_stats(hl_device_kind dev);
void hl_mem_reset_peak(hl_device_kind dev);

/* "1.50 GiB": for messages and listings */
const char *hl_format_bytes(uint64_t bytes, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
