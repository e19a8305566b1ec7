/* dist_internal.h — what dist.c and dist_nccl.c share of the communicator
 * (dist.h): dist.c owns MPI_COMM_WORLD, its checks and its watchdog;
 * dist_nccl.c the GPU ranks, which use them. Not for other layers. */
#ifndef HL_DIST_INTERNAL_H
#define HL_DIST_INTERNAL_H

#include "core/training/dist.h"

/* A failed MPI call: MPI's message, then the whole job ends (MPI builds). */
void hl_dist_mpi_check(int rc, const char *what, const char *file, int line);
/* The watchdog's view: this process waits in `what` from begin to end. */
void hl_dist_wait_begin(const char *what);
void hl_dist_wait_end(void);

/* dist_nccl.c: the communicator freed (hl_dist_finalize). */
void hl_dist_nccl_end(void);

#endif
