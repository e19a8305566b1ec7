/* test_path_set.c — suite unit: cli/path_set.h. Two registered paths are
 * one file when they are after links are resolved: the same file through a
 * symbolic or hard link, a file still to be made under a linked folder or
 * under folders still to be made, spelled with "." and "//"; an output
 * meeting an input or another output is reported naming both options,
 * inputs meeting inputs, an option's own variants and an allowed pair are
 * not; distinct files pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/path_set.h"
#include "tests/support/hltest.h"

/* Whether a set of (option, path, output) triples passes; err gets the line. */
typedef struct {
  const char *option, *path;
  bool output;
} reg;

static bool passes(const reg *r, int n, const char *allow_in, const char *allow_out, char *err, size_t len) {
  hl_path_set s;
  hl_path_set_init(&s);
  for (int i = 0; i < n; i++) {
    if (r[i].output) hl_path_set_output(&s, r[i].option, NULL, r[i].path);
    else hl_path_set_input(&s, r[i].option, r[i].path);
  }
  if (allow_in) hl_path_set_allow(&s, allow_in, allow_out);
  err[0] = '\0';
  const bool ok = hl_path_set_check(&s, err, len);
  hl_path_set_free(&s);
  return ok;
}

static void test_path_set(void **state) {
  (void)state;
  char *root = hl_tmpdir();
  char real[4200], linked[4200], file[4200], sym[4200], hard[4200], err[9000];
  snprintf(real, sizeof real, "%s/real", root);
  snprintf(linked, sizeof linked, "%s/linked", root);
  snprintf(file, sizeof file, "%s/real/book.txt", root);
  snprintf(sym, sizeof sym, "%s/sym.txt", root);
  snprintf(hard, sizeof hard, "%s/hard.txt", root);
  assert_int_equal(mkdir(real, 0755), 0);
  hl_write_file(file, "text", 4);
  assert_int_equal(symlink(real, linked), 0);
  assert_int_equal(symlink(file, sym), 0);
  assert_int_equal(link(file, hard), 0);
  char via_link[4200], new_a[4200], new_b[4200], odd[4200], other[4200];
  snprintf(via_link, sizeof via_link, "%s/linked/new.bin", root);
  snprintf(new_a, sizeof new_a, "%s/real/new.bin", root);
  snprintf(new_b, sizeof new_b, "%s/made/later/x.bin", root);
  snprintf(odd, sizeof odd, "%s//made/./later/x.bin", root);
  snprintf(other, sizeof other, "%s/real/other.bin", root);

  const struct {
    reg r[2];
    bool ok;
    const char *words;
  } cases[] = {
      {{{"--text", file, false}, {"--checkpoint", sym, true}}, false, "--checkpoint"},
      {{{"--text", file, false}, {"--checkpoint", hard, true}}, false, "an input"},
      {{{"--save-init", new_a, true}, {"--checkpoint", via_link, true}}, false, "another output"},
      {{{"--save-init", new_b, true}, {"--checkpoint", odd, true}}, false, "--save-init"},
      {{{"--text", file, false}, {"--init-weights", sym, false}}, true, NULL},   /* two inputs */
      {{{"--out", new_a, true}, {"--out", via_link, true}}, true, NULL},         /* one option's own */
      {{{"--text", file, false}, {"--checkpoint", other, true}}, true, NULL},   /* distinct */
      {{{"--save-init", new_b, true}, {"--checkpoint", new_a, true}}, true, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const bool ok = passes(cases[i].r, 2, NULL, NULL, err, sizeof err);
    if (ok != cases[i].ok) fail_msg("case %zu: %s (want %s): %s", i, ok ? "passed" : "refused", cases[i].ok ? "pass" : "refusal", err);
    if (!ok && (!strstr(err, cases[i].words) || !strstr(err, cases[i].r[0].option) || !strstr(err, cases[i].r[1].option)))
      fail_msg("case %zu: \"%s\" does not name both options and \"%s\"", i, err, cases[i].words);
  }
  /* an allowed pair: --resume's file may be --checkpoint's */
  const reg resume[] = {{"--resume", file, false}, {"--checkpoint", sym, true}};
  assert_true(passes(resume, 2, "--resume", "--checkpoint", err, sizeof err));
  assert_false(passes(resume, 2, "--text", "--checkpoint", err, sizeof err));
  hl_rmtree(root);
  free(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_path_set),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
