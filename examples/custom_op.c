/* custom_op.c — the custom-op recipe of PyTorch's AMP examples: an op with
 * its own forward and backward that wants fp32 inside an autocast region
 * (custom_fwd(cast_inputs=torch.float32) / custom_bwd):
 *
 *   class MyMM(torch.autograd.Function):
 *       @staticmethod
 *       @custom_fwd(cast_inputs=torch.float32)
 *       def forward(ctx, a, b):
 *           ctx.save_for_backward(a, b)
 *           return a.mm(b)
 *       @staticmethod
 *       @custom_bwd
 *       def backward(ctx, grad):
 *           a, b = ctx.saved_tensors
 *           return grad.mm(b.t()), a.t().mm(grad)
 *
 * Inside an fp16 region its inputs are cast to fp32 and its forward runs
 * with autocast off, so the result is fp32 where a plain mm gives fp16;
 * its backward runs under the same (off) state. Checked: the dtypes, the
 * autocast state each side saw, and the gradients against an fp32
 * reference (the fp16 input's gradient comes back through the cast, in
 * fp16). */
#include <math.h>
#include <stdio.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "core/engine/custom_op.h"
#include "core/base/error.h"
#include "core/engine/ops.h"
#include "examples/example.h"

static hl_device_kind device_;
static bool forward_saw_autocast = true, backward_saw_autocast = true;

static hl_tensor *my_mm_forward(hl_custom_ctx *ctx, hl_tensor *const *in, int n) {
  (void)n;
  forward_saw_autocast = hl_autocast_enabled(device_);
  if (!hl_custom_save(ctx, in[0]) || !hl_custom_save(ctx, in[1])) return NULL;
  return hl_mm(in[0], in[1]);
}

static bool my_mm_backward(hl_custom_ctx *ctx, hl_tensor *grad, hl_tensor **grad_in, int n) {
  (void)n;
  backward_saw_autocast = hl_autocast_enabled(device_);
  hl_tensor *a = hl_custom_saved(ctx, 0), *b = hl_custom_saved(ctx, 1);
  grad_in[0] = hl_mm(grad, hl_tmp(hl_transpose(b, 0, 1)));
  grad_in[1] = hl_mm(hl_tmp(hl_transpose(a, 0, 1)), grad);
  return grad_in[0] && grad_in[1];
}

static const hl_custom_op my_mm = {"my_mm", my_mm_forward, my_mm_backward, true, HL_F32};

static void expect_near(const char *what, const hl_tensor *x, const hl_tensor *ref, double tol) {
  float a[64], b[64];
  if (!x || !ref || hl_numel(x) > 64 || !hl_read_f32(x, a) || !hl_read_f32(ref, b)) {
    example_fail("%s: %s", what, hl_error());
    return;
  }
  for (int64_t i = 0; i < hl_numel(x); i++)
    if (!(fabs((double)a[i] - b[i]) <= tol * (1 + fabs((double)b[i])))) {
      example_fail("%s: element %lld is %g, the fp32 reference %g", what, (long long)i, a[i], b[i]);
      return;
    }
  printf("%-52s matches the fp32 reference\n", what);
}

int main(int argc, char **argv) {
  example_opts o = example_init("custom-op",
                                "The custom-op recipe: a user-defined op that asks for fp32 inputs and runs "
                                "with autocast off inside an autocast region.",
                                argc, argv);
  device_ = o.device;
  hl_tensor *a = hl_tmp(hl_randn(HL_SHAPE(4, 8), 0, 1, o.seed, 0, HL_F32, device_));
  hl_tensor *b16 = hl_tmp(hl_to_dtype(hl_tmp(hl_randn(HL_SHAPE(8, 3), 0, 1, o.seed, 1, HL_F32, device_)), HL_F16));
  HL_CHECK(a && b16 && hl_set_requires_grad(a, true) && hl_set_requires_grad(b16, true));

  hl_tensor *y = NULL, *plain = NULL;
  HL_AUTOCAST(device_, HL_F16, true) {
    plain = hl_tmp(hl_mm(a, b16));
    y = hl_tmp(hl_custom_apply(&my_mm, (hl_tensor *[]){a, b16}, 2));
  }
  example_expect("in autocast: mm(a_f32, b_f16)", plain, HL_F16);
  example_expect("in autocast: my_mm(a_f32, b_f16), cast_inputs f32", y, HL_F32);
  printf("%-52s %s\n", "autocast seen inside my_mm's forward", forward_saw_autocast ? "on" : "off");
  if (forward_saw_autocast) example_fail("my_mm's forward ran with autocast on");

  hl_tensor *loss = hl_tmp(hl_sum(y));
  if (!loss || !hl_backward(loss, NULL, false)) example_fail("backward: %s", hl_error());
  printf("%-52s %s\n", "autocast seen inside my_mm's backward", backward_saw_autocast ? "on" : "off");
  if (backward_saw_autocast) example_fail("my_mm's backward did not run under its forward's autocast state (off)");
  example_expect("gradient of a (f32 input)", hl_tensor_grad(a), HL_F32);
  example_expect("gradient of b (f16 input, through the cast)", hl_tensor_grad(b16), HL_F16);

  /* references in fp32: d sum(a b)/da = 1 b^T, d/db = a^T 1 */
  hl_tensor *b32 = hl_tmp(hl_to_f32(hl_tmp(hl_detach(b16)))), *a32 = hl_tmp(hl_detach(a));
  hl_tensor *ones = hl_tmp(hl_ones(HL_SHAPE(4, 3), HL_F32, device_));
  hl_tensor *ga = hl_tmp(hl_mm(ones, hl_tmp(hl_transpose(b32, 0, 1))));
  hl_tensor *gb = hl_tmp(hl_mm(hl_tmp(hl_transpose(a32, 0, 1)), ones));
  expect_near("gradient of a", hl_tensor_grad(a), ga, 1e-6);
  expect_near("gradient of b (fp16: 2^-11 relative)", hl_tmp(hl_to_f32(hl_tensor_grad(b16))), gb, 1e-3);
  expect_near("my_mm's value", y, hl_tmp(hl_mm(a32, b32)), 1e-6);
  return example_finish();
}
