/* op_profile.h — `--profile`: per (op, phase) the calls, the time and the
 * bytes of every op the dispatcher runs, and of the kernels the autograd
 * engine and the optimizers call directly (named spans such as
 * "autograd.accumulate", "optim.adamw"), so that a training step's cost
 * can be read op by op.
 *
 *   time   self time: the wall clock (CLOCK_MONOTONIC) from an op's entry
 *          to its exit, its kernel included, less the time of the ops it
 *          ran inside it (autocast's casts, a contiguous copy), so that the
 *          entries add up to no more than the time they ran in. With a
 *          synchronising device (hl_op_profile_resume's `sync`, CUDA) the
 *          device is synchronised at every entry and exit: the time is the
 *          device's work, not the launch.
 *   bytes  of the op's inputs (after autocast's casts) and of its output,
 *          numel x element size each; an output that shares an input's
 *          storage (a view, the input itself) moved nothing and counts 0.
 *          Direct kernels count what they read plus what they write.
 *   phase  what the program says it is doing (hl_op_profile_set_phase);
 *          the autograd engine runs its backward functions in
 *          HL_PROFILE_BACKWARD whatever the program said.
 *
 * Recording happens between hl_op_profile_resume and hl_op_profile_pause
 * (a program records only what it times). When it is off, an op pays one
 * relaxed atomic load and a branch. Op names must outlive the profile
 * (the registry's names, string literals). One process-wide table; the
 * nesting of spans is per thread. C only. */
#ifndef HL_OP_PROFILE_H
#define HL_OP_PROFILE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/backend.h"

typedef enum {
  HL_PROFILE_FORWARD = 0,
  HL_PROFILE_BACKWARD,
  HL_PROFILE_OPTIMIZER, /* unscale, gradient norm and clipping, the step, the scale update */
  HL_PROFILE_OTHER,     /* anything else inside the recorded time (batch upload, zero_grad) */
  HL_PROFILE_PHASES
} hl_profile_phase;

const char *hl_profile_phase_name(hl_profile_phase p); /* "forward", "backward", "optimizer", "other" */

extern atomic_bool hl_op_profile_recording_; /* read through hl_op_profiling() */
static inline bool hl_op_profiling(void) {
  return atomic_load_explicit(&hl_op_profile_recording_, memory_order_relaxed);
}

/* Starts (or continues) recording in phase p; `sync` is the device whose
 * work the times must include (HL_DEVICE_CPU: nothing to synchronise). */
void hl_op_profile_resume(hl_profile_phase p, hl_device_kind sync);
/* Stops recording; returns the phase it was in, for the next resume. */
hl_profile_phase hl_op_profile_pause(void);
/* The phase from now on; returns the one before. Cheap when not recording. */
hl_profile_phase hl_op_profile_set_phase(hl_profile_phase p);
/* Forgets everything recorded (the table and the phases' times). */
void hl_op_profile_reset(void);

/* A timed region of one op or direct kernel:
 *   hl_op_span s;
 *   const bool timed = hl_op_span_begin(&s);
 *   ... the work ...
 *   if (timed) hl_op_span_end(&s, "optim.adamw", bytes);
 * Spans nest (an op inside an op); each must end on the thread it began. */
typedef struct {
  uint64_t t0_ns;
  uint64_t outer_inner_ns; /* the enclosing span's inner time, restored at the end */
} hl_op_span;

void hl_op_span_enter(hl_op_span *s);
void hl_op_span_end(hl_op_span *s, const char *op, uint64_t bytes);
static inline bool hl_op_span_begin(hl_op_span *s) {
  if (!hl_op_profiling()) return false;
  hl_op_span_enter(s);
  return true;
}

/* The calling thread runs beside the program's own (the gradient
 * all-reduce's communication thread): its spans overlap the phase they are
 * recorded in, so they are kept apart (entry.beside) and must not be
 * summed with the phase's ops. Call it once, first thing in the thread. */
void hl_op_profile_thread_beside(void);

/* What was recorded, per (op, phase, beside). */
typedef struct {
  const char *op;
  hl_profile_phase phase;
  uint64_t calls;
  uint64_t self_ns;
  uint64_t bytes;
  bool beside; /* recorded by a thread beside the program's (hl_op_profile_thread_beside) */
} hl_op_profile_entry;

/* Copies up to cap entries into out (in no particular order); returns how
 * many there are. */
int hl_op_profile_entries(hl_op_profile_entry *out, int cap);
/* Wall time recorded in phase p (ops and everything between them). */
uint64_t hl_op_profile_phase_ns(hl_profile_phase p);

#endif
