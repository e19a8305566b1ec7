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
 * one. Collectives must be called by every rank in the same order.
 *
 * Two backends carry the gradients (hl_dist_backend): MPI on the host, the
 * CPU ranks' (the gradients read to the host in f32), and NCCL on the
 * devices, the GPU ranks' (dist_nccl.c: one GPU per rank, the gradients
 * where they are). GPU ranks are started by mpirun too, and MPI hands them
 * NCCL's id, so NCCL is built only with MPI (and the CUDA backend); the
 * one-value collectives (found_inf, the loss, the checksums) stay on MPI
 * for both, since their values are on the host already. */
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
 * N unrelated copies. -1 with hl_error() when the variable holds no rank
 * count ("2x", "0", " 2"). */
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

/* ---- GPU ranks (dist_nccl.c) ------------------------------------------
 *
 *   if (!hl_dist_gpu_ranks_fit(why, len)) refuse;   // every rank a GPU of its own
 *   hl_dist_bind_gpu();                              // before any CUDA work
 *   hl_dist_nccl_init();                             // the communicator
 *   hl_dist_allreduce_grads_mean_device(params, n, wire);   // each step, after the backward
 */
typedef enum {
  HL_DIST_ONE = 0,     /* one process: nothing to reduce */
  HL_DIST_MPI_HOST,    /* MPI, the gradients read to the host in f32 (CPU ranks) */
  HL_DIST_NCCL_DEVICE, /* NCCL on the devices, the gradients where they are (GPU ranks) */
} hl_dist_backend;
hl_dist_backend hl_dist_backend_kind(void);
/* Whether a training step all-reduces: more than one rank, or GPU ranks
 * (NCCL's all-reduce runs even in a job of one, so that one GPU runs all
 * of the GPU ranks' path). */
bool hl_dist_reduces(void);

/* Whether this build has GPU ranks: MPI, the CUDA backend and NCCL. */
bool hl_dist_nccl_built(void);
/* Why not, for a "not built" message; "" when built. */
const char *hl_dist_nccl_not_built_why(void);
/* Collective (every rank, inside mpirun's job): whether every node has at
 * least as many GPUs as ranks, since NCCL puts no two ranks on one device.
 * The same answer on every rank; false with why: this node's ranks and
 * GPUs (none: the runtime's reason), or that another node lacks them. */
bool hl_dist_gpu_ranks_fit(char *why, size_t len);
/* This rank's GPU: its rank on its node modulo the node's GPUs (Open MPI's
 * OMPI_COMM_WORLD_LOCAL_RANK), made current before any other CUDA work.
 * After hl_dist_gpu_ranks_fit. */
void hl_dist_bind_gpu(void);
int hl_dist_gpu_index(void); /* -1 before hl_dist_bind_gpu */
/* Collective: the NCCL communicator of all the ranks (rank 0 makes the id,
 * MPI_Bcast hands it on). From here on the backend is HL_DIST_NCCL_DEVICE;
 * hl_dist_finalize frees it. A failure is fatal (exit 1, NCCL's message). */
void hl_dist_nccl_init(void);
/* The NCCL library loaded: "2.28.9" ("" before hl_dist_nccl_init). */
const char *hl_dist_nccl_version(void);
/* GPU ranks: the tensors' gradients (those that have one) replaced by
 * their mean over the ranks on the devices (one grouped ncclAllReduce, sum
 * x 1/N in f32, written back in each gradient's dtype; `wire` the type on
 * the wire). The CPU ranks' host all-reduce is grad_buckets.h. false with
 * hl_error() on a failure. */
bool hl_dist_allreduce_grads_mean_device(hl_tensor *const *params, int n, hl_dtype wire);

#ifdef __cplusplus
}
#endif

#endif
