/* fuzz_summary.c — train_summary.csv, read back when a run stages its row
 * (train/summary_table.c: the other runs' rows and the shared metadata
 * lines are kept): summary_table_stage over the input as the folder's
 * earlier table. */
#include "tests/fuzz/fuzz_common.h"
#include "train/train.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char row[4096];
  if (!row[0]) /* this run's row: a cell for every column */
    for (int i = 0; i < train_summary_schema.n_columns; i++) strcat(row, i ? ",1" : "1");
  const char *dir = fuzz_scratch_dir();
  char path[4200], staged[4200], err[4096];
  fuzz_write_file(dir, "train_summary.csv", data, size, path, sizeof path);
  (void)summary_table_stage(dir, "tiny", "fp32", row, err, sizeof err);
  snprintf(staged, sizeof staged, "%s/train_summary.csv.inprogress", dir);
  unlink(staged);
  unlink(path);
  return 0;
}
