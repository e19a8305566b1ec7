/* test_faults_resume.c — suite faults: resuming halflab-train runs as a
 * hostile user would (docs/train.md, "Checkpoints and resume").
 *
 *   kill -9   a run checkpointing every step is killed at seeded random
 *             moments, again and again, each time resumed from whatever
 *             checkpoint it left (a fresh start where none was written
 *             yet), until it completes; its per-step rows (timings aside),
 *             histograms and summary (timings aside) must then equal an
 *             uninterrupted run's bit for bit;
 *   mismatch  every option of the run's definition given otherwise on
 *             --resume: exit 2, one line naming the option and both
 *             values, nothing created and no file changed;
 *   files     another format version, a corrupted, truncated, empty or
 *             missing file, a checkpoint that is not halflab-train's:
 *             refused in one line naming the file, nothing changed;
 *   overrides --steps, --stats-every and --hist-steps are taken and listed
 *             in the metadata's "# resume-overrides:".
 *
 * The kill moments come from HL_FAULTS_SEED (default below; printed), so a
 * failure can be replayed. Prints "faults: resume: N cases tried, N held". */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/training/checkpoint.h"
#include "tests/support/hltest.h"

static const char *train(void) { return hl_test_prog("halflab-train"); }

/* The run every case starts from: amp-fp16 with the scale growing every 3
 * steps and a skipped step, statistics every 3 steps, four histograms. */
#define RUN_ARGS                                                                                                  \
  "--device cpu --batch 8 --eval-samples 16 --eval-every 4 --mode amp-fp16 --growth-interval 3 "                \
  "--inject-nonfinite 5 --steps 16 --stats-every 3 --hist-steps 2,7,13,16"
#define RUN_NAME "tiny"
#define RUN_MODE "amp-fp16"

static int tried, held;
static int resumes_total; /* attempts that resumed from a checkpoint a kill left */

/* One case's verdict: a failure is printed with its reason, and counted. */
static bool verdict(bool ok, const char *what, const char *why) {
  tried++;
  if (ok) held++;
  else fprintf(stderr, "faults: resume: FAILED %s: %s\n", what, why);
  return ok;
}

/* ---------------------------------------------------------- the files -- */

/* The path of a run's file of `kind` (steps, hist, summary) in dir: the one
 * place that knows how halflab-train names its files, in one of hl_path's
 * buffers. A completed run's final name; the in-progress log where only
 * that exists. */
static const char *run_file(const char *dir, const char *kind) {
  char name[256];
  snprintf(name, sizeof name, "train_%s_%s_%s.csv", RUN_NAME, RUN_MODE, kind);
  const char *path = hl_path(dir, name);
  if (!hl_file_exists(path)) {
    char inprogress[300];
    snprintf(inprogress, sizeof inprogress, "%s.inprogress", name);
    if (hl_file_exists(hl_path(dir, inprogress))) return hl_path(dir, inprogress);
  }
  return path;
}

/* Columns that hold timings or the machine's load: the only ones a resumed
 * run may differ in. */
static bool timing_column(const char *col) {
  static const char *const cols[] = {"step_time_ms", "tokens_per_s", "samples_per_s", "step_time_ms_median",
                                     "step_time_ms_min", "load_start", "load_end", "wall_s"};
  for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
    if (!strcmp(col, cols[i])) return true;
  return false;
}

/* Tables a and b cell for cell but the timing columns; why says where they
 * differ. */
static bool same_table(const char *pa, const char *pb, char *why, size_t len) {
  hl_table *a = hl_table_read(pa), *b = hl_table_read(pb);
  bool same = a && b && a->ncols == b->ncols && a->nrows == b->nrows;
  if (!same) snprintf(why, len, "%s: %s", pb, !a || !b ? "missing or malformed" : "another number of rows or columns");
  for (int c = 0; same && c < a->ncols; c++) {
    same = !strcmp(a->cols[c], b->cols[c]);
    if (!same) snprintf(why, len, "%s: column %d is %s, not %s", pb, c, b->cols[c], a->cols[c]);
    for (int r = 0; same && r < a->nrows; r++)
      if (!timing_column(a->cols[c]) && strcmp(a->cells[r][c], b->cells[r][c])) {
        snprintf(why, len, "%s: row %d %s is %s, uninterrupted %s", pb, r + 1, a->cols[c], b->cells[r][c],
                 a->cells[r][c]);
        same = false;
      }
  }
  if (a) hl_table_free(a);
  if (b) hl_table_free(b);
  return same;
}

/* A file's lines but its "# " metadata; NULL when it cannot be read. */
static char *data_lines(const char *path) {
  char *text = hl_read_file(path, NULL);
  if (!text) return NULL;
  char *o = text;
  for (char *line = text; *line;) {
    char *eol = strchr(line, '\n');
    const size_t n = eol ? (size_t)(eol - line + 1) : strlen(line);
    if (line[0] != '#') memmove(o, line, n), o += n;
    line += n;
  }
  *o = '\0';
  return text;
}

/* The run's files in `dir` equal the uninterrupted run's in `ref`. */
static bool same_run(const char *ref, const char *dir, char *why, size_t len) {
  if (!same_table(run_file(ref, "steps"), run_file(dir, "steps"), why, len)) return false;
  if (!same_table(run_file(ref, "summary"), run_file(dir, "summary"), why, len)) return false;
  char *ha = data_lines(run_file(ref, "hist")), *hb = data_lines(run_file(dir, "hist"));
  const bool same = ha && hb && !strcmp(ha, hb);
  if (!same) snprintf(why, len, "%s: %s", run_file(dir, "hist"), hb ? "other rows than the uninterrupted run's" : "missing");
  free(ha);
  free(hb);
  return same;
}

/* Every entry of a folder, name and bytes, as one string (malloc'd): two
 * snapshots are equal when nothing was created, removed or changed. */
static char *snapshot(const char *dir) {
  struct dirent **list;
  const int n = scandir(dir, &list, NULL, alphasort);
  assert_true(n >= 0);
  size_t cap = 1, len = 0;
  char *out = calloc(1, 1);
  for (int i = 0; i < n; i++) {
    size_t size = 0;
    struct stat sb;
    const char *path = hl_path(dir, list[i]->d_name);
    char *bytes = lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) ? hl_read_file(path, &size) : NULL;
    const size_t name_len = strlen(list[i]->d_name);
    cap = len + name_len + size + 4;
    out = realloc(out, cap);
    assert_non_null(out);
    memcpy(out + len, list[i]->d_name, name_len + 1);
    len += name_len + 1;
    for (size_t k = 0; bytes && k < size; k++) out[len++] = bytes[k] ? bytes[k] : '\1';
    out[len++] = '\n';
    out[len] = '\0';
    free(bytes);
    free(list[i]);
  }
  free(list);
  return out;
}

/* ------------------------------------------------------------- kill -9 -- */

static uint64_t rng_state;
static uint64_t next_random(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1DULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Starts halflab-train with RUN_ARGS and `extra` (split at spaces; no
 * quoting needed here), output thrown away. */
static pid_t start(const char *extra) {
  char *argv[64];
  int argc = 0;
  argv[argc++] = "halflab-train";
  char run_args[] = RUN_ARGS;
  for (char *tok = strtok(run_args, " "); tok; tok = strtok(NULL, " ")) argv[argc++] = tok;
  char *args_copy = strdup(extra);
  for (char *tok = strtok(args_copy, " "); tok && argc < 63; tok = strtok(NULL, " ")) argv[argc++] = tok;
  argv[argc] = NULL;
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
    execv(train(), argv);
    _exit(127);
  }
  free(args_copy);
  return pid;
}

static int wait_for(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* One case: killed at up to `kills` random moments within about one run's
 * time, each time resumed (or started afresh before the first checkpoint),
 * then left to complete. */
static void kill_case(const char *ref, double run_s, int k, int kills) {
  char *dir = hl_tmpdir();
  char extra[16384], what[64];
  const char *ckpt = hl_path(dir, "run.ckpt");
  char ckpt_path[4096];
  snprintf(ckpt_path, sizeof ckpt_path, "%s", ckpt);
  snprintf(what, sizeof what, "kill -9 case %d", k);
  char why[4096] = "";
  int killed = 0, resumes = 0;
  bool ok = true;
  for (int attempt = 0; ok; attempt++) {
    const bool resume = hl_file_exists(ckpt_path);
    snprintf(extra, sizeof extra, "--checkpoint %s --checkpoint-every 1 --out %s%s%s", ckpt_path, dir,
             resume ? " --resume " : "", resume ? ckpt_path : "");
    const pid_t pid = start(extra);
    resumes += resume;
    if (attempt < kills) {
      const double delay = run_s * 1.2 * (double)(next_random() >> 11) / 9007199254740992.0;
      const double until = now_s() + delay;
      struct timespec nap = {0, 1000 * 1000};
      while (now_s() < until) nanosleep(&nap, NULL);
      kill(pid, SIGKILL);
    }
    const int status = wait_for(pid);
    if (status == 128 + SIGKILL) {
      killed++;
      continue;
    }
    if (status != 0) {
      snprintf(why, sizeof why, "attempt %d (%s) exited %d", attempt + 1, resume ? "resumed" : "fresh", status);
      ok = false;
    }
    break;
  }
  if (ok) ok = same_run(ref, dir, why, sizeof why);
  verdict(ok, what, why);
  resumes_total += resumes;
  printf("faults: resume: kill -9 case %d: killed %d times, resumed %d times, %s\n", k, killed, resumes,
         ok ? "held" : "FAILED");
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------------ refusals -- */

/* halflab-train CMD... must exit 2 with one line holding `words`, print
 * nothing on stdout, and leave every file of `watched` (and the
 * checkpoint) as it was. */
static void expect_refused(const char *what, const char *watched, const char *words, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void expect_refused(const char *what, const char *watched, const char *words, const char *fmt, ...) {
  char args[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  char *before = snapshot(watched);
  hl_run_result r = hl_run("%s %s", train(), args);
  char *after = snapshot(watched);
  char why[8192] = "";
  if (r.status != 2) snprintf(why, sizeof why, "exit %d (want 2); stderr: %s", r.status, r.err);
  else if (hl_count_lines(r.err) != 1 || !strstr(r.err, words))
    snprintf(why, sizeof why, "stderr \"%s\" (want one line with \"%s\")", r.err, words);
  else if (*r.out) snprintf(why, sizeof why, "stdout \"%s\" (want nothing)", r.out);
  else if (strcmp(before, after)) snprintf(why, sizeof why, "%s changed", watched);
  char label[8400];
  snprintf(label, sizeof label, "%s (%s)", what, args);
  verdict(!why[0], label, why);
  hl_run_free(&r);
  free(before);
  free(after);
}

typedef struct {
  const char *args, *words;
} mismatch;

/* A stopped run's folder: its checkpoint and files, the ones the refusals must leave alone. */
static void stopped_run(const char *dir, const char *args) {
  hl_run_result r = hl_run_ok("%s %s --checkpoint %s --out %s", train(), args, hl_path(dir, "run.ckpt"), dir);
  hl_run_free(&r);
}

static void mismatches(const char *dir, const char *what, const mismatch *cases, int n) {
  for (int i = 0; i < n; i++)
    expect_refused(what, dir, cases[i].words, "--resume %s --out %s %s", hl_path(dir, "run.ckpt"), dir, cases[i].args);
}

/* ---------------------------------------------------------------- test -- */

static void test_resume_faults(void **state) {
  (void)state;
  const char *seed_env = getenv("HL_FAULTS_SEED");
  const uint64_t seed = seed_env && *seed_env ? strtoull(seed_env, NULL, 10) : 14;
  rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
  printf("faults: resume: seed %llu (HL_FAULTS_SEED)\n", (unsigned long long)seed);
  char *root = hl_tmpdir();
  char ref[4096], gpt[4096], mlp[4096], text[4096], files[4096];
  snprintf(ref, sizeof ref, "%s/ref", root);
  snprintf(gpt, sizeof gpt, "%s/gpt", root);
  snprintf(mlp, sizeof mlp, "%s/mlp", root);
  snprintf(text, sizeof text, "%s/text", root);
  snprintf(files, sizeof files, "%s/files", root);

  /* the uninterrupted run, and how long one takes here */
  const double t0 = now_s();
  hl_run_result r = hl_run_ok("%s " RUN_ARGS " --out %s", train(), ref);
  hl_run_free(&r);
  const double run_s = now_s() - t0;

  /* kill -9 at random moments */
  for (int k = 0; k < 10; k++) kill_case(ref, run_s, k, 1 + k % 3);
  char resumed_why[64];
  snprintf(resumed_why, sizeof resumed_why, "no kill left a checkpoint to resume from (seed %llu)", (unsigned long long)seed);
  verdict(resumes_total > 0, "kill -9 resumed", resumed_why);

  /* every option of the definition given otherwise */
  stopped_run(gpt, RUN_ARGS " --stop-after 8");
  const char *book = hl_path(root, "book.txt");
  char book_path[4096];
  snprintf(book_path, sizeof book_path, "%s", book);
  {
    char *words = malloc(40000);
    assert_non_null(words);
    for (int i = 0; i < 40000; i++) words[i] = "the quick brown fox jumps over a lazy dog. "[i % 43];
    hl_write_file(book_path, words, 40000);
    free(words);
  }
  char text_arg[4200], weights_arg[4200];
  snprintf(text_arg, sizeof text_arg, "--text %s", book_path);
  snprintf(weights_arg, sizeof weights_arg, "--init-weights %s", book_path);
  const mismatch gpt_cases[] = {
      {"--mode fp32", "mode is amp-fp16 in the checkpoint, fp32 on the command line"},
      {"--mode amp-bf16", "mode is amp-fp16 in the checkpoint, amp-bf16 on the command line"},
      {"--model mlp", "model is gpt in the checkpoint, mlp on the command line"},
      {"--preset small", "preset is tiny in the checkpoint, small on the command line"},
      {"--layers 3", "layers is 2 in the checkpoint, 3 on the command line"},
      {"--heads 2", "heads is 4 in the checkpoint, 2 on the command line"},
      {"--embd 32", "embd is 64 in the checkpoint, 32 on the command line"},
      {"--vocab 12", "vocab is 11 in the checkpoint, 12 on the command line"},
      {"--seq 24", "seq is 16 in the checkpoint, 24 on the command line"},
      {"--init-gain 0.5", "init-gain is 1 in the checkpoint, 0.5 on the command line"},
      {"--task text", "task is sort in the checkpoint, text on the command line"},
      {text_arg, "text is not set in the checkpoint"},
      {"--sort-len 6", "sort-len is 8 in the checkpoint, 6 on the command line"},
      {"--digits 9", "digits is 10 in the checkpoint, 9 on the command line"},
      {"--batch 4", "batch is 8 in the checkpoint, 4 on the command line"},
      {"--eval-samples 8", "eval-samples is 16 in the checkpoint, 8 on the command line"},
      {"--eval-every 2", "eval-every is 4 in the checkpoint, 2 on the command line"},
      {"--optimizer sgd", "optimizer is adamw in the checkpoint, sgd on the command line"},
      {"--schedule constant", "schedule is cosine in the checkpoint, constant on the command line"},
      {"--lr 0.01", "lr is 0.003 in the checkpoint, 0.01 on the command line"},
      {"--momentum 0.9", "momentum is not set in the checkpoint, 0.9 on the command line"},
      {"--weight-decay 0.1", "weight-decay is 0 in the checkpoint, 0.1 on the command line"},
      {"--clip-norm 1", "clip-norm is not set in the checkpoint, 1 on the command line"},
      {"--accum 2", "accum is 1 in the checkpoint, 2 on the command line"},
      {"--init-scale 1024", "init-scale is 65536 in the checkpoint, 1024 on the command line"},
      {"--growth-interval 5", "growth-interval is 3 in the checkpoint, 5 on the command line"},
      {"--inject-nonfinite 6", "inject-nonfinite is 5 in the checkpoint, 6 on the command line"},
      {"--warmup 2", "warmup is 5 in the checkpoint, 2 on the command line"},
      {"--seed 2", "seed is 1 in the checkpoint, 2 on the command line"},
      {"--name other", "name is tiny in the checkpoint, other on the command line"},
      {"--steps 6", "the checkpoint is at step 8, past --steps 6"},
      {"--stop-after 8", "the checkpoint is at step 8, not before --stop-after 8"},
      {weights_arg, "exclude each other"},
  };
  mismatches(gpt, "gpt mismatch", gpt_cases, (int)(sizeof gpt_cases / sizeof gpt_cases[0]));

  stopped_run(mlp, "--device cpu --model mlp --batch 32 --eval-samples 64 --optimizer sgd --momentum 0.9 "
                   "--grad-penalty 0.1 --clip-norm 1 --steps 6 --stop-after 3");
  const mismatch mlp_cases[] = {
      {"--inputs 16", "inputs is 32 in the checkpoint, 16 on the command line"},
      {"--hidden 64", "hidden is 128,128 in the checkpoint, 64 on the command line"},
      {"--classes 5", "classes is 10 in the checkpoint, 5 on the command line"},
      {"--grad-penalty 0.2", "grad-penalty is 0.1 in the checkpoint, 0.2 on the command line"},
      {"--momentum 0.5", "momentum is 0.9 in the checkpoint, 0.5 on the command line"},
      {"--clip-norm 2", "clip-norm is 1 in the checkpoint, 2 on the command line"},
      {"--optimizer adamw", "optimizer is sgd in the checkpoint, adamw on the command line"},
  };
  mismatches(mlp, "mlp mismatch", mlp_cases, (int)(sizeof mlp_cases / sizeof mlp_cases[0]));

  char run_args[8192];
  snprintf(run_args, sizeof run_args, "--device cpu --mode amp-bf16 --batch 4 --eval-samples 8 --seq 32 --steps 6 "
                                      "--stop-after 3 %s", text_arg);
  stopped_run(text, run_args);
  char other_book[4200], other_arg[4300], text_words[8600];
  snprintf(other_book, sizeof other_book, "%s/other.txt", root);
  hl_write_file(other_book, "x", 1);
  snprintf(other_arg, sizeof other_arg, "--text %s", other_book);
  snprintf(text_words, sizeof text_words, "text is %s in the checkpoint, %s on the command line", book_path, other_book);
  const mismatch text_cases[] = {
      {"--eval-frac 0.2", "eval-frac is 0.1 in the checkpoint, 0.2 on the command line"},
      {other_arg, text_words},
      {"--task sort", "task is text in the checkpoint, sort on the command line"},
  };
  mismatches(text, "text mismatch", text_cases, (int)(sizeof text_cases / sizeof text_cases[0]));
  /* the same path with other contents (one byte changed) */
  size_t book_len;
  char *book_bytes = hl_read_file(book_path, &book_len);
  assert_non_null(book_bytes);
  book_bytes[100] = 'Q';
  hl_write_file(book_path, book_bytes, book_len);
  expect_refused("text changed", text, "text-contents is 40000 bytes, crc32 ", "--resume %s --out %s",
                 hl_path(text, "run.ckpt"), text);
  free(book_bytes);

  /* files that are not a sound checkpoint of this format */
  assert_int_equal(mkdir(files, 0755), 0);
  size_t size;
  unsigned char *good = (unsigned char *)hl_read_file(hl_path(gpt, "run.ckpt"), &size);
  assert_non_null(good);
  assert_true(size > 1000 && good[8] == HL_CHECKPOINT_VERSION);
  char bad[4200];
  snprintf(bad, sizeof bad, "%s/bad.ckpt", files);
  const struct {
    const char *what, *words;
    size_t at, len; /* byte at `at` changed (at < len), or the file cut to len */
    unsigned char to;
  } damaged[] = {
      {"version 1", "checkpoint format version 1, this halflab reads version 2", 8, size, 1},
      {"version 3", "checkpoint format version 3, this halflab reads version 2", 8, size, 3},
      {"a flipped byte", "checksum mismatch", size / 2, size, 0},
      {"truncated", "truncated", size, size - 100, 0},
      {"empty", "not a halflab checkpoint", 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof damaged / sizeof damaged[0]; i++) {
    const size_t at = damaged[i].at;
    const unsigned char kept = at < size ? good[at] : 0;
    if (at < damaged[i].len) good[at] = damaged[i].to ? damaged[i].to : (unsigned char)(good[at] ^ 0x20);
    hl_write_file(bad, good, damaged[i].len);
    if (at < size) good[at] = kept;
    expect_refused(damaged[i].what, gpt, damaged[i].words, "--resume %s --out %s", bad, gpt);
  }
  free(good);
  expect_refused("missing", gpt, "No such file", "--resume %s/none.ckpt --out %s", files, gpt);
  /* a sound checkpoint of this format that no halflab-train run wrote */
  hl_train_state empty_state = {0};
  OK(hl_checkpoint_save(bad, &empty_state));
  expect_refused("not a run's", gpt, "holds no halflab-train run", "--resume %s --out %s", bad, gpt);

  /* the overrides: taken, and listed in the metadata */
  hl_run_result o = hl_run("%s --resume %s --out %s --steps 18 --stats-every 2 --hist-steps 2,7,18", train(),
                           hl_path(gpt, "run.ckpt"), gpt);
  char why[4096] = "";
  hl_table *s = o.status == 0 ? hl_table_read(run_file(gpt, "summary")) : NULL;
  if (o.status != 0) snprintf(why, sizeof why, "exit %d: %s", o.status, o.err);
  else if (!s || !strstr(s->meta, "# resume-overrides: --steps 18 (checkpoint: 16), --stats-every 2 (checkpoint: 3), "
                                  "--hist-steps 2,7,18 (checkpoint: 2,7,13,16)"))
    snprintf(why, sizeof why, "no or another resume-overrides line: %s", s ? s->meta : "no summary");
  else if (hl_table_num(s, 0, "steps_done") != 18)
    snprintf(why, sizeof why, "steps_done %s", hl_table_get(s, 0, "steps_done"));
  verdict(!why[0], "overrides", why);
  if (s) hl_table_free(s);
  hl_run_free(&o);

  printf("faults: resume: %d cases tried, %d held\n", tried, held);
  hl_rmtree(root);
  free(root);
  assert_int_equal(held, tried);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resume_faults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
