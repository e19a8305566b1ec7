/* test_train_nccl.c — suite gpu: GPU ranks (docs/train.md, "Data-parallel
 * training") on the one GPU a lent machine has. halflab-train under
 * mpirun with one rank on --device cuda takes the whole of the GPU ranks'
 * path: the rank's GPU, NCCL's communicator (its id over MPI), one grouped
 * ncclAllReduce of every gradient a step, the loss and found_inf over MPI,
 * --check-replicas. Its per-step loss must equal the same run's without
 * mpirun with tolerance 0: one rank's sum is its own value, x 1/1 and the
 * f32 wire's round trip of fp16 gradients are exact, and the GPU kernels
 * give the same bits on every run (no floating-point atomics, reductions
 * in a fixed order), so any difference is a fault.
 *
 *   amp-fp16: f32 gradients, reduced in place; --check-replicas 1 passes,
 *     --profile shows one dist.allreduce_f32 a step of every parameter,
 *     the metadata says 1 GPU rank over NCCL;
 *   fp16-pure: fp16 gradients, reduced through an f32 copy; rank 0 writes
 *     the files one process writes, no more.
 *
 * Skipped (77) without MPI, without NCCL or without a GPU. Two ranks or
 * more need two GPUs, which no lent machine has: they are compiled, not run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"

#define RUN "--device cuda --batch 16 --eval-samples 32 --eval-every 5 --steps 6"

static const char *train(void) { return hl_test_prog("halflab-train"); }

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static hl_table *steps_csv(const char *dir, const char *mode) {
  char f[128];
  snprintf(f, sizeof f, "train_tiny_%s_steps.csv", mode);
  hl_table *t = hl_table_read(hl_path(dir, f));
  if (!t) fail_msg("%s in %s: missing or malformed", f, dir);
  return t;
}

/* One process, then one rank under mpirun with `extra`; the runs' folders. */
static void run_both(const char *mode, const char *extra, char **one, char **rank) {
  *one = hl_tmpdir();
  *rank = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s " RUN " --mode %s --out %s", train(), mode, *one);
  hl_run_free(&r);
  r = hl_run("%s --allow-run-as-root --oversubscribe -n 1 %s " RUN " --mode %s %s --out %s", env("HALFLAB_MPIRUN"),
             train(), mode, extra, *rank);
  if (r.status != 0) fail_msg("1 GPU rank, %s: exit %d\n%s", mode, r.status, r.err);
  hl_run_free(&r);
}

static void check_same_losses(const char *mode, const char *one, const char *rank) {
  hl_table *a = steps_csv(one, mode), *b = steps_csv(rank, mode);
  assert_int_equal(a->nrows, 6);
  assert_int_equal(b->nrows, 6);
  for (int i = 0; i < 6; i++) {
    /* the CSV's loss is printed with 9 significant digits: equal text, equal f32 */
    if (strcmp(hl_table_get(a, i, "loss"), hl_table_get(b, i, "loss")))
      fail_msg("%s step %d: loss %s in one process, %s on 1 GPU rank (NCCL): must be equal", mode, i + 1,
               hl_table_get(a, i, "loss"), hl_table_get(b, i, "loss"));
    assert_string_equal(hl_table_get(a, i, "scale"), hl_table_get(b, i, "scale"));
    assert_string_equal(hl_table_get(a, i, "skipped"), hl_table_get(b, i, "skipped"));
  }
  if (!strstr(b->meta, "1 GPU rank, one GPU each (NCCL "))
    fail_msg("%s: the rank's metadata does not name NCCL's GPU rank:\n%s", mode, b->meta);
  assert_true(strstr(a->meta, "GPU rank") == NULL); /* one process says nothing of ranks */
  printf("%s: 6 steps, one process and 1 GPU rank (NCCL) give the same loss at every step\n", mode);
  hl_table_free(a);
  hl_table_free(b);
}

static void test_amp_fp16(void **state) {
  (void)state;
  char *one, *rank;
  run_both("amp-fp16", "--check-replicas 1 --profile --warmup 2", &one, &rank);
  check_same_losses("amp-fp16", one, rank);
  /* --profile: one gradient all-reduce a step, every parameter once, 4 bytes each */
  hl_table *sum = hl_table_read(hl_path(rank, "train_tiny_amp-fp16_summary.csv"));
  assert_non_null(sum);
  const double params = hl_table_num(sum, 0, "params");
  hl_table_free(sum);
  hl_table *prof = hl_table_read(hl_path(rank, "train_tiny_amp-fp16_profile.csv"));
  assert_non_null(prof);
  const int row = hl_table_find(prof, "phase", "other", "op", "dist.allreduce_f32", NULL);
  if (row < 0) fail_msg("--profile has no row for dist.allreduce_f32 in phase other: the gradients were not all-reduced");
  assert_true(hl_table_num(prof, row, "calls_per_step") == 1);
  const double per_call = hl_table_num(prof, row, "bytes") / hl_table_num(prof, row, "calls");
  if (per_call != params * 4) fail_msg("dist.allreduce_f32: %.0f bytes a call for %.0f parameters", per_call, params);
  hl_table_free(prof);
  hl_rmtree(one);
  hl_rmtree(rank);
  free(one);
  free(rank);
}

static void test_fp16_pure(void **state) {
  (void)state;
  char *one, *rank;
  run_both("fp16-pure", "", &one, &rank);
  check_same_losses("fp16-pure", one, rank);
  assert_int_equal(hl_count_files(rank), hl_count_files(one));
  hl_rmtree(one);
  hl_rmtree(rank);
  free(one);
  free(rank);
}

int main(void) {
  if (!env("HALFLAB_MPIRUN")) {
    printf("skipped: GPU ranks need MPI, which is not built (or mpirun was not found)\n");
    return 77;
  }
  if (!env("HALFLAB_NCCL_BUILT")) {
    printf("skipped: data-parallel training on GPUs (NCCL) is not built\n");
    return 77;
  }
  hl_require_gpu();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_amp_fp16),
      cmocka_unit_test(test_fp16_pure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
