/* test_output_guard.c — suite unit: cli/output_guard.h. Probes that say
 * what a real attempt to write would find and make nothing; locks that
 * exclude a second process, name its PID, vanish on release, exit and
 * SIGTERM (whenever it comes: while taking, writing the PID or releasing,
 * with or without a side thread to run the handler), are not held by the
 * file a killed process left, and a waiter's end leaves the holder's file
 * alone; inputs that
 * are not regular files refused without opening them. Other processes are
 * forked children: fcntl locks never conflict within one process. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/output_guard.h"
#include "tests/support/hltest.h"

/* What a real attempt says: can a file be created in DIR? (the probe's
 * answer must agree, for root and others alike) */
static bool can_create_in(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/.test-real-attempt", dir);
  const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return false;
  close(fd);
  unlink(path);
  return true;
}

static void test_probe_dir(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), err[8192];
  assert_true(hl_out_probe_dir(dir, false, err, sizeof err));
  assert_int_equal(hl_count_files(dir), 0); /* the probe file is gone */

  /* a folder to be: proven through its nearest existing ancestor, made only when asked */
  char *deep = strdup(hl_path(dir, "a/b/c"));
  assert_true(hl_out_probe_dir(deep, false, err, sizeof err));
  assert_int_equal(hl_count_files(dir), 0);
  assert_true(hl_out_probe_dir(deep, true, err, sizeof err));
  assert_int_equal(hl_count_files(deep), 0);
  assert_true(hl_out_probe_dir(deep, true, err, sizeof err)); /* there already: fine */

  /* under a regular file: refused, nothing made (root too) */
  hl_write_file(hl_path(dir, "file"), "x", 1);
  char *under = strdup(hl_path(dir, "file/out/deeper"));
  for (int create = 0; create < 2; create++) {
    assert_false(hl_out_probe_dir(under, create, err, sizeof err));
    assert_non_null(strstr(err, "file' is a regular file, not a folder"));
  }
  assert_false(hl_out_probe_dir(hl_path(dir, "file"), false, err, sizeof err));
  assert_non_null(strstr(err, "not a folder"));
  assert_int_equal(hl_count_files(dir), 2); /* a/ and file */

  /* /proc and a folder under it: access() lets root through, the probe does not */
  assert_false(hl_out_probe_dir("/proc", false, err, sizeof err));
  assert_non_null(strstr(err, "cannot create files in '/proc'"));
  assert_false(hl_out_probe_dir("/proc/halflab-no-such/out", true, err, sizeof err));
  assert_false(hl_file_exists("/proc/halflab-no-such"));

  /* a read-only folder: the probe agrees with a real attempt (root may write there, others not) */
  char *ro = strdup(hl_path(dir, "ro"));
  assert_int_equal(mkdir(ro, 0555), 0);
  assert_int_equal(chmod(ro, 0555), 0);
  const bool real = can_create_in(ro);
  assert_int_equal(hl_out_probe_dir(ro, false, err, sizeof err), real);
  char *ro_new = strdup(hl_path(ro, "new"));
  assert_int_equal(hl_out_probe_dir(ro_new, true, err, sizeof err), real);
  if (!real) {
    assert_non_null(strstr(err, "Permission denied"));
    assert_false(hl_file_exists(ro_new));
  }
  chmod(ro, 0755);

  /* a link to nothing is named as such */
  assert_int_equal(symlink(hl_path(dir, "nowhere"), hl_path(dir, "dangling")), 0);
  assert_false(hl_out_probe_dir(hl_path(dir, "dangling/out"), true, err, sizeof err));
  assert_non_null(strstr(err, "symbolic link to nothing"));
  free(deep), free(under), free(ro), free(ro_new);
  hl_rmtree(dir);
  free(dir);
}

static void test_probe_file(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), err[8192];
  assert_true(hl_out_probe_file(hl_path(dir, "new.bin"), err, sizeof err));
  assert_int_equal(hl_count_files(dir), 0);
  /* an existing file: neither truncated nor touched */
  hl_write_file(hl_path(dir, "old.bin"), "keep", 4);
  assert_true(hl_out_probe_file(hl_path(dir, "old.bin"), err, sizeof err));
  size_t n;
  char *text = hl_read_file(hl_path(dir, "old.bin"), &n);
  assert_int_equal(n, 4);
  assert_memory_equal(text, "keep", 4);
  free(text);

  assert_int_equal(mkdir(hl_path(dir, "sub"), 0755), 0);
  assert_int_equal(mkfifo(hl_path(dir, "fifo"), 0644), 0);
  static const struct {
    const char *name, *words;
  } refused[] = {
      {"sub", "is a folder, not a regular file"},
      {"sub/", "names a folder"},
      {"fifo", "is a FIFO"},
      {"no/such/x.bin", "does not exist"},
      {"old.bin/x.bin", "is a regular file, not a folder"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    assert_false(hl_out_probe_file(hl_path(dir, refused[i].name), err, sizeof err));
    if (!strstr(err, refused[i].words)) fail_msg("%s: \"%s\" (want \"%s\")", refused[i].name, err, refused[i].words);
  }
  /* PATH.tmp is written first: a folder there would stop the write at its end */
  assert_int_equal(mkdir(hl_path(dir, "blocked.bin.tmp"), 0755), 0);
  assert_false(hl_out_probe_file(hl_path(dir, "blocked.bin"), err, sizeof err));
  assert_non_null(strstr(err, "blocked.bin.tmp"));
  assert_false(hl_out_probe_file("/dev/null", err, sizeof err));
  assert_non_null(strstr(err, "character device"));
  assert_false(hl_out_probe_file("/proc/halflab.bin", err, sizeof err));
  assert_false(hl_file_exists("/proc/halflab.bin"));
  assert_int_equal(hl_count_files(dir), 4); /* old.bin, sub, fifo, blocked.bin.tmp */
  hl_rmtree(dir);
  free(dir);
}

static void test_input_regular_file(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), err[8192];
  hl_write_file(hl_path(dir, "data.txt"), "abc", 3);
  assert_int_equal(mkfifo(hl_path(dir, "fifo"), 0644), 0);
  assert_int_equal(symlink(hl_path(dir, "data.txt"), hl_path(dir, "link")), 0);
  assert_true(hl_input_regular_file(hl_path(dir, "data.txt"), err, sizeof err));
  assert_true(hl_input_regular_file(hl_path(dir, "link"), err, sizeof err)); /* links are followed */
  assert_false(hl_input_regular_file(hl_path(dir, "fifo"), err, sizeof err)); /* and not opened: this returns */
  assert_non_null(strstr(err, "is a FIFO (named pipe), not a regular file"));
  assert_false(hl_input_regular_file("/dev/null", err, sizeof err));
  assert_non_null(strstr(err, "is a character device"));
  assert_false(hl_input_regular_file(dir, err, sizeof err));
  assert_non_null(strstr(err, "is a folder"));
  assert_false(hl_input_regular_file(hl_path(dir, "missing"), err, sizeof err));
  assert_non_null(strstr(err, "cannot read"));
  assert_non_null(strstr(err, "No such file"));
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------------- locks -- */

static char lock_file[4200];

/* A child that tries the lock of DIR/run and reports: exit 0 taken (and
 * released), 3 refused with the parent's PID in the message and in the
 * lock file, 4 other. (The holder itself must not read its lock file:
 * closing any descriptor of it would drop the process's fcntl lock.) */
static int child_try(const char *dir, pid_t parent) {
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char err[4400], want[64];
    hl_out_lock *l = hl_out_lock_take(dir, "run", err, sizeof err);
    if (l) {
      hl_out_lock_release(l);
      _exit(0);
    }
    snprintf(want, sizeof want, "run is being written by PID %ld", (long)parent);
    if (errno != EWOULDBLOCK || !strstr(err, want)) _exit(4);
    char text[32] = "";
    FILE *f = fopen(lock_file, "r");
    if (!f || !fgets(text, sizeof text, f)) _exit(4);
    _exit(strtol(text, NULL, 10) == parent ? 3 : 4);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st);
}

static void test_lock_excludes_and_names_the_holder(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), err[4400];
  snprintf(lock_file, sizeof lock_file, "%s/.run.lock", dir);
  hl_out_lock *l = hl_out_lock_take(dir, "run", err, sizeof err);
  assert_non_null(l);
  assert_int_equal(child_try(dir, getpid()), 3);
  /* the same process taking it again: the kernel would say yes, the guard says no */
  assert_null(hl_out_lock_take(dir, "run", err, sizeof err));
  assert_non_null(strstr(err, "(this process)"));
  /* another name is another lock */
  hl_out_lock *other = hl_out_lock_take(dir, "other", err, sizeof err);
  assert_non_null(other);
  hl_out_lock_release(other);
  hl_out_lock_release(l);
  assert_false(hl_file_exists(lock_file));
  assert_int_equal(child_try(dir, getpid()), 0);
  assert_int_equal(hl_count_files(dir), 0);
  hl_rmtree(dir);
  free(dir);
}

static void test_stale_lock_file_is_not_held(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), err[4400];
  snprintf(lock_file, sizeof lock_file, "%s/.run.lock", dir);
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char e[4400];
    if (!hl_out_lock_take(dir, "run", e, sizeof e)) _exit(4);
    kill(getpid(), SIGKILL); /* no clean-up runs */
    _exit(5);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st));
  assert_true(hl_file_exists(lock_file)); /* left behind ... */
  hl_out_lock *l = hl_out_lock_take(dir, "run", err, sizeof err); /* ... and held by nobody */
  assert_non_null(l);
  assert_int_equal(child_try(dir, getpid()), 3); /* held now, and the stale PID replaced by ours */
  hl_out_lock_release(l);
  assert_false(hl_file_exists(lock_file));
  hl_rmtree(dir);
  free(dir);
}

/* A child takes the lock, then ends as `how` says; the lock file must be
 * gone afterwards (exit, return from main's path, SIGTERM, SIGINT). */
static void ends_and_cleans(const char *dir, int how) {
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    char e[4400];
    if (!hl_out_lock_take(dir, "run", e, sizeof e)) _exit(4);
    if (how == 0) exit(0);
    raise(how);
    _exit(5);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (how == 0) assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  else assert_true(WIFSIGNALED(st) && WTERMSIG(st) == how); /* the signal still ends it */
  assert_false(hl_file_exists(lock_file));
}

static void test_lock_file_removed_on_exit_and_signals(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  snprintf(lock_file, sizeof lock_file, "%s/.run.lock", dir);
  ends_and_cleans(dir, 0);
  ends_and_cleans(dir, SIGTERM);
  ends_and_cleans(dir, SIGINT);
  hl_rmtree(dir);
  free(dir);
}

/* A side thread that sleeps with SIGINT and SIGTERM unblocked, as a BLAS
 * library's workers do: a signal sent to the process may run its handler
 * there while the main thread is between system calls. */
static void *sleeping_side_thread(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

/* A child takes and releases the lock in a loop, with a side thread or
 * without; SIG, sent at a varying moment, ends it; the lock file must be
 * gone whatever the loop was doing (taking, writing its PID, releasing). */
static void signal_in_the_loop(const char *dir, int sig, bool side_thread, int tries) {
  int left = 0;
  for (int t = 0; t < tries; t++) {
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      alarm(20);
      pthread_t side;
      if (side_thread && pthread_create(&side, NULL, sleeping_side_thread, NULL) != 0) _exit(6);
      close(ready[0]);
      if (write(ready[1], "x", 1) != 1) _exit(6);
      for (;;) {
        char e[4400];
        hl_out_lock *l = hl_out_lock_take(dir, "run", e, sizeof e);
        if (!l) _exit(4);
        hl_out_lock_release(l);
      }
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    nanosleep(&(struct timespec){.tv_nsec = 1000L * (100 + (t * 37) % 900)}, NULL);
    assert_int_equal(kill(pid, sig), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != sig)
      fail_msg("try %d: the child ended with status %d, not by signal %d", t, st, sig);
    if (hl_file_exists(lock_file)) {
      left++;
      unlink(lock_file);
    }
  }
  if (left) fail_msg("signal %d%s: the lock file was left in %d of %d tries", sig, side_thread ? " (side thread)" : "", left, tries);
}

static void test_lock_file_removed_whenever_the_signal_comes(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  snprintf(lock_file, sizeof lock_file, "%s/.run.lock", dir);
  signal_in_the_loop(dir, SIGTERM, false, 150);
  signal_in_the_loop(dir, SIGINT, false, 150);
  signal_in_the_loop(dir, SIGTERM, true, 150);
  signal_in_the_loop(dir, SIGINT, true, 150);
  assert_int_equal(hl_count_files(dir), 0);
  hl_rmtree(dir);
  free(dir);
}

/* A forked child of a holder inherits its table of locks, not the locks:
 * its exit must leave the holder's lock file alone. */
static void test_forked_child_leaves_the_holders_file(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), err[4400];
  snprintf(lock_file, sizeof lock_file, "%s/.run.lock", dir);
  hl_out_lock *l = hl_out_lock_take(dir, "run", err, sizeof err);
  assert_non_null(l);
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) exit(0); /* atexit handlers run here */
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(hl_file_exists(lock_file));
  assert_int_equal(child_try(dir, getpid()), 3);
  hl_out_lock_release(l);
  hl_rmtree(dir);
  free(dir);
}

/* hl_out_lock_wait waits for the holder instead of refusing. */
static void test_lock_wait(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), err[4400];
  hl_out_lock *l = hl_out_lock_take(dir, "train_summary.csv", err, sizeof err);
  assert_non_null(l);
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(20); /* a lock that never comes fails the test instead of hanging it */
    close(ready[0]);
    if (write(ready[1], "x", 1) != 1) _exit(6);
    char e[4400];
    hl_out_lock *w = hl_out_lock_wait(dir, "train_summary.csv", e, sizeof e);
    if (!w) _exit(4);
    hl_out_lock_release(w);
    _exit(0);
  }
  close(ready[1]);
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  close(ready[0]);
  nanosleep(&(struct timespec){.tv_nsec = 200 * 1000 * 1000}, NULL);
  int st;
  assert_int_equal(waitpid(pid, &st, WNOHANG), 0); /* still waiting */
  hl_out_lock_release(l);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(hl_count_files(dir), 0);
  hl_rmtree(dir);
  free(dir);
}

/* A process waiting in hl_out_lock_wait and ended by SIGTERM leaves the
 * holder's file alone: it waited on that file, it never held it. */
static void test_waiter_ended_leaves_the_holders_file(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), err[4400];
  snprintf(lock_file, sizeof lock_file, "%s/.run.lock", dir);
  hl_out_lock *l = hl_out_lock_take(dir, "run", err, sizeof err);
  assert_non_null(l);
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGTERM, SIG_DFL);
    alarm(20);
    char e[4400];
    hl_out_lock_wait(dir, "run", e, sizeof e);
    _exit(4);
  }
  const time_t deadline = time(NULL) + 20;
  while (!hl_waits_for_a_lock((long)pid) && time(NULL) < deadline) nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
  assert_true(hl_waits_for_a_lock((long)pid));
  assert_int_equal(kill(pid, SIGTERM), 0);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  assert_true(hl_file_exists(lock_file));
  assert_int_equal(child_try(dir, getpid()), 3); /* still ours */
  hl_out_lock_release(l);
  assert_int_equal(hl_count_files(dir), 0);
  hl_rmtree(dir);
  free(dir);
}

static void test_lock_in_a_folder_that_refuses(void **state) {
  (void)state;
  char err[4400];
  assert_null(hl_out_lock_take("/proc", "run", err, sizeof err));
  assert_non_null(strstr(err, "cannot make the lock file '/proc/.run.lock'"));
  assert_null(hl_out_lock_take("/tmp", "a/b", err, sizeof err));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_probe_dir),
      cmocka_unit_test(test_probe_file),
      cmocka_unit_test(test_input_regular_file),
      cmocka_unit_test(test_lock_excludes_and_names_the_holder),
      cmocka_unit_test(test_stale_lock_file_is_not_held),
      cmocka_unit_test(test_lock_file_removed_on_exit_and_signals),
      cmocka_unit_test(test_lock_file_removed_whenever_the_signal_comes),
      cmocka_unit_test(test_forked_child_leaves_the_holders_file),
      cmocka_unit_test(test_lock_wait),
      cmocka_unit_test(test_waiter_ended_leaves_the_holders_file),
      cmocka_unit_test(test_lock_in_a_folder_that_refuses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
