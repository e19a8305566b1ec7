/* autocast_nested.c — the "局部禁用autocast" example: an
 * autocast(enabled=False) region inside an enabled one runs ops in their
 * inputs' types, so a result of the outer region is cast explicitly before
 * use; re-entering an enabled region gives fp16 again without any cast.
 *
 *   with autocast():
 *       e_float16 = torch.mm(a_float32, b_float32)
 *       with autocast(enabled=False):
 *           f_float32 = torch.mm(c_float32, e_float16.float())
 *       g_float16 = torch.mm(d_float32, f_float32)
 *
 * Checked: the dtypes, the refusal of the uncast mix in the disabled
 * region, and that f (computed in fp32 from e) matches an fp32 product. */
#include <math.h>
#include <stdio.h>

#include "core/engine/autocast.h"
#include "core/base/error.h"
#include "core/engine/ops.h"
#include "examples/example.h"

int main(int argc, char **argv) {
  example_opts o = example_init("autocast-nested",
                                "The nested example: autocast disabled inside an enabled region, then enabled "
                                "again.",
                                argc, argv);
  const hl_device_kind dev = o.device;
  hl_tensor *m[4];
  for (int i = 0; i < 4; i++) HL_CHECK(m[i] = hl_tmp(hl_rand(HL_SHAPE(8, 8), 0, 1, o.seed, (uint64_t)i, HL_F32, dev)));
  hl_tensor *a = m[0], *b = m[1], *c = m[2], *d = m[3];

  hl_tensor *e = NULL, *f = NULL;
  HL_AUTOCAST(dev, HL_F16, true) {
    e = hl_tmp(hl_mm(a, b));
    example_expect("enabled:       e = mm(a_f32, b_f32)", e, HL_F16);
    HL_AUTOCAST(dev, HL_F16, false) {
      hl_tensor *mixed = hl_mm(c, e);
      if (mixed) {
        example_fail("disabled: mm(c_f32, e_f16) was accepted");
        hl_release(mixed);
      } else {
        printf("%-52s refused: %s\n", "disabled:      mm(c_f32, e_f16)", hl_error());
      }
      f = hl_tmp(hl_mm(c, hl_tmp(hl_to_f32(e))));
      example_expect("disabled:      f = mm(c_f32, to_f32(e_f16))", f, HL_F32);
    }
    /* back in the enabled region: fp16 again, no manual cast needed */
    hl_tensor *g = hl_tmp(hl_mm(d, f));
    example_expect("enabled again: g = mm(d_f32, f_f32)", g, HL_F16);
  }
  /* f was computed in fp32: bit for bit the fp32 product outside any region */
  hl_tensor *ref = hl_tmp(hl_mm(c, hl_tmp(hl_to_f32(e))));
  float x[64], y[64];
  if (!f || !ref || !hl_read_f32(f, x) || !hl_read_f32(ref, y)) {
    example_fail("%s", hl_error());
  } else {
    for (int i = 0; i < 64; i++)
      if (x[i] != y[i]) {
        example_fail("f differs from the fp32 product at %d: %g vs %g", i, x[i], y[i]);
        break;
      }
  }
  return example_finish();
}
