/* test_blas.c — kernels/cpu/cpu_features.c and kernels/cpu/blas.c: cpuid's
 * answers agree with the kernel's own (/proc/cpuinfo), the kernel-set choice
 * per feature set, and the loaded BLAS runs what was chosen (or what the
 * user's OPENBLAS_CORETYPE said). With HALFLAB_BLAS_LIBRARY pointing at a
 * BLAS that cannot say its kernels (meson's test blas-unknown), every
 * description says "unknown" and sgemm still works. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_features.h"
#include "tests/support/hltest.h"

/* Whether /proc/cpuinfo's first "flags" line lists `flag` (Linux's names):
 * 1 or 0, or -1 when there is no such line (not Linux on x86). Read with
 * stdio: /proc files report size 0. */
static int cpuinfo_has(const char *flag) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return -1;
  static char line[1 << 14];
  int found = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "flags", 5) && strchr(line, ':')) {
      found = 0;
      for (char *w = strtok(strchr(line, ':') + 1, " \t\n"); w; w = strtok(NULL, " \t\n"))
        if (!strcmp(w, flag)) found = 1;
      break;
    }
  fclose(f);
  return found;
}

static void features_agree_with_the_kernel(void **state) {
  (void)state;
  const hl_cpu_features *f = hl_cpu_features_get();
  const struct {
    const char *flag;
    bool ours;
  } pairs[] = {{"fma", f->fma},          {"f16c", f->f16c},         {"avx2", f->avx2},
               {"avx512f", f->avx512f},   {"avx512bw", f->avx512bw}, {"avx512vl", f->avx512vl},
               {"avx512_bf16", f->avx512_bf16}, {"avx512_fp16", f->avx512_fp16},
               {"amx_tile", f->amx_tile}, {"amx_bf16", f->amx_bf16}, {"amx_fp16", f->amx_fp16}};
  if (cpuinfo_has("fpu") != 1) skip(); /* not Linux on x86 */
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    int theirs = cpuinfo_has(pairs[i].flag);
    if (theirs != (int)pairs[i].ours) fail_msg("%s: cpuid says %d, /proc/cpuinfo %d", pairs[i].flag, pairs[i].ours, theirs);
  }
  char line[512];
  hl_cpu_features_line(f, line, sizeof line);
  assert_non_null(strstr(line, "avx512_bf16 "));
  assert_non_null(strstr(line, "AMX tile state: "));
  if (f->amx_tile && f->amx_os_granted) assert_non_null(strstr(line, "granted by the OS"));
}

static void kernel_choice_per_feature_set(void **state) {
  (void)state;
  hl_cpu_features f = {0};
  assert_null(hl_blas_pick_kernels(&f)); /* nothing: the library decides */
  f.avx = true;
  assert_string_equal(hl_blas_pick_kernels(&f), "Sandybridge");
  f.avx2 = f.fma = true;
  strcpy(f.vendor, "GenuineIntel");
  assert_string_equal(hl_blas_pick_kernels(&f), "Haswell");
  strcpy(f.vendor, "AuthenticAMD");
  assert_string_equal(hl_blas_pick_kernels(&f), "Zen");
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true; /* no CD: not the full set */
  assert_string_equal(hl_blas_pick_kernels(&f), "Zen");
  f.avx512cd = true;
  assert_string_equal(hl_blas_pick_kernels(&f), "SkylakeX");
  f.avx512_bf16 = true;
  assert_string_equal(hl_blas_pick_kernels(&f), "Cooperlake");

  assert_string_equal(hl_blas_kernels_isa("Prescott"), "sse");
  assert_string_equal(hl_blas_kernels_isa("NEHALEM"), "sse");
  assert_string_equal(hl_blas_kernels_isa("Haswell"), "avx2");
  assert_string_equal(hl_blas_kernels_isa("cooperlake"), "avx512");
  assert_null(hl_blas_kernels_isa("unknown"));
  assert_null(hl_blas_kernels_isa(NULL));
}

/* C = A B on a small product, against a double loop */
static void check_sgemm(void) {
  enum { M = 5, N = 7, K = 9 };
  float a[M * K], b[K * N], c[M * N];
  for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7) % 11) - 5.0f;
  for (int i = 0; i < K * N; i++) b[i] = (float)((i * 5) % 13) - 6.0f;
  hl_blas()->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += (double)a[i * K + k] * b[k * N + j];
      assert_float_equal(c[i * N + j], s, 0.0); /* small integers: exact */
    }
}

static void loaded_blas_runs_the_chosen_kernels(void **state) {
  (void)state;
  const hl_blas_info *b = hl_blas_info_get();
  const hl_cpu_features *f = hl_cpu_features_get();
  const char *user = getenv("OPENBLAS_CORETYPE");
  const char *pick = hl_blas_pick_kernels(f);
  print_message("blas: %s, kernels %s (chosen by %s); %s\n", b->version, b->kernels, b->chosen_by, b->library);
  check_sgemm();
  if (getenv("HALFLAB_BLAS_LIBRARY")) { /* the stand-in that cannot describe itself */
    assert_string_equal(b->version, "unknown");
    assert_string_equal(b->kernels, "unknown");
    assert_false(b->generic);
    assert_string_equal(b->warning, "");
    return;
  }
  assert_non_null(strstr(b->version, "OpenBLAS"));
  if (user && *user) {
    assert_non_null(strstr(b->chosen_by, "set in the environment"));
  } else if (pick) {
    assert_non_null(strstr(b->chosen_by, "halflab, from cpuid"));
    if (strcasecmp(b->kernels, pick)) assert_non_null(strstr(b->chosen_by, "instead"));
    /* the choice made here is never a generic kernel set */
    assert_false(b->generic);
  }
  /* the environment is as the user left it */
  const char *now = getenv("OPENBLAS_CORETYPE");
  if (user) assert_string_equal(now, user);
  else assert_null(now);
  assert_int_equal(b->generic, b->warning[0] != '\0');
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(features_agree_with_the_kernel),
      cmocka_unit_test(kernel_choice_per_feature_set),
      cmocka_unit_test(loaded_blas_runs_the_chosen_kernels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
