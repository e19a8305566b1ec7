/* std_streams.c — the standard streams guarded at start and stdout checked
 * at exit (std_streams.h). */
#include "cli/std_streams.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/fatal.h"

static bool stdout_was_closed_; /* at start: its writes fail, and are reported as EBADF */
static bool finished_;

static void finish_at_exit(void) {
  if (finished_ || hl_fatal_in_progress()) return; /* a fatal's line is the one line; its status is 1 already */
  if (hl_stdout_finish(0) != 0) _exit(HL_EXIT_FAILURE);
}

int hl_stdout_finish(int status) {
  if (finished_) return status;
  finished_ = true;
  const bool earlier = ferror(stdout) != 0;
  errno = 0;
  const bool flushed = fflush(stdout) == 0;
  int e = errno;
  if (earlier && flushed && write(STDOUT_FILENO, "", 0) < 0) e = errno; /* stdio kept no errno: ask the file (/dev/full says) */
  const bool closed = fclose(stdout) == 0;
  if (!closed && !e) e = errno;
  if (flushed && closed && !earlier) return status;
  if (stdout_was_closed_) e = EBADF;
  char line[512];
  const int n = e ? snprintf(line, sizeof line, "%s: cannot write to stdout: %s\n", hl_fatal_program(), strerror(e))
                  : snprintf(line, sizeof line, "%s: cannot write to stdout: write error\n", hl_fatal_program());
  hl_write_made_line(STDERR_FILENO, line, sizeof line, n);
  return status ? status : HL_EXIT_FAILURE;
}

void hl_std_streams_guard(void) {
  static bool guarded;
  if (guarded) return;
  guarded = true;
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int opened = fd == STDOUT_FILENO ? open("/dev/full", O_WRONLY) : -1;
    if (opened < 0) opened = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) { /* a lower one was closed too: it is taken in its own turn */
      dup2(opened, fd);
      close(opened);
    }
    if (fd == STDOUT_FILENO) stdout_was_closed_ = true;
  }
  atexit(finish_at_exit);
}
