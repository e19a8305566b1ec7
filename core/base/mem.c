/* mem.c — byte counters around the backends' allocators. */
#include "core/base/mem.h"

#include <stdatomic.h>
#include <stdio.h>

#include "core/base/device.h"

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

const char *hl_format_bytes(uint64_t bytes, char *buf, size_t len) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) v /= 1024.0, u++;
  snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", v, unit[u]);
  return buf;
}
