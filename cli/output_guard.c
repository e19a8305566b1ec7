/* output_guard.c — probes of output paths, per-name output locks, and the
 * regular-file check of inputs (output_guard.h). */
#include "cli/output_guard.h"

#include "cli/cli.h" /* hl_read_real: the environment read as an option is */

#include "core/base/atomic_file.h"
#include "formats/fatal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/types.h>
#include <unistd.h>

enum { PATH_LEN = 4096 };

static bool fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && len) vsnprintf(err, len, fmt, ap);
  va_end(ap);
  return false;
}

static const char *kind_of(mode_t m) {
  if (S_ISREG(m)) return "regular file";
  if (S_ISDIR(m)) return "folder";
  if (S_ISFIFO(m)) return "FIFO (named pipe)";
  if (S_ISCHR(m)) return "character device";
  if (S_ISBLK(m)) return "block device";
  if (S_ISSOCK(m)) return "socket";
  return "special file";
}

/* The folder that holds PATH ("." for a bare name); trailing slashes of
 * PATH do not count. */
static void parent_of(const char *path, char *out, size_t len) {
  snprintf(out, len, "%s", path);
  size_t n = strlen(out);
  while (n > 1 && out[n - 1] == '/') n--;
  while (n > 0 && out[n - 1] != '/') n--;
  if (n == 0) {
    snprintf(out, len, ".");
    return;
  }
  while (n > 1 && out[n - 1] == '/') n--;
  out[n] = '\0';
}

/* ------------------------------------------------------------- probes -- */

/* Creates and removes a probe file in DIR, which exists and is a folder. */
static bool probe_in(const char *dir, char *why, size_t len) {
  static unsigned counter;
  char probe[PATH_LEN + 64];
  for (int attempt = 0; attempt < 16; attempt++) {
    snprintf(probe, sizeof probe, "%s/.halflab-probe-%ld-%u", dir, (long)getpid(), counter++);
    const int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) continue; /* left by an earlier process of our PID */
    if (fd < 0) return fail(why, len, "cannot create files in '%s': %s", dir, strerror(errno));
    const int closed = close(fd), close_errno = errno;
    if (unlink(probe) != 0) return fail(why, len, "cannot remove the probe file '%s': %s", probe, strerror(errno));
    if (closed != 0) return fail(why, len, "cannot create files in '%s': %s", dir, strerror(close_errno));
    return true;
  }
  return fail(why, len, "cannot create files in '%s': probe names taken", dir);
}

/* An existing path's own kind; false with a message when it cannot be
 * looked at, or is a symbolic link to nothing. */
static bool look_at(const char *path, struct stat *st, char *why, size_t len) {
  if (stat(path, st) == 0) return true;
  const int e = errno;
  struct stat l;
  if (e == ENOENT && lstat(path, &l) == 0) return fail(why, len, "'%s' is a symbolic link to nothing", path);
  errno = e;
  return false;
}

/* The nearest ancestor of DIR that exists (DIR itself excluded); false with
 * a message when one on the way cannot be looked at. */
static bool nearest_existing(const char *dir, char *anc, size_t alen, struct stat *st, char *why, size_t len) {
  char cur[PATH_LEN];
  snprintf(cur, sizeof cur, "%s", dir);
  for (;;) {
    parent_of(cur, anc, alen);
    if (!strcmp(anc, cur)) return fail(why, len, "'%s' cannot be reached", dir); /* "/" or "." missing */
    why[0] = '\0';
    errno = 0;
    if (look_at(anc, st, why, len)) return true;
    if (why[0]) return false; /* a link to nothing */
    if (errno != ENOENT && errno != ENOTDIR) return fail(why, len, "cannot reach '%s': %s", anc, strerror(errno));
    snprintf(cur, sizeof cur, "%s", anc);
  }
}

/* mkdir -p DIR; the folders it made are removed again when a later one
 * cannot be. */
static int make_folders(const char *dir) {
  char tmp[PATH_LEN];
  if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) return ENAMETOOLONG;
  size_t made[256];
  int n_made = 0, e = 0;
  const size_t n = strlen(tmp);
  for (size_t i = 1; i <= n && !e; i++) {
    if (i < n && tmp[i] != '/') continue;
    if (i < n && tmp[i - 1] == '/') continue; /* "a//b" */
    const char keep = tmp[i];
    tmp[i] = '\0';
    if (mkdir(tmp, 0777) == 0) {
      if (n_made < 256) made[n_made++] = i;
    } else if (errno != EEXIST) {
      e = errno;
    }
    tmp[i] = keep;
  }
  struct stat st;
  if (!e && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) e = errno ? errno : ENOTDIR;
  if (e)
    while (n_made > 0) {
      tmp[made[--n_made]] = '\0';
      rmdir(tmp);
    }
  return e;
}

bool hl_out_probe_dir(const char *dir, bool create, char *err, size_t len) {
  if (!dir || !*dir) return fail(err, len, "an empty folder name");
  if (strlen(dir) >= PATH_LEN - 64) return fail(err, len, "'%.64s...' is too long a path", dir);
  char why[PATH_LEN + 256];
  why[0] = '\0';
  struct stat st;
  errno = 0;
  if (look_at(dir, &st, why, sizeof why)) {
    if (!S_ISDIR(st.st_mode)) return fail(err, len, "'%s' is a %s, not a folder", dir, kind_of(st.st_mode));
    if (!probe_in(dir, why, sizeof why)) return fail(err, len, "%s", why);
    return true;
  }
  if (why[0]) return fail(err, len, "%s", why);
  if (errno != ENOENT && errno != ENOTDIR) return fail(err, len, "cannot reach '%s': %s", dir, strerror(errno));
  char anc[PATH_LEN];
  if (!nearest_existing(dir, anc, sizeof anc, &st, why, sizeof why))
    return fail(err, len, "cannot make folder '%s': %s", dir, why);
  if (!S_ISDIR(st.st_mode))
    return fail(err, len, "cannot make folder '%s': '%s' is a %s, not a folder", dir, anc, kind_of(st.st_mode));
  if (!probe_in(anc, why, sizeof why)) return fail(err, len, "cannot make folder '%s': %s", dir, why);
  if (!create) return true;
  const int e = make_folders(dir);
  if (e) return fail(err, len, "cannot make folder '%s': %s", dir, strerror(e));
  if (!probe_in(dir, why, sizeof why)) {
    rmdir(dir); /* made just now and empty */
    return fail(err, len, "%s", why);
  }
  return true;
}

bool hl_out_probe_file(const char *path, char *err, size_t len) {
  if (!path || !*path) return fail(err, len, "an empty file name");
  const size_t n = strlen(path);
  if (n >= PATH_LEN - 64) return fail(err, len, "'%.64s...' is too long a path", path);
  if (path[n - 1] == '/') return fail(err, len, "'%s' names a folder, not a file", path);
  char dir[PATH_LEN], why[PATH_LEN + 256];
  why[0] = '\0';
  parent_of(path, dir, sizeof dir);
  struct stat st;
  errno = 0;
  if (!look_at(dir, &st, why, sizeof why)) {
    if (why[0]) return fail(err, len, "cannot write '%s': %s", path, why);
    if (errno == ENOENT) return fail(err, len, "cannot write '%s': folder '%s' does not exist", path, dir);
    return fail(err, len, "cannot write '%s': %s", path, strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return fail(err, len, "cannot write '%s': '%s' is a %s, not a folder", path, dir, kind_of(st.st_mode));
  char tmp[PATH_LEN + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  const char *const written[2] = {path, tmp}; /* PATH.tmp is written, then renamed over PATH */
  for (int i = 0; i < 2; i++) {
    errno = 0;
    if (look_at(written[i], &st, why, sizeof why)) {
      if (!S_ISREG(st.st_mode))
        return fail(err, len, "cannot write '%s': it is a %s, not a regular file", written[i], kind_of(st.st_mode));
    } else if (why[0]) {
      return fail(err, len, "cannot write '%s': %s", path, why);
    } else if (errno != ENOENT) {
      return fail(err, len, "cannot write '%s': %s", written[i], strerror(errno));
    }
  }
  if (!probe_in(dir, why, sizeof why)) return fail(err, len, "cannot write '%s': %s", path, why);
  return true;
}

bool hl_input_regular_file(const char *path, char *err, size_t len) {
  if (!path || !*path) return fail(err, len, "an empty file name");
  struct stat st;
  if (stat(path, &st) != 0) return fail(err, len, "cannot read '%s': %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail(err, len, "'%s' is a %s, not a regular file", path, kind_of(st.st_mode));
  return true;
}

/* -------------------------------------------------------------- locks -- */

struct hl_out_lock {
  int fd;
  atomic_bool waiting;      /* true while F_SETLKW waits: the file may be another's */
  char path[PATH_LEN + 64]; /* DIR/.NAME.lock */
};

/* The locks this process holds, for the exit and signal clean-up.
 *
 * A lock file is ours from the open that may create it to the unlink that
 * removes it, and the table must say so at every moment a signal handler can
 * look. The thread that changes the table blocks the ending signals, so its
 * own handler never sees half a change; but another thread (a BLAS worker)
 * can take the signal meanwhile. So a change runs inside a critical section
 * counted in busy_, and the handler first raises dying_, then waits for busy_
 * to drain: either the section saw dying_ and stops short, or the handler
 * sees the section's end (sequentially consistent atomics, Dekker-style).
 * The one blocking call, F_SETLKW, waits outside any section, its entry
 * marked `waiting`. */
enum { MAX_LOCKS = 64 };
static hl_out_lock *_Atomic held_[MAX_LOCKS];
static pid_t owner_; /* a forked child inherits the table, not the locks: it must not remove the files */
static bool hooks_;
static atomic_int busy_;
static atomic_bool dying_;

/* The signals that end a program which has no handler of its own, its
 * locks removed first: Ctrl-C, kill, a closed terminal or ssh session, a
 * reader of stdout that went away (`| head`). */
static const int ending_signals_[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
enum { ENDING_SIGNALS = sizeof ending_signals_ / sizeof ending_signals_[0] };

static void add_ending_signals(sigset_t *s) {
  for (int i = 0; i < ENDING_SIGNALS; i++) sigaddset(s, ending_signals_[i]);
}

static void enter_section(sigset_t *old) {
  sigset_t s;
  sigemptyset(&s);
  add_ending_signals(&s);
  pthread_sigmask(SIG_BLOCK, &s, old);
  atomic_fetch_add(&busy_, 1);
  if (atomic_load(&dying_)) { /* a handler on another thread is cleaning up and will end the process */
    atomic_fetch_sub(&busy_, 1);
    for (;;) pause();
  }
}

static void leave_section(const sigset_t *old) {
  atomic_fetch_sub(&busy_, 1);
  pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Removes l's file if this process holds its lock and it is still the file
 * at l's path. Async-signal-safe: fcntl, fstat, stat and unlink only. */
static void unlink_if_ours(const hl_out_lock *l) {
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  struct stat mine, there;
  if (fcntl(l->fd, F_SETLK, &fl) == 0 && fstat(l->fd, &mine) == 0 && stat(l->path, &there) == 0 &&
      mine.st_ino == there.st_ino && mine.st_dev == there.st_dev)
    unlink(l->path);
}

static void release_all(void) {
  if (getpid() != owner_) return;
  for (int i = 0; i < MAX_LOCKS; i++)
    if (held_[i]) hl_out_lock_release(held_[i]);
}

static void on_signal(int sig) {
  if (getpid() == owner_) {
    atomic_store(&dying_, true);
    while (atomic_load(&busy_) > 0) {
    } /* a section on another thread ends within a few system calls */
    for (int i = 0; i < MAX_LOCKS; i++) {
      const hl_out_lock *l = held_[i];
      if (!l) continue;
      if (atomic_load(&l->waiting)) unlink_if_ours(l); /* the wait may have ended: locks die with us anyway */
      else unlink(l->path);
    }
    hl_atomic_remove_unfinished(); /* a table or file half written (PATH.tmp) goes too */
  }
  signal(sig, SIG_DFL);
  raise(sig); /* delivered once the handler returns: the process ends as it would have */
}

/* The clean-up hooks, for this process: a forked child inherits the
 * parent's table, whose locks it does not hold, and starts afresh. Called
 * inside a section. */
static void adopt_process(void) {
  static bool at_exit;
  if (hooks_ && owner_ == getpid()) return;
  for (int i = 0; i < MAX_LOCKS; i++) held_[i] = NULL; /* the parent's, not ours */
  owner_ = getpid();
  hooks_ = true;
  if (!at_exit) at_exit = atexit(release_all) == 0;
  for (int i = 0; i < ENDING_SIGNALS; i++) {
    struct sigaction old; /* an ignored one (nohup) stays ignored */
    if (sigaction(ending_signals_[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
      continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* a program's own handler, installed later, takes over */
    sigemptyset(&sa.sa_mask);
    add_ending_signals(&sa.sa_mask);
    sigaction(ending_signals_[i], &sa, NULL);
  }
}

void hl_out_guard_install(void) {
  sigset_t old;
  enter_section(&old);
  adopt_process();
  leave_section(&old);
}

/* Inside a section. */
static void forget(const hl_out_lock *l) {
  for (int i = 0; i < MAX_LOCKS; i++)
    if (held_[i] == l) held_[i] = NULL;
}

/* The PID that holds fd's lock: F_GETLK's, else the one written in the file
 * (another PID namespace reads 0 from F_GETLK). 0: nobody holds it now. */
static long holder_of(int fd) {
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  if (fcntl(fd, F_GETLK, &fl) != 0) return -1;
  if (fl.l_type == F_UNLCK) return 0;
  if (fl.l_pid > 0) return (long)fl.l_pid;
  char text[32] = "";
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  if (n > 0) text[n] = '\0';
  const long pid = strtol(text, NULL, 10);
  return pid > 0 ? pid : -1;
}

/* ------------------------------------------------------ the bounded wait -- */

static atomic_int wait_stopped_by_; /* the signal that ends every wait, now and later; 0: none */

void hl_out_lock_wait_stop(int sig) { atomic_store(&wait_stopped_by_, sig > 0 ? sig : SIGTERM); }

bool hl_out_lock_wait_seconds(double *seconds, char *why, size_t len) {
  const char *v = getenv("HALFLAB_LOCK_WAIT_SECONDS");
  *seconds = HL_OUT_LOCK_WAIT_SECONDS;
  const hl_real_range range = {.lo = 0, .hi = 1e6, .lo_open = true};
  return !v || !*v || hl_read_real(v, range, seconds, why, len);
}

static void announce_wait(const char *dir, const char *name, long pid, double seconds) {
  char line[PATH_LEN + 256];
  const int n = pid > 0 ? snprintf(line, sizeof line, "%s: waiting for %s/%s, held by PID %ld (at most %g s)\n",
                             hl_fatal_program(), dir, name, pid, seconds)
                  : snprintf(line, sizeof line, "%s: waiting for %s/%s, held by another process (at most %g s)\n",
                             hl_fatal_program(), dir, name, seconds);
  hl_write_made_line(STDERR_FILENO, line, sizeof line, n);
}

static void on_wait_tick(int sig) { (void)sig; } /* only to end F_SETLKW's sleep (no SA_RESTART) */

static double monotonic_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Waits for fd's whole-file write lock for at most `seconds`: 0 when taken,
 * ETIMEDOUT, EINTR when hl_out_lock_wait_stop was called, or fcntl's errno.
 * The wait is F_SETLKW (the kernel lists the waiter in /proc/locks and
 * finds deadlocks), woken every 100 ms by a timer aimed at this thread to
 * look at the clock and at the stop. */
static int wait_for_lock(int fd, double seconds) {
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  struct sigaction tick, old_action;
  memset(&tick, 0, sizeof tick);
  tick.sa_handler = on_wait_tick;
  sigemptyset(&tick.sa_mask);
  sigaction(SIGALRM, &tick, &old_action);
  sigset_t alarm_only, old_mask;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  pthread_sigmask(SIG_UNBLOCK, &alarm_only, &old_mask);
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGALRM;
  ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  timer_t timer;
  const bool ticking = timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0;
  const struct itimerspec every = {.it_interval = {0, 100000000}, .it_value = {0, 100000000}};
  if (ticking) timer_settime(timer, 0, &every, NULL);
  const double deadline = monotonic_s() + seconds;
  int e;
  for (;;) {
    if (atomic_load(&wait_stopped_by_)) {
      e = EINTR;
      break;
    }
    if (fcntl(fd, ticking ? F_SETLKW : F_SETLK, &fl) == 0) {
      e = 0;
      break;
    }
    e = errno;
    if (e != EINTR && e != EACCES && e != EAGAIN) break;
    if (monotonic_s() >= deadline) {
      e = ETIMEDOUT;
      break;
    }
    if (!ticking) nanosleep(&(struct timespec){0, 50000000}, NULL); /* no timer: poll */
  }
  if (ticking) timer_delete(timer);
  pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
  sigaction(SIGALRM, &old_action, NULL);
  return e;
}

typedef enum { ATTEMPT_TAKEN, ATTEMPT_AGAIN, ATTEMPT_FAILED } attempt_result;

/* One attempt at l's lock, inside a section that it may leave and re-enter
 * (*old: the mask outside it) while F_SETLKW waits. A file this attempt
 * creates is in the table before it exists, so that a signal removes it. */
static attempt_result attempt(hl_out_lock *l, const char *dir, const char *name, bool wait, bool *announced,
                              sigset_t *old, char *err, size_t len) {
  int slot = -1;
  for (int i = 0; i < MAX_LOCKS && slot < 0; i++)
    if (!held_[i]) slot = i;
  if (slot < 0) {
    fail(err, len, "more than %d output locks in one process", MAX_LOCKS);
    errno = ENOLCK;
    return ATTEMPT_FAILED;
  }
  /* in the table as waiting from before the open: the handler removes the
   * file only once this process holds its lock */
  atomic_store(&l->waiting, true);
  l->fd = -1;
  const int fd = open(l->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int e = errno;
    fail(err, len, "cannot make the lock file '%s': %s", l->path, strerror(e));
    errno = e;
    return ATTEMPT_FAILED;
  }
  l->fd = fd;
  held_[slot] = l;
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  int rc = fcntl(fd, F_SETLK, &fl), e = rc == 0 ? 0 : errno;
  double seconds = 0;
  char why[256];
  if (wait && !hl_out_lock_wait_seconds(&seconds, why, sizeof why)) seconds = HL_OUT_LOCK_WAIT_SECONDS; /* refused at start */
  if (rc != 0 && wait && (e == EACCES || e == EAGAIN)) {
    leave_section(old);
    if (!*announced) { /* one line, once: a wait that says nothing looks like a hang */
      announce_wait(dir, name, holder_of(fd), seconds);
      *announced = true;
    }
    e = wait_for_lock(fd, seconds);
    rc = e == 0 ? 0 : -1;
    enter_section(old);
  }
  if (rc != 0) {
    const long pid = e == EACCES || e == EAGAIN || e == ETIMEDOUT ? holder_of(fd) : -1;
    held_[slot] = NULL;
    close(fd);
    if (pid == 0 && e != ETIMEDOUT) return ATTEMPT_AGAIN; /* released since */
    if (e == ETIMEDOUT || e == EINTR) {
      if (e == ETIMEDOUT)
        fail(err, len, "waited %g s for %s/%s, held by PID %ld, and gave up", seconds, dir, name, pid);
      else
        fail(err, len, "signal %d came while waiting for %s/%s", (int)atomic_load(&wait_stopped_by_), dir, name);
      errno = e;
      return ATTEMPT_FAILED;
    }
    if (e == EACCES || e == EAGAIN) {
      if (pid > 0) fail(err, len, "%s/%s is being written by PID %ld", dir, name, pid);
      else fail(err, len, "%s/%s is being written by another process", dir, name);
      errno = EWOULDBLOCK;
      return ATTEMPT_FAILED;
    }
    fail(err, len, "cannot lock '%s': %s", l->path, strerror(e));
    errno = e;
    return ATTEMPT_FAILED;
  }
  /* the file locked must still be the one at the path: its holder may have
   * removed it between our open and our lock */
  struct stat mine, there;
  if (fstat(fd, &mine) != 0 || stat(l->path, &there) != 0 || mine.st_ino != there.st_ino ||
      mine.st_dev != there.st_dev) {
    held_[slot] = NULL;
    close(fd);
    return ATTEMPT_AGAIN;
  }
  atomic_store(&l->waiting, false); /* ours: the handler removes it outright */
  char pid_text[32];
  const int n = snprintf(pid_text, sizeof pid_text, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid_text, (size_t)n, 0) != n) {
    e = errno;
    fail(err, len, "cannot write the lock file '%s': %s", l->path, strerror(e));
    held_[slot] = NULL;
    unlink(l->path);
    close(fd);
    errno = e;
    return ATTEMPT_FAILED;
  }
  return ATTEMPT_TAKEN;
}

const char *hl_out_lock_path(const char *dir, const char *name, char *buf, size_t len) {
  return snprintf(buf, len, "%s/.%s.lock", dir, name) < (int)len ? buf : NULL;
}

static hl_out_lock *lock(const char *dir, const char *name, bool wait, char *err, size_t len) {
  if (!dir || !*dir || !name || !*name || strchr(name, '/')) {
    fail(err, len, "a lock needs a folder and a plain name");
    errno = EINVAL;
    return NULL;
  }
  hl_out_lock *l = calloc(1, sizeof *l);
  if (!l) {
    fail(err, len, "out of memory");
    return NULL;
  }
  if (!hl_out_lock_path(dir, name, l->path, sizeof l->path)) {
    free(l);
    fail(err, len, "'%s/%s': too long a path", dir, name);
    errno = ENAMETOOLONG;
    return NULL;
  }
  sigset_t old;
  enter_section(&old);
  adopt_process();
  for (int i = 0; i < MAX_LOCKS; i++)
    if (held_[i] && !strcmp(held_[i]->path, l->path)) { /* the kernel would grant it: fcntl locks are per process */
      leave_section(&old);
      free(l);
      fail(err, len, "%s/%s is being written by PID %ld (this process)", dir, name, (long)getpid());
      errno = EWOULDBLOCK;
      return NULL;
    }
  attempt_result r = ATTEMPT_AGAIN;
  bool announced = false;
  for (int i = 0; i < 1000 && r == ATTEMPT_AGAIN; i++) r = attempt(l, dir, name, wait, &announced, &old, err, len);
  const int e = errno;
  leave_section(&old);
  if (r == ATTEMPT_TAKEN) return l;
  if (r == ATTEMPT_AGAIN) fail(err, len, "cannot lock '%s': its file keeps being replaced", l->path);
  free(l);
  errno = r == ATTEMPT_AGAIN ? EAGAIN : e;
  return NULL;
}

hl_out_lock *hl_out_lock_take(const char *dir, const char *name, char *err, size_t len) {
  return lock(dir, name, false, err, len);
}

hl_out_lock *hl_out_lock_wait(const char *dir, const char *name, char *err, size_t len) {
  return lock(dir, name, true, err, len);
}

void hl_out_lock_release(hl_out_lock *l) {
  if (!l) return;
  sigset_t old;
  enter_section(&old);
  forget(l);
  unlink(l->path); /* while still holding the lock: whoever locks the old file next sees it gone and starts again */
  close(l->fd);
  leave_section(&old);
  free(l);
}
