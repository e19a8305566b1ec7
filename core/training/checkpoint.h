/* checkpoint.h — saving and resuming a training run: the model's
 * parameters (by name), the optimizers' state, the scaler's state, the step
 * counter and the position of the random stream, in one file.
 *
 *   hl_train_state st = {.params = params, .n_params = n, .optims = &opt, .n_optims = 1,
 *                        .scaler = scaler, .step = step, .rng_seed = seed, .rng_offset = step};
 *   if (!hl_checkpoint_save("run.ckpt", &st)) hl_fatal("%s", hl_error());
 *   ...
 *   if (!hl_checkpoint_load("run.ckpt", &st)) hl_fatal("%s", hl_error());   // st.step etc. restored
 *
 * Resuming continues bit-identically: every tensor is stored as its exact
 * bits (its own dtype), the scale and tracker exactly, the optimizers'
 * per-parameter step counts and hyperparameters.
 *
 * The file: a header (magic "HLCKPT", format version, byte order, payload
 * size, record count), named records, a CRC-32 of everything before it and
 * an end marker. Saving writes PATH.tmp, flushes it to disk and renames it
 * over PATH, so a crash leaves the old checkpoint or the new one, never a
 * half file. Loading reads and checks the whole file (size, version,
 * checksum, every record), then checks it against the live model,
 * optimizers and scaler (names, shapes, dtypes, state layout), and only
 * then changes anything: a truncated, corrupted or mismatched file is
 * refused with a message and leaves everything as it was.
 */
#ifndef HL_CHECKPOINT_H
#define HL_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/training/optim.h"
#include "core/training/scaler.h"
#include "core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HL_CHECKPOINT_VERSION 1

typedef struct {
  hl_tensor *const *params; /* the model: named, contiguous, unique names */
  int n_params;
  hl_optim *const *optims;
  int n_optims;
  hl_scaler *scaler; /* may be NULL */
  int64_t step;      /* training steps done */
  uint64_t rng_seed, rng_offset;
} hl_train_state;

bool hl_checkpoint_save(const char *path, const hl_train_state *st);
/* Restores params, optims and scaler in place and sets st->step,
 * st->rng_seed and st->rng_offset. */
bool hl_checkpoint_load(const char *path, hl_train_state *st);
/* Reads and checks the file's integrity only (nothing is applied). */
bool hl_checkpoint_verify(const char *path);

#ifdef __cplusplus
}
#endif

#endif
