/* checkpoint.h — saving and resuming a training run: the model's
 * parameters (by name), the optimizers' state, the scaler's state, the step
 * counter, the position of the random stream and the caller's own named
 * fields (a program's run definition, its summary's running totals), in one
 * file.
 *
 *   hl_train_state st = {.params = params, .n_params = n, .optims = &opt, .n_optims = 1,
 *                        .scaler = scaler, .step = step, .rng_seed = seed, .rng_offset = step};
 *   if (!hl_checkpoint_save("run.ckpt", &st)) hl_fatal("%s", hl_error());
 *   ...
 *   if (!hl_checkpoint_load("run.ckpt", &st)) hl_fatal("%s", hl_error());   // st.step etc. restored
 *
 * A program that must check the file against its command line before it
 * builds anything opens it first, reads its fields, and applies it later:
 *
 *   hl_checkpoint *c = hl_checkpoint_open("run.ckpt");          // read and checked whole
 *   size_t n; const char *def = hl_checkpoint_get_field(c, "run/definition", &n);
 *   ...                                                         // compare, build the model
 *   hl_checkpoint_apply(c, &st); hl_checkpoint_close(c);
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

/* 2: the caller's fields (hl_checkpoint_field). A file of another version
 * is refused by its number. */
#define HL_CHECKPOINT_VERSION 2

/* A caller's named bytes, saved beside the state and given back as they
 * were (the library does not read them). */
typedef struct {
  const char *name; /* unique, non-empty */
  const void *data;
  size_t len;
} hl_checkpoint_field;

typedef struct {
  hl_tensor *const *params; /* the model: named, contiguous, unique names */
  int n_params;
  hl_optim *const *optims;
  int n_optims;
  hl_scaler *scaler; /* may be NULL */
  int64_t step;      /* training steps done */
  uint64_t rng_seed, rng_offset;
  const hl_checkpoint_field *fields; /* saved by hl_checkpoint_save; may be NULL */
  int n_fields;
} hl_train_state;

bool hl_checkpoint_save(const char *path, const hl_train_state *st);
/* Restores params, optims and scaler in place and sets st->step,
 * st->rng_seed and st->rng_offset (open + apply + close). */
bool hl_checkpoint_load(const char *path, hl_train_state *st);
/* Reads and checks the file's integrity only (nothing is applied). */
bool hl_checkpoint_verify(const char *path);

/* A checkpoint read into memory and checked whole (frame, version,
 * checksum, every record); NULL with hl_error() when it is not sound. */
typedef struct hl_checkpoint hl_checkpoint;
hl_checkpoint *hl_checkpoint_open(const char *path);
void hl_checkpoint_close(hl_checkpoint *c);
/* The caller's field `name` as saved (valid until close; *len its size);
 * NULL when the file has none. */
const void *hl_checkpoint_get_field(const hl_checkpoint *c, const char *name, size_t *len);
/* The step counter the file holds (-1 when it has none). */
int64_t hl_checkpoint_step(const hl_checkpoint *c);
/* hl_checkpoint_load's checks and restore, from an opened file: nothing
 * changes unless everything matches. */
bool hl_checkpoint_apply(const hl_checkpoint *c, hl_train_state *st);

#ifdef __cplusplus
}
#endif

#endif
