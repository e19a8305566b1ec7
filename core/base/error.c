/* error.c — the per-thread error message of the AMP core. */
#include "core/base/error.h"

#include "formats/fatal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char message_[1024];
static _Thread_local bool system_cause_;

const char *hl_error(void) { return message_; }
bool hl_has_error(void) { return message_[0] != '\0'; }
void hl_error_clear(void) { message_[0] = '\0', system_cause_ = false; }
bool hl_error_is_system(void) { return message_[0] && system_cause_; }

static void set_message(const char *fmt, va_list ap) {
  /* the arguments may point into the old message (a wrapped error): format aside first */
  char buf[sizeof message_];
  vsnprintf(buf, sizeof buf, fmt, ap);
  /* a message that wraps the previous one keeps its cause */
  if (!message_[0] || !strstr(buf, message_)) system_cause_ = false;
  snprintf(message_, sizeof message_, "%s", buf);
}

/* errnos that describe the path the user gave, not the system */
static bool input_errno(int err) {
  switch (err) {
    case ENOENT: case EACCES: case EPERM: case EISDIR: case ENOTDIR: case ELOOP: case ENAMETOOLONG: case ENXIO:
    case EROFS: case ENODEV:
      return true;
    default:
      return false;
  }
}

bool hl_fail_errno(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_message(fmt, ap);
  va_end(ap);
  system_cause_ = !input_errno(err);
  return false;
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
