/* fatal.c — see fatal.h. */
#include "formats/fatal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *program_ = "halflab";

void hl_fatal_set_program(const char *name) {
  if (name && *name) program_ = name;
}

const char *hl_fatal_program(void) { return program_; }

void hl_fatal_at(const char *file, int line, const char *fmt, ...) {
  /* one fprintf, so that the line is written whole when threads fail together */
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "%s: %s (%s:%d)\n", program_, msg, file, line);
  exit(HL_EXIT_FAILURE);
}

void *hl_check_alloc_at(void *p, size_t bytes, const char *what, const char *file, int line) {
  if (p) return p;
  const double mib = (double)bytes / 1048576.0;
  if (mib >= 1.0) hl_fatal_at(file, line, "out of memory: %s (%.1f MiB): %s", what, mib, strerror(ENOMEM));
  hl_fatal_at(file, line, "out of memory: %s (%zu bytes): %s", what, bytes, strerror(ENOMEM));
}
