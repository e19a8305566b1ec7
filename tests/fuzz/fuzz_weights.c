/* fuzz_weights.c — weight files (--init-weights; the format of --save-init
 * and --dump-grads): hl_params_load into a small MLP with fp32 weights and
 * one with fp16 weights (the load converts to each parameter's dtype). */
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_input_file(data, size);
  (void)hl_params_load(&fuzz_mlp(HL_WEIGHTS_FP32)->params, path);
  (void)hl_params_load(&fuzz_mlp(HL_WEIGHTS_FP16)->params, path);
  return 0;
}
