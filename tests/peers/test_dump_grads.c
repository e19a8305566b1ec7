/* test_dump_grads.c — suite e2e: halflab-train --dump-grads, the file the
 * PyTorch peer's parity test compares (no PyTorch needed here).
 *   - the file holds every parameter, with the names and shapes of the
 *     --save-init file (the same weight-file format);
 *   - its values are the first step's gradients before clipping: their L2
 *     norm is the step's grad_norm column, also when --clip-norm clips;
 *   - under amp-fp16 they are unscaled (the same norm as the fp32 run's
 *     within fp16's precision, not 65536 times it);
 *   - an unwritable folder is refused with one line and exit 2 before any
 *     file is written; --steps 0 is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/peers/weights.h"
#include "tests/support/hltest.h"

#define SMALL "--device cpu --batch 16 --eval-samples 32 --eval-every 5"

static const char *train(void) { return hl_test_prog("halflab-train"); }

static void run_ok(const char *fmt, const char *a, const char *b, const char *c) {
  char args[4096];
  snprintf(args, sizeof args, fmt, a, b, c);
  hl_run_result r = hl_run_ok("%s %s", train(), args);
  hl_run_free(&r);
}

static wfile *load(const char *path) {
  char why[512];
  wfile *w = wfile_read(path, why, sizeof why);
  if (!w) fail_msg("%s", why);
  return w;
}

static double l2(const wfile *w) {
  double s = 0;
  for (int i = 0; i < w->n; i++)
    for (int64_t k = 0; k < w->t[i].numel; k++) s += (double)w->t[i].values[k] * w->t[i].values[k];
  return sqrt(s);
}

static double step1(const char *dir, const char *name, const char *mode, const char *col) {
  char f[256];
  snprintf(f, sizeof f, "train_%s_%s_steps.csv", name, mode);
  hl_table *t = hl_table_read(hl_path(dir, f));
  if (!t) fail_msg("%s: missing or malformed", f);
  const double v = hl_table_num(t, 0, col);
  hl_table_free(t);
  return v;
}

static void test_layout_and_norm(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  run_ok(SMALL " --steps 2 --save-init %s --dump-grads %s --out %s", hl_path(dir, "w.bin"), hl_path(dir, "g.bin"), dir);
  wfile *w = load(hl_path(dir, "w.bin")), *g = load(hl_path(dir, "g.bin"));
  assert_int_equal(g->n, w->n);
  assert_int_equal(g->n, 2 + 2 * 12 + 2); /* wte, wpe, 12 per block x 2 blocks, ln_f */
  for (int i = 0; i < w->n; i++) {
    assert_string_equal(g->t[i].name, w->t[i].name); /* the parameters' order */
    double d, m;
    assert_true(wtensor_diff(&g->t[i], &w->t[i], &d, &m));  /* same shape */
  }
  /* a gradient, not the weights: the layer norms' weights are 1, their gradients small */
  const wtensor *ln = wfile_find(g, "transformer.ln_f.weight");
  assert_non_null(ln);
  assert_true(fabs(ln->values[0]) < 0.5);
  const double norm = step1(dir, "tiny", "fp32", "grad_norm");
  print_message("fp32: L2 of the dump %.9g, grad_norm column %.9g\n", l2(g), norm);
  assert_true(fabs(l2(g) - norm) <= 1e-5 * norm);
  wfile_free(w);
  wfile_free(g);

  /* clipping comes after the dump: the file keeps the unclipped norm */
  run_ok(SMALL " --steps 1 --clip-norm 0.01 --dump-grads %s --name clipped --out %s%s", hl_path(dir, "gc.bin"), dir, "");
  wfile *gc = load(hl_path(dir, "gc.bin"));
  assert_true(fabs(l2(gc) - norm) <= 1e-5 * norm);
  assert_true(fabs(step1(dir, "clipped", "fp32", "grad_norm") - norm) <= 1e-5 * norm);
  wfile_free(gc);

  /* amp-fp16: unscaled (the scale is 65536), equal to fp32's within fp16 products' error */
  run_ok(SMALL " --steps 1 --mode amp-fp16 --dump-grads %s --out %s%s", hl_path(dir, "g16.bin"), dir, "");
  wfile *g16 = load(hl_path(dir, "g16.bin"));
  print_message("amp-fp16: L2 of the dump %.9g (fp32 %.9g)\n", l2(g16), norm);
  assert_true(fabs(l2(g16) - norm) <= 1e-2 * norm);
  wfile_free(g16);
  hl_rmtree(dir);
  free(dir);
}

static void test_refused(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  /* nothing written, not even the output folder */
  hl_expect_refused(dir, 2, "--dump-grads", "%s " SMALL " --steps 1 --dump-grads %s/no/such/folder/g.bin --out %s/out",
                    train(), dir, dir);
  hl_expect_refused(dir, 2, NULL, "%s " SMALL " --steps 0 --save-init %s/w.bin --dump-grads %s/g.bin", train(), dir, dir);
  hl_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_and_norm),
      cmocka_unit_test(test_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
