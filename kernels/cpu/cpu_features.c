/* cpu_features.c — cpuid, xgetbv and Linux's AMX permission, read once.
 * Bit positions: Intel SDM vol. 2A, CPUID leaves 1 and 7; XCR0 state
 * components: SDM vol. 1, ch. 13; the AMX permission request: Linux's
 * Documentation/arch/x86/xstate.rst. */
#include "kernels/cpu/cpu_features.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fatal.h" /* hl_fatal_program */

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define HL_X86 1
#else
#define HL_X86 0
#endif

static hl_cpu_features features_;
static pthread_once_t once_ = PTHREAD_ONCE_INIT;

#if HL_X86
static uint64_t xcr0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static bool bit(uint32_t word, int n) { return (word >> n) & 1u; }

/* Linux keeps AMX's 8 KiB tile state off until a process asks for it. */
static bool request_amx(char *note, size_t len) {
#ifdef SYS_arch_prctl
  enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
  if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0) return true;
  snprintf(note, len, "arch_prctl(ARCH_REQ_XCOMP_PERM) refused: %s", strerror(errno));
#else
  snprintf(note, len, "no arch_prctl on this OS");
#endif
  return false;
}

static void detect(void) {
  hl_cpu_features *f = &features_;
  uint32_t a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return;
  const uint32_t max_leaf = a;
  memcpy(f->vendor + 0, &b, 4);
  memcpy(f->vendor + 4, &d, 4);
  memcpy(f->vendor + 8, &c, 4);
  f->vendor[12] = '\0';

  __get_cpuid(1, &a, &b, &c, &d);
  const int base_family = (int)((a >> 8) & 0xf), base_model = (int)((a >> 4) & 0xf);
  f->family = base_family == 0xf ? base_family + (int)((a >> 20) & 0xff) : base_family;
  f->model = (base_family == 0x6 || base_family == 0xf) ? (int)(((a >> 16) & 0xf) << 4) + base_model : base_model;
  const bool osxsave = bit(c, 27);
  const uint64_t xcr = osxsave ? xcr0() : 0;
  const bool os_avx = (xcr & 0x6) == 0x6;          /* SSE and YMM state */
  const bool os_avx512 = os_avx && (xcr & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
  const bool os_amx = (xcr & (3u << 17)) == (3u << 17);  /* XTILECFG, XTILEDATA */
  f->avx = os_avx && bit(c, 28);
  f->fma = f->avx && bit(c, 12);
  f->f16c = f->avx && bit(c, 29);

  if (max_leaf < 7) return;
  __cpuid_count(7, 0, a, b, c, d);
  const uint32_t max_sub7 = a;
  f->avx2 = f->avx && bit(b, 5);
  f->avx512f = os_avx512 && bit(b, 16);
  f->avx512dq = f->avx512f && bit(b, 17);
  f->avx512cd = f->avx512f && bit(b, 28);
  f->avx512bw = f->avx512f && bit(b, 30);
  f->avx512vl = f->avx512f && bit(b, 31);
  f->avx512_fp16 = f->avx512f && bit(d, 23);
  f->amx_bf16 = bit(d, 22);
  f->amx_tile = bit(d, 24);
  if (max_sub7 >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f->avx512_bf16 = f->avx512f && bit(a, 5);
    f->amx_fp16 = bit(a, 21);
  }
  if (f->amx_tile) {
    if (!os_amx) snprintf(f->amx_note, sizeof f->amx_note, "the OS does not enable the tile state (XCR0)");
    else f->amx_os_granted = request_amx(f->amx_note, sizeof f->amx_note);
  }
}
#else
static void detect(void) {}
#endif

const hl_cpu_features *hl_cpu_features_get(void) {
  pthread_once(&once_, detect);
  return &features_;
}

bool hl_cpu_has_avx512(const hl_cpu_features *f) {
  return f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->avx512cd;
}

void hl_cpu_features_line(const hl_cpu_features *f, char *out, size_t len) {
  const struct {
    const char *name;
    bool on;
  } list[] = {{"fma", f->fma},           {"f16c", f->f16c},
              {"avx2", f->avx2},         {"avx512f", f->avx512f},
              {"avx512_bf16", f->avx512_bf16}, {"avx512_fp16", f->avx512_fp16},
              {"amx_tile", f->amx_tile}, {"amx_bf16", f->amx_bf16},
              {"amx_fp16", f->amx_fp16}};
  size_t k = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sizeof list / sizeof list[0] && k < len; i++) {
    int n = snprintf(out + k, len - k, "%s%s %s", i ? ", " : "", list[i].name, list[i].on ? "yes" : "no");
    if (n < 0) return;
    k += (size_t)n;
  }
  if (k >= len) return;
  if (!f->amx_tile) snprintf(out + k, len - k, "; AMX tile state: none (no AMX)");
  else if (f->amx_os_granted) snprintf(out + k, len - k, "; AMX tile state: granted by the OS");
  else snprintf(out + k, len - k, "; AMX tile state: not granted (%s)", f->amx_note);
}

/* ------------------------------------------------------ units in use -- */

static hl_cpu_units units_;
static pthread_once_t units_once_ = PTHREAD_ONCE_INIT;

static void choose_units(void) {
  const hl_cpu_features *f = hl_cpu_features_get();
  const char *v = getenv("HALFLAB_CPU_UNITS");
  if (v && *v && strcmp(v, "all") && strcmp(v, "portable")) {
    fprintf(stderr, "%s: HALFLAB_CPU_UNITS=%s: expected 'all' (the default) or 'portable'\n", hl_fatal_program(), v);
    exit(2);
  }
  units_.portable = v && !strcmp(v, "portable");
  if (units_.portable) return;
  const bool avx512 = hl_cpu_has_avx512(f);
  units_.f16c = f->f16c && f->avx;
  units_.avx512_bf16 = avx512 && f->avx512_bf16;
  units_.avx512_fp16 = avx512 && f->avx512_fp16;
  units_.amx_bf16 = f->amx_bf16 && f->amx_os_granted;
}

const hl_cpu_units *hl_cpu_units_get(void) {
  pthread_once(&units_once_, choose_units);
  return &units_;
}

/* Each unit halflab's kernels can use: whether the CPU has it, whether they use it. */
typedef struct {
  const char *name;
  bool present, used;
} unit_state;
enum { UNITS = 4 };

static void unit_states(unit_state *list) {
  const hl_cpu_features *f = hl_cpu_features_get();
  const hl_cpu_units *u = hl_cpu_units_get();
  const bool avx512 = hl_cpu_has_avx512(f);
  const unit_state all[UNITS] = {{"f16c", f->f16c && f->avx, u->f16c},
                                 {"avx512_bf16", avx512 && f->avx512_bf16, u->avx512_bf16},
                                 {"avx512_fp16", avx512 && f->avx512_fp16, u->avx512_fp16},
                                 {"amx_bf16", f->amx_bf16 && f->amx_os_granted, u->amx_bf16}};
  memcpy(list, all, sizeof all);
}

void hl_cpu_units_words(char *out, size_t len) {
  unit_state list[UNITS];
  unit_states(list);
  size_t k = 0;
  out[0] = '\0';
  if (hl_cpu_units_get()->portable) {
    snprintf(out, len, "portable");
    return;
  }
  for (int i = 0; i < UNITS && k < len; i++) {
    if (!list[i].used) continue;
    const int n = snprintf(out + k, len - k, "%s%s", k ? " " : "", list[i].name);
    if (n < 0) return;
    k += (size_t)n;
  }
  if (k == 0) snprintf(out, len, "none");
}

void hl_cpu_units_line(char *out, size_t len) {
  const hl_cpu_units *u = hl_cpu_units_get();
  unit_state list[UNITS];
  unit_states(list);
  size_t k = 0;
  out[0] = '\0';
  for (int i = 0; i < UNITS; i++) {
    if (!(u->portable ? list[i].present : list[i].used) || k >= len) continue;
    int n = snprintf(out + k, len - k, "%s%s", k ? ", " : (u->portable ? "none of " : ""), list[i].name);
    if (n < 0) return;
    k += (size_t)n;
  }
  if (k >= len) return;
  if (u->portable) snprintf(out + k, len - k, "%s(HALFLAB_CPU_UNITS=portable)", k ? " " : "none ");
  else if (k == 0) snprintf(out, len, "none (the CPU has no half-precision unit)");
}
