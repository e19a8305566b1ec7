/* autocast.h — automatic mixed precision regions, as torch.autocast does
 * them (docs/core.md, Autocast):
 *
 *   HL_AUTOCAST(HL_DEVICE_CPU, HL_F16, true) {
 *     hl_tensor *e = hl_mm(a32, b32);          // runs in f16, gives f16
 *     HL_AUTOCAST(HL_DEVICE_CPU, HL_F16, false) {
 *       hl_tensor *f = hl_mm(c32, e32);        // inputs' own types
 *     }
 *   }
 *
 * A region has a device kind, a lower-precision dtype (HL_AUTOCAST_DEFAULT:
 * f16 on cuda, bf16 on cpu; either may be asked) and an enabled flag.
 * Regions nest and are per thread. Inside an enabled region each op
 * applies its policy from the registry (core/engine/registry.h) to its eligible
 * inputs — float tensors on the region's device that are not f64; f64,
 * integer and other-device tensors pass through untouched:
 *   lower precision  mm, bmm, matmul, linear
 *   fp32             exp, log, pow, sum, softmax, log_softmax, layer_norm,
 *                    mse_loss, cross_entropy
 *   promote          cat (widest input type)
 *   input types      everything else (add, mul, relu, gelu, mean, views ...)
 * The casts are ordinary differentiable `to` ops, so backward runs in the
 * dtype autocast chose for the forward and the cast's backward converts
 * the gradient back (an f32 weight used by an f16 mm gets an f16 gradient,
 * then an f32 one: fp16 underflow happens exactly there).
 *
 * Cast cache: casts of f32 leaf tensors that require grad (the weights) to
 * the lower dtype are kept until the outermost region exits, so a weight
 * is converted once per forward however often it is used. Backward runs
 * with autocast off (the engine suspends every region); custom ops
 * (custom_op.h) restore their forward's state around their backward.
 */
#ifndef HL_AUTOCAST_H
#define HL_AUTOCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "The device's default lower-precision dtype": f16 on cuda, bf16 on cpu. */
#define HL_AUTOCAST_DEFAULT HL_DTYPE_NONE

/* false with hl_error when dtype is not f16, bf16 or the default, or
 * regions nest deeper than 64. */
bool hl_autocast_enter(hl_device_kind device, hl_dtype lower, bool enabled);
/* Leaves the innermost region (clearing the cast cache when it was the
 * outermost). false with hl_error when no region is open. */
bool hl_autocast_exit(void);

/* Is autocast on for ops on `device` here (innermost region for that
 * device enabled)? And its lower dtype (the default when no region). */
bool hl_autocast_enabled(hl_device_kind device);
hl_dtype hl_autocast_dtype(hl_device_kind device);
hl_dtype hl_autocast_default_dtype(hl_device_kind device);
int hl_autocast_depth(void); /* open regions on this thread */

/* Counters for tests and teaching, per thread and never reset: conversions
 * autocast actually ran (one per cache miss or uncacheable cast), the cache
 * misses among them (weight casts made and cached), cache hits (weight
 * casts answered from the cache), entries now cached. The cache's hit rate
 * is hits / (hits + misses); conversions - misses are the casts it never
 * keeps (activations, casts under no-grad). */
uint64_t hl_autocast_conversions(void);
uint64_t hl_autocast_cache_misses(void);
uint64_t hl_autocast_cache_hits(void);
int hl_autocast_cache_size(void);

/* ---------------------------------------------------------- scoped forms -- */

typedef struct {
  bool entered; /* region open (exit at scope end) */
  bool once;    /* the block runs once */
} hl_autocast_guard;

static inline hl_autocast_guard hl_autocast_guard_enter_(hl_device_kind d, hl_dtype t, bool enabled) {
  hl_autocast_guard g;
  g.entered = hl_autocast_enter(d, t, enabled);
  g.once = g.entered;
  return g;
}

static inline void hl_autocast_guard_exit_(hl_autocast_guard *g) {
  if (g->entered) hl_autocast_exit();
}

/* The block runs inside a region; the region closes however the block is
 * left (end, break, return; `cleanup` is a GCC/Clang feature). If the
 * region cannot be entered (bad dtype) the block is skipped and hl_error()
 * says why. */
#define HL_AUTOCAST(device, dtype, enabled)                                                              \
  for (hl_autocast_guard hl_autocast_guard_ __attribute__((cleanup(hl_autocast_guard_exit_))) =          \
           hl_autocast_guard_enter_((device), (dtype), (enabled));                                       \
       hl_autocast_guard_.once; hl_autocast_guard_.once = false)

/* The decorator: defines `ret name params` that calls `impl args` inside
 * an enabled region, e.g.
 *   HL_AUTOCAST_FN(hl_tensor *, mlp_forward, (mlp *m, hl_tensor *x), (m, x),
 *                  mlp_forward_fp32, HL_DEVICE_CPU, HL_AUTOCAST_DEFAULT)
 * ret must be a pointer or arithmetic type (0 when the region fails). */
#define HL_AUTOCAST_FN(ret, name, params, args, impl, device, dtype) \
  ret name params {                                                  \
    HL_AUTOCAST(device, dtype, true) { return impl args; }           \
    return 0;                                                        \
  }

/* ------------------------------------------------- state (custom ops) -- */

typedef struct {
  bool enabled[HL_DEVICE_KINDS];
  hl_dtype dtype[HL_DEVICE_KINDS];
} hl_autocast_state;

hl_autocast_state hl_autocast_get_state(void);
/* Push a region per device reproducing `s` (internal: not counted for
 * the cache), and pop it again. */
void hl_autocast_push_state(const hl_autocast_state *s);
void hl_autocast_pop_state(void);

#ifdef __cplusplus
}
#endif

#endif
