/* mem.c — byte counters around the backends' allocators. */
#include "amp/mem.h"

#include <stdatomic.h>

#include "amp/device.h"

static _Atomic uint64_t current_[HL_DEVICE_KINDS], peak_[HL_DEVICE_KINDS], allocs_[HL_DEVICE_KINDS],
    total_[HL_DEVICE_KINDS];

void *hl_mem_alloc(hl_device_kind dev, size_t bytes) {
  const hl_backend *b = hl_backend_for(dev);
  if (!b) return NULL;
  void *p = b->alloc(bytes);
  if (!p) return NULL;
  uint64_t now = atomic_fetch_add(&current_[dev], bytes) + bytes;
  uint64_t peak = atomic_load(&peak_[dev]);
  while (now > peak && !atomic_compare_exchange_weak(&peak_[dev], &peak, now)) {
  }
  atomic_fetch_add(&allocs_[dev], 1);
  atomic_fetch_add(&total_[dev], bytes);
  return p;
}

void hl_mem_free(hl_device_kind dev, void *p, size_t bytes) {
  if (!p) return;
  hl_backend_for(dev)->free(p);
  atomic_fetch_sub(&current_[dev], bytes);
}

hl_mem_stats hl_mem_get_stats(hl_device_kind dev) {
  hl_mem_stats s = {atomic_load(&current_[dev]), atomic_load(&peak_[dev]), atomic_load(&allocs_[dev]),
                    atomic_load(&total_[dev])};
  return s;
}

void hl_mem_reset_peak(hl_device_kind dev) { atomic_store(&peak_[dev], atomic_load(&current_[dev])); }
