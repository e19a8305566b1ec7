/* fuzz_checkpoint.c — checkpoints (--resume, examples/amp-checkpoint):
 * hl_checkpoint_open reads and checks the file whole, then what
 * halflab-train reads from it (the step, its run definition and summary
 * totals, resume.c; its histogram rows, output.c) and hl_checkpoint_apply
 * into a small training state (fuzz_common.h), which runs every check
 * against the live model. */
#include "tests/fuzz/fuzz_common.h"
#include "cli/csv.h"
#include "train/train.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hl_train_state *st = fuzz_train_state();
  hl_checkpoint *c = hl_checkpoint_open(fuzz_input_file(data, size));
  if (!c) return 0;
  const int64_t steps = hl_checkpoint_step(c);
  size_t len = 0;
  const char *text = hl_checkpoint_get_field(c, RESUME_FIELD_DEFINITION, &len);
  if (text) {
    run_definition d;
    if (run_definition_parse(text, len, &d)) (void)run_definition_get(&d, "steps");
    run_definition_free(&d);
  }
  if ((text = hl_checkpoint_get_field(c, RESUME_FIELD_TOTALS, &len))) {
    run_totals t;
    if (run_totals_parse(text, len, steps > 0 && steps < 4096 ? steps : 16, &t)) free(t.step_time_ms);
  }
  if ((text = hl_checkpoint_get_field(c, RESUME_FIELD_HIST, &len))) {
    hl_csv_rows rows = {0};
    (void)output_hist_rows_parse("fp32", text, len, &rows);
    hl_csv_rows_free(&rows);
  }
  (void)hl_checkpoint_apply(c, st);
  hl_checkpoint_close(c);
  return 0;
}
