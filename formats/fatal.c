/* fatal.c — see fatal.h. */
#include "formats/fatal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *program_ = "halflab";
static atomic_int fatals_; /* hl_fatal calls under way or done */
static _Thread_local bool this_thread_fatal_;

/* The exit handlers get this long to finish the run's files after a fatal
 * line; then the process ends anyway (a handler that waits for something
 * the failure left half done would otherwise hang it). */
enum { EXIT_HANDLERS_SECONDS = 30 };

static char late_line_[256];
static void on_exit_handlers_late(int sig) {
  (void)sig;
  hl_write_line(STDERR_FILENO, late_line_, strlen(late_line_));
  _exit(HL_EXIT_FAILURE);
}

void hl_fatal_set_program(const char *name) {
  if (name && *name) program_ = name;
}

const char *hl_fatal_program(void) { return program_; }

int hl_fatal_in_progress(void) { return atomic_load(&fatals_) > 0; }

void hl_write_line(int fd, const char *line, size_t len) {
  while (len > 0) {
    const ssize_t n = write(fd, line, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return; /* nowhere left to say it */
    line += n;
    len -= (size_t)n;
  }
}

void hl_write_made_line(int fd, char *line, size_t size, int made) {
  if (made <= 0 || size < 2) return;
  size_t n = (size_t)made;
  if (n >= size) { /* cut, but still one line */
    n = size - 1;
    line[n - 1] = '\n';
  }
  hl_write_line(fd, line, n);
}

void hl_fatal_at(const char *file, int line, const char *fmt, ...) {
  const int saved_errno = errno;
  const bool first = atomic_fetch_add(&fatals_, 1) == 0;
  char msg[1024], text[1400];
  va_list ap;
  va_start(ap, fmt);
  errno = saved_errno; /* for a %m */
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const int made = snprintf(text, sizeof text, "%s: %s (%s:%d)\n", program_, msg, file, line);
  if (first) fflush(stdout); /* what the program printed comes before the error */
  hl_write_made_line(STDERR_FILENO, text, sizeof text, made);
  if (!first && this_thread_fatal_) _exit(HL_EXIT_FAILURE); /* a fatal inside an exit handler: none runs twice */
  if (!first) { /* another thread's fatal is ending the process: let its exit handlers finish, within bounds */
    for (int i = 0; i < EXIT_HANDLERS_SECONDS * 10; i++) nanosleep(&(struct timespec){0, 100 * 1000000}, NULL);
    _exit(HL_EXIT_FAILURE);
  }
  this_thread_fatal_ = true;
  snprintf(late_line_, sizeof late_line_, "%s: the clean-up after the error above did not finish in %d s; ending now\n",
           program_, EXIT_HANDLERS_SECONDS);
  struct sigaction late;
  memset(&late, 0, sizeof late);
  late.sa_handler = on_exit_handlers_late;
  sigemptyset(&late.sa_mask);
  sigaction(SIGALRM, &late, NULL);
  alarm(EXIT_HANDLERS_SECONDS);
  exit(HL_EXIT_FAILURE);
}

void *hl_check_alloc_at(void *p, size_t bytes, const char *what, const char *file, int line) {
  if (p) return p;
  const double mib = (double)bytes / 1048576.0;
  if (mib >= 1.0) hl_fatal_at(file, line, "out of memory: %s (%.1f MiB): %s", what, mib, strerror(ENOMEM));
  hl_fatal_at(file, line, "out of memory: %s (%zu bytes): %s", what, bytes, strerror(ENOMEM));
}
