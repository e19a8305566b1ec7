/* backend_cpu.c — the CPU backend: host memory, wall-clock events, facts
 * from /proc and sysconf. Kernel families are filled in by their own files. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"

struct hl_event {
  struct timespec t;
};

static bool cpu_available(char *why, size_t len) {
  if (why && len) why[0] = '\0';
  return true;
}

/* First value of "key : value" in a /proc-style file, or "" */
static void read_field(const char *path, const char *key, char *out, size_t len) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[512];
  size_t klen = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, klen) != 0) continue;
    char *colon = strchr(line, ':');
    if (!colon) continue;
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    snprintf(out, len, "%s", colon);
    out[strcspn(out, "\n")] = '\0';
    break;
  }
  fclose(f);
}

static long read_long_file(const char *path) {
  FILE *f = fopen(path, "r");
  long v = 0;
  if (f) {
    if (fscanf(f, "%ld", &v) != 1) v = 0;
    fclose(f);
  }
  return v;
}

/* The largest data or unified cache of cpu0, as the kernel lists it in
 * sysfs (what lscpu prints); glibc's sysconf only when sysfs has none.
 * sysconf reads CPUID, which a hypervisor may fill with the host's figure:
 * 320 MiB on the 2-core development VM, whose kernel says 32 MiB. */
static uint64_t last_level_cache_bytes(void) {
  uint64_t best = 0;
  for (int i = 0; i < 16; i++) {
    char path[96], type[32] = "", size[32] = "";
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    FILE *f = fopen(path, "r");
    if (!f) break;
    if (!fgets(type, sizeof type, f)) type[0] = '\0';
    fclose(f);
    if (strncmp(type, "Data", 4) && strncmp(type, "Unified", 7)) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!(f = fopen(path, "r"))) continue;
    if (!fgets(size, sizeof size, f)) size[0] = '\0';
    fclose(f);
    char *unit;
    uint64_t bytes = strtoull(size, &unit, 10);
    bytes *= *unit == 'K' ? 1024u : *unit == 'M' ? 1048576u : *unit == 'G' ? 1073741824u : 1u;
    if (bytes > best) best = bytes;
  }
  if (best) return best;
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return llc > 0 ? (uint64_t)llc : 0;
}

static void cpu_mem_info(uint64_t *free_bytes, uint64_t *total_bytes) {
  char kb[64];
  read_field("/proc/meminfo", "MemAvailable", kb, sizeof kb);
  *free_bytes = (uint64_t)strtoull(kb, NULL, 10) * 1024u;
  read_field("/proc/meminfo", "MemTotal", kb, sizeof kb);
  *total_bytes = (uint64_t)strtoull(kb, NULL, 10) * 1024u;
}

static void cpu_facts(hl_device_facts *out) {
  memset(out, 0, sizeof *out);
  read_field("/proc/cpuinfo", "model name", out->name, sizeof out->name);
  if (!out->name[0]) snprintf(out->name, sizeof out->name, "unknown CPU");
  const hl_cpu_features *c = hl_cpu_features_get();
  /* no comma: the charts take a device line's name up to its first comma */
  if (c->vendor[0]) snprintf(out->model_id, sizeof out->model_id, "family %d model %d", c->family, c->model);
  out->sm_count = (int)sysconf(_SC_NPROCESSORS_ONLN);
  out->threads = omp_get_max_threads();
  char mhz[64];
  read_field("/proc/cpuinfo", "cpu MHz", mhz, sizeof mhz);
  out->clock_mhz = atoi(mhz);
  out->max_clock_mhz = (int)(read_long_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") / 1000);
  cpu_mem_info(&out->free_mem, &out->total_mem);
  out->l2_bytes = last_level_cache_bytes();
  out->ecc = -1;
  out->mig = -1;
  snprintf(out->versions, sizeof out->versions, "OpenMP %d", _OPENMP);
}

static void *cpu_alloc(size_t bytes) {
  void *p = NULL;
  if (bytes == 0) bytes = 1;
  /* 64-byte alignment: whole cache lines, and AVX-512 loads without splits */
  if (posix_memalign(&p, 64, bytes) != 0) return NULL;
  return p;
}

static void cpu_free(void *p) { free(p); }
static void cpu_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
static void cpu_zero(void *p, size_t n) { memset(p, 0, n); }
static void cpu_synchronize(void) {}

static hl_event *cpu_event_create(void) { return calloc(1, sizeof(hl_event)); }
static void cpu_event_record(hl_event *e) { clock_gettime(CLOCK_MONOTONIC, &e->t); }
static float cpu_event_elapsed_ms(hl_event *a, hl_event *b) {
  return (float)((double)(b->t.tv_sec - a->t.tv_sec) * 1e3 + (double)(b->t.tv_nsec - a->t.tv_nsec) * 1e-6);
}
static void cpu_event_destroy(hl_event *e) { free(e); }

const hl_backend hl_backend_cpu = {
    .kind = HL_DEVICE_CPU,
    .name = "cpu",
    .available = cpu_available,
    .facts = cpu_facts,
    .mem_info = cpu_mem_info,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_to_host = cpu_copy,
    .copy_from_host = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .synchronize = cpu_synchronize,
    .event_create = cpu_event_create,
    .event_record = cpu_event_record,
    .event_elapsed_ms = cpu_event_elapsed_ms,
    .event_destroy = cpu_event_destroy,
    .probe = &hl_cpu_probe_kernels,
    .stream = &hl_cpu_stream_kernels,
    .gemm = &hl_cpu_gemm_kernels,
    .tensor = &hl_cpu_tensor_kernels,
    .optim = &hl_cpu_optim_kernels,
    .convert = &hl_cpu_convert_kernels,
    .comm = NULL, /* CPU ranks all-reduce over MPI on the host (core/training/dist.c) */
    .quantize = &hl_cpu_quantize_kernels,
};
