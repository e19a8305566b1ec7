/* amp_penalty.c — the gradient penalty with scaling (梯度惩罚):
 *
 *   with autocast():
 *       loss = loss_fn(model(input), target)
 *   scaled_grads = torch.autograd.grad(scaler.scale(loss), model.parameters(), create_graph=True)
 *   inv_scale = 1. / scaler.get_scale()
 *   grads = [p * inv_scale for p in scaled_grads]   # not unscale_: no optimizer owns these
 *   with autocast():
 *       penalty = sqrt(sum(g.pow(2).sum() for g in grads))
 *       loss = loss + penalty
 *   scaler.scale(loss).backward()
 *   scaler.step(optimizer); scaler.update()
 *
 * The gradients for the penalty come from the scaled loss (so that fp16
 * does not flush them), are unscaled by a plain multiplication before the
 * penalty is formed (the penalty is part of the forward pass, inside
 * autocast), and the total is scaled and backpropagated as usual.
 *
 * Checked, every step, from the same weights:
 *   - the penalty equals the one the same recipe computes with the scaler
 *     disabled (relative 1e-3, measured 2e-7: the scale is a power of two,
 *     so scaling is exact in fp16 except where it rescues an underflow),
 *     and the one a plain f32 run computes (relative 2e-2, measured 3e-4:
 *     fp16 arithmetic); without the unscaling multiplication it would be
 *     `scale` times too large (printed at the first step);
 *   - the update equals the unscaled recipe's (relative 2-norm 1e-3,
 *     measured 1e-5) and the f32 run's (1e-1, measured 3e-3; see
 *     amp_accumulate.c for why fp16 updates can differ by a few percent);
 *   - and the total loss falls. */
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

typedef struct {
  recipe_mlp model;
  hl_optim *opt;
  hl_scaler *scaler;
  bool autocast;
} runner;

static runner runner_new(const recipe_opts *o, bool scaling, bool autocast) {
  runner r = {recipe_mlp_new("", o->seed, 0, o->device), NULL, NULL, autocast};
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = 0.05;
  r.opt = hl_sgd_new(r.model.p, 4, so);
  hl_scaler_opts sc = hl_scaler_defaults();
  sc.enabled = scaling;
  r.scaler = hl_scaler_new(sc);
  HL_CHECK(r.opt && r.scaler);
  return r;
}

static void runner_free(runner *r) {
  hl_optim_free(r->opt);
  hl_scaler_free(r->scaler);
  recipe_mlp_free(&r->model);
}

typedef struct {
  double loss, penalty, total, penalty_without_unscaling;
  bool skipped;
} step_result;

static step_result penalty_step(runner *r, const recipe_opts *o, int step) {
  step_result res = {0};
  hl_pool_push();
  hl_optim_zero_grad(r->opt);
  hl_tensor *x, *y, *loss = NULL;
  recipe_batch(o->seed, step, RECIPE_BATCH, o->device, &x, &y);
  hl_tmp(x), hl_tmp(y);
  HL_AUTOCAST(o->device, HL_F16, r->autocast) { loss = hl_tmp(hl_mse_loss(hl_tmp(recipe_mlp_forward(&r->model, x)), y)); }
  HL_CHECK(loss);
  /* gradients of the scaled loss, with a graph of their own */
  hl_tensor *scaled_loss = hl_tmp(hl_scaler_scale(r->scaler, loss)), *scaled_grads[4], *grads[4];
  HL_CHECK(hl_autograd_grad(&scaled_loss, 1, NULL, r->model.p, 4, scaled_grads,
                            (hl_grad_opts){.create_graph = true, .retain_graph = true}));
  /* unscaled by a plain multiplication: no optimizer owns these */
  const double inv_scale = 1.0 / hl_scaler_get_scale(r->scaler);
  for (int i = 0; i < 4; i++) {
    hl_tmp(scaled_grads[i]);
    grads[i] = hl_tmp(hl_mul_scalar(scaled_grads[i], inv_scale));
  }
  hl_tensor *total = NULL, *penalty = NULL;
  HL_AUTOCAST(o->device, HL_F16, r->autocast) {
    hl_tensor *sum = NULL;
    for (int i = 0; i < 4; i++) {
      hl_tensor *sq = hl_tmp(hl_sum(hl_tmp(hl_pow(grads[i], 2))));
      sum = sum ? hl_tmp(hl_add(sum, sq)) : sq;
    }
    penalty = hl_tmp(hl_sqrt(sum));
    total = hl_tmp(hl_add(loss, penalty));
  }
  HL_CHECK(total);
  if (step == 0 && hl_scaler_is_enabled(r->scaler)) {
    /* what forgetting the multiplication would give (not used for training) */
    double s = 0;
    HL_NO_GRAD {
      for (int i = 0; i < 4; i++) s += hl_item(hl_tmp(hl_sum(hl_tmp(hl_pow(hl_tmp(hl_to_f32(scaled_grads[i])), 2)))));
    }
    res.penalty_without_unscaling = sqrt(s);
  }
  HL_CHECK(hl_backward(hl_tmp(hl_scaler_scale(r->scaler, total)), NULL, false));
  HL_CHECK(hl_scaler_step(r->scaler, r->opt, &res.skipped, NULL));
  HL_CHECK(hl_scaler_update(r->scaler));
  res.loss = hl_item(loss);
  res.penalty = hl_item(penalty);
  res.total = hl_item(total);
  hl_pool_pop();
  return res;
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

int main(int argc, char **argv) {
  recipe_opts o = recipe_init("amp-penalty",
                              "Gradient penalty: grads of the scaled loss, unscaled by multiplication, "
                              "L2 penalty inside autocast.",
                              RECIPE_STEPS, 20, NULL, argc, argv);
  runner amp = runner_new(&o, true, true), plain16 = runner_new(&o, false, true), f32 = runner_new(&o, false, false);
  const double tol_pen16 = 1e-3, tol_pen32 = 2e-2, tol_up16 = 1e-3, tol_up32 = 1e-1;
  double worst_pen16 = 0, worst_pen32 = 0, worst_up16 = 0, worst_up32 = 0, first_total = 0, last_total = 0;
  int taken = 0;
  printf("%-5s %-10s %-10s %-10s %-9s %-12s %s\n", "step", "loss", "penalty", "f32 pen.", "scale", "upd vs fp16", "upd vs f32");
  for (int step = 0; step < o.steps; step++) {
    recipe_mlp_copy(&plain16.model, &amp.model);
    recipe_mlp_copy(&f32.model, &amp.model);
    int64_t n;
    float *w0 = recipe_values(amp.model.p, 4, &n);
    step_result a = penalty_step(&amp, &o, step), b = penalty_step(&plain16, &o, step), c = penalty_step(&f32, &o, step);
    if (step == 0)
      printf("      (the same penalty from the scaled gradients, not multiplied by 1/scale: %.4g, %.4g times too large)\n",
             a.penalty_without_unscaling, a.penalty_without_unscaling / a.penalty);
    double e16 = NAN, e32 = NAN;
    if (!a.skipped) {
      taken++;
      worst_pen16 = fmax(worst_pen16, rel(a.penalty, b.penalty));
      worst_pen32 = fmax(worst_pen32, rel(a.penalty, c.penalty));
      e16 = recipe_update_error(w0, &amp.model, &plain16.model);
      e32 = recipe_update_error(w0, &amp.model, &f32.model);
      worst_up16 = fmax(worst_up16, e16);
      worst_up32 = fmax(worst_up32, e32);
      if (taken == 1) first_total = a.total;
      last_total = a.total;
    }
    printf("%-5d %-10.5g %-10.5g %-10.5g %-9g %-12.3g %.3g%s\n", step + 1, a.loss, a.penalty, c.penalty,
           hl_scaler_get_scale(amp.scaler), e16, e32, a.skipped ? "  (skipped: inf in the fp16 gradients)" : "");
    free(w0);
  }
  printf("\nworst penalty difference: against the unscaled fp16 recipe %.3g (limit %g), against f32 %.3g (limit %g)\n",
         worst_pen16, tol_pen16, worst_pen32, tol_pen32);
  printf("worst update difference:  against the unscaled fp16 recipe %.3g (limit %g), against f32 %.3g (limit %g)\n",
         worst_up16, tol_up16, worst_up32, tol_up32);
  printf("total loss (loss + penalty): %.4g -> %.4g\n", first_total, last_total);
  if (worst_pen16 > tol_pen16) example_fail("the penalty differs from the unscaled recipe's by %.3g", worst_pen16);
  if (worst_pen32 > tol_pen32) example_fail("the penalty differs from the f32 run's by %.3g", worst_pen32);
  if (worst_up16 > tol_up16) example_fail("the update differs from the unscaled recipe's by %.3g", worst_up16);
  if (worst_up32 > tol_up32) example_fail("the update differs from the f32 run's by %.3g", worst_up32);
  if (taken < o.steps / 2) example_fail("only %d of %d steps were taken", taken, o.steps);
  if (taken >= 2 && !(last_total < first_total)) example_fail("the total loss did not fall: %.4g -> %.4g", first_total, last_total);
  runner_free(&amp);
  runner_free(&plain16);
  runner_free(&f32);
  return recipe_finish();
}
