/* autocast.c — the per-thread region stack, the cast cache and the casts
 * the dispatcher asks for. */
#include "core/engine/autocast.h"

#include <stdlib.h>

#include "formats/fatal.h"
#include "core/engine/autograd.h"
#include "core/engine/dispatch.h"
#include "core/engine/ops.h"
#include "core/engine/tensor_internal.h"

#define MAX_REGIONS 64

typedef struct {
  hl_device_kind device;
  hl_dtype dtype;
  bool enabled;
  bool internal; /* pushed by the engine / custom ops, not by the program */
} region;

typedef struct {
  hl_tensor *source; /* retained: keeps the pointer from being reused while cached */
  hl_tensor *cast;
} cache_entry;

static _Thread_local region stack_[MAX_REGIONS];
static _Thread_local int depth_, user_depth_;
static _Thread_local cache_entry *cache_;
static _Thread_local int cache_n_, cache_cap_;
static _Thread_local uint64_t conversions_, misses_, hits_;

hl_dtype hl_autocast_default_dtype(hl_device_kind device) { return device == HL_DEVICE_CUDA ? HL_F16 : HL_BF16; }

static void cache_clear(void) {
  for (int i = 0; i < cache_n_; i++) {
    hl_release(cache_[i].cast);
    hl_release(cache_[i].source);
  }
  free(cache_);
  cache_ = NULL;
  cache_n_ = cache_cap_ = 0;
}

bool hl_autocast_enter(hl_device_kind device, hl_dtype lower, bool enabled) {
  if ((unsigned)device >= HL_DEVICE_KINDS) return hl_fail_bool("autocast: unknown device kind %d", (int)device);
  if (lower == HL_AUTOCAST_DEFAULT) lower = hl_autocast_default_dtype(device);
  if (lower != HL_F16 && lower != HL_BF16)
    return hl_fail_bool("autocast: the lower-precision dtype must be f16 or bf16, not %s", hl_dtype_name(lower));
  if (depth_ == MAX_REGIONS) return hl_fail_bool("autocast: regions nested deeper than %d", MAX_REGIONS);
  stack_[depth_++] = (region){device, lower, enabled, false};
  user_depth_++;
  return true;
}

bool hl_autocast_exit(void) {
  if (depth_ == 0 || stack_[depth_ - 1].internal) return hl_fail_bool("autocast: exit without a matching enter");
  depth_--;
  if (--user_depth_ == 0) cache_clear();
  return true;
}

static const region *innermost(hl_device_kind device) {
  for (int i = depth_ - 1; i >= 0; i--)
    if (stack_[i].device == device) return &stack_[i];
  return NULL;
}

bool hl_autocast_enabled(hl_device_kind device) {
  const region *r = innermost(device);
  return r && r->enabled;
}

hl_dtype hl_autocast_dtype(hl_device_kind device) {
  const region *r = innermost(device);
  return r ? r->dtype : hl_autocast_default_dtype(device);
}

int hl_autocast_depth(void) { return user_depth_; }
uint64_t hl_autocast_conversions(void) { return conversions_; }
uint64_t hl_autocast_cache_misses(void) { return misses_; }
uint64_t hl_autocast_cache_hits(void) { return hits_; }
int hl_autocast_cache_size(void) { return cache_n_; }

hl_autocast_state hl_autocast_get_state(void) {
  hl_autocast_state s;
  for (int d = 0; d < HL_DEVICE_KINDS; d++) {
    s.enabled[d] = hl_autocast_enabled((hl_device_kind)d);
    s.dtype[d] = hl_autocast_dtype((hl_device_kind)d);
  }
  return s;
}

void hl_autocast_push_state(const hl_autocast_state *s) {
  /* internal regions may exceed MAX_REGIONS only through runaway recursion: stop there */
  if (depth_ + HL_DEVICE_KINDS > MAX_REGIONS)
    hl_fatal("autocast: more than %d nested regions (runaway recursion?)", MAX_REGIONS / HL_DEVICE_KINDS);
  for (int d = 0; d < HL_DEVICE_KINDS; d++)
    stack_[depth_++] = (region){(hl_device_kind)d, s->dtype[d], s->enabled[d], true};
}

void hl_autocast_pop_state(void) {
  for (int d = 0; d < HL_DEVICE_KINDS && depth_ > 0 && stack_[depth_ - 1].internal; d++) depth_--;
}

/* The dispatcher's cast of one eligible input. Weights (f32 leaves that
 * require grad) going to the lower dtype are cached while grad mode is on:
 * a cast made under no-grad has no history and must not be reused where
 * gradients are wanted. */
hl_tensor *hl_autocast_cast(hl_tensor *t, hl_dtype to) {
  if (t->dtype == to) return hl_retain(t);
  /* only inside a program's region: the cache is emptied when its outermost region exits */
  const bool cacheable = user_depth_ > 0 && t->dtype == HL_F32 && to == hl_autocast_dtype(t->device) &&
                         t->requires_grad && !t->grad_fn && hl_grad_enabled();
  if (cacheable) {
    for (int i = 0; i < cache_n_; i++)
      if (cache_[i].source == t && cache_[i].cast->dtype == to) {
        hits_++;
        if (hl_op_tracing()) hl_op_trace_line("%-12s in %s -> %s  (autocast cast, from the cache)", "to",
                                              hl_desc(t), hl_desc(cache_[i].cast));
        return hl_retain(cache_[i].cast);
      }
  }
  hl_dispatch_set_note(cacheable ? "autocast cast, cached" : "autocast cast");
  hl_tensor *r = hl_to_dtype(t, to);
  hl_dispatch_set_note(NULL);
  if (!r) return NULL;
  conversions_++;
  if (cacheable) {
    misses_++; /* a weight cast the cache did not have (counted even when no room is left to keep it) */
    if (cache_n_ == cache_cap_) {
      int cap = cache_cap_ ? cache_cap_ * 2 : 16;
      cache_entry *c = realloc(cache_, sizeof *c * (size_t)cap);
      if (!c) return r; /* no room to cache: still correct, just converted again next time */
      cache_ = c;
      cache_cap_ = cap;
    }
    cache_[cache_n_++] = (cache_entry){hl_retain(t), hl_retain(r)};
  }
  return r;
}
