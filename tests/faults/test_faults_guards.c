/* test_faults_guards.c — suite faults: the output guards tried as a
 * hostile user would, in the three programs.
 *
 *   unwritable outputs  every output path option (train: --out, --checkpoint,
 *                       --save-init, --export-batches, --dump-grads; bench
 *                       and numerics: --out) aimed at /proc (root passes
 *                       access() there), at a path under a regular file, and
 *                       at a read-only folder (as a user the permission bits
 *                       stop: nobody, through setpriv, when the test runs as
 *                       root): exit 2, one line, and the folder tree the
 *                       same before and after, bit for bit of its listing;
 *   inputs              --text, --init-weights and --resume given a FIFO, a
 *                       device and a folder: exit 2 without blocking (every
 *                       command runs under timeout(1), so a regression fails
 *                       instead of hanging);
 *   concurrent runs     a second halflab-train run into the same --out,
 *                       --name and --mode while the first is under way: exit 2
 *                       naming the first's PID, the first unharmed; two runs of
 *                       other names finishing at once: both rows in
 *                       train_summary.csv; two halflab-numerics and two
 *                       halflab-bench runs writing the same table: the second
 *                       refused naming the first's PID, one writing another
 *                       table unhindered;
 *   stale locks         a run killed with kill -9 leaves its lock file, which
 *                       holds nothing: the next run goes ahead;
 *   clean-up            no lock file left after a run ends, by exit or by
 *                       SIGINT / SIGTERM.
 *
 * How the first run is kept under way, without a hook in the programs:
 * halflab-train is held at its end by this test holding the lock of
 * train_summary.csv (its upsert waits for it, seen in /proc/locks);
 * halflab-numerics and halflab-bench print more than a pipe of one page
 * plus stdio's buffer hold, into a pipe this test does not read until it is
 * done with them.
 *
 * Prints "faults: guards: N cases tried, N held". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

static int tried_, held_;

/* A case starts, and ends held when every assertion in between passed
 * (a failed one ends the test function there). */
static void tried(void) { tried_++; }
static void held(void) { held_++; }

static const char *train(void) { return hl_test_prog("halflab-train"); }
static const char *bench(void) { return hl_test_prog("halflab-bench"); }
static const char *numerics(void) { return hl_test_prog("halflab-numerics"); }

/* A training run of a few milliseconds */
#define TINY "--device cpu --batch 4 --eval-samples 8 --eval-every 5 --layers 1 --embd 16 --heads 2 --sort-len 4"
/* Commands that should end at once get this long before timeout(1) kills them */
#define LIMIT "timeout -s KILL 60 "

static void sleep_ms(long ms) { nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000}, NULL); }

/* ----------------------------------------------------- folder trees -- */

static char **entries_;
static int n_entries_, cap_entries_;
static size_t root_len_;

static int take_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)flag, (void)ftw;
  if (n_entries_ == cap_entries_) {
    cap_entries_ = cap_entries_ ? 2 * cap_entries_ : 64;
    entries_ = realloc(entries_, sizeof *entries_ * (size_t)cap_entries_);
    assert_non_null(entries_);
  }
  char line[4400];
  if (S_ISDIR(st->st_mode)) /* a folder's time changes with the probe file made and removed in it: not counted */
    snprintf(line, sizeof line, "%s/ mode %o", path + root_len_, (unsigned)st->st_mode);
  else
    snprintf(line, sizeof line, "%s mode %o size %lld mtime %lld.%09ld", path + root_len_, (unsigned)st->st_mode,
             (long long)st->st_size, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
  entries_[n_entries_++] = strdup(line);
  return 0;
}

static int by_text(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every entry under ROOT (ROOT itself included) with its mode, and a
 * file's size and modification time, sorted, as one text: equal texts,
 * nothing made, removed or written. */
static char *tree(const char *root) {
  n_entries_ = 0;
  root_len_ = strlen(root);
  assert_int_equal(nftw(root, take_entry, 16, FTW_PHYS), 0);
  qsort(entries_, (size_t)n_entries_, sizeof *entries_, by_text);
  size_t len = 1;
  for (int i = 0; i < n_entries_; i++) len += strlen(entries_[i]) + 1;
  char *text = malloc(len), *p = text;
  assert_non_null(text);
  for (int i = 0; i < n_entries_; i++) {
    p += sprintf(p, "%s\n", entries_[i]);
    free(entries_[i]);
  }
  *p = '\0';
  return text;
}

/* CMD (printf-style, run by sh) must exit 2 with one line on stderr that
 * holds `words`, nothing on stdout, and leave the tree under ROOT as it was. */
static void refused(const char *root, const char *words, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void refused(const char *root, const char *words, const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  tried();
  char *before = tree(root);
  hl_run_result r = hl_run(LIMIT "%s", cmd);
  if (r.status != 2) fail_msg("%s: exit %d (want 2); stderr: %s", cmd, r.status, r.err);
  if (hl_count_lines(r.err) != 1 || !strstr(r.err, words))
    fail_msg("%s: stderr \"%s\" (want one line with \"%s\")", cmd, r.err, words);
  if (*r.out) fail_msg("%s: stdout \"%s\" (want nothing)", cmd, r.out);
  char *after = tree(root);
  if (strcmp(before, after)) fail_msg("%s: the folder tree changed:\nbefore\n%safter\n%s", cmd, before, after);
  free(before), free(after);
  hl_run_free(&r);
  held();
}

/* Lock files left in DIR (".NAME.lock") */
static int lock_files(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    const size_t len = strlen(e->d_name);
    n += e->d_name[0] == '.' && len > 6 && !strcmp(e->d_name + len - 5, ".lock");
  }
  closedir(d);
  return n;
}

/* ------------------------------------------------- processes under way -- */

typedef struct {
  pid_t pid;
  int out;        /* the read end of its stdout (-1: stdout is /dev/null) */
  char err[4200]; /* its stderr, a file */
} proc;

/* Starts `exec CMD` in sh (so the PID is the program's). held_stdout: its
 * stdout is a pipe of one page that nobody reads until proc_end. */
static proc proc_start(const char *scratch, bool held_stdout, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static proc proc_start(const char *scratch, bool held_stdout, const char *fmt, ...) {
  static int count;
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "exec ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd + 5, sizeof cmd - 5, fmt, ap);
  va_end(ap);
  proc p = {.out = -1};
  snprintf(p.err, sizeof p.err, "%s/stderr-%d.txt", scratch, count++);
  int pipefd[2] = {-1, -1};
  if (held_stdout) {
    assert_int_equal(pipe(pipefd), 0);
    assert_true(fcntl(pipefd[1], F_SETPIPE_SZ, 4096) >= 4096);
  }
  fflush(NULL);
  p.pid = fork();
  assert_true(p.pid >= 0);
  if (p.pid == 0) {
    const int out = held_stdout ? pipefd[1] : open("/dev/null", O_WRONLY);
    const int err = open(p.err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, 1);
    dup2(err, 2);
    if (held_stdout) close(pipefd[0]);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  if (held_stdout) {
    close(pipefd[1]);
    p.out = pipefd[0];
  }
  return p;
}

/* Reads its stdout to the end and waits for it: its exit status (128 +
 * signal when one ended it); fails after `secs`. */
static int proc_end(proc *p, int secs) {
  const time_t deadline = time(NULL) + secs;
  if (p->out >= 0) {
    fcntl(p->out, F_SETFL, O_NONBLOCK);
    char buf[65536];
    for (;;) {
      const ssize_t n = read(p->out, buf, sizeof buf);
      if (n == 0) break;
      if (n < 0 && errno != EAGAIN && errno != EINTR) fail_msg("reading the stdout of PID %ld: %s", (long)p->pid, strerror(errno));
      if (n < 0) sleep_ms(5);
      if (time(NULL) > deadline) fail_msg("PID %ld did not end within %d s", (long)p->pid, secs);
    }
    close(p->out);
    p->out = -1;
  }
  int st;
  for (;;) {
    const pid_t w = waitpid(p->pid, &st, WNOHANG);
    if (w == p->pid) break;
    assert_int_equal(w, 0);
    if (time(NULL) > deadline) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, &st, 0);
      fail_msg("PID %ld did not end within %d s", (long)p->pid, secs);
    }
    sleep_ms(5);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *proc_stderr(const proc *p) {
  char *t = hl_read_file(p->err, NULL);
  assert_non_null(t);
  return t;
}

/* The PID written in lock file PATH (0: none yet). The test never holds
 * these locks itself, so reading the file takes nothing from anyone. */
static long lock_holder(const char *path) {
  char *t = hl_read_file(path, NULL);
  const long pid = t ? strtol(t, NULL, 10) : 0;
  free(t);
  return pid;
}

/* Waits until `ok` holds for p, up to `secs`; fails naming `what`, with
 * its stderr, when p ended before or the time ran out. */
static void wait_until(proc *p, bool (*ok)(const proc *, const void *), const void *arg, int secs, const char *what) {
  const time_t deadline = time(NULL) + secs;
  while (!ok(p, arg)) {
    int st;
    if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
      char *e = proc_stderr(p);
      fail_msg("PID %ld ended (status %d) before %s; stderr: %s", (long)p->pid, st, what, e);
    }
    if (time(NULL) > deadline) fail_msg("PID %ld: no %s within %d s", (long)p->pid, what, secs);
    sleep_ms(5);
  }
}

static bool is_waiting(const proc *p, const void *arg) {
  (void)arg;
  return hl_waits_for_a_lock((long)p->pid);
}

static bool holds(const proc *p, const void *lock_path) { return lock_holder(lock_path) == (long)p->pid; }

/* ------------------------------------------------ unwritable outputs -- */

/* Targets that refuse writing to everyone: /proc (root included) and a
 * path under a regular file; and, where a user's permission bits count,
 * a read-only folder. */
typedef struct {
  const char *what;
  char folder[4200]; /* a folder that does not exist and cannot be made */
  char existing[4200]; /* an existing folder nothing can be made in ("" when none) */
  char file[4200];   /* a file that cannot be written */
  const char *runner; /* what the command line starts with (setpriv for nobody) */
} target;

static int n_targets(const char *dir, target t[3]) {
  hl_write_file(hl_path(dir, "regular"), "x", 1);
  t[0] = (target){.what = "/proc", .runner = ""};
  snprintf(t[0].folder, sizeof t[0].folder, "/proc/halflab-faults/out");
  snprintf(t[0].existing, sizeof t[0].existing, "/proc");
  snprintf(t[0].file, sizeof t[0].file, "/proc/halflab-faults.bin");
  t[1] = (target){.what = "under a regular file", .runner = ""};
  snprintf(t[1].folder, sizeof t[1].folder, "%s/regular/out", dir);
  snprintf(t[1].file, sizeof t[1].file, "%s/regular/x.bin", dir);
  /* the read-only folder: as root, run the program as nobody where that works */
  char ro[4096];
  snprintf(ro, sizeof ro, "%s/read-only", dir);
  assert_int_equal(mkdir(ro, 0555), 0);
  assert_int_equal(chmod(ro, 0555), 0);
  const char *runner = "";
  if (geteuid() == 0) {
    chmod(dir, 0777); /* nobody must reach the folder, and may make files in it but for read-only/ */
    runner = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
    hl_run_result r = hl_run("%s '%s' --version && %s test -w '%s'", runner, train(), runner, dir);
    const bool works = r.status == 0;
    hl_run_free(&r);
    if (!works) {
      print_message("faults: guards: the read-only folder cases are not tried: running as root, and nobody "
                    "(setpriv) cannot run %s or write in %s\n", train(), dir);
      return 2;
    }
  }
  t[2] = (target){.what = "read-only folder", .runner = runner};
  snprintf(t[2].folder, sizeof t[2].folder, "%s/out", ro);
  snprintf(t[2].existing, sizeof t[2].existing, "%s", ro);
  snprintf(t[2].file, sizeof t[2].file, "%s/x.bin", ro);
  return 3;
}

static void test_train_outputs_unwritable(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  target t[3];
  const int n = n_targets(dir, t);
  char ok_out[4200];
  snprintf(ok_out, sizeof ok_out, "%s/new/out", dir); /* a new folder, which a refused run must not make */
  for (int i = 0; i < n; i++) {
    const char *run = t[i].runner, *prog = train();
    refused(dir, "--out", "%s%s " TINY " --steps 2 --out %s", run, prog, t[i].folder);
    if (t[i].existing[0]) refused(dir, "--out", "%s%s " TINY " --steps 2 --out %s", run, prog, t[i].existing);
    refused(dir, "--checkpoint", "%s%s " TINY " --steps 2 --checkpoint %s --out %s", run, prog, t[i].file, ok_out);
    refused(dir, "--save-init", "%s%s " TINY " --steps 0 --save-init %s", run, prog, t[i].file);
    /* the case found by hand: a good --save-init was written before a bad --export-batches was refused */
    refused(dir, "--export-batches", "%s%s " TINY " --steps 0 --save-init %s/w.bin --export-batches %s", run, prog,
            dir, t[i].file);
    refused(dir, "--dump-grads", "%s%s " TINY " --steps 1 --dump-grads %s --out %s", run, prog, t[i].file, ok_out);
  }
  /* a refused --checkpoint and a good one, with --out a folder to be made: nothing made, then all of it */
  tried();
  hl_run_result r = hl_run_ok(LIMIT "%s " TINY " --steps 2 --checkpoint %s/c.ckpt --out %s", train(), ok_out, ok_out);
  hl_run_free(&r);
  assert_true(hl_file_exists(hl_path(ok_out, "c.ckpt")));
  assert_int_equal(lock_files(ok_out), 0);
  held();
  hl_rmtree(dir);
  free(dir);
}

static void test_bench_numerics_outputs_unwritable(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  target t[3];
  const int n = n_targets(dir, t);
  for (int i = 0; i < n; i++) {
    const char *run = t[i].runner;
    refused(dir, "--out", "%s%s gemm --device cpu --quick --sizes 16 --reps 1 --out %s", run, bench(), t[i].folder);
    refused(dir, "--out", "%s%s overflow --device cpu --out %s", run, numerics(), t[i].folder);
    if (t[i].existing[0]) {
      refused(dir, "--out", "%s%s bandwidth --device cpu --sizes 1MiB --reps 1 --out %s", run, bench(), t[i].existing);
      refused(dir, "--out", "%s%s all --device cpu --quick --out %s", run, numerics(), t[i].existing);
    }
  }
  hl_rmtree(dir);
  free(dir);
}

/* ---------------------------------------------------------- inputs -- */

static void test_inputs_not_regular_files(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  char fifo[4200], folder[4200];
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  snprintf(folder, sizeof folder, "%s/folder", dir);
  assert_int_equal(mkfifo(fifo, 0644), 0);
  assert_int_equal(mkdir(folder, 0755), 0);
  const struct {
    const char *path, *words;
  } inputs[] = {{fifo, "is a FIFO (named pipe)"}, {"/dev/null", "is a character device"}, {folder, "is a folder"}};
  static const struct {
    const char *option, *args;
  } options[] = {{"--text", "--device cpu --batch 4 --eval-samples 8 --layers 1 --embd 16 --heads 2 --seq 16"},
                 {"--init-weights", TINY},
                 {"--resume", TINY}};
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
    for (size_t k = 0; k < sizeof options / sizeof options[0]; k++) {
      char words[4400];
      snprintf(words, sizeof words, "%s: '%s' %s, not a regular file", options[k].option, inputs[i].path,
               inputs[i].words);
      refused(dir, words, "%s %s %s %s --steps 2 --out %s/out", train(), options[k].args, options[k].option,
              inputs[i].path, dir);
    }
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------ concurrency -- */

/* Rows of train_summary.csv for run NAME in fp32 */
static int summary_rows(const char *dir, const char *name) {
  hl_table *t = hl_table_read(hl_path(dir, "train_summary.csv"));
  assert_non_null(t);
  int n = 0;
  for (int r = 0; r < t->nrows; r++)
    n += !strcmp(hl_table_get(t, r, "name"), name) && !strcmp(hl_table_get(t, r, "mode"), "fp32");
  hl_table_free(t);
  return n;
}

static void test_train_concurrent(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), *scratch = hl_tmpdir(), err[4400];
  /* held at its end: this test holds train_summary.csv's lock */
  hl_out_lock *summary = hl_out_lock_take(dir, "train_summary.csv", err, sizeof err);
  assert_non_null(summary);
  proc a = proc_start(scratch, false, "%s " TINY " --steps 3 --name a --out %s", train(), dir);
  wait_until(&a, is_waiting, NULL, 120, "wait for train_summary.csv's lock");

  /* a second run of the same name and mode into the same folder, while the first is under way */
  char words[128];
  snprintf(words, sizeof words, "train_a_fp32 is being written by PID %ld", (long)a.pid);
  tried();
  hl_run_result r = hl_run(LIMIT "%s " TINY " --steps 2 --name a --out %s", train(), dir);
  if (r.status != 2 || hl_count_lines(r.err) != 1 || !strstr(r.err, words))
    fail_msg("second run of a: exit %d, stderr \"%s\" (want 2 and \"%s\")", r.status, r.err, words);
  hl_run_free(&r);
  held();
  /* the same name in another mode is another run */
  tried();
  proc a16 = proc_start(scratch, false, "%s " TINY " --steps 3 --name a --mode amp-bf16 --out %s", train(), dir);
  wait_until(&a16, is_waiting, NULL, 120, "wait for train_summary.csv's lock");
  held();

  /* another name finishing at the same time: both rows kept */
  tried();
  proc b = proc_start(scratch, false, "%s " TINY " --steps 3 --name b --out %s", train(), dir);
  wait_until(&b, is_waiting, NULL, 120, "wait for train_summary.csv's lock");
  hl_out_lock_release(summary);
  assert_int_equal(proc_end(&a, 120), 0);
  assert_int_equal(proc_end(&a16, 120), 0);
  assert_int_equal(proc_end(&b, 120), 0);
  assert_int_equal(summary_rows(dir, "a"), 1);
  assert_int_equal(summary_rows(dir, "b"), 1);
  hl_table *t = hl_table_read(hl_path(dir, "train_summary.csv"));
  assert_int_equal(t->nrows, 3); /* a fp32, a amp-bf16, b fp32 */
  hl_table_free(t);
  t = hl_table_read(hl_path(dir, "train_a_fp32_steps.csv")); /* the refused run took nothing from the first's log */
  assert_non_null(t);
  assert_int_equal(t->nrows, 3);
  hl_table_free(t);
  assert_int_equal(lock_files(dir), 0);
  held();

  /* many at once, none held by the test: every row there */
  tried();
  proc many[4];
  for (int i = 0; i < 4; i++) many[i] = proc_start(scratch, false, "%s " TINY " --steps 2 --name m%d --out %s", train(), i, dir);
  for (int i = 0; i < 4; i++) assert_int_equal(proc_end(&many[i], 120), 0);
  for (int i = 0; i < 4; i++) {
    char name[8];
    snprintf(name, sizeof name, "m%d", i);
    assert_int_equal(summary_rows(dir, name), 1);
  }
  assert_int_equal(summary_rows(dir, "a"), 1);
  assert_int_equal(summary_rows(dir, "b"), 1);
  assert_int_equal(lock_files(dir), 0);
  held();
  hl_rmtree(dir), hl_rmtree(scratch);
  free(dir), free(scratch);
}

static void test_train_stale_lock(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), *scratch = hl_tmpdir(), err[4400];
  tried();
  hl_out_lock *summary = hl_out_lock_take(dir, "train_summary.csv", err, sizeof err);
  assert_non_null(summary);
  proc a = proc_start(scratch, false, "%s " TINY " --steps 3 --name a --out %s", train(), dir);
  wait_until(&a, is_waiting, NULL, 120, "wait for train_summary.csv's lock");
  assert_int_equal(kill(a.pid, SIGKILL), 0);
  assert_int_equal(proc_end(&a, 60), 128 + SIGKILL);
  hl_out_lock_release(summary);
  assert_true(hl_file_exists(hl_path(dir, ".train_a_fp32.lock"))); /* left behind, held by nobody */
  hl_run_result r = hl_run_ok(LIMIT "%s " TINY " --steps 3 --name a --out %s", train(), dir);
  hl_run_free(&r);
  assert_int_equal(summary_rows(dir, "a"), 1);
  assert_int_equal(lock_files(dir), 0);
  held();
  hl_rmtree(dir), hl_rmtree(scratch);
  free(dir), free(scratch);
}

/* More than a page of pipe and a page of stdio buffer on stdout: held
 * while that stdout is not read. */
static const char *many_gemm_sizes(void) {
  static char sizes[512];
  size_t k = 0;
  for (int s = 16; s <= 60; s += 2) k += (size_t)snprintf(sizes + k, sizeof sizes - k, "%s%d", k ? "," : "", s);
  return sizes;
}

/* FIRST (a command line whose stdout is held) holds the lock of TABLE in
 * DIR; SECOND, writing the same table, is refused naming FIRST's PID;
 * OTHER (NULL: none), writing other tables, is not; FIRST then completes
 * with TABLE written and no lock file left. */
static void one_table_at_a_time(const char *dir, const char *table, const char *first, const char *second,
                                const char *other) {
  char *scratch = hl_tmpdir(), lock[4400];
  snprintf(lock, sizeof lock, "%s/.%s.lock", dir, table);
  tried();
  proc p = proc_start(scratch, true, "%s", first);
  wait_until(&p, holds, lock, 120, "lock on the table");
  char words[256];
  snprintf(words, sizeof words, "%s/%s is being written by PID %ld", dir, table, (long)p.pid);
  hl_run_result r = hl_run(LIMIT "%s", second);
  if (r.status != 2 || hl_count_lines(r.err) != 1 || !strstr(r.err, words) || *r.out)
    fail_msg("%s: exit %d, stderr \"%s\" (want 2 and \"%s\")", second, r.status, r.err, words);
  hl_run_free(&r);
  if (other) {
    r = hl_run_ok(LIMIT "%s", other);
    hl_run_free(&r);
  }
  assert_int_equal(proc_end(&p, 120), 0);
  hl_table *t = hl_table_read(hl_path(dir, table));
  assert_non_null(t);
  assert_true(t->nrows > 0);
  hl_table_free(t);
  assert_int_equal(lock_files(dir), 0);
  held();
  hl_rmtree(scratch);
  free(scratch);
}

static void test_numerics_bench_concurrent(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  char first[8192], second[8192], other[8192];
  snprintf(first, sizeof first, "%s all --device cpu --quick --out %s", numerics(), dir);
  snprintf(second, sizeof second, "%s overflow --device cpu --out %s", numerics(), dir);
  snprintf(other, sizeof other, "%s gemm --device cpu --quick --sizes 16 --reps 1 --out %s", bench(), dir);
  one_table_at_a_time(dir, "overflow.csv", first, second, other);

  snprintf(first, sizeof first, "%s gemm --device cpu --quick --sizes %s --reps 1 --out %s", bench(), many_gemm_sizes(), dir);
  snprintf(second, sizeof second, "%s gemm --device cpu --quick --sizes 16 --reps 1 --out %s", bench(), dir);
  snprintf(other, sizeof other, "%s tour --device cpu --quick --out %s", numerics(), dir);
  one_table_at_a_time(dir, "gemm.csv", first, second, other);
  hl_rmtree(dir);
  free(dir);
}

/* A run held under way, then ended by SIG: no lock file left (SIGKILL:
 * left, and not held: the next run writes the same tables). */
static void ended_by(const char *dir, const char *cmd, const char *table, int sig) {
  char *scratch = hl_tmpdir(), lock[4400];
  snprintf(lock, sizeof lock, "%s/.%s.lock", dir, table);
  tried();
  proc p = proc_start(scratch, true, "%s", cmd);
  wait_until(&p, holds, lock, 120, "lock on the table");
  assert_int_equal(kill(p.pid, sig), 0);
  assert_int_equal(proc_end(&p, 60), 128 + sig);
  if (sig == SIGKILL) {
    assert_true(hl_file_exists(lock));
    hl_run_result r = hl_run(LIMIT "%s > /dev/null", cmd);
    if (r.status != 0) fail_msg("%s after a kill -9: exit %d, stderr %s", cmd, r.status, r.err);
    hl_run_free(&r);
  }
  assert_int_equal(lock_files(dir), 0);
  held();
  hl_rmtree(scratch);
  free(scratch);
}

static void test_numerics_bench_signals(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  char nx[8192], gemm[8192];
  snprintf(nx, sizeof nx, "%s all --device cpu --quick --out %s", numerics(), dir);
  snprintf(gemm, sizeof gemm, "%s gemm --device cpu --quick --sizes %s --reps 1 --out %s", bench(), many_gemm_sizes(), dir);
  const int sigs[3] = {SIGINT, SIGTERM, SIGKILL};
  for (int i = 0; i < 3; i++) {
    ended_by(dir, nx, "tour.csv", sigs[i]);
    ended_by(dir, gemm, "gemm.csv", sigs[i]);
  }
  hl_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_train_outputs_unwritable),
      cmocka_unit_test(test_bench_numerics_outputs_unwritable),
      cmocka_unit_test(test_inputs_not_regular_files),
      cmocka_unit_test(test_train_concurrent),
      cmocka_unit_test(test_train_stale_lock),
      cmocka_unit_test(test_numerics_bench_concurrent),
      cmocka_unit_test(test_numerics_bench_signals),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  printf("faults: guards: %d cases tried, %d held\n", tried_, held_);
  return failed;
}
