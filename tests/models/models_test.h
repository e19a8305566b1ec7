/* models_test.h — what the tests of core/models/nn.h share: a straightforward
 * reference GPT and MLP in double precision (plain loops, no core ops),
 * token batches, and reading parameters back. */
#ifndef HL_MODELS_TEST_H
#define HL_MODELS_TEST_H

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "core/base/error.h"
#include "core/base/mem.h"
#include "core/models/nn.h"
#include "core/engine/ops.h"
#include "tests/support/hltest.h"


/* A parameter's values as doubles (int8: dequantised), malloc'd. */
double *param_values(const hl_param *p);

/* Tokens [B, T] i32 with values in [0, vocab) from a fixed pattern. */
hl_tensor *tokens(int64_t B, int64_t T, int vocab, uint32_t salt);

/* The GPT's parameters as doubles, in the order of m->params; the head
 * may be a separate table (untied) for checking the tied gradient. */
typedef struct {
  hl_gpt_config cfg;
  int n;          /* parameters */
  double **w;     /* w[i]: values of parameter i */
  int64_t *numel; /* per parameter */
  double *head;   /* NULL: tied to wte (w[0]) */
} ref_gpt;

ref_gpt *ref_gpt_from(const hl_gpt *m);
void ref_gpt_free(ref_gpt *r);
/* Mean next-token cross-entropy of tokens idx [B*T] against targets [B*T];
 * logits_out [B*T*V] if not NULL. */
double ref_gpt_loss(const ref_gpt *r, const int32_t *idx, const int32_t *targets, int B, int T, double *logits_out);

#endif
