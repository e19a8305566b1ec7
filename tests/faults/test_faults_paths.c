/* test_faults_paths.c — suite faults: halflab-train's outputs aimed at its
 * inputs, at each other and at the files it writes in --out, directly and
 * through symbolic and hard links (cli/path_set.h, docs/files.md): each is
 * refused with exit 2 in one line naming both options, before anything is
 * written (the folder's entries and the files' bytes as they were). The
 * checkpoint --resume reads stays allowed as --checkpoint's.
 *
 * Prints "faults: paths: N cases tried, N held". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/hltest.h"

static const char *train(void) { return hl_test_prog("halflab-train"); }

#define RUN_ARGS "--device cpu --mode fp32 --batch 4 --eval-samples 8 --eval-every 10 --steps 3"

static int tried, held;

/* The bytes of every file the cases may touch, and the count of entries. */
typedef struct {
  char *book, *weights, *summary;
  int entries, out_entries;
} snapshot;

static snapshot take(const char *root, const char *out) {
  return (snapshot){hl_read_file(hl_path(root, "book.txt"), NULL), hl_read_file(hl_path(root, "w.bin"), NULL),
                    hl_read_file(hl_path(out, "train_summary.csv"), NULL), hl_count_files(root), hl_count_files(out)};
}

static bool same_bytes(const char *a, const char *b) { return a && b && !strcmp(a, b); }

static void snapshot_free(snapshot *s) {
  free(s->book);
  free(s->weights);
  free(s->summary);
}

/* halflab-train ARGS must exit 2 with one line holding both words, and
 * change nothing under root. */
static void refused(const char *root, const char *out, const char *a, const char *b, const char *args) {
  snapshot before = take(root, out);
  hl_run_result r = hl_run("cd %s && %s %s", root, train(), args);
  snapshot after = take(root, out);
  char why[8192] = "";
  if (r.status != 2) snprintf(why, sizeof why, "exit %d (want 2); stderr: %s", r.status, r.err);
  else if (hl_count_lines(r.err) != 1 || !strstr(r.err, a) || !strstr(r.err, b) || !strstr(r.err, "same file"))
    snprintf(why, sizeof why, "stderr \"%s\" (want one line naming %s and %s)", r.err, a, b);
  else if (*r.out) snprintf(why, sizeof why, "stdout \"%s\" (want nothing)", r.out);
  else if (!same_bytes(before.book, after.book) || !same_bytes(before.weights, after.weights) ||
           !same_bytes(before.summary, after.summary) || before.entries != after.entries ||
           before.out_entries != after.out_entries)
    snprintf(why, sizeof why, "a file changed or was created");
  tried++;
  if (!why[0]) held++;
  else fprintf(stderr, "faults: paths: FAILED %s: %s\n", args, why);
  snapshot_free(&before);
  snapshot_free(&after);
  hl_run_free(&r);
}

static void test_colliding_paths(void **state) {
  (void)state;
  char *root = hl_tmpdir();
  char out[4200];
  snprintf(out, sizeof out, "%s/out", root);
  char *words = malloc(20000);
  assert_non_null(words);
  for (int i = 0; i < 20000; i++) words[i] = "the quick brown fox jumps over a lazy dog. "[i % 43];
  hl_write_file(hl_path(root, "book.txt"), words, 20000);
  free(words);
  hl_run_result r = hl_run_ok("cd %s && %s " RUN_ARGS " --steps 0 --save-init w.bin", root, train());
  hl_run_free(&r);
  r = hl_run_ok("cd %s && %s " RUN_ARGS " --out out", root, train()); /* a train_summary.csv with a row */
  hl_run_free(&r);
  assert_int_equal(symlink("book.txt", hl_path(root, "link.txt")), 0);
  assert_int_equal(link(hl_path(root, "book.txt"), hl_path(root, "hard.txt")), 0);

  const struct {
    const char *a, *b, *args;
  } cases[] = {
      /* an output on an input */
      {"--checkpoint", "--text", "--device cpu --text book.txt --seq 32 --batch 4 --steps 2 --checkpoint book.txt --out out"},
      {"--save-init", "--text", "--device cpu --text book.txt --seq 32 --steps 0 --save-init book.txt"},
      {"--export-batches", "--text", "--device cpu --text book.txt --seq 32 --steps 0 --export-batches book.txt"},
      {"--dump-grads", "--text", "--device cpu --text book.txt --seq 32 --batch 4 --steps 1 --dump-grads book.txt --out out"},
      {"--save-init", "--init-weights", RUN_ARGS " --mode fp16-pure --init-weights w.bin --save-init w.bin --out out"},
      /* through links, and another spelling of the same path */
      {"--checkpoint", "--text", "--device cpu --text link.txt --seq 32 --batch 4 --steps 2 --checkpoint book.txt --out out"},
      {"--checkpoint", "--text", "--device cpu --text book.txt --seq 32 --batch 4 --steps 2 --checkpoint hard.txt --out out"},
      {"--save-init", "--text", "--device cpu --text book.txt --seq 32 --steps 0 --save-init ./out/../book.txt"},
      /* two outputs */
      {"--export-batches", "--checkpoint", RUN_ARGS " --checkpoint x.bin --export-batches x.bin --out out"},
      {"--save-init", "--checkpoint", RUN_ARGS " --checkpoint x.bin --save-init x.bin.tmp --out out"},
      {"--save-init", "--export-batches", "--device cpu --steps 0 --save-init new/y.bin --export-batches new/./y.bin"},
      /* an output on the run's own files in --out */
      {"--checkpoint", "train_tiny_fp32_steps.csv", RUN_ARGS " --checkpoint out/train_tiny_fp32_steps.csv --out out"},
      {"--checkpoint", "train_summary.csv", RUN_ARGS " --checkpoint out/train_summary.csv --out out"},
      {"--export-batches", "train_tiny_fp32_hist.csv.interrupted", RUN_ARGS " --export-batches out/train_tiny_fp32_hist.csv.interrupted --out out"},
      {"--dump-grads", "lock", RUN_ARGS " --dump-grads out/.train_tiny_fp32.lock --out out"},
      {"--save-init", "train_summary.csv.inprogress", RUN_ARGS " --save-init out/train_summary.csv.inprogress.tmp --out out"},
      /* an input the run would write over in --out */
      {"--text", "train_summary.csv", "--device cpu --text out/train_summary.csv --seq 32 --batch 4 --steps 2 --out out"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) refused(root, out, cases[i].a, cases[i].b, cases[i].args);

  /* --checkpoint may be the file --resume reads (read whole first) */
  r = hl_run_ok("cd %s && %s " RUN_ARGS " --steps 4 --stop-after 2 --checkpoint r.ckpt --out res", root, train());
  hl_run_free(&r);
  r = hl_run("cd %s && %s --resume r.ckpt --checkpoint r.ckpt --out res", root, train());
  tried++;
  if (r.status == 0) held++;
  else fprintf(stderr, "faults: paths: FAILED --resume r.ckpt --checkpoint r.ckpt: exit %d: %s\n", r.status, r.err);
  hl_run_free(&r);

  printf("faults: paths: %d cases tried, %d held\n", tried, held);
  hl_rmtree(root);
  free(root);
  assert_int_equal(held, tried);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_colliding_paths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
