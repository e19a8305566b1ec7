/* recipe.h — what the AMP training recipes (examples/amp_*.c) share:
 * their command line, a small MLP built from the core's ops, a teacher
 * network that makes the regression data (batch i from Philox stream i, so
 * every run and every recipe sees the same data), and host-side
 * comparisons. The self-checks and the exit status come from example.h. */
#ifndef HL_RECIPE_H
#define HL_RECIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/training/fault.h"
#include "core/engine/tensor.h"
#include "examples/example.h"

/* Options beyond --device, --seed, --trace-ops, --help, --version. */
enum {
  RECIPE_STEPS = 1 << 0,      /* --steps N */
  RECIPE_INJECT = 1 << 1,     /* --inject STEPS, --inject-kind inf|-inf|nan */
  RECIPE_CHECKPOINT = 1 << 2, /* --dir DIR, --stop-after K, --resume */
};

typedef struct {
  hl_device_kind device;
  uint64_t seed;
  int steps;                  /* the example's default unless --steps */
  hl_step_set inject;         /* steps (from 1) whose gradients get an inf/NaN */
  hl_fault_kind inject_kind;
  const char *dir;            /* NULL: a scratch folder of the example's own */
  int stop_after;             /* 0: run through */
  bool resume;
} recipe_opts;

/* Parses the command line (exit 2 on bad input, before anything is
 * written; 0 after --help/--version). default_steps and default_inject
 * ("none", "3"...) are the example's defaults. */
recipe_opts recipe_init(const char *prog, const char *what, unsigned extras, int default_steps,
                        const char *default_inject, int argc, char **argv);

/* Releases what the recipe helpers hold, then example_finish(): the exit
 * status (1 when a check failed). */
int recipe_finish(void);

/* x [batch, in] -> relu(x W1^T + b1) W2^T + b2 */
typedef struct {
  hl_tensor *p[4]; /* w1 [hidden, in], b1 [hidden], w2 [out, hidden], b2 [out]: named PREFIX.fc1.weight ... */
} recipe_mlp;

enum { RECIPE_IN = 16, RECIPE_HIDDEN = 64, RECIPE_OUT = 4, RECIPE_BATCH = 32 };

recipe_mlp recipe_mlp_new(const char *prefix, uint64_t seed, uint64_t stream, hl_device_kind device);
void recipe_mlp_free(recipe_mlp *m);
hl_tensor *recipe_mlp_forward(const recipe_mlp *m, hl_tensor *x); /* new reference */
/* dst's weights = src's (exactly) */
void recipe_mlp_copy(recipe_mlp *dst, const recipe_mlp *src);

/* Batch `index` of `rows` rows: x ~ N(0, 1) from (seed, 1000 + index), y =
 * the teacher (an MLP of its own seed) of x, in f32. New references. */
void recipe_batch(uint64_t seed, int64_t index, int rows, hl_device_kind device, hl_tensor **x, hl_tensor **y);

/* All elements of the tensors, concatenated, as f32 (malloc'd; count set). */
float *recipe_values(hl_tensor *const *t, int n, int64_t *count);
/* Any inf/NaN among the tensors' elements (NULL tensors skipped)? */
bool recipe_any_nonfinite(hl_tensor *const *t, int n);
/* |update a - update b| / |update b| (2-norms over all weights) from the
 * common weights w0. A 2-norm, not the largest element: where fp16 rounding
 * flips a ReLU's sign for a few rows, that unit's update differs a lot while
 * the step as a whole agrees. */
double recipe_update_error(const float *w0, const recipe_mlp *a, const recipe_mlp *b);

#endif
