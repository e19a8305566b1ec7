/* amp_multi.c — the AMP recipe of several models, losses and optimizers with one
 * scaler (多个模型、Losses以及优化器):
 *
 *   with autocast():
 *       output0 = model0(input); output1 = model1(input)
 *       loss0 = loss_fn(2 * output0 + 3 * output1, target)
 *       loss1 = loss_fn(3 * output0 - 5 * output1, target)
 *   scaler.scale(loss0).backward(retain_graph=True)  # the two losses share the graph
 *   scaler.scale(loss1).backward()
 *   scaler.unscale_(optimizer0)      # to inspect or clip model0's gradients
 *   scaler.step(optimizer0)
 *   scaler.step(optimizer1)
 *   scaler.update()                  # once, after every optimizer stepped
 *
 * --inject STEPS (default 4) makes a gradient of model1 inf at those steps.
 * As in PyTorch (docs/scaler.md, GradScaler): each step() skips on its own
 * optimizer's found_inf, so optimizer0 steps and optimizer1 skips; update()
 * sums found_inf over both, so the scale backs off once.
 *
 * Checked, every step: the gradients after both backwards (the sum of
 * both losses' gradients), model0's after unscale_ and model1's divided by
 * the scale, match the same recipe run without a scaler from the same
 * weights under the same autocast (relative 2-norm 1e-3: the scale is a
 * power of two, exact in fp16 unless it rescues an underflow);
 * exactly the optimizers whose gradients held inf/NaN skipped; skipped
 * models kept their weights bit for bit, the other moved; the scale follows
 * the rule (halve once per iteration with any inf/NaN, else grow after
 * growth_interval). Once: the second backward without retain_graph on the
 * first is refused (the graph was freed). */
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

/* loss0 and loss1 of the recipe (new references in the current pool) */
static void losses(const recipe_mlp *m0, const recipe_mlp *m1, hl_tensor *x, hl_tensor *y, bool autocast,
                   hl_tensor **loss0, hl_tensor **loss1) {
  HL_AUTOCAST(x->device, HL_F16, autocast) {
    hl_tensor *o0 = hl_tmp(recipe_mlp_forward(m0, x)), *o1 = hl_tmp(recipe_mlp_forward(m1, x));
    hl_tensor *a = hl_tmp(hl_add(hl_tmp(hl_mul_scalar(o0, 2)), hl_tmp(hl_mul_scalar(o1, 3))));
    hl_tensor *b = hl_tmp(hl_sub(hl_tmp(hl_mul_scalar(o0, 3)), hl_tmp(hl_mul_scalar(o1, 5))));
    *loss0 = hl_tmp(hl_mse_loss(a, y));
    *loss1 = hl_tmp(hl_mse_loss(b, y));
  }
  HL_CHECK(*loss0 && *loss1);
}

static double rel2(const float *a, const float *b, int64_t n) {
  double d = 0, s = 0;
  for (int64_t i = 0; i < n; i++) d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), s += (double)b[i] * b[i];
  return s > 0 ? sqrt(d / s) : (d > 0 ? INFINITY : 0);
}

static float *grads_of(const recipe_mlp *m, int64_t *n) {
  hl_tensor *g[4];
  for (int i = 0; i < 4; i++) g[i] = hl_tensor_grad(m->p[i]);
  return recipe_values(g, 4, n);
}

/* retain_graph is needed: the second backward through a graph the first freed fails. */
static void show_retain_graph_needed(const recipe_opts *o, recipe_mlp m[2], hl_optim *opt[2], hl_scaler *scaler) {
  hl_pool_push();
  hl_tensor *x, *y, *l0, *l1;
  recipe_batch(o->seed, 0, RECIPE_BATCH, o->device, &x, &y);
  hl_tmp(x), hl_tmp(y);
  losses(&m[0], &m[1], x, y, true, &l0, &l1);
  HL_CHECK(hl_backward(hl_tmp(hl_scaler_scale(scaler, l0)), NULL, false)); /* no retain_graph */
  hl_error_clear();
  bool second = hl_backward(hl_tmp(hl_scaler_scale(scaler, l1)), NULL, false);
  printf("second backward without retain_graph on the first: %s\n", second ? "accepted" : hl_error());
  if (second) example_fail("the second backward through the freed shared graph was accepted");
  for (int k = 0; k < 2; k++) hl_optim_zero_grad(opt[k]);
  hl_pool_pop();
}

/* The loss scale's low point over the run, from the injected steps and the
 * scaler's rule alone: each halves it, growth_interval clean steps double
 * it. Below 2^-10 model0's fp16 gradients lose their low bits and then
 * vanish, so no check on them could hold: such an --inject is refused. */
static void refuse_inject_past_scale_floor(const recipe_opts *o, hl_scaler_opts sc) {
  const double floor_scale = 0x1p-10;
  double scale = sc.init_scale;
  int64_t tracker = 0;
  for (int64_t step = 1; step <= o->steps; step++) {
    if (hl_step_set_has(&o->inject, step)) scale *= sc.backoff_factor, tracker = 0;
    else if (++tracker == sc.growth_interval) scale *= sc.growth_factor, tracker = 0;
    if (scale < floor_scale)
      hl_usage_error("--inject: by step %lld the injected steps halve the loss scale from %g to %g, below the 2^-10 "
                     "model0's fp16 gradients need (at most 20 injected steps in a row; %d clean steps double it)",
                     (long long)step, sc.init_scale, scale, (int)sc.growth_interval);
  }
}

int main(int argc, char **argv) {
  recipe_opts o = recipe_init("amp-multi",
                              "Two models, two losses, two optimizers and one scaler.",
                              RECIPE_STEPS | RECIPE_INJECT, 20, "4", argc, argv);
  recipe_mlp m[2] = {recipe_mlp_new("model0", o.seed, 0, o.device), recipe_mlp_new("model1", o.seed, 1, o.device)};
  recipe_mlp ref[2] = {recipe_mlp_new("ref0", o.seed, 0, o.device), recipe_mlp_new("ref1", o.seed, 1, o.device)};
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = 0.002;
  hl_optim *opt[2] = {hl_sgd_new(m[0].p, 4, so), hl_sgd_new(m[1].p, 4, so)};
  hl_scaler_opts sc = hl_scaler_defaults();
  sc.init_scale = 1024;
  sc.growth_interval = 5;
  refuse_inject_past_scale_floor(&o, sc);
  hl_scaler *scaler = hl_scaler_new(sc);
  HL_CHECK(opt[0] && opt[1] && scaler);
  const double tol_grad = 1e-3;
  double worst_grad = 0, expect_scale = sc.init_scale;
  int64_t tracker = 0;

  show_retain_graph_needed(&o, m, opt, scaler);

  printf("\n%-5s %-10s %-10s %-8s %-10s %-12s %s\n", "step", "loss0", "loss1", "scale", "grad err", "model0 norm", "");
  for (int step = 1; step <= o.steps; step++) {
    hl_pool_push();
    for (int k = 0; k < 2; k++) {
      recipe_mlp_copy(&ref[k], &m[k]);
      hl_optim_zero_grad(opt[k]);
      for (int i = 0; i < 4; i++) hl_zero_grad(ref[k].p[i]);
    }
    hl_tensor *x, *y, *l0, *l1, *r0, *r1;
    recipe_batch(o.seed, step, RECIPE_BATCH, o.device, &x, &y);
    hl_tmp(x), hl_tmp(y);
    losses(&m[0], &m[1], x, y, true, &l0, &l1);
    const double scale = hl_scaler_get_scale(scaler);
    HL_CHECK(hl_backward(hl_tmp(hl_scaler_scale(scaler, l0)), NULL, true)); /* retain_graph */
    HL_CHECK(hl_backward(hl_tmp(hl_scaler_scale(scaler, l1)), NULL, false));
    /* the reference: the same two backwards without a scaler */
    losses(&ref[0], &ref[1], x, y, true, &r0, &r1);
    HL_CHECK(hl_backward(r0, NULL, true) && hl_backward(r1, NULL, false));
    const bool injected = hl_step_set_has(&o.inject, step);
    if (injected) HL_CHECK(hl_fault_poison(hl_tensor_grad(m[1].p[0]), 5, o.inject_kind));
    bool nonfinite[2];
    for (int k = 0; k < 2; k++) {
      hl_tensor *g[4];
      for (int i = 0; i < 4; i++) g[i] = hl_tensor_grad(m[k].p[i]);
      nonfinite[k] = recipe_any_nonfinite(g, 4);
    }
    /* unscale_ model0's optimizer explicitly, and look at its gradients */
    HL_CHECK(hl_scaler_unscale(scaler, opt[0]));
    int64_t n;
    float *g0 = grads_of(&m[0], &n), *g0_ref = grads_of(&ref[0], &n);
    double norm0 = 0;
    for (int64_t i = 0; i < n; i++) norm0 += (double)g0[i] * g0[i];
    norm0 = sqrt(norm0);
    double err = nonfinite[0] ? NAN : rel2(g0, g0_ref, n);
    if (!nonfinite[1]) {
      /* model1's gradients are still scaled here: compare them unscaled */
      float *g1 = grads_of(&m[1], &n), *g1_ref = grads_of(&ref[1], &n);
      for (int64_t i = 0; i < n; i++) g1[i] = (float)(g1[i] / scale);
      err = fmax(err, rel2(g1, g1_ref, n));
      free(g1);
      free(g1_ref);
    }
    if (isfinite(err)) worst_grad = fmax(worst_grad, err);
    float *before[2], *after[2];
    bool skipped[2];
    for (int k = 0; k < 2; k++) before[k] = recipe_values(m[k].p, 4, &n);
    HL_CHECK(hl_scaler_step(scaler, opt[0], &skipped[0], NULL));
    HL_CHECK(hl_scaler_step(scaler, opt[1], &skipped[1], NULL)); /* unscaled inside step */
    HL_CHECK(hl_scaler_update(scaler));
    for (int k = 0; k < 2; k++) {
      after[k] = recipe_values(m[k].p, 4, &n);
      if (skipped[k] != nonfinite[k])
        example_fail("step %d: optimizer%d skipped=%d, its gradients %s inf/NaN", step, k, skipped[k], nonfinite[k] ? "held" : "held no");
      bool same = !memcmp(before[k], after[k], (size_t)n * sizeof(float));
      if (skipped[k] != same) example_fail("step %d: model%d %s", step, k, skipped[k] ? "changed in a skipped step" : "did not move");
    }
    if (nonfinite[0] || nonfinite[1]) {
      expect_scale *= sc.backoff_factor;
      tracker = 0;
    } else if (++tracker == sc.growth_interval) {
      expect_scale *= sc.growth_factor;
      tracker = 0;
    }
    if (hl_scaler_get_scale(scaler) != expect_scale)
      example_fail("step %d: scale %g, the rule gives %g", step, hl_scaler_get_scale(scaler), expect_scale);
    if (injected && !(skipped[1] && !skipped[0]))
      example_fail("step %d: the inf in model1 should skip optimizer1 only (skipped: %d %d)", step, skipped[0], skipped[1]);
    char note[96] = "";
    if (skipped[0] || skipped[1])
      snprintf(note, sizeof note, "optimizer0 %s, optimizer1 %s%s", skipped[0] ? "skipped" : "stepped",
               skipped[1] ? "skipped" : "stepped", injected ? " (inf injected into model1)" : "");
    printf("%-5d %-10.5g %-10.5g %-8g %-10.3g %-12.4g %s\n", step, hl_item(l0), hl_item(l1), hl_scaler_get_scale(scaler),
           err, norm0, note);
    for (int k = 0; k < 2; k++) free(before[k]), free(after[k]);
    free(g0);
    free(g0_ref);
    hl_pool_pop();
  }
  printf("\nworst gradient difference against the recipe without a scaler: %.3g (limit %g)\n", worst_grad, tol_grad);
  if (worst_grad > tol_grad) example_fail("the gradients differ from the unscaled run's by %.3g", worst_grad);
  for (int k = 0; k < 2; k++) {
    hl_optim_free(opt[k]);
    recipe_mlp_free(&m[k]);
    recipe_mlp_free(&ref[k]);
  }
  hl_scaler_free(scaler);
  return recipe_finish();
}
