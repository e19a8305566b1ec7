/* clock.c — the CPU's core clock, measured as the cores run it, and the
 * range the machine says it can be in (docs/bench.md, Peaks). A CPU's peak
 * is FLOP per cycle x cores x this clock; a measurement outside its range is
 * not used, and the peak is unknown. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "kernels/host.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* ------------------------------------------------------- measurement -- */

enum {
  CHAIN_IMULS_LOG2 = 20,
  CHAIN_IMULS = 1 << CHAIN_IMULS_LOG2, /* per timed repetition: ~1 ms at 3 GHz */
  CHAIN_REPETITIONS = 16,     /* the best one counts: another process's moment on the core only slows some */
  CHAIN_WARMUP_NS = 20000000, /* untimed first, so that the core has left its idle clock */
};

/* Cycles per 64-bit `imul reg, reg` in a dependent chain: 3 on Intel's
 * cores from Nehalem on (uops.info, "IMUL (R64, R64)": Nehalem to Ice Lake
 * and Cascade Lake measured at 3; Agner Fog's instruction tables: 3 on
 * Sandy Bridge to Golden Cove), and on AMD Zen 1 to Zen 5 (Agner Fog; LLVM's
 * Znver3 scheduling model, WriteIMul64Reg; on this project's Zen 3 VM the
 * chain reads the same clock as a 1-cycle add chain). Restricted to the
 * cores this program has FLOP-per-cycle figures for: Intel family 6 with
 * AVX2, AMD family 0x17 and later. Intel's E-cores (Gracemont and later)
 * are not verified here: a reading far off is caught by the range check.
 * 0: not on file (the clock is not measured). No core shortens a multiply
 * chain at rename the way Golden Cove does chains of `add reg, imm`, which
 * is why an add chain is not a clock there. */
static int imul_latency_cycles(const hl_cpu_features *c) {
  if (!strcmp(c->vendor, "GenuineIntel") && c->family == 6 && c->avx2) return 3;
  if (!strcmp(c->vendor, "AuthenticAMD") && c->family >= 0x17) return 3;
  return 0;
}

#if defined(__x86_64__)
static double thread_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* n x 8 dependent 64-bit multiplies; inline asm so that the compiler can
 * neither fold nor vectorise them. The multiplier is odd and not a power of
 * two, so the value never settles. */
static void imul_chain(long n) {
  uint64_t x = 1;
  const uint64_t m = 0x9E3779B97F4A7C15ull;
  __asm__ volatile("1:\n\t"
                   "imul %2, %0\n\timul %2, %0\n\timul %2, %0\n\timul %2, %0\n\t"
                   "imul %2, %0\n\timul %2, %0\n\timul %2, %0\n\timul %2, %0\n\t"
                   "dec %1\n\tjnz 1b"
                   : "+r"(x), "+r"(n)
                   : "r"(m)
                   : "cc");
}

/* One thread's clock: the fastest of the repetitions, timed on the thread's
 * own CPU time, so that time spent descheduled does not count */
static double thread_clock_mhz(int latency) {
  for (const double start = thread_cpu_ns(); thread_cpu_ns() - start < CHAIN_WARMUP_NS;) imul_chain(CHAIN_IMULS / 8 / 16);
  double best_ns = INFINITY;
  for (int i = 0; i < CHAIN_REPETITIONS; i++) {
    const double t0 = thread_cpu_ns();
    imul_chain(CHAIN_IMULS / 8);
    const double ns = thread_cpu_ns() - t0;
    if (ns > 0 && ns < best_ns) best_ns = ns;
  }
  return (double)CHAIN_IMULS * latency / best_ns * 1e3; /* cycles per ns = GHz */
}

/* Every OpenMP thread at once, as a GEMM loads them (an all-core clock is
 * lower than one core's turbo); the slowest thread's figure */
static int measured_mhz(int latency) {
  double slowest = INFINITY;
#pragma omp parallel reduction(min : slowest)
  slowest = thread_clock_mhz(latency);
  return isfinite(slowest) ? (int)lround(slowest) : 0;
}
#endif

/* ---------------------------------------------------------- reports -- */

static int sysfs_mhz(const char *file) {
  char path[128];
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cpufreq/%s", file);
  FILE *f = fopen(path, "r");
  long khz = 0;
  if (f) {
    if (fscanf(f, "%ld", &khz) != 1) khz = 0;
    fclose(f);
  }
  return khz > 0 ? (int)(khz / 1000) : 0;
}

static void sysfs_text(const char *path, char *out, size_t len) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (!fgets(out, (int)len, f)) out[0] = '\0';
  fclose(f);
  out[strcspn(out, "\n")] = '\0';
}

int bench_clock_model_mhz(const char *model) {
  const char *at = strstr(model, "@ ");
  if (!at) return 0;
  char *end;
  const double ghz = strtod(at + 2, &end);
  if (end == at + 2 || strncmp(end, "GHz", 3) || !(ghz > 0 && ghz < 100)) return 0;
  return (int)lround(ghz * 1000);
}

bench_clock_reports bench_clock_reports_read(const char *model, int cpuinfo_mhz) {
  bench_clock_reports r;
  memset(&r, 0, sizeof r);
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (__get_cpuid(0, &a, &b, &c, &d) && a >= 0x16) {
    __cpuid(0x16, a, b, c, d);
    r.cpuid_base_mhz = (int)(a & 0xffff), r.cpuid_max_mhz = (int)(b & 0xffff);
  }
#endif
  r.cpufreq_base_mhz = sysfs_mhz("base_frequency");
  r.cpufreq_max_mhz = sysfs_mhz("cpuinfo_max_freq");
  /* acpi-cpufreq lists the highest P-state, the base clock, as its maximum
   * while boost runs the cores above it */
  char driver[64], boost[16];
  sysfs_text("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", driver, sizeof driver);
  sysfs_text("/sys/devices/system/cpu/cpufreq/boost", boost, sizeof boost);
  r.cpufreq_max_is_base = !strcmp(driver, "acpi-cpufreq") && strcmp(boost, "0");
  r.model_mhz = bench_clock_model_mhz(model);
  r.cpuinfo_mhz = cpuinfo_mhz;
  return r;
}

/* ----------------------------------------------------------- bounds -- */

typedef struct {
  int mhz;
  const char *from;
} report;

/* The report with the lowest (sign -1) or highest (+1) figure; NULL when none */
static const report *extreme(const report *r, int n, int sign) {
  const report *best = NULL;
  for (int i = 0; i < n; i++)
    if (r[i].mhz > 0 && (!best || (r[i].mhz - best->mhz) * sign > 0)) best = &r[i];
  return best;
}

void bench_clock_judge(bench_clock *c, const bench_clock_reports *r) {
  /* figures at or below the clock a loaded core runs at: the nominal and base clocks */
  const report base[] = {
      {r->cpuid_base_mhz, "cpuid 0x16 base"},
      {r->cpufreq_base_mhz, "cpufreq base_frequency"},
      {r->cpufreq_max_is_base ? r->cpufreq_max_mhz : 0, "cpufreq cpuinfo_max_freq (acpi-cpufreq with boost: the base clock)"},
      {r->model_mhz, "the model name's @ GHz"},
      {r->cpuinfo_mhz, "/proc/cpuinfo cpu MHz"},
  };
  /* the highest clock the cores can reach, turbo included */
  const report max[] = {
      {r->cpuid_max_mhz, "cpuid 0x16 max"},
      {r->cpufreq_max_is_base ? 0 : r->cpufreq_max_mhz, "cpufreq cpuinfo_max_freq"},
  };
  const report *low = extreme(base, sizeof base / sizeof base[0], -1);
  const report *high = extreme(max, sizeof max / sizeof max[0], +1);
  c->low_mhz = BENCH_CLOCK_FLOOR_MHZ;
  if (low && low->mhz * BENCH_CLOCK_LOW_FACTOR > c->low_mhz) c->low_mhz = (int)lround(low->mhz * BENCH_CLOCK_LOW_FACTOR);
  c->high_mhz = high ? (int)lround(high->mhz * BENCH_CLOCK_HIGH_FACTOR) : BENCH_CLOCK_CEILING_MHZ;
  c->bounded = high != NULL;
  char lo_text[160], hi_text[160];
  if (c->low_mhz > BENCH_CLOCK_FLOOR_MHZ)
    snprintf(lo_text, sizeof lo_text, "low %.2g x %d (%s)", BENCH_CLOCK_LOW_FACTOR, low->mhz, low->from);
  else
    snprintf(lo_text, sizeof lo_text, "low %d, any x86-64 core%s", BENCH_CLOCK_FLOOR_MHZ, low ? "" : " (no base clock reported)");
  if (high)
    snprintf(hi_text, sizeof hi_text, "high %.3g x %d (%s)", BENCH_CLOCK_HIGH_FACTOR, high->mhz, high->from);
  else
    snprintf(hi_text, sizeof hi_text, "high %d, any x86-64 core (no maximum reported by cpuid 0x16 or cpufreq)",
             BENCH_CLOCK_CEILING_MHZ);
  snprintf(c->bounds, sizeof c->bounds, "%s; %s", lo_text, hi_text);
  c->trusted = c->measured_mhz > 0 && c->measured_mhz >= c->low_mhz && c->measured_mhz <= c->high_mhz;
}

/* ------------------------------------------------------ the clock -- */

bench_clock bench_clock_measure(const char *model, int cpuinfo_mhz) {
  bench_clock c;
  memset(&c, 0, sizeof c);
  const int latency = imul_latency_cycles(hl_cpu_features_get());
#if defined(__x86_64__)
  if (latency > 0) {
    c.measured_mhz = measured_mhz(latency);
    snprintf(c.method, sizeof c.method,
             "a dependent chain of 64-bit imul (%d cycles each on this core: uops.info, Agner Fog) on every OpenMP "
             "thread at once, each thread's fastest of %d repetitions of 2^%d imuls timed on its own CPU time; the "
             "slowest thread's figure",
             latency, CHAIN_REPETITIONS, CHAIN_IMULS_LOG2);
  } else {
    snprintf(c.method, sizeof c.method, "not measured: no imul latency on file for this core");
  }
#else
  (void)latency;
  snprintf(c.method, sizeof c.method, "not measured: the clock is measured on x86-64 only");
#endif
  const char *forced = getenv(BENCH_TEST_CLOCK_MHZ);
  if (forced && *forced) {
    c.measured_mhz = atoi(forced);
    const size_t k = strlen(c.method);
    snprintf(c.method + k, sizeof c.method - k, "; TEST SWITCH: measurement replaced by %d MHz", c.measured_mhz);
  }
  const bench_clock_reports r = bench_clock_reports_read(model, cpuinfo_mhz);
  bench_clock_judge(&c, &r);
  return c;
}
