/* test_faults_signals.c — suite faults: how the programs end when the
 * world around them goes away, tried as a hostile user would.
 *
 *   stdout      full (/dev/full) or closed (>&-) under train --list-params,
 *               bench gemm --list, bench footprint --list, an example and
 *               numerics all:
 *               exit 1 with one line naming stdout and the error; a closed
 *               stdout never becomes the number of a CSV file;
 *   pipes       `halflab-numerics all | head -1` leaves no lock file;
 *   signals     SIGHUP and SIGPIPE to halflab-train end it as SIGTERM does:
 *               128 + the signal, checkpoint, .interrupted tables, no
 *               .inprogress and no lock file left;
 *   one line    an error line (a usage error, a fatal one) is one write(2):
 *               stderr is a SOCK_SEQPACKET socket, where each write is one
 *               message;
 *   fatal       a BLAS that fails to load, with an exit handler that asks for
 *               the BLAS again, ends the process (exit 1) instead of hanging;
 *               a fatal inside an exit handler ends it at once; a fatal while
 *               a file is written leaves no PATH.tmp; a run whose BLAS
 *               cannot load leaves no .lock, .inprogress or .tmp;
 *   lock wait   train_summary.csv held by this test: the run says who holds
 *               it, gives up after HALFLAB_LOCK_WAIT_SECONDS (exit 1, files
 *               .failed), and a SIGTERM during the wait ends it as an
 *               interrupted run (143, files .interrupted);
 *   export      --export-batches of an absurd size, or of more than the
 *               folder's file system has free: exit 2, nothing made; SIGTERM
 *               while it is written: no .tmp, no lock left; every
 *               write failing (fail_io_shim, ENOSPC): exit 1 at once (under a
 *               CPU-time limit that a run generating everything exceeds),
 *               naming the file, no partial file left.
 *
 * Prints "faults: signals: N cases tried, N held". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/output_guard.h"
#include "core/base/atomic_file.h"
#include "formats/fatal.h"
#include "kernels/gemm_reference.h"
#include "kernels/host.h"
#include "tests/support/hltest.h"

static int tried_, held_;
static const char *shim_; /* fail_io_shim's path (argv[1]) */

static void tried(void) { tried_++; }
static void held(void) { held_++; }

static const char *train(void) { return hl_test_prog("halflab-train"); }
static const char *bench(void) { return hl_test_prog("halflab-bench"); }
static const char *numerics(void) { return hl_test_prog("halflab-numerics"); }

#define TINY "--device cpu --batch 4 --eval-samples 8 --eval-every 5 --layers 1 --embd 16 --heads 2 --sort-len 4"
#define LIMIT "timeout -s KILL 60 "

static void sleep_ms(long ms) { nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000}, NULL); }

/* Entries of DIR whose name ends with `suffix`. */
static int count_ending(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  const size_t ls = strlen(suffix);
  struct dirent *e;
  while ((e = readdir(d))) {
    const size_t l = strlen(e->d_name);
    if (l >= ls && !strcmp(e->d_name + l - ls, suffix)) n++;
  }
  closedir(d);
  return n;
}

/* ------------------------------------------------------ a program run -- */

typedef struct {
  pid_t pid;
  char err[4400]; /* its stderr, in a file */
} proc;

/* `sh -c "exec CMD"` with stdout to /dev/null and stderr to a file in dir. */
static proc proc_start(const char *dir, const char *cmd) {
  static int count;
  proc p;
  snprintf(p.err, sizeof p.err, "%s/stderr-%d.txt", dir, count++);
  char line[8400];
  snprintf(line, sizeof line, "exec %s", cmd);
  fflush(NULL);
  p.pid = fork();
  assert_true(p.pid >= 0);
  if (p.pid == 0) {
    const int out = open("/dev/null", O_WRONLY), err = open(p.err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, 1);
    dup2(err, 2);
    execl("/bin/sh", "sh", "-c", line, (char *)NULL);
    _exit(127);
  }
  return p;
}

/* Its exit status (128 + signal); fails the test after `secs`, killing it. */
static int proc_end(const proc *p, int secs) {
  const time_t deadline = time(NULL) + secs;
  int st;
  for (;;) {
    const pid_t w = waitpid(p->pid, &st, WNOHANG);
    if (w == p->pid) break;
    if (time(NULL) > deadline) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, &st, 0);
      char *e = hl_read_file(p->err, NULL);
      fail_msg("PID %ld did not end within %d s; stderr: %s", (long)p->pid, secs, e ? e : "");
    }
    sleep_ms(5);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Waits until PATH holds at least `lines` lines, the process still under way. */
static void wait_for_lines(const proc *p, const char *path, int lines) {
  const time_t deadline = time(NULL) + 60;
  for (;;) {
    char *t = hl_read_file(path, NULL);
    const int n = t ? hl_count_lines(t) : 0;
    free(t);
    if (n >= lines) return;
    int st;
    if (waitpid(p->pid, &st, WNOHANG) == p->pid) fail_msg("PID %ld ended (status %d) before %s had %d lines", (long)p->pid, st, path, lines);
    if (time(NULL) > deadline) fail_msg("%s: not %d lines within 60 s", path, lines);
    sleep_ms(10);
  }
}

/* ----------------------------------------------------------- stdout -- */

static void stdout_fails(const char *cmd, const char *redirect, const char *why) {
  tried();
  hl_run_result r = hl_run(LIMIT "%s %s", cmd, redirect);
  if (r.status != 1 || !hl_has_line(r.err, "cannot write to stdout", why))
    fail_msg("%s %s: exit %d, stderr \"%s\" (want 1 and a line naming stdout: %s)", cmd, redirect, r.status, r.err, why);
  hl_run_free(&r);
  held();
}

static void test_stdout_full_or_closed(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  char cmds[5][8192];
  snprintf(cmds[0], sizeof cmds[0], "%s --list-params", train());
  snprintf(cmds[1], sizeof cmds[1], "%s gemm --device cpu --list", bench());
  snprintf(cmds[2], sizeof cmds[2], "%s footprint --device cpu --list", bench());
  snprintf(cmds[3], sizeof cmds[3], "%s --device cpu", hl_test_prog("autocast-nested")); /* the examples' stdout */
  snprintf(cmds[4], sizeof cmds[4], "%s all --device cpu --quick --out %s", numerics(), dir);
  for (int i = 0; i < 5; i++) {
    stdout_fails(cmds[i], "> /dev/full", strerror(ENOSPC));
    stdout_fails(cmds[i], ">&-", strerror(EBADF));
  }
  /* with stdout closed, no CSV took descriptor 1: every table is a table, no printed line in it */
  tried();
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  int tables = 0;
  while ((e = readdir(d))) {
    const size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 4, ".csv")) continue;
    hl_table *t = hl_table_read(hl_path(dir, e->d_name));
    if (!t) fail_msg("%s is not a whole table after a run with stdout closed", e->d_name);
    hl_table_free(t);
    tables++;
  }
  closedir(d);
  assert_true(tables > 0);
  held();
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------------ pipes -- */

static void test_pipe_closed_early(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  tried();
  hl_run_result r = hl_run(LIMIT "%s all --device cpu --quick --out %s | head -1", numerics(), dir);
  hl_run_free(&r);
  const int locks = count_ending(dir, ".lock");
  if (locks != 0) fail_msg("halflab-numerics all | head -1 left %d lock files", locks);
  assert_int_equal(count_ending(dir, ".tmp"), 0);
  held();
  hl_rmtree(dir);
  free(dir);
}

/* ---------------------------------------------------------- signals -- */

/* A long run ended by sig once its log has rows: as SIGTERM ends it. */
static void train_ended_by(int sig) {
  char *dir = hl_tmpdir(), cmd[8192];
  tried();
  snprintf(cmd, sizeof cmd, "%s " TINY " --steps 100000 --name sig --checkpoint %s/run.ckpt --out %s", train(), dir, dir);
  proc p = proc_start(dir, cmd);
  wait_for_lines(&p, hl_path(dir, "train_sig_fp32_steps.csv.inprogress"), 12);
  assert_int_equal(kill(p.pid, sig), 0);
  const int status = proc_end(&p, 60);
  char *err = hl_read_file(p.err, NULL);
  if (status != 128 + sig) fail_msg("signal %d: exit %d (want %d); stderr %s", sig, status, 128 + sig, err);
  assert_true(hl_has_line(err, "stopped by signal", NULL));
  free(err);
  assert_true(hl_file_exists(hl_path(dir, "run.ckpt")));
  assert_true(hl_file_exists(hl_path(dir, "train_sig_fp32_steps.csv.interrupted")));
  hl_table *t = hl_table_read(hl_path(dir, "train_sig_fp32_summary.csv.interrupted"));
  assert_non_null(t);
  assert_string_equal(hl_table_get(t, 0, "status"), "interrupted");
  hl_table_free(t);
  assert_int_equal(count_ending(dir, ".inprogress"), 0);
  assert_int_equal(count_ending(dir, ".lock"), 0);
  assert_int_equal(count_ending(dir, ".tmp"), 0);
  held();
  hl_rmtree(dir);
  free(dir);
}

static void test_train_hangup_and_pipe(void **state) {
  (void)state;
  train_ended_by(SIGHUP);
  train_ended_by(SIGPIPE);
}

/* ---------------------------------------------------------- one line -- */

/* CMD's stderr, as the messages of a SOCK_SEQPACKET socket: one per
 * write(2). Returns how many; each must be one whole line. */
static int stderr_writes(const char *cmd, char *text, size_t len) {
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(sv[0]);
    const int out = open("/dev/null", O_WRONLY);
    dup2(out, 1);
    dup2(sv[1], 2);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  close(sv[1]);
  int messages = 0;
  size_t n = 0;
  char msg[65536];
  ssize_t got;
  while ((got = recv(sv[0], msg, sizeof msg, 0)) > 0) {
    messages++;
    if (n + (size_t)got + 1 < len) {
      memcpy(text + n, msg, (size_t)got);
      n += (size_t)got;
    }
    if (msg[got - 1] != '\n' || memchr(msg, '\n', (size_t)got - 1))
      fail_msg("%s: a write of stderr that is not one line: \"%.*s\"", cmd, (int)got, msg);
  }
  text[n] = '\0';
  close(sv[0]);
  int st;
  waitpid(pid, &st, 0);
  return messages;
}

static void test_one_write_per_line(void **state) {
  (void)state;
  char cmds[3][8192], text[65536];
  snprintf(cmds[0], sizeof cmds[0], "%s --steps 0x", train());
  snprintf(cmds[1], sizeof cmds[1], "%s gemm --device cpu --sizes 64,x", bench());
  snprintf(cmds[2], sizeof cmds[2], "env HALFLAB_BLAS_LIBRARY=/nonexistent/libopenblas.so.0 %s " TINY " --steps 0", train());
  for (int i = 0; i < 3; i++) {
    tried();
    const int writes = stderr_writes(cmds[i], text, sizeof text);
    if (writes < 1 || hl_count_lines(text) != writes) fail_msg("%s: %d writes for the lines \"%s\"", cmds[i], writes, text);
    held();
  }
}

/* ------------------------------------------------------------ fatal -- */

static void ask_for_the_blas(void) { (void)hl_blas_info_get(); }

static void blas_fails_to_load(void) {
  alarm(10); /* a hang ends the child by SIGALRM: status 142 */
  setenv("HALFLAB_BLAS_LIBRARY", "/nonexistent/libopenblas.so.0", 1);
  atexit(ask_for_the_blas); /* as the run's summary does (its metadata names the BLAS) */
  (void)hl_blas();
}

static void second_fatal(void) { hl_fatal("the exit handler failed too"); }

static void fatal_in_exit_handler(void) {
  alarm(10);
  atexit(second_fatal);
  hl_fatal("the first failure");
}

static char half_written_[4200];

static void fatal_while_writing(void) {
  hl_atomic_file a;
  if (!hl_atomic_open(&a, half_written_)) _exit(3);
  fputs("half a table\n", a.f);
  fflush(a.f);
  hl_fatal("a failure while %s is written", half_written_);
}

static void test_fatal_paths(void **state) {
  (void)state;
  char err[8192];
  tried();
  int status = hl_child_stderr(blas_fails_to_load, "faults", err, sizeof err);
  if (status != 1 || !hl_has_line(err, "cannot load the BLAS", NULL))
    fail_msg("a BLAS that fails to load: status %d (want 1), stderr \"%s\"", status, err);
  held();
  tried();
  status = hl_child_stderr(fatal_in_exit_handler, "faults", err, sizeof err);
  if (status != 1 || hl_count_lines(err) != 2 || !hl_has_line(err, "exit handler failed", NULL))
    fail_msg("a fatal in an exit handler: status %d (want 1), stderr \"%s\"", status, err);
  held();
  /* a fatal while a file is written: its PATH.tmp goes */
  char *dir = hl_tmpdir();
  tried();
  snprintf(half_written_, sizeof half_written_, "%s/table.csv", dir);
  status = hl_child_stderr(fatal_while_writing, "faults", err, sizeof err);
  if (status != 1 || count_ending(dir, ".tmp") != 0 || count_ending(dir, ".csv") != 0)
    fail_msg("a fatal while writing: status %d (want 1), %d .tmp left; stderr \"%s\"", status, count_ending(dir, ".tmp"), err);
  held();
  /* a run whose BLAS cannot load: its files and locks go */
  tried();
  hl_run_result r = hl_run(LIMIT "env HALFLAB_BLAS_LIBRARY=/nonexistent/libopenblas.so.0 %s " TINY
                                 " --steps 3 --checkpoint %s/c.ckpt --out %s", train(), dir, dir);
  if (r.status != 1 || hl_count_lines(r.err) != 1) fail_msg("exit %d, stderr \"%s\" (want 1, one line)", r.status, r.err);
  hl_run_free(&r);
  assert_int_equal(count_ending(dir, ".lock"), 0);
  assert_int_equal(count_ending(dir, ".inprogress"), 0);
  assert_int_equal(count_ending(dir, ".tmp"), 0);
  held();
  hl_rmtree(dir);
  free(dir);
}

/* -------------------------------------------------------- lock wait -- */

static void test_summary_lock_wait(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), e[1024], cmd[8192], holder[64];
  hl_out_lock *mine = hl_out_lock_take(dir, "train_summary.csv", e, sizeof e);
  assert_non_null(mine);
  snprintf(holder, sizeof holder, "held by PID %ld", (long)getpid());

  /* bounded: the run gives up, its files failed */
  tried();
  snprintf(cmd, sizeof cmd, "env HALFLAB_LOCK_WAIT_SECONDS=1 %s " TINY " --steps 2 --name bounded --out %s", train(), dir);
  proc p = proc_start(dir, cmd);
  int status = proc_end(&p, 30);
  char *err = hl_read_file(p.err, NULL);
  if (status != 1 || !hl_has_line(err, "waiting for", holder) || !hl_has_line(err, "gave up", holder))
    fail_msg("a wait of 1 s: exit %d (want 1), stderr \"%s\"", status, err);
  free(err);
  assert_true(hl_file_exists(hl_path(dir, "train_bounded_fp32_steps.csv.failed")));
  assert_int_equal(count_ending(dir, ".inprogress"), 0);
  assert_int_equal(count_ending(dir, ".lock"), 1); /* this test's own */
  held();

  /* a signal during the wait: an interrupted run */
  tried();
  snprintf(cmd, sizeof cmd, "env HALFLAB_LOCK_WAIT_SECONDS=120 %s " TINY " --steps 2 --name signalled --out %s", train(), dir);
  p = proc_start(dir, cmd);
  const time_t deadline = time(NULL) + 60;
  while (!hl_waits_for_a_lock((long)p.pid)) {
    if (time(NULL) > deadline) fail_msg("the run did not wait for train_summary.csv within 60 s");
    sleep_ms(5);
  }
  assert_int_equal(kill(p.pid, SIGTERM), 0);
  status = proc_end(&p, 10);
  err = hl_read_file(p.err, NULL);
  if (status != 128 + SIGTERM || !hl_has_line(err, "waiting for", holder))
    fail_msg("SIGTERM during the wait: exit %d (want 143), stderr \"%s\"", status, err);
  free(err);
  assert_true(hl_file_exists(hl_path(dir, "train_signalled_fp32_steps.csv.interrupted")));
  hl_table *t = hl_table_read(hl_path(dir, "train_signalled_fp32_summary.csv.interrupted"));
  assert_non_null(t);
  assert_string_equal(hl_table_get(t, 0, "status"), "interrupted");
  hl_table_free(t);
  assert_int_equal(count_ending(dir, ".inprogress"), 0);
  assert_int_equal(count_ending(dir, ".lock"), 1);
  held();
  hl_out_lock_release(mine);
  hl_rmtree(dir);
  free(dir);
}

/* ----------------------------------------------------------- export -- */

static void test_export_batches(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  /* an absurd size: refused before anything is made (timeout: a regression generates instead) */
  tried();
  hl_expect_refused(dir, 2, "--export-batches", LIMIT "%s " TINY " --steps 0 --export-batches %s/b.bin --export-steps 100000000",
                    train(), dir);
  held();

  /* more than the file system has free, where that is less than the size limit */
  struct statvfs fs;
  assert_int_equal(statvfs(dir, &fs), 0);
  const double free_bytes = (double)fs.f_bavail * (double)fs.f_frsize;
  hl_run_ok(LIMIT "%s " TINY " --steps 0 --export-batches %s/one.bin --export-steps 1", train(), dir);
  hl_run_ok(LIMIT "%s " TINY " --steps 0 --export-batches %s/two.bin --export-steps 2", train(), dir);
  struct stat one, two;
  assert_int_equal(stat(hl_path(dir, "one.bin"), &one), 0);
  assert_int_equal(stat(hl_path(dir, "two.bin"), &two), 0);
  unlink(hl_path(dir, "one.bin"));
  unlink(hl_path(dir, "two.bin"));
  const double per_step = (double)(two.st_size - one.st_size);
  const double steps = free_bytes / per_step + 1000;
  if (free_bytes < 15.0 * (1ull << 30) && steps < 1e8) {
    tried();
    hl_expect_refused(dir, 2, "free", LIMIT "%s " TINY " --steps 0 --export-batches %s/b.bin --export-steps %.0f", train(),
                      dir, steps);
    held();
  } else {
    printf("faults: signals: %.1f GiB free in %s: the free-space case needs less than 15 GiB, skipped\n",
           free_bytes / (1ull << 30), dir);
  }

  /* SIGTERM while the batches are written: no lock, no half file */
  tried();
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s " TINY " --steps 0 --export-batches %s/big.bin --export-steps 1000000", train(), dir);
  proc p = proc_start(dir, cmd);
  const time_t deadline = time(NULL) + 60;
  while (!hl_file_exists(hl_path(dir, "big.bin.tmp"))) {
    if (time(NULL) > deadline) fail_msg("no big.bin.tmp within 60 s");
    sleep_ms(2);
  }
  assert_int_equal(kill(p.pid, SIGTERM), 0);
  assert_int_equal(proc_end(&p, 30), 128 + SIGTERM);
  assert_int_equal(count_ending(dir, ".tmp"), 0);
  assert_int_equal(count_ending(dir, ".lock"), 0);
  assert_false(hl_file_exists(hl_path(dir, "big.bin")));
  held();

  /* a full disk: the first failed write ends it; a run that generated everything would pass 3 s of CPU */
  tried();
  hl_run_result r = hl_run("ulimit -t 3; HL_FAIL_UNDER=%s HL_FAIL_CALL=write HL_FAIL_AT=1 HL_FAIL_STICKY=1 LD_PRELOAD=%s "
                           "%s " TINY " --steps 0 --export-batches %s/b.bin --export-steps 1000000",
                           dir, shim_, train(), dir);
  if (r.status != 1 || hl_count_lines(r.err) != 1 || !hl_has_line(r.err, "b.bin", strerror(ENOSPC)))
    fail_msg("export on a full disk: exit %d (want 1), stderr \"%s\"", r.status, r.err);
  hl_run_free(&r);
  assert_false(hl_file_exists(hl_path(dir, "b.bin")));
  assert_false(hl_file_exists(hl_path(dir, "b.bin.tmp")));
  held();
  hl_rmtree(dir);
  free(dir);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FAIL_IO_SHIM.so\n", argv[0]);
    return 2;
  }
  shim_ = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stdout_full_or_closed), cmocka_unit_test(test_pipe_closed_early),
      cmocka_unit_test(test_train_hangup_and_pipe), cmocka_unit_test(test_one_write_per_line),
      cmocka_unit_test(test_fatal_paths),           cmocka_unit_test(test_summary_lock_wait),
      cmocka_unit_test(test_export_batches),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  printf("faults: signals: %d cases tried, %d held\n", tried_, held_);
  return failed;
}
