/* comm.h — device collectives: what data-parallel training on GPUs
 * (core/training/dist.h, GPU ranks) needs of a backend. NCCL fills the
 * table in on the CUDA backend (cuda/comm_nccl.cu) where it is built
 * (meson option nccl); a backend's `comm` is NULL everywhere else.
 *
 * The id that lets the ranks find each other travels over another channel
 * (MPI, in core/training): rank 0 makes it, every rank joins with it. The
 * collectives run on the backend's stream, in order with its kernels.
 * Every failure is fatal with the call, NCCL's (or CUDA's) own message and
 * file:line, exit status 1. */
#ifndef HL_COMM_H
#define HL_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { HL_COMM_ID_MAX = 256 }; /* bytes; NCCL's id is 128 */

typedef struct hl_comm_kernels {
  const char *library; /* "NCCL" */
  /* The library that is loaded (not the header built against): "2.28.9". */
  void (*version)(char *out, size_t len);
  /* Devices this process may use (CUDA_VISIBLE_DEVICES applies); 0, with
   * the runtime's reason in why, when there are none. */
  int (*device_count)(char *why, size_t len);
  /* Device `index` becomes this process's: before any other work on a
   * device, so that the backend's stream and memory are made on it. */
  void (*use_device)(int index);
  size_t id_bytes; /* <= HL_COMM_ID_MAX */
  void (*make_id)(void *id);                        /* on one rank */
  void (*join)(const void *id, int rank, int size); /* every rank, together */
  /* In place: buffers[i], n[i] elements of types[i] (f32, f16 or bf16) on
   * the device, replaced by their element-wise sum over the ranks; one
   * grouped call for all of them, enqueued on the backend's stream (the
   * caller synchronises). Every rank, together, with the same counts. */
  void (*allreduce_sum)(int count, void *const *buffers, const int64_t *n, const hl_dtype *types);
  void (*leave)(void); /* the communicator freed: every rank, together */
} hl_comm_kernels;

#ifdef __cplusplus
}
#endif

#endif
