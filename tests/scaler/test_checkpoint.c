/* test_checkpoint.c — suite unit: checkpoints. A run saved after k steps
 * and resumed in fresh objects continues bit for bit like the run that was
 * never interrupted (losses, scale, tracker, weights, masters, optimizer
 * state; with a skipped step and a growth interval that spans the save);
 * truncated, corrupted, foreign or mismatched files are refused with a
 * message and change nothing, another format version by its number; the
 * caller's fields come back as saved, through an opened file that is
 * applied later; a failed save leaves the old file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/engine/autograd.h"
#include "core/training/checkpoint.h"
#include "core/training/fault.h"
#include "core/engine/ops.h"
#include "tests/scaler/scaler_test.h"

static const hl_device_kind cpu = HL_DEVICE_CPU;

/* A small run: f32 layer (SGD with momentum) and an fp16 layer with f32
 * masters (AdamW), one scaler, data drawn per step from (seed, step). */
typedef struct {
  hl_tensor *w1, *b1, *w2;
  hl_optim *sgd, *adamw;
  hl_scaler *scaler;
  hl_tensor *params[3];
  hl_optim *optims[2];
  hl_train_state st;
} run;

static run run_new(uint64_t init_seed) {
  run r;
  r.w1 = hl_randn(HL_SHAPE(4, 3), 0, 0.5, init_seed, 1, HL_F32, cpu);
  r.b1 = hl_randn(HL_SHAPE(4), 0, 0.1, init_seed, 2, HL_F32, cpu);
  r.w2 = hl_randn(HL_SHAPE(2, 4), 0, 0.5, init_seed, 3, HL_F16, cpu);
  OK(r.w1 && r.b1 && r.w2);
  const char *names[3] = {"fc1.weight", "fc1.bias", "fc2.weight"};
  r.params[0] = r.w1, r.params[1] = r.b1, r.params[2] = r.w2;
  for (int i = 0; i < 3; i++) {
    hl_tensor_set_name(r.params[i], names[i]);
    OK(hl_set_requires_grad(r.params[i], true));
  }
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = 0.05, so.momentum = 0.9, so.weight_decay = 1e-3;
  r.sgd = hl_sgd_new(r.params, 2, so);
  hl_adamw_opts ao = hl_adamw_defaults();
  ao.lr = 0.01, ao.master_weights = true;
  r.adamw = hl_adamw_new(&r.params[2], 1, ao);
  r.scaler = hl_scaler_new((hl_scaler_opts){.init_scale = 1024, .growth_factor = 2, .backoff_factor = 0.5, .growth_interval = 2, .enabled = true});
  OK(r.sgd && r.adamw && r.scaler);
  r.st = (hl_train_state){.params = r.params, .n_params = 3, .n_optims = 2, .scaler = r.scaler, .rng_seed = 99};
  return r;
}

static void run_free(run *r) {
  hl_optim_free(r->sgd);
  hl_optim_free(r->adamw);
  hl_scaler_free(r->scaler);
  for (int i = 0; i < 3; i++) hl_release(r->params[i]);
}

/* one training step; returns the loss, records the scale after update */
static float run_step(run *r, double *scale_after) {
  hl_optim *opts[2] = {r->sgd, r->adamw};
  const int64_t step = r->st.step + 1;
  hl_pool_push();
  hl_tensor *x = hl_tmp(hl_randn(HL_SHAPE(5, 3), 0, 1, r->st.rng_seed, 1000 + r->st.rng_offset, HL_F32, cpu));
  hl_tensor *y = hl_tmp(hl_randn(HL_SHAPE(5, 2), 0, 1, r->st.rng_seed, 2000 + r->st.rng_offset, HL_F32, cpu));
  hl_tensor *h = hl_tmp(hl_relu(hl_tmp(hl_linear(x, r->w1, r->b1))));
  hl_tensor *out = hl_tmp(hl_linear(h, hl_tmp(hl_to_f32(r->w2)), NULL));
  hl_tensor *loss = hl_tmp(hl_mse_loss(out, y));
  OK(loss);
  float l = (float)hl_item(loss);
  OK(hl_backward(hl_tmp(hl_scaler_scale(r->scaler, loss)), NULL, false));
  hl_pool_pop();
  if (step == 2) OK(hl_fault_poison(hl_tensor_grad(r->w1), 0, HL_FAULT_INF)); /* a skipped step */
  for (int k = 0; k < 2; k++) OK(hl_scaler_step(r->scaler, opts[k], NULL, NULL));
  OK(hl_scaler_update(r->scaler));
  for (int k = 0; k < 2; k++) hl_optim_zero_grad(opts[k]);
  *scale_after = hl_scaler_get_scale(r->scaler);
  r->st.step = step;
  r->st.rng_offset++;
  return l;
}

/* the run as a checkpoint sees it (run is moved by value: point at its own arrays) */
static hl_train_state *state_of(run *r) {
  r->optims[0] = r->sgd, r->optims[1] = r->adamw;
  r->st.params = r->params;
  r->st.optims = r->optims;
  r->st.scaler = r->scaler;
  return &r->st;
}

static bool runs_equal(const run *a, const run *b) {
  bool same = true;
  for (int i = 0; i < 3; i++) same = same && same_bits(a->params[i], b->params[i]);
  same = same && same_bits(hl_optim_master(a->adamw, 0), hl_optim_master(b->adamw, 0));
  return same;
}

typedef struct {
  char s[4096];
} path;

static path path_in(const char *dir, const char *name) {
  path p;
  int n = snprintf(p.s, sizeof p.s, "%s/%s", dir, name);
  assert_true(n > 0 && (size_t)n < sizeof p.s);
  return p;
}

static void test_resume_bit_identical(void **state) {
  (void)state;
  enum { STEPS = 8, SAVE_AT = 3 };
  char *dir = hl_tmpdir();
  const path fp = path_in(dir, "run.ckpt");
  const char *file = fp.s;
  /* the uninterrupted run */
  run a = run_new(7);
  float loss_a[STEPS];
  double scale_a[STEPS];
  for (int s = 0; s < STEPS; s++) {
    loss_a[s] = run_step(&a, &scale_a[s]);
    if (s + 1 == SAVE_AT) OK(hl_checkpoint_save(file, state_of(&a)));
  }
  /* the scale backed off at step 2 and grew again: the checkpoint holds a
   * non-trivial tracker */
  assert_true(scale_a[1] == 512.0);
  /* resumed in fresh objects, initialised differently */
  run b = run_new(12345);
  OK(hl_checkpoint_load(file, state_of(&b)));
  assert_int_equal(b.st.step, SAVE_AT);
  assert_int_equal(b.st.rng_offset, SAVE_AT);
  assert_true(b.st.rng_seed == 99);
  /* the inf at step 2 was in fc1's gradient: SGD skipped that step (it
   * does not count), AdamW took it */
  assert_int_equal(hl_optim_param_steps(b.sgd, 0), SAVE_AT - 1);
  assert_int_equal(hl_optim_param_steps(b.adamw, 0), SAVE_AT);
  for (int s = SAVE_AT; s < STEPS; s++) {
    double scale;
    float l = run_step(&b, &scale);
    if (memcmp(&l, &loss_a[s], sizeof l)) fail_msg("step %d: loss %.9g resumed, %.9g uninterrupted", s + 1, l, loss_a[s]);
    if (scale != scale_a[s]) fail_msg("step %d: scale %g resumed, %g uninterrupted", s + 1, scale, scale_a[s]);
  }
  assert_true(runs_equal(&a, &b));
  assert_int_equal(hl_scaler_get_growth_tracker(a.scaler), hl_scaler_get_growth_tracker(b.scaler));
  assert_true(hl_checkpoint_verify(file));
  run_free(&a);
  run_free(&b);
  hl_rmtree(dir);
  free(dir);
}

/* the load is refused with a message holding every fragment, and r is
 * exactly as before */
#define REFUSED_UNCHANGED(path, r, ...) refused_unchanged(path, r, (const char *[]){__VA_ARGS__, NULL}, __LINE__)
static void refused_unchanged(const char *path, run *r, const char **fragments, int line) {
  float *w_before = values_of(r->w1), *w2_before = values_of(r->w2);
  float master_before = value_at(hl_optim_master(r->adamw, 0), 0);
  double scale_before = hl_scaler_get_scale(r->scaler);
  int64_t step_before = r->st.step, adam_steps = hl_optim_param_steps(r->adamw, 0);
  hl_refused_or_fail(hl_checkpoint_load(path, state_of(r)) != 0, "hl_checkpoint_load", fragments, __FILE__, line);
  float *w_after = values_of(r->w1), *w2_after = values_of(r->w2);
  assert_memory_equal(w_before, w_after, 12 * sizeof(float));
  assert_memory_equal(w2_before, w2_after, 8 * sizeof(float));
  assert_true(value_at(hl_optim_master(r->adamw, 0), 0) == master_before);
  assert_true(hl_scaler_get_scale(r->scaler) == scale_before);
  assert_int_equal(r->st.step, step_before);
  assert_int_equal(hl_optim_param_steps(r->adamw, 0), adam_steps);
  free(w_before);
  free(w_after);
  free(w2_before);
  free(w2_after);
}

static void test_corrupted_files(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  const path gp = path_in(dir, "good.ckpt"), bp = path_in(dir, "bad.ckpt");
  const char *good = gp.s, *bad = bp.s;
  run a = run_new(7);
  double sc;
  for (int s = 0; s < 3; s++) run_step(&a, &sc);
  OK(hl_checkpoint_save(good, state_of(&a)));
  size_t size;
  unsigned char *data = (unsigned char *)hl_read_file(good, &size);
  assert_non_null(data);
  assert_true(size > 400);
  /* a run in another state that must stay as it is */
  run r = run_new(5);
  run_step(&r, &sc);

  /* truncated anywhere */
  const size_t cuts[] = {0, 5, 8, 31, 40, size / 2, size - 12, size - 1};
  for (unsigned i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    hl_write_file(bad, data, cuts[i]);
    REFUSED_UNCHANGED(bad, &r, cuts[i] < 8 ? "not a halflab checkpoint" : "truncated");
  }
  /* one byte flipped anywhere in the contents */
  const size_t flips[] = {40, 100, size / 2, size - 13};
  for (unsigned i = 0; i < sizeof flips / sizeof flips[0]; i++) {
    data[flips[i]] ^= 0x10;
    hl_write_file(bad, data, size);
    REFUSED_UNCHANGED(bad, &r, "checksum mismatch");
    data[flips[i]] ^= 0x10;
  }
  data[size - 2] ^= 1; /* the end marker */
  hl_write_file(bad, data, size);
  REFUSED_UNCHANGED(bad, &r, "no end marker");
  data[size - 2] ^= 1;
  data[0] = 'X'; /* the magic */
  hl_write_file(bad, data, size);
  REFUSED_UNCHANGED(bad, &r, "not a halflab checkpoint");
  data[0] = 'H';
  /* another format version, older or newer, refused by its number */
  assert_int_equal(data[8], HL_CHECKPOINT_VERSION);
  data[8] = 1;
  hl_write_file(bad, data, size);
  REFUSED_UNCHANGED(bad, &r, "bad.ckpt\": checkpoint format version 1, this halflab reads version 2");
  data[8] = 3;
  hl_write_file(bad, data, size);
  REFUSED_UNCHANGED(bad, &r, "checkpoint format version 3, this halflab reads version 2");
  data[8] = HL_CHECKPOINT_VERSION;
  data = realloc(data, size + 3);
  assert_non_null(data);
  memcpy(data + size, "end", 3);
  hl_write_file(bad, data, size + 3); /* trailing bytes */
  REFUSED_UNCHANGED(bad, &r, "after its end marker");
  REFUSED_UNCHANGED(path_in(dir, "missing.ckpt").s, &r, "No such file");
  /* the intact file still loads */
  hl_write_file(bad, data, size);
  OK(hl_checkpoint_load(bad, state_of(&r)));
  assert_true(runs_equal(&a, &r));
  free(data);
  run_free(&a);
  run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void test_mismatched_state(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  const path fp = path_in(dir, "run.ckpt");
  const char *file = fp.s;
  run a = run_new(7);
  double sc;
  run_step(&a, &sc);
  OK(hl_checkpoint_save(file, state_of(&a)));
  run r = run_new(3);
  /* a parameter of another shape */
  hl_tensor *saved = r.params[1];
  hl_tensor *other = param_of("fc1.bias", HL_SHAPE(5), NULL, 0, HL_F32, cpu);
  r.params[1] = other;
  REFUSED_UNCHANGED(file, &r, "model/fc1.bias", "f32[4] in the file", "f32[5] here");
  /* a parameter of another name */
  hl_tensor_set_name(other, "fc1.b");
  REFUSED_UNCHANGED(file, &r, "no model/fc1.b");
  r.params[1] = saved;
  hl_release(other);
  /* another optimizer kind in slot 0 */
  hl_optim *sgd = r.sgd;
  r.sgd = hl_adamw_new(r.params, 2, hl_adamw_defaults());
  REFUSED_UNCHANGED(file, &r, "optimizer 0 is adamw here");
  hl_optim_free(r.sgd);
  /* SGD without momentum: the file holds momentum buffers it has not */
  r.sgd = hl_sgd_new(r.params, 2, hl_sgd_defaults());
  REFUSED_UNCHANGED(file, &r, "buf1", "another momentum");
  hl_optim_free(r.sgd);
  r.sgd = sgd;
  /* a scaler state saved from a disabled scaler */
  hl_scaler_opts off = hl_scaler_defaults();
  off.enabled = false;
  hl_scaler *disabled = hl_scaler_new(off);
  hl_scaler *enabled = a.scaler;
  a.scaler = disabled;
  a.st.scaler = disabled;
  OK(hl_checkpoint_save(file, state_of(&a)));
  REFUSED_UNCHANGED(file, &r, "empty", "disabled GradScaler");
  a.scaler = enabled;
  a.st.scaler = enabled;
  hl_scaler_free(disabled);
  /* unnamed or duplicate parameters cannot be saved */
  hl_tensor_set_name(a.params[0], "fc1.bias");
  REFUSED(hl_checkpoint_save(file, state_of(&a)), "two parameters are named \"fc1.bias\"");
  run_free(&a);
  run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void test_atomic_save(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  const path fp = path_in(dir, "run.ckpt");
  const char *file = fp.s;
  run a = run_new(7);
  double sc;
  OK(hl_checkpoint_save(file, state_of(&a)));
  assert_true(hl_file_exists(file));
  run_step(&a, &sc);
  OK(hl_checkpoint_save(file, state_of(&a))); /* replaces it */
  assert_false(hl_file_exists(path_in(dir, "run.ckpt.tmp").s));
  run r = run_new(1);
  OK(hl_checkpoint_load(file, state_of(&r)));
  assert_int_equal(r.st.step, 1);
  /* a save that cannot complete leaves what was there: the target is a
   * folder (rename fails), or its folder does not exist (open fails) */
  const path folder_p = path_in(dir, "taken");
  const char *folder = folder_p.s;
  assert_int_equal(mkdir(folder, 0755), 0);
  const path inside_p = path_in(folder, "keep");
  const char *inside = inside_p.s;
  hl_write_file(inside, "x", 1);
  REFUSED(hl_checkpoint_save(folder, state_of(&a)), "rename", "untouched");
  assert_true(hl_file_exists(inside));
  assert_false(hl_file_exists(path_in(dir, "taken.tmp").s));
  REFUSED(hl_checkpoint_save(path_in(dir, "no/such/dir.ckpt").s, state_of(&a)), "open", "No such file");
  OK(hl_checkpoint_verify(file));
  run_free(&a);
  run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* fields: named bytes saved with the state and given back unchanged,
 * through hl_checkpoint_open before hl_checkpoint_apply */
static void test_fields(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  const path fp = path_in(dir, "run.ckpt");
  const char *file = fp.s;
  run a = run_new(7);
  double sc;
  for (int s = 0; s < 4; s++) run_step(&a, &sc);
  const unsigned char binary[5] = {0, 1, 0xff, '\n', 0};
  const hl_checkpoint_field fields[3] = {
      {"train/definition", "mode amp-fp16\n", 14}, {"blob", binary, sizeof binary}, {"empty", NULL, 0}};
  hl_train_state *st = state_of(&a);
  st->fields = fields;
  st->n_fields = 3;
  OK(hl_checkpoint_save(file, st));
  hl_checkpoint *c = hl_checkpoint_open(file);
  OK(c);
  assert_int_equal(hl_checkpoint_step(c), 4);
  size_t len = 99;
  const char *def = hl_checkpoint_get_field(c, "train/definition", &len);
  assert_non_null(def);
  assert_int_equal(len, 14);
  assert_memory_equal(def, "mode amp-fp16\n", 14);
  const void *blob = hl_checkpoint_get_field(c, "blob", &len);
  assert_non_null(blob);
  assert_int_equal(len, sizeof binary);
  assert_memory_equal(blob, binary, sizeof binary);
  assert_non_null(hl_checkpoint_get_field(c, "empty", &len)); /* there, and empty */
  assert_int_equal(len, 0);
  assert_null(hl_checkpoint_get_field(c, "missing", &len));
  assert_null(hl_checkpoint_get_field(c, "train/step", &len)); /* the library's own records are not fields */
  /* applied to fresh objects: the same state as a load gives */
  run b = run_new(12345);
  OK(hl_checkpoint_apply(c, state_of(&b)));
  assert_int_equal(b.st.step, 4);
  assert_true(runs_equal(&a, &b));
  hl_checkpoint_close(c);
  /* a mismatched state is refused by apply as by load, and nothing changes */
  run r = run_new(5);
  hl_tensor *saved = r.params[1], *other = param_of("fc1.bias", HL_SHAPE(5), NULL, 0, HL_F32, cpu);
  r.params[1] = other;
  c = hl_checkpoint_open(file);
  OK(c);
  REFUSED(hl_checkpoint_apply(c, state_of(&r)), "model/fc1.bias", "f32[4] in the file");
  hl_checkpoint_close(c);
  r.params[1] = saved;
  hl_release(other);
  /* bad field lists are refused before anything is written */
  const hl_checkpoint_field twice[2] = {{"x", "1", 1}, {"x", "2", 1}};
  st->fields = twice;
  st->n_fields = 2;
  REFUSED(hl_checkpoint_save(file, st), "two fields are named \"x\"");
  const hl_checkpoint_field unnamed[1] = {{"", "1", 1}};
  st->fields = unnamed;
  st->n_fields = 1;
  REFUSED(hl_checkpoint_save(file, st), "no name");
  c = hl_checkpoint_open(file); /* the file is the first save's */
  OK(c);
  assert_non_null(hl_checkpoint_get_field(c, "blob", NULL));
  hl_checkpoint_close(c);
  REFUSED(hl_checkpoint_open(path_in(dir, "missing.ckpt").s), "No such file");
  run_free(&a);
  run_free(&b);
  run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resume_bit_identical),
      cmocka_unit_test(test_corrupted_files),
      cmocka_unit_test(test_mismatched_state),
      cmocka_unit_test(test_atomic_save),
      cmocka_unit_test(test_fields),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
