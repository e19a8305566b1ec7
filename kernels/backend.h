/* backend.h — the one interface every compute backend fills in.
 *
 * A backend owns memory, copies, timing events and device facts; the kernel
 * families (numerics probes, streaming kernels, GEMM, tensor ops, optimizer
 * kernels) hang off it as sub-tables, each declared in its own header under
 * kernels/. A sub-table pointer is NULL where a backend lacks that family.
 *
 * Kernels know nothing of autograd or autocast: they include only the
 * layer below them, formats/ (half.h, format.h, philox.h, hd.h).
 */
#ifndef HL_BACKEND_H
#define HL_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* HL_BACKEND_LIST(X): the backends, one X(KIND, name, label, built, also,
 * why_absent) each, made by kernels/meson.build from its list (see
 * hl_backends.h.in). The device kinds are its KINDs in order: HL_DEVICE_CPU
 * (0, the host), HL_DEVICE_CUDA, ... */
#include "hl_backends.h"

#define HL_DEVICE_KIND_(KIND, name, label, built, also, why_absent) HL_DEVICE_##KIND,
typedef enum { HL_BACKEND_LIST(HL_DEVICE_KIND_) HL_DEVICE_KINDS } hl_device_kind;
#undef HL_DEVICE_KIND_

/* What a backend knows of its device; "unknown" fields are 0 or -1 as noted. */
typedef struct hl_device_facts {
  char name[256];             /* "NVIDIA H200", "Intel(R) Xeon(R) Processor" */
  char model_id[48];          /* CPU: "family 26 model 2" (cpuid's display family and model, as /proc/cpuinfo
                                 shows them): a VM's name ("AMD EPYC") does not tell generations apart;
                                 empty off x86 and on GPUs */
  int cc_major, cc_minor;     /* compute capability; 0 on the CPU */
  int sm_count;               /* SMs; on the CPU: logical cores */
  int threads;                /* CPU: OpenMP threads used; GPU: max threads per SM */
  int clock_mhz;              /* current SM / core clock, 0 if unknown */
  int max_clock_mhz;          /* maximum SM / core clock, 0 if unknown */
  int mem_clock_mhz;          /* 0 if unknown */
  int mem_bus_bits;           /* 0 if unknown */
  uint64_t total_mem;         /* bytes */
  uint64_t free_mem;          /* bytes, at the time of the query */
  uint64_t l2_bytes;          /* GPU L2; CPU: last-level cache */
  int ecc;                    /* 1 on, 0 off, -1 unknown */
  int mig;                    /* 1 MIG enabled, 0 disabled, -1 unknown / not applicable */
  int clocks_from_nvml;       /* 1 when the clocks came from NVML */
  char versions[160];         /* "runtime 13.0, driver 13.0, cuBLAS 13.0.2" */
} hl_device_facts;

typedef struct hl_event hl_event;

struct hl_probe_kernels;   /* kernels/probe.h   — numerics probes */
struct hl_stream_kernels;  /* kernels/stream.h  — bandwidth (copy, scale, add, triad, dot) */
struct hl_gemm_kernels;    /* kernels/gemm.h    — matrix products */
struct hl_tensor_kernels;  /* kernels/tensor_kernels.h — ops of the AMP core */
struct hl_optim_kernels;   /* kernels/optim_kernels.h  — scaler, optimizers, clipping */
struct hl_convert_kernels; /* kernels/convert.h — conversions and half ops, for the gpu suite */
struct hl_comm_kernels;    /* kernels/comm.h    — collectives between devices (NCCL), for GPU ranks */
struct hl_quantize_kernels; /* kernels/quantize.h — block-scaled quantizers (fp8, MX, NVFP4) */

typedef struct hl_backend {
  hl_device_kind kind;
  const char *name; /* "cpu", "cuda": its name in HL_BACKEND_LIST */

  /* false with a reason (no device, driver too old, not built) */
  bool (*available)(char *why, size_t len);
  void (*facts)(hl_device_facts *out);
  /* Free and total memory now (cheap; facts() is not). */
  void (*mem_info)(uint64_t *free_bytes, uint64_t *total_bytes);

  /* Memory. alloc returns NULL when the device is out of memory; every other
   * failure is fatal with the call, file:line and the library's message. */
  void *(*alloc)(size_t bytes);
  void (*free)(void *p);
  void (*copy_to_host)(void *host_dst, const void *dev_src, size_t bytes);
  void (*copy_from_host)(void *dev_dst, const void *host_src, size_t bytes);
  void (*copy)(void *dev_dst, const void *dev_src, size_t bytes);
  void (*zero)(void *p, size_t bytes);
  void (*synchronize)(void);

  /* Timing: GPU events on the backend's stream; wall clock on the CPU. */
  hl_event *(*event_create)(void);
  void (*event_record)(hl_event *e);
  float (*event_elapsed_ms)(hl_event *start, hl_event *stop); /* synchronizes on stop */
  void (*event_destroy)(hl_event *e);

  const struct hl_probe_kernels *probe;
  const struct hl_stream_kernels *stream;
  const struct hl_gemm_kernels *gemm;
  const struct hl_tensor_kernels *tensor;
  const struct hl_optim_kernels *optim;
  const struct hl_convert_kernels *convert;
  const struct hl_comm_kernels *comm; /* NULL where NCCL is not built */
  const struct hl_quantize_kernels *quantize;
} hl_backend;

/* Each backend's table, hl_backend_<name>, defined in its folder
 * (kernels/cpu/backend_cpu.c, kernels/cuda/backend_cuda.cu) where the build
 * has it; core/base/device.h's hl_backend_for finds the built ones. The
 * host's, hl_backend_cpu, is always there. */
#define HL_BACKEND_TABLE_(KIND, name, label, built, also, why_absent) extern const hl_backend hl_backend_##name;
HL_BACKEND_LIST(HL_BACKEND_TABLE_)
#undef HL_BACKEND_TABLE_

#ifdef __cplusplus
}
#endif

#endif /* HL_BACKEND_H */
