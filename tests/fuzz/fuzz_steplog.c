/* fuzz_steplog.c — a run's per-step log, read back when --resume continues
 * it (train/output.c): output_copy_resumed_log keeps its metadata, checks its
 * header and copies its rows up to the resumed step. */
#include "tests/fuzz/fuzz_common.h"
#include "train/train.h"

#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char dst[4200], err[9000];
  snprintf(dst, sizeof dst, "%s/train_tiny_fp32_steps.csv", fuzz_scratch_dir());
  (void)output_copy_resumed_log(fuzz_input_file(data, size), dst, 3, err, sizeof err);
  unlink(dst);
  return 0;
}
