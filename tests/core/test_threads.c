/* test_threads.c — suite unit: the core used from several threads of one
 * process at once, as examples/dp_threads.c does (docs/core.md, "Using the
 * core from several threads"):
 *   - the accounting allocator: concurrent allocations and frees leave
 *     exact totals (every allocation and byte counted once, current back
 *     where it started);
 *   - forwards on shared weights: each thread's result is the one a single
 *     thread gets, bit for bit; autocast's regions, cast cache and counters,
 *     grad mode and the error message are each thread's own;
 *   - the op profile and the op trace take every thread's calls, none lost,
 *     each trace line whole.
 * Run under ThreadSanitizer (docs/core.md says how) it also shows the
 * absence of data races on these paths. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/op_profile.h"
#include "core/engine/op_trace.h"
#include "tests/core/core_test.h"

#define CPU HL_DEVICE_CPU

enum { THREADS = 4 };

static void start_all(pthread_t *th, void *(*fn)(void *), void *args, size_t arg_size) {
  for (int t = 0; t < THREADS; t++) assert_int_equal(pthread_create(&th[t], NULL, fn, (char *)args + t * arg_size), 0);
}

static void join_all(pthread_t *th) {
  for (int t = 0; t < THREADS; t++) assert_int_equal(pthread_join(th[t], NULL), 0);
}

/* ----------------------------------------------------------- accounting -- */

enum { ROUNDS = 20000 };

/* Tensors of a thread-specific spread of sizes, made and released at once
 * or a few rounds later, so that allocations and frees of all threads
 * interleave. */
static pthread_barrier_t start_together_; /* so that the threads' rounds overlap */

static void *allocate_and_free(void *arg) {
  const int id = *(int *)arg;
  hl_tensor *held[4] = {NULL};
  pthread_barrier_wait(&start_together_);
  for (int r = 0; r < ROUNDS; r++) {
    hl_release(held[r % 4]);
    held[r % 4] = hl_zeros(HL_SHAPE(1 + (r + id) % 7, 3), HL_F32, CPU);
    if (!held[r % 4]) abort(); /* not a cmocka assertion: this is not the test's thread */
  }
  for (int i = 0; i < 4; i++) hl_release(held[i]);
  return NULL;
}

static void test_accounting_under_concurrent_allocation(void **state) {
  (void)state;
  hl_mem_reset_peak(CPU);
  const hl_mem_stats before = hl_mem_get_stats(CPU);
  pthread_t th[THREADS];
  int ids[THREADS];
  uint64_t bytes = 0;
  for (int t = 0; t < THREADS; t++) {
    ids[t] = t;
    for (int r = 0; r < ROUNDS; r++) bytes += (uint64_t)(1 + (r + t) % 7) * 3 * sizeof(float);
  }
  assert_int_equal(pthread_barrier_init(&start_together_, NULL, THREADS), 0);
  start_all(th, allocate_and_free, ids, sizeof ids[0]);
  join_all(th);
  pthread_barrier_destroy(&start_together_);
  const hl_mem_stats after = hl_mem_get_stats(CPU);
  assert_int_equal(after.allocs - before.allocs, (uint64_t)THREADS * ROUNDS);
  assert_int_equal(after.total - before.total, bytes);
  assert_int_equal(after.current, before.current);
  /* a thread's four tensors were live at once, at most every thread's */
  assert_true(after.peak >= before.current + 4 * 3 * sizeof(float));
  assert_true(after.peak <= before.current + THREADS * 4 * 7 * 3 * sizeof(float));
}

/* -------------------------------------------------------------- forwards -- */

enum { ROWS = 24, IN = 16, HIDDEN = 32, OUT = 8, REPEATS = 20 };

typedef struct {
  hl_tensor *w[4]; /* fc1.weight, fc1.bias, fc2.weight, fc2.bias: shared, read only */
  hl_tensor *x;    /* the batch, shared */
} shared_model;

static hl_tensor *forward(const shared_model *m) {
  hl_pool_push();
  hl_tensor *h = hl_tmp(hl_relu(hl_tmp(hl_linear(m->x, m->w[0], m->w[1]))));
  hl_tensor *y = hl_linear(h, m->w[2], m->w[3]);
  hl_pool_pop();
  return y;
}

typedef struct {
  const shared_model *m;
  hl_dtype lower;            /* HL_DTYPE_NONE: no autocast region in this thread */
  const float *want;         /* the single-thread result for this dtype */
  /* what the thread found; the main thread asserts */
  int mismatches, wrong_dtype, failures;
  bool region_leaked, cache_leaked, grad_mode_leaked, foreign_error;
  uint64_t conversions;
  char error[256];
} forward_job;

static bool same_values(hl_tensor *y, const float *want) {
  float got[ROWS * OUT];
  return hl_read_f32(y, got) && !memcmp(got, want, sizeof got);
}

static void *forward_repeatedly(void *arg) {
  forward_job *j = arg;
  const uint64_t conversions_before = hl_autocast_conversions();
  for (int r = 0; r < REPEATS; r++) {
    hl_tensor *y = NULL;
    if (j->lower != HL_DTYPE_NONE) {
      HL_AUTOCAST(CPU, j->lower, true) { y = forward(j->m); }
    } else {
      y = forward(j->m);
    }
    if (!y) {
      j->failures++;
      continue;
    }
    j->wrong_dtype += y->dtype != (j->lower != HL_DTYPE_NONE ? j->lower : HL_F32);
    j->mismatches += !same_values(y, j->want);
    hl_release(y);
    j->region_leaked |= hl_autocast_depth() != 0;
    j->cache_leaked |= hl_autocast_cache_size() != 0;
    /* grad mode is per thread too: turning it off here must not reach the others */
    HL_NO_GRAD { j->grad_mode_leaked |= hl_grad_enabled(); }
    j->grad_mode_leaked |= !hl_grad_enabled();
  }
  j->conversions = hl_autocast_conversions() - conversions_before;
  /* an error of this thread stays in this thread */
  hl_tensor *bad = hl_mm(j->m->x, j->m->x); /* [24,16] x [24,16]: shapes that do not fit */
  j->foreign_error = bad != NULL || !strstr(hl_error(), "mm");
  snprintf(j->error, sizeof j->error, "%s", hl_error());
  hl_release(bad);
  return NULL;
}

static float *single_thread_result(const shared_model *m, hl_dtype lower) {
  float *v = malloc(sizeof(float) * ROWS * OUT);
  assert_non_null(v);
  hl_tensor *y = NULL;
  if (lower != HL_DTYPE_NONE) {
    HL_AUTOCAST(CPU, lower, true) { y = forward(m); }
  } else {
    y = forward(m);
  }
  OK(y && hl_read_f32(y, v));
  hl_release(y);
  return v;
}

static void test_forwards_on_shared_weights(void **state) {
  (void)state;
  hl_pool_push();
  const hl_shape shapes[4] = {HL_SHAPE(HIDDEN, IN), HL_SHAPE(HIDDEN), HL_SHAPE(OUT, HIDDEN), HL_SHAPE(OUT)};
  shared_model m;
  for (int i = 0; i < 4; i++) {
    m.w[i] = hl_tmp(hl_randn(shapes[i], 0, 0.3, 11, (uint64_t)i, HL_F32, CPU));
    OK(m.w[i] && hl_set_requires_grad(m.w[i], true)); /* so that autocast caches their casts */
  }
  m.x = hl_tmp(hl_randn(HL_SHAPE(ROWS, IN), 0, 1, 11, 9, HL_F32, CPU));
  OK(m.x);
  /* the threads alternate: no region, bf16, fp16, no region */
  const hl_dtype lowers[THREADS] = {HL_DTYPE_NONE, HL_BF16, HL_F16, HL_DTYPE_NONE};
  float *want[THREADS];
  for (int t = 0; t < THREADS; t++) want[t] = single_thread_result(&m, lowers[t]);
  const hl_mem_stats before = hl_mem_get_stats(CPU);

  /* the profile and the trace record all threads' ops */
  char *trace_text = NULL;
  size_t trace_size = 0;
  FILE *trace = open_memstream(&trace_text, &trace_size);
  assert_non_null(trace);
  hl_op_trace_to(trace);
  hl_op_profile_reset();
  hl_op_profile_resume(HL_PROFILE_FORWARD, CPU);

  pthread_t th[THREADS];
  forward_job jobs[THREADS];
  for (int t = 0; t < THREADS; t++) jobs[t] = (forward_job){.m = &m, .lower = lowers[t], .want = want[t]};
  HL_AUTOCAST(CPU, HL_BF16, true) { /* the main thread's region reaches no thread */
    start_all(th, forward_repeatedly, jobs, sizeof jobs[0]);
    join_all(th);
  }

  hl_op_profile_pause();
  hl_op_trace_to(NULL);
  assert_int_equal(fclose(trace), 0);

  for (int t = 0; t < THREADS; t++) {
    const forward_job *j = &jobs[t];
    const char *kind = lowers[t] == HL_DTYPE_NONE ? "f32" : hl_dtype_name(lowers[t]);
    if (j->failures || j->mismatches || j->wrong_dtype)
      fail_msg("thread %d (%s): %d failed, %d differ from the single-thread result, %d of the wrong dtype", t, kind,
               j->failures, j->mismatches, j->wrong_dtype);
    assert_false(j->region_leaked);
    assert_false(j->cache_leaked);
    assert_false(j->grad_mode_leaked);
    if (j->foreign_error) fail_msg("thread %d: its own error is not in hl_error(): '%s'", t, j->error);
    /* a region casts x, the two weights and the two biases once per forward; no region casts nothing */
    assert_int_equal(j->conversions, lowers[t] == HL_DTYPE_NONE ? 0 : 5 * REPEATS);
  }
  assert_false(hl_has_error()); /* the threads' errors did not reach this thread */
  assert_int_equal(hl_mem_get_stats(CPU).current, before.current);

  /* two linears per forward in every thread; a `to` per cast */
  hl_op_profile_entry e[256];
  const int n = hl_op_profile_entries(e, 256);
  uint64_t linears = 0, casts = 0;
  for (int i = 0; i < n && i < 256; i++) {
    if (!strcmp(e[i].op, "linear")) linears += e[i].calls;
    if (!strcmp(e[i].op, "to")) casts += e[i].calls;
  }
  assert_int_equal(linears, (uint64_t)THREADS * REPEATS * 2);
  assert_int_equal(casts, (uint64_t)2 * REPEATS * 5);
  hl_op_profile_reset();

  /* every line whole: each starts with "trace: " and names an op the forward runs */
  int lines = 0, linear_lines = 0;
  for (char *line = strtok(trace_text, "\n"); line; line = strtok(NULL, "\n")) {
    if (strncmp(line, "trace: ", 7)) fail_msg("a trace line was broken: '%s'", line);
    lines++;
    linear_lines += !strncmp(line + 7, "linear ", 7);
  }
  assert_int_equal(linear_lines, THREADS * REPEATS * 2);
  assert_true(lines > linear_lines);
  free(trace_text);
  for (int t = 0; t < THREADS; t++) free(want[t]);
  hl_error_clear();
  hl_pool_pop();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_accounting_under_concurrent_allocation),
      cmocka_unit_test(test_forwards_on_shared_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
