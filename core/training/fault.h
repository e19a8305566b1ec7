/* fault.h — fault injection for teaching and tests: make a gradient inf or
 * NaN at chosen steps and watch the scaler skip exactly those steps and
 * back off.
 *
 *   hl_step_set steps;
 *   if (!hl_step_set_parse("3,7,10-12", &steps)) hl_usage_error("--inject: %s", hl_error());
 *   ...
 *   hl_backward(scaled_loss, NULL, false);
 *   if (hl_step_set_has(&steps, step))
 *     hl_fault_poison(hl_tensor_grad(w), 0, HL_FAULT_INF);   // any device, any float dtype
 *   hl_scaler_step(scaler, opt, &skipped, NULL);             // skipped == true
 *
 * Steps are counted from 1 (the first optimizer step is step 1).
 */
#ifndef HL_FAULT_H
#define HL_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HL_STEP_SET_MAX 64

/* A set of steps as ranges [lo, hi], sorted, not overlapping. */
typedef struct {
  int n;
  int64_t lo[HL_STEP_SET_MAX], hi[HL_STEP_SET_MAX];
} hl_step_set;

/* "3,7,10-12": comma-separated steps (>= 1) and ranges lo-hi (lo <= hi);
 * "" or "none" is the empty set. false with hl_error() naming the bad item
 * (out of is left empty). */
bool hl_step_set_parse(const char *text, hl_step_set *out);
bool hl_step_set_has(const hl_step_set *s, int64_t step);
int64_t hl_step_set_count(const hl_step_set *s); /* number of steps */
/* "3,7,10-12" (canonical form) into buf. */
const char *hl_step_set_format(const hl_step_set *s, char *buf, size_t len);

typedef enum { HL_FAULT_INF = 0, HL_FAULT_NEG_INF, HL_FAULT_NAN } hl_fault_kind;

/* "inf", "-inf", "nan". */
bool hl_fault_kind_parse(const char *text, hl_fault_kind *out);
const char *hl_fault_kind_name(hl_fault_kind k);

/* Element `index` (row-major in t's shape, negative counts from the end)
 * of a float tensor becomes inf, -inf or NaN, on any device and through
 * any strides. */
bool hl_fault_poison(hl_tensor *t, int64_t index, hl_fault_kind kind);

#ifdef __cplusplus
}
#endif

#endif
