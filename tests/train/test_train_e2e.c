/* test_train_e2e.c — suite e2e: halflab-train on the CPU, its CSVs read
 * back. Every mode runs a few steps (scale, skipped, statistics and memory
 * columns as the mode implies); a run resumed from its checkpoint is bit
 * for bit the uninterrupted one; --inject-nonfinite skips exactly those
 * steps and the scale backs off; a non-finite loss in fp32 fails with the
 * step named, its files marked .failed; SIGINT and SIGTERM (real signals)
 * stop a run with complete CSV lines and a summary, marked .interrupted;
 * a stopped run and a killed one (its .inprogress log) resumed; bad input is one line, exit 2 and no file; the
 * peers' files (--save-init / --init-weights, --export-batches); the MLP
 * with accumulation, clipping and the gradient penalty; --text; the small
 * preset on its generated text; --list-params and --trace-ops; --profile
 * (its table read back against the step times and the model's products,
 * nothing written without it or by a failed run, an unwritable output
 * refused up front). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/hltest.h"

static const char *train(void) { return hl_test_prog("halflab-train"); }

/* A short tiny-GPT run: small batches, evaluation every 5 steps. */
#define SMALL "--device cpu --batch 16 --eval-samples 32 --eval-every 5"

/* train_NAME_MODE_KIND.csv, or with a suffix (".interrupted", ".failed",
 * ".inprogress"): docs/train.md, "What a run leaves behind". */
static hl_table *csv_at(const char *dir, const char *name, const char *mode, const char *kind, const char *suffix) {
  char f[256];
  snprintf(f, sizeof f, "train_%s_%s_%s.csv%s", name, mode, kind, suffix);
  hl_table *t = hl_table_read(hl_path(dir, f));
  if (!t) fail_msg("%s: missing or malformed", f);
  return t;
}

static hl_table *csv(const char *dir, const char *name, const char *mode, const char *kind) {
  return csv_at(dir, name, mode, kind, "");
}

static bool run_file_exists(const char *dir, const char *name, const char *mode, const char *kind, const char *suffix) {
  char f[256];
  snprintf(f, sizeof f, "train_%s_%s_%s.csv%s", name, mode, kind, suffix);
  return hl_file_exists(hl_path(dir, f));
}

static bool empty(const hl_table *t, int r, const char *col) { return hl_table_get(t, r, col)[0] == '\0'; }

static void run_ok(hl_run_result *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_ok(hl_run_result *out, const char *fmt, ...) {
  char args[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  hl_run_result r = hl_run_ok("%s %s", train(), args);
  if (out) *out = r;
  else hl_run_free(&r);
}

/* ------------------------------------------------------------ every mode -- */

static const char *modes[7] = {"fp32", "amp-fp16", "amp-bf16", "fp16-noscale", "fp16-static", "fp16-master", "fp16-pure"};

static void test_every_mode(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  double first_loss[7];
  for (int m = 0; m < 7; m++) {
    /* SGD: fp16-pure's fp16 AdamW moments underflow and it diverges at once (docs/train.md) */
    run_ok(NULL, SMALL " --steps 10 --optimizer sgd --lr 0.05 --mode %s --out %s", modes[m], dir);
    hl_table *t = csv(dir, "tiny", modes[m], "steps");
    assert_int_equal(t->nrows, 10);
    const bool scaled = m == 1 || m == 4 || m == 5, half_weights = m >= 5;
    for (int r = 0; r < 10; r++) {
      assert_string_equal(hl_table_get(t, r, "mode"), modes[m]);
      assert_true(hl_table_num(t, r, "step") == r + 1);
      assert_true(isfinite(hl_table_num(t, r, "loss")) && hl_table_num(t, r, "loss") > 0);
      assert_true(hl_table_num(t, r, "scale") == (m == 4 ? 1024 : scaled ? 65536 : 1));
      assert_true(hl_table_num(t, r, "skipped") == 0);
      assert_true(hl_table_num(t, r, "grad_norm") > 0);
      /* the cosine schedule: lr at step s is 0.05 (1 + cos(pi (s - 1) / 10)) / 2 */
      assert_true(fabs(hl_table_num(t, r, "lr") - 0.025 * (1 + cos(M_PI * r / 10))) < 1e-9);
      assert_true(hl_table_num(t, r, "step_time_ms") > 0);
      assert_true(fabs(hl_table_num(t, r, "tokens_per_s") / hl_table_num(t, r, "samples_per_s") - 16) < 1e-6); /* 16 tokens a row */
      assert_true(hl_table_num(t, r, "mem_peak_bytes") >= hl_table_num(t, r, "mem_current_bytes") && hl_table_num(t, r, "mem_current_bytes") > 0);
      const char *fracs[] = {"grad_zero_frac", "fp16_underflow_frac", "fp16_underflow_scaled_frac", "fp16_zero_frac",
                             "fp16_zero_scaled_frac", "absorbed_frac", "fp16_absorbed_frac"};
      for (int k = 0; k < 7; k++) assert_true(hl_table_num(t, r, fracs[k]) >= 0 && hl_table_num(t, r, fracs[k]) <= 1);
      /* scaling moves gradients out of fp16's underflow zone, never into it */
      assert_true(hl_table_num(t, r, "fp16_underflow_scaled_frac") <= hl_table_num(t, r, "fp16_underflow_frac"));
      assert_true(hl_table_num(t, r, "fp16_zero_frac") <= hl_table_num(t, r, "fp16_underflow_frac"));
      if (!scaled) assert_true(hl_table_num(t, r, "fp16_underflow_scaled_frac") == hl_table_num(t, r, "fp16_underflow_frac"));
      if (half_weights) assert_true(hl_table_num(t, r, "absorbed_frac") == hl_table_num(t, r, "fp16_absorbed_frac"));
      else assert_true(hl_table_num(t, r, "absorbed_frac") <= hl_table_num(t, r, "fp16_absorbed_frac"));
      const bool eval = (r + 1) % 5 == 0;
      assert_true(empty(t, r, "eval_loss") == !eval && empty(t, r, "eval_acc") == !eval);
      if (eval) assert_true(hl_table_num(t, r, "eval_acc") >= 0 && hl_table_num(t, r, "eval_acc") <= 1);
    }
    first_loss[m] = hl_table_num(t, 0, "loss");
    hl_table_free(t);
    hl_table *s = csv(dir, "tiny", modes[m], "summary");
    assert_int_equal(s->nrows, 1);
    assert_string_equal(hl_table_get(s, 0, "status"), "completed");
    assert_true(hl_table_num(s, 0, "steps_done") == 10 && hl_table_num(s, 0, "timed_steps") == 5); /* warm-up 5 */
    assert_true(hl_table_num(s, 0, "param_bytes") == (half_weights ? 2 : 4) * hl_table_num(s, 0, "params"));
    assert_string_equal(hl_table_get(s, 0, "omp_wait_policy"), "passive"); /* set by halflab-train */
    hl_table_free(s);
    /* histograms at the first, middle and last step, unscaled and scaled, fractions summing to 1 */
    hl_table *h = csv(dir, "tiny", modes[m], "hist");
    const char *steps[] = {"1", "5", "10"};
    for (int k = 0; k < 3; k++)
      for (int g = 0; g < 2; g++) {
        double sum = 0;
        int rows = 0;
        for (int r = 0; r < h->nrows; r++)
          if (!strcmp(hl_table_get(h, r, "step"), steps[k]) &&
              !strcmp(hl_table_get(h, r, "grads"), g ? "scaled" : "unscaled"))
            sum += hl_table_num(h, r, "frac"), rows++;
        assert_true(rows > 3 && fabs(sum - 1) < 1e-6);
      }
    hl_table_free(h);
  }
  /* the same weights and data: the first loss agrees across modes to their precision */
  for (int m = 1; m < 7; m++)
    if (fabs(first_loss[m] - first_loss[0]) > 0.01 * first_loss[0])
      fail_msg("%s's first loss %g, fp32's %g", modes[m], first_loss[m], first_loss[0]);
  hl_table *all = hl_table_read(hl_path(dir, "train_summary.csv"));
  assert_non_null(all);
  assert_int_equal(all->nrows, 7);
  hl_table_free(all);
  /* repeating a run replaces its row in train_summary.csv */
  run_ok(NULL, SMALL " --steps 3 --mode fp32 --out %s", dir);
  all = hl_table_read(hl_path(dir, "train_summary.csv"));
  assert_int_equal(all->nrows, 7);
  int row = hl_table_find(all, "name", "tiny", "mode", "fp32", NULL);
  assert_true(row >= 0 && hl_table_num(all, row, "steps_done") == 3);
  hl_table_free(all);
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------ resume, faults -- */

/* The numeric columns a resumed run must reproduce exactly. */
static const char *exact_cols[] = {"loss", "eval_loss", "eval_acc", "lr", "scale", "skipped", "grad_norm",
                                   "fp16_underflow_frac", "fp16_underflow_scaled_frac", "absorbed_frac",
                                   "fp16_absorbed_frac"};

static void must_rename(const char *dir, const char *from, const char *to) {
  char a[4200];
  snprintf(a, sizeof a, "%s", hl_path(dir, from));
  if (rename(a, hl_path(dir, to)) != 0) fail_msg("rename %s: %s", a, strerror(errno));
}

/* Summary columns that hold timings or the machine's load: the only ones a
 * resumed run may differ in (besides the name). */
static bool timing_column(const char *col) {
  static const char *const cols[] = {"step_time_ms_median", "step_time_ms_min", "tokens_per_s", "samples_per_s",
                                     "load_start", "load_end", "wall_s"};
  for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
    if (!strcmp(col, cols[i])) return true;
  return false;
}

/* A file's lines without its "# " metadata (malloc'd). */
static char *data_lines(const char *path) {
  char *text = hl_read_file(path, NULL);
  if (!text) fail_msg("%s: missing", path);
  char *out = malloc(strlen(text) + 1), *o = out;
  assert_non_null(out);
  for (char *line = text; *line;) {
    char *eol = strchr(line, '\n');
    const size_t n = eol ? (size_t)(eol - line + 1) : strlen(line);
    if (line[0] != '#') memcpy(o, line, n), o += n;
    line += n;
  }
  *o = '\0';
  free(text);
  return out;
}

/* The checkpoint's state records (model, optimizer, scaler, step, random
 * stream, the run's definition): the bytes from the header's end to the
 * summary totals' field, which holds step times. */
static char *state_records(const char *path, size_t *len) {
  size_t size;
  char *data = hl_read_file(path, &size);
  assert_non_null(data);
  const char *key = "field/train/totals";
  char *at = NULL;
  for (size_t i = 32; i + strlen(key) <= size && !at; i++)
    if (!memcmp(data + i, key, strlen(key))) at = data + i;
  assert_non_null(at);
  *len = (size_t)(at - data) - 32;
  memmove(data, data + 32, *len);
  return data;
}

static void test_resume_bit_identical(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  char full[4096], split[4096];
  snprintf(full, sizeof full, "%s/full", dir);
  snprintf(split, sizeof split, "%s/split", dir);
  /* amp-fp16 with the scale growing every 3 steps and skipped steps on both sides of the save, statistics
   * every 4 steps: the scaler's state, the optimizer's moments, the schedule, the data position and the
   * summary's totals all cross the checkpoint */
  const char *common = SMALL " --mode amp-fp16 --growth-interval 3 --inject-nonfinite 4,9 --steps 12 --stats-every 4 "
                             "--hist-steps 2,6,11";
  run_ok(NULL, "%s --checkpoint %s --out %s", common, hl_path(dir, "full.ckpt"), full);
  run_ok(NULL, "%s --stop-after 6 --checkpoint %s --out %s", common, hl_path(dir, "six.ckpt"), split);
  /* a stopped run is not complete: its files are marked, the final names and train_summary.csv left alone */
  hl_table *s = csv_at(split, "tiny", "amp-fp16", "summary", ".interrupted");
  assert_string_equal(hl_table_get(s, 0, "status"), "stopped");
  assert_true(hl_table_num(s, 0, "steps_done") == 6);
  hl_table_free(s);
  assert_false(run_file_exists(split, "tiny", "amp-fp16", "steps", ""));
  assert_false(hl_file_exists(hl_path(split, "train_summary.csv")));
  /* resumed twice, naming only the checkpoint: the run's options come from it; the first continues the
   * .interrupted log, the second the completed one, each cut back to the checkpoint's 6 rows before appending;
   * completing removes the .interrupted files */
  for (int k = 0; k < 2; k++) {
    run_ok(NULL, "--device cpu --resume %s --checkpoint %s --out %s", hl_path(dir, "six.ckpt"),
           hl_path(dir, "resumed.ckpt"), split);
    const char *kinds[] = {"steps", "hist", "summary"};
    for (int i = 0; i < 3; i++) {
      assert_true(run_file_exists(split, "tiny", "amp-fp16", kinds[i], ""));
      assert_false(run_file_exists(split, "tiny", "amp-fp16", kinds[i], ".interrupted"));
      assert_false(run_file_exists(split, "tiny", "amp-fp16", kinds[i], ".inprogress"));
    }
  }
  hl_table *a = csv(full, "tiny", "amp-fp16", "steps"), *b = csv(split, "tiny", "amp-fp16", "steps");
  assert_int_equal(a->nrows, 12);
  assert_int_equal(b->nrows, 12);
  for (int r = 0; r < 12; r++) {
    assert_true(hl_table_num(b, r, "step") == r + 1);
    for (size_t k = 0; k < sizeof exact_cols / sizeof exact_cols[0]; k++)
      if (strcmp(hl_table_get(a, r, exact_cols[k]), hl_table_get(b, r, exact_cols[k])))
        fail_msg("step %d %s: %s uninterrupted, %s resumed", r + 1, exact_cols[k], hl_table_get(a, r, exact_cols[k]),
                 hl_table_get(b, r, exact_cols[k]));
  }
  assert_true(hl_table_num(b, 3, "skipped") == 1 && hl_table_num(b, 8, "skipped") == 1);
  assert_true(empty(b, 6, "fp16_underflow_frac") && !empty(b, 7, "fp16_underflow_frac")); /* step 7: no statistics */
  /* after the checkpoint the scale grew (3 good steps) and backed off at step 9 */
  assert_true(hl_table_num(b, 8, "scale") == 131072 && hl_table_num(b, 9, "scale") == 65536);
  assert_non_null(strstr(b->meta, "# resumed: after step 6"));
  assert_non_null(strstr(b->meta, "# resume-overrides: none"));
  hl_table_free(b);
  /* the summary: every cell but the timings, the skipped steps and the statistics' means over all 12 steps */
  hl_table *sa = csv(full, "tiny", "amp-fp16", "summary"), *sb = csv(split, "tiny", "amp-fp16", "summary");
  assert_int_equal(sa->ncols, sb->ncols);
  for (int c = 0; c < sa->ncols; c++)
    if (!timing_column(sa->cols[c]) && strcmp(sa->cells[0][c], sb->cells[0][c]))
      fail_msg("summary %s: %s uninterrupted, %s resumed", sa->cols[c], sa->cells[0][c], sb->cells[0][c]);
  assert_true(hl_table_num(sb, 0, "skipped") == 2 && hl_table_num(sb, 0, "timed_steps") == 7);
  assert_non_null(strstr(sb->meta, "# resume-overrides: none"));
  hl_table_free(sa);
  hl_table_free(sb);
  /* the histograms, those of steps 2 and 6 from the checkpoint */
  char *ha = data_lines(hl_path(full, "train_tiny_amp-fp16_hist.csv")),
       *hb = data_lines(hl_path(split, "train_tiny_amp-fp16_hist.csv"));
  assert_string_equal(ha, hb);
  assert_non_null(strstr(hb, "amp-fp16,2,unscaled"));
  free(ha);
  free(hb);
  /* the final state, byte for byte */
  size_t la, lb;
  char *fa = state_records(hl_path(dir, "full.ckpt"), &la), *fb = state_records(hl_path(dir, "resumed.ckpt"), &lb);
  assert_true(la == lb && memcmp(fa, fb, la) == 0);
  free(fa);
  free(fb);
  /* a run killed with kill -9 leaves its .inprogress log: the resume continues that one when it is the newest */
  char killed[4096];
  snprintf(killed, sizeof killed, "%s/killed", dir);
  run_ok(NULL, "%s --stop-after 6 --checkpoint %s --out %s", common, hl_path(dir, "k6.ckpt"), killed);
  must_rename(killed, "train_tiny_amp-fp16_steps.csv.interrupted", "train_tiny_amp-fp16_steps.csv.inprogress");
  run_ok(NULL, "--device cpu --resume %s --out %s", hl_path(dir, "k6.ckpt"), killed);
  hl_table *k = csv(killed, "tiny", "amp-fp16", "steps");
  assert_int_equal(k->nrows, 12);
  for (int r = 0; r < 12; r++) assert_string_equal(hl_table_get(k, r, "loss"), hl_table_get(a, r, "loss"));
  hl_table_free(k);
  assert_false(run_file_exists(killed, "tiny", "amp-fp16", "steps", ".inprogress"));
  assert_false(run_file_exists(killed, "tiny", "amp-fp16", "summary", ".interrupted"));
  hl_table_free(a);
  /* a checkpoint of another mode is refused by name before anything is made */
  hl_expect_refused(dir, 2, "mode is amp-fp16 in the checkpoint, fp16-master on the command line",
                    "%s " SMALL " --mode fp16-master --steps 12 --resume %s --out %s/x", train(),
                    hl_path(dir, "six.ckpt"), dir);
  /* an override: more steps, recorded in the metadata (the later histogram step past 12 is the user's) */
  run_ok(NULL, "--device cpu --resume %s --steps 14 --hist-steps 2,6,14 --out %s", hl_path(dir, "six.ckpt"), split);
  hl_table *o = csv(split, "tiny", "amp-fp16", "summary");
  assert_true(hl_table_num(o, 0, "steps_done") == 14);
  assert_non_null(strstr(o->meta, "# resume-overrides: --steps 14 (checkpoint: 12), --hist-steps 2,6,14 (checkpoint: 2,6,11)"));
  hl_table_free(o);
  hl_rmtree(dir);
  free(dir);
}

static void test_inject_nonfinite(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  const char *cases[3] = {"amp-fp16", "fp16-static", "fp16-master"};
  for (int c = 0; c < 3; c++) {
    run_ok(NULL, SMALL " --mode %s --steps 10 --inject-nonfinite 3,7-8 --out %s", cases[c], dir);
    hl_table *t = csv(dir, "tiny", cases[c], "steps");
    assert_int_equal(t->nrows, 10);
    double scale = c == 1 ? 1024 : 65536;
    for (int r = 0; r < 10; r++) {
      const int step = r + 1;
      const bool injected = step == 3 || step == 7 || step == 8;
      assert_true(hl_table_num(t, r, "skipped") == injected);
      assert_true(hl_table_num(t, r, "scale") == scale);
      if (injected) {
        assert_true(empty(t, r, "absorbed_frac")); /* no update, nothing to count */
        if (c != 1) scale /= 2;                    /* dynamic: backs off; static: stays */
      }
    }
    hl_table *s = csv(dir, "tiny", cases[c], "summary");
    assert_true(hl_table_num(s, 0, "skipped") == 3);
    assert_true(hl_table_num(s, 0, "final_scale") == scale);
    hl_table_free(s);
    hl_table_free(t);
  }
  hl_rmtree(dir);
  free(dir);
}

static void test_fp32_nonfinite_fails(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  /* fp32 has no scaler: the inf goes into the weights and the next loss is not finite */
  hl_run_result r = hl_run("%s " SMALL " --mode fp32 --steps 10 --inject-nonfinite 3 --out %s", train(), dir);
  assert_int_equal(r.status, 1);
  if (hl_count_lines(r.err) != 1 || !strstr(r.err, "non-finite loss") || !strstr(r.err, "at step 4"))
    fail_msg("stderr: %s", r.err);
  /* a failed run's files are marked .failed: complete lines up to the failing step, the status in the summary */
  hl_table *t = csv_at(dir, "tiny", "fp32", "steps", ".failed");
  assert_int_equal(t->nrows, 4);
  assert_false(isfinite(hl_table_num(t, 3, "loss")));
  hl_table_free(t);
  t = csv_at(dir, "tiny", "fp32", "summary", ".failed");
  assert_string_equal(hl_table_get(t, 0, "status"), "failed");
  assert_true(hl_table_num(t, 0, "steps_done") == 4);
  hl_table_free(t);
  assert_true(run_file_exists(dir, "tiny", "fp32", "hist", ".failed"));
  assert_false(run_file_exists(dir, "tiny", "fp32", "steps", ""));
  assert_false(run_file_exists(dir, "tiny", "fp32", "steps", ".inprogress"));
  assert_false(run_file_exists(dir, "tiny", "fp32", "summary", ""));
  assert_false(hl_file_exists(hl_path(dir, "train_summary.csv")));
  hl_run_free(&r);
  /* without a scaler in a low-precision mode the divergence is the measurement: status diverged */
  hl_run_result d = hl_run("%s " SMALL " --mode fp16-noscale --steps 10 --inject-nonfinite 3 --out %s", train(), dir);
  assert_int_equal(d.status, 0);
  assert_non_null(strstr(d.err, "diverged"));
  hl_table *s = csv(dir, "tiny", "fp16-noscale", "summary");
  assert_string_equal(hl_table_get(s, 0, "status"), "diverged");
  hl_table_free(s);
  hl_run_free(&d);
  hl_rmtree(dir);
  free(dir);
}

/* --------------------------------------------------------------- signals -- */

static int data_rows(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = -1; /* the header */
  char line[8192];
  while (fgets(line, sizeof line, f))
    if (line[0] != '#') n++;
  fclose(f);
  return n < 0 ? 0 : n;
}

static void stop_with(int sig) {
  char *dir = hl_tmpdir();
  char out[4096], steps[8192];
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(steps, sizeof steps, "%s/train_tiny_amp-fp16_steps.csv.inprogress", out); /* while it runs */
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    execl(train(), "halflab-train", "--device", "cpu", "--mode", "amp-fp16", "--steps", "100000", "--eval-every",
          "20", "--eval-samples", "64", "--out", out, (char *)NULL);
    _exit(127);
  }
  /* wait for a few complete steps */
  struct timespec nap = {0, 20 * 1000 * 1000};
  for (int i = 0; i < 6000 && data_rows(steps) < 4; i++) nanosleep(&nap, NULL);
  assert_true(data_rows(steps) >= 4);
  assert_int_equal(kill(pid, sig), 0);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 128 + sig);
  assert_false(hl_file_exists(steps));
  snprintf(steps, sizeof steps, "%s/train_tiny_amp-fp16_steps.csv.interrupted", out);
  hl_table *t = hl_table_read(steps); /* NULL on a half line */
  assert_non_null(t);
  assert_true(t->nrows >= 4 && t->nrows < 100000);
  const double last = hl_table_num(t, t->nrows - 1, "step");
  for (int r = 0; r < t->nrows; r++) assert_true(hl_table_num(t, r, "step") == r + 1);
  hl_table_free(t);
  hl_table *s = csv_at(out, "tiny", "amp-fp16", "summary", ".interrupted");
  assert_string_equal(hl_table_get(s, 0, "status"), "interrupted");
  assert_true(hl_table_num(s, 0, "steps_done") == last);
  hl_table_free(s);
  assert_true(run_file_exists(out, "tiny", "amp-fp16", "hist", ".interrupted"));
  /* nothing under the final names, no train_summary.csv row, no temporary file */
  assert_false(run_file_exists(out, "tiny", "amp-fp16", "summary", ""));
  assert_false(run_file_exists(out, "tiny", "amp-fp16", "summary", ".interrupted.tmp"));
  assert_false(hl_file_exists(hl_path(out, "train_summary.csv")));
  hl_rmtree(dir);
  free(dir);
}

static void test_sigint(void **state) {
  (void)state;
  stop_with(SIGINT);
}

static void test_sigterm(void **state) {
  (void)state;
  stop_with(SIGTERM);
}

/* ------------------------------------------------------------- bad input -- */

static void expect_bad(int status, const char *args, const char *words) {
  char *dir = hl_tmpdir();
  hl_expect_refused(dir, status, words, "%s --device cpu --out %s/out %s", train(), dir, args);
  hl_rmtree(dir);
  free(dir);
}

static void test_bad_input(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_write_file(hl_path(dir, "empty.txt"), "", 0);
  hl_write_file(hl_path(dir, "short.txt"), "0123456789", 10);
  hl_write_file(hl_path(dir, "bad.ckpt"), "HLCKPT not really", 17);
  char args[4200];
  expect_bad(2, "--heads 3", "3 heads do not divide the width 64");
  expect_bad(2, "--layers 0", "must all be positive");
  expect_bad(2, "--mode fp8", "unknown mode 'fp8'");
  expect_bad(2, "--mode", "needs a value");
  expect_bad(2, "--optimizer lamb", "lamb");
  expect_bad(2, "--task chess", "chess");
  expect_bad(2, "--steps -1", "--steps");
  expect_bad(2, "--lr nan", "--lr");
  expect_bad(2, "--batch 0", "--batch");
  expect_bad(2, "--seq 8", "shorter than one sorting problem");
  expect_bad(2, "--vocab 5", "smaller than the 11 tokens");
  expect_bad(2, "--inject-nonfinite 50 --steps 10", "past the last step");
  expect_bad(2, "--inject-nonfinite x", "--inject-nonfinite");
  expect_bad(2, "--mode fp32 --init-scale 8", "no");
  expect_bad(2, "--grad-penalty 0.1", "differentiable once");
  expect_bad(2, "--model mlp --text x.txt", "needs --model gpt");
  expect_bad(2, "--preset gpt9", "unknown preset 'gpt9' (tiny, small or gpt2)");
  expect_bad(2, "--preset small --model mlp", "--preset small is a GPT preset");
  expect_bad(2, "--preset small --heads 5", "5 heads do not divide the width 384");
  expect_bad(2, "--preset small --seq 200000", "the generated text has");
  expect_bad(2, "--frobnicate", "frobnicate");
  expect_bad(2, "stray", "stray");
  expect_bad(2, "--text /nonexistent/book.txt", "cannot read");
  snprintf(args, sizeof args, "--text %s", hl_path(dir, "empty.txt"));
  expect_bad(2, args, "is empty");
  snprintf(args, sizeof args, "--text %s", hl_path(dir, "short.txt"));
  expect_bad(2, args, "need at least");
  /* a batch that cannot fit, refused before anything is allocated */
  expect_bad(2, "--preset gpt2 --batch 100000", "needs about");
  expect_bad(2, "--model mlp --hidden 100000,100000 --batch 1000000", "needs about");
  snprintf(args, sizeof args, "--resume %s", hl_path(dir, "bad.ckpt"));
  expect_bad(2, args, "--resume");
  snprintf(args, sizeof args, "--init-weights %s", hl_path(dir, "bad.ckpt"));
  expect_bad(2, args, "--init-weights");
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------------- peers -- */

static void test_peer_files(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  run_ok(NULL, SMALL " --steps 0 --save-init %s --export-batches %s --export-steps 3", hl_path(dir, "w.bin"),
         hl_path(dir, "b.bin"));
  assert_int_equal(hl_count_files(dir), 2); /* nothing else: --steps 0 trains nothing */
  size_t n;
  unsigned char *b = (unsigned char *)hl_read_file(hl_path(dir, "b.bin"), &n);
  assert_non_null(b);
  assert_memory_equal(b, "HLBAT001", 8);
  uint32_t h[7];
  memcpy(h, b + 8, sizeof h);
  assert_int_equal(h[0], 16); /* rows */
  assert_int_equal(h[1], 16); /* T */
  assert_int_equal(h[2], 11); /* vocab: 10 digits and the separator */
  assert_int_equal(h[3], 11);
  assert_int_equal(h[4], 3); /* micro-batches */
  assert_int_equal(h[5], 1);
  assert_int_equal(h[6], 32); /* eval rows */
  assert_int_equal(n, 8 + 28 + 3 * 16 * 16 * 9 + 32 * 16 * 9 + 4);
  uint32_t crc;
  memcpy(&crc, b + n - 4, 4);
  assert_int_equal(crc, hl_test_crc32(b, n - 4));
  const int32_t *idx = (const int32_t *)(b + 36), *tgt = idx + 256;
  for (int r = 0; r < 16; r++)
    for (int t = 0; t + 1 < 16; t++) assert_int_equal(tgt[r * 16 + t], idx[r * 16 + t + 1]);
  free(b);

  /* starting from the saved weights is starting from the seeded init: the same first steps, bit for bit */
  run_ok(NULL, SMALL " --steps 3 --name seeded --out %s", dir);
  run_ok(NULL, SMALL " --steps 3 --name loaded --init-weights %s --out %s", hl_path(dir, "w.bin"), dir);
  hl_table *a = csv(dir, "seeded", "fp32", "steps"), *c = csv(dir, "loaded", "fp32", "steps");
  for (int r = 0; r < 3; r++) {
    assert_string_equal(hl_table_get(a, r, "loss"), hl_table_get(c, r, "loss"));
    assert_string_equal(hl_table_get(a, r, "grad_norm"), hl_table_get(c, r, "grad_norm"));
  }
  hl_table_free(a);
  hl_table_free(c);
  /* another model's weights are refused */
  hl_run_result r = hl_run("%s " SMALL " --steps 3 --embd 32 --init-weights %s --out %s/x", train(),
                           hl_path(dir, "w.bin"), dir);
  assert_int_equal(r.status, 2);
  assert_false(hl_file_exists(hl_path(dir, "x")));
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------- other recipes -- */

static void test_mlp_recipes(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  /* accumulation, clipping and the gradient penalty together, under fp16 loss scaling */
  run_ok(NULL, "--device cpu --model mlp --mode amp-fp16 --steps 6 --batch 32 --eval-samples 64 --accum 2 "
               "--clip-norm 0.5 --grad-penalty 0.01 --out %s",
         dir);
  hl_table *t = csv(dir, "mlp-tiny", "amp-fp16", "steps");
  assert_int_equal(t->nrows, 6);
  for (int r = 0; r < 6; r++) {
    assert_true(isfinite(hl_table_num(t, r, "loss")));
    assert_true(hl_table_num(t, r, "grad_norm") > 0);
    assert_true(fabs(hl_table_num(t, r, "samples_per_s") * hl_table_num(t, r, "step_time_ms") / 1e3 / 64 - 1) < 1e-6); /* 2 x 32 */
    assert_true(empty(t, r, "tokens_per_s"));
  }
  hl_table_free(t);
  run_ok(NULL, "--device cpu --model mlp --mode fp16-pure --optimizer sgd --lr 0.01 --steps 4 --out %s", dir);
  t = csv(dir, "mlp-tiny", "fp16-pure", "steps");
  assert_int_equal(t->nrows, 4);
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------- the cast cache -- */

static void must_run(hl_run_result r) {
  if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
  hl_run_free(&r);
}

/* The summary's autocast columns for one run, per forward (micro-batch). */
static void check_cast_counts(const char *dir, const char *name, const char *mode, double forwards, double misses,
                              double uncached, double hits) {
  hl_table *s = csv(dir, name, mode, "summary");
  print_message("%s %s: %s casts, %s cache misses, %s hits, hit rate '%s' over %g forwards\n", name, mode,
                hl_table_get(s, 0, "autocast_casts"), hl_table_get(s, 0, "autocast_cache_misses"),
                hl_table_get(s, 0, "autocast_cache_hits"), hl_table_get(s, 0, "autocast_cache_hit_rate"), forwards);
  assert_true(hl_table_num(s, 0, "autocast_cache_misses") == misses * forwards);
  assert_true(hl_table_num(s, 0, "autocast_casts") == (misses + uncached) * forwards);
  assert_true(hl_table_num(s, 0, "autocast_cache_hits") == hits * forwards);
  if (misses + hits > 0) assert_true(hl_table_num(s, 0, "autocast_cache_hit_rate") == hits / (misses + hits));
  else assert_true(empty(s, 0, "autocast_cache_hit_rate")); /* no weight cast asked for: no rate */
  hl_table_free(s);
}

/* What the model's structure implies for autocast's casts (docs/train.md,
 * "The cast cache"), evaluation left out. The tiny GPT under bf16 autocast,
 * per forward: the weight and bias of each block's 4 linears (c_attn,
 * attn.c_proj, mlp.c_fc, mlp.c_proj) and the tied head's token embedding,
 * each a miss (cast, then cached); 4 casts per block that are never cached
 * (ln_1's and ln_2's f32 outputs to bf16, the bf16 scores to f32 for the
 * softmax, its f32 output to bf16 for the product with v) and 2 at the head
 * (ln_f's output, the bf16 logits to f32 for the loss); no weight is used
 * twice in a forward, so no hits. Each micro-batch's forward is its own
 * region: --accum 2 casts every weight twice per step. The MLP: the weight
 * and bias of each linear, its f32 input and its logits. */
static void test_cast_cache_counts(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  const int steps = 3;
  for (int accum = 1; accum <= 2; accum++) {
    hl_run_result r;
    run_ok(&r, SMALL " --steps %d --mode amp-bf16 --accum %d --name cast-accum%d --out %s", steps, accum, accum, dir);
    char name[32];
    snprintf(name, sizeof name, "cast-accum%d", accum);
    hl_table *s = csv(dir, name, "amp-bf16", "summary");
    const double layers = hl_table_num(s, 0, "layers");
    hl_table_free(s);
    assert_true(layers == 2); /* the tiny preset */
    const double misses = 8 * layers + 1, uncached = 4 * layers + 2;
    check_cast_counts(dir, name, "amp-bf16", steps * accum, misses, uncached, 0);
    /* and the line at the end of the run, per step */
    char want[160];
    snprintf(want, sizeof want, "autocast bf16 casts per step: %.1f made (%.1f of weights, then cached; %.1f of",
             (misses + uncached) * accum, misses * accum, uncached * accum);
    if (!strstr(r.out, want)) fail_msg("stdout lacks '%s':\n%s", want, r.out);
    assert_non_null(strstr(r.out, "0.0 answered by the cache; cache hit rate 0.0%"));
    hl_run_free(&r);
  }
  run_ok(NULL, "--device cpu --model mlp --mode amp-bf16 --steps %d --batch 32 --eval-samples 64 --out %s", steps, dir);
  hl_table *s = csv(dir, "mlp-tiny", "amp-bf16", "summary");
  const double linears = hl_table_num(s, 0, "layers"); /* hidden layers + the output layer */
  hl_table_free(s);
  assert_true(linears == 3);
  check_cast_counts(dir, "mlp-tiny", "amp-bf16", steps, 2 * linears, 2, 0);
  /* without autocast nothing is cast, and there is no rate to give */
  hl_run_result r;
  run_ok(&r, SMALL " --steps %d --mode fp32 --out %s", steps, dir);
  check_cast_counts(dir, "tiny", "fp32", steps, 0, 0, 0);
  assert_null(strstr(r.out, "autocast"));
  hl_run_free(&r);
  /* an older halflab's train_summary.csv (without these columns at its end) keeps its rows, the new cells
   * empty */
  /* the older header: the 4 autocast columns, the 7 data-parallel ones and the 4 provenance ones cut off */
  must_run(hl_run("sed -E -i '/^#/!{s/(,[^,]*){15}$//; s/^tiny,fp32,/older,fp32,/}' '%s'",
                  hl_path(dir, "train_summary.csv")));
  run_ok(NULL, SMALL " --steps 1 --mode amp-bf16 --name newer --out %s", dir);
  hl_table *all = hl_table_read(hl_path(dir, "train_summary.csv"));
  assert_non_null(all);
  const int older = hl_table_find(all, "name", "older", NULL), newer = hl_table_find(all, "name", "newer", NULL);
  assert_true(older >= 0 && newer >= 0);
  assert_true(empty(all, older, "autocast_casts") && empty(all, older, "autocast_cache_hit_rate") &&
              empty(all, older, "ranks") && empty(all, older, "version") && empty(all, older, "date"));
  assert_string_equal(hl_table_get(all, newer, "ranks"), "1");
  assert_true(hl_table_num(all, older, "steps_done") == steps && hl_table_num(all, newer, "autocast_casts") > 0);
  /* the older table's lines described its last run only: none is known to hold for the older row, so only
   * the lines about the file stay, and the newer row carries its provenance */
  assert_false(hl_file_exists(hl_path(dir, "train_summary.csv.inprogress")));
  assert_null(strstr(all->meta, "# command: "));
  assert_null(strstr(all->meta, "# cpu-features: "));
  assert_non_null(strstr(all->meta, "# rows: one per run"));
  assert_false(empty(all, newer, "version") || empty(all, newer, "date") || empty(all, newer, "cpu_units"));
  const int rows_before = all->nrows;
  hl_table_free(all);
  /* columns are matched by name: in another order, and with one this halflab does not write (its cells dropped,
   * said on stderr), every other run's row stays */
  must_run(hl_run("awk -F, -v OFS=, '/^#/ { print; next } { t = $1; $1 = $2; $2 = t; print $0 \",\" (h++ ? \"x\" : \"extra\") }' "
                  "'%s' > '%s.new' && mv '%s.new' '%s'",
                  hl_path(dir, "train_summary.csv"), hl_path(dir, "train_summary.csv"), hl_path(dir, "train_summary.csv"),
                  hl_path(dir, "train_summary.csv")));
  r = hl_run_ok("%s " SMALL " --steps 1 --mode amp-bf16 --name reordered --out %s", train(), dir);
  assert_non_null(strstr(r.err, "columns this halflab-train does not write are dropped: extra"));
  hl_run_free(&r);
  all = hl_table_read(hl_path(dir, "train_summary.csv"));
  assert_int_equal(all->nrows, rows_before + 1);
  assert_int_equal(hl_table_col(all, "extra"), -1);
  assert_true(hl_table_find(all, "name", "older", "mode", "fp32", NULL) >= 0);
  assert_true(hl_table_find(all, "name", "newer", "mode", "amp-bf16", NULL) >= 0);
  hl_table_free(all);
  /* a table without name and mode columns cannot be understood: left as it is (its rows may be other runs'),
   * the run's row in a table of its own, named on stderr */
  must_run(hl_run("sed -i '/^#/!s/^name,/label,/' '%s'", hl_path(dir, "train_summary.csv")));
  char *unknown = hl_read_file(hl_path(dir, "train_summary.csv"), NULL);
  r = hl_run_ok("%s " SMALL " --steps 1 --mode amp-bf16 --name newest --out %s", train(), dir);
  assert_true(hl_has_line(r.err, "train_summary.csv is left as it is (it has no header with name and mode columns",
                          "train_summary_unmerged_newest_amp-bf16.csv"));
  hl_run_free(&r);
  char *after = hl_read_file(hl_path(dir, "train_summary.csv"), NULL);
  assert_string_equal(after, unknown);
  free(after);
  free(unknown);
  all = hl_table_read(hl_path(dir, "train_summary_unmerged_newest_amp-bf16.csv"));
  assert_int_equal(all->nrows, 1);
  hl_table_free(all);
  unlink(hl_path(dir, "train_summary.csv"));
  /* fp16 weights under fp16 autocast: no f32 weight to cast, so no cache lookups and no rate */
  run_ok(NULL, SMALL " --steps %d --mode fp16-master --out %s", steps, dir);
  s = csv(dir, "tiny", "fp16-master", "summary");
  assert_true(hl_table_num(s, 0, "autocast_cache_misses") == 0 && hl_table_num(s, 0, "autocast_cache_hits") == 0);
  assert_true(hl_table_num(s, 0, "autocast_casts") > 0 && empty(s, 0, "autocast_cache_hit_rate"));
  hl_table_free(s);
  hl_rmtree(dir);
  free(dir);
}

/* ---------------------------------------------- train_summary.csv's provenance -- */

/* The value of the metadata line "# KEY: " of a table ("" when it has none); key "halflab" gives the
 * version after "# halflab ". */
static const char *meta_value(const hl_table *t, const char *key, char *out, size_t len) {
  char want[64];
  snprintf(want, sizeof want, !strcmp(key, "halflab") ? "# %s " : "# %s: ", key);
  const char *at = strstr(t->meta, want);
  const char *eol = at ? strchr(at, '\n') : NULL;
  snprintf(out, len, "%.*s", at && eol ? (int)(eol - at - strlen(want)) : 0, at ? at + strlen(want) : "");
  return out;
}

/* The row of the run (name, mode) of train_summary.csv carries what its own summary file's lines say
 * of its build, start and units (`units`: the cpu_units expected). */
static void check_row_provenance(const char *dir, const hl_table *all, const char *name, const char *mode,
                                 const char *units) {
  const int row = hl_table_find(all, "name", name, "mode", mode, NULL);
  assert_true(row >= 0);
  hl_table *own = csv(dir, name, mode, "summary");
  char v[512];
  assert_string_equal(hl_table_get(all, row, "version"), meta_value(own, "halflab", v, sizeof v));
  assert_string_equal(hl_table_get(all, row, "date"), meta_value(own, "date", v, sizeof v));
  assert_string_equal(hl_table_get(all, row, "cpu_units"), units);
  assert_true(strstr(meta_value(own, "blas", v, sizeof v), hl_table_get(all, row, "blas_kernels")) != NULL);
  assert_int_equal(hl_table_col(own, "version"), -1); /* a run's own file says it in its lines */
  hl_table_free(own);
}

static void test_summary_provenance(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), table[4200];
  snprintf(table, sizeof table, "%s/train_summary.csv", dir);
  /* the CPU's units (all: the default, whatever the environment), then none of them (portable) */
  hl_run_result r = hl_run_ok("HALFLAB_CPU_UNITS=all %s " SMALL " --steps 1 --mode fp32 --name first --out %s", train(), dir);
  hl_run_free(&r);
  hl_table *all = hl_table_read(table);
  assert_int_equal(all->nrows, 1);
  /* one row: the run's own lines, whole */
  assert_non_null(strstr(all->meta, "--name first"));
  assert_non_null(strstr(all->meta, "# cpu-units: "));
  char units[128];
  snprintf(units, sizeof units, "%s", hl_table_get(all, 0, "cpu_units"));
  assert_true(units[0] && strcmp(units, "portable") && !strchr(units, ','));
  check_row_provenance(dir, all, "first", "fp32", units);
  hl_table_free(all);
  /* as if the first run were an earlier build's, with a line of its own */
  must_run(hl_run("awk -F, -v OFS=, '/^# date: / { print \"# date: 2026-01-01T00:00:00Z\"; next } "
                  "/^# halflab / { print; print \"# planted: the first run only\"; next } /^#/ { print; next } "
                  "!h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } "
                  "{ $c[\"version\"] = \"0.0.9 (0ld0ld0)\"; $c[\"date\"] = \"2026-01-01T00:00:00Z\"; print }' "
                  "'%s' > '%s.new' && mv '%s.new' '%s'",
                  table, table, table, table));
  all = hl_table_read(table);
  assert_string_equal(hl_table_get(all, 0, "version"), "0.0.9 (0ld0ld0)");
  assert_non_null(strstr(all->meta, "# planted: "));
  hl_table_free(all);
  /* a run of other units appended: every row keeps its own provenance; the lines are those both share */
  r = hl_run_ok("HALFLAB_CPU_UNITS=portable %s " SMALL " --steps 1 --mode amp-bf16 --name second --out %s", train(), dir);
  hl_run_free(&r);
  all = hl_table_read(table);
  assert_int_equal(all->nrows, 2);
  const int first = hl_table_find(all, "name", "first", NULL);
  assert_string_equal(hl_table_get(all, first, "version"), "0.0.9 (0ld0ld0)");
  assert_string_equal(hl_table_get(all, first, "date"), "2026-01-01T00:00:00Z");
  assert_string_equal(hl_table_get(all, first, "cpu_units"), units);
  check_row_provenance(dir, all, "second", "amp-bf16", "portable");
  const char *gone[] = {"# command: ", "# date: ", "# cpu-units: ", "# planted: ", "# run: ", "# mode: "};
  for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
    if (strstr(all->meta, gone[i])) fail_msg("train_summary.csv keeps '%s', which not every row's run shares", gone[i]);
  const char *kept[] = {"# halflab ", "# schema: ", "# cpu-features: ", "# blas: ", "# rows: one per run"};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
    if (!strstr(all->meta, kept[i])) fail_msg("train_summary.csv lacks '%s', which every row's run shares", kept[i]);
  hl_table_free(all);
  /* a third run like the first: a line the second run lacks stays out */
  r = hl_run_ok("HALFLAB_CPU_UNITS=all %s " SMALL " --steps 1 --mode fp32 --name third --out %s", train(), dir);
  hl_run_free(&r);
  all = hl_table_read(table);
  assert_int_equal(all->nrows, 3);
  check_row_provenance(dir, all, "third", "fp32", units);
  assert_null(strstr(all->meta, "# cpu-units: "));
  assert_non_null(strstr(all->meta, "# cpu-features: "));
  assert_string_equal(hl_table_get(all, hl_table_find(all, "name", "first", NULL), "version"), "0.0.9 (0ld0ld0)");
  hl_table_free(all);
  hl_rmtree(dir);
  free(dir);
}

static void test_text(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  FILE *f = fopen(hl_path(dir, "book.txt"), "w");
  for (int i = 0; i < 200; i++) fprintf(f, "the quick brown fox %d jumps over the lazy dog.\n", i);
  fclose(f);
  run_ok(NULL, "--device cpu --text %s --seq 32 --batch 8 --steps 5 --eval-samples 8 --out %s", hl_path(dir, "book.txt"),
         dir);
  hl_table *t = csv(dir, "tiny-text", "fp32", "steps");
  assert_int_equal(t->nrows, 5);
  assert_true(hl_table_num(t, 4, "eval_acc") >= 0);
  assert_true(fabs(hl_table_num(t, 0, "tokens_per_s") / hl_table_num(t, 0, "samples_per_s") - 32) < 1e-6);
  hl_table_free(t);
  hl_table *s = csv(dir, "tiny-text", "fp32", "summary");
  assert_string_equal(hl_table_get(s, 0, "task"), "text");
  assert_true(hl_table_num(s, 0, "vocab") == 256);
  hl_table_free(s);
  hl_rmtree(dir);
  free(dir);
}

/* The small preset, the CPU timing configuration: GPT of 6 layers, width
 * 384, 6 heads, 16 x 128 tokens of the generated English-like text, AdamW
 * 3e-4; two steps, and the generated text the same for a seed and another
 * for another seed. */
static void test_small_preset(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  run_ok(NULL, "--device cpu --preset small --steps 2 --eval-samples 4 --out %s", dir);
  hl_table *t = csv(dir, "small", "fp32", "steps");
  assert_int_equal(t->nrows, 2);
  assert_true(fabs(hl_table_num(t, 0, "tokens_per_s") / hl_table_num(t, 0, "samples_per_s") - 128) < 1e-6);
  /* an untrained model over 256 bytes is near ln 256; one AdamW step already lowers the loss */
  const double first = hl_table_num(t, 0, "loss"), second = hl_table_num(t, 1, "loss");
  print_message("small preset: loss %.4f then %.4f (ln 256 = %.4f), %.0f ms per step\n", first, second, log(256.0),
                hl_table_num(t, 1, "step_time_ms"));
  assert_true(fabs(first - log(256.0)) < 0.5);
  assert_true(second < first);
  assert_true(hl_table_num(t, 1, "eval_loss") > 0);
  assert_non_null(strstr(t->meta, "# data: text: generated English-like sentences"));
  hl_table_free(t);
  hl_table *s = csv(dir, "small", "fp32", "summary");
  const int L = 6, C = 384, V = 256, T = 128;
  assert_int_equal((int)hl_table_num(s, 0, "layers"), L);
  assert_int_equal((int)hl_table_num(s, 0, "heads"), 6);
  assert_int_equal((int)hl_table_num(s, 0, "embd"), C);
  assert_int_equal((int)hl_table_num(s, 0, "vocab"), V);
  assert_int_equal((int)hl_table_num(s, 0, "seq"), T);
  assert_int_equal((int)hl_table_num(s, 0, "batch"), 16);
  assert_string_equal(hl_table_get(s, 0, "task"), "text");
  assert_string_equal(hl_table_get(s, 0, "optimizer"), "adamw");
  assert_true(hl_table_num(s, 0, "lr") == 3e-4);
  /* GPT-2's layout: embeddings, per block 12 C^2 + 13 C (attention, MLP, two layer norms), the final layer norm */
  const double params = (double)V * C + (double)T * C + L * (12.0 * C * C + 13.0 * C) + 2.0 * C;
  assert_true(hl_table_num(s, 0, "params") == params);
  hl_table_free(s);

  run_ok(NULL, "--device cpu --preset small --steps 0 --export-batches %s --export-steps 1 --eval-samples 4",
         hl_path(dir, "a.bin"));
  run_ok(NULL, "--device cpu --preset small --steps 0 --export-batches %s --export-steps 1 --eval-samples 4",
         hl_path(dir, "b.bin"));
  run_ok(NULL, "--device cpu --preset small --steps 0 --export-batches %s --export-steps 1 --eval-samples 4 --seed 2",
         hl_path(dir, "c.bin"));
  size_t la, lb, lc;
  char *a = hl_read_file(hl_path(dir, "a.bin"), &la), *b = hl_read_file(hl_path(dir, "b.bin"), &lb),
       *c = hl_read_file(hl_path(dir, "c.bin"), &lc);
  assert_true(a && b && c);
  assert_true(la == lb && !memcmp(a, b, la));
  assert_true(la == lc && memcmp(a, c, la));
  free(a);
  free(b);
  free(c);
  hl_rmtree(dir);
  free(dir);
}

static void test_listing_and_trace(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r;
  run_ok(&r, "--device cpu --list-params --mode fp16-master --out %s/x", dir);
  assert_non_null(strstr(r.out, "f16   transformer.wte.weight"));
  assert_non_null(strstr(r.out, "f16   transformer.h.1.mlp.c_proj.weight"));
  assert_non_null(strstr(r.out, "[256,64]"));
  assert_non_null(strstr(r.out, "+ f32 master"));
  assert_non_null(strstr(r.out, "28 parameters"));
  assert_false(hl_file_exists(hl_path(dir, "x")));
  hl_run_free(&r);
  run_ok(&r, "--device cpu --list-params --mode amp-bf16");
  assert_non_null(strstr(r.out, "f32   transformer.h.0.attn.c_attn.weight"));
  assert_non_null(strstr(r.out, "[192,64]"));
  assert_non_null(strstr(r.out, "bf16 autocast"));
  hl_run_free(&r);
  run_ok(&r, "--device cpu --list-params --model mlp");
  assert_non_null(strstr(r.out, "fc3.bias"));
  hl_run_free(&r);
  /* the first step's ops, and only the first step's */
  run_ok(&r, SMALL " --mode amp-fp16 --steps 2 --trace-ops --out %s", dir);
  assert_non_null(strstr(r.err, "autocast cpu f16: lower precision"));
  assert_non_null(strstr(r.err, "cross_entropy"));
  assert_non_null(strstr(r.err, "(backward)"));
  int embeddings = 0; /* wte and wpe, in one traced forward */
  for (const char *p = r.err; (p = strstr(p, "trace: embedding ")); p++) embeddings++;
  assert_int_equal(embeddings, 2);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------------ --profile -- */

/* The tiny GPT's forward: per layer 4 linears (qkv, attention projection,
 * fc, mlp projection) and 2 attention matmuls, plus the tied head's linear;
 * the backward: 2 mm per linear (input and weight gradients), 2 matmuls per
 * matmul. */
enum { TINY_LAYERS = 2, FWD_LINEAR = 4 * TINY_LAYERS + 1, FWD_MATMUL = 2 * TINY_LAYERS };

static double profile_num(const hl_table *t, const char *phase, const char *op, const char *col) {
  const int r = hl_table_find(t, "phase", phase, "op", op, NULL);
  if (r < 0) fail_msg("profile: no row %s,%s", phase, op);
  return hl_table_num(t, r, col);
}

/* A profile CSV read back: its steps, the phases, calls, the ops' times
 * within the phases' and the step's, and the products the model runs. */
static hl_table *check_profile(const char *dir, const char *mode, int steps, int warmup) {
  hl_table *t = csv(dir, "tiny", mode, "profile");
  const char *cols[] = {"phase", "op", "kind", "calls", "calls_per_step", "time_ms", "time_ms_per_step",
                        "time_of_step_pct", "bytes", "gb_per_s"};
  for (int k = 0; k < 10; k++) assert_true(hl_table_col(t, cols[k]) >= 0);
  const char *m = strstr(t->meta, "# profile_steps: ");
  assert_non_null(m);
  const int profiled = steps - warmup;
  assert_int_equal(strtol(m + strlen("# profile_steps: "), NULL, 10), profiled);
  assert_non_null(strstr(t->meta, "# profile_time: self time"));
  assert_non_null(strstr(t->meta, "# profile_bytes: "));

  /* the step total is the steps CSV's step_time_ms over the profiled steps */
  hl_table *st = csv(dir, "tiny", mode, "steps");
  double step_ms = 0;
  for (int r = warmup; r < steps; r++) step_ms += hl_table_num(st, r, "step_time_ms");
  hl_table_free(st);
  const double total = profile_num(t, "step", "(step total)", "time_ms");
  assert_true(fabs(total - step_ms) <= 1e-3 * step_ms);
  assert_true(fabs(profile_num(t, "step", "(step total)", "time_of_step_pct") - 100) < 1e-9);

  const char *phases[] = {"forward", "backward", "optimizer", "other"};
  double ops_ms[4] = {0}, all_ops = 0, prev = INFINITY;
  for (int r = 0; r < t->nrows; r++) {
    const char *kind = hl_table_get(t, r, "kind");
    if (strcmp(kind, "op") && strcmp(kind, "kernel")) continue;
    const double ms = hl_table_num(t, r, "time_ms");
    assert_true(ms >= 0 && ms <= prev); /* sorted by time */
    prev = ms;
    assert_true(hl_table_num(t, r, "calls") > 0);
    assert_true(hl_table_num(t, r, "bytes") >= 0);
    int p = 0;
    while (p < 4 && strcmp(hl_table_get(t, r, "phase"), phases[p])) p++;
    assert_true(p < 4);
    ops_ms[p] += ms;
    all_ops += ms;
  }
  double phases_ms = 0;
  for (int p = 0; p < 4; p++) {
    const double wall = profile_num(t, phases[p], "(phase total)", "time_ms");
    assert_true(ops_ms[p] <= wall * (1 + 1e-6) + 1e-6); /* within the phase's time */
    assert_true(fabs(profile_num(t, phases[p], "(unattributed)", "time_ms") - (wall - ops_ms[p])) < 1e-3 + 1e-6 * wall);
    phases_ms += wall;
  }
  assert_true(profile_num(t, "forward", "(phase total)", "calls") > 0);
  assert_true(profile_num(t, "backward", "(phase total)", "calls") > 0);
  assert_true(profile_num(t, "optimizer", "(phase total)", "calls") > 0);
  assert_true(all_ops <= total); /* the ops' times add up to no more than the step */
  assert_true(fabs(phases_ms - total) <= 0.05 * total + 0.5); /* the phases tile the step (the clocks read apart) */

  /* what the model does per step */
  assert_true(profile_num(t, "forward", "linear", "calls_per_step") == FWD_LINEAR);
  assert_true(profile_num(t, "forward", "matmul", "calls_per_step") == FWD_MATMUL);
  assert_int_equal(hl_table_find(t, "phase", "forward", "op", "mm", NULL), -1);
  assert_true(profile_num(t, "backward", "mm", "calls_per_step") == 2 * FWD_LINEAR);
  assert_true(profile_num(t, "backward", "matmul", "calls_per_step") == 2 * FWD_MATMUL);
  assert_true(profile_num(t, "forward", "linear", "calls") == FWD_LINEAR * profiled);
  assert_true(profile_num(t, "optimizer", "optim.adamw", "calls_per_step") == 1);
  assert_string_equal(hl_table_get(t, hl_table_find(t, "phase", "optimizer", "op", "optim.adamw", NULL), "kind"),
                      "kernel");
  return t;
}

static void test_profile(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  run_ok(NULL, SMALL " --steps 4 --warmup 1 --mode fp32 --profile --out %s", dir);
  run_ok(NULL, SMALL " --steps 4 --warmup 1 --mode amp-bf16 --profile --out %s", dir);
  hl_table *f = check_profile(dir, "fp32", 4, 1), *b = check_profile(dir, "amp-bf16", 4, 1);
  /* fp32 casts nothing; amp-bf16's casts are ops, and its products move half the bytes */
  assert_int_equal(hl_table_find(f, "op", "to", NULL), -1);
  assert_true(profile_num(b, "forward", "to", "calls") > 0);
  assert_true(profile_num(b, "backward", "to", "calls") > 0);
  assert_true(profile_num(b, "forward", "linear", "bytes") * 2 == profile_num(f, "forward", "linear", "bytes"));
  hl_table_free(f);
  hl_table_free(b);
  /* a run shorter than its warm-up profiles every step, as the summary times them */
  run_ok(NULL, SMALL " --steps 2 --warmup 5 --mode fp32 --name short --profile --out %s", dir);
  hl_table *s = csv(dir, "short", "fp32", "profile");
  assert_non_null(strstr(s->meta, "# profile_steps: 2 (steps 1 to 2"));
  hl_table_free(s);

  /* without --profile no profile is written */
  run_ok(NULL, SMALL " --steps 2 --mode fp32 --name plain --out %s", dir);
  assert_false(hl_file_exists(hl_path(dir, "train_plain_fp32_profile.csv")));
  /* a failed run (a non-finite loss in fp32) leaves the completed run's profile as it was; its own is marked */
  size_t n0, n1;
  char *before = hl_read_file(hl_path(dir, "train_tiny_fp32_profile.csv"), &n0);
  hl_run_result r = hl_run("%s " SMALL " --mode fp32 --steps 6 --inject-nonfinite 3 --profile --out %s", train(), dir);
  assert_int_equal(r.status, 1);
  hl_run_free(&r);
  char *after = hl_read_file(hl_path(dir, "train_tiny_fp32_profile.csv"), &n1);
  assert_true(n0 == n1 && !memcmp(before, after, n0));
  free(before);
  free(after);
  assert_true(hl_file_exists(hl_path(dir, "train_tiny_fp32_profile.csv.failed")));
  /* a completed run without --profile leaves no earlier run's profile beside its own files; the failed
   * run was another run (another run_id: other --steps), whose files stay */
  run_ok(NULL, SMALL " --steps 2 --mode fp32 --out %s", dir);
  assert_false(hl_file_exists(hl_path(dir, "train_tiny_fp32_profile.csv")));
  assert_true(hl_file_exists(hl_path(dir, "train_tiny_fp32_profile.csv.failed")));
  assert_true(hl_file_exists(hl_path(dir, "train_tiny_fp32_steps.csv.failed")));
  /* an earlier attempt of the same run (--stop-after is not part of it) is superseded when it completes */
  run_ok(NULL, SMALL " --steps 4 --stop-after 2 --mode fp32 --name again --out %s", dir);
  assert_true(hl_file_exists(hl_path(dir, "train_again_fp32_steps.csv.interrupted")));
  run_ok(NULL, SMALL " --steps 4 --mode fp32 --name again --out %s", dir);
  assert_false(hl_file_exists(hl_path(dir, "train_again_fp32_steps.csv.interrupted")));
  assert_false(hl_file_exists(hl_path(dir, "train_again_fp32_summary.csv.interrupted")));
  hl_rmtree(dir);
  free(dir);
}

/* --profile with an output it cannot write: refused before the run, one
 * line, exit 2, nothing created. */
static void test_profile_refused(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_write_file(hl_path(dir, "file"), "x", 1);
  hl_expect_refused(dir, 2, "--out", "%s " SMALL " --steps 2 --profile --out %s/file/out", train(), dir);
  /* the profile's own path taken by a folder: the run's other files are not started either */
  char *out = strdup(hl_path(dir, "out"));
  assert_int_equal(mkdir(out, 0755), 0);
  assert_int_equal(mkdir(hl_path(out, "train_tiny_fp32_profile.csv"), 0755), 0);
  hl_expect_refused(out, 2, "--profile: cannot write", "%s " SMALL " --steps 2 --profile --out %s", train(), out);
  hl_expect_refused(dir, 2, "--profile", "%s " SMALL " --steps 0 --save-init %s/w.bin --profile --out %s", train(),
                    dir, out);
  free(out);
  hl_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_listing_and_trace),
      cmocka_unit_test(test_profile),
      cmocka_unit_test(test_profile_refused),
      cmocka_unit_test(test_every_mode),
      cmocka_unit_test(test_resume_bit_identical),
      cmocka_unit_test(test_inject_nonfinite),
      cmocka_unit_test(test_fp32_nonfinite_fails),
      cmocka_unit_test(test_sigint),
      cmocka_unit_test(test_sigterm),
      cmocka_unit_test(test_peer_files),
      cmocka_unit_test(test_mlp_recipes),
      cmocka_unit_test(test_cast_cache_counts),
      cmocka_unit_test(test_summary_provenance),
      cmocka_unit_test(test_text),
      cmocka_unit_test(test_small_preset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
