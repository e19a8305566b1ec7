/* autocast_model.c — the "Autocasting作装饰器" example: autocast wrapping a
 * model's whole forward, as @autocast() on forward() does in PyTorch.
 *
 *   class AutocastModel(nn.Module):
 *       @autocast()
 *       def forward(self, input): ...
 *
 * In C the decorator is HL_AUTOCAST_FN: it defines mlp_forward, which runs
 * mlp_forward_fp32 inside an autocast region with the device's default
 * lower precision (bf16 on the CPU, fp16 on a GPU). The model keeps fp32
 * weights; the logits come out in the lower precision and are cast back
 * to fp32 for the loss, outside the region, as the seed advises. A few
 * SGD steps train it on a separable toy problem.
 *
 * Checked: the logits' dtype, no region left open after the call, fp32
 * gradients for the fp32 weights, and a loss that falls. */
#include <math.h>
#include <stdio.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "core/base/error.h"
#include "core/engine/ops.h"
#include "examples/example.h"

typedef struct {
  hl_tensor *w1, *b1, *w2, *b2;
} mlp;

static hl_device_kind device_; /* the decorator's device, chosen on the command line */

static hl_tensor *mlp_forward_fp32(mlp *m, hl_tensor *x) {
  hl_tensor *h = hl_tmp(hl_relu(hl_tmp(hl_linear(x, m->w1, m->b1))));
  return hl_linear(h, m->w2, m->b2);
}

/* the decorated forward: the whole body inside an autocast region */
HL_AUTOCAST_FN(hl_tensor *, mlp_forward, (mlp * m, hl_tensor *x), (m, x), mlp_forward_fp32, device_,
               HL_AUTOCAST_DEFAULT)

static hl_tensor *param(hl_shape s, double scale, uint64_t seed, uint64_t stream) {
  hl_tensor *p = hl_tmp(hl_randn(s, 0, scale, seed, stream, HL_F32, device_));
  HL_CHECK(p && hl_set_requires_grad(p, true));
  return p;
}

int main(int argc, char **argv) {
  example_opts o = example_init("autocast-model",
                                "The decorator example: a model whose forward runs wholly under autocast.",
                                argc, argv);
  device_ = o.device;
  enum { N = 64, IN = 16, HID = 32, CLASSES = 2, STEPS = 40 };
  mlp m = {param(HL_SHAPE(HID, IN), 0.25, o.seed, 0), param(HL_SHAPE(HID), 0.0, o.seed, 1),
           param(HL_SHAPE(CLASSES, HID), 0.2, o.seed, 2), param(HL_SHAPE(CLASSES), 0.0, o.seed, 3)};
  /* two Gaussian blobs: the class is the sign of the first feature's mean */
  hl_tensor *x = hl_tmp(hl_randn(HL_SHAPE(N, IN), 0, 1, o.seed, 10, HL_F32, device_));
  int32_t labels[N];
  float xv[N * IN];
  HL_CHECK(x && hl_read_f32(x, xv));
  for (int i = 0; i < N; i++) {
    labels[i] = i % 2;
    xv[i * IN] += labels[i] ? 2.0f : -2.0f;
  }
  x = hl_tmp(hl_from_f32(HL_SHAPE(N, IN), xv, HL_F32, device_));
  hl_tensor *t = hl_tmp(hl_from_i32(HL_SHAPE(N), labels, HL_I32, device_));
  HL_CHECK(x && t);

  double first = NAN, last = NAN;
  hl_tensor *params[4] = {m.w1, m.b1, m.w2, m.b2};
  for (int step = 0; step < STEPS; step++) {
    hl_pool_push();
    hl_tensor *logits = hl_tmp(mlp_forward(&m, x));
    if (step == 0) {
      example_expect("decorated forward: logits", logits, hl_autocast_default_dtype(device_));
      if (hl_autocast_depth() != 0) example_fail("a region is still open after the decorated call");
    }
    /* back in fp32 for the loss, outside the region */
    hl_tensor *loss = hl_tmp(hl_cross_entropy(hl_tmp(hl_to_f32(logits)), t));
    if (!loss || !hl_backward(loss, NULL, false)) {
      example_fail("step %d: %s", step, hl_error());
      hl_pool_pop();
      break;
    }
    double l = hl_item(loss);
    if (step == 0) {
      first = l;
      example_expect("loss (cross_entropy of to_f32(logits))", loss, HL_F32);
      example_expect("gradient of the fp32 weight w1", hl_tensor_grad(m.w1), HL_F32);
    }
    last = l;
    hl_pool_pop();
    /* plain SGD on the fp32 weights */
    HL_NO_GRAD {
      for (int i = 0; i < 4; i++) {
        hl_tensor *g = hl_tensor_grad(params[i]);
        HL_CHECK(hl_scale_(g, -0.5) && hl_add_(params[i], g));
        hl_zero_grad(params[i]);
      }
    }
  }
  printf("%-52s %.4f -> %.4f\n", "loss over 40 SGD steps", first, last);
  if (!(last < 0.5 * first)) example_fail("the loss did not fall by half: %.4f -> %.4f", first, last);
  return example_finish();
}
