/* training_modes.c — the precision recipes the suite compares. */
#include "core/models/training_modes.h"

#include <string.h>

const hl_train_setup hl_train_setups[] = {
    {"fp32", HL_WEIGHTS_FP32, HL_DTYPE_NONE, false, HL_LOSS_SCALE_NONE, "fp32 weights, no autocast"},
    {"amp-fp16", HL_WEIGHTS_FP32, HL_F16, false, HL_LOSS_SCALE_DYNAMIC,
     "fp32 weights, fp16 autocast, dynamic loss scaling"},
    {"amp-bf16", HL_WEIGHTS_FP32, HL_BF16, false, HL_LOSS_SCALE_NONE, "fp32 weights, bf16 autocast, no scaler"},
    {"fp16-noscale", HL_WEIGHTS_FP32, HL_F16, false, HL_LOSS_SCALE_NONE, "fp32 weights, fp16 autocast, no scaler"},
    {"fp16-static", HL_WEIGHTS_FP32, HL_F16, false, HL_LOSS_SCALE_FIXED,
     "fp32 weights, fp16 autocast, fixed loss scale"},
    {"fp16-master", HL_WEIGHTS_FP16, HL_F16, true, HL_LOSS_SCALE_DYNAMIC,
     "fp16 model under fp16 autocast, fp32 master weights and gradients"},
    {"fp16-pure", HL_WEIGHTS_FP16, HL_DTYPE_NONE, false, HL_LOSS_SCALE_NONE,
     "fp16 weights, gradients and moments, no autocast, no scaler"},
};
const int hl_train_setup_count = sizeof hl_train_setups / sizeof hl_train_setups[0];

const hl_train_setup *hl_train_setup_find(const char *name) {
  for (int i = 0; name && i < hl_train_setup_count; i++)
    if (!strcmp(hl_train_setups[i].name, name)) return &hl_train_setups[i];
  return NULL;
}
