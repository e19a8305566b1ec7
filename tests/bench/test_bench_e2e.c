/* test_bench_e2e.c — suite e2e: halflab-bench gemm, bandwidth and mlp-step
 * run end to end on the CPU at tiny sizes, their CSV read back and held
 * against their column tables (bench/schemas.c); --columns-md prints every
 * table; bad input gives one line on stderr, exit status 2 and no file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bench/schema_check.h"
#include "tests/support/hltest.h"

static const char *bench(void) { return hl_test_prog("halflab-bench"); }


static void expect_columns(const hl_table *t, const char *const *cols) {
  for (int i = 0; cols[i]; i++)
    if (hl_table_col(t, cols[i]) < 0) fail_msg("column '%s' missing", cols[i]);
}

/* llc_bytes is the L3 the kernel lists in sysfs (as lscpu prints it), not
 * CPUID's figure, which a hypervisor may fill with its host's */
static void expect_llc_as_the_kernel_lists_it(const char *meta) {
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
  if (!f) return; /* no L3 listed: nothing to compare with */
  unsigned long long kib = 0;
  const int got = fscanf(f, "%lluK", &kib);
  fclose(f);
  if (got != 1) return;
  const char *at = strstr(meta, "# llc_bytes: ");
  assert_non_null(at);
  assert_true(strtoull(at + strlen("# llc_bytes: "), NULL, 10) == kib * 1024);
}

static void test_gemm_tiny(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s gemm --device cpu --quick --sizes 64,96 --reps 3 --out %s", bench(), dir);
  assert_non_null(strstr(r.out, "fp16"));
  hl_table *t = hl_table_read(hl_path(dir, "gemm.csv"));
  assert_non_null(t);
  static const char *cols[] = {"device", "study", "variant", "dtype", "accumulate", "implementation", "m", "n", "k",
                               "batch", "time_ms_min", "time_ms_median", "time_ms_max", "tflop_per_s", "peak_tflop_per_s",
                               "peak_pct", "max_err_norm", "err_bound_norm", "max_err_over_bound", "rotation_slots", "attempts", NULL};
  expect_columns(t, cols);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "gemm.csv"), &bench_gemm_schema), t->nrows);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "gemm_expectations.csv"), &bench_gemm_expectations_schema), 1);
  /* every CPU variant at both sizes: fp32, fp16, bf16, the CPU's bf16
   * fallback, the OpenBLAS reference and, with oneDNN built in and a bf16
   * matmul in it for this CPU (AVX512-BF16 or AMX; not on AVX2 alone), the
   * oneDNN one; a variant left out is named on stderr with the reason */
  static const char *variants[] = {"fp32", "fp16", "bf16", "bf16-widened", "openblas", "onednn-bf16"};
  const char *onednn_skipped = strstr(r.err, "skipping onednn-bf16");
#ifdef HL_HAVE_ONEDNN
  const bool bf16_units = !strstr(t->meta, "avx512_bf16 no") || !strstr(t->meta, "amx_bf16 no");
  if (onednn_skipped && bf16_units) fail_msg("oneDNN's bf16 matmul was skipped on a CPU with bf16 units:\n%s", r.err);
  if (onednn_skipped) assert_non_null(strstr(onednn_skipped, "oneDNN has no matmul"));
  const int nvariants = onednn_skipped ? 5 : 6;
#else
  const int nvariants = 5;
  assert_non_null(onednn_skipped);
#endif
  for (int v = 0; v < nvariants; v++) {
    assert_true(hl_table_find(t, "variant", variants[v], "m", "64", NULL) >= 0);
    assert_true(hl_table_find(t, "variant", variants[v], "m", "96", NULL) >= 0);
  }
  assert_int_equal(t->nrows, 2 * nvariants);
  for (int i = 0; i < t->nrows; i++) {
    const double lo = hl_table_num(t, i, "time_ms_min"), med = hl_table_num(t, i, "time_ms_median"), hi = hl_table_num(t, i, "time_ms_max");
    assert_true(lo > 0 && lo <= med && med <= hi);
    const double m = hl_table_num(t, i, "m"), flop = 2 * m * hl_table_num(t, i, "n") * hl_table_num(t, i, "k") * hl_table_num(t, i, "batch");
    /* flop is 2mnk, exactly; tflop_per_s is flop / median time */
    assert_true(hl_table_num(t, i, "flop") == flop);
    const double tflop_per_s = hl_table_num(t, i, "tflop_per_s");
    assert_true(fabs(tflop_per_s - flop / (med * 1e-3) / 1e12) <= 1e-3 * tflop_per_s);
    assert_true(tflop_per_s > 1e-5 && tflop_per_s < 100); /* a CPU: GFLOP/s to a few TFLOP/s */
    /* validated before timing: the sampled error within the bound */
    assert_true(hl_table_num(t, i, "max_err_over_bound") <= 1.0);
    if (!strcmp(hl_table_get(t, i, "dtype"), "f32")) assert_true(hl_table_num(t, i, "max_err_norm") < 1e-6);
    /* a CPU in the built-in table has a peak (its unit's FLOP/cycle x cores x clock), others none */
    if (strstr(t->meta, "# peak_source: CPU table")) {
      const double peak = hl_table_num(t, i, "peak_tflop_per_s"), pct = hl_table_num(t, i, "peak_pct");
      assert_true(peak > 0 && fabs(pct - 100 * tflop_per_s / peak) <= 1e-3 * pct + 1e-6);
    } else {
      assert_string_equal(hl_table_get(t, i, "peak_tflop_per_s"), "");
      assert_string_equal(hl_table_get(t, i, "peak_pct"), "");
    }
    assert_string_equal(hl_table_get(t, i, "accumulate"), "f32");
    assert_int_equal((int)hl_table_num(t, i, "samples"), 3);
    assert_true(hl_table_num(t, i, "attempts") >= 1 && hl_table_num(t, i, "attempts") <= 3); /* re-measured only when disturbed */
  }
  int f16 = hl_table_find(t, "variant", "fp16", NULL);
  assert_non_null(strstr(hl_table_get(t, f16, "implementation"), "widened"));
  int bw = hl_table_find(t, "variant", "bf16-widened", NULL);
  assert_non_null(strstr(hl_table_get(t, bw, "implementation"), "the CPU fallback"));
  /* the bf16 path names what ran: oneDNN (engine, version, its kernel) where
   * this build and CPU have it, else the widening path; the metadata says which */
  const char *bf16_impl = hl_table_get(t, hl_table_find(t, "variant", "bf16", NULL), "implementation");
  assert_non_null(strstr(t->meta, "# onednn: "));
  if (strstr(t->meta, "bf16 GEMMs on its matmul")) {
    assert_true(!strncmp(bf16_impl, "onednn 2.", 9));
    int od = hl_table_find(t, "variant", "onednn-bf16", NULL);
    assert_non_null(strstr(hl_table_get(t, od, "implementation"), bf16_impl)); /* the same kernel on both sides */
  } else {
    assert_non_null(strstr(bf16_impl, "widened"));
  }
  assert_true(strstr(t->meta, "# peak_source: peak unknown") || strstr(t->meta, "# peak_source: CPU table"));
  assert_non_null(strstr(t->meta, "# sm_count: "));
  assert_non_null(strstr(t->meta, "# clock_mhz: "));
  expect_llc_as_the_kernel_lists_it(t->meta);
  assert_non_null(strstr(t->meta, "# ecc: "));
  assert_non_null(strstr(t->meta, "# mig: "));
  assert_non_null(strstr(t->meta, "# method: "));
  hl_table_free(t);
  /* no size >= 1024: the CPU expectations are reported as skipped, not passed */
  hl_table *g = hl_table_read(hl_path(dir, "gemm_expectations.csv"));
  assert_non_null(g);
  assert_string_equal(hl_table_get(g, 0, "status"), "SKIP");
  hl_table_free(g);
  assert_non_null(strstr(r.out, "SKIP"));
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void test_gemm_accuracy_tiny(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s gemm --accuracy --device cpu --sizes 64,1024 --dtypes fp32,fp16,fp16-acc16 --out %s",
                              bench(), dir);
  hl_table *t = hl_table_read(hl_path(dir, "gemm_accuracy.csv"));
  assert_non_null(t);
  static const char *cols[] = {"method", "variant", "input", "accumulate", "data", "k", "rel_err", "rel_err_accumulation", NULL};
  expect_columns(t, cols);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "gemm_accuracy.csv"), &bench_gemm_accuracy_schema), t->nrows);
  assert_int_equal(t->nrows, 3 * 2 * 2); /* variants x data x k */
  int f32 = hl_table_find(t, "variant", "fp32", "data", "positive", "k", "1024", NULL);
  int f16 = hl_table_find(t, "variant", "fp16", "data", "positive", "k", "1024", NULL);
  int acc16 = hl_table_find(t, "variant", "fp16-acc16", "data", "positive", "k", "1024", NULL);
  assert_true(f32 >= 0 && f16 >= 0 && acc16 >= 0);
  assert_true(hl_table_num(t, f32, "rel_err") < 1e-5);
  /* fp16 inputs cost about 2^-11 each; fp32 accumulation adds almost nothing to it */
  assert_true(hl_table_num(t, f16, "rel_err") < 1e-3);
  assert_true(hl_table_num(t, f16, "rel_err_accumulation") < 1e-5);
  /* an fp16 accumulator of a sum of 1024 positive terms (~256) loses far more */
  assert_true(hl_table_num(t, acc16, "rel_err_accumulation") > 100 * hl_table_num(t, f16, "rel_err_accumulation"));
  assert_true(hl_table_num(t, acc16, "rel_err") > hl_table_num(t, f16, "rel_err"));
  hl_table_free(t);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* The block-scaled and narrow-accumulator rows, read back: labelled emulated, the error ordered by
 * element width, and the narrow accumulator losing what its truncation predicts */
static void test_gemm_accuracy_emulated(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s gemm --accuracy --device cpu --sizes 64,4096 --dtypes "
                              "fp32,fp8-tensor,fp8-tensor-acc14,fp8-tensor-acc14-p128,mxfp8,mxfp4,nvfp4 --out %s",
                              bench(), dir);
  hl_table *t = hl_table_read(hl_path(dir, "gemm_accuracy.csv"));
  assert_non_null(t);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "gemm_accuracy.csv"), &bench_gemm_accuracy_schema), t->nrows);
  assert_int_equal(t->nrows, 7 * 2 * 2); /* variants x data x k */
  for (int i = 0; i < t->nrows; i++) {
    const bool fp32 = !strcmp(hl_table_get(t, i, "variant"), "fp32");
    assert_string_equal(hl_table_get(t, i, "method"), fp32 ? "simulated" : "emulated");
    assert_string_equal(hl_table_get(t, i, "device"), "cpu");
    if (!fp32) assert_true(!strncmp(hl_table_get(t, i, "implementation"), "emulated on the CPU", 19));
  }
#define ERR(variant, data, column) \
  hl_table_num(t, hl_table_find(t, "variant", variant, "data", data, "k", "4096", NULL), column)
  /* fewer element bits, more error: 2 significand bits (fp4) against 4 (e4m3) against 24 */
  assert_true(ERR("mxfp4", "signed", "rel_err") > 2 * ERR("mxfp8", "signed", "rel_err"));
  assert_true(ERR("nvfp4", "signed", "rel_err") > 2 * ERR("mxfp8", "signed", "rel_err"));
  assert_true(ERR("mxfp8", "signed", "rel_err") > 100 * ERR("fp32", "signed", "rel_err"));
  /* the inputs cost each fp8 row the same; only the accumulator differs */
  assert_true(ERR("fp8-tensor", "positive", "rel_err_accumulation") < 1e-5);
  assert_true(ERR("fp8-tensor-acc14-p128", "positive", "rel_err_accumulation") >
              10 * ERR("fp8-tensor", "positive", "rel_err_accumulation"));
  assert_true(ERR("fp8-tensor-acc14", "positive", "rel_err_accumulation") >
              10 * ERR("fp8-tensor-acc14-p128", "positive", "rel_err_accumulation"));
  /* positive data: each group of 32 truncates 32 addends by half a spacing 2^(e - 13) on average,
   * e the running sum's exponent, so a relative 2^-14 .. 2^-13 times 16 per group, over k / 32 groups
   * with the sum growing linearly: k 2^-16 .. k 2^-15 in all (0.0625 .. 0.125 at k = 4096) */
  const double fast = ERR("fp8-tensor-acc14", "positive", "rel_err_accumulation");
  assert_true(fast > 4096 * 0x1p-16 / 2 && fast < 4096 * 0x1p-15 * 2);
#undef ERR
  hl_table_free(t);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* bf16 beside its simulation: the CPU's own bf16 GEMM (method onednn) where
 * the run says oneDNN does bf16, else a note why not */
static void test_gemm_accuracy_onednn(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s gemm --accuracy --device cpu --sizes 64,1024 --dtypes bf16 --out %s", bench(), dir);
  hl_table *t = hl_table_read(hl_path(dir, "gemm_accuracy.csv"));
  assert_non_null(t);
  const bool onednn = strstr(t->meta, "bf16 GEMMs on its matmul") != NULL;
  assert_int_equal(t->nrows, (onednn ? 2 : 1) * 2 * 2); /* methods x data x k */
  if (onednn) {
    const int i = hl_table_find(t, "method", "onednn", "data", "positive", "k", "1024", NULL);
    assert_true(i >= 0);
    assert_true(!strncmp(hl_table_get(t, i, "implementation"), "onednn 2.", 9));
    assert_string_equal(hl_table_get(t, i, "out_dtype"), "f32");
    /* bf16 inputs cost about 2^-9 each; fp32 accumulation to an fp32 output adds almost nothing */
    assert_true(hl_table_num(t, i, "rel_err") < 1e-2);
    assert_true(hl_table_num(t, i, "rel_err_accumulation") < 1e-5);
  } else {
    assert_non_null(strstr(r.err, "no onednn line for bf16"));
  }
  hl_table_free(t);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void test_bandwidth_tiny(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s bandwidth --device cpu --sizes 64KiB,1MiB --reps 3 --out %s", bench(), dir);
  hl_table *t = hl_table_read(hl_path(dir, "bandwidth.csv"));
  assert_non_null(t);
  static const char *cols[] = {"device", "kernel", "dtype", "array_bytes", "elements", "moved_bytes", "time_ms_min",
                               "time_ms_median", "time_ms_max", "gb_per_s", "gb_per_s_best", "gelem_per_s", "ref_kernel",
                               "ref_gb_per_s", "ref_pct", "datasheet_gb_per_s", "attempts", NULL};
  expect_columns(t, cols);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "bandwidth.csv"), &bench_bandwidth_schema), t->nrows);
  expect_csv_follows_schema(hl_path(dir, "bandwidth_expectations.csv"), &bench_bandwidth_expectations_schema);
  /* 2 sizes x (the reference copies + 3 types x 5 kernels): memcpy, memcpy-omp, copy-loop and, with AVX2, copy-loop-nt */
  const int copies = hl_table_find(t, "kernel", "copy-loop-nt", NULL) >= 0 ? 4 : 3;
  assert_int_equal(t->nrows, 2 * (copies + 15));
  static const char *kernels[] = {"copy", "scale", "add", "triad", "dot"};
  static const int arrays[] = {2, 2, 3, 3, 2};
  static const char *dtypes[] = {"fp32", "fp16", "bf16"};
  static const int width[] = {4, 2, 2};
  for (int d = 0; d < 3; d++)
    for (int k = 0; k < 5; k++) {
      int i = hl_table_find(t, "kernel", kernels[k], "dtype", dtypes[d], "array_bytes", "1048576", NULL);
      if (i < 0) fail_msg("no row for %s %s at 1 MiB", kernels[k], dtypes[d]);
      assert_true(hl_table_num(t, i, "elements") == 1048576.0 / width[d]);
      assert_true(hl_table_num(t, i, "moved_bytes") == arrays[k] * 1048576.0);
      const double gb_per_s = hl_table_num(t, i, "gb_per_s");
      assert_true(gb_per_s > 0.05 && gb_per_s < 10000);
      assert_true(fabs(gb_per_s - hl_table_num(t, i, "moved_bytes") / (hl_table_num(t, i, "time_ms_median") * 1e-3) / 1e9) < 1e-3 * gb_per_s);
      assert_true(fabs(hl_table_num(t, i, "gelem_per_s") * width[d] - gb_per_s) < 1e-3 * gb_per_s); /* same bytes, width-fold elements */
      assert_true(fabs(hl_table_num(t, i, "ref_pct") - 100 * gb_per_s / hl_table_num(t, i, "ref_gb_per_s")) < 1e-2 * hl_table_num(t, i, "ref_pct"));
      assert_string_equal(hl_table_get(t, i, "datasheet_gb_per_s"), "");
      assert_string_equal(hl_table_get(t, i, "datasheet_pct"), "");
    }
  /* the reference copies: the kernel-only columns empty, never 0; the
   * reference at each size is the fastest of them, and every kernel row
   * of the size names it */
  static const char *refs[] = {"memcpy", "memcpy-omp", "copy-loop", "copy-loop-nt"};
  static const char *sizes[] = {"65536", "1048576"};
  for (int z = 0; z < 2; z++) {
    double fastest = 0;
    const char *fastest_name = NULL;
    for (int c = 0; c < copies; c++) {
      const int row = hl_table_find(t, "kernel", refs[c], "array_bytes", sizes[z], NULL);
      assert_true(row >= 0);
      static const char *empty[] = {"gelem_per_s", "ref_kernel", "ref_gb_per_s", "ref_pct", "datasheet_pct"};
      for (int e = 0; e < 5; e++) assert_string_equal(hl_table_get(t, row, empty[e]), "");
      if (hl_table_num(t, row, "gb_per_s") > fastest) fastest = hl_table_num(t, row, "gb_per_s"), fastest_name = refs[c];
    }
    const int triad = hl_table_find(t, "kernel", "triad", "dtype", "fp32", "array_bytes", sizes[z], NULL);
    assert_string_equal(hl_table_get(t, triad, "ref_kernel"), fastest_name);
    assert_true(fabs(hl_table_num(t, triad, "ref_gb_per_s") - fastest) <= 1e-5 * fastest);
  }
  hl_table_free(t);
  /* 1 MiB fits in any last-level cache: the expectations that need arrays
   * past it are skipped, saying so, each with its reason */
  hl_table *g = hl_table_read(hl_path(dir, "bandwidth_expectations.csv"));
  assert_non_null(g);
  const int triad_row = hl_table_find(g, "expectation", "fp32 triad at 1 MiB between 80% and 110% of the copy reference", NULL);
  assert_true(triad_row >= 0);
  assert_string_equal(hl_table_get(g, triad_row, "status"), "SKIP");
  assert_non_null(strstr(hl_table_get(g, triad_row, "detail"), "below twice the last-level cache"));
  for (int i = 0; i < g->nrows; i++) assert_true(strlen(hl_table_get(g, i, "reason")) > 20);
  hl_table_free(g);
  assert_false(hl_file_exists(hl_path(dir, "bandwidth_host.csv"))); /* GPU only */
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* mlp_step.csv and its expectations as their tables say (their values: tests/core/test_examples.c) */
static void test_mlp_step_schema(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s mlp-step --device cpu --batch 16 --reps 2 --quick --out %s", bench(), dir);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "mlp_step.csv"), &bench_mlp_step_schema), 4);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "mlp_step_expectations.csv"), &bench_mlp_step_expectations_schema), 2);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* --columns-md: every table's section, in bench_schemas' order, nothing written */
static void test_columns_md(void **state) {
  (void)state;
  hl_run_result r = hl_run_ok("%s --columns-md", bench());
  const char *at = r.out;
  for (const hl_schema *const *s = bench_schemas; *s; s++) {
    char heading[128];
    snprintf(heading, sizeof heading, "## %s\n", (*s)->file);
    const char *found = strstr(at, heading);
    if (!found) fail_msg("--columns-md: no '%s' after the sections before it", (*s)->file);
    at = found + 1;
    for (int c = 0; c < (*s)->n_columns; c++) {
      char row[128];
      snprintf(row, sizeof row, "| `%s` |", (*s)->columns[c].name);
      assert_non_null(strstr(found, row));
    }
  }
  assert_non_null(strstr(r.out, "| column | unit | type | meaning | computed in |"));
  hl_run_free(&r);
  r = hl_run("%s --help", bench());
  assert_non_null(strstr(r.out, "--columns-md"));
  hl_run_free(&r);
  char *dir = hl_tmpdir();
  hl_expect_refused(dir, 2, "--columns-md", "%s --columns-md gemm", bench());
  hl_rmtree(dir);
  free(dir);
}

static void test_list_writes_nothing(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run("%s gemm --list --device cpu --out %s/out", bench(), dir);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "fp16-acc16"));
  assert_non_null(strstr(r.out, "fp16 accumulation is a GPU mode"));
  assert_non_null(strstr(r.out, "sm_89"));
  assert_int_equal(hl_count_files(dir), 0);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* One line on stderr naming the problem, exit status 2, nothing created or truncated */
static void expect_bad_input_on(const char *device, const char *sub, const char *args, const char *needle) {
  char *dir = hl_tmpdir();
  hl_write_file(hl_path(dir, "gemm.csv"), "old\n", 4);
  hl_expect_refused(dir, 2, needle, "%s %s --device %s --out %s %s", bench(), sub, device, dir, args);
  char *kept = hl_read_file(hl_path(dir, "gemm.csv"), NULL);
  assert_string_equal(kept, "old\n");
  free(kept);
  hl_rmtree(dir);
  free(dir);
}

static void expect_bad_input(const char *sub, const char *args, const char *needle) {
  expect_bad_input_on("cpu", sub, args, needle);
}

static void test_bad_input(void **state) {
  (void)state;
  expect_bad_input("gemm", "--sizes 0", "--sizes");
  expect_bad_input("gemm", "--sizes -128", "--sizes");
  expect_bad_input("gemm", "--sizes abc", "not an integer");
  expect_bad_input("gemm", "--sizes 64,x", "not an integer");
  expect_bad_input("gemm", "--sizes 1000000", "needs");
  expect_bad_input("gemm", "--dtypes fp64", "unknown variant");
  expect_bad_input("gemm", "--dtypes tf32", "cannot run");
  expect_bad_input("gemm", "--dtypes fp16-acc16", "cannot run");
  expect_bad_input("gemm", "--studies cubes", "unknown study");
  expect_bad_input("gemm", "--reps 0", "--reps");
  expect_bad_input("gemm", "--accuracy --dtypes openblas", "unknown variant of the accuracy study");
  expect_bad_input("gemm", "--bogus", "unknown option");
  expect_bad_input("gemm", "--sizes", "needs a value");
  expect_bad_input("bandwidth", "--sizes 0", "--sizes");
  expect_bad_input("bandwidth", "--sizes -1MiB", "negative");
  expect_bad_input("bandwidth", "--sizes lots", "not a size");
  expect_bad_input("bandwidth", "--sizes 1TiB", "needs");
  expect_bad_input("bandwidth", "--dtypes fp64", "unknown value");
  expect_bad_input("bandwidth", "--kernels memset", "unknown value");
  expect_bad_input("footprintz", "", "unknown subcommand");
  /* --device auto: the "no usable GPU" notice must not come on top of the one line */
  expect_bad_input_on("auto", "gemm", "--sizes 0", "--sizes");
  expect_bad_input_on("auto", "gemm", "--dtypes fp64", "unknown variant");
  expect_bad_input_on("auto", "bandwidth", "--sizes 1TiB", "needs");
  expect_bad_input_on("nonsense", "gemm", "", "--device");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_tiny),
      cmocka_unit_test(test_gemm_accuracy_tiny),
      cmocka_unit_test(test_gemm_accuracy_onednn),
      cmocka_unit_test(test_gemm_accuracy_emulated),
      cmocka_unit_test(test_bandwidth_tiny),
      cmocka_unit_test(test_mlp_step_schema),
      cmocka_unit_test(test_columns_md),
      cmocka_unit_test(test_list_writes_nothing),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
