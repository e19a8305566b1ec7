/* amp_loop.c — the typical mixed-precision loop (典型混合精度训练):
 *
 *   scaler = GradScaler()
 *   for input, target in data:
 *       optimizer.zero_grad()
 *       with autocast():
 *           output = model(input); loss = loss_fn(output, target)
 *       scaler.scale(loss).backward()
 *       scaler.step(optimizer)      # unscale; skip if inf/NaN
 *       scaler.update()
 *
 * An MLP in f32 runs its forward under autocast with fp16 (on the CPU too:
 * fp16 is what needs a scaler; bf16 has fp32's range and does not), the
 * scaler starts at 2^16 as PyTorch's does, and SGD with momentum trains it.
 * --inject STEPS makes one gradient element inf (or NaN) at those steps, to
 * watch the scaler skip them and back off.
 *
 * Checked, every step: the step was skipped exactly when a gradient held
 * inf/NaN (tested here on the host, independently of the scaler); a skipped
 * step left every weight bit-identical; the scale follows update()'s rule
 * (halve after inf/NaN, double after growth_interval clean steps;
 * docs/scaler.md). At the end: every injected step was skipped, and the
 * loss fell (by half over 40 steps or more). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "cli/cli.h"
#include "core/base/error.h"
#include "core/training/fault.h"
#include "core/engine/ops.h"
#include "core/training/optim.h"
#include "core/training/scaler.h"
#include "examples/recipe.h"

int main(int argc, char **argv) {
  recipe_opts o = recipe_init("amp-loop",
                              "The typical AMP loop: autocast forward + loss, scaled backward, step, update.",
                              RECIPE_STEPS | RECIPE_INJECT, 60, "none", argc, argv);
  recipe_mlp model = recipe_mlp_new("", o.seed, 0, o.device);
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = 0.05;
  so.momentum = 0.9;
  hl_optim *opt = hl_sgd_new(model.p, 4, so);
  hl_scaler_opts sc = hl_scaler_defaults(); /* init 2^16, growth 2, backoff 0.5, interval 2000 */
  hl_scaler *scaler = hl_scaler_new(sc);
  HL_CHECK(opt && scaler);

  double expect_scale = sc.init_scale; /* update()'s rule, kept on the host */
  int64_t expect_tracker = 0;
  int skipped_count = 0, taken = 0;
  double *taken_loss = malloc((size_t)o.steps * sizeof *taken_loss); /* losses of the steps taken */
  if (!taken_loss) hl_fatal("out of host memory");
  char skipped_list[512] = "";
  for (int step = 1; step <= o.steps; step++) {
    hl_pool_push();
    hl_optim_zero_grad(opt);
    hl_tensor *x, *y, *loss = NULL;
    recipe_batch(o.seed, step - 1, RECIPE_BATCH, o.device, &x, &y);
    hl_tmp(x), hl_tmp(y);
    HL_AUTOCAST(o.device, HL_F16, true) {
      hl_tensor *out = hl_tmp(recipe_mlp_forward(&model, x)); /* f16 (linear: lower precision) */
      loss = hl_tmp(hl_mse_loss(out, y));                       /* f32 (mse_loss: fp32 policy) */
    }
    HL_CHECK(loss);
    if (step == 1) {
      example_expect("loss under autocast (fp16 forward)", loss, HL_F32);
      printf("\n%-6s %-12s %-10s\n", "step", "loss", "scale");
    }
    HL_CHECK(hl_backward(hl_tmp(hl_scaler_scale(scaler, loss)), NULL, false));
    const bool injected = hl_step_set_has(&o.inject, step);
    if (injected) HL_CHECK(hl_fault_poison(hl_tensor_grad(model.p[2]), 0, o.inject_kind));
    hl_tensor *grads[4];
    for (int i = 0; i < 4; i++) grads[i] = hl_tensor_grad(model.p[i]);
    const bool nonfinite = recipe_any_nonfinite(grads, 4);
    int64_t n;
    float *before = recipe_values(model.p, 4, &n);
    bool skipped = false;
    HL_CHECK(hl_scaler_step(scaler, opt, &skipped, NULL));
    HL_CHECK(hl_scaler_update(scaler));
    float *after = recipe_values(model.p, 4, &n);
    const double l = hl_item(loss), scale = hl_scaler_get_scale(scaler);

    if (skipped != nonfinite)
      example_fail("step %d: skipped=%d but the gradients %s inf/NaN", step, skipped, nonfinite ? "held" : "held no");
    if (skipped && memcmp(before, after, (size_t)n * sizeof *before))
      example_fail("step %d was skipped but the weights changed", step);
    if (!skipped && !memcmp(before, after, (size_t)n * sizeof *before))
      example_fail("step %d was taken but no weight changed", step);
    if (nonfinite) {
      expect_scale *= sc.backoff_factor;
      expect_tracker = 0;
    } else if (++expect_tracker == sc.growth_interval) {
      expect_scale *= sc.growth_factor;
      expect_tracker = 0;
    }
    if (scale != expect_scale) example_fail("step %d: scale %g, the rule gives %g", step, scale, expect_scale);
    if (injected && !skipped) example_fail("step %d: an inf/NaN was injected but the step was taken", step);
    if (skipped) {
      skipped_count++;
      size_t len = strlen(skipped_list);
      snprintf(skipped_list + len, sizeof skipped_list - len, "%s%d", len ? "," : "", step);
    } else {
      taken_loss[taken++] = l;
    }
    printf("%-6d %-12.6g %-10g %s\n", step, l, scale,
           skipped ? (injected ? "skipped (injected inf/NaN)" : "skipped (gradients overflowed fp16)") : "");
    free(before);
    free(after);
    hl_pool_pop();
  }
  /* the loss over the last five steps taken against the first five */
  double mean_first = 0, mean_last = 0;
  const int window = taken < 5 ? taken : 5;
  for (int i = 0; i < window; i++) mean_first += taken_loss[i] / window, mean_last += taken_loss[taken - 1 - i] / window;
  free(taken_loss);
  printf("\nskipped steps: %s (%d of %d); final scale %g\n", skipped_count ? skipped_list : "none", skipped_count,
         o.steps, hl_scaler_get_scale(scaler));
  printf("loss: %.4g (mean of the first 5 steps taken) -> %.4g (the last 5)\n", mean_first, mean_last);
  /* short runs need only fall; from 40 steps on, by half */
  if (taken >= 40 && !(mean_last < 0.5 * mean_first))
    example_fail("the loss did not fall by half in %d steps: %.4g -> %.4g", taken, mean_first, mean_last);
  if (taken >= 10 && !(mean_last < mean_first)) example_fail("the loss did not fall: %.4g -> %.4g", mean_first, mean_last);
  char injected[256];
  printf("injected: %s (%s)\n", hl_step_set_format(&o.inject, injected, sizeof injected), hl_fault_kind_name(o.inject_kind));
  hl_optim_free(opt);
  hl_scaler_free(scaler);
  recipe_mlp_free(&model);
  return recipe_finish();
}
