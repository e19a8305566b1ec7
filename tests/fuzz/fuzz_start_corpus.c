/* fuzz_start_corpus.c — fuzz_start_corpus DIR: writes the starting corpus of every fuzz
 * target, DIR/TARGET/NAME, with the writers halflab uses (a checkpoint of
 * the targets' training state with halflab-train's fields, weight files of
 * their MLPs, generated text, a train_summary.csv of two runs, a per-step
 * log), so that the fuzzers start from files the readers accept.
 * scripts/fuzz.sh runs it before the targets. */
#include "tests/fuzz/fuzz_common.h"
#include "core/base/error.h"
#include "cli/csv.h"
#include "train/train.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *out_dir;

static void fail(const char *what, const char *why) {
  fprintf(stderr, "fuzz_start_corpus: %s: %s\n", what, why);
  exit(1);
}

/* DIR/target (made) / name, in buf */
static const char *corpus_path(const char *target, const char *name, char *buf, size_t len) {
  snprintf(buf, len, "%s/%s", out_dir, target);
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) fail(buf, strerror(errno));
  snprintf(buf, len, "%s/%s/%s", out_dir, target, name);
  return buf;
}

static void corpus_file(const char *target, const char *name, const void *data, size_t size) {
  char path[4200];
  corpus_path(target, name, path, sizeof path);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) fail(path, strerror(errno));
}

static void checkpoints(void) {
  hl_train_state st = *fuzz_train_state();
  char path[4200];
  if (!hl_checkpoint_save(corpus_path("checkpoint", "bare", path, sizeof path), &st)) fail(path, hl_error());
  /* halflab-train's fields, after 3 steps */
  const char *definition = "model mlp\npreset tiny\ntask classify\nmode fp32\nlr 0.05\nsteps 10\nseed 7\nname tiny\n";
  double step_ms[3] = {1.5, 1.25, 0x1.8p-3};
  run_totals t = {.steps = 3, .final_loss = 0.75, .eval_loss = 0.5, .eval_acc = 0.25, .eval_step = 2,
                  .step_time_ms = step_ms};
  char *totals = run_totals_format(&t);
  /* a histogram row of this halflab (with its mode) and one of an older (without) */
  char hist[1024];
  size_t at = 0;
  for (int row = 0; row < 2; row++) {
    for (int i = row; i < train_hist_schema.n_columns; i++)
      at += (size_t)snprintf(hist + at, sizeof hist - at, "%s%s", i > row ? "," : "", i == 0 ? "fp32" : "2");
    hist[at++] = '\n';
  }
  hist[at] = '\0';
  if (!totals) fail("run_totals_format", "out of memory");
  const hl_checkpoint_field fields[3] = {{RESUME_FIELD_DEFINITION, definition, strlen(definition)},
                                         {RESUME_FIELD_TOTALS, totals, strlen(totals)},
                                         {RESUME_FIELD_HIST, hist, strlen(hist)}};
  st.step = 3, st.rng_offset = 3, st.fields = fields, st.n_fields = 3;
  if (!hl_checkpoint_save(corpus_path("checkpoint", "train", path, sizeof path), &st)) fail(path, hl_error());
  free(totals);
}

static void weights(void) {
  char path[4200];
  if (!hl_params_save(&fuzz_mlp(HL_WEIGHTS_FP32)->params, corpus_path("weights", "fp32", path, sizeof path)) ||
      !hl_params_save(&fuzz_mlp(HL_WEIGHTS_FP16)->params, corpus_path("weights", "fp16", path, sizeof path)))
    fail(path, hl_error());
}

static void text(void) {
  uint8_t bytes[700];
  text_generate(1, bytes, sizeof bytes);
  corpus_file("text", "generated", bytes, sizeof bytes);
  corpus_file("text", "shortest", bytes, 18); /* 2 x (seq 8 + 1) */
}

static void row_of(const hl_schema *s, const char *first, long long number, char *row, size_t len) {
  size_t at = 0;
  for (int i = 0; i < s->n_columns; i++)
    at += (size_t)snprintf(row + at, len - at, "%s%s", i ? "," : "", i == 0 ? first : i == 1 ? "fp32" : "");
  if (number >= 0) snprintf(row + at, len - at, "%lld", number);
}

static void summary(void) {
  const char *dir = fuzz_scratch_dir();
  char staged[4200], table[4200], row[4096], err[4096];
  snprintf(staged, sizeof staged, "%s/train_summary.csv.inprogress", dir);
  snprintf(table, sizeof table, "%s/train_summary.csv", dir);
  const char *names[2] = {"tiny", "small"};
  for (int k = 0; k < 2; k++) {
    row_of(&train_summary_schema, names[k], 10 + k, row, sizeof row);
    if (!summary_table_stage(dir, names[k], "fp32", row, err, sizeof err)) fail("summary_table_stage", err);
    if (rename(staged, table) != 0) fail(table, strerror(errno));
  }
  FILE *f = fopen(table, "rb");
  char bytes[9000];
  const size_t n = f ? fread(bytes, 1, sizeof bytes, f) : 0;
  if (!f || n == 0 || n == sizeof bytes) fail(table, "cannot be read back");
  fclose(f);
  remove(table);
  corpus_file("summary", "two-runs", bytes, n);
}

static void steplog(void) {
  char text[9000], header[4096];
  hl_schema_header(&train_steps_schema, header, sizeof header);
  size_t at = (size_t)snprintf(text, sizeof text, "%s%s\n", hl_meta_text(), header);
  const int step_at = hl_schema_find(&train_steps_schema, "step");
  for (int step = 1; step <= 5; step++) {
    for (int i = 0; i < train_steps_schema.n_columns; i++) {
      if (i) text[at++] = ',';
      at += (size_t)(i == step_at ? snprintf(text + at, sizeof text - at, "%d", step)
                                  : snprintf(text + at, sizeof text - at, "0.5"));
    }
    text[at++] = '\n';
  }
  corpus_file("steplog", "five-steps", text, at);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fuzz_start_corpus DIR\n");
    return 2;
  }
  out_dir = argv[1];
  if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) fail(out_dir, strerror(errno));
  hl_meta_init(argc, argv);
  checkpoints();
  weights();
  text();
  summary();
  steplog();
  return 0;
}
