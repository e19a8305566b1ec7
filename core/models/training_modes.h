/* training_modes.h — the precision recipes of a training step that the suite
 * compares: fp32; autocast to fp16 (with dynamic, fixed or no loss scaling)
 * or bf16 over fp32 weights; an fp16 model with fp32 master weights; and
 * pure fp16. Training runs and the memory accounting (nn.h) both read them. */
#ifndef HL_TRAINING_MODES_H
#define HL_TRAINING_MODES_H

#include <stdbool.h>

#include "core/models/weight_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The loss scaler a training mode runs with. */
typedef enum { HL_LOSS_SCALE_NONE, HL_LOSS_SCALE_DYNAMIC, HL_LOSS_SCALE_FIXED } hl_loss_scaling;

/* A precision recipe: how the weights are stored, the forward's autocast,
 * master weights and loss scaling. */
typedef struct {
  const char *name;         /* "fp32", "amp-fp16", ... */
  hl_weight_policy weights; /* the model's parameters (and gradients) */
  hl_dtype autocast;        /* lower dtype of the forward's autocast region; HL_DTYPE_NONE: none */
  bool master;              /* fp32 master weights and fp32 master gradients beside the model's */
  hl_loss_scaling scaling;
  const char *what;
} hl_train_setup;

/* The seven the suite compares, by name: fp32, amp-fp16, amp-bf16,
 * fp16-noscale, fp16-static, fp16-master, fp16-pure (the last two with an
 * fp16 model). NULL when unknown. */
const hl_train_setup *hl_train_setup_find(const char *name);
extern const hl_train_setup hl_train_setups[];
extern const int hl_train_setup_count;

#ifdef __cplusplus
}
#endif

#endif
