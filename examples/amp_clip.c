/* amp_clip.c — PyTorch's AMP recipe "使用未缩放的梯度 / 梯度裁剪": clip the unscaled
 * gradients.
 *
 *   scaler.scale(loss).backward()
 *   scaler.unscale_(optimizer)                                  # true-size gradients
 *   torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
 *   scaler.step(optimizer)       # does not unscale again; still skips on inf/NaN
 *   scaler.update()
 *
 * Clipping the scaled gradients would compare their norm, 2^16 times too
 * large, with a limit meant for the true gradients; the first step prints
 * that norm to show it.
 *
 * Checked, every step: unscale wrote exactly scaled * (1/scale) (inv
 * rounded once to f32); the norm clip_grad_norm returned is the norm of the
 * unscaled gradients (f64 reference, relative 1e-6) or inf/NaN when they
 * held inf/NaN; above max_norm the gradients were multiplied by
 * max_norm / (norm + 1e-6), below it left alone; step skipped exactly the
 * steps with a non-finite norm, and otherwise moved every weight by exactly
 * -lr * (clipped gradient): it did not unscale a second time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "cli/cli.h"
#include "core/training/clip.h"
#include "core/base/error.h"
#include "core/engine/ops.h"
#include "core/training/optim.h"
#include "core/training/scaler.h"
#include "examples/recipe.h"

static bool same_value(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

int main(int argc, char **argv) {
  recipe_opts o = recipe_init("amp-clip", "The clipping recipe: unscale, clip by norm, step (no second unscale).",
                              RECIPE_STEPS | RECIPE_INJECT, 40, "9", argc, argv);
  const double max_norm = 1.0;
  const float lr = 0.1f;
  recipe_mlp model = recipe_mlp_new("", o.seed, 0, o.device);
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = lr; /* plain SGD: the step's arithmetic is checkable to the bit */
  hl_optim *opt = hl_sgd_new(model.p, 4, so);
  hl_scaler *scaler = hl_scaler_new(hl_scaler_defaults());
  HL_CHECK(opt && scaler);
  int clipped_steps = 0, skipped_steps = 0, injected_taken = 0;
  printf("%-5s %-10s %-8s %-12s %s\n", "step", "loss", "scale", "grad norm", "");
  for (int step = 1; step <= o.steps; step++) {
    hl_pool_push();
    hl_optim_zero_grad(opt);
    hl_tensor *x, *y, *loss = NULL;
    recipe_batch(o.seed, step - 1, RECIPE_BATCH, o.device, &x, &y);
    hl_tmp(x), hl_tmp(y);
    HL_AUTOCAST(o.device, HL_F16, true) { loss = hl_tmp(hl_mse_loss(hl_tmp(recipe_mlp_forward(&model, x)), y)); }
    HL_CHECK(loss && hl_backward(hl_tmp(hl_scaler_scale(scaler, loss)), NULL, false));
    if (hl_step_set_has(&o.inject, step)) HL_CHECK(hl_fault_poison(hl_tensor_grad(model.p[0]), 3, o.inject_kind));
    hl_tensor *grads[4];
    for (int i = 0; i < 4; i++) grads[i] = hl_tensor_grad(model.p[i]);
    const double scale = hl_scaler_get_scale(scaler);
    int64_t n;
    float *scaled = recipe_values(grads, 4, &n);
    if (step == 1) {
      double s2 = 0;
      for (int64_t i = 0; i < n; i++) s2 += (double)scaled[i] * scaled[i];
      printf("      (the scaled gradients' norm would read %.4g: clipping them at %g would shrink this step %.3g-fold)\n",
             sqrt(s2), max_norm, sqrt(s2) / max_norm);
    }

    HL_CHECK(hl_scaler_unscale(scaler, opt));
    float *unscaled = recipe_values(grads, 4, &n);
    const float inv = (float)(1.0 / scale);
    for (int64_t i = 0; i < n; i++)
      if (!same_value(unscaled[i], scaled[i] * inv)) {
        example_fail("step %d: unscaled gradient %lld is %g, scaled * inv gives %g", step, (long long)i, unscaled[i],
                     scaled[i] * inv);
        break;
      }
    double norm = 0, want_sq = 0;
    for (int64_t i = 0; i < n; i++) want_sq += (double)unscaled[i] * unscaled[i];
    HL_CHECK(hl_clip_grad_norm(model.p, 4, max_norm, 2.0, false, &norm));
    float *clipped = recipe_values(grads, 4, &n);
    const bool finite = isfinite(norm);
    if (finite != isfinite(want_sq)) example_fail("step %d: norm %g, but the gradients are %sfinite", step, norm, finite ? "not " : "");
    if (finite) {
      if (fabs(norm - sqrt(want_sq)) > 1e-6 * sqrt(want_sq))
        example_fail("step %d: clip_grad_norm returned %.9g, the f64 norm is %.9g", step, norm, sqrt(want_sq));
      const float coef = (float)max_norm / ((float)norm + 1e-6f);
      for (int64_t i = 0; i < n; i++) {
        float want = coef < 1.0f ? unscaled[i] * coef : unscaled[i];
        if (clipped[i] != want) {
          example_fail("step %d: clipped gradient %lld is %g, expected %g", step, (long long)i, clipped[i], want);
          break;
        }
      }
      clipped_steps += coef < 1.0f;
    }

    float *before = recipe_values(model.p, 4, &n);
    bool skipped = false;
    HL_CHECK(hl_scaler_step(scaler, opt, &skipped, NULL)); /* unscale_ ran: no second unscale */
    float *after = recipe_values(model.p, 4, &n);
    if (skipped == finite) example_fail("step %d: skipped=%d with a %s norm", step, skipped, finite ? "finite" : "non-finite");
    for (int64_t i = 0; i < n; i++) {
      float want = skipped ? before[i] : before[i] - lr * clipped[i];
      if (after[i] != want) {
        example_fail("step %d: weight %lld is %.9g, %s gives %.9g%s", step, (long long)i, after[i],
                     skipped ? "a skipped step" : "w - lr * clipped gradient", want,
                     skipped ? "" : " (was the gradient unscaled twice?)");
        break;
      }
    }
    skipped_steps += skipped;
    injected_taken += hl_step_set_has(&o.inject, step) && !skipped;
    HL_CHECK(hl_scaler_update(scaler));
    printf("%-5d %-10.5g %-8g %-12.5g %s\n", step, hl_item(loss), scale, norm,
           skipped ? "inf/NaN: skipped" : norm > max_norm ? "clipped" : "");
    free(scaled);
    free(unscaled);
    free(clipped);
    free(before);
    free(after);
    hl_pool_pop();
  }
  printf("\nmax_norm %g: %d of %d steps clipped, %d skipped (injected: ", max_norm, clipped_steps, o.steps, skipped_steps);
  char buf[256];
  printf("%s)\n", hl_step_set_format(&o.inject, buf, sizeof buf));
  /* every step injected: none is taken, so none is clipped */
  if (clipped_steps == 0 && skipped_steps < o.steps)
    example_fail("no step was clipped: the example shows nothing (max_norm too large?)");
  if (injected_taken) example_fail("%d steps with an injected inf/NaN were taken", injected_taken);
  hl_optim_free(opt);
  hl_scaler_free(scaler);
  recipe_mlp_free(&model);
  return recipe_finish();
}
