/* autocast_matrix.c — the autocast example ("数据类型转换"): inside an
 * autocast region mm runs in fp16 by itself, also with mixed inputs; after
 * the region an fp16 result no longer mixes with fp32 tensors until it is
 * cast back explicitly.
 *
 *   with autocast():
 *       e_float16 = torch.mm(a_float32, b_float32)
 *       f_float16 = torch.mm(d_float32, e_float16)
 *   g_float32 = torch.mm(d_float32, f_float16.float())
 *
 * On the CPU the region asks for fp16 explicitly so that it prints what the
 * seed prints; the CPU's default lower precision (bf16) is shown after.
 * Every line is checked: the program exits 1 when a dtype is not the one
 * autocast must give or a result is off. */
#include <math.h>
#include <stdio.h>

#include "core/engine/autocast.h"
#include "core/base/error.h"
#include "core/engine/ops.h"
#include "examples/example.h"

/* |x - reference| <= tol * max|reference|, elementwise over the 8x8 results */
static void expect_close(const char *what, hl_tensor *x, hl_tensor *ref, double tol) {
  float a[64], b[64];
  if (!x || !ref || !hl_read_f32(x, a) || !hl_read_f32(ref, b)) {
    example_fail("%s: %s", what, hl_error());
    return;
  }
  double worst = 0, scale = 0;
  for (int i = 0; i < 64; i++) {
    worst = fmax(worst, fabs((double)a[i] - b[i]));
    scale = fmax(scale, fabs((double)b[i]));
  }
  if (!(worst <= tol * scale)) example_fail("%s: differs from the fp32 product by %.3g (max |x| %.3g)", what, worst, scale);
}

int main(int argc, char **argv) {
  example_opts o = example_init("autocast-matrix",
                                "The matrix example: mm inside and after an autocast region, with the dtypes "
                                "it gives.",
                                argc, argv);
  const hl_device_kind dev = o.device;
  hl_tensor *a = hl_tmp(hl_rand(HL_SHAPE(8, 8), 0, 1, o.seed, 0, HL_F32, dev));
  hl_tensor *b = hl_tmp(hl_rand(HL_SHAPE(8, 8), 0, 1, o.seed, 1, HL_F32, dev));
  hl_tensor *d = hl_tmp(hl_rand(HL_SHAPE(8, 8), 0, 1, o.seed, 3, HL_F32, dev));
  HL_CHECK(a && b && d);

  hl_tensor *e = NULL, *f = NULL;
  HL_AUTOCAST(dev, HL_F16, true) {
    e = hl_tmp(hl_mm(a, b));
    example_expect("in autocast:  e = mm(a_f32, b_f32)", e, HL_F16);
    f = hl_tmp(hl_mm(d, e));
    example_expect("in autocast:  f = mm(d_f32, e_f16)", f, HL_F16);
  }
  /* fp16 products of [0,1) inputs, accumulated in fp32: within fp16's rounding of the result */
  expect_close("e", e, hl_tmp(hl_mm(a, b)), 1e-3);

  /* after the region: no autocast, the inputs must agree */
  hl_tensor *refused = hl_mm(d, f);
  if (refused) {
    example_fail("out autocast: mm(d_f32, f_f16) was accepted (%s)", hl_desc(refused));
    hl_release(refused);
  } else {
    printf("%-52s refused: %s\n", "out autocast: mm(d_f32, f_f16)", hl_error());
  }
  hl_tensor *g = hl_tmp(hl_mm(d, hl_tmp(hl_to_f32(f))));
  example_expect("out autocast: g = mm(d_f32, to_f32(f_f16))", g, HL_F32);

  /* the device's default lower precision: bf16 on the CPU, fp16 on a GPU */
  const hl_dtype def = hl_autocast_default_dtype(dev);
  hl_tensor *h = NULL;
  HL_AUTOCAST(dev, HL_AUTOCAST_DEFAULT, true) {
    h = hl_tmp(hl_mm(a, b));
    example_expect(dev == HL_DEVICE_CPU ? "default (cpu): h = mm(a_f32, b_f32)" : "default (cuda): h = mm(a_f32, b_f32)",
                   h, def);
  }
  expect_close("h", h, hl_tmp(hl_mm(a, b)), def == HL_BF16 ? 1e-2 : 1e-3);
  return example_finish();
}
