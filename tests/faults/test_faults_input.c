/* test_faults_input.c — suite faults: every program's numbers, lists,
 * sizes, paths and option names read strictly (cli/cli.h). Each case is
 * refused with exit 2 and one line naming the option and the value, and
 * nothing is created, neither in --out nor in the default results folder.
 * Prints "faults: input: N cases tried, N held". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"

static int tried_, held_; /* a case that fails the test ends its function: tried, not held */

typedef struct {
  const char *prog; /* hl_test_prog's name */
  const char *args; /* "%s" there: the scratch folder */
  const char *words;
} refusal;

static void expect_all_refused(const refusal *cases, size_t n) {
  char *dir = hl_tmpdir();
  for (size_t i = 0; i < n; i++) {
    char args[4096];
    snprintf(args, sizeof args, cases[i].args, dir, dir);
    /* the default folder, should an empty --out fall back to it, lies in dir too */
    tried_++;
    hl_expect_refused(dir, 2, cases[i].words, "HALFLAB_RESULTS='%s/default' '%s' %s", dir, hl_test_prog(cases[i].prog),
                      args);
    held_++;
  }
  hl_rmtree(dir);
  free(dir);
}

static void test_train(void **state) {
  (void)state;
  static const refusal cases[] = {
      {"halflab-train", "--device cpu --lr 1e-400 --out %s/o", "--lr: 1e-400 is not 0 but rounds to 0 as a double (underflow)"},
      {"halflab-train", "--device cpu --lr 0 --out %s/o", "--lr: 0 is out of range (must be > 0)"},
      {"halflab-train", "--device cpu --lr 1e999 --out %s/o", "--lr: 1e999 is beyond the double range (overflow)"},
      {"halflab-train", "--device cpu --lr nan --out %s/o", "--lr: nan is not a finite number"},
      {"halflab-train", "--device cpu --init-gain 1e-310 --out %s/o", "--init-gain: 1e-310 is subnormal"},
      {"halflab-train", "--device cpu --steps ' 5' --out %s/o", "--steps: ' 5' holds a blank"},
      {"halflab-train", "--device cpu --steps '5 ' --out %s/o", "--steps: '5 ' holds a blank"},
      {"halflab-train", "--device cpu --steps +5 --out %s/o", "--steps: '+5': no '+' sign"},
      {"halflab-train", "--device cpu --warmup -0 --out %s/o", "--warmup: '-0': no sign"},
      {"halflab-train", "--device cpu --batch 0x10 --out %s/o", "--batch: '0x10' is not an integer"},
      {"halflab-train", "--device cpu --eval-frac -0.5 --out %s/o", "--eval-frac: '-0.5': no sign"},
      {"halflab-train", "--device cpu --momentum 1e-400 --out %s/o", "--momentum: 1e-400 is not 0 but rounds to 0"},
      {"halflab-train", "--device cpu --steps 10 --hist-steps 1,,2 --out %s/o", "--hist-steps: '1,,2' has an empty item (item 2)"},
      {"halflab-train", "--device cpu --steps 10 --hist-steps ,1 --out %s/o", "--hist-steps: ',1' has an empty item (item 1)"},
      {"halflab-train", "--device cpu --steps 10 --hist-steps 1, --out %s/o", "--hist-steps: '1,' has an empty item (item 2)"},
      {"halflab-train", "--device cpu --model mlp --hidden 64,,64 --out %s/o", "--hidden: '64,,64' has an empty item"},
      {"halflab-train", "--device cpu --out ''", "--out: empty path"},
      {"halflab-train", "--device cpu --checkpoint '' --out %s/o", "--checkpoint: empty path"},
      {"halflab-train", "--device cpu --text '' --out %s/o", "--text: empty path"},
      {"halflab-train", "--device cpu --quick=1 --out %s/o", "option '--quick' takes no value ('--quick=1' given)"},
      {"halflab-train", "--device cpu --out %s/o --seed", "option '--seed' needs a value"},
      {"halflab-train", "--device cpu --seed --out %s/o", "--seed: '--out' is not a number"},
      {"halflab-train", "--device cpu --foo --out %s/o", "unknown option '--foo'"},
      {"halflab-train", "--device cpu --foo=1 --out %s/o", "unknown option '--foo'"},
      {"halflab-train", "--device cpu --st 5 --out %s/o", "option '--st' is ambiguous (--steps, --stop-after, --stats-every)"},
  };
  expect_all_refused(cases, sizeof cases / sizeof cases[0]);
}

static void test_bench(void **state) {
  (void)state;
  static const refusal cases[] = {
      {"halflab-bench", "gemm --device cpu --sizes 64,,128 --out %s/o", "--sizes: '64,,128' has an empty item (item 2)"},
      {"halflab-bench", "gemm --device cpu --sizes ,64 --out %s/o", "--sizes: ',64' has an empty item (item 1)"},
      {"halflab-bench", "gemm --device cpu --sizes 64,+128 --out %s/o", "--sizes: '+128': no '+' sign"},
      {"halflab-bench", "gemm --device cpu --dtypes fp32, --out %s/o", "--dtypes: 'fp32,' has an empty item (item 2)"},
      {"halflab-bench", "gemm --device cpu --reps ' 3' --out %s/o", "--reps: ' 3' holds a blank"},
      {"halflab-bench", "gemm --device cpu --reps -0 --out %s/o", "--reps: '-0': no sign"},
      {"halflab-bench", "bandwidth --device cpu --sizes 64KiB, --out %s/o", "--sizes: '64KiB,' has an empty item (item 2)"},
      {"halflab-bench", "bandwidth --device cpu --sizes -64KiB --out %s/o", "--sizes: '-64KiB': no sign"},
      {"halflab-bench", "bandwidth --device cpu --sizes 32 --out %s/o", "--sizes: 32 is out of range (64 bytes"},
      {"halflab-bench", "footprint --memory 1e3 --out %s/o", "--memory: '1e3' has an unknown unit"},
      {"halflab-bench", "footprint --memory '1 GiB' --out %s/o", "--memory: '1 GiB' holds a blank"},
      {"halflab-bench", "gemm --device cpu --out ''", "--out: empty path"},
      {"halflab-bench", "gemm --device cpu --quick=1 --out %s/o", "option '--quick' takes no value"},
      {"halflab-bench", "gemm --device cpu --out %s/o --sizes", "option '--sizes' needs a value"},
  };
  expect_all_refused(cases, sizeof cases / sizeof cases[0]);
}

static void test_numerics(void **state) {
  (void)state;
  static const refusal cases[] = {
      {"halflab-numerics", "formats --value 1e-400 --out %s/o", "--value: 1e-400 is not 0 but rounds to 0 as a double (underflow)"},
      {"halflab-numerics", "overflow --value -1e-400 --out %s/o", "--value: -1e-400 is not 0 but rounds to 0"},
      {"halflab-numerics", "formats --value ' 1' --out %s/o", "--value: ' 1' holds a blank"},
      {"halflab-numerics", "formats --value +1 --out %s/o", "--value: '+1': no '+' sign"},
      {"halflab-numerics", "overflow --count +5 --out %s/o", "--count: '+5': no '+' sign"},
      {"halflab-numerics", "overflow --count -0 --out %s/o", "--count: '-0': no sign"},
      {"halflab-numerics", "overflow --value inf --out %s/o", "--value: inf is not a finite number"},
      {"halflab-numerics", "formats --out ''", "--out: empty path"},
      {"halflab-numerics", "formats --quick=1 --out %s/o", "option '--quick' takes no value"},
      {"halflab-numerics", "formats --valu=1 --quick=yes --out %s/o", "option '--quick' takes no value"},
  };
  expect_all_refused(cases, sizeof cases / sizeof cases[0]);
  /* a subnormal double is what a numerics probe is for: taken */
  char *dir = hl_tmpdir();
  tried_++;
  hl_run_result r = hl_run("'%s' formats --device cpu --value 1e-310 --out '%s/o'", hl_test_prog("halflab-numerics"), dir);
  if (r.status != 0) fail_msg("formats --value 1e-310: exit %d: %s", r.status, r.err);
  held_++;
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void test_examples(void **state) {
  (void)state;
  static const refusal cases[] = {
      {"amp-loop", "--device cpu --steps +5", "--steps: '+5': no '+' sign"},
      {"amp-loop", "--device cpu --steps ' 5'", "--steps: ' 5' holds a blank"},
      {"amp-checkpoint", "--device cpu --dir '' --stop-after 6", "--dir: empty path"},
      {"amp-checkpoint", "--device cpu --dir %s/d --stop-after -1", "--stop-after: '-1': no sign"},
      {"amp-penalty", "--device cpu --steps", "option '--steps' needs a value"},
      {"amp-loop", "--device cpu --quick=1", "unknown option '--quick'"},
      {"amp-loop", "--device cpu --trace-ops=1", "option '--trace-ops' takes no value"},
      {"dp-threads", "--device cpu --threads ' 2'", "--threads: ' 2' holds a blank"},
      {"autocast-matrix", "--device cpu --trace-ops=yes", "option '--trace-ops' takes no value"},
  };
  expect_all_refused(cases, sizeof cases / sizeof cases[0]);
}

/* A weight file with a NaN in it (its checksum intact): --init-weights is
 * refused naming the file, the tensor and the index, and nothing is written. */
/* A number from the environment is read as an option is: a bad one is refused up front, by
 * every program, rather than replaced by a default without a word */
static void test_environment(void **state) {
  (void)state;
  static const char *const bad[][2] = {
      {"abc", "'abc' is not a number"}, {" 5", "holds a blank"}, {"0", "out of range"},
      {"-1", "no sign"}, {"1e-400", "underflow"}, {"2e6", "out of range"}, {"nan", "not a finite number"}};
  static const char *const programs[][2] = {
      {"halflab-numerics", "formats --out %s/o"}, {"halflab-bench", "gemm --list --out %s/o"},
      {"halflab-train", "--list-params --out %s/o"}, {"amp-loop", "--steps 1"}};
  char *dir = hl_tmpdir();
  for (size_t p = 0; p < sizeof programs / sizeof programs[0]; p++)
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      char args[4096], words[256];
      snprintf(args, sizeof args, programs[p][1], dir);
      snprintf(words, sizeof words, "HALFLAB_LOCK_WAIT_SECONDS: ");
      tried_++;
      hl_expect_refused(dir, 2, words, "HALFLAB_LOCK_WAIT_SECONDS='%s' HALFLAB_RESULTS='%s/default' '%s' %s", bad[i][0],
                        dir, hl_test_prog(programs[p][0]), args);
      hl_expect_refused(dir, 2, bad[i][1], "HALFLAB_LOCK_WAIT_SECONDS='%s' HALFLAB_RESULTS='%s/default' '%s' %s",
                        bad[i][0], dir, hl_test_prog(programs[p][0]), args);
      held_++;
    }
  /* the launcher's rank count, which decides whether a build without MPI refuses mpirun */
  static const char *const launcher[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
  static const char *const counts[] = {"2x", " 2", "0", "-2", ""};
  for (size_t v = 0; v < 2; v++)
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
      tried_++;
      hl_expect_refused(dir, 2, "is not a rank count", "%s='%s' HALFLAB_RESULTS='%s/default' '%s' --steps 1 --out '%s/o'",
                        launcher[v], counts[i], dir, hl_test_prog("halflab-train"), dir);
      held_++;
    }
  hl_rmtree(dir);
  free(dir);
}

static void test_nonfinite_weights(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), out[4096], weights[4096];
  snprintf(out, sizeof out, "%s/o", dir);
  snprintf(weights, sizeof weights, "%s/w.bin", dir);
  const char *model = "--device cpu --model mlp --inputs 8 --hidden 16 --classes 4 --batch 8 --eval-samples 8";
  hl_run_result r = hl_run("'%s' %s --steps 0 --save-init '%s' --out '%s/init'", hl_test_prog("halflab-train"), model,
                           weights, dir);
  if (r.status != 0) fail_msg("--save-init: exit %d: %s", r.status, r.err);
  hl_run_free(&r);
  size_t n;
  unsigned char *f = (unsigned char *)hl_read_file(weights, &n);
  uint32_t name_len, ndim;
  memcpy(&name_len, f + 12, 4);
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)name_len, f + 16);
  memcpy(&ndim, f + 16 + name_len, 4);
  const size_t data = 16 + name_len + 4 + 8 * (size_t)ndim;
  const float nan_value = NAN;
  memcpy(f + data + 4 * 3, &nan_value, 4); /* element 3 of the first tensor */
  const uint32_t crc = hl_test_crc32(f, n - 4);
  memcpy(f + n - 4, &crc, 4);
  hl_write_file(weights, f, n);
  free(f);
  char words[8192];
  snprintf(words, sizeof words, "--init-weights: load %s: %s[3] is nan", weights, name);
  tried_++;
  hl_expect_refused(dir, 2, words, "'%s' %s --mode amp-fp16 --steps 2 --init-weights '%s' --out '%s'",
                    hl_test_prog("halflab-train"), model, weights, out);
  held_++;
  hl_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_train),    cmocka_unit_test(test_bench),
      cmocka_unit_test(test_numerics), cmocka_unit_test(test_examples),
      cmocka_unit_test(test_nonfinite_weights), cmocka_unit_test(test_environment),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  printf("faults: input: %d cases tried, %d held\n", tried_, held_);
  return failed;
}
