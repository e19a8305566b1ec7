/* bounds.h — how far halflab-train and the PyTorch peer may differ, per
 * mode: one set of bounds for the live parity test (test_parity.c, which
 * gives the measurements and the reasoning; docs/peers.md's table) and the
 * frozen fixture (test_fixture.c, the peer's numbers recorded once).
 *
 *   fp32      both compute in fp32 and differ only in the order of
 *             summation: the first loss within 1e-6 relative, every later
 *             loss and gradient norm within 1e-5, every gradient within 1e-5
 *             of its tensor's max-norm (erf GELU for the tanh form would
 *             give 8e-5);
 *   amp-bf16  losses within 2^-8 relative (bf16's unit roundoff), gradients
 *             within 2^-5 of the max-norm (4 bf16 epsilons);
 *   amp-fp16  losses within 2^-11 (fp16's unit roundoff), unscaled
 *             gradients within 2^-8 (4 fp16 epsilons); the loss scale and
 *             the skipped steps identical.
 * Element by element these AMP bounds do not tell an AMP run from an fp32
 * one: on the fixture's model the peer's fp32 gradients are within 1.1e-2
 * (bf16) and 1.0e-3 (fp16) of its AMP gradients. The frozen fixture, where
 * both sides start step 1 from the same weights, therefore also bounds the
 * first step's gradients as a whole: ||g_halflab - g_torch||_2 / ||g_torch||_2
 * over every element (PARITY_*_FIRST_GRADIENTS_L2), measured on the 2-core
 * AMD EPYC VM against the distance of an fp32 run and of layer norm run in
 * the low precision (an autocast rule changed):
 *   amp-bf16  2^-12 (u/16, 2.4e-4): measured 2.0e-5; fp32 3.0e-3, layer norm
 *             in bf16 2.4e-3;
 *   amp-fp16  2^-13 (u/4, 1.2e-4): measured 6.8e-5; fp32 2.9e-4, layer norm
 *             in fp16 3.5e-4 (thin margins: fp16's products round where
 *             torch's do not quite, and an fp16 rounding is 8 times finer).
 * Later steps keep the element bounds: their weights already differ by the
 * earlier steps' rounding, and the distance grows to 9e-4 (bf16) and 3.4e-4
 * (fp16) by step 3. */
#ifndef PEERS_BOUNDS_H
#define PEERS_BOUNDS_H

#include <string.h>

#define PARITY_FP32_FIRST_LOSS 1e-6
#define PARITY_FP32_STEPS 1e-5 /* every loss, gradient norm and evaluation loss */
#define PARITY_FP32_GRADIENTS 1e-5
#define PARITY_BF16_LOSS 0x1p-8
#define PARITY_BF16_GRADIENTS 0x1p-5
#define PARITY_FP16_LOSS 0x1p-11
#define PARITY_FP16_GRADIENTS 0x1p-8
#define PARITY_BF16_FIRST_GRADIENTS_L2 0x1p-12
#define PARITY_FP16_FIRST_GRADIENTS_L2 0x1p-13

typedef struct {
  const char *mode;  /* halflab-train's name */
  double first_loss; /* step 1's loss, relative */
  double loss;       /* every step's loss, relative */
  double grad_norm;  /* every step's gradient norm, relative; 0: not compared (the gradients are) */
  double gradients;  /* every parameter's gradient: max |diff| / max |g| of its tensor */
  double first_gradients_l2; /* step 1's gradients together: ||diff||_2 / ||g||_2; 0: not compared */
} parity_bounds;

static const parity_bounds parity_bounds_by_mode[] = {
    {"fp32", PARITY_FP32_FIRST_LOSS, PARITY_FP32_STEPS, PARITY_FP32_STEPS, PARITY_FP32_GRADIENTS, 0},
    {"amp-bf16", PARITY_BF16_LOSS, PARITY_BF16_LOSS, 0, PARITY_BF16_GRADIENTS, PARITY_BF16_FIRST_GRADIENTS_L2},
    {"amp-fp16", PARITY_FP16_LOSS, PARITY_FP16_LOSS, 0, PARITY_FP16_GRADIENTS, PARITY_FP16_FIRST_GRADIENTS_L2},
};

/* The bounds of a mode; NULL for one the peer does not run. */
static inline const parity_bounds *parity_bounds_of(const char *mode) {
  for (size_t i = 0; i < sizeof parity_bounds_by_mode / sizeof parity_bounds_by_mode[0]; i++)
    if (!strcmp(parity_bounds_by_mode[i].mode, mode)) return &parity_bounds_by_mode[i];
  return NULL;
}

#endif
