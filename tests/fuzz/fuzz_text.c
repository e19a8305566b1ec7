/* fuzz_text.c — --text FILE: data_new reads it (train/data.c), then the
 * first training batch and every held-out window are cut from it, as a run
 * and --export-batches do. */
#include "tests/fuzz/fuzz_common.h"
#include "train/train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  train_opts o = {.model = MODEL_GPT, .task = TASK_TEXT, .seed = 1, .batch = 2, .seq = 8, .accum = 1,
                  .eval_samples = 64, .eval_frac = 0.25};
  o.text_path = fuzz_input_file(data, size);
  char err[512];
  train_data *d = data_new(&o, err, sizeof err);
  if (!d) return 0;
  token_batch b = token_batch_new(o.batch, o.seq);
  data_train_tokens(d, 1, 0, &b);
  token_batch_free(&b);
  token_batch e = token_batch_new(1, o.seq);
  for (int64_t r = 0; r < data_eval_rows(d); r++) data_eval_tokens(d, r, &e);
  token_batch_free(&e);
  data_free(d);
  return 0;
}
