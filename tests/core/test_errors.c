/* test_errors.c — suite unit: bad input never crashes and never gives
 * garbage. Each case returns NULL / false and leaves a message naming the
 * op and the shapes or dtypes: shape mismatches, wrong dtypes, mixed
 * float dtypes outside autocast, freed graphs, a second backward without
 * retain_graph, gradients of tensors that do not require grad, NULL
 * propagation, out-of-range indices, ops on a backend without kernels. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/base/device.h"
#include "core/base/error.h"
#include "core/engine/registry.h"
#include "tests/core/core_test.h"

static hl_tensor *f32(hl_shape s) { return hl_tmp(hl_randn(s, 0, 1, 1, 1, HL_F32, HL_DEVICE_CPU)); }

/* A system call's failure is the system's (exit 1 in the programs) unless
 * its errno describes the path the user gave; a wrapping message keeps the
 * cause, any other message drops it. */
static void test_system_cause(void **state) {
  (void)state;
  hl_error_clear();
  assert_false(hl_fail_errno(EIO, "read(\"%s\"): %s", "x.ckpt", strerror(EIO)));
  assert_true(hl_error_is_system());
  hl_fail_bool("--resume: %s", hl_error());
  assert_true(hl_error_is_system());
  hl_fail_bool("mm: shape mismatch");
  assert_false(hl_error_is_system());
  const int input[] = {ENOENT, EACCES, EISDIR, ENOTDIR};
  for (size_t i = 0; i < sizeof input / sizeof input[0]; i++) {
    hl_fail_errno(input[i], "open: %s", strerror(input[i]));
    assert_false(hl_error_is_system());
  }
  hl_fail_errno(ENOMEM, "read: %s", strerror(ENOMEM));
  assert_true(hl_error_is_system());
  hl_error_clear();
  assert_false(hl_error_is_system());
}

static void test_shape_mismatches(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *a = f32(HL_SHAPE(2, 3)), *b = f32(HL_SHAPE(4, 5)), *v = f32(HL_SHAPE(7));
  REFUSED(hl_mm(a, b), "mm: shape mismatch", "f32[2,3]", "f32[4,5]");
  REFUSED(hl_add(a, b), "add: shapes f32[2,3] and f32[4,5] do not broadcast");
  REFUSED(hl_linear(a, b, NULL), "linear: shape mismatch");
  REFUSED(hl_bmm(f32(HL_SHAPE(2, 3, 4)), f32(HL_SHAPE(3, 4, 5))), "bmm: shape mismatch");
  REFUSED(hl_matmul(f32(HL_SHAPE(2, 3, 4)), f32(HL_SHAPE(3, 4, 5))), "matmul: shape mismatch");
  REFUSED(hl_cat((hl_tensor *[]){a, b}, 2, 0), "cat:", "differ outside dim 0");
  REFUSED(hl_reshape(a, HL_SHAPE(4, 2)), "reshape:", "6 elements");
  REFUSED(hl_reshape(a, HL_SHAPE(-1, 4)), "reshape: cannot view f32[2,3]");
  REFUSED(hl_layer_norm(a, v, NULL, 1e-5), "layer_norm:", "weight f32[7]");
  REFUSED(hl_mse_loss(a, v), "mse_loss: shape mismatch");
  REFUSED(hl_slice(a, 1, 2, 5), "slice: [2, 5)", "f32[2,3]");
  REFUSED(hl_transpose(a, 0, 2), "transpose: dims 0, 2 out of range");
  REFUSED(hl_sum_dim(a, 3, false), "sum: dim 3 out of range");
  REFUSED(hl_causal_mask(v, -1), "causal_mask:", "at least 2 dims");
  REFUSED(hl_expand(a, HL_SHAPE(2, 4)), "expand: cannot expand f32[2,3]");
  hl_tensor *parts[2];
  REFUSED(hl_split(a, 1, 2, parts), "split:", "2 equal parts");
  REFUSED(hl_empty(HL_SHAPE(2, -3), HL_F32, HL_DEVICE_CPU), "empty: negative size -3");
  hl_pool_pop();
}

static void test_wrong_dtypes(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *logits = f32(HL_SHAPE(3, 4)), *w = f32(HL_SHAPE(5, 2));
  REFUSED(hl_cross_entropy(logits, f32(HL_SHAPE(3))), "cross_entropy: input 1 must be i32", "f32[3]");
  REFUSED(hl_embedding(w, f32(HL_SHAPE(3))), "embedding: input 1 must be i32");
  hl_tensor *i = hl_tmp(hl_zeros(HL_SHAPE(2, 2), HL_I32, HL_DEVICE_CPU));
  REFUSED(hl_mm(i, i), "mm: dtype i32 is not supported on cpu (supported: f64 f32 f16 bf16)");
  REFUSED(hl_set_requires_grad(i, true), "only float tensors");
  REFUSED(hl_randn(HL_SHAPE(2), 0, 1, 1, 1, HL_I8, HL_DEVICE_CPU), "randn: random values need a float dtype");
  hl_pool_pop();
}

static void test_mixed_float_dtypes(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *d = f32(HL_SHAPE(8, 8)), *h = hl_tmp(hl_to_dtype(d, HL_F16));
  /* the autocast example, after the region */
  REFUSED(hl_mm(d, h), "mm: dtype mismatch: f32[8,8] and f16[8,8] (cast one of them, or run inside an autocast region)");
  REFUSED(hl_layer_norm(h, hl_tmp(hl_ones(HL_SHAPE(8), HL_F32, HL_DEVICE_CPU)), NULL, 1e-5),
          "layer_norm: dtype mismatch: f16[8,8] and f32[8]");
  REFUSED(hl_mm(h, hl_tmp(hl_to_dtype(d, HL_BF16))), "f16[8,8] and bf16[8,8]");
  /* ops that promote accept the mix, as PyTorch does */
  hl_tensor *s = hl_tmp(hl_add(h, d));
  OK(s);
  assert_int_equal(s->dtype, HL_F32);
  assert_int_equal(hl_tmp(hl_mul(h, hl_tmp(hl_to_dtype(d, HL_BF16))))->dtype, HL_F32);
  hl_pool_pop();
}

static void test_graph_misuse(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *w = f32(HL_SHAPE(3, 3)), *x = f32(HL_SHAPE(2, 3));
  OK(hl_set_requires_grad(w, true));
  hl_tensor *loss = hl_tmp(hl_sum(hl_tmp(hl_mm(x, w))));
  OK(hl_backward(loss, NULL, false));
  /* second backward without retain_graph: the graph was freed */
  REFUSED(hl_backward(loss, NULL, false), "backward: the saved tensors of mm were freed", "retain_graph=true");
  /* backward through a freed graph from another root that shares it */
  hl_tensor *h = hl_tmp(hl_exp(w));
  hl_tensor *l1 = hl_tmp(hl_sum(h)), *l2 = hl_tmp(hl_mean(h));
  OK(hl_backward(l1, NULL, false));
  REFUSED(hl_backward(l2, NULL, false), "exp were freed");
  /* gradients of tensors that do not require grad */
  hl_tensor *g;
  hl_tensor *l3 = hl_tmp(hl_sum(hl_tmp(hl_mm(x, w))));
  REFUSED(hl_autograd_grad(&l3, 1, NULL, &x, 1, &g, (hl_grad_opts){0}), "grad: input 0", "does not require grad");
  hl_tensor *plain = hl_tmp(hl_sum(x));
  REFUSED(hl_backward(plain, NULL, false), "backward: f32[] does not require grad");
  /* a non-scalar output needs an explicit gradient of its shape */
  hl_tensor *y = hl_tmp(hl_mm(x, w));
  REFUSED(hl_backward(y, NULL, false), "only for one-element outputs, not f32[2,3]");
  REFUSED(hl_backward(y, hl_tmp(hl_ones(HL_SHAPE(3, 2), HL_F32, HL_DEVICE_CPU)), false),
          "gradient f32[3,2] does not match output f32[2,3]");
  hl_pool_pop();
}

static void test_null_propagates(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *a = f32(HL_SHAPE(2, 3)), *b = f32(HL_SHAPE(4, 5));
  hl_error_clear();
  /* a chain: the first failure's message survives to the end */
  hl_tensor *y = hl_relu(hl_tmp(hl_add_scalar(hl_tmp(hl_mm(a, b)), 1.0)));
  assert_null(y);
  assert_non_null(strstr(hl_error(), "mm: shape mismatch"));
  assert_true(isnan(hl_item(NULL)));
  assert_non_null(strstr(hl_error(), "mm: shape mismatch"));
  REFUSED(hl_backward(NULL, NULL, false), "mm: shape mismatch");
  /* without an earlier failure the NULL itself is named */
  hl_error_clear();
  REFUSED(hl_mm(NULL, b), "mm: input 0 is NULL");
  hl_error_clear();
  REFUSED(hl_read_f32(NULL, (float[1]){0}), "read_f32: tensor is NULL");
  hl_pool_pop();
}

static void test_out_of_range_indices(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *logits = f32(HL_SHAPE(3, 4)), *w = f32(HL_SHAPE(5, 2));
  hl_tensor *t = hl_tmp(hl_from_i32(HL_SHAPE(3), (int32_t[]){0, 4, -1}, HL_I32, HL_DEVICE_CPU));
  REFUSED(hl_cross_entropy(logits, t), "cross_entropy: 2 of 3 targets are outside [0, 4)");
  hl_tensor *idx = hl_tmp(hl_from_i32(HL_SHAPE(2), (int32_t[]){5, 1}, HL_I32, HL_DEVICE_CPU));
  REFUSED(hl_embedding(w, idx), "embedding: 1 of 2 indices are outside [0, 5)");
  hl_pool_pop();
}

static void test_backends_without_kernels(void **state) {
  (void)state;
  char why[256];
  const hl_op_desc *mm = hl_op_find("mm");
#ifdef HL_HAVE_CUDA
  /* the CUDA tensor kernels are built: float dtypes run, others are refused by name */
  assert_true(hl_op_supported(mm, HL_DEVICE_CUDA, HL_F32, why, sizeof why));
  assert_false(hl_op_supported(mm, HL_DEVICE_CUDA, HL_I32, why, sizeof why));
  assert_string_equal(why, "mm: dtype i32 is not supported on cuda (supported: f64 f32 f16 bf16)");
#else
  assert_false(hl_op_supported(mm, HL_DEVICE_CUDA, HL_F32, why, sizeof why));
  assert_string_equal(why, "op mm: this build has no CUDA backend");
  REFUSED(hl_zeros(HL_SHAPE(2), HL_F32, HL_DEVICE_CUDA), "zeros: this build has no cuda backend");
#endif
  /* views need no kernels: they are supported everywhere */
  assert_true(hl_op_supported(hl_op_find("transpose"), HL_DEVICE_CPU, HL_I8, why, sizeof why));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_system_cause), cmocka_unit_test(test_shape_mismatches),   cmocka_unit_test(test_wrong_dtypes),
      cmocka_unit_test(test_mixed_float_dtypes), cmocka_unit_test(test_graph_misuse),
      cmocka_unit_test(test_null_propagates),    cmocka_unit_test(test_out_of_range_indices),
      cmocka_unit_test(test_backends_without_kernels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
