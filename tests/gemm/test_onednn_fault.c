/* test_onednn_fault.c — suite unit: a oneDNN failure inside the bf16 GEMM
 * path (kernels/cpu/onednn_gemm.c) stops the program with one line that
 * names the primitive, the call and oneDNN's status, and file:line; exit
 * status 1. "Cannot run this layout" is not a failure (the path widens to
 * fp32 instead); anything else oneDNN returns is.
 *
 * The faults are real oneDNN return values injected at the library's
 * boundary: this program defines dnnl_primitive_desc_create and
 * dnnl_primitive_execute itself, so the halflab code linked into it calls
 * these, which forward to libdnnl's own (dlsym RTLD_NEXT) unless a test has
 * armed a fault. Each fault runs in a child process, which must exit. Built
 * only with oneDNN. */

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/fatal.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/gemm.h"
#include "tests/support/hltest.h"

/* ------------------------------------------- the library's boundary -- */

static dnnl_status_t fail_desc_create = dnnl_success, fail_execute = dnnl_success;

dnnl_status_t dnnl_primitive_desc_create(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op, const_dnnl_primitive_attr_t attr,
                                         dnnl_engine_t engine, const_dnnl_primitive_desc_t hint) {
  if (fail_desc_create != dnnl_success) return fail_desc_create;
  __typeof__(dnnl_primitive_desc_create) *real = (__typeof__(real))dlsym(RTLD_NEXT, "dnnl_primitive_desc_create");
  return real(pd, op, attr, engine, hint);
}

dnnl_status_t dnnl_primitive_execute(const_dnnl_primitive_t p, dnnl_stream_t stream, int nargs, const dnnl_exec_arg_t *args) {
  if (fail_execute != dnnl_success) return fail_execute;
  __typeof__(dnnl_primitive_execute) *real = (__typeof__(real))dlsym(RTLD_NEXT, "dnnl_primitive_execute");
  return real(p, stream, nargs, args);
}

/* ------------------------------------------------------------ a GEMM -- */

enum { M = 24, N = 8, K = 40 };
static uint16_t a_[M * K], b_[K * N];
static float c_[M * N];

/* C (fp32) = A B in bf16, the shape a linear layer's forward passes */
static void bf16_gemm(void) {
  for (int i = 0; i < M * K; i++) a_[i] = 0x3f80; /* 1.0 */
  for (int i = 0; i < K * N; i++) b_[i] = 0x4000; /* 2.0 */
  hl_gemm_desc d = {.m = M, .n = N, .k = K, .batch = 1, .a_type = HL_BF16, .b_type = HL_BF16, .c_type = HL_F32,
                    .compute = HL_COMPUTE_F32, .alpha = 1, .a = a_, .lda = K, .b = b_, .ldb = N, .c = c_, .ldc = N,
                    .a_scale = 1, .b_scale = 1};
  hl_backend_cpu.gemm->gemm(&d);
}

static bool onednn_runs_bf16(void) {
  const hl_cpu_units *u = hl_cpu_units_get();
  return !u->portable && (u->avx512_bf16 || u->amx_bf16);
}

/* fn in a child, its stderr in buf; its exit status (HL_CHILD_RETURNED: the GEMM returned) */
static int run_child(void (*fn)(void), char *buf, size_t len) {
  return hl_child_stderr(fn, "test-onednn-fault", buf, len);
}

/* Does line `line` of kernels/cpu/onednn_gemm.c call `call`? (the source
 * is found through this file's own path, as the compiler saw both) */
static bool source_line_calls(int line, const char *call) {
  char path[4096];
  snprintf(path, sizeof path, "%s", __FILE__);
  char *cut = strstr(path, "tests/gemm/test_onednn_fault.c");
  if (!cut) return false;
  snprintf(cut, sizeof path - (size_t)(cut - path), "kernels/cpu/onednn_gemm.c");
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot read %s", path);
  char text[512];
  bool found = false;
  for (int n = 1; fgets(text, sizeof text, f); n++)
    if (n == line) found = strstr(text, call) != NULL;
  fclose(f);
  return found;
}

/* the line of the call in kernels/cpu/onednn_gemm.c, not of a helper */
static void expect_one_line_failure(const char *err, const char *call, const char *status) {
  char want[256];
  snprintf(want, sizeof want, "test-onednn-fault: oneDNN matmul primitive (bf16 x bf16 -> f32, %d x %d x %d, batch 1): %s failed: %s (",
           M, N, K, call, status);
  if (strncmp(err, want, strlen(want))) fail_msg("expected a line starting\n  %s\ngot\n  %s", want, err);
  const char *at = strstr(err, "kernels/cpu/onednn_gemm.c:");
  if (!at) fail_msg("no file:line in: %s", err);
  if (!source_line_calls(atoi(at + strlen("kernels/cpu/onednn_gemm.c:")), call)) fail_msg("the line named is not the call to %s: %s", call, err);
  const char *nl = strchr(err, '\n');
  if (!nl || nl[1] != '\0') fail_msg("not exactly one line: %s", err);
}

/* ------------------------------------------------------------- tests -- */

static void execute_fails(void) {
  fail_execute = dnnl_runtime_error;
  bf16_gemm();
}

static void test_execute_failure_stops(void **state) {
  (void)state;
  if (!onednn_runs_bf16()) skip();
  char err[1024];
  assert_int_equal(run_child(execute_fails, err, sizeof err), 1);
  expect_one_line_failure(err, "dnnl_primitive_execute", "runtime_error");
}

static void create_runs_out_of_memory(void) {
  fail_desc_create = dnnl_out_of_memory;
  bf16_gemm();
}

static void test_create_failure_stops(void **state) {
  (void)state;
  if (!onednn_runs_bf16()) skip();
  char err[1024];
  assert_int_equal(run_child(create_runs_out_of_memory, err, sizeof err), 1);
  expect_one_line_failure(err, "dnnl_primitive_desc_create", "out_of_memory");
}

/* "unimplemented" is oneDNN saying it has no matmul for the layout: the
 * product widens to fp32 and is right (A = 1, B = 2: every entry 2 k) */
static void create_unimplemented(void) {
  fail_desc_create = dnnl_unimplemented;
  bf16_gemm();
  for (int i = 0; i < M * N; i++)
    if (c_[i] != 2.0f * K) _exit(3);
  _exit(0);
}

static void test_unimplemented_widens(void **state) {
  (void)state;
  char err[1024];
  assert_int_equal(run_child(create_unimplemented, err, sizeof err), 0);
  assert_string_equal(err, "");
}

/* Without a fault the boundary forwards: the product runs and is right */
static void test_no_fault_runs(void **state) {
  (void)state;
  bf16_gemm();
  for (int i = 0; i < M * N; i++) assert_true(c_[i] == 2.0f * K);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      /* the children first: each makes its primitive itself, so none may
       * inherit one from this process's cache */
      cmocka_unit_test(test_execute_failure_stops),
      cmocka_unit_test(test_create_failure_stops),
      cmocka_unit_test(test_unimplemented_widens),
      cmocka_unit_test(test_no_fault_runs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
