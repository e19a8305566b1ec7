/* fuzz_common.h — what the fuzz targets (tests/fuzz/fuzz_*.c) share: the
 * input as a file the readers open by path, a scratch folder, and the small
 * model and training state whose weight files and checkpoints the targets
 * read (fuzz_start_corpus.c writes the starting corpus from the same ones, so that
 * an input matches what the target reads it into). */
#ifndef HL_FUZZ_COMMON_H
#define HL_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "core/models/nn.h"
#include "core/training/checkpoint.h"

/* The bytes as a file: a memfd, rewritten for each input; the path opens it
 * afresh ("/proc/self/fd/N"), a regular file to stat(). */
const char *fuzz_input_file(const uint8_t *data, size_t size);
/* A folder of this process's own under $TMPDIR (or /tmp), made once. */
const char *fuzz_scratch_dir(void);
/* Writes the bytes to DIR/NAME; the path in buf. Aborts on failure. */
const char *fuzz_write_file(const char *dir, const char *name, const uint8_t *data, size_t size, char *buf, size_t len);

/* A small training state, built once: fc1.weight f32 [4, 3] and fc1.bias
 * f32 [4] under SGD with momentum, fc2.weight fp16 [2, 4] with f32 masters
 * under AdamW, and a loss scaler. */
hl_train_state *fuzz_train_state(void);

/* A small MLP (3 inputs, 4 hidden, 2 classes) under the weight policy,
 * built once per policy. */
hl_mlp *fuzz_mlp(hl_weight_policy policy);

#endif
