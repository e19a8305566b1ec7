/* weights.h — core/models/nn.h's weight files ("HLWTS001", docs/models.md) read
 * independently of the core, for the peer tests: the gradients halflab-train
 * and the PyTorch peer dump are compared tensor by tensor, and a weight file
 * is edited in place (one value changed, CRC-32 rewritten) to show that the
 * comparison can fail. The PyTorch peer's --record file, the frozen parity
 * fixture's format, is a weight file too (tests/peers/fixture.h). */
#ifndef PEERS_WEIGHTS_H
#define PEERS_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  char name[128];
  int ndim;
  int64_t dims[8];
  int64_t numel;
  size_t offset; /* of the first value in the file */
  float *values; /* copies */
} wtensor;

typedef struct {
  unsigned char *bytes; /* the whole file */
  size_t len;
  int n;
  wtensor *t;
} wfile;

/* NULL with a message in why (missing, truncated, bad magic or CRC). */
wfile *wfile_read(const char *path, char *why, size_t len);
void wfile_free(wfile *w);
const wtensor *wfile_find(const wfile *w, const char *name);
/* Adds delta to element i of the named tensor and writes the file again
 * with a correct CRC-32. false when the name or index does not exist. */
bool wfile_perturb(const char *path, const char *name, int64_t i, float delta);

/* The largest |a - b| over the elements and the largest |a|, |b| (the
 * max-norm); shapes must be equal (false otherwise). */
bool wtensor_diff(const wtensor *a, const wtensor *b, double *max_diff, double *max_abs);

/* Every tensor of a against b's tensor of the same name: the worst
 * max|a - b| / max-norm over the tensors (max|a - b| where both are zero),
 * and in worst (len bytes) which tensor and its two figures. INFINITY,
 * said so in worst, when b lacks a tensor of a, has others, or a shape
 * differs; a NaN counts as the largest difference. */
double wfile_worst_diff(const wfile *a, const wfile *b, char *worst, size_t len);

/* ||a - b||_2 / ||b||_2 over all the tensors' elements together (b's
 * tensors found by a's names); INFINITY when a tensor is missing, a size
 * differs or a value is NaN. */
double wfile_relative_l2(const wfile *a, const wfile *b);

/* The tensors of w whose names start with prefix, the prefix taken off the
 * names (copies; bytes NULL): one step's gradients of gpt_peer --record's
 * file ("step2/"). NULL when out of memory. */
wfile *wfile_subset(const wfile *w, const char *prefix);

#endif
