/* op_trace.c — the --trace-ops sink. */
#include "core/engine/op_trace.h"

#include <stdarg.h>
#include <stdatomic.h>

static _Atomic(FILE *) sink_;

void hl_op_trace_to(FILE *out) { atomic_store(&sink_, out); }
bool hl_op_tracing(void) { return atomic_load_explicit(&sink_, memory_order_relaxed) != NULL; }

void hl_op_trace_line(const char *fmt, ...) {
  FILE *out = atomic_load(&sink_);
  if (!out) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(out, "trace: %s\n", line); /* one call: stdio keeps the line whole */
}
