/* test_footprint_gpu.c — suite gpu: halflab-bench footprint --device cuda.
 * GPT-2 124M's parameters in every policy built on the GPU: the
 * allocator's count equals the analytic bytes exactly, and the device's
 * free memory (cudaMemGetInfo) drops by the analytic bytes within 2% +
 * 64 MiB (cudaMalloc rounds each allocation up to its granularity; the
 * tolerance is stated here because it has not yet been measured on a GPU).
 * Exits 77 (skipped) without a usable GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"

static void test_gpu_params(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), path[4096];
  hl_run_result r = hl_run_ok("%s footprint --device cuda --quick --out %s", hl_test_prog("halflab-bench"), dir);
  snprintf(path, sizeof path, "%s/footprint_params.csv", dir);
  hl_table *p = hl_table_read(path);
  assert_non_null(p);
  const char *policy[4] = {"fp32", "fp16", "bf16", "int8"};
  const double bytes[4] = {497759232, 248879616, 248879616, 164353536};
  for (int i = 0; i < 4; i++) {
    int row = hl_table_find(p, "device", "cuda", "model", "gpt2-124m", "policy", policy[i], NULL);
    assert_true(row >= 0);
    assert_true(hl_table_num(p, row, "allocator_bytes") == bytes[i]);
    assert_string_equal(hl_table_get(p, row, "independent_method"), "cudaMemGetInfo");
    const double got = hl_table_num(p, row, "independent_bytes");
    if (fabs(got - bytes[i]) > 0.02 * bytes[i] + 64.0 * 1048576)
      fail_msg("%s: the device's free memory dropped by %.0f bytes, the parameters are %.0f", policy[i], got, bytes[i]);
  }
  hl_table_free(p);
  /* the training state is analytic on a GPU (no measured step: the core's CUDA tensor kernels are not built) */
  snprintf(path, sizeof path, "%s/footprint_training.csv", dir);
  hl_table *t = hl_table_read(path);
  assert_non_null(t);
  assert_true(hl_table_find(t, "mode", "amp-fp16", "measured", "0", NULL) >= 0);
  hl_table_free(t);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

int main(void) {
  hl_require_gpu();
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_gpu_params)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
