/* error.c — the per-thread error message of the AMP core. */
#include "core/base/error.h"

#include "formats/fatal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static _Thread_local char message_[1024];

const char *hl_error(void) { return message_; }
bool hl_has_error(void) { return message_[0] != '\0'; }
void hl_error_clear(void) { message_[0] = '\0'; }

static void set_message(const char *fmt, va_list ap) {
  /* the arguments may point into the old message (a wrapped error): format aside first */
  char buf[sizeof message_];
  vsnprintf(buf, sizeof buf, fmt, ap);
  snprintf(message_, sizeof message_, "%s", buf);
}

void *hl_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_message(fmt, ap);
  va_end(ap);
  return NULL;
}

bool hl_fail_bool(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_message(fmt, ap);
  va_end(ap);
  return false;
}

void hl_check_(int ok, const char *what, const char *file, int line) {
  if (ok) return;
  hl_fatal_at(file, line, "%s failed: %s", what, message_[0] ? message_ : "(no message recorded)");
}
