/* blas.c — opens the BLAS with the kernel set chosen for this CPU (why:
 * kernels/cpu/blas.h). */
#include "kernels/cpu/blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats/fatal.h"

#ifndef HL_BLAS_LIBRARY
#define HL_BLAS_LIBRARY "libopenblas.so.0"
#endif

static hl_blas_api api_;
static hl_blas_info info_;
static pthread_once_t once_ = PTHREAD_ONCE_INIT;
/* A load that fails is reported after pthread_once returns, never inside it:
 * the exit handlers that the fatal runs may ask hl_blas_info_get() again, and
 * a pthread_once entered from inside itself waits for ever. */
static char load_error_[1024];
static atomic_int load_state_; /* LOAD_* */
enum { LOAD_NOT_STARTED, LOAD_UNDER_WAY, LOAD_DONE };

const char *hl_blas_pick_kernels(const hl_cpu_features *f) {
  if (hl_cpu_has_avx512(f)) return f->avx512_bf16 ? "Cooperlake" : "SkylakeX";
  if (f->avx2 && f->fma) return strcmp(f->vendor, "AuthenticAMD") ? "Haswell" : "Zen";
  if (f->avx) return "Sandybridge";
  return NULL;
}

const char *hl_blas_kernels_isa(const char *kernels) {
  static const struct {
    const char *name, *isa;
  } sets[] = {
      {"SkylakeX", "avx512"},  {"Cooperlake", "avx512"}, {"SapphireRapids", "avx512"},
      {"Haswell", "avx2"},     {"Zen", "avx2"},          {"Excavator", "avx2"},
      {"Sandybridge", "avx"},  {"Bulldozer", "avx"},     {"Piledriver", "avx"},
      {"Steamroller", "avx"},  {"Prescott", "sse"},      {"Core2", "sse"},
      {"Penryn", "sse"},       {"Dunnington", "sse"},    {"Nehalem", "sse"},
      {"Atom", "sse"},         {"Opteron", "sse"},       {"Opteron_SSE3", "sse"},
      {"Barcelona", "sse"},    {"Bobcat", "sse"},        {"Katmai", "sse"},
      {"Coppermine", "sse"},   {"Northwood", "sse"},     {"Banias", "sse"},
  };
  if (!kernels) return NULL;
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
    if (!strcasecmp(kernels, sets[i].name)) return sets[i].isa;
  return NULL;
}

static void *need(void *lib, const char *symbol) {
  void *p = dlsym(lib, symbol);
  if (!p && !load_error_[0])
    snprintf(load_error_, sizeof load_error_, "the BLAS %s has no %s: %s", info_.library, symbol, dlerror());
  return p;
}

static void describe_kernels(void *lib, const hl_cpu_features *f, const char *asked) {
  char *(*corename)(void) = (char *(*)(void))dlsym(lib, "openblas_get_corename");
  char *(*config)(void) = (char *(*)(void))dlsym(lib, "openblas_get_config");
  const char *core = corename ? corename() : NULL;
  snprintf(info_.kernels, sizeof info_.kernels, "%s", core && *core ? core : "unknown");
  const char *conf = config ? config() : NULL;
  snprintf(info_.config, sizeof info_.config, "%s", conf ? conf : "");
  /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": the first two words */
  int words = 0;
  size_t n = 0;
  for (; conf && conf[n] && words < 2; n++)
    if (conf[n] == ' ') words++;
  if (conf && n > 0) snprintf(info_.version, sizeof info_.version, "%.*s", (int)(conf[n] ? n - 1 : n), conf);
  else snprintf(info_.version, sizeof info_.version, "unknown");
  if (asked && core && strcasecmp(asked, core))
    snprintf(info_.chosen_by + strlen(info_.chosen_by), sizeof info_.chosen_by - strlen(info_.chosen_by),
             "; the library runs %s instead (it has no %s kernels)", core, asked);

  const char *isa = hl_blas_kernels_isa(core);
  const char *cpu_isa = hl_cpu_has_avx512(f) ? "AVX-512" : f->avx2 ? "AVX2" : NULL;
  info_.generic = isa && !strcmp(isa, "sse") && cpu_isa;
  if (info_.generic)
    snprintf(info_.warning, sizeof info_.warning,
             "kernel set %s is OpenBLAS's generic SSE code on a CPU with %s: sgemm runs several times slower "
             "than this CPU's own kernels, so fp32 GEMM figures (and every ratio against them) do not show this CPU",
             core, cpu_isa);
}

static void load(void) {
  atomic_store(&load_state_, LOAD_UNDER_WAY);
  const hl_cpu_features *f = hl_cpu_features_get();
  const char *path = getenv("HALFLAB_BLAS_LIBRARY");
  if (!path || !*path) path = HL_BLAS_LIBRARY;
  snprintf(info_.library, sizeof info_.library, "%s", path);

  const char *user = getenv("OPENBLAS_CORETYPE");
  const char *pick = hl_blas_pick_kernels(f);
  const char *asked = NULL;
  bool set_here = false;
  if (user && *user) {
    snprintf(info_.chosen_by, sizeof info_.chosen_by, "OPENBLAS_CORETYPE=%s, set in the environment", user);
    asked = user;
  } else if (pick) {
    /* read by OpenBLAS's constructor while dlopen runs, and only then */
    set_here = setenv("OPENBLAS_CORETYPE", pick, 1) == 0;
    snprintf(info_.chosen_by, sizeof info_.chosen_by, "halflab, from cpuid (%s; OPENBLAS_CORETYPE unset)",
             hl_cpu_has_avx512(f) ? (f->avx512_bf16 ? "AVX-512 with BF16" : "AVX-512")
             : f->avx2            ? "AVX2 and FMA"
                                  : "AVX");
    asked = pick;
  } else {
    snprintf(info_.chosen_by, sizeof info_.chosen_by, "the library's own detection");
  }
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (set_here) unsetenv("OPENBLAS_CORETYPE"); /* leave the user's environment as it was */
  if (!lib) snprintf(load_error_, sizeof load_error_, "cannot load the BLAS %s: %s", path, dlerror());
  if (lib) api_.sgemm = (__typeof__(api_.sgemm))need(lib, "cblas_sgemm");
  if (lib) api_.dgemm = (__typeof__(api_.dgemm))need(lib, "cblas_dgemm");
  if (!load_error_[0]) {
    describe_kernels(lib, f, asked);
    info_.opened = true;
  } else {
    snprintf(info_.version, sizeof info_.version, "not opened (the load failed)");
  }
  atomic_store(&load_state_, LOAD_DONE);
}

/* The BLAS opened, or the load's failure: file:line and the loader's message, exit 1. */
static void open_once(void) {
  pthread_once(&once_, load);
  if (load_error_[0]) hl_fatal("%s", load_error_);
}

const hl_blas_api *hl_blas(void) {
  open_once();
  return &api_;
}

const hl_blas_info *hl_blas_info_get(void) {
#ifdef HL_BLAS_NOT_OPENED
  /* halflab-numerics alone: no GEMM runs, so no BLAS need be installed to describe it */
  static const hl_blas_info not_opened = {.version = "not opened: this build (-Dnumerics-only=true) runs no GEMM"};
  return &not_opened;
#endif
  /* an exit handler after a fatal (the run's summary) describes what is there, loading nothing */
  static const hl_blas_info not_loaded = {.version = "not opened: the program ended first"};
  if (hl_fatal_in_progress()) return atomic_load(&load_state_) == LOAD_DONE ? &info_ : &not_loaded;
  open_once();
  return &info_;
}
