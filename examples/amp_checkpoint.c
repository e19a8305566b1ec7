/* amp_checkpoint.c — saving and resuming an AMP run (core/training/checkpoint.h):
 * the model's parameters by name, the optimizer's state, the scaler's
 * state (scale, factors, interval, growth tracker), the step counter and
 * the position of the data stream, in one versioned, checksummed file
 * written atomically (PATH.tmp, flushed, renamed).
 *
 * The run: an MLP under fp16 autocast, AdamW, a scaler with growth_interval
 * 3 and an inf injected at step 4 (--inject), so that the scale has backed
 * off and the tracker is part-way when the checkpoint is taken.
 *
 * Without --stop-after / --resume the program checks, in one process:
 *   - a run interrupted after 5 steps, saved, and resumed in fresh objects
 *     (made from another seed, so that only the file can make them agree)
 *     gives the same losses and scales, bit for bit, and the same weights
 *     as the run that was never interrupted;
 *   - a truncated copy and a copy with one byte changed are refused with a
 *     message, and neither the model, the optimizer, the scaler nor the
 *     checkpoint file on disk changed;
 *   - a save that cannot complete (its temporary file cannot be created)
 *     fails with a message and leaves the checkpoint already there whole.
 * With --dir D --stop-after K it trains K steps and saves D/run.ckpt; with
 * --dir D --resume it loads that and trains on: run in two processes, the
 * printed rows (losses as exact hex floats) equal the one-process run's.
 * The one-process run with --dir D leaves D/run.ckpt as it was saved after
 * step 5, for --resume to train on from there. A run saved earlier in D is
 * never replaced: a run with --dir but not --resume is refused (exit 2)
 * when D/run.ckpt exists, and so is a --resume with no step left. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "core/training/checkpoint.h"
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
  hl_train_state st;
} run;

/* A seed other than `seed` for the weights a load must overwrite, within
 * --seed's range (HL_CLI_SEED_MAX) for every --seed */
static uint64_t other_seed(uint64_t seed) { return seed + 1000 <= HL_CLI_SEED_MAX ? seed + 1000 : seed - 1000; }

static run run_new(const recipe_opts *o, uint64_t init_seed) {
  run r;
  r.model = recipe_mlp_new("mlp", init_seed, 0, o->device);
  hl_adamw_opts ao = hl_adamw_defaults();
  ao.lr = 3e-3;
  r.opt = hl_adamw_new(r.model.p, 4, ao);
  hl_scaler_opts sc = hl_scaler_defaults();
  sc.growth_interval = 3;
  r.scaler = hl_scaler_new(sc);
  HL_CHECK(r.opt && r.scaler);
  r.st = (hl_train_state){.n_params = 4, .n_optims = 1, .rng_seed = o->seed};
  return r;
}

/* the state as the checkpoint sees it (r is moved by value: fix its pointers) */
static hl_train_state *state(run *r) {
  r->st.params = r->model.p;
  r->st.optims = &r->opt;
  r->st.scaler = r->scaler;
  return &r->st;
}

static void run_free(run *r) {
  hl_optim_free(r->opt);
  hl_scaler_free(r->scaler);
  recipe_mlp_free(&r->model);
}

typedef struct {
  float loss;
  double scale;
} row;

static row train_step(run *r, const recipe_opts *o) {
  const int64_t step = r->st.step + 1;
  hl_pool_push();
  hl_optim_zero_grad(r->opt);
  hl_tensor *x, *y, *loss = NULL;
  recipe_batch(r->st.rng_seed, (int64_t)r->st.rng_offset, RECIPE_BATCH, o->device, &x, &y);
  hl_tmp(x), hl_tmp(y);
  HL_AUTOCAST(o->device, HL_F16, true) { loss = hl_tmp(hl_mse_loss(hl_tmp(recipe_mlp_forward(&r->model, x)), y)); }
  HL_CHECK(loss && hl_backward(hl_tmp(hl_scaler_scale(r->scaler, loss)), NULL, false));
  if (hl_step_set_has(&o->inject, step)) HL_CHECK(hl_fault_poison(hl_tensor_grad(r->model.p[1]), 0, o->inject_kind));
  bool skipped;
  HL_CHECK(hl_scaler_step(r->scaler, r->opt, &skipped, NULL));
  HL_CHECK(hl_scaler_update(r->scaler));
  row out = {(float)hl_item(loss), hl_scaler_get_scale(r->scaler)};
  r->st.step = step;
  r->st.rng_offset++;
  printf("%-5lld %-14a %-12.6g %-9g %s\n", (long long)step, out.loss, out.loss, out.scale, skipped ? "skipped" : "");
  hl_pool_pop();
  return out;
}

static void header(void) { printf("%-5s %-14s %-12s %-9s\n", "step", "loss (exact)", "loss", "scale"); }

static unsigned char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) hl_fatal("fopen(\"%s\"): %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *d = malloc((size_t)n + 1);
  if (!d || fread(d, 1, (size_t)n, f) != (size_t)n) hl_fatal("read(\"%s\") failed", path);
  fclose(f);
  *size = (size_t)n;
  return d;
}

/* written to PATH.tmp and renamed, as a checkpoint is saved: restoring the
 * step-5 checkpoint into --dir never leaves half a file there */
static void spill(const char *path, const unsigned char *d, size_t n) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(d, 1, n, f) != n || fclose(f)) hl_fatal("write(\"%s\"): %s", tmp, strerror(errno));
  if (rename(tmp, path) != 0) hl_fatal("rename(\"%s\", \"%s\"): %s", tmp, path, strerror(errno));
}

/* a load of `path` must fail and leave r and the good file as they were */
static void expect_refused(const char *what, const char *path, run *r, const char *good_file) {
  int64_t n;
  float *before = recipe_values(r->model.p, 4, &n);
  const double scale = hl_scaler_get_scale(r->scaler);
  const int64_t step = r->st.step, adam_steps = hl_optim_param_steps(r->opt, 0);
  size_t good_before_size, good_after_size;
  unsigned char *good_before = slurp(good_file, &good_before_size);
  const bool loaded = hl_checkpoint_load(path, state(r));
  printf("%-34s %s\n", what, loaded ? "ACCEPTED" : hl_error());
  if (loaded) example_fail("%s was accepted", what);
  float *after = recipe_values(r->model.p, 4, &n);
  unsigned char *good_after = slurp(good_file, &good_after_size);
  if (memcmp(before, after, (size_t)n * sizeof *before)) example_fail("%s: the refused load changed the model", what);
  if (hl_scaler_get_scale(r->scaler) != scale || r->st.step != step || hl_optim_param_steps(r->opt, 0) != adam_steps)
    example_fail("%s: the refused load changed the scaler, the step or the optimizer", what);
  if (good_before_size != good_after_size || memcmp(good_before, good_after, good_before_size))
    example_fail("%s: the checkpoint on disk changed", what);
  free(before);
  free(after);
  free(good_before);
  free(good_after);
}

/* a scratch folder of the program's own, or --dir (created when missing,
 * except for --resume, which reads what is there) */
static const char *workdir(const recipe_opts *o, char *buf, size_t len, bool *scratch) {
  *scratch = !o->dir;
  if (o->dir && o->resume) {
    snprintf(buf, len, "%s", o->dir);
    return buf;
  }
  if (o->dir) return hl_cli_outdir(o->dir, o->device, buf, len);
  const char *tmp = getenv("TMPDIR");
  snprintf(buf, len, "%s/amp-checkpoint-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(buf)) hl_fatal("mkdtemp(\"%s\"): %s", buf, strerror(errno));
  return buf;
}

/* --dir D without --resume would save over D/run.ckpt: refused while a run
 * saved earlier is there (its step named), before anything is written. */
static void refuse_saved_run(const recipe_opts *o) {
  if (!o->dir || o->resume) return;
  char file[4200];
  snprintf(file, sizeof file, "%s/run.ckpt", o->dir);
  struct stat st;
  if (lstat(file, &st) != 0) return;
  hl_checkpoint *c = S_ISREG(st.st_mode) ? hl_checkpoint_open(file) : NULL;
  char step[64] = "";
  if (c) snprintf(step, sizeof step, " (after step %lld)", (long long)hl_checkpoint_step(c));
  if (c) hl_checkpoint_close(c);
  hl_usage_error("--dir %s: %s holds a run saved earlier%s: continue it with --resume, or give another --dir", o->dir,
                 file, step);
}

int main(int argc, char **argv) {
  recipe_opts o = recipe_init("amp-checkpoint",
                              "Checkpoint and resume an AMP run bit for bit; damaged files are refused.",
                              RECIPE_STEPS | RECIPE_INJECT | RECIPE_CHECKPOINT, 12, "4", argc, argv);
  refuse_saved_run(&o);
  char dirbuf[4096], file[4200], bad[4200], blocker[4200];
  bool scratch;
  const char *dir = workdir(&o, dirbuf, sizeof dirbuf, &scratch);
  snprintf(file, sizeof file, "%s/run.ckpt", dir);
  snprintf(bad, sizeof bad, "%s/damaged.ckpt", dir);
  snprintf(blocker, sizeof blocker, "%s/run.ckpt.tmp", dir);

  if (o.stop_after) { /* first process: train, save, stop */
    run r = run_new(&o, o.seed);
    header();
    for (int s = 0; s < o.stop_after; s++) train_step(&r, &o);
    HL_CHECK(hl_checkpoint_save(file, state(&r)));
    printf("saved %s after step %lld\n", file, (long long)r.st.step);
    run_free(&r);
    return recipe_finish();
  }
  if (o.resume) { /* second process: load, train on */
    run r = run_new(&o, other_seed(o.seed)); /* other weights: only the file can restore them */
    if (!hl_checkpoint_load(file, state(&r))) hl_fatal("%s", hl_error());
    if (r.st.step >= o.steps)
      hl_usage_error("--resume: %s was saved after step %lld, not before --steps %d: nothing is left to train (give "
                     "a larger --steps)", file, (long long)r.st.step, o.steps);
    printf("resumed %s at step %lld (scale %g, growth tracker %lld)\n", file, (long long)r.st.step,
           hl_scaler_get_scale(r.scaler), (long long)hl_scaler_get_growth_tracker(r.scaler));
    header();
    while (r.st.step < o.steps) train_step(&r, &o);
    run_free(&r);
    return recipe_finish();
  }

  enum { SAVE_AT = 5 };
  if (o.steps <= SAVE_AT) hl_usage_error("--steps must be above %d for the in-process demonstration", SAVE_AT);
  row *uninterrupted = malloc((size_t)o.steps * sizeof *uninterrupted);
  if (!uninterrupted) hl_fatal("out of host memory");
  printf("uninterrupted run:\n");
  header();
  run a = run_new(&o, o.seed);
  for (int s = 0; s < o.steps; s++) {
    uninterrupted[s] = train_step(&a, &o);
    if (s + 1 == SAVE_AT) HL_CHECK(hl_checkpoint_save(file, state(&a)));
  }
  printf("\nsaved after step %d, resumed in fresh objects:\n", SAVE_AT);
  run b = run_new(&o, other_seed(o.seed));
  HL_CHECK(hl_checkpoint_load(file, state(&b)));
  header();
  for (int s = SAVE_AT; s < o.steps; s++) {
    row r = train_step(&b, &o);
    if (memcmp(&r.loss, &uninterrupted[s].loss, sizeof r.loss) || r.scale != uninterrupted[s].scale)
      example_fail("step %d: resumed loss %a scale %g, uninterrupted %a %g", s + 1, r.loss, r.scale,
                   uninterrupted[s].loss, uninterrupted[s].scale);
  }
  int64_t n;
  float *wa = recipe_values(a.model.p, 4, &n), *wb = recipe_values(b.model.p, 4, &n);
  const bool same = !memcmp(wa, wb, (size_t)n * sizeof *wa);
  printf("final weights of both runs: %s\n", same ? "bit-identical" : "DIFFERENT");
  if (!same) example_fail("the resumed run's weights differ from the uninterrupted run's");
  free(wa);
  free(wb);

  printf("\ndamaged checkpoints (each must be refused, changing nothing):\n");
  size_t size;
  unsigned char *data = slurp(file, &size);
  spill(bad, data, size / 2);
  expect_refused("truncated to half its size:", bad, &b, file);
  data[size / 3] ^= 0x01;
  spill(bad, data, size);
  expect_refused("one bit flipped:", bad, &b, file);
  data[size / 3] ^= 0x01;
  free(data);
  /* a save that cannot complete: PATH.tmp cannot be created (a folder is
   * in the way); the checkpoint already there must survive whole */
  size_t good_size, kept_size;
  unsigned char *good = slurp(file, &good_size);
  if (mkdir(blocker, 0755) != 0) hl_fatal("mkdir(\"%s\"): %s", blocker, strerror(errno));
  const bool saved = hl_checkpoint_save(file, state(&b));
  printf("%-34s %s\n", "a save that cannot complete:", saved ? "ACCEPTED" : hl_error());
  if (saved) example_fail("a save with its temporary file blocked succeeded");
  unsigned char *kept = slurp(file, &kept_size);
  if (kept_size != good_size || memcmp(kept, good, good_size)) example_fail("the failed save changed the checkpoint");
  else printf("%-34s %s\n", "", "the checkpoint already there is unchanged");
  if (rmdir(blocker) != 0) hl_fatal("rmdir(\"%s\"): %s", blocker, strerror(errno));
  HL_CHECK(hl_checkpoint_save(file, state(&b)) && hl_checkpoint_verify(file));
  if (!scratch) { /* --dir: the run saved after step SAVE_AT stays, for --resume */
    spill(file, good, good_size);
    printf("\nleft %s as saved after step %d: --resume trains steps %d to %d\n", file, SAVE_AT, SAVE_AT + 1, o.steps);
  }
  free(good);
  free(kept);

  run_free(&a);
  run_free(&b);
  free(uninterrupted);
  if (scratch) {
    unlink(file);
    unlink(bad);
    rmdir(dir);
  }
  return recipe_finish();
}
