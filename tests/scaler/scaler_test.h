/* scaler_test.h — what the scaler, optimizer, clipping and checkpoint tests
 * share: checks with the core's messages, small tensors from host values on
 * any device, and the seven test vectors as functions of a device
 * (the unit suite runs them on the CPU, the gpu suite on CUDA). */
#ifndef HL_SCALER_TEST_H
#define HL_SCALER_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/base/error.h"
#include "core/training/optim.h"
#include "core/training/scaler.h"
#include "core/engine/tensor.h"
#include "tests/support/hltest.h"


/* A tensor of numel(s) values from v (NULL: all `fill`), rounded to dtype. */
hl_tensor *tensor_of(hl_shape s, const float *v, float fill, hl_dtype dtype, hl_device_kind dev);
/* The same as a named leaf that requires grad. */
hl_tensor *param_of(const char *name, hl_shape s, const float *v, float fill, hl_dtype dtype, hl_device_kind dev);
/* Element i (row-major) as f32. */
float value_at(const hl_tensor *t, int64_t i);
/* All elements as f32, malloc'd. */
float *values_of(const hl_tensor *t);
/* Bit patterns equal (f32/f16/bf16/f64 views, row-major)? */
bool same_bits(const hl_tensor *a, const hl_tensor *b);

/* Can the core run ops (mul, sum, mm, backward) on this device? */
bool device_has_tensor_ops(hl_device_kind dev);

/* The test vectors of docs/scaler.md. 1 and 2 need only the optimizer
 * kernels (they test the two building blocks); 3-7 run the scaler on real
 * losses and need the device's tensor ops too. */
void vector1_update_scale(hl_device_kind dev);
void vector1_scaler(hl_device_kind dev);
void vector2_unscale_views(hl_device_kind dev);
void vector3_scale(hl_device_kind dev);
void vector4_state(hl_device_kind dev);
void vector5_skip_and_backoff(hl_device_kind dev);
void vector6_no_overflow(hl_device_kind dev);
void vector7_accumulation(hl_device_kind dev);

#endif
