/* activations.c — --dump-activations: the input of each linear layer in the
 * first step's forward (the first micro-batch, rank 0), kept through the
 * GPT's activation tap (core/models/nn.h) and written in the weight-file
 * format, so that the quantization probes (halflab-bench quantize-error)
 * read activations the way they read weights and gradients. */
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/models/nn.h"
#include "formats/fatal.h"
#include "train/train.h"

static void keep(void *ctx, const char *name, hl_tensor *x) {
  train_activations *a = ctx;
  if (a->n == a->cap) {
    const int cap = a->cap ? 2 * a->cap : 16;
    hl_param *items = realloc(a->items, sizeof *items * (size_t)cap);
    if (!items) hl_fatal("--dump-activations: out of host memory");
    a->items = items, a->cap = cap;
  }
  char *copy = strdup(name);
  if (!copy) hl_fatal("--dump-activations: out of host memory");
  a->items[a->n++] = (hl_param){.name = copy, .tensor = hl_retain(x), .role = HL_ROLE_WEIGHT, .block = -1};
}

void train_activations_record(train_activations *a, hl_gpt *gpt) {
  gpt->tap = keep;
  gpt->tap_ctx = a;
}

void train_activations_stop(hl_gpt *gpt) {
  gpt->tap = NULL;
  gpt->tap_ctx = NULL;
}

void train_activations_write(train_activations *a, const char *path) {
  hl_param_list l = {.items = a->items, .n = a->n, .cap = a->cap};
  if (!hl_params_save(&l, path)) hl_fatal("--dump-activations: %s", hl_error());
  for (int i = 0; i < a->n; i++) {
    hl_release(a->items[i].tensor);
    free(a->items[i].name);
  }
  free(a->items);
  *a = (train_activations){0};
}
