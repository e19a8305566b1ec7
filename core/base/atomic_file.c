/* atomic_file.c — see atomic_file.h. */
#include "core/base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

bool hl_atomic_open(hl_atomic_file *a, const char *path) {
  snprintf(a->path, sizeof a->path, "%s", path);
  snprintf(a->tmp, sizeof a->tmp, "%s.tmp", a->path);
  a->call = NULL;
  a->f = fopen(a->tmp, "wb");
  if (!a->f) a->call = "open";
  return a->f != NULL;
}

/* the folder holding path, synced so that a rename in it is durable */
static void sync_folder(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  const char *d = slash ? (slash == dir ? "/" : (*slash = '\0', dir)) : ".";
  int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

bool hl_atomic_commit(hl_atomic_file *a) {
  int e = 0;
  if (ferror(a->f)) a->call = "write", e = EIO;
  else if (fflush(a->f) != 0) a->call = "write", e = errno;
  else if (fsync(fileno(a->f)) != 0) a->call = "fsync", e = errno;
  if (fclose(a->f) != 0 && !a->call) a->call = "close", e = errno;
  a->f = NULL;
  if (!a->call && rename(a->tmp, a->path) != 0) a->call = "rename", e = errno;
  if (a->call) {
    unlink(a->tmp);
    errno = e;
    return false;
  }
  sync_folder(a->path);
  return true;
}

void hl_atomic_discard(hl_atomic_file *a) {
  if (a->f) fclose(a->f);
  a->f = NULL;
  unlink(a->tmp);
}
