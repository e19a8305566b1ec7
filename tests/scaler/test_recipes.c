/* test_recipes.c — suite e2e: the AMP training recipes (examples/amp_*.c)
 * run, check themselves (exit 0) and print what the recipes promise;
 * checkpoint + resume across two processes reproduces the one-process run
 * bit for bit; bad input is refused with exit 2 and nothing written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"

/* the line of out that starts with `start` and contains `has` (NULL: any) */
static char *line_of(const char *out, const char *start, const char *has) {
  for (const char *p = out; p && *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len >= strlen(start) && !strncmp(p, start, strlen(start))) {
      char *line = strndup(p, len);
      if (!has || strstr(line, has)) return line;
      free(line);
    }
    p = end ? end + 1 : NULL;
  }
  return NULL;
}

static void has_line(const char *out, const char *start, const char *has) {
  char *l = line_of(out, start, has);
  if (!l) fail_msg("no line starting \"%s\" with \"%s\" in:\n%s", start, has ? has : "", out);
  free(l);
}

static void test_loop(void **state) {
  (void)state;
  char *out = hl_run_cpu_ok("amp-loop", "");
  has_line(out, "loss under autocast (fp16 forward)", "f32 cpu");
  has_line(out, "loss:", "->");
  free(out);
  out = hl_run_cpu_ok("amp-loop", "--inject 3,7,10-12 --inject-kind nan --steps 30");
  has_line(out, "3 ", "skipped (injected inf/NaN)");
  has_line(out, "12 ", "skipped (injected inf/NaN)");
  has_line(out, "skipped steps:", "3,7,10,11,12");
  has_line(out, "injected:", "3,7,10-12 (nan)");
  free(out);
}

static void test_clip(void **state) {
  (void)state;
  char *out = hl_run_cpu_ok("amp-clip", "");
  has_line(out, "      (the scaled gradients' norm would read", "fold");
  has_line(out, "1 ", "clipped");
  has_line(out, "9 ", "inf/NaN: skipped");
  has_line(out, "max_norm 1:", "1 skipped");
  free(out);
}

static void test_accumulate(void **state) {
  (void)state;
  char *out = hl_run_cpu_ok("amp-accumulate", "");
  has_line(out, "1     128       256", NULL);
  has_line(out, "2     256       512", NULL); /* test vector 7 */
  has_line(out, "scale: the same for the 4 micro-batches", NULL);
  has_line(out, "worst update error:", "limit");
  free(out);
}

static void test_penalty(void **state) {
  (void)state;
  char *out = hl_run_cpu_ok("amp-penalty", "--steps 8");
  has_line(out, "      (the same penalty from the scaled gradients", "times too large");
  has_line(out, "worst penalty difference:", "limit");
  has_line(out, "total loss", "->");
  free(out);
}

static void test_multi(void **state) {
  (void)state;
  char *out = hl_run_cpu_ok("amp-multi", "--steps 8");
  has_line(out, "second backward without retain_graph on the first:", "retain_graph=true");
  has_line(out, "4 ", "optimizer0 stepped, optimizer1 skipped (inf injected into model1)");
  has_line(out, "worst gradient difference", "limit");
  free(out);
}

static void test_checkpoint(void **state) {
  (void)state;
  char *full = hl_run_cpu_ok("amp-checkpoint", "");
  has_line(full, "final weights of both runs:", "bit-identical");
  has_line(full, "truncated to half its size:", "is truncated");
  has_line(full, "one bit flipped:", "checksum mismatch");
  has_line(full, "a save that cannot complete:", "untouched");
  /* two processes: stop after 5, resume to 12; rows 6..12 as the one-process run printed them */
  char *dir = hl_tmpdir();
  char args[4200];
  snprintf(args, sizeof args, "--dir '%s' --stop-after 5", dir);
  char *first = hl_run_cpu_ok("amp-checkpoint", args);
  has_line(first, "saved", "after step 5");
  /* a second run into the same --dir would replace the saved run: refused, the file as it was */
  char *saved = hl_read_file(hl_path(dir, "run.ckpt"), NULL);
  hl_expect_refused(dir, 2, "--resume", "'%s' --device cpu --dir '%s'", hl_test_prog("amp-checkpoint"), dir);
  hl_expect_refused(dir, 2, "--resume", "'%s' --device cpu --dir '%s' --stop-after 3", hl_test_prog("amp-checkpoint"), dir);
  char *kept = hl_read_file(hl_path(dir, "run.ckpt"), NULL);
  if (!saved || !kept || strcmp(saved, kept)) fail_msg("a refused run changed %s/run.ckpt", dir);
  free(saved);
  free(kept);
  /* nothing left to train is refused, not done silently */
  hl_expect_refused(dir, 2, "after step 5", "'%s' --device cpu --dir '%s' --resume --steps 5", hl_test_prog("amp-checkpoint"), dir);
  snprintf(args, sizeof args, "--dir '%s' --resume", dir);
  char *second = hl_run_cpu_ok("amp-checkpoint", args);
  has_line(second, "resumed", "at step 5");
  for (int step = 1; step <= 12; step++) {
    char start[16];
    snprintf(start, sizeof start, "%-5d ", step);
    char *want = line_of(full, start, NULL), *got = line_of(step <= 5 ? first : second, start, NULL);
    if (!want || !got || strcmp(want, got)) fail_msg("step %d: one process \"%s\", two \"%s\"", step, want, got);
    free(want);
    free(got);
  }
  free(first);
  free(second);
  hl_rmtree(dir);
  free(dir);
  /* the one-process run into --dir leaves the checkpoint it took after step 5: --resume trains steps 6 to 12 */
  dir = hl_tmpdir();
  snprintf(args, sizeof args, "--dir '%s'", dir);
  free(hl_run_cpu_ok("amp-checkpoint", args));
  snprintf(args, sizeof args, "--dir '%s' --resume", dir);
  second = hl_run_cpu_ok("amp-checkpoint", args);
  for (int step = 6; step <= 12; step++) {
    char start[16];
    snprintf(start, sizeof start, "%-5d ", step);
    char *want = line_of(full, start, NULL), *got = line_of(second, start, NULL);
    if (!want || !got || strcmp(want, got)) fail_msg("step %d after the one-process run: \"%s\", want \"%s\"", step, got, want);
    free(want);
    free(got);
  }
  free(second);
  free(full);
  hl_rmtree(dir);
  free(dir);
  /* resuming from nothing: a runtime failure naming the file, nothing created */
  dir = hl_tmpdir();
  hl_expect_refused(dir, 1, "run.ckpt", "'%s' --device cpu --dir '%s' --resume", hl_test_prog("amp-checkpoint"), dir);
  hl_rmtree(dir);
  free(dir);
}

static void test_bad_input(void **state) {
  (void)state;
  const char *progs[] = {"amp-loop", "amp-clip", "amp-accumulate", "amp-penalty", "amp-multi", "amp-checkpoint"};
  const bool inject[] = {true, true, false, false, true, true};
  for (int i = 0; i < 6; i++) {
    const char *bad[] = {"--bogus", "--steps 0", "--steps x", "--device tpu", "--seed -1", "extra"};
    for (int b = 0; b < 6; b++) hl_expect_refused(NULL, 2, NULL, "'%s' %s", hl_test_prog(progs[i]), bad[b]);
    hl_run_result r = hl_run("'%s' --inject 0", hl_test_prog(progs[i]));
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, inject[i] ? "bad item" : "not known"));
    hl_run_free(&r);
    r = hl_run("'%s' --help", hl_test_prog(progs[i]));
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--device"));
    assert_true(!strstr(r.out, "--inject") == !inject[i]);
    hl_run_free(&r);
  }
  char *dir = hl_tmpdir();
  const char *bad[] = {"--stop-after 3", "--resume", "--stop-after 20", "--inject 99"};
  for (int b = 0; b < 4; b++)
    hl_expect_refused(dir, 2, NULL, "'%s' %s %s '%s'", hl_test_prog("amp-checkpoint"), bad[b],
                      b == 0 || b == 1 ? "" : "--dir", b == 0 || b == 1 ? "" : dir);
  hl_rmtree(dir);
  free(dir);
}

/* Every recipe over the edges of its options: --steps 1, 2 and past the
 * default injection, --inject at the first step, the last and all of them.
 * Each legal input either holds every self-check (exit 0) or is refused up
 * front with one line naming the option (exit 2). */
static void test_option_edges(void **state) {
  (void)state;
  const struct {
    const char *prog;
    bool inject;   /* takes --inject */
    int min_steps; /* the smallest --steps it takes */
  } recipes[] = {{"amp-loop", true, 1},    {"amp-clip", true, 1},  {"amp-accumulate", false, 1},
                 {"amp-penalty", false, 1}, {"amp-multi", true, 1}, {"amp-checkpoint", true, 6}};
  const int step_counts[] = {1, 2, 3, 6, 7, 20};
  int failed = 0, runs = 0;
  for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++)
    for (size_t k = 0; k < sizeof step_counts / sizeof step_counts[0]; k++) {
      const int n = step_counts[k];
      if (n < recipes[i].min_steps) continue;
      char args[5][64];
      int nargs = 0;
      snprintf(args[nargs++], sizeof args[0], "--steps %d", n); /* the default --inject, where it lies within */
      if (recipes[i].inject) {
        snprintf(args[nargs++], sizeof args[0], "--steps %d --inject 1", n);
        snprintf(args[nargs++], sizeof args[0], "--steps %d --inject %d", n, n);
        snprintf(args[nargs++], sizeof args[0], "--steps %d --inject 1-%d --inject-kind nan", n, n);
        snprintf(args[nargs++], sizeof args[0], "--steps %d --inject none", n);
      }
      for (int a = 0; a < nargs; a++, runs++) {
        hl_run_result r = hl_run("'%s' --device cpu %s", hl_test_prog(recipes[i].prog), args[a]);
        if (r.status != 0) {
          print_error("%s %s: exit %d: %s\n", recipes[i].prog, args[a], r.status, r.err);
          failed++;
        }
        hl_run_free(&r);
      }
    }
  /* --seed at its edges: 0 and 2^53 - 1 */
  for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++)
    for (int k = 0; k < 2; k++, runs++) {
      const char *seed = k ? "9007199254740991" : "0";
      hl_run_result r = hl_run("'%s' --device cpu --steps 6 --seed %s", hl_test_prog(recipes[i].prog), seed);
      if (r.status != 0) {
        print_error("%s --steps 6 --seed %s: exit %d: %s\n", recipes[i].prog, seed, r.status, r.err);
        failed++;
      }
      hl_run_free(&r);
    }
  /* the largest --steps, in the two fastest recipes (the others were run there by hand: 2-4 s each) */
  const char *at_max[][2] = {{"amp-loop", "--steps 2000 --inject 1,2000"}, {"amp-clip", "--steps 2000 --inject 2000"}};
  for (int k = 0; k < 2; k++, runs++) {
    hl_run_result r = hl_run("'%s' --device cpu %s", hl_test_prog(at_max[k][0]), at_max[k][1]);
    if (r.status != 0) {
      print_error("%s %s: exit %d: %s\n", at_max[k][0], at_max[k][1], r.status, r.err);
      failed++;
    }
    hl_run_free(&r);
  }
  if (failed) fail_msg("%d of %d runs at the options' edges failed", failed, runs);
  hl_expect_refused(NULL, 2, "--steps: 2001 is out of range (1 to 2000)", "'%s' --device cpu --steps 2001",
                    hl_test_prog("amp-penalty"));
  /* the limits that are refused up front, naming the option */
  hl_expect_refused(NULL, 2, "--steps must be above 5", "'%s' --device cpu --steps 5", hl_test_prog("amp-checkpoint"));
  hl_expect_refused(NULL, 2, "--inject: by step 21", "'%s' --device cpu --steps 25 --inject 1-21",
                    hl_test_prog("amp-multi"));
  hl_expect_refused(NULL, 2, "--inject: step 3 is past the last step (2)", "'%s' --device cpu --steps 2 --inject 3",
                    hl_test_prog("amp-clip"));
  /* --stop-after at its edges, then --resume: both hold their checks */
  const char *stops[] = {"--steps 6 --stop-after 1", "--steps 6 --stop-after 5"};
  for (int k = 0; k < 2; k++) {
    char *dir = hl_tmpdir();
    char args[4200];
    snprintf(args, sizeof args, "%s --dir '%s'", stops[k], dir);
    free(hl_run_cpu_ok("amp-checkpoint", args));
    snprintf(args, sizeof args, "--steps 6 --dir '%s' --resume", dir);
    free(hl_run_cpu_ok("amp-checkpoint", args));
    hl_rmtree(dir);
    free(dir);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loop),    cmocka_unit_test(test_clip),       cmocka_unit_test(test_accumulate),
      cmocka_unit_test(test_penalty), cmocka_unit_test(test_multi),      cmocka_unit_test(test_checkpoint),
      cmocka_unit_test(test_bad_input), cmocka_unit_test(test_option_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
