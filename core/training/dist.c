/* dist.c — the data-parallel communicator (dist.h): MPI_COMM_WORLD when
 * built with MPI and started by mpirun, else one process. */
#include "core/training/dist.h"
#include "core/training/dist_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/engine/op_profile.h"
#include "formats/fatal.h"
#include "kernels/host.h"

#ifdef HL_HAVE_MPI
#include <mpi.h>
#endif

static int dist_rank = 0, dist_size = 1;
static bool dist_active = false;

int hl_dist_launcher_size(void) {
  /* Open MPI's mpirun, and PMI launchers (MPICH's hydra, srun) */
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (!v) continue;
    /* digits only, as every number halflab reads: "2x" or " 2" is not a rank count */
    const size_t digits = strspn(v, "0123456789");
    const long n = digits && digits <= 6 && !v[digits] ? strtol(v, NULL, 10) : 0;
    if (n < 1) {
      hl_fail("%s='%s' is not a rank count (a whole number above 0)", vars[i], v);
      return -1;
    }
    return (int)n;
  }
  return 1;
}

bool hl_dist_built(void) {
#ifdef HL_HAVE_MPI
  return true;
#else
  return false;
#endif
}

const char *hl_dist_not_built_why(void) {
  return hl_dist_built() ? "" : "built without MPI (libopenmpi-dev not found at configure time, or -Dmpi=disabled)";
}

#ifdef HL_HAVE_MPI
/* A failed collective: MPI's own message, then the whole job ends. */
static void check(int rc, const char *what, const char *file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", rc);
  fprintf(stderr, "%s: rank %d: %s failed: %s (%s:%d)\n", hl_fatal_program(), dist_rank, what, text, file, line);
  MPI_Abort(MPI_COMM_WORLD, HL_EXIT_FAILURE);
  exit(HL_EXIT_FAILURE);
}
#define MPI_CHECK(call) check((call), #call, __FILE__, __LINE__)

/* ---- the watchdog: when this process entered the collective it waits in */

static _Atomic int64_t waiting_since_ns; /* 0: not in a collective */
static const char *_Atomic waiting_in;
static double watchdog_seconds;
static const char *watchdog_option;
static bool thread_multiple; /* MPI_Abort may be called from the watchdog's thread */
static bool thread_serialized; /* collectives may come from the gradient buckets' thread */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void wait_begin(const char *what) {
  atomic_store(&waiting_in, what);
  atomic_store(&waiting_since_ns, now_ns());
}
static void wait_end(void) { atomic_store(&waiting_since_ns, 0); }
#define COLLECTIVE(name, call) (wait_begin(name), check((call), #call, __FILE__, __LINE__), wait_end())

/* the same checks and watchdog for the GPU ranks' MPI calls and NCCL waits (dist_nccl.c) */
void hl_dist_mpi_check(int rc, const char *what, const char *file, int line) { check(rc, what, file, line); }
void hl_dist_wait_begin(const char *what) { wait_begin(what); }
void hl_dist_wait_end(void) { wait_end(); }

static void *watchdog(void *arg) {
  (void)arg;
  const struct timespec tick = {0, 50 * 1000000}; /* the deadline is kept to within 50 ms */
  for (;;) {
    nanosleep(&tick, NULL);
    const int64_t since = atomic_load(&waiting_since_ns);
    if (!since) continue;
    const double waited = (double)(now_ns() - since) / 1e9;
    if (waited <= watchdog_seconds) continue;
    fprintf(stderr, "%s: rank %d of %d: waited %.1f s in %s for the other ranks (%s %g): a rank died or hangs; "
                    "ending the job (MPI_Abort)\n", hl_fatal_program(), dist_rank, dist_size, waited,
            atomic_load(&waiting_in), watchdog_option, watchdog_seconds);
    fflush(stderr);
    if (thread_multiple) MPI_Abort(MPI_COMM_WORLD, HL_EXIT_FAILURE);
    _exit(HL_EXIT_FAILURE); /* without MPI_THREAD_MULTIPLE: mpirun ends the others when this rank exits */
  }
  return NULL;
}
#endif

void hl_dist_start_watchdog(double seconds, const char *option) {
#ifdef HL_HAVE_MPI
  static bool started;
  if (started || !dist_active || dist_size == 1 || !(seconds > 0)) return;
  watchdog_seconds = seconds;
  watchdog_option = option;
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  const int rc = pthread_create(&t, &attr, watchdog, NULL);
  pthread_attr_destroy(&attr);
  if (rc) hl_fatal("starting the MPI watchdog thread: %s", strerror(rc));
  started = true;
#else
  (void)seconds, (void)option;
#endif
}

void hl_dist_init(int *argc, char ***argv) {
#ifdef HL_HAVE_MPI
  if (dist_active || (hl_dist_launcher_size() <= 1 && !getenv("OMPI_COMM_WORLD_RANK"))) return;
  int provided = MPI_THREAD_SINGLE;
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) hl_fatal("MPI_Init_thread failed (error %d): is this mpirun's job?", rc);
  thread_multiple = provided >= MPI_THREAD_MULTIPLE;
  thread_serialized = provided >= MPI_THREAD_SERIALIZED;
  /* errors come back to check(), which names the call, instead of MPI's default abort */
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &dist_rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &dist_size));
  dist_active = true;
#else
  (void)argc, (void)argv;
#endif
}

int hl_dist_rank(void) { return dist_rank; }
int hl_dist_size(void) { return dist_size; }
bool hl_dist_active(void) { return dist_active; }

bool hl_dist_threads_serialized(void) {
#ifdef HL_HAVE_MPI
  return dist_active && thread_serialized;
#else
  return false;
#endif
}

#ifdef HL_HAVE_MPI
/* MPI's sums of 16-bit floats: each addition in f32, rounded back once
 * (what a half-precision all-reduce on the wire does). The conversions
 * are the CPU's vector ones (kernels/host.h: F16C,
 * AVX512-BF16), bit for bit formats/half.h's, a chunk at a time. */
enum { SUM_CHUNK = 1024 };
static void sum_half(const uint16_t *a, uint16_t *b, int len, hl_dtype t) {
  float x[SUM_CHUNK], y[SUM_CHUNK];
  for (int at = 0; at < len; at += SUM_CHUNK) {
    const size_t k = (size_t)(len - at < SUM_CHUNK ? len - at : SUM_CHUNK);
    hl_cpu_widen(t, a + at, x, k);
    hl_cpu_widen(t, b + at, y, k);
    for (size_t i = 0; i < k; i++) y[i] += x[i];
    hl_cpu_narrow(t, y, b + at, k);
  }
}
static void sum_f16(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  sum_half(in, inout, *len, HL_F16);
}
static void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  sum_half(in, inout, *len, HL_BF16);
}

/* The 16-bit wire: values rounded to it, summed by the op above, widened back. */
static void allreduce_half(float *values, int64_t n, bool bf16) {
  static MPI_Op ops[2] = {MPI_OP_NULL, MPI_OP_NULL};
  if (ops[bf16] == MPI_OP_NULL) MPI_CHECK(MPI_Op_create(bf16 ? sum_bf16 : sum_f16, 1, &ops[bf16]));
  const hl_dtype t = bf16 ? HL_BF16 : HL_F16;
  uint16_t *wire = malloc(sizeof *wire * (size_t)(n > 0 ? n : 1));
  if (!wire) hl_fatal("out of host memory for the all-reduce (%lld values)", (long long)n);
  hl_cpu_narrow(t, values, wire, (size_t)n);
  const int64_t piece = 1 << 30; /* MPI counts are int */
  for (int64_t at = 0; at < n; at += piece) {
    const int count = (int)(n - at < piece ? n - at : piece);
    COLLECTIVE("MPI_Allreduce (gradients)", MPI_Allreduce(MPI_IN_PLACE, wire + at, count, MPI_UINT16_T, ops[bf16], MPI_COMM_WORLD));
  }
  hl_cpu_widen(t, wire, values, (size_t)n);
  free(wire);
}
#endif

void hl_dist_allreduce_mean(float *values, int64_t n, hl_dtype wire) {
#ifdef HL_HAVE_MPI
  if (!dist_active || dist_size == 1) return;
  hl_op_span span; /* --profile: the all-reduce's time and its bytes on the wire */
  const bool timed = hl_op_span_begin(&span);
  if (wire == HL_F16 || wire == HL_BF16) {
    allreduce_half(values, n, wire == HL_BF16);
  } else {
    const int64_t piece = 1 << 30; /* MPI counts are int: large buffers go in pieces */
    for (int64_t at = 0; at < n; at += piece) {
      const int count = (int)(n - at < piece ? n - at : piece);
      COLLECTIVE("MPI_Allreduce (gradients)", MPI_Allreduce(MPI_IN_PLACE, values + at, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    }
  }
  const float inv = 1.0f / (float)dist_size;
  for (int64_t i = 0; i < n; i++) values[i] *= inv;
  if (timed)
    hl_op_span_end(&span, wire == HL_F16 ? "dist.allreduce_f16" : wire == HL_BF16 ? "dist.allreduce_bf16" : "dist.allreduce_f32",
                   (uint64_t)n * (wire == HL_F16 || wire == HL_BF16 ? 2u : 4u));
#else
  (void)values, (void)n, (void)wire;
#endif
}

static double allreduce_one(double v, bool max) {
#ifdef HL_HAVE_MPI
  if (!dist_active || dist_size == 1) return v;
  double out = v;
  hl_op_span span;
  const bool timed = hl_op_span_begin(&span);
  COLLECTIVE("MPI_Allreduce (one value)", MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, max ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD));
  if (timed) hl_op_span_end(&span, "dist.allreduce_value", sizeof v);
  return out;
#else
  (void)max;
  return v;
#endif
}

double hl_dist_allreduce_max(double v) { return allreduce_one(v, true); }
double hl_dist_allreduce_sum(double v) { return allreduce_one(v, false); }

void hl_dist_barrier(void) {
#ifdef HL_HAVE_MPI
  if (dist_active) COLLECTIVE("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
#endif
}

_Noreturn void hl_dist_abort(int code) {
  fflush(stdout);
  fflush(stderr);
#ifdef HL_HAVE_MPI
  if (dist_active) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  exit(code);
}

void hl_dist_finalize(void) {
#ifdef HL_HAVE_MPI
  if (dist_active) { /* every rank gets here before any leaves (MPI_Finalize need not wait) */
    COLLECTIVE("MPI_Barrier (finalize)", MPI_Barrier(MPI_COMM_WORLD));
    hl_dist_nccl_end(); /* GPU ranks: every rank is here, none has work in flight */
    wait_begin("MPI_Finalize");
    MPI_Finalize();
    wait_end();
  }
  dist_active = false;
#endif
}
