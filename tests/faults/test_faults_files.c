/* test_faults_files.c — suite faults: every write, fsync and rename a run
 * makes on its output folder, failed in turn (fail_io_shim.c, LD_PRELOAD),
 * with ENOSPC (a disk that fills: a short write, then the error, and every
 * later write failing too) and with EIO (that one call). A dry run counts the calls first. Each case
 * starts from a copy of a folder holding a completed run of the same
 * command, and must end with:
 *   - exit status 1 and one line on stderr, naming the file whose call
 *     failed (the shim reports which) and strerror of that errno;
 *   - no half line in any CSV of the folder, no NAME.tmp, no .inprogress
 *     file and no hidden .replaced link left;
 *   - halflab-train: the completed run's files (and train_summary.csv)
 *     byte-identical (a checkpoint the failed run saved before it failed
 *     may replace the earlier one, whole: --checkpoint is the last state
 *     saved), every new file of the run marked .failed, its summary
 *     (when the disk let it be written) with status failed, its log whole;
 *   - halflab-numerics, halflab-bench: each table the earlier one
 *     byte-identical or a whole new one (a table is their unit).
 * halflab-train takes every N (a run with --profile and --checkpoint, a run
 * resumed from a stopped one's checkpoint, --save-init and --export-batches
 * with --steps 0); numerics and bench a seeded
 * sample of each call's N, as the output says. Then a run that fails on its
 * own (a non-finite loss: --optimizer sgd --lr 1e30, --inject-nonfinite in
 * fp32) after a completed one in the same folder leaves that one's files
 * byte-identical.
 *
 * argv[1]: the shim (tests/faults/meson.build). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/hltest.h"

static const char *shim;
static int tried, held;

/* ------------------------------------------------------ folder prints -- */

typedef struct {
  char name[256];
  size_t size;
  uint32_t crc;
} file_print;

typedef struct {
  file_print f[64];
  int n;
} folder_print;

static void take_print(const char *dir, folder_print *p) {
  p->n = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    assert_true(p->n < 64);
    file_print *f = &p->f[p->n++];
    snprintf(f->name, sizeof f->name, "%s", e->d_name);
    char *data = hl_read_file(hl_path(dir, e->d_name), &f->size);
    f->crc = data ? hl_test_crc32(data, f->size) : 0;
    free(data);
  }
  closedir(d);
}

static const file_print *find_print(const folder_print *p, const char *name) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->f[i].name, name)) return &p->f[i];
  return NULL;
}

static bool ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* --------------------------------------------------------- scenarios -- */

typedef struct {
  const char *what;  /* for the output */
  bool train;        /* halflab-train's lifecycle applies */
  const char *setup; /* commands that make the template folder (DIR: it) */
  const char *run;   /* the command faulted (DIR: the case's folder) */
} scenario;

/* fmt with every "DIR" replaced by dir. */
static void expand(char *out, size_t len, const char *fmt, const char *dir) {
  size_t k = 0;
  for (const char *p = fmt; *p && k + 1 < len;) {
    if (!strncmp(p, "DIR", 3)) {
      k += (size_t)snprintf(out + k, len - k, "%s", dir);
      p += 3;
    } else {
      out[k++] = *p++;
    }
  }
  out[k < len ? k : len - 1] = '\0';
}

enum { CALL_WRITE, CALL_FSYNC, CALL_RENAME, CALLS };
static const char *const call_names[CALLS] = {"write", "fsync", "rename"};

static hl_run_result run_shimmed(const char *dir, const char *env, const char *cmd) {
  return hl_run("HL_FAIL_UNDER='%s' %s LD_PRELOAD='%s' %s", dir, env, shim, cmd);
}

/* A fresh copy of the template folder as the case's folder. */
static void fresh_copy(const char *template_dir, const char *dir) {
  hl_run_result r = hl_run("rm -rf '%s' && cp -a '%s' '%s'", dir, template_dir, dir);
  if (r.status != 0) fail_msg("copying %s: %s", template_dir, r.err);
  hl_run_free(&r);
}

/* What the run says on stderr when nothing fails (notices), line by line. */
static char *usual_stderr;

/* Lines of err that the run does not also print when nothing fails. */
static int new_lines(const char *err) {
  int n = 0;
  for (const char *p = err; *p;) {
    const char *eol = strchr(p, '\n');
    const size_t len = eol ? (size_t)(eol - p + 1) : strlen(p);
    bool usual = false;
    for (const char *q = usual_stderr ? usual_stderr : ""; *q;) {
      const char *qe = strchr(q, '\n');
      const size_t ql = qe ? (size_t)(qe - q + 1) : strlen(q);
      if (ql == len && !memcmp(p, q, len)) usual = true;
      q += ql;
    }
    n += !usual;
    p += len;
  }
  return n;
}

/* The calls of a run that succeeds, per kind. */
static void count_calls(const scenario *s, const char *template_dir, const char *dir, long n[CALLS]) {
  fresh_copy(template_dir, dir);
  char cmd[8192], env[4300], counts[4200];
  expand(cmd, sizeof cmd, s->run, dir);
  snprintf(counts, sizeof counts, "%s.counts", dir);
  snprintf(env, sizeof env, "HL_FAIL_COUNT_TO='%s'", counts);
  hl_run_result r = run_shimmed(dir, env, cmd);
  if (r.status != 0) fail_msg("%s: the dry run failed (exit %d): %s", s->what, r.status, r.err);
  free(usual_stderr);
  usual_stderr = strdup(r.err);
  hl_run_free(&r);
  char *text = hl_read_file(counts, NULL);
  assert_non_null(text);
  for (int k = 0; k < CALLS; k++) {
    const char *at = strstr(text, call_names[k]);
    assert_non_null(at);
    n[k] = strtol(at + strlen(call_names[k]), NULL, 10);
  }
  free(text);
  remove(counts);
  assert_true(n[CALL_WRITE] > 0 && n[CALL_FSYNC] > 0 && n[CALL_RENAME] > 0);
}

/* Whether a CSV file is whole: complete lines, readable as a halflab CSV. */
static bool csv_whole(const char *path, char *why, size_t len) {
  size_t n;
  char *data = hl_read_file(path, &n);
  const bool complete = data && n > 0 && data[n - 1] == '\n';
  free(data);
  if (!complete) {
    snprintf(why, len, "%s is empty or ends in half a line", path);
    return false;
  }
  hl_table *t = hl_table_read(path);
  if (!t) {
    snprintf(why, len, "%s does not read as a CSV", path);
    return false;
  }
  hl_table_free(t);
  return true;
}

/* A checkpoint written whole: its CRC-32 over everything before it, then the
 * end marker (docs/scaler.md). */
static bool checkpoint_whole(const char *path) {
  size_t n;
  unsigned char *data = (unsigned char *)hl_read_file(path, &n);
  bool ok = data && n > 12 && !memcmp(data + n - 8, "HLCKEND\n", 8);
  if (ok) {
    uint32_t crc;
    memcpy(&crc, data + n - 12, 4);
    ok = crc == hl_test_crc32(data, n - 12);
  }
  free(data);
  return ok;
}

/* The checks of a train run's new file: marked .failed; its summary says
 * failed; its log's steps run 1, 2, ... */
static bool failed_file_ok(const char *dir, const char *name, char *why, size_t len) {
  if (!ends_with(name, ".failed")) {
    snprintf(why, len, "%s: a new file of a failed run not marked .failed", name);
    return false;
  }
  if (!strstr(name, ".csv")) return true;
  hl_table *t = hl_table_read(hl_path(dir, name));
  if (!t) return false; /* csv_whole said why */
  bool ok = true;
  if (strstr(name, "_summary.csv") && (t->nrows != 1 || strcmp(hl_table_get(t, 0, "status"), "failed"))) {
    snprintf(why, len, "%s: status %s, not failed", name, t->nrows ? hl_table_get(t, 0, "status") : "(no row)");
    ok = false;
  }
  if (strstr(name, "_steps.csv"))
    for (int r = 0; r < t->nrows && ok; r++)
      if (hl_table_num(t, r, "step") != r + 1) {
        snprintf(why, len, "%s: row %d is step %s", name, r + 1, hl_table_get(t, r, "step"));
        ok = false;
      }
  hl_table_free(t);
  return ok;
}

/* Whether text names path as a whole: not merely as the start of a longer
 * path (a folder's name inside a file's). */
static bool names(const char *text, const char *path) {
  const size_t n = strlen(path);
  for (const char *p = text; (p = strstr(p, path)); p++)
    if (!strchr("/._-", p[n]) && !isalnum((unsigned char)p[n])) return true;
  return false;
}

/* One case: the nth call of a kind fails with err. true when every check
 * holds; else the reason is printed. */
static bool one_case(const scenario *s, const char *template_dir, const char *dir, int call, long nth,
                     const char *err_name, int err, bool sticky) {
  fresh_copy(template_dir, dir);
  folder_print before, after;
  take_print(dir, &before);
  char cmd[8192], env[4400], report[4200];
  expand(cmd, sizeof cmd, s->run, dir);
  snprintf(report, sizeof report, "%s.failed-file", dir);
  remove(report);
  /* a disk that fills: a short write, then the error, then every later write failing */
  snprintf(env, sizeof env,
           "HL_FAIL_CALL=%s HL_FAIL_AT=%ld HL_FAIL_ERRNO=%s HL_FAIL_STICKY=%d HL_FAIL_SHORT=%d HL_FAIL_REPORT_TO='%s'",
           call_names[call], nth, err_name, sticky, sticky && call == CALL_WRITE, report);
  hl_run_result r = run_shimmed(dir, env, cmd);
  char why[8400] = "";
  char *failed_file = hl_read_file(report, NULL);
  remove(report);
  bool ok = true;
  if (!failed_file) snprintf(why, sizeof why, "the shim failed no call"), ok = false;
  else if (r.status != 1) snprintf(why, sizeof why, "exit %d, not 1", r.status), ok = false;
  else if (new_lines(r.err) != 1) snprintf(why, sizeof why, "%d new lines on stderr, not 1", new_lines(r.err)), ok = false;
  else if (!strstr(r.err, strerror(err))) snprintf(why, sizeof why, "the message lacks '%s'", strerror(err)), ok = false;
  else {
    /* the file itself, or the final name it was being written for (PATH.tmp) */
    char named[PATH_MAX];
    snprintf(named, sizeof named, "%s", failed_file);
    if (!names(r.err, named) && ends_with(named, ".tmp")) named[strlen(named) - 4] = '\0';
    if (!names(r.err, named)) snprintf(why, sizeof why, "the message does not name %s", failed_file), ok = false;
  }
  take_print(dir, &after);
  for (int i = 0; i < after.n && ok; i++) {
    const char *name = after.f[i].name;
    if (ends_with(name, ".tmp") || strstr(name, ".inprogress") || ends_with(name, ".replaced")) {
      snprintf(why, sizeof why, "%s left behind", name);
      ok = false;
      break;
    }
    if (strstr(name, ".csv") && !csv_whole(hl_path(dir, name), why, sizeof why)) {
      ok = false;
      break;
    }
    const file_print *was = find_print(&before, name);
    const bool same = was && was->size == after.f[i].size && was->crc == after.f[i].crc;
    /* --checkpoint is the last state saved: a run that failed after its save replaces it, whole */
    const bool replaced_checkpoint = ends_with(name, ".ckpt") && checkpoint_whole(hl_path(dir, name));
    if (s->train && was && !same && !replaced_checkpoint)
      snprintf(why, sizeof why, "%s of the completed run changed", name), ok = false;
    else if (s->train && !was && !failed_file_ok(dir, name, why, sizeof why)) ok = false;
  }
  for (int i = 0; i < before.n && ok; i++)
    if (!find_print(&after, before.f[i].name))
      snprintf(why, sizeof why, "%s of the completed run is gone", before.f[i].name), ok = false;
  if (!ok)
    print_message("faults: files: %s, %s #%ld failing with %s%s: %s\n  stderr: %s", s->what, call_names[call], nth,
                  err_name, sticky ? " (and every later one)" : "", why, r.err);
  free(failed_file);
  hl_run_free(&r);
  return ok;
}

/* Up to `most` distinct N in 1..n, seeded: the first and last always. */
static int sample(long n, int most, uint64_t *seed, long *out) {
  if (n <= most) {
    for (long i = 0; i < n; i++) out[i] = i + 1;
    return (int)n;
  }
  int k = 0;
  out[k++] = 1;
  out[k++] = n;
  while (k < most) {
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const long v = 2 + (long)((*seed >> 33) % (uint64_t)(n - 2));
    bool seen = false;
    for (int i = 0; i < k; i++) seen |= out[i] == v;
    if (!seen) out[k++] = v;
  }
  return k;
}

/* Every case of a scenario; most: N per call kind (0: every N). */
static void run_scenario(const scenario *s, int most) {
  char *root = hl_tmpdir();
  char resolved[PATH_MAX];
  assert_non_null(realpath(root, resolved)); /* the programs' messages and the shim's report agree on it */
  char template_dir[PATH_MAX + 16], dir[PATH_MAX + 16], cmd[8192];
  snprintf(template_dir, sizeof template_dir, "%s/template", resolved);
  snprintf(dir, sizeof dir, "%s/case", resolved);
  assert_int_equal(mkdir(template_dir, 0755), 0);
  expand(cmd, sizeof cmd, s->setup, template_dir);
  hl_run_result r = hl_run("%s", cmd);
  if (r.status != 0) fail_msg("%s: setting up failed (exit %d): %s", s->what, r.status, r.err);
  hl_run_free(&r);
  long n[CALLS];
  count_calls(s, template_dir, dir, n);
  uint64_t seed = 14;
  int cases = 0, ok = 0;
  char taken[256] = "";
  bool sampled = false;
  for (int call = 0; call < CALLS; call++) {
    long which[4096];
    const int k = sample(n[call], most ? most : 4096, &seed, which);
    sampled |= k < n[call];
    size_t t = strlen(taken);
    snprintf(taken + t, sizeof taken - t, "%s%s %d of %ld", t ? ", " : "", call_names[call], k, n[call]);
    for (int i = 0; i < k; i++) {
      ok += one_case(s, template_dir, dir, call, which[i], "ENOSPC", ENOSPC, call == CALL_WRITE);
      ok += one_case(s, template_dir, dir, call, which[i], "EIO", EIO, false);
      cases += 2;
    }
  }
  print_message("faults: files: %s: %s calls failed (%s), ENOSPC and EIO each: %d cases, %d held\n", s->what, taken,
                sampled ? "a seeded sample (seed 14) of each, the first and last included" : "every one", cases, ok);
  tried += cases;
  held += ok;
  hl_rmtree(root);
  free(root);
  assert_int_equal(ok, cases);
}

/* ------------------------------------------------------------- tests -- */

#define TINY "--device cpu --batch 4 --eval-samples 8 --eval-every 2 --steps 3"

static void test_train_every_write(void **state) {
  (void)state;
  char setup[4096], run[4096];
  snprintf(run, sizeof run, "%s " TINY " --profile --warmup 1 --checkpoint DIR/run.ckpt --out DIR",
           hl_test_prog("halflab-train"));
  snprintf(setup, sizeof setup, "%s", run);
  const scenario s = {"halflab-train (--profile, --checkpoint)", true, setup, run};
  run_scenario(&s, 0);
}

static void test_train_resumed_every_write(void **state) {
  (void)state;
  char setup[8192], run[4096];
  const char *train = hl_test_prog("halflab-train");
  /* a completed run, and a stopped one whose .interrupted log the faulted run continues */
  snprintf(setup, sizeof setup,
           "%s " TINY " --name resumed --out DIR >/dev/null && "
           "%s " TINY " --name resumed --stop-after 2 --checkpoint DIR/stop.ckpt --out DIR",
           train, train);
  snprintf(run, sizeof run, "%s " TINY " --name resumed --resume DIR/stop.ckpt --out DIR", train);
  const scenario s = {"halflab-train --resume", true, setup, run};
  run_scenario(&s, 0);
}

/* The peers' files: written whole or not at all, a failure exit 1 (a
 * runtime failure, not bad input); the same bytes every time, so the
 * earlier ones must stay byte for byte. */
static void test_train_peer_files(void **state) {
  (void)state;
  char run[4096];
  snprintf(run, sizeof run, "%s " TINY " --steps 0 --save-init DIR/w.bin --export-batches DIR/b.bin",
           hl_test_prog("halflab-train"));
  const scenario s = {"halflab-train --save-init --export-batches", true, run, run};
  run_scenario(&s, 0);
}

static void test_numerics_tables(void **state) {
  (void)state;
  char run[4096];
  snprintf(run, sizeof run, "%s absorption --device cpu --out DIR", hl_test_prog("halflab-numerics"));
  const scenario s = {"halflab-numerics absorption", false, run, run};
  run_scenario(&s, 16);
}

static void test_bench_tables(void **state) {
  (void)state;
  char run[4096];
  snprintf(run, sizeof run, "%s gemm --device cpu --quick --sizes 64 --reps 1 --out DIR", hl_test_prog("halflab-bench"));
  const scenario s = {"halflab-bench gemm", false, run, run};
  run_scenario(&s, 4);
}

/* A run that fails on its own after a completed one of the same name and
 * mode: the completed one's files stay byte for byte, the failed one's are
 * marked; an earlier failed run of other options keeps its files, whole,
 * as NAME.failed.RUN_ID. */
static void test_failed_after_completed(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  const char *train = hl_test_prog("halflab-train");
  hl_run_result r = hl_run_ok("%s " TINY " --steps 4 --out %s", train, dir);
  hl_run_free(&r);
  const char *failing[] = {"--optimizer sgd --lr 1e30", "--inject-nonfinite 2"};
  for (int k = 0; k < 2; k++) {
    folder_print before, after;
    take_print(dir, &before);
    r = hl_run("%s " TINY " --steps 4 %s --out %s", train, failing[k], dir);
    tried++;
    bool ok = r.status == 1 && hl_count_lines(r.err) == 1 && strstr(r.err, "non-finite loss");
    take_print(dir, &after);
    char why[8400] = "";
    for (int i = 0; i < before.n; i++) {
      const file_print *now = find_print(&after, before.f[i].name);
      if (ends_with(before.f[i].name, ".failed")) { /* the previous failure's: another run's, kept as NAME.RUN_ID */
        now = NULL;
        for (int j = 0; j < after.n && !now; j++)
          if (!strncmp(after.f[j].name, before.f[i].name, strlen(before.f[i].name)) &&
              after.f[j].name[strlen(before.f[i].name)] == '.')
            now = &after.f[j];
      }
      if (!now || now->size != before.f[i].size || now->crc != before.f[i].crc)
        ok = false, snprintf(why, sizeof why, "%s changed", before.f[i].name);
    }
    int marked = 0;
    for (int i = 0; i < after.n; i++)
      if (!strstr(after.f[i].name, ".failed.") &&
          (!find_print(&before, after.f[i].name) || ends_with(after.f[i].name, ".failed"))) {
        if (!csv_whole(hl_path(dir, after.f[i].name), why, sizeof why) ||
            !failed_file_ok(dir, after.f[i].name, why, sizeof why))
          ok = false;
        marked++;
      }
    if (marked != 3) ok = false, snprintf(why, sizeof why, "%d files marked .failed, not steps, hist and summary", marked);
    if (!ok) print_message("faults: files: %s after a completed run: %s\n  exit %d: %s", failing[k], why, r.status, r.err);
    held += ok;
    hl_run_free(&r);
    assert_true(ok);
  }
  hl_rmtree(dir);
  free(dir);
}

/* A checkpoint the system fails to read (EIO from read(2)) is a runtime
 * failure: exit 1, the system's message and file:line, nothing written; a
 * checkpoint that is not there is bad input (exit 2). */
static void test_resume_read_error(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  const char *train = hl_test_prog("halflab-train");
  char ckpt[4096];
  snprintf(ckpt, sizeof ckpt, "%s", hl_path(dir, "run.ckpt"));
  hl_run_result r = hl_run_ok("%s " TINY " --steps 4 --stop-after 2 --checkpoint '%s' --out %s", train, ckpt, dir);
  hl_run_free(&r);
  folder_print before, after;
  take_print(dir, &before);
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s --resume '%s' --out %s", train, ckpt, dir);
  r = run_shimmed(dir, "HL_FAIL_CALL=read HL_FAIL_AT=1 HL_FAIL_ERRNO=EIO", cmd);
  tried++;
  bool ok = r.status == 1 && hl_count_lines(r.err) == 1 && strstr(r.err, "Input/output error") &&
            strstr(r.err, "run.ckpt") && strstr(r.err, ".c:");
  take_print(dir, &after);
  ok = ok && after.n == before.n;
  for (int i = 0; ok && i < before.n; i++) {
    const file_print *now = find_print(&after, before.f[i].name);
    ok = now && now->size == before.f[i].size && now->crc == before.f[i].crc;
  }
  if (!ok) print_message("faults: files: --resume with EIO on read: exit %d: %s", r.status, r.err);
  held += ok;
  hl_run_free(&r);
  assert_true(ok);
  r = hl_run("%s --resume '%s' --out %s", train, hl_path(dir, "absent.ckpt"), dir);
  tried++;
  ok = r.status == 2 && hl_count_lines(r.err) == 1;
  held += ok;
  hl_run_free(&r);
  assert_true(ok);
  hl_rmtree(dir);
  free(dir);
}

static int report(void **state) {
  (void)state;
  printf("faults: files: %d cases tried, %d held\n", tried, held);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FAIL_IO_SHIM.so (run through meson test)\n", argv[0]);
    return 2;
  }
  shim = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_failed_after_completed),
      cmocka_unit_test(test_resume_read_error),
      cmocka_unit_test(test_train_every_write),
      cmocka_unit_test(test_train_resumed_every_write),
      cmocka_unit_test(test_train_peer_files),
      cmocka_unit_test(test_numerics_tables),
      cmocka_unit_test(test_bench_tables),
  };
  return cmocka_run_group_tests(tests, NULL, report);
}
