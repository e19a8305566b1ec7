/* backend_cuda.cu — the CUDA backend: device memory on one stream, CUDA
 * events, device facts (runtime attributes, NVML when the driver has it). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_kernels.h"

const char *hl_curand_status_string(curandStatus_t s) {
  switch (s) {
    case CURAND_STATUS_SUCCESS: return "success";
    case CURAND_STATUS_VERSION_MISMATCH: return "header and library versions differ";
    case CURAND_STATUS_NOT_INITIALIZED: return "generator not initialized";
    case CURAND_STATUS_ALLOCATION_FAILED: return "memory allocation failed";
    case CURAND_STATUS_TYPE_ERROR: return "generator is the wrong type";
    case CURAND_STATUS_OUT_OF_RANGE: return "argument out of range";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "length not a multiple of the dimension";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "GPU lacks double precision";
    case CURAND_STATUS_LAUNCH_FAILURE: return "kernel launch failure";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "preexisting failure";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "initialization of CUDA failed";
    case CURAND_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case CURAND_STATUS_INTERNAL_ERROR: return "internal library error";
    default: return "unknown cuRAND status";
  }
}

/* Made once, by whichever thread comes first (pthread_once): threads of one
 * process share the one stream, so their work runs in the order it is
 * queued. */
static cudaStream_t stream_;
static pthread_once_t stream_once_ = PTHREAD_ONCE_INIT;
static void make_stream(void) { HL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }

cudaStream_t hl_cuda_stream(void) {
  pthread_once(&stream_once_, make_stream);
  return stream_;
}

static int sm_count_;
static pthread_once_t sm_count_once_ = PTHREAD_ONCE_INIT;
static void read_sm_count(void) {
  int dev = 0, n = 0;
  HL_CUDA_CHECK(cudaGetDevice(&dev));
  HL_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  sm_count_ = n > 0 ? n : 1;
}

int hl_cuda_sm_count(void) {
  pthread_once(&sm_count_once_, read_sm_count);
  return sm_count_;
}

static bool cuda_available(char *why, size_t len) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0) {
    if (why && len) why[0] = '\0';
    return true;
  }
  if (why && len) {
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    if (e == cudaErrorInsufficientDriver && drv > 0)
      snprintf(why, len, "the CUDA driver (supports %d.%d) is older than this build's runtime %d.%d",
               drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    else if (drv == 0)
      snprintf(why, len, "no NVIDIA driver is installed (cudaDriverGetVersion reports none)");
    else if (e == cudaErrorNoDevice || n == 0)
      snprintf(why, len, "the NVIDIA driver sees no CUDA device");
    else
      snprintf(why, len, "cudaGetDeviceCount failed: %s", cudaGetErrorString(e));
  }
  cudaGetLastError(); /* clear the sticky-free error so later calls start clean */
  return false;
}

/* ---- NVML, loaded at run time: the toolkit here ships no nvml.h, and a
 * machine without the driver has no libnvidia-ml. Declarations follow the
 * NVML API's documented signatures. */
typedef struct nvmlDevice_st *nvml_device;
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_pci_fn)(const char *, nvml_device *);
typedef int (*nvml_clock_fn)(nvml_device, int, unsigned *);
typedef int (*nvml_mode_fn)(nvml_device, unsigned *, unsigned *);
enum { NVML_CLOCK_SM_ = 1, NVML_CLOCK_MEM_ = 2 };

static void nvml_facts(int dev, hl_device_facts *out) {
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  nvml_init_fn init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
  nvml_init_fn shutdown = (nvml_init_fn)dlsym(lib, "nvmlShutdown");
  nvml_by_pci_fn by_pci = (nvml_by_pci_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  nvml_clock_fn clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetClockInfo");
  nvml_clock_fn max_clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetMaxClockInfo");
  nvml_mode_fn ecc = (nvml_mode_fn)dlsym(lib, "nvmlDeviceGetEccMode");
  nvml_mode_fn mig = (nvml_mode_fn)dlsym(lib, "nvmlDeviceGetMigMode");
  char pci[32];
  nvml_device h;
  if (init && by_pci && init() == 0) {
    if (cudaDeviceGetPCIBusId(pci, sizeof pci, dev) == cudaSuccess && by_pci(pci, &h) == 0) {
      unsigned v = 0, pending = 0;
      if (clock && clock(h, NVML_CLOCK_SM_, &v) == 0) out->clock_mhz = (int)v, out->clocks_from_nvml = 1;
      if (max_clock && max_clock(h, NVML_CLOCK_SM_, &v) == 0) out->max_clock_mhz = (int)v;
      if (max_clock && max_clock(h, NVML_CLOCK_MEM_, &v) == 0) out->mem_clock_mhz = (int)v;
      if (ecc && ecc(h, &v, &pending) == 0) out->ecc = (int)v;
      if (mig && mig(h, &v, &pending) == 0) out->mig = (int)v;
    }
    if (shutdown) shutdown();
  }
  dlclose(lib);
}

static void pool_trim(void); /* memory, below */

static void cuda_mem_info(uint64_t *free_bytes, uint64_t *total_bytes) {
  size_t free_b = 0, total_b = 0;
  pool_trim(); /* cached free blocks are free memory */
  HL_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  *free_bytes = free_b;
  *total_bytes = total_b;
}

static void cuda_facts(hl_device_facts *out) {
  memset(out, 0, sizeof *out);
  out->ecc = -1;
  out->mig = -1;
  int dev = 0;
  HL_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p;
  HL_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  snprintf(out->name, sizeof out->name, "%s", p.name);
  out->cc_major = p.major;
  out->cc_minor = p.minor;
  out->sm_count = p.multiProcessorCount;
  out->threads = p.maxThreadsPerMultiProcessor;
  out->l2_bytes = (uint64_t)p.l2CacheSize;
  out->mem_bus_bits = p.memoryBusWidth;
  out->ecc = p.ECCEnabled;
  int khz = 0;
  /* cudaDeviceProp lost clockRate in CUDA 13; the attribute works on 12 and 13 */
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev) == cudaSuccess) out->max_clock_mhz = khz / 1000;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess) out->mem_clock_mhz = khz / 1000;
  cuda_mem_info(&out->free_mem, &out->total_mem);
  nvml_facts(dev, out);
  int rt = 0, drv = 0, bl_major = 0, bl_minor = 0, bl_patch = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  cublasGetProperty(MAJOR_VERSION, &bl_major);
  cublasGetProperty(MINOR_VERSION, &bl_minor);
  cublasGetProperty(PATCH_LEVEL, &bl_patch);
  snprintf(out->versions, sizeof out->versions, "runtime %d.%d, driver %d.%d, cuBLAS %d.%d.%d",
           rt / 1000, rt % 1000 / 10, drv / 1000, drv % 1000 / 10, bl_major, bl_minor, bl_patch);
}

/* ---- memory: the device's stream-ordered pool where it has one (CUDA 11.2+).
 * The core frees a tensor as soon as nobody holds it, often while kernels
 * that read it are still queued: cudaFree would wait for the whole device at
 * every release, cudaFreeAsync returns the block in stream order. Freed
 * blocks stay in the pool (release threshold: never) for the next step's
 * tensors of the same sizes, instead of going back to the driver at every
 * synchronisation. The accounting allocator (core/base/mem.h) counts the bytes
 * asked for either way; cuda_facts trims the pool before it reads the free
 * memory, so that cached blocks do not count as used. */
static int pool_state_; /* 0: not decided yet, 1: stream-ordered pool, 2: cudaMalloc */
static cudaMemPool_t pool_;
static pthread_once_t pool_once_ = PTHREAD_ONCE_INIT; /* decided once, whichever thread allocates first */

static void decide_pool(void) {
  int dev = 0, supported = 0;
  pool_state_ = 2;
  if (cudaGetDevice(&dev) == cudaSuccess &&
      cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, dev) == cudaSuccess && supported &&
      cudaDeviceGetDefaultMemPool(&pool_, dev) == cudaSuccess) {
    uint64_t keep = UINT64_MAX;
    HL_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
    pool_state_ = 1;
  }
  cudaGetLastError(); /* a device without pools is not an error */
}

static bool use_pool(void) {
  pthread_once(&pool_once_, decide_pool);
  return pool_state_ == 1;
}

/* Blocks the pool holds but nothing uses go back to the driver. */
static void pool_trim(void) {
  if (pool_state_ != 1) return;
  HL_CUDA_CHECK(cudaStreamSynchronize(hl_cuda_stream()));
  HL_CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0));
}

static void *cuda_alloc(size_t bytes) {
  void *p = NULL;
  const size_t n = bytes ? bytes : 1;
  if (!use_pool()) {
    cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return NULL;
    }
    HL_CUDA_CHECK(e);
    return p;
  }
  cudaError_t e = cudaMallocAsync(&p, n, hl_cuda_stream());
  if (e == cudaErrorMemoryAllocation) {
    /* the pool may hold freed blocks of other sizes: return them, try once more */
    cudaGetLastError();
    pool_trim();
    e = cudaMallocAsync(&p, n, hl_cuda_stream());
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return NULL;
    }
  }
  HL_CUDA_CHECK(e);
  return p;
}

static void cuda_free(void *p) {
  if (!p) return;
  if (pool_state_ == 1) HL_CUDA_CHECK(cudaFreeAsync(p, hl_cuda_stream()));
  else HL_CUDA_CHECK(cudaFree(p));
}

static void cuda_copy_to_host(void *dst, const void *src, size_t n) {
  HL_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, hl_cuda_stream()));
  HL_CUDA_CHECK(cudaStreamSynchronize(hl_cuda_stream()));
}

static void cuda_copy_from_host(void *dst, const void *src, size_t n) {
  HL_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, hl_cuda_stream()));
  HL_CUDA_CHECK(cudaStreamSynchronize(hl_cuda_stream()));
}

static void cuda_copy(void *dst, const void *src, size_t n) {
  HL_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, hl_cuda_stream()));
}

static void cuda_zero(void *p, size_t n) { HL_CUDA_CHECK(cudaMemsetAsync(p, 0, n, hl_cuda_stream())); }
static void cuda_synchronize(void) { HL_CUDA_CHECK(cudaStreamSynchronize(hl_cuda_stream())); }

struct hl_event {
  cudaEvent_t e;
};

static hl_event *cuda_event_create(void) {
  hl_event *ev = (hl_event *)calloc(1, sizeof *ev);
  if (!ev) return NULL;
  HL_CUDA_CHECK(cudaEventCreate(&ev->e));
  return ev;
}
static void cuda_event_record(hl_event *ev) { HL_CUDA_CHECK(cudaEventRecord(ev->e, hl_cuda_stream())); }
static float cuda_event_elapsed_ms(hl_event *a, hl_event *b) {
  float ms = 0;
  HL_CUDA_CHECK(cudaEventSynchronize(b->e));
  HL_CUDA_CHECK(cudaEventElapsedTime(&ms, a->e, b->e));
  return ms;
}
static void cuda_event_destroy(hl_event *ev) {
  if (!ev) return;
  HL_CUDA_CHECK(cudaEventDestroy(ev->e));
  free(ev);
}

extern "C" const hl_backend hl_backend_cuda = {
    HL_DEVICE_CUDA,
    "cuda",
    cuda_available,
    cuda_facts,
    cuda_mem_info,
    cuda_alloc,
    cuda_free,
    cuda_copy_to_host,
    cuda_copy_from_host,
    cuda_copy,
    cuda_zero,
    cuda_synchronize,
    cuda_event_create,
    cuda_event_record,
    cuda_event_elapsed_ms,
    cuda_event_destroy,
    &hl_cuda_probe_kernels,
    &hl_cuda_stream_kernels,
    &hl_cuda_gemm_kernels,
    &hl_cuda_tensor_kernels,
    &hl_cuda_optim_kernels,
    &hl_cuda_convert_kernels,
#ifdef HL_HAVE_NCCL
    &hl_cuda_comm_kernels,
#else
    NULL, /* built without NCCL (meson option nccl): no GPU ranks */
#endif
    &hl_cuda_quantize_kernels,
};
