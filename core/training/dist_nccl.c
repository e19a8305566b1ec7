/* dist_nccl.c — the GPU ranks of the communicator (dist.h): one GPU per
 * rank, the gradients all-reduced on the devices by NCCL through the CUDA
 * backend's collective table (kernels/comm.h). MPI, which started the
 * ranks, tells each its place on its node and hands NCCL's id from rank 0
 * to the others; its watchdog (dist.c) also covers the waits for NCCL. */
#include "core/training/dist_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/device.h"
#include "core/base/error.h"
#include "core/engine/autograd.h"
#include "core/engine/op_profile.h"
#include "formats/fatal.h"
#include "kernels/comm.h"

#ifdef HL_HAVE_MPI
#include <mpi.h>
#define MPI_CHECK(call) hl_dist_mpi_check((call), #call, __FILE__, __LINE__)
#define WAIT_BEGIN(what) hl_dist_wait_begin(what)
#define WAIT_END() hl_dist_wait_end()
#else /* no MPI: no watchdog (and no GPU ranks, which these serve) */
#define WAIT_BEGIN(what) ((void)(what))
#define WAIT_END() ((void)0)
#endif

/* meson's reason when NCCL is not built (core/training/meson.build) */
#ifndef HL_NCCL_WHY
#define HL_NCCL_WHY "NCCL was not found at configure time"
#endif

static bool nccl_on;          /* the communicator is made: gradients go through NCCL */
static int node_rank = -1;    /* this rank's place among its node's ranks */
static int node_gpus;         /* the GPUs this node's processes see */
static int gpu_index = -1;
static char nccl_version[32];

static const hl_comm_kernels *comm_table(void) {
  const hl_backend *b = hl_backend_for(HL_DEVICE_CUDA);
  return b ? b->comm : NULL;
}

hl_dist_backend hl_dist_backend_kind(void) {
  return nccl_on ? HL_DIST_NCCL_DEVICE : hl_dist_active() ? HL_DIST_MPI_HOST : HL_DIST_ONE;
}

bool hl_dist_reduces(void) { return nccl_on || hl_dist_size() > 1; }

bool hl_dist_nccl_built(void) {
#ifdef HL_HAVE_MPI
  return comm_table() != NULL;
#else
  return false; /* meson builds NCCL only with MPI; this keeps the two in step */
#endif
}

const char *hl_dist_nccl_not_built_why(void) { return hl_dist_nccl_built() ? "" : HL_NCCL_WHY; }

int hl_dist_gpu_index(void) { return gpu_index; }
const char *hl_dist_nccl_version(void) { return nccl_version; }

#ifdef HL_HAVE_MPI
/* Open MPI's own count of this rank on its node, when it is in range:
 * the number a user sees in mpirun's --display-map and in other tools. */
static int launcher_node_rank(int node_size, int fallback) {
  const char *v = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  char *end = NULL;
  const long r = v ? strtol(v, &end, 10) : -1;
  return v && *v && !*end && r >= 0 && r < node_size ? (int)r : fallback;
}
#endif

bool hl_dist_gpu_ranks_fit(char *why, size_t len) {
  if (len) why[0] = '\0';
  const hl_comm_kernels *c = comm_table();
  if (!hl_dist_nccl_built() || !c) {
    snprintf(why, len, "data-parallel training on GPUs is not built: %s", hl_dist_nccl_not_built_why());
    return false;
  }
  char reason[256];
  node_gpus = c->device_count(reason, sizeof reason);
  if (node_gpus == 0) (void)hl_device_available(HL_DEVICE_CUDA, reason, sizeof reason); /* the backend's fuller reason */
  int node_size = 1;
  node_rank = 0;
#ifdef HL_HAVE_MPI
  if (hl_dist_active()) { /* the ranks that share this node's memory are the ones that share its GPUs */
    MPI_Comm node;
    WAIT_BEGIN("MPI_Comm_split_type (the ranks of each node)");
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, hl_dist_rank(), MPI_INFO_NULL, &node));
    WAIT_END();
    int split_rank = 0;
    MPI_CHECK(MPI_Comm_rank(node, &split_rank));
    MPI_CHECK(MPI_Comm_size(node, &node_size));
    MPI_CHECK(MPI_Comm_free(&node));
    node_rank = launcher_node_rank(node_size, split_rank);
  }
#endif
  const bool fits = node_gpus >= node_size;
  /* every rank the same verdict, so that none goes on to NCCL alone */
  if (hl_dist_allreduce_max(fits ? 0.0 : 1.0) == 0.0) return true;
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown host");
  if (fits)
    snprintf(why, len, "another node has fewer GPUs than ranks (its ranks say which): NCCL puts no two ranks on one GPU");
  else if (node_gpus == 0)
    snprintf(why, len, "%d rank%s on this node (%s) but no usable GPU (%s): NCCL needs a GPU for every rank", node_size,
             node_size == 1 ? "" : "s", host, reason);
  else
    snprintf(why, len, "%d ranks on this node (%s) but %d GPU%s: NCCL puts no two ranks on one GPU; start at most %d "
                       "rank%s per node",
             node_size, host, node_gpus, node_gpus == 1 ? "" : "s", node_gpus, node_gpus == 1 ? "" : "s");
  return false;
}

void hl_dist_bind_gpu(void) {
  const hl_comm_kernels *c = comm_table();
  if (!c || node_rank < 0 || node_gpus <= 0) hl_fatal("hl_dist_bind_gpu: call it after hl_dist_gpu_ranks_fit says yes");
  gpu_index = node_rank % node_gpus;
  c->use_device(gpu_index);
}

void hl_dist_nccl_init(void) {
  const hl_comm_kernels *c = comm_table();
  if (nccl_on) return;
  if (!c || gpu_index < 0) hl_fatal("hl_dist_nccl_init: call it after hl_dist_bind_gpu");
  unsigned char id[HL_COMM_ID_MAX];
  memset(id, 0, sizeof id);
  if (hl_dist_rank() == 0) c->make_id(id);
#ifdef HL_HAVE_MPI
  if (hl_dist_active()) {
    WAIT_BEGIN("MPI_Bcast (NCCL's id)");
    MPI_CHECK(MPI_Bcast(id, (int)c->id_bytes, MPI_BYTE, 0, MPI_COMM_WORLD));
    WAIT_END();
  }
#endif
  WAIT_BEGIN("ncclCommInitRank");
  c->join(id, hl_dist_rank(), hl_dist_size());
  WAIT_END();
  c->version(nccl_version, sizeof nccl_version);
  nccl_on = true;
}

void hl_dist_nccl_end(void) {
  if (!nccl_on) return;
  WAIT_BEGIN("ncclCommFinalize");
  comm_table()->leave();
  WAIT_END();
  nccl_on = false;
}

/* The gradients' mean over the ranks, on the devices, with the host path's
 * arithmetic (dist.h, hl_dist_allreduce_mean): each gradient in the wire
 * type (in place when it is in it already, else a converted copy), summed
 * by one grouped ncclAllReduce, then times 1/size in f32 and written back
 * in the gradient's dtype. */
bool hl_dist_allreduce_grads_mean_device(hl_tensor *const *params, int n, hl_dtype wire) {
  const hl_comm_kernels *c = comm_table();
  hl_tensor **grads = calloc((size_t)(n > 0 ? n : 1), sizeof *grads);
  hl_tensor **bufs = calloc((size_t)(n > 0 ? n : 1), sizeof *bufs);
  void **data = calloc((size_t)(n > 0 ? n : 1), sizeof *data);
  int64_t *counts = calloc((size_t)(n > 0 ? n : 1), sizeof *counts);
  hl_dtype *types = calloc((size_t)(n > 0 ? n : 1), sizeof *types);
  if (!grads || !bufs || !data || !counts || !types) hl_fatal("out of host memory for the gradient all-reduce");
  hl_op_span span; /* --profile: as the host path's, one call a step, the bytes on the wire */
  const bool timed = hl_op_span_begin(&span);
  int k = 0;
  int64_t total = 0;
  bool ok = true;
  HL_NO_GRAD {
    for (int i = 0; i < n && ok; i++) {
      hl_tensor *g = hl_tensor_grad(params[i]);
      if (!g) continue;
      if (!hl_is_contiguous(g)) {
        ok = hl_fail_bool("all-reduce: the gradient of %s (%s) is not contiguous", hl_tensor_name(params[i]), hl_desc(g));
        break;
      }
      hl_tensor *b = g->dtype == wire ? hl_retain(g) : hl_empty(hl_tensor_shape(g), wire, g->device);
      ok = b && (b == g || hl_copy_(b, g));
      if (!b) break;
      grads[k] = g, bufs[k] = b, data[k] = hl_tensor_data(b), counts[k] = hl_numel(b), types[k] = wire;
      total += counts[k++];
    }
    if (ok && k > 0) {
      c->allreduce_sum(k, data, counts, types);
      /* waited for here, in the watchdog's sight: a rank that never joins
       * the collective leaves the others in this synchronisation */
      WAIT_BEGIN("ncclAllReduce (gradients)");
      hl_backend_for(HL_DEVICE_CUDA)->synchronize();
      WAIT_END();
    }
    const double inv = (double)(1.0f / (float)hl_dist_size()); /* the host path's f32 factor */
    for (int j = 0; j < k && ok; j++) {
      hl_tensor *b = bufs[j], *g = grads[j];
      hl_tensor_mark_modified(b);
      if (wire == HL_F32) {
        ok = hl_scale_(b, inv) && (b == g || hl_copy_(g, b));
      } else { /* a 16-bit sum: widened, then the mean in f32 as on the host */
        hl_tensor *f = hl_empty(hl_tensor_shape(g), HL_F32, g->device);
        ok = f && hl_copy_(f, b) && hl_scale_(f, inv) && hl_copy_(g, f);
        hl_release(f);
      }
    }
  }
  for (int j = 0; j < k; j++) hl_release(bufs[j]);
  if (timed)
    hl_op_span_end(&span, wire == HL_F16 ? "dist.allreduce_f16" : wire == HL_BF16 ? "dist.allreduce_bf16" : "dist.allreduce_f32",
                   (uint64_t)total * (uint64_t)hl_dtype_size(wire));
  free(grads);
  free(bufs);
  free(data);
  free(counts);
  free(types);
  return ok;
}
