/* example.h — what the example programs share: their command line
 * (--help, --version, --device, --seed, --trace-ops) and the choice of
 * device, and a checked-expectation helper so that each example verifies
 * its own result and exits non-zero when it is wrong. */
#ifndef HL_EXAMPLE_H
#define HL_EXAMPLE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/tensor.h"

typedef struct {
  hl_device_kind device;
  uint64_t seed;
  bool trace;
} example_opts;

/* Parses the command line (exit 2 on bad input, 0 after --help/--version).
 * --device auto takes the GPU only when the core has CUDA kernels there,
 * else the CPU with a notice; --device cuda without them exits 1 saying so. */
example_opts example_init(const char *prog, const char *what, int argc, char **argv);
/* After the command line: the device for --device REQUEST as above, the
 * --trace-ops output, and the pool of the example's temporaries (released
 * by example_finish). example_init calls it; recipe_init too. */
hl_device_kind example_start(const char *prog, const char *request, bool trace);

/* Prints "name: dtype device" and records a failure when the dtype is not
 * the expected one (or t is NULL, with the core's message). */
void example_expect(const char *line, const hl_tensor *t, hl_dtype want);
/* Records a failure with a message. */
void example_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Releases the example's temporaries and returns the exit status: 0, or 1
 * with a count of the failed checks on stderr. */
int example_finish(void);

#endif
