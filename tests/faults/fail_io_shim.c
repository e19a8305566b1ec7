/* fail_io_shim.c — an LD_PRELOAD library for the fault-injection suite: it
 * fails the Nth write(2), fsync(2), rename(2) or read(2) on a file under one folder
 * with a chosen errno, or counts those calls (a dry run). Only calls on
 * files under HL_FAIL_UNDER are seen, so a program's terminal output is
 * never touched.
 *
 *   HL_FAIL_UNDER=DIR         the folder whose files are watched (unset: the shim does nothing)
 *   HL_FAIL_CALL=write|fsync|rename|read   the kind of call to fail
 *   HL_FAIL_AT=N              fail the Nth call of that kind (from 1; unset or 0: none)
 *   HL_FAIL_ERRNO=ENOSPC|EIO|EDQUOT|EROFS|<number>   the errno it fails with (default ENOSPC)
 *   HL_FAIL_STICKY=1          every later call of that kind fails too (a disk that stays full)
 *   HL_FAIL_SHORT=1           the first failing write writes half its bytes and returns that
 *                             count (a short write, as a disk filling up gives), the errno
 *                             coming with the next call; use it with HL_FAIL_STICKY=1
 *   HL_FAIL_COUNT_TO=FILE     at exit, write "write N\nfsync N\nrename N\nread N\n" (the calls seen)
 *   HL_FAIL_REPORT_TO=FILE    at the (first) failure, write the path of the file it failed
 *                             (the folder resolved; for rename, the source)
 *
 * A failed write writes nothing and returns -1, unless HL_FAIL_SHORT asks
 * for the short write a filling disk gives first. glibc's stdio calls the kernel without going through write(),
 * so only writers that call write(2) themselves are seen: that is every file
 * halflab writes for itself (core/base/atomic_file.h's stream, cli/csv.h's
 * log), which is the point of the suite. Not installed; built for tests/faults. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CALL_WRITE, CALL_FSYNC, CALL_RENAME, CALL_READ, CALLS };
static const char *const call_names[CALLS] = {"write", "fsync", "rename", "read"};

static struct {
  bool ready, active;
  char under[PATH_MAX];
  size_t under_len;
  int fail_call;  /* -1: none */
  long fail_at;
  bool sticky, short_write;
  int fail_errno;
  const char *count_to, *report_to;
  long seen[CALLS];
  ssize_t (*real_write)(int, const void *, size_t);
  int (*real_fsync)(int);
  int (*real_rename)(const char *, const char *);
  ssize_t (*real_read)(int, void *, size_t);
} shim;

static int errno_named(const char *s) {
  if (!s || !*s) return ENOSPC;
  static const struct { const char *name; int value; } known[] = {
      {"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EDQUOT", EDQUOT}, {"EROFS", EROFS}, {"EFBIG", EFBIG}, {"EPERM", EPERM}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (!strcmp(s, known[i].name)) return known[i].value;
  const int v = atoi(s);
  return v > 0 ? v : ENOSPC;
}

static void write_counts(void) {
  if (!shim.count_to) return;
  const int fd = open(shim.count_to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char text[256];
  const int n = snprintf(text, sizeof text, "write %ld\nfsync %ld\nrename %ld\nread %ld\n",
                         shim.seen[CALL_WRITE], shim.seen[CALL_FSYNC], shim.seen[CALL_RENAME], shim.seen[CALL_READ]);
  if (n > 0) (void)shim.real_write(fd, text, (size_t)n);
  close(fd);
}

static void init(void) {
  if (shim.ready) return;
  shim.ready = true;
  shim.real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  shim.real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  shim.real_rename = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  shim.real_read = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
  const char *under = getenv("HL_FAIL_UNDER");
  if (!under || !*under || !realpath(under, shim.under)) return;
  shim.under_len = strlen(shim.under);
  shim.fail_call = -1;
  const char *call = getenv("HL_FAIL_CALL");
  for (int k = 0; call && k < CALLS; k++)
    if (!strcmp(call, call_names[k])) shim.fail_call = k;
  const char *at = getenv("HL_FAIL_AT");
  shim.fail_at = at ? atol(at) : 0;
  shim.fail_errno = errno_named(getenv("HL_FAIL_ERRNO"));
  const char *sticky = getenv("HL_FAIL_STICKY");
  shim.sticky = sticky && !strcmp(sticky, "1");
  const char *short_write = getenv("HL_FAIL_SHORT");
  shim.short_write = short_write && !strcmp(short_write, "1");
  shim.count_to = getenv("HL_FAIL_COUNT_TO");
  if (shim.count_to && !*shim.count_to) shim.count_to = NULL;
  if (shim.count_to) atexit(write_counts);
  shim.report_to = getenv("HL_FAIL_REPORT_TO");
  if (shim.report_to && !*shim.report_to) shim.report_to = NULL;
  shim.active = true;
}

/* Whether a resolved path is the folder or lies under it. */
static bool under_folder(const char *resolved) {
  return !strncmp(resolved, shim.under, shim.under_len) &&
         (resolved[shim.under_len] == '/' || resolved[shim.under_len] == '\0');
}

/* The file an fd is open on, in `target`. */
static bool fd_watched(int fd, char *target) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, PATH_MAX - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  return under_folder(target);
}

/* A path to be renamed, its folder resolved (the file itself may be a
 * link), in `resolved`. */
static bool path_watched(const char *path, char *resolved) {
  char dir[PATH_MAX], folder[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  const char *base = slash ? slash + 1 : path;
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  if (!realpath(dir, folder)) return false;
  snprintf(resolved, PATH_MAX, "%.2000s/%.2000s", strcmp(folder, "/") ? folder : "", base);
  return under_folder(folder);
}

static bool reported;

/* Counts a watched call on `file`; true when this one is to fail (the
 * first failure's file reported). */
static bool fails_now(int call, const char *file) {
  const long nth = ++shim.seen[call];
  const bool fail =
      shim.fail_call == call && shim.fail_at > 0 && (nth == shim.fail_at || (shim.sticky && nth > shim.fail_at));
  if (fail && shim.report_to && !reported) {
    reported = true;
    const int fd = open(shim.report_to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      (void)shim.real_write(fd, file, strlen(file));
      close(fd);
    }
  }
  return fail;
}

ssize_t write(int fd, const void *buf, size_t count) {
  init();
  char file[PATH_MAX];
  if (shim.active && fd > 2 && fd_watched(fd, file) && fails_now(CALL_WRITE, file)) {
    static bool shortened;
    if (shim.short_write && !shortened && count > 1) {
      shortened = true;
      return shim.real_write(fd, buf, count / 2);
    }
    errno = shim.fail_errno;
    return -1;
  }
  return shim.real_write(fd, buf, count);
}

int fsync(int fd) {
  init();
  char file[PATH_MAX];
  if (shim.active && fd_watched(fd, file) && fails_now(CALL_FSYNC, file)) {
    errno = shim.fail_errno;
    return -1;
  }
  return shim.real_fsync(fd);
}

int rename(const char *from, const char *to) {
  init();
  char file[PATH_MAX], other[PATH_MAX];
  const bool watched = shim.active && path_watched(from, file);
  if ((watched || (shim.active && path_watched(to, other))) && fails_now(CALL_RENAME, watched ? file : other)) {
    errno = shim.fail_errno;
    return -1;
  }
  return shim.real_rename(from, to);
}

/* A read(2) of a watched file (a checkpoint: core/training/checkpoint.c reads
 * with read(2) itself; stdio's reads are not seen) */
ssize_t read(int fd, void *buf, size_t count) {
  init();
  char file[PATH_MAX];
  if (shim.active && fd > 2 && fd_watched(fd, file) && fails_now(CALL_READ, file)) {
    errno = shim.fail_errno;
    return -1;
  }
  return shim.real_read(fd, buf, count);
}
