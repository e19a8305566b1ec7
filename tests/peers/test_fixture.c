/* test_fixture.c — suite e2e: halflab-train against the frozen parity
 * fixture (tests/peers/fixture/; docs/peers.md), without PyTorch: the
 * peer's record of a small GPT (the tiny preset's at width 16: 2 layers,
 * 4 heads, 16 tokens, batch 16, SGD lr 0.1 cosine) trained for a few steps
 * from init.bin on batches.bin in fp32, amp-bf16 and amp-fp16, every
 * step's loss, gradient norm, loss scale and every parameter's unscaled
 * gradient. halflab-train runs from the same weights with the options
 * source.txt names (they make the same batches, checked byte for byte),
 * dumping each step's gradients: step 1 with --dump-grads, each later step
 * from the checkpoint of the one before (--stop-after, --checkpoint,
 * --resume, which continues a run bit for bit).
 *
 * Bounds: the live parity test's (tests/peers/bounds.h; measured and argued
 * in test_parity.c), per mode, its first-step bounds at every step: the
 * fixture is what the peer computed, and 3 SGD steps of lr <= 0.1 keep the
 * differences at the first step's size (measured on the 2-core AMD EPYC VM:
 * the worst step's figure, then the bound):
 *   fp32      losses 1.0e-7 relative (1e-6 at step 1, 1e-5 after), gradient
 *             norms 7.9e-8 (1e-5), gradients 6.6e-7 of each tensor's
 *             max-norm (1e-5);
 *   amp-bf16  losses 2.4e-6 (2^-8), gradients 6.5e-3 (2^-5);
 *   amp-fp16  losses 5.1e-7 (2^-11), gradients 9.2e-4 (2^-8), the same
 *             scale at every step;
 * and, since those AMP bounds would pass an fp32 run, step 1's gradients
 * together (||diff||_2 / ||g||_2): amp-bf16 2.0e-5 (2^-12), amp-fp16 6.8e-5
 * (2^-13); bounds.h says why.
 * The comparison can fail, and the test shows it every time: one weight
 * changed by 1e-3 (5% of the init's spread) moves the fp32 gradients beyond
 * their bound, and halflab's fp32 run is out of amp-bf16's bounds (autocast
 * that did not run is seen). The fixture's own checks: every file's CRC-32,
 * the modes and steps source.txt names, and a total size of a few hundred
 * KiB. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/peers/fixture.h"
#include "tests/support/hltest.h"

static const char *const modes[] = {"fp32", "amp-bf16", "amp-fp16"};
#define FIXTURE_MAX_BYTES (400 << 10)

static char *dir;
static char train_options[1024];
static int steps;

static void must(hl_run_result r, const char *what) {
  if (r.status != 0) fail_msg("%s: exit %d: %s", what, r.status, r.err);
  hl_run_free(&r);
}

static void fixture_record(const char *mode, run_record *r) {
  char path[4096], why[1024];
  snprintf(path, sizeof path, "%s", fixture_file(mode));
  strncat(path, ".bin", sizeof path - strlen(path) - 1);
  if (!record_read(path, r, why, sizeof why)) fail_msg("%s (scripts/parity-fixture.sh writes the fixture)", why);
}

static wfile *load(const char *path) {
  char why[512];
  wfile *w = wfile_read(path, why, sizeof why);
  if (!w) fail_msg("%s", why);
  return w;
}

/* halflab-train's record of `mode` from the weights `init`: one run per
 * step, each dumping its first step's gradients and continuing from the
 * checkpoint of the step before. */
static void halflab_record(const char *mode, const char *init, const char *name, run_record *r) {
  memset(r, 0, sizeof *r);
  r->steps = steps;
  for (int s = 1; s <= steps; s++) {
    char start[4096], file[64], then[256] = "";
    if (s == 1)
      snprintf(start, sizeof start, "%s --mode %s --steps %d --init-weights %s --name %s", train_options, mode, steps,
               init, name);
    else
      snprintf(start, sizeof start, "--device cpu --resume %s/%s-%s-c%d.bin", dir, name, mode, s - 1);
    if (s < steps) snprintf(then, sizeof then, "--stop-after %d --checkpoint %s/%s-%s-c%d.bin", s, dir, name, mode, s);
    snprintf(file, sizeof file, "%s-%s-g%d.bin", name, mode, s);
    char what[128];
    snprintf(what, sizeof what, "halflab-train %s, step %d", mode, s);
    must(hl_run("%s %s --dump-grads %s %s --out %s", hl_test_prog("halflab-train"), start, hl_path(dir, file), then,
                dir),
         what);
    r->gradients[s - 1] = load(hl_path(dir, file));
  }
  char csv[256];
  snprintf(csv, sizeof csv, "train_%s_%s_steps.csv", name, mode);
  hl_table *t = hl_table_read(hl_path(dir, csv));
  if (!t) fail_msg("%s: missing or malformed", csv);
  if (t->nrows != steps) fail_msg("%s: %d rows, want %d", csv, t->nrows, steps);
  for (int s = 0; s < steps; s++) {
    r->loss[s] = hl_table_num(t, s, "loss");
    r->grad_norm[s] = hl_table_num(t, s, "grad_norm");
    r->scale[s] = hl_table_num(t, s, "scale");
  }
  hl_table_free(t);
}

static int setup(void **state) {
  (void)state;
  dir = hl_tmpdir();
  fixture_value("halflab-train options", train_options, sizeof train_options);
  char value[64];
  fixture_value("steps", value, sizeof value);
  steps = atoi(value);
  if (steps < 1 || steps > RECORD_MAX_STEPS) fail_msg("source.txt: steps '%s' (1 to %d)", value, RECORD_MAX_STEPS);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (dir) hl_rmtree(dir);
  free(dir);
  return 0;
}

/* The files are whole (CRC-32), hold the modes and steps source.txt names,
 * every step's gradients named and shaped as init.bin's weights, and stay
 * small; a damaged copy is refused. */
static void test_fixture_files(void **state) {
  (void)state;
  char listed[256];
  fixture_value("modes", listed, sizeof listed);
  assert_string_equal(listed, "fp32 amp-bf16 amp-fp16");
  wfile *init = load(fixture_file("init.bin"));
  size_t total = init->len;
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    run_record r;
    fixture_record(modes[m], &r);
    assert_int_equal(r.steps, steps);
    for (int s = 0; s < steps; s++) {
      assert_int_equal(r.gradients[s]->n, init->n);
      for (int i = 0; i < init->n; i++) {
        assert_string_equal(r.gradients[s]->t[i].name, init->t[i].name);
        double d, a;
        assert_true(wtensor_diff(&r.gradients[s]->t[i], &init->t[i], &d, &a));
      }
    }
    record_free(&r);
    size_t len = 0;
    char name[32];
    snprintf(name, sizeof name, "%s.bin", modes[m]);
    free(hl_read_file(fixture_file(name), &len));
    total += len;
  }
  size_t len = 0;
  char *batches = hl_read_file(fixture_file("batches.bin"), &len);
  assert_non_null(batches);
  total += len;
  print_message("fixture: %d parameter tensors, %d steps, %zu bytes in all (at most %d)\n", init->n, steps, total,
                FIXTURE_MAX_BYTES);
  assert_true(total <= FIXTURE_MAX_BYTES);
  free(batches);
  /* one byte changed: the CRC-32 refuses the file */
  must(hl_run("cp %s %s && printf 'x' | dd of=%s bs=1 seek=100 conv=notrunc 2>/dev/null", fixture_file("fp32.bin"),
              hl_path(dir, "damaged.bin"), hl_path(dir, "damaged.bin")),
       "damaging a copy");
  run_record r;
  char why[512];
  assert_false(record_read(hl_path(dir, "damaged.bin"), &r, why, sizeof why));
  assert_non_null(strstr(why, "CRC-32"));
  wfile_free(init);
}

/* halflab-train, given source.txt's options, makes the batches the peer
 * trained on, byte for byte (else its data changed: the fixture must be
 * written again). */
static void test_same_batches(void **state) {
  (void)state;
  must(hl_run("%s %s --steps 0 --export-steps %d --export-batches %s --out %s", hl_test_prog("halflab-train"),
              train_options, steps, hl_path(dir, "batches.bin"), dir),
       "halflab-train --export-batches");
  size_t mine_len = 0, fixed_len = 0;
  char *mine = hl_read_file(hl_path(dir, "batches.bin"), &mine_len);
  char *fixed = hl_read_file(fixture_file("batches.bin"), &fixed_len);
  assert_non_null(mine);
  assert_non_null(fixed);
  if (mine_len != fixed_len || memcmp(mine, fixed, mine_len) != 0)
    fail_msg("halflab-train %s exports other batches than the fixture's (%zu bytes against %zu): its data changed; "
             "scripts/parity-fixture.sh writes the fixture again", train_options, mine_len, fixed_len);
  free(mine);
  free(fixed);
}

static void check_mode(const char *mode) {
  run_record got, want;
  fixture_record(mode, &want);
  halflab_record(mode, fixture_file("init.bin"), "fixture", &got);
  char label[64];
  snprintf(label, sizeof label, "%s, halflab against the fixture", mode);
  assert_true(record_within(label, &got, &want, parity_bounds_of(mode)));
  record_free(&got);
  record_free(&want);
}

static void test_fp32(void **state) { (void)state; check_mode("fp32"); }
static void test_amp_bf16(void **state) { (void)state; check_mode("amp-bf16"); }
static void test_amp_fp16(void **state) { (void)state; check_mode("amp-fp16"); }

/* The comparison can fail: halflab from a copy of the weights with one
 * value changed by 1e-3 is out of fp32's bounds. */
static void test_detects_a_changed_weight(void **state) {
  (void)state;
  must(hl_run("cp %s %s", fixture_file("init.bin"), hl_path(dir, "changed.bin")), "cp");
  assert_true(wfile_perturb(hl_path(dir, "changed.bin"), "transformer.h.1.mlp.c_fc.weight", 5, 1e-3f));
  run_record got, want;
  fixture_record("fp32", &want);
  halflab_record("fp32", hl_path(dir, "changed.bin"), "changed", &got);
  assert_false(record_within("fp32 from a changed weight (must be out of bounds)", &got, &want, parity_bounds_of("fp32")));
  record_free(&got);
  record_free(&want);
}

/* amp-bf16's bounds see whether autocast ran: halflab's fp32 run is out of
 * them (step 1's gradients together differ by about 3e-3). */
static void test_detects_no_autocast(void **state) {
  (void)state;
  run_record got, want;
  fixture_record("amp-bf16", &want);
  halflab_record("fp32", fixture_file("init.bin"), "noautocast", &got);
  assert_false(record_within("fp32 against amp-bf16 (must be out of bounds)", &got, &want, parity_bounds_of("amp-bf16")));
  record_free(&got);
  record_free(&want);
}

/* scripts/parity-fixture.sh refuses a bad command line with one line and
 * exit 2 before it looks for the peer, writing nothing. */
static void test_script_bad_input(void **state) {
  (void)state;
  const char *script = getenv("PARITY_FIXTURE_SCRIPT");
  if (!script || !*script) fail_msg("PARITY_FIXTURE_SCRIPT is not set (tests/peers/meson.build sets it)");
  char build[4096]; /* BUILD_DIR/train/halflab-train's BUILD_DIR */
  snprintf(build, sizeof build, "%s", hl_test_prog("halflab-train"));
  for (int up = 0; up < 2; up++) {
    char *slash = strrchr(build, '/');
    if (!slash) fail_msg("%s: no build folder in the path", hl_test_prog("halflab-train"));
    *slash = '\0';
  }
  char *bad = hl_tmpdir();
  hl_expect_refused(bad, 2, "no BUILD_DIR", "'%s'", script);
  hl_expect_refused(bad, 2, "is not a folder", "'%s' %s/no-such-build", script, bad);
  hl_expect_refused(bad, 2, "unknown option '--steps'", "'%s' %s --steps 4", script, build);
  hl_expect_refused(bad, 2, "--out needs a folder", "'%s' %s --out", script, build);
  hl_expect_refused(bad, 2, "does not exist", "'%s' %s --out %s/no/such/fixture", script, build, bad);
  hl_rmtree(bad);
  free(bad);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixture_files),
      cmocka_unit_test(test_same_batches),
      cmocka_unit_test(test_fp32),
      cmocka_unit_test(test_amp_bf16),
      cmocka_unit_test(test_amp_fp16),
      cmocka_unit_test(test_detects_a_changed_weight),
      cmocka_unit_test(test_detects_no_autocast),
      cmocka_unit_test(test_script_bad_input),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
