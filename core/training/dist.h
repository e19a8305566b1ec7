/* dist.h — the data-parallel communicator: the ranks of one training job
 * and the few collectives data-parallel training needs (docs/train.md,
 * "Data-parallel training").
 *
 * Built with MPI (meson option mpi), a process started by mpirun (Open
 * MPI's OMPI_COMM_WORLD_SIZE, or PMI_SIZE, in its environment) joins
 * MPI_COMM_WORLD; every other process, and every process of a build
 * without MPI, is rank 0 of 1 and the collectives return their input. A
 * process not started by mpirun never initialises MPI, so a single-process
 * run does exactly what it did before MPI was linked.
 *
 *   hl_dist_init(&argc, &argv);      // before anything else reads argv
 *   if (hl_dist_rank() == 0) write the files;
 *   hl_dist_allreduce_mean_f32(grads, n);   // every rank the same mean
 *   found = hl_dist_allreduce_max(found);   // any rank's inf stops all
 *   hl_dist_finalize();
 *
 * A failed collective is a runtime failure: the message (with MPI's error
 * text) and MPI_Abort of the whole job, so that no rank waits for a dead
 * one. Collectives must be called by every rank in the same order. */
#ifndef HL_DIST_H
#define HL_DIST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/tensor.h" /* hl_dtype */

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this build has MPI (meson option mpi). */
bool hl_dist_built(void);
/* Why not, for a "not built" message; "" when built. */
const char *hl_dist_not_built_why(void);
/* The rank count the launcher asked for (1 when none did), read from the
 * environment: lets a build without MPI refuse mpirun instead of running
 * N unrelated copies. */
int hl_dist_launcher_size(void);

/* Joins the job when started by mpirun (no-op otherwise, or twice). */
void hl_dist_init(int *argc, char ***argv);
int hl_dist_rank(void); /* 0 .. size - 1 */
int hl_dist_size(void); /* 1 outside mpirun */
bool hl_dist_active(void); /* MPI initialised: size may still be 1 */
/* Collectives may be called from another thread than the one that joined,
 * one thread at a time (MPI_THREAD_SERIALIZED or better). */
bool hl_dist_threads_serialized(void);

/* In place, the element-wise mean over the ranks: summed on the wire in
 * `wire` (HL_F32, or HL_BF16 / HL_F16: the values rounded to it, each
 * addition of two ranks' values rounded to it again, half the bytes of
 * f32), then times 1/size in f32, the same on every rank. */
void hl_dist_allreduce_mean(float *values, int64_t n, hl_dtype wire);
/* The largest / the sum of one value over the ranks. */
double hl_dist_allreduce_max(double v);
double hl_dist_allreduce_sum(double v);
void hl_dist_barrier(void);

/* The watchdog: MPI collectives have no timeout of their own, so a rank
 * that dies without exiting, or stops (SIGSTOP, a hang), would keep the
 * others waiting for ever. Once started (seconds > 0, inside a job of 2
 * ranks or more), a thread watches every collective of this process: one
 * that has waited longer than `seconds` prints which, where and for how
 * long, and ends the whole job with MPI_Abort (exit status 1). `option`
 * names the setting in that message. */
void hl_dist_start_watchdog(double seconds, const char *option);
/* Ends every rank of the job with status code (exit(code) outside MPI). */
_Noreturn void hl_dist_abort(int code);
/* Leaves the job; waits for every rank to get here (so that a rank
 * exiting with a non-zero status, which makes mpirun end the job, cannot
 * cut another short). A no-op outside MPI. */
void hl_dist_finalize(void);

#ifdef __cplusplus
}
#endif

#endif
