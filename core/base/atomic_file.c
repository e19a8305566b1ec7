/* atomic_file.c — see atomic_file.h. */
#include "core/base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool hl_write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len > 0) {
    const ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) { /* no progress and no error: the disk is full in all but name */
      errno = ENOSPC;
      return false;
    }
    p += n;
    len -= (size_t)n;
  }
  return true;
}

static void folder_of(const char *path, char *dir, size_t len) {
  snprintf(dir, len, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, len, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
}

bool hl_sync_folder_of(const char *path) {
  char dir[4096];
  folder_of(path, dir, sizeof dir);
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = fsync(fd) == 0;
  const int e = errno;
  close(fd);
  errno = e;
  return ok;
}

/* The stream's own write and close: the first error is kept for the report
 * (glibc's stdio keeps only a flag). */
static ssize_t stream_write(void *cookie, const char *buf, size_t n) {
  hl_atomic_file *a = cookie;
  if (a->first_errno) return 0; /* failed already: the file is abandoned */
  if (!hl_write_all(a->fd, buf, n)) {
    a->first_errno = errno;
    return 0; /* fopencookie: 0 marks an error */
  }
  return (ssize_t)n;
}

static int stream_close(void *cookie) {
  hl_atomic_file *a = cookie;
  const int r = close(a->fd);
  if (r != 0 && !a->first_errno) a->first_errno = errno;
  a->fd = -1;
  return r;
}

/* The PATH.tmp files being written, so that a process that ends before
 * their commit (a fatal error's exit, a signal) removes them: a copy of each
 * name, a slot per file, claimed and freed atomically. */
enum { UNFINISHED_MAX = 32 };
static char unfinished_[UNFINISHED_MAX][4104];
static atomic_bool unfinished_used_[UNFINISHED_MAX];
static pid_t unfinished_owner_; /* a forked child's copies are its parent's files */

void hl_atomic_remove_unfinished(void) {
  if (getpid() != unfinished_owner_) return;
  for (int i = 0; i < UNFINISHED_MAX; i++)
    if (atomic_exchange(&unfinished_used_[i], false)) unlink(unfinished_[i]);
}

static int remember(const char *tmp) {
  static bool at_exit;
  if (unfinished_owner_ != getpid()) { /* this process's first, or a forked child's */
    for (int i = 0; i < UNFINISHED_MAX; i++) atomic_store(&unfinished_used_[i], false);
    unfinished_owner_ = getpid();
  }
  if (!at_exit) at_exit = atexit(hl_atomic_remove_unfinished) == 0;
  for (int i = 0; i < UNFINISHED_MAX; i++)
    if (!atomic_load(&unfinished_used_[i])) {
      snprintf(unfinished_[i], sizeof unfinished_[i], "%s", tmp);
      atomic_store(&unfinished_used_[i], true);
      return i;
    }
  return -1; /* more at once than anyone writes: that one is not removed at exit */
}

static void forget(hl_atomic_file *a) {
  const int i = a->unfinished_slot;
  if (i >= 0 && i < UNFINISHED_MAX && !strcmp(unfinished_[i], a->tmp)) atomic_store(&unfinished_used_[i], false);
  a->unfinished_slot = -1;
}

bool hl_atomic_open(hl_atomic_file *a, const char *path) {
  snprintf(a->path, sizeof a->path, "%s", path);
  snprintf(a->tmp, sizeof a->tmp, "%s.tmp", a->path);
  folder_of(a->path, a->folder, sizeof a->folder);
  a->call = NULL;
  a->failed_file = NULL;
  a->first_errno = 0;
  a->f = NULL;
  a->unfinished_slot = remember(a->tmp); /* before the file exists: no moment when it is there unknown */
  a->fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (a->fd < 0) {
    const int e = errno;
    forget(a);
    a->call = "open", a->failed_file = a->tmp;
    errno = e;
    return false;
  }
  a->f = fopencookie(a, "wb", (cookie_io_functions_t){.write = stream_write, .close = stream_close});
  if (!a->f) {
    const int e = errno;
    close(a->fd);
    unlink(a->tmp);
    forget(a);
    a->call = "open", a->failed_file = a->tmp;
    errno = e;
    return false;
  }
  return true;
}

bool hl_atomic_commit(hl_atomic_file *a) {
  int e = 0;
  if (fflush(a->f) != 0 || ferror(a->f)) a->call = "write", e = a->first_errno ? a->first_errno : EIO;
  else if (fsync(a->fd) != 0) a->call = "fsync", e = errno;
  const int close_failed = fclose(a->f) != 0; /* closes the file too */
  a->f = NULL;
  if (close_failed && !a->call) a->call = "close", e = a->first_errno ? a->first_errno : EIO;
  if (a->call) a->failed_file = a->tmp;
  else if (rename(a->tmp, a->path) != 0) a->call = "rename", a->failed_file = a->path, e = errno;
  if (a->call) {
    unlink(a->tmp);
    forget(a);
    errno = e;
    return false;
  }
  forget(a); /* renamed: PATH.tmp is no more */
  if (!hl_sync_folder_of(a->path)) {
    a->call = "fsync", a->failed_file = a->folder;
    return false;
  }
  return true;
}

void hl_atomic_discard(hl_atomic_file *a) {
  if (a->f) fclose(a->f);
  a->f = NULL;
  unlink(a->tmp);
  forget(a);
}

const char *hl_atomic_describe(const hl_atomic_file *a, int err, char *buf, size_t len) {
  if (a->call && !strcmp(a->call, "rename"))
    snprintf(buf, len, "rename of %s to %s failed: %s", a->tmp, a->path, strerror(err));
  else
    snprintf(buf, len, "%s of %s failed: %s", a->call ? a->call : "writing", a->failed_file ? a->failed_file : a->tmp,
             strerror(err));
  return buf;
}
