/* amp_accumulate.c — AMP's gradient accumulation (梯度累积):
 *
 *   for i, (input, target) in enumerate(data):
 *       with autocast():
 *           loss = loss_fn(model(input), target) / iters_to_accumulate
 *       scaler.scale(loss).backward()            # scaled gradients accumulate
 *       if (i + 1) % iters_to_accumulate == 0:
 *           scaler.step(optimizer); scaler.update(); optimizer.zero_grad()
 *
 * The gradients stay scaled, by one unchanged scale, while they accumulate;
 * step and update happen once per effective batch. Here 4 micro-batches of
 * 8 rows make an effective batch of 32, and the scaler starts at 128 and
 * doubles after every clean effective step (growth_interval 1), so its
 * changes show exactly where they may happen.
 *
 * Checked: the scale is the same for every micro-batch of an effective
 * batch and changes only at its end, by update()'s rule; after two
 * effective steps it is 512 (docs/scaler.md, test vector 7). Each update is
 * compared, from the same weights, with the update of one 32-row batch (the relative
 * 2-norm of the difference of the two updates):
 *   - the recipe in f32 against the batch in f32: only the order of the
 *     sums differs, limit 1e-5 (measured about 1e-6);
 *   - the recipe under fp16 autocast against the batch under the same
 *     autocast: per-micro-batch fp16 rounding of the weight gradients,
 *     limit 2e-3 (measured about 3e-4);
 *   - the recipe under fp16 autocast against the batch in f32: limit 1e-1.
 *     Typically 1e-3, but where fp16 rounding of a pre-activation flips a
 *     ReLU for a few rows, that unit's update changes wholesale (measured
 *     up to 6e-2 over 8 seeds x 40 steps). A wrong recipe is far outside:
 *     not dividing the loss by 4 gives 3 (300%). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "cli/cli.h"
#include "core/base/error.h"
#include "core/engine/ops.h"
#include "core/training/optim.h"
#include "core/training/scaler.h"
#include "examples/recipe.h"

enum { MICRO = 4, ROWS = RECIPE_BATCH / MICRO };

typedef struct {
  recipe_mlp model;
  hl_optim *opt;
  hl_scaler *scaler; /* NULL: the plain f32 big-batch reference */
  bool autocast;
} runner;

static runner runner_new(const recipe_opts *o, bool scaled, bool autocast) {
  runner r = {recipe_mlp_new("", o->seed, 0, o->device), NULL, NULL, autocast};
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = 0.1; /* plain SGD: no state, so copying the weights gives the same starting point */
  r.opt = hl_sgd_new(r.model.p, 4, so);
  if (scaled) r.scaler = hl_scaler_new((hl_scaler_opts){.init_scale = 128, .growth_factor = 2, .backoff_factor = 0.5, .growth_interval = 1, .enabled = true});
  HL_CHECK(r.opt && (!scaled || r.scaler));
  return r;
}

static void runner_free(runner *r) {
  hl_optim_free(r->opt);
  hl_scaler_free(r->scaler);
  recipe_mlp_free(&r->model);
}

static hl_tensor *micro_loss(runner *r, hl_tensor *x, hl_tensor *y) {
  hl_tensor *loss = NULL;
  HL_AUTOCAST(x->device, HL_F16, r->autocast) {
    loss = hl_tmp(hl_div_scalar(hl_tmp(hl_mse_loss(hl_tmp(recipe_mlp_forward(&r->model, x)), y)), MICRO));
  }
  HL_CHECK(loss);
  return loss;
}

/* One effective step of the recipe; false when the scaler skipped it.
 * scales[k]: the scale seen by micro-batch k. */
static bool recipe_step(runner *r, const recipe_opts *o, int step, double *scales) {
  for (int k = 0; k < MICRO; k++) {
    hl_pool_push();
    hl_tensor *x, *y;
    recipe_batch(o->seed, (int64_t)step * MICRO + k, ROWS, o->device, &x, &y);
    hl_tmp(x), hl_tmp(y);
    scales[k] = hl_scaler_get_scale(r->scaler);
    HL_CHECK(hl_backward(hl_tmp(hl_scaler_scale(r->scaler, micro_loss(r, x, y))), NULL, false));
    hl_pool_pop();
  }
  bool skipped;
  HL_CHECK(hl_scaler_step(r->scaler, r->opt, &skipped, NULL));
  HL_CHECK(hl_scaler_update(r->scaler));
  hl_optim_zero_grad(r->opt);
  return !skipped;
}

/* The references: the four micro-batches as one batch, no scaler, in f32
 * or under the same fp16 autocast. */
static void big_batch_step(runner *r, const recipe_opts *o, int step) {
  hl_pool_push();
  hl_tensor *xs[MICRO], *ys[MICRO];
  for (int k = 0; k < MICRO; k++) {
    recipe_batch(o->seed, (int64_t)step * MICRO + k, ROWS, o->device, &xs[k], &ys[k]);
    hl_tmp(xs[k]), hl_tmp(ys[k]);
  }
  hl_tensor *x = hl_tmp(hl_cat(xs, MICRO, 0)), *y = hl_tmp(hl_cat(ys, MICRO, 0)), *loss = NULL;
  HL_AUTOCAST(o->device, HL_F16, r->autocast) { loss = hl_tmp(hl_mse_loss(hl_tmp(recipe_mlp_forward(&r->model, x)), y)); }
  HL_CHECK(loss && hl_backward(loss, NULL, false));
  HL_CHECK(hl_optim_step(r->opt, NULL));
  hl_optim_zero_grad(r->opt);
  hl_pool_pop();
}

int main(int argc, char **argv) {
  recipe_opts o = recipe_init("amp-accumulate",
                              "Gradient accumulation: 4 micro-batches per step, scale fixed within it.",
                              RECIPE_STEPS, 12, NULL, argc, argv);
  runner amp = runner_new(&o, true, true), f32acc = runner_new(&o, true, false), big = runner_new(&o, false, false),
         big16 = runner_new(&o, false, true);
  const double tol_amp = 1e-1, tol_amp16 = 2e-3, tol_f32 = 1e-5;
  double expect_scale = 128, worst_amp = 0, worst_amp16 = 0, worst_f32 = 0;
  int compared = 0;
  printf("update error: |recipe's update - the 32-row batch's update| / |the batch's update|\n");
  printf("%-5s %-9s %-9s %-14s %-14s %s\n", "step", "scale", "after", "fp16 vs fp16", "fp16 vs f32", "f32 vs f32");
  for (int step = 0; step < o.steps; step++) {
    /* all three start this step from the recipe's weights */
    recipe_mlp_copy(&f32acc.model, &amp.model);
    recipe_mlp_copy(&big.model, &amp.model);
    recipe_mlp_copy(&big16.model, &amp.model);
    int64_t n;
    float *w0 = recipe_values(amp.model.p, 4, &n);
    double scales[MICRO], scales_f32[MICRO];
    const bool taken = recipe_step(&amp, &o, step, scales);
    recipe_step(&f32acc, &o, step, scales_f32);
    big_batch_step(&big, &o, step);
    big_batch_step(&big16, &o, step);
    const double after = hl_scaler_get_scale(amp.scaler);
    for (int k = 1; k < MICRO; k++)
      if (scales[k] != scales[0]) example_fail("step %d: the scale changed within the effective batch (micro-batch %d)", step + 1, k + 1);
    if (scales[0] != expect_scale) example_fail("step %d: scale %g, the rule gives %g", step + 1, scales[0], expect_scale);
    expect_scale = taken ? expect_scale * 2 : expect_scale / 2;
    if (after != expect_scale) example_fail("step %d: scale after update %g, the rule gives %g", step + 1, after, expect_scale);
    if (step == 1 && taken && after != 512) example_fail("test vector 7: scale %g after two effective steps, not 512", after);
    double e_amp = NAN, e_amp16 = NAN, e_f32 = recipe_update_error(w0, &f32acc.model, &big.model);
    worst_f32 = fmax(worst_f32, e_f32);
    if (taken) {
      e_amp = recipe_update_error(w0, &amp.model, &big.model);
      e_amp16 = recipe_update_error(w0, &amp.model, &big16.model);
      worst_amp = fmax(worst_amp, e_amp);
      worst_amp16 = fmax(worst_amp16, e_amp16);
      compared++;
    }
    printf("%-5d %-9g %-9g %-14.3g %-14.3g %.3g%s\n", step + 1, scales[0], after, e_amp16, e_amp, e_f32,
           taken ? "" : "   (skipped: inf in the fp16 gradients)");
    free(w0);
  }
  printf("\nscale: the same for the 4 micro-batches of every step, changed only by update() at its end\n");
  printf("worst update error: fp16 recipe vs fp16 batch %.3g (limit %g), fp16 recipe vs f32 batch %.3g (limit %g),\n"
         "                    f32 recipe vs f32 batch %.3g (limit %g)\n",
         worst_amp16, tol_amp16, worst_amp, tol_amp, worst_f32, tol_f32);
  if (worst_amp16 > tol_amp16) example_fail("the fp16 recipe's update is off by %.3g from the fp16 batch's", worst_amp16);
  if (worst_amp > tol_amp) example_fail("the fp16 recipe's update is off by %.3g from the f32 batch's", worst_amp);
  if (worst_f32 > tol_f32) example_fail("the f32 recipe's update is off by %.3g from the f32 batch's", worst_f32);
  if (compared < o.steps / 2) example_fail("only %d of %d steps were taken", compared, o.steps);
  runner_free(&amp);
  runner_free(&f32acc);
  runner_free(&big);
  runner_free(&big16);
  return recipe_finish();
}
