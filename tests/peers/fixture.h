/* fixture.h — the frozen parity fixture (tests/peers/fixture/, written by
 * scripts/parity-fixture.sh; docs/peers.md, "The frozen parity fixture"):
 * the PyTorch peer's record of a few steps of a small GPT in each mode, and
 * the comparison of a run's record with it under tests/peers/bounds.h.
 *
 *   init.bin, batches.bin   the weights and batches both sides start from
 *   MODE.bin                gpt_peer --record: "loss", "grad_norm", "scale"
 *                           per step, then "step<s>/<parameter>" gradients
 *   source.txt              "key: value" lines: the PyTorch version, date and
 *                           commands, "steps", "modes", "halflab-train
 *                           options" and "peer options" */
#ifndef PEERS_FIXTURE_H
#define PEERS_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "tests/peers/bounds.h"
#include "tests/peers/weights.h"

#define RECORD_MAX_STEPS 8

/* A run's steps: what gpt_peer --record writes, or what halflab-train's
 * steps CSV and --dump-grads files give. */
typedef struct {
  int steps;
  double loss[RECORD_MAX_STEPS], grad_norm[RECORD_MAX_STEPS], scale[RECORD_MAX_STEPS];
  wfile *gradients[RECORD_MAX_STEPS]; /* step s + 1's, named as the parameters */
} run_record;

/* $PARITY_FIXTURE/name in one of hl_path's buffers (fails the test when
 * PARITY_FIXTURE, set by tests/peers/meson.build, is not). */
char *fixture_file(const char *name);
/* The value of source.txt's "key: value" line into out; fails the test when
 * there is none. */
void fixture_value(const char *key, char *out, size_t len);
/* Reads a --record file; false with the reason in why (also a loss that is
 * not one value per step, or gradients of missing steps). */
bool record_read(const char *path, run_record *r, char *why, size_t len);
void record_free(run_record *r);
/* Compares got with want step by step under the bounds (the scale must be
 * identical, losses and gradients within the bounds), printing every
 * figure; true when all are within. */
bool record_within(const char *label, const run_record *got, const run_record *want, const parity_bounds *b);

#endif
