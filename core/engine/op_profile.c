/* op_profile.c — the --profile table: self times, calls and bytes per
 * (op, phase), and the wall time of each phase. */
#include "core/engine/op_profile.h"

#include <string.h>
#include <time.h>

#include "core/base/device.h"

atomic_bool hl_op_profile_recording_;

/* Open addressing over (name, phase); a training step has a few dozen
 * distinct ops, four phases at most. */
#define SLOTS 512

typedef struct {
  const char *op; /* NULL: free */
  uint32_t hash;
  hl_profile_phase phase;
  bool beside;
  uint64_t calls, self_ns, bytes;
} slot;

static slot table_[SLOTS];
static atomic_flag lock_ = ATOMIC_FLAG_INIT; /* ops may run on several threads */
static _Atomic(hl_profile_phase) phase_ = HL_PROFILE_OTHER;
static _Atomic(hl_device_kind) sync_ = HL_DEVICE_CPU;
static uint64_t phase_ns_[HL_PROFILE_PHASES], phase_t0_ns_;
static _Thread_local uint64_t inner_ns_; /* time of the finished spans inside the current one */
static _Thread_local bool beside_;      /* hl_op_profile_thread_beside */

void hl_op_profile_thread_beside(void) { beside_ = true; }

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void lock(void) {
  while (atomic_flag_test_and_set_explicit(&lock_, memory_order_acquire)) {
  }
}
static void unlock(void) { atomic_flag_clear_explicit(&lock_, memory_order_release); }

const char *hl_profile_phase_name(hl_profile_phase p) {
  static const char *const names[HL_PROFILE_PHASES] = {"forward", "backward", "optimizer", "other"};
  return (unsigned)p < HL_PROFILE_PHASES ? names[p] : "?";
}

/* The phase's clock runs only while recording. */
static void close_phase(uint64_t now) {
  phase_ns_[atomic_load(&phase_)] += now - phase_t0_ns_;
  phase_t0_ns_ = now;
}

void hl_op_profile_resume(hl_profile_phase p, hl_device_kind sync) {
  if ((unsigned)p >= HL_PROFILE_PHASES) p = HL_PROFILE_OTHER;
  lock();
  if (atomic_load(&hl_op_profile_recording_)) close_phase(now_ns());
  atomic_store(&phase_, p);
  atomic_store(&sync_, sync);
  phase_t0_ns_ = now_ns();
  atomic_store(&hl_op_profile_recording_, true);
  unlock();
}

hl_profile_phase hl_op_profile_pause(void) {
  lock();
  if (atomic_load(&hl_op_profile_recording_)) close_phase(now_ns());
  atomic_store(&hl_op_profile_recording_, false);
  unlock();
  return atomic_load(&phase_);
}

hl_profile_phase hl_op_profile_set_phase(hl_profile_phase p) {
  if ((unsigned)p >= HL_PROFILE_PHASES) p = HL_PROFILE_OTHER;
  if (!hl_op_profiling()) return atomic_exchange(&phase_, p);
  lock();
  close_phase(now_ns());
  const hl_profile_phase before = atomic_exchange(&phase_, p);
  unlock();
  return before;
}

void hl_op_profile_reset(void) {
  lock();
  memset(table_, 0, sizeof table_);
  memset(phase_ns_, 0, sizeof phase_ns_);
  phase_t0_ns_ = now_ns();
  inner_ns_ = 0;
  unlock();
}

/* ---------------------------------------------------------------- spans -- */

static void synchronise(void) {
  const hl_device_kind d = atomic_load_explicit(&sync_, memory_order_relaxed);
  if (d == HL_DEVICE_CPU) return;
  const hl_backend *b = hl_backend_for(d);
  if (b && b->synchronize) b->synchronize();
}

void hl_op_span_enter(hl_op_span *s) {
  synchronise(); /* work queued before the op is not the op's */
  s->outer_inner_ns = inner_ns_;
  inner_ns_ = 0;
  s->t0_ns = now_ns();
}

static uint32_t fnv1a(const char *s, hl_profile_phase p, bool beside) {
  uint32_t h = 2166136261u ^ ((uint32_t)p + (beside ? HL_PROFILE_PHASES : 0));
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

static void record(const char *op, hl_profile_phase p, uint64_t self_ns, uint64_t bytes) {
  const bool beside = beside_;
  const uint32_t h = fnv1a(op, p, beside);
  lock();
  for (uint32_t i = 0; i < SLOTS; i++) {
    slot *e = &table_[(h + i) % SLOTS];
    if (!e->op) *e = (slot){.op = op, .hash = h, .phase = p, .beside = beside};
    else if (e->hash != h || e->phase != p || e->beside != beside || (e->op != op && strcmp(e->op, op))) continue;
    e->calls++;
    e->self_ns += self_ns;
    e->bytes += bytes;
    break;
  } /* a full table drops the call: SLOTS is far above what a program runs */
  unlock();
}

void hl_op_span_end(hl_op_span *s, const char *op, uint64_t bytes) {
  synchronise(); /* the op's device work is part of its time */
  const uint64_t elapsed = now_ns() - s->t0_ns;
  const uint64_t self = elapsed > inner_ns_ ? elapsed - inner_ns_ : 0;
  inner_ns_ = s->outer_inner_ns + elapsed; /* the enclosing span does not count this time again */
  if (hl_op_profiling()) record(op, atomic_load(&phase_), self, bytes);
}

/* ------------------------------------------------------------- reading -- */

int hl_op_profile_entries(hl_op_profile_entry *out, int cap) {
  int n = 0;
  lock();
  for (int i = 0; i < SLOTS; i++) {
    const slot *e = &table_[i];
    if (!e->op) continue;
    if (n < cap) out[n] = (hl_op_profile_entry){e->op, e->phase, e->calls, e->self_ns, e->bytes, e->beside};
    n++;
  }
  unlock();
  return n;
}

uint64_t hl_op_profile_phase_ns(hl_profile_phase p) {
  if ((unsigned)p >= HL_PROFILE_PHASES) return 0;
  lock();
  if (atomic_load(&hl_op_profile_recording_)) close_phase(now_ns());
  const uint64_t ns = phase_ns_[p];
  unlock();
  return ns;
}
