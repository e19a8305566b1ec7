/* test_faults_identity.c — suite faults: a resumed halflab-train run
 * continues its own per-step log and no other (docs/files.md).
 *
 *   other runs between   a run stopped after step 5 of 10, then another
 *                        stopped one (--seed 3, taking the .interrupted
 *                        names), a failed run (--lr 1e30) and a completed run
 *                        of another seed into the same --out, then --resume:
 *                        the log holds steps 1 to 10 of the checkpoint's run,
 *                        equal to an uninterrupted run's (timings aside), and
 *                        no other run's log was removed or replaced; a
 *                        killed run's .inprogress log is kept by a fresh run
 *                        of other options as NAME.RUN_ID;
 *   no log of its own    --resume into a folder that holds no log, or only
 *                        another run's: exit 2, one line, nothing written;
 *   the identity         the checkpoint and every CSV of the run carry the
 *                        same "run_id", one that changes with the seed; a
 *                        checkpoint without one (an earlier halflab-train's)
 *                        is refused, exit 2, one line, nothing written.
 *
 * Prints "faults: identity: N cases tried, N held". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/training/checkpoint.h"
#include "tests/support/hltest.h"

static const char *train(void) { return hl_test_prog("halflab-train"); }

/* A fast run: tiny GPT, fp32, ten steps, no evaluation before its end. */
#define RUN_ARGS "--device cpu --mode fp32 --batch 4 --eval-samples 8 --eval-every 10 --steps 10"
#define STEPS_LOG "train_tiny_fp32_steps.csv"

static int tried, held;

static void verdict(bool ok, const char *what, const char *why) {
  tried++;
  if (ok) held++;
  else fprintf(stderr, "faults: identity: FAILED %s: %s\n", what, why);
}

/* Columns that hold timings: the only ones a resumed run may differ in. */
static bool timing_column(const char *col) {
  return !strcmp(col, "step_time_ms") || !strcmp(col, "tokens_per_s") || !strcmp(col, "samples_per_s");
}

/* The per-step tables at a and b equal cell for cell but the timings. */
static bool same_rows(const char *pa, const char *pb, char *why, size_t len) {
  hl_table *a = hl_table_read(pa), *b = hl_table_read(pb);
  bool same = a && b && a->ncols == b->ncols && a->nrows == b->nrows;
  if (!same)
    snprintf(why, len, "%s: %s", pb, !a || !b ? "missing or malformed" : "another number of rows or columns");
  for (int c = 0; same && c < a->ncols; c++)
    for (int r = 0; same && r < a->nrows; r++)
      if (!timing_column(a->cols[c]) && strcmp(a->cells[r][c], b->cells[r][c])) {
        snprintf(why, len, "%s: row %d %s is %s, uninterrupted %s", pb, r + 1, a->cols[c], b->cells[r][c],
                 a->cells[r][c]);
        same = false;
      }
  if (a) hl_table_free(a);
  if (b) hl_table_free(b);
  return same;
}

/* The value of a file's "# run_id: " line (static buffer; "" when none). */
static const char *run_id_of(const char *path) {
  static char id[64];
  id[0] = '\0';
  char *text = hl_read_file(path, NULL);
  const char *line = text ? strstr(text, "# run_id: ") : NULL;
  if (line) sscanf(line + 10, "%63[0-9a-f]", id);
  free(text);
  return id;
}

static void test_other_runs_between(void **state) {
  (void)state;
  char *root = hl_tmpdir();
  char ref[4200], gap[4200], ckpt[4200], kept[4200];
  snprintf(ref, sizeof ref, "%s/ref", root);
  snprintf(gap, sizeof gap, "%s/gap", root);
  snprintf(ckpt, sizeof ckpt, "%s/gap.ckpt", root);
  hl_run_result r = hl_run_ok("%s " RUN_ARGS " --out %s", train(), ref);
  hl_run_free(&r);
  r = hl_run_ok("%s " RUN_ARGS " --stop-after 5 --checkpoint %s --out %s", train(), ckpt, gap);
  hl_run_free(&r);
  snprintf(kept, sizeof kept, "%s", hl_path(gap, STEPS_LOG ".interrupted"));
  char stopped_id[64];
  snprintf(stopped_id, sizeof stopped_id, "%s", run_id_of(kept));
  char why[16384] = "";

  /* the identity: in the log and the checkpoint, the same */
  hl_checkpoint *c = hl_checkpoint_open(ckpt);
  size_t len = 0;
  const char *field = c ? hl_checkpoint_get_field(c, "train/run_id", &len) : NULL;
  if (strlen(stopped_id) != 16) snprintf(why, sizeof why, "%s: no 16-digit run_id line", kept);
  else if (!field || len != 16 || memcmp(field, stopped_id, 16))
    snprintf(why, sizeof why, "the checkpoint's train/run_id is not the log's %s", stopped_id);
  if (c) hl_checkpoint_close(c);
  verdict(!why[0], "run_id in log and checkpoint", why);

  /* other runs into the same folder: one stops, one fails, one completes */
  r = hl_run_ok("%s " RUN_ARGS " --seed 3 --stop-after 5 --out %s", train(), gap);
  hl_run_free(&r);
  char aside[4300];
  snprintf(aside, sizeof aside, "%s.%s", kept, stopped_id);
  why[0] = '\0';
  if (strcmp(run_id_of(aside), stopped_id)) snprintf(why, sizeof why, "%s: missing, or not the first run's", aside);
  else if (!strcmp(run_id_of(kept), stopped_id)) snprintf(why, sizeof why, "%s is still the first run's", kept);
  verdict(!why[0], "a second stopped run keeps the first's log aside", why);
  r = hl_run("%s " RUN_ARGS " --lr 1e30 --out %s", train(), gap);
  why[0] = '\0';
  if (r.status != 1) snprintf(why, sizeof why, "the --lr 1e30 run exited %d (want 1): %s", r.status, r.err);
  hl_run_free(&r);
  verdict(!why[0], "a failing run between", why);
  r = hl_run_ok("%s " RUN_ARGS " --seed 2 --out %s", train(), gap);
  hl_run_free(&r);
  why[0] = '\0';
  if (!hl_file_exists(aside) || !hl_file_exists(kept))
    snprintf(why, sizeof why, "%s or %s was removed by runs of other identities", aside, kept);
  else if (!strcmp(run_id_of(hl_path(gap, STEPS_LOG)), stopped_id))
    snprintf(why, sizeof why, "the --seed 2 run has the stopped run's run_id %s", stopped_id);
  verdict(!why[0], "other runs keep the stopped run's log", why);

  /* a folder with another run's log only, and one with none: refused */
  char other[4200], empty[4200];
  snprintf(other, sizeof other, "%s/other", root);
  snprintf(empty, sizeof empty, "%s/empty", root);
  r = hl_run_ok("%s " RUN_ARGS " --seed 2 --out %s", train(), other);
  hl_run_free(&r);
  assert_int_equal(mkdir(empty, 0755), 0);
  const struct {
    const char *dir, *words;
  } refusals[] = {{other, "belongs to another run"}, {empty, "holds no per-step log"}};
  for (int i = 0; i < 2; i++) {
    char *before = hl_read_file(hl_path(refusals[i].dir, STEPS_LOG), NULL);
    const int files = hl_count_files(refusals[i].dir);
    r = hl_run("%s --resume %s --out %s", train(), ckpt, refusals[i].dir);
    char *after = hl_read_file(hl_path(refusals[i].dir, STEPS_LOG), NULL);
    why[0] = '\0';
    if (r.status != 2) snprintf(why, sizeof why, "exit %d (want 2): %s", r.status, r.err);
    else if (hl_count_lines(r.err) != 1 || !strstr(r.err, refusals[i].words))
      snprintf(why, sizeof why, "stderr \"%s\" (want one line with \"%s\")", r.err, refusals[i].words);
    else if (hl_count_files(refusals[i].dir) != files || (before && (!after || strcmp(before, after))))
      snprintf(why, sizeof why, "%s changed", refusals[i].dir);
    verdict(!why[0], refusals[i].words, why);
    free(before);
    free(after);
    hl_run_free(&r);
  }
  /* a folder that does not exist is refused, and not made */
  r = hl_run("%s --resume %s --out %s/none", train(), ckpt, root);
  why[0] = '\0';
  if (r.status != 2 || hl_count_lines(r.err) != 1) snprintf(why, sizeof why, "exit %d: %s", r.status, r.err);
  else if (hl_file_exists(hl_path(root, "none"))) snprintf(why, sizeof why, "the folder was made");
  verdict(!why[0], "resume into a new folder", why);
  hl_run_free(&r);

  /* a checkpoint without an identity (an earlier halflab-train's): its field renamed, the CRC made right */
  size_t size;
  unsigned char *bytes = (unsigned char *)hl_read_file(ckpt, &size);
  assert_non_null(bytes);
  unsigned char *name = memmem(bytes, size, "train/run_id", 12);
  assert_non_null(name);
  name[11] = 'X';
  const uint32_t crc = hl_test_crc32(bytes, size - 12); /* before the CRC and the end marker */
  memcpy(bytes + size - 12, &crc, 4);
  char older[4300];
  snprintf(older, sizeof older, "%s/older.ckpt", root);
  hl_write_file(older, bytes, size);
  free(bytes);
  const int files = hl_count_files(gap);
  r = hl_run("%s --resume %s --out %s", train(), older, gap);
  why[0] = '\0';
  if (r.status != 2 || hl_count_lines(r.err) != 1 || !strstr(r.err, "does not name its run"))
    snprintf(why, sizeof why, "exit %d: %s", r.status, r.err);
  else if (hl_count_files(gap) != files) snprintf(why, sizeof why, "%s changed", gap);
  verdict(!why[0], "a checkpoint without an identity", why);
  hl_run_free(&r);

  /* the resume continues the stopped run's own log */
  r = hl_run("%s --resume %s --out %s", train(), ckpt, gap);
  why[0] = '\0';
  if (r.status != 0) snprintf(why, sizeof why, "exit %d: %s", r.status, r.err);
  else same_rows(hl_path(ref, STEPS_LOG), hl_path(gap, STEPS_LOG), why, sizeof why);
  if (!why[0] && strcmp(run_id_of(hl_path(gap, STEPS_LOG)), stopped_id))
    snprintf(why, sizeof why, "the resumed log's run_id is %s, the checkpoint's %s", run_id_of(hl_path(gap, STEPS_LOG)),
             stopped_id);
  if (!why[0] && (!hl_file_exists(hl_path(gap, STEPS_LOG ".failed")) || !hl_file_exists(kept)))
    snprintf(why, sizeof why, "the failed or the --seed 3 run's log was removed by the resumed run");
  if (!why[0] && hl_file_exists(aside)) snprintf(why, sizeof why, "%s (superseded) is still there", aside);
  verdict(!why[0], "resume after other runs", why);
  hl_run_free(&r);

  /* a killed run's .inprogress log (here: the --seed 2 run's, copied) is kept by a fresh run of other options */
  size_t log_len;
  char *log = hl_read_file(hl_path(other, STEPS_LOG), &log_len);
  assert_non_null(log);
  char killed[4300], killed_aside[4400];
  snprintf(killed, sizeof killed, "%s", hl_path(other, STEPS_LOG ".inprogress"));
  hl_write_file(killed, log, log_len);
  snprintf(killed_aside, sizeof killed_aside, "%s.%s", killed, run_id_of(killed));
  r = hl_run_ok("%s " RUN_ARGS " --out %s", train(), other);
  hl_run_free(&r);
  size_t kept_len;
  char *kept_log = hl_read_file(killed_aside, &kept_len);
  why[0] = '\0';
  if (!kept_log || kept_len != log_len || memcmp(kept_log, log, log_len))
    snprintf(why, sizeof why, "%s: missing or changed", killed_aside);
  verdict(!why[0], "a killed run's log kept by a fresh run", why);
  free(log);
  free(kept_log);

  printf("faults: identity: %d cases tried, %d held\n", tried, held);
  hl_rmtree(root);
  free(root);
  assert_int_equal(held, tried);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_other_runs_between),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
