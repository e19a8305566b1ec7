/* fuzz_common.c — see fuzz_common.h. */
#include "tests/fuzz/fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/engine/autograd.h"
#include "core/engine/ops.h"

static void die(const char *what) {
  fprintf(stderr, "fuzz: %s: %s\n", what, hl_error());
  abort();
}

const char *fuzz_input_file(const uint8_t *data, size_t size) {
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd < 0) die("memfd_create");
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) die("writing the input");
  return path;
}

static char scratch[4096];

static void remove_scratch(void) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
  if (system(cmd) != 0) fprintf(stderr, "fuzz: could not remove %s\n", scratch);
}

const char *fuzz_scratch_dir(void) {
  if (!scratch[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/halflab-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch)) die("mkdtemp");
    atexit(remove_scratch);
  }
  return scratch;
}

const char *fuzz_write_file(const char *dir, const char *name, const uint8_t *data, size_t size, char *buf,
                            size_t len) {
  snprintf(buf, len, "%s/%s", dir, name);
  FILE *f = fopen(buf, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) die(buf);
  return buf;
}

hl_train_state *fuzz_train_state(void) {
  static hl_train_state st;
  static hl_tensor *params[3];
  static hl_optim *optims[2];
  if (st.params) return &st;
  const hl_device_kind cpu = HL_DEVICE_CPU;
  params[0] = hl_randn(HL_SHAPE(4, 3), 0, 0.5, 1, 1, HL_F32, cpu);
  params[1] = hl_randn(HL_SHAPE(4), 0, 0.1, 1, 2, HL_F32, cpu);
  params[2] = hl_randn(HL_SHAPE(2, 4), 0, 0.5, 1, 3, HL_F16, cpu);
  const char *names[3] = {"fc1.weight", "fc1.bias", "fc2.weight"};
  for (int i = 0; i < 3; i++) {
    if (!params[i]) die("hl_randn");
    hl_tensor_set_name(params[i], names[i]);
    if (!hl_set_requires_grad(params[i], true)) die("hl_set_requires_grad");
  }
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = 0.05, so.momentum = 0.9;
  optims[0] = hl_sgd_new(params, 2, so);
  hl_adamw_opts ao = hl_adamw_defaults();
  ao.master_weights = true;
  optims[1] = hl_adamw_new(&params[2], 1, ao);
  hl_scaler *scaler = hl_scaler_new(hl_scaler_defaults());
  if (!optims[0] || !optims[1] || !scaler) die("the optimizers");
  st = (hl_train_state){.params = params, .n_params = 3, .optims = optims, .n_optims = 2, .scaler = scaler,
                        .rng_seed = 7};
  return &st;
}

hl_mlp *fuzz_mlp(hl_weight_policy policy) {
  static hl_mlp *models[HL_WEIGHT_POLICIES];
  if (!models[policy]) {
    const hl_mlp_config c = {.n_in = 3, .n_out = 2, .n_hidden = 1, .hidden = {4}, .act = HL_ACT_RELU};
    if (!(models[policy] = hl_mlp_new(&c, policy, HL_DEVICE_CPU, 1))) die("hl_mlp_new");
  }
  return models[policy];
}
