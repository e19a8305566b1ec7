/* test_train_mpi.c — suite e2e: data-parallel halflab-train under mpirun
 * (docs/train.md, "Data-parallel training"), 2 ranks x 1 thread on the CPU.
 *
 *   equivalence: 2 ranks give the per-step loss of 1 process with the same
 *     global batch, in fp32 and amp-fp16, within the tolerances below (the
 *     ranks sum the gradients in another order), with --check-replicas
 *     passing every step, and rank 0 alone writing files;
 *   an inf on rank 1 only (--inject-nonfinite 3@1): both ranks skip step 3
 *     and halve the scale (rank 0's log shows the skip it learned of only
 *     through the found_inf all-reduce), replicas still identical;
 *   the test switch HALFLAB_TEST_NO_FOUND_INF_ALLREDUCE: the same run must
 *     fail --check-replicas (the replicas diverge), so the check can fail;
 *   --allreduce-dtype bf16 / fp16 (amp-fp16, the gradients on the wire
 *     still scaled): per-step loss within the tolerances below of the fp32
 *     all-reduce, yet not equal to it (the wire type is really used),
 *     replicas identical; --profile shows one all-reduce a step of every
 *     parameter at the wire type's size;
 *   buckets: --bucket-mb 0.05 (several buckets, all-reduced by a
 *     communication thread during the backward) and --bucket-mb 0 (one
 *     piece after it) give the same values bit for bit in fp32 and
 *     amp-fp16 (also with --accum 2); the summary counts the buckets and bytes, the profile
 *     lists the thread's all-reduces as `beside` and the wait after the
 *     backward;
 *   a hung rank (HALFLAB_TEST_STOP_RANK=1@3: rank 1 sends itself SIGSTOP at
 *     step 3): rank 0's watchdog ends the job within --rank-timeout 2 plus
 *     the bound below, exit 1, naming the collective and the wait;
 *   checkpoints: 2 ranks stopped after step 4 (rank 0's checkpoint) and
 *     resumed on 2 ranks equal the uninterrupted 2-rank run in every
 *     column but the timings; resumed in one process, within the fp32
 *     tolerance (the data does not depend on the rank count);
 *   SIGTERM to rank 1 alone during a run: every rank stops at the same
 *     step (the job ends by itself, no rank waits), rank 0's files say
 *     interrupted;
 *   bad input under 2 ranks: exit 2, nothing written; among it --device
 *     cuda, refused as not built without NCCL, and with NCCL because this
 *     node has fewer GPUs than ranks (none here; on a node with two GPUs
 *     or more the run is GPU ranks' and is not tried, test_train_nccl.c
 *     runs them).
 *
 * Run with an argument "build", it checks instead what the build says of
 * the feature: built, or refused with "not built" (both configurations).
 * Without MPI built, the mpirun tests exit 77 (skipped). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"

static const char *train(void) { return hl_test_prog("halflab-train"); }

/* Set by meson when MPI is built and mpirun was found. */
static const char *mpirun(void) {
  const char *m = getenv("HALFLAB_MPIRUN");
  return m && *m ? m : NULL;
}

/* Set by meson when NCCL is built (GPU ranks). */
static bool nccl_built(void) {
  const char *v = getenv("HALFLAB_NCCL_BUILT");
  return v && *v == '1';
}

/* CI runs as root; this machine has fewer cores than some runners' ranks. */
#define MPIRUN_FLAGS "--allow-run-as-root --oversubscribe -n 2"
#define SMALL "--device cpu --batch 16 --eval-samples 32 --eval-every 5 --steps 6"
/* Relative per-step loss tolerances, 2 ranks against 1: the all-reduce sums
 * each gradient as (rank 0's half-batch mean + rank 1's) / 2 instead of
 * one mean over the batch. fp32 keeps that reordering near its rounding
 * (seen: 1e-7); amp-fp16 rounds the fp16 activations of half batches
 * differently (seen: 3e-5), and 6 steps compound it. */
#define FP32_TOL 1e-5
#define AMP_FP16_TOL 1e-3
/* Against the fp32 all-reduce, 2 ranks, amp-fp16, 6 steps: bf16's 8-bit
 * significand rounds each gradient by up to 2^-9 (seen: 7e-5 in the
 * loss); fp16's 11 bits, with the loss scale 65536 keeping the gradients
 * out of its subnormals, 2^-12 (seen: 1e-5). */
#define WIRE_BF16_TOL 1e-3
#define WIRE_FP16_TOL 2e-4

static hl_table *steps_csv(const char *dir, const char *mode) {
  char f[128];
  snprintf(f, sizeof f, "train_tiny_%s_steps.csv", mode);
  hl_table *t = hl_table_read(hl_path(dir, f));
  if (!t) fail_msg("%s in %s: missing or malformed", f, dir);
  return t;
}

static hl_run_result run_ranks(const char *env, const char *args) {
  return hl_run("OMP_NUM_THREADS=1 %s %s " MPIRUN_FLAGS " %s %s", env, mpirun(), train(), args);
}

static void check_equivalent(const char *mode, double tol) {
  char *one = hl_tmpdir(), *two = hl_tmpdir();
  hl_run_result r = hl_run_ok("OMP_NUM_THREADS=1 %s " SMALL " --mode %s --out %s", train(), mode, one);
  hl_run_free(&r);
  char args[1024];
  snprintf(args, sizeof args, SMALL " --mode %s --check-replicas 1 --out %s", mode, two);
  r = run_ranks("", args);
  if (r.status != 0) fail_msg("2 ranks, %s: exit %d\n%s", mode, r.status, r.err);
  hl_run_free(&r);
  hl_table *a = steps_csv(one, mode), *b = steps_csv(two, mode);
  assert_int_equal(a->nrows, 6);
  assert_int_equal(b->nrows, 6);
  for (int i = 0; i < 6; i++) {
    const double la = hl_table_num(a, i, "loss"), lb = hl_table_num(b, i, "loss");
    if (!(fabs(la - lb) <= tol * fabs(la)))
      fail_msg("%s step %d: loss %.9g with 1 rank, %.9g with 2 (tolerance %g relative)", mode, i + 1, la, lb, tol);
    assert_string_equal(hl_table_get(a, i, "scale"), hl_table_get(b, i, "scale"));
    assert_string_equal(hl_table_get(a, i, "skipped"), hl_table_get(b, i, "skipped"));
  }
  assert_true(strstr(b->meta, "2 MPI ranks, 8 rows of each micro-batch per rank") != NULL);
  assert_true(strstr(a->meta, "MPI ranks") == NULL); /* a single process says nothing of ranks */
  hl_table_free(a);
  hl_table_free(b);
  /* rank 0 alone wrote: the same files as the single process, no more */
  assert_int_equal(hl_count_files(two), hl_count_files(one));
  hl_rmtree(one);
  hl_rmtree(two);
  free(one);
  free(two);
}

static void test_equivalent_fp32(void **state) {
  (void)state;
  check_equivalent("fp32", FP32_TOL);
}

static void test_equivalent_amp_fp16(void **state) {
  (void)state;
  check_equivalent("amp-fp16", AMP_FP16_TOL);
}

static double *wire_losses(const char *wire) {
  char *dir = hl_tmpdir(), args[1024];
  snprintf(args, sizeof args, SMALL " --mode amp-fp16 --check-replicas 1 --allreduce-dtype %s --profile --warmup 2 --out %s",
           wire, dir);
  hl_run_result r = run_ranks("", args);
  if (r.status != 0) fail_msg("--allreduce-dtype %s: exit %d\n%s", wire, r.status, r.err);
  hl_run_free(&r);
  hl_table *t = steps_csv(dir, "amp-fp16");
  assert_int_equal(t->nrows, 6);
  char says[128];
  snprintf(says, sizeof says, "(mean, %s on the wire)", !strcmp(wire, "fp32") ? "f32" : !strcmp(wire, "bf16") ? "bf16" : "f16");
  if (!strstr(t->meta, says)) fail_msg("--allreduce-dtype %s: the metadata does not say '%s':\n%s", wire, says, t->meta);
  double *loss = malloc(6 * sizeof *loss);
  for (int i = 0; i < 6; i++) loss[i] = hl_table_num(t, i, "loss");
  hl_table_free(t);
  /* --profile: one gradient all-reduce per step, every parameter once, at the wire type's size */
  char f[256], op[64];
  snprintf(f, sizeof f, "%s/train_tiny_amp-fp16_summary.csv", dir);
  hl_table *sum = hl_table_read(f);
  assert_non_null(sum);
  const double params = hl_table_num(sum, 0, "params");
  hl_table_free(sum);
  snprintf(f, sizeof f, "%s/train_tiny_amp-fp16_profile.csv", dir);
  hl_table *prof = hl_table_read(f);
  assert_non_null(prof);
  snprintf(op, sizeof op, "dist.allreduce_%s", !strcmp(wire, "fp32") ? "f32" : !strcmp(wire, "bf16") ? "bf16" : "f16");
  double calls_per_step = 0, bytes_per_step = 0; /* the buckets' thread: rows in the phases it overlapped */
  for (int i = 0; i < prof->nrows; i++)
    if (!strcmp(hl_table_get(prof, i, "op"), op)) {
      assert_string_equal(hl_table_get(prof, i, "kind"), "beside");
      calls_per_step += hl_table_num(prof, i, "calls_per_step");
      bytes_per_step += hl_table_num(prof, i, "bytes") / hl_table_num(prof, i, "calls") * hl_table_num(prof, i, "calls_per_step");
    }
  if (calls_per_step != 1) fail_msg("--profile: %s %g calls a step, wanted 1 (the tiny model is one bucket)", op, calls_per_step);
  if (bytes_per_step != params * (strcmp(wire, "fp32") ? 2 : 4))
    fail_msg("%s: %.0f bytes a step for %.0f parameters", op, bytes_per_step, params);
  hl_table_free(prof);
  hl_rmtree(dir);
  free(dir);
  return loss;
}

static void test_allreduce_dtypes(void **state) {
  (void)state;
  double *f32 = wire_losses("fp32");
  const char *wires[2] = {"bf16", "fp16"};
  const double tols[2] = {WIRE_BF16_TOL, WIRE_FP16_TOL};
  for (int w = 0; w < 2; w++) {
    double *l = wire_losses(wires[w]), worst = 0;
    for (int i = 0; i < 6; i++) {
      const double rel = fabs(l[i] - f32[i]) / fabs(f32[i]);
      if (rel > worst) worst = rel;
      if (!(rel <= tols[w]))
        fail_msg("--allreduce-dtype %s step %d: loss %.9g, fp32 %.9g (tolerance %g relative)", wires[w], i + 1, l[i],
                 f32[i], tols[w]);
    }
    assert_true(l[0] == f32[0]); /* step 1's loss comes before any all-reduce */
    if (worst == 0) fail_msg("--allreduce-dtype %s: every loss equals the fp32 all-reduce's: the wire type is not used", wires[w]);
    printf("--allreduce-dtype %s against fp32: largest relative loss difference over 6 steps %.2g\n", wires[w], worst);
    free(l);
  }
  free(f32);
}

/* One run of 2 ranks, fp32 or amp-fp16, with --bucket-mb MB: its steps
 * table, and from its summary the buckets and bytes a step. */
static hl_table *bucketed_run(const char *dir, const char *mode, const char *mb, const char *extra, double *buckets,
                              double *bytes, double *params) {
  char args[1024], f[2048];
  snprintf(args, sizeof args, SMALL " --mode %s --check-replicas 1 --bucket-mb %s --profile %s --out %s", mode, mb, extra,
           dir);
  hl_run_result r = run_ranks("", args);
  if (r.status != 0) fail_msg("--bucket-mb %s, %s: exit %d\n%s", mb, mode, r.status, r.err);
  hl_run_free(&r);
  snprintf(f, sizeof f, "%s/train_tiny_%s_summary.csv", dir, mode);
  hl_table *sum = hl_table_read(f);
  assert_non_null(sum);
  assert_string_equal(hl_table_get(sum, 0, "ranks"), "2");
  assert_string_equal(hl_table_get(sum, 0, "allreduce_dtype"), "fp32");
  *buckets = hl_table_num(sum, 0, "allreduce_buckets");
  *bytes = hl_table_num(sum, 0, "allreduce_bytes");
  *params = hl_table_num(sum, 0, "params");
  assert_true(hl_table_num(sum, 0, "allreduce_ms_median") >= 0);
  assert_true(hl_table_num(sum, 0, "allreduce_exposed_ms_median") >= 0);
  hl_table_free(sum);
  return steps_csv(dir, mode);
}

/* Bucketed all-reduce during the backward (--bucket-mb 0.05: the tiny
 * model's 100 k parameters in several buckets) against one piece after it
 * (--bucket-mb 0): with 2 ranks every value must be the same, bit for bit
 * (a sum of two values does not depend on how the vector is cut), and the
 * profile must show the buckets' thread beside the backward. */
static void test_buckets(void **state) {
  (void)state;
  /* the third: gradient accumulation, where only the last micro-batch's backward fills buckets */
  const char *modes[3] = {"fp32", "amp-fp16", "amp-fp16"}, *extra[3] = {"", "", "--accum 2"};
  for (int m = 0; m < 3; m++) {
    char *whole = hl_tmpdir(), *cut = hl_tmpdir();
    double nb_whole, nb_cut, bytes_whole, bytes_cut, params;
    hl_table *a = bucketed_run(whole, modes[m], "0", extra[m], &nb_whole, &bytes_whole, &params);
    hl_table *b = bucketed_run(cut, modes[m], "0.05", extra[m], &nb_cut, &bytes_cut, &params);
    assert_true(nb_whole == 1);
    if (!(nb_cut >= 3)) fail_msg("--bucket-mb 0.05: %g buckets for %.0f parameters", nb_cut, params);
    assert_true(bytes_whole == 4 * params && bytes_cut == 4 * params);
    const char *cols[] = {"loss", "eval_loss", "scale", "skipped", "grad_norm", "grad_zero_frac"};
    for (int i = 0; i < 6; i++)
      for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
        if (strcmp(hl_table_get(a, i, cols[c]), hl_table_get(b, i, cols[c])))
          fail_msg("%s step %d: %s %s in buckets, %s in one piece", modes[m], i + 1, cols[c], hl_table_get(b, i, cols[c]),
                   hl_table_get(a, i, cols[c]));
    assert_true(strstr(b->meta, "in buckets of 0.05 MiB, each started by a communication thread during the backward"));
    assert_true(strstr(a->meta, "in one piece after the backward"));
    hl_table_free(a);
    hl_table_free(b);
    /* the profile: one piece is the main thread's, in phase other; buckets the thread's, beside, one call each */
    char f[2048];
    snprintf(f, sizeof f, "%s/train_tiny_%s_profile.csv", whole, modes[m]);
    hl_table *pw = hl_table_read(f);
    assert_non_null(pw);
    const int row = hl_table_find(pw, "phase", "other", "op", "dist.allreduce_f32", NULL);
    assert_true(row >= 0);
    assert_string_equal(hl_table_get(pw, row, "kind"), "kernel");
    assert_true(hl_table_find(pw, "op", "dist.allreduce_wait", NULL) < 0);
    hl_table_free(pw);
    snprintf(f, sizeof f, "%s/train_tiny_%s_profile.csv", cut, modes[m]);
    hl_table *pc = hl_table_read(f);
    assert_non_null(pc);
    double calls = 0;
    for (int i = 0; i < pc->nrows; i++)
      if (!strcmp(hl_table_get(pc, i, "op"), "dist.allreduce_f32")) {
        assert_string_equal(hl_table_get(pc, i, "kind"), "beside");
        calls += hl_table_num(pc, i, "calls_per_step");
      }
    if (calls != nb_cut) fail_msg("--bucket-mb 0.05: %g all-reduces a step in the profile, %g buckets", calls, nb_cut);
    assert_true(hl_table_find(pc, "phase", "other", "op", "dist.allreduce_wait", NULL) >= 0);
    hl_table_free(pc);
    hl_rmtree(whole);
    hl_rmtree(cut);
    free(whole);
    free(cut);
  }
}

static void test_resume(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), args[2048];
  const char *run = SMALL " --mode amp-fp16 --steps 8 --inject-nonfinite 2@1";
  snprintf(args, sizeof args, "%s --out %s/full", run, dir);
  hl_run_result r = run_ranks("", args);
  if (r.status != 0) fail_msg("2 ranks, 8 steps: exit %d\n%s", r.status, r.err);
  hl_run_free(&r);
  snprintf(args, sizeof args, "%s --stop-after 4 --checkpoint %s/c.ckpt --out %s/split", run, dir, dir);
  r = run_ranks("", args);
  if (r.status != 0) fail_msg("2 ranks, stopped after 4: exit %d\n%s", r.status, r.err);
  hl_run_free(&r);
  snprintf(args, sizeof args, "--device cpu --resume %s/c.ckpt --out %s/split --check-replicas 1", dir, dir);
  r = run_ranks("", args);
  if (r.status != 0) fail_msg("2 ranks, resumed: exit %d\n%s", r.status, r.err);
  hl_run_free(&r);
  char full[4096], split[4096];
  snprintf(full, sizeof full, "%s/full", dir);
  snprintf(split, sizeof split, "%s/split", dir);
  hl_table *a = steps_csv(full, "amp-fp16"), *b = steps_csv(split, "amp-fp16");
  assert_int_equal(a->nrows, 8);
  assert_int_equal(b->nrows, 8);
  const char *cols[] = {"loss", "eval_loss", "eval_acc", "lr", "scale", "skipped", "grad_norm"};
  for (int i = 0; i < 8; i++)
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
      if (strcmp(hl_table_get(a, i, cols[c]), hl_table_get(b, i, cols[c])))
        fail_msg("resumed on 2 ranks, step %d: %s %s, uninterrupted %s", i + 1, cols[c], hl_table_get(b, i, cols[c]),
                 hl_table_get(a, i, cols[c]));
  assert_true(hl_table_num(b, 1, "skipped") == 1);
  hl_table_free(b);
  /* the same checkpoint in one process: @1 is no rank there, so the run is one without the injection after step 4 */
  hl_run_result one = hl_run("OMP_NUM_THREADS=1 %s --device cpu --resume %s/c.ckpt --out %s/one", train(), dir, dir);
  if (one.status != 2 || !hl_has_line(one.err, "rank 1 does not exist", NULL))
    fail_msg("a 2-rank checkpoint with an @1 injection resumed in one process: exit %d, wanted 2\n%s", one.status, one.err);
  hl_run_free(&one);
  hl_table_free(a);
  hl_rmtree(dir);
  free(dir);
}

static void test_resume_other_rank_count(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), args[2048];
  snprintf(args, sizeof args, SMALL " --mode fp32 --steps 8 --stop-after 4 --checkpoint %s/c.ckpt --out %s/two", dir, dir);
  hl_run_result r = run_ranks("", args);
  if (r.status != 0) fail_msg("2 ranks, stopped after 4: exit %d\n%s", r.status, r.err);
  hl_run_free(&r);
  r = hl_run_ok("OMP_NUM_THREADS=1 %s " SMALL " --mode fp32 --steps 8 --out %s/whole", train(), dir);
  hl_run_free(&r);
  r = hl_run_ok("OMP_NUM_THREADS=1 %s --device cpu --resume %s/c.ckpt --out %s/two", train(), dir, dir);
  hl_run_free(&r);
  char two[4096], whole[4096];
  snprintf(two, sizeof two, "%s/two", dir);
  snprintf(whole, sizeof whole, "%s/whole", dir);
  hl_table *a = steps_csv(whole, "fp32"), *b = steps_csv(two, "fp32");
  assert_int_equal(b->nrows, 8);
  for (int i = 0; i < 8; i++) {
    const double la = hl_table_num(a, i, "loss"), lb = hl_table_num(b, i, "loss");
    if (!(fabs(la - lb) <= FP32_TOL * fabs(la)))
      fail_msg("2 ranks then 1, step %d: loss %.9g, one process throughout %.9g", i + 1, lb, la);
  }
  hl_table_free(a);
  hl_table_free(b);
  hl_rmtree(dir);
  free(dir);
}

/* The processes whose parent is `parent` (from /proc), up to n of them. */
static int children_of(pid_t parent, pid_t *out, int n) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "ps -o pid= --ppid %d", (int)parent);
  hl_run_result r = hl_run("%s", cmd);
  int k = 0;
  for (char *p = r.out; p && *p && k < n;) {
    char *end;
    const long v = strtol(p, &end, 10);
    if (end == p) break;
    out[k++] = (pid_t)v;
    p = end;
  }
  hl_run_free(&r);
  return k;
}

/* The rank processes of the mpirun under timeout(1) `top`, by rank (the
 * OMPI_COMM_WORLD_RANK in their environment). */
static bool rank_pids(pid_t top, pid_t ranks[2]) {
  pid_t mpirun_pid[1], kids[8];
  if (children_of(top, mpirun_pid, 1) != 1) return false;
  const int n = children_of(mpirun_pid[0], kids, 8);
  int found = 0;
  for (int i = 0; i < n; i++) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)kids[i]);
    char env[65536]; /* /proc files have no size to read ahead of: read until the end */
    size_t len = 0;
    FILE *f = fopen(path, "r");
    if (f) {
      len = fread(env, 1, sizeof env - 1, f);
      fclose(f);
    }
    env[len] = '\0';
    for (size_t at = 0; at < len; at += strlen(env + at) + 1)
      if (!strncmp(env + at, "OMPI_COMM_WORLD_RANK=", 21)) {
        const int rank = atoi(env + at + 21);
        if (rank == 0 || rank == 1) ranks[rank] = kids[i], found++;
      }
  }
  return found == 2;
}

/* SIGTERM to rank 1 alone: the ranks stop together at a step boundary
 * (the stop is all-reduced), rank 0 writes its files as interrupted, and
 * every rank waits for that before exiting, so none is cut short or left
 * waiting. (A SIGTERM to mpirun is forwarded to every rank, but mpirun
 * SIGKILLs them a second later.) */
static void test_sigterm(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), cmd[4096];
  snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 exec timeout -s KILL 60 %s " MPIRUN_FLAGS " %s " SMALL
           " --steps 100000 --out %s >/dev/null 2>&1", mpirun(), train(), dir);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  /* wait until steps are being logged: the handlers are installed then */
  int rows = 0;
  for (int tries = 0; tries < 600 && rows < 5; tries++) {
    usleep(50000);
    char *log = hl_read_file(hl_path(dir, "train_tiny_fp32_steps.csv.inprogress"), NULL);
    rows = 0;
    for (char *p = log; p && *p; p++) rows += *p == '\n';
    free(log);
  }
  assert_true(rows >= 5);
  pid_t ranks[2] = {0, 0};
  if (!rank_pids(pid, ranks)) {
    kill(pid, SIGKILL);
    fail_msg("the two rank processes were not found under mpirun");
  }
  kill(ranks[1], SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  /* ended by itself (not by timeout's KILL after 60 s), with a failing status: the ranks exit 143 */
  if (!(WIFEXITED(status) && WEXITSTATUS(status) != 0)) fail_msg("mpirun's status after SIGTERM to rank 1: 0x%x", status);
  char *summary = hl_read_file(hl_path(dir, "train_tiny_fp32_summary.csv.interrupted"), NULL);
  if (!summary || !strstr(summary, "interrupted")) fail_msg("no interrupted summary from rank 0 in %s", dir);
  free(summary);
  hl_rmtree(dir);
  free(dir);
}

static void test_inf_on_one_rank(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), args[1024];
  snprintf(args, sizeof args, SMALL " --mode amp-fp16 --check-replicas 1 --inject-nonfinite 3@1 --out %s", dir);
  hl_run_result r = run_ranks("", args);
  if (r.status != 0) fail_msg("inject on rank 1: exit %d\n%s", r.status, r.err);
  hl_run_free(&r);
  hl_table *t = steps_csv(dir, "amp-fp16");
  for (int i = 0; i < 6; i++) { /* rank 0's gradients were finite: it skipped on rank 1's word */
    assert_true(hl_table_num(t, i, "skipped") == (i == 2));
    assert_true(hl_table_num(t, i, "scale") == (i <= 2 ? 65536 : 32768));
  }
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);
}

static void test_switch_makes_replicas_diverge(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), args[1024];
  snprintf(args, sizeof args, SMALL " --mode amp-fp16 --check-replicas 1 --inject-nonfinite 3@1 --out %s", dir);
  hl_run_result r = run_ranks("HALFLAB_TEST_NO_FOUND_INF_ALLREDUCE=1", args);
  if (r.status != 1) fail_msg("without the found_inf all-reduce: exit %d, not 1\n%s", r.status, r.err);
  if (!hl_has_line(r.err, "--check-replicas: after step 3 the ranks'", "differ"))
    fail_msg("no divergence reported after step 3:\n%s", r.err);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* The job must end within the deadline and this much more: the watchdog's
 * 50 ms tick, MPI_Abort, mpirun ending the stopped rank, and a loaded
 * machine's start-up of two processes. */
#define HANG_SLACK_S 15.0

static void test_hung_rank(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), args[1024];
  snprintf(args, sizeof args, "--device cpu --batch 16 --eval-samples 32 --steps 6 --rank-timeout 2 --out %s", dir);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* timeout(1) only keeps a broken watchdog from hanging the test suite */
  hl_run_result r = hl_run("HALFLAB_TEST_STOP_RANK=1@3 OMP_NUM_THREADS=1 timeout -s KILL 60 %s " MPIRUN_FLAGS " %s %s",
                           mpirun(), train(), args);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  /* timeout's SIGKILL ends mpirun but not its ranks: a broken watchdog must
   * not leave them spinning in a collective after the test */
  hl_run_result reap = hl_run("pkill -KILL -f -- '--out [%c]%s' || true", dir[0], dir + 1); /* [x]: not this shell */
  hl_run_free(&reap);
  const double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  if (r.status != 1) fail_msg("a hung rank: exit %d, not 1 (after %.1f s)\n%s", r.status, wall, r.err);
  if (!hl_has_line(r.err, "rank 0 of 2: waited", "for the other ranks (--rank-timeout 2): a rank died or hangs"))
    fail_msg("no watchdog message:\n%s", r.err);
  if (!(wall < 2 + HANG_SLACK_S)) fail_msg("the job took %.1f s to end, more than 2 + %.0f", wall, HANG_SLACK_S);
  printf("a rank stopped at step 3: the job ended after %.1f s (--rank-timeout 2)\n", wall);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void expect_refused_ranks(const char *args, const char *words) {
  char *dir = hl_tmpdir(), full[1024];
  snprintf(full, sizeof full, "--device cpu --steps 3 --out %s/out %s", dir, args);
  hl_run_result r = run_ranks("", full);
  if (r.status != 2 || !hl_has_line(r.err, words, NULL))
    fail_msg("2 ranks, %s: exit %d, wanted 2 and '%s'\n%s", args, r.status, words, r.err);
  assert_int_equal(hl_count_files(dir), 0);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void test_bad_input(void **state) {
  (void)state;
  expect_refused_ranks("--batch 15", "--batch 15 does not split evenly over 2 ranks");
  expect_refused_ranks("--batch 1", "fewer rows than ranks (2)");
  expect_refused_ranks("--inject-nonfinite 2@2", "rank 2 does not exist: the run has 2 ranks");
  if (!nccl_built()) {
    expect_refused_ranks("--device cuda", "--device cuda: data-parallel training on GPUs is not built");
  } else { /* the GPUs are counted: fewer than 2 here, or the ranks would train on them */
    char *dir = hl_tmpdir(), full[1024];
    snprintf(full, sizeof full, "--device cuda --steps 3 --out %s/out", dir);
    hl_run_result r = run_ranks("", full);
    if (r.status == 0) {
      printf("2 GPU ranks fit this node: --device cuda's refusal for want of GPUs is not tried here\n");
    } else if (r.status != 2 || !hl_has_line(r.err, "--device cuda: 2 ranks on this node", "NCCL")) {
      fail_msg("2 ranks, --device cuda: exit %d, wanted 2 and '2 ranks on this node ... NCCL'\n%s", r.status, r.err);
    } else {
      assert_int_equal(hl_count_files(dir), 0);
    }
    hl_run_free(&r);
    hl_rmtree(dir);
    free(dir);
  }
  expect_refused_ranks("--allreduce-dtype fp8", "unknown allreduce-dtype 'fp8' (fp32, bf16 or fp16)");
  expect_refused_ranks("--bucket-mb -1", "--bucket-mb: '-1': no sign");
  expect_refused_ranks("--bucket-mb 1e6", "--bucket-mb: 1e6 is above 65536");
}

/* ------------------------------------------------------- the build says -- */

static int check_build(void) {
  hl_run_result r = hl_run("%s --help", train());
  const bool built = mpirun() != NULL;
  if (r.status != 0) fail_msg("--help: exit %d", r.status);
  if (built) assert_true(strstr(r.out, "(built in this build: MPI;") != NULL);
  else assert_true(strstr(r.out, "NOT BUILT in this build: built without MPI") != NULL);
  /* GPU ranks: built only with MPI; either way the help says which */
  if (nccl_built()) assert_true(built && strstr(r.out, "GPU ranks over NCCL, not yet run on a GPU") != NULL);
  else if (built) assert_true(strstr(r.out, "GPU ranks NOT BUILT: ") != NULL);
  hl_run_free(&r);
  char *dir = hl_tmpdir();
  hl_expect_refused(dir, 2, "rank 1 does not exist: the run has 1 rank", "%s --device cpu --out %s/o --inject-nonfinite 2@1",
                    train(), dir);
  hl_expect_refused(dir, 2, built ? "one process all-reduces nothing" : "data-parallel training is not built",
                    "%s --device cpu --out %s/o --allreduce-dtype bf16", train(), dir);
  if (!built) {
    hl_expect_refused(dir, 2, "--rank-timeout: data-parallel training is not built",
                      "%s --device cpu --out %s/o --rank-timeout 5", train(), dir);
    hl_expect_refused(dir, 2, "--check-replicas: data-parallel training is not built",
                      "%s --device cpu --out %s/o --check-replicas 1", train(), dir);
    hl_expect_refused(dir, 2, "--bucket-mb: data-parallel training is not built",
                      "%s --device cpu --out %s/o --bucket-mb 4", train(), dir);
    hl_expect_refused(dir, 2, "started by mpirun with 2 ranks, but data-parallel training is not built",
                      "OMPI_COMM_WORLD_SIZE=2 %s --device cpu --out %s/o", train(), dir);
  }
  hl_rmtree(dir);
  free(dir);
  return 0;
}

static void test_build(void **state) {
  (void)state;
  check_build();
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "build")) {
    const struct CMUnitTest build[] = {cmocka_unit_test(test_build)};
    return cmocka_run_group_tests(build, NULL, NULL);
  }
  if (!mpirun()) {
    printf("skipped: data-parallel training is not built (no MPI at configure time, or -Dmpi=disabled)\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_equivalent_fp32),
      cmocka_unit_test(test_equivalent_amp_fp16),
      cmocka_unit_test(test_allreduce_dtypes),
      cmocka_unit_test(test_buckets),
      cmocka_unit_test(test_inf_on_one_rank),
      cmocka_unit_test(test_resume),
      cmocka_unit_test(test_resume_other_rank_count),
      cmocka_unit_test(test_sigterm),
      cmocka_unit_test(test_switch_makes_replicas_diverge),
      cmocka_unit_test(test_hung_rank),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
