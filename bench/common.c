/* common.c — see bench.h. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/csv.h"
#include "cli/output_guard.h"
#include "core/base/device.h"
#include "bench/bench.h"

bool bench_common_option(bench_common *c, int opt, char **argv) {
  (void)argv;
  if (opt != BENCH_OPT_REPS) return hl_cli_common_option(&c->cli, opt, optarg);
  c->reps = optarg;
  return true;
}

void bench_bad_option(int opt, char **argv, const struct option *longopts) {
  hl_cli_getopt_error(opt, argv, longopts);
}

int bench_parse_reps(const char *s) { return s ? (int)hl_parse_int("--reps", s, 1, 100000) : 0; }

void bench_parse_names(const char *opt, const char *s, const char *kind, const char *const *names, int count,
                       bool *chosen) {
  for (int i = 0; i < count; i++) chosen[i] = false;
  if (!s || !*s) hl_usage_error("%s: empty list", opt);
  char buf[512];
  if (strlen(s) >= sizeof buf) hl_usage_error("%s: list too long", opt);
  snprintf(buf, sizeof buf, "%s", s);
  int n = 0;
  for (char *t = buf, *comma;; t = comma + 1, n++) {
    comma = strchr(t, ',');
    if (comma) *comma = '\0';
    if (!*t) hl_usage_error("%s: '%s' has an empty item (item %d)", opt, s, n + 1);
    int found = 0;
    while (found < count && strcmp(t, names[found])) found++;
    if (found == count) {
      char all[512] = "";
      size_t k = 0;
      for (int i = 0; i < count && k < sizeof all; i++)
        k += (size_t)snprintf(all + k, sizeof all - k, "%s%s", i ? ", " : "", names[i]);
      hl_usage_error("%s: unknown %s '%s' (expected %s)", opt, kind, t, all);
    }
    chosen[found] = true;
    if (!comma) break;
  }
}

void bench_device_open(bench_device *d, const char *request) {
  char notice[512];
  bench_device_open_deferred(d, request, notice, sizeof notice);
  fputs(notice, stderr);
}

void bench_device_open_deferred(bench_device *d, const char *request, char *notice, size_t len) {
  d->kind = hl_cli_device(request, notice, len);
  d->be = hl_backend_for(d->kind);
  d->facts = hl_device_facts_get(d->kind);
  d->name = hl_device_kind_name(d->kind);
  hl_meta_set_devices(&d->kind, 1);
  const hl_device_facts *f = d->facts;
  hl_meta_set("sm_count", "%d%s", f->sm_count, d->kind == HL_DEVICE_CPU ? " (logical cores)" : "");
  hl_meta_set("threads", "%d%s", f->threads, d->kind == HL_DEVICE_CPU ? " (OpenMP)" : " (max per SM)");
  char cur[32] = "unknown", max[32] = "unknown";
  if (f->clock_mhz > 0) snprintf(cur, sizeof cur, "%d", f->clock_mhz);
  if (f->max_clock_mhz > 0) snprintf(max, sizeof max, "%d", f->max_clock_mhz);
  hl_meta_set("clock_mhz", "%s current, %s max%s", cur, max,
              f->clocks_from_nvml ? " (NVML)" : d->kind == HL_DEVICE_CUDA ? " (max: CUDA attribute; no NVML)" : "");
  hl_meta_set("ecc", "%s", f->ecc == 1 ? "on" : f->ecc == 0 ? "off" : "unknown");
  hl_meta_set("mig", "%s", f->mig == 1 ? "enabled" : f->mig == 0 ? "disabled" : "not applicable / unknown");
  hl_meta_set(d->kind == HL_DEVICE_CPU ? "llc_bytes" : "l2_bytes", "%llu", (unsigned long long)f->l2_bytes);
  hl_meta_set("memory_bytes", "%llu total, %llu free at start", (unsigned long long)f->total_mem,
              (unsigned long long)f->free_mem);
  if (f->versions[0]) hl_meta_set("versions", "%s", f->versions);
}

/* ------------------------------------------------------------ timing -- */

bench_method bench_method_for(const bench_device *d, int reps, bool quick) {
  bench_method m;
  m.reps = reps;
  if (d->kind == HL_DEVICE_CUDA) {
    m.target_s = quick ? 0.05 : 0.2;
    m.min_reps = quick ? 5 : 10;
    m.max_reps = 200;
    m.min_sample_ms = 0.5;
    m.max_warmup = 50;
  } else {
    m.target_s = quick ? 0.25 : 1.0;
    m.min_reps = 3;
    m.max_reps = 30;
    m.min_sample_ms = 0.0;
    m.max_warmup = 10;
  }
  return m;
}

const char *bench_method_text(const bench_device *d, const bench_method *m) {
  static char buf[1024];
  char reps[96];
  if (m->reps > 0) snprintf(reps, sizeof reps, "%d samples (--reps)", m->reps);
  else snprintf(reps, sizeof reps, "about %.2g s of timed work per point, %d to %d samples", m->target_s, m->min_reps,
                m->max_reps);
  snprintf(buf, sizeof buf,
           "%s; warm-up of at least 3 launches, continued while a warm-up is more than 2%% faster than the one "
           "before (at most %d); then %s%s; measured again (up to %d sample sets, column attempts; the one with the "
           "lowest median kept) while the median exceeds the minimum by more than %.0f%%, a sign of other work on the "
           "machine; min, median and max per point, charts use the median",
           d->kind == HL_DEVICE_CUDA ? "CUDA events around the launches on one stream" : "clock_gettime(CLOCK_MONOTONIC)",
           m->max_warmup, reps,
           m->min_sample_ms > 0 ? ", each sample the mean of enough back-to-back launches to last 0.5 ms (column inner)" : "",
           BENCH_MAX_ATTEMPTS, 100 * (BENCH_UNSTABLE_SPREAD - 1));
  return buf;
}

static double time_once(const bench_device *d, hl_event *e0, hl_event *e1, bench_launch launch, void *ctx, long *it,
                        int inner) {
  d->be->event_record(e0);
  for (int i = 0; i < inner; i++) launch(ctx, (*it)++);
  d->be->event_record(e1);
  return (double)d->be->event_elapsed_ms(e0, e1) / inner;
}

bool bench_unstable(const hl_stats *ms) { return ms->median > BENCH_UNSTABLE_SPREAD * ms->min; }

bench_timing bench_time(const bench_device *d, const bench_method *m, bench_launch launch, void *ctx) {
  bench_timing r = {0};
  hl_event *e0 = d->be->event_create(), *e1 = d->be->event_create();
  if (!e0 || !e1) hl_fatal("out of memory creating timing events");
  long it = 0;
  double prev = INFINITY, t = 0;
  for (;;) {
    t = time_once(d, e0, e1, launch, ctx, &it, 1);
    r.warmups++;
    const bool dropping = t < prev * 0.98;
    prev = t;
    if ((r.warmups >= 3 && !dropping) || r.warmups >= m->max_warmup) break;
  }
  int inner = 1;
  if (m->min_sample_ms > 0 && t < m->min_sample_ms) {
    double need = ceil(m->min_sample_ms / (t > 1e-4 ? t : 1e-4));
    inner = need > 10000 ? 10000 : (int)need;
  }
  int reps = m->reps;
  if (reps <= 0) {
    double want = ceil(m->target_s * 1e3 / ((t > 1e-6 ? t : 1e-6) * inner));
    reps = want < m->min_reps ? m->min_reps : want > m->max_reps ? m->max_reps : (int)want;
  }
  double *v = malloc(sizeof *v * (size_t)reps);
  if (!v) hl_fatal("out of memory");
  for (r.attempts = 1;; r.attempts++) {
    for (int s = 0; s < reps; s++) v[s] = time_once(d, e0, e1, launch, ctx, &it, inner);
    const hl_stats ms = hl_stats_of(v, reps);
    if (r.attempts == 1 || ms.median < r.ms.median) r.ms = ms;
    if (!bench_unstable(&ms) || r.attempts == BENCH_MAX_ATTEMPTS) break;
  }
  r.samples = reps;
  r.inner = inner;
  free(v);
  d->be->event_destroy(e0);
  d->be->event_destroy(e1);
  return r;
}

/* ---------------------------------------------------------- memory -- */

void bench_require_memory(const bench_device *d, const char *what, uint64_t device_bytes, uint64_t host_bytes) {
  char need[32], have[32];
  const hl_device_facts *host = hl_device_facts_get(HL_DEVICE_CPU);
  if (d->kind == HL_DEVICE_CPU) device_bytes += host_bytes, host_bytes = 0;
  if (device_bytes > d->facts->free_mem)
    hl_usage_error("%s: needs %s, the %s has %s free", what, hl_format_bytes(device_bytes, need, sizeof need),
                   d->kind == HL_DEVICE_CPU ? "host" : "device", hl_format_bytes(d->facts->free_mem, have, sizeof have));
  if (host_bytes > host->free_mem)
    hl_usage_error("%s: needs %s of host memory beside the device's, the host has %s free", what,
                   hl_format_bytes(host_bytes, need, sizeof need), hl_format_bytes(host->free_mem, have, sizeof have));
}

void *bench_alloc(const bench_device *d, size_t bytes, const char *what) {
  void *p = d->be->alloc(bytes);
  if (!p) {
    char b[32];
    hl_fatal("out of %s memory allocating %s for %s", d->kind == HL_DEVICE_CPU ? "host" : "device",
             hl_format_bytes(bytes, b, sizeof b), what);
  }
  return p;
}

void bench_free(const bench_device *d, void *p) {
  if (p) d->be->free(p);
}

void *bench_host_alloc(size_t bytes, const char *what) {
  void *p = hl_backend_cpu.alloc(bytes);
  if (!p) {
    char b[32];
    hl_fatal("out of host memory allocating %s for %s", hl_format_bytes(bytes, b, sizeof b), what);
  }
  return p;
}

/* ------------------------------------------------------ output folder -- */

/* The tables this process holds locks on (released at exit by output_guard). */
enum { BENCH_MAX_TABLES = 16 };
static char locked_[BENCH_MAX_TABLES][256];
static int n_locked_;

static void lock_table(const char *dir, const char *name) {
  for (int i = 0; i < n_locked_; i++)
    if (!strcmp(locked_[i], name)) return;
  if (n_locked_ == BENCH_MAX_TABLES) hl_fatal("more than %d tables in one run", BENCH_MAX_TABLES);
  char err[4400];
  if (!hl_out_lock_take(dir, name, err, sizeof err)) {
    if (errno != EWOULDBLOCK) hl_fatal("%s", err); /* the folder passed its probe: a runtime failure */
    hl_usage_error("--out: %s: wait for it, or give another --out", err);
  }
  snprintf(locked_[n_locked_++], sizeof locked_[0], "%s", name);
}

const char *bench_outdir(const char *requested, hl_device_kind kind, const char *const *tables, char *buf, size_t len) {
  const char *dir = hl_cli_outdir(requested, kind, buf, len);
  for (const char *const *t = tables; *t; t++) lock_table(dir, *t);
  return dir;
}

/* ---------------------------------------------------------- rows -- */

void bench_rows_write(const hl_csv_rows *r, const char *dir, const hl_schema *s) {
  char err[4400];
  lock_table(dir, s->file); /* a table bench_outdir was not told of: locked before it is written */
  if (!hl_csv_rows_write_schema(r, dir, NULL, s, err, sizeof err)) hl_fatal("%s", err);
}

void bench_row_timing(hl_row *row, const bench_timing *t) {
  hl_row_int(row, "warmups", t->warmups);
  hl_row_int(row, "samples", t->samples);
  hl_row_int(row, "inner", t->inner);
  hl_row_real(row, "time_ms_min", t->ms.min);
  hl_row_real(row, "time_ms_median", t->ms.median);
  hl_row_real(row, "time_ms_max", t->ms.max);
  hl_row_int(row, "attempts", t->attempts);
}

/* ----------------------------------------------------- expectations -- */

/* A row of the expectations table; NULL or NAN: an empty cell (a NaN value
 * is a result, written "nan") */
static void expectation_row(bench_expectations *e, const bench_device *d, const char *name, const double *value,
                            double low, double high, const char *status, const char *detail, const char *reason) {
  hl_row row;
  hl_row_begin(&row, e->schema);
  hl_row_text(&row, "expectation", name);
  hl_row_text(&row, "device", d->name);
  value ? hl_row_real(&row, "value", *value) : hl_row_missing(&row, "value");
  isnan(low) ? hl_row_missing(&row, "low") : hl_row_real(&row, "low", low);
  isnan(high) ? hl_row_missing(&row, "high") : hl_row_real(&row, "high", high);
  hl_row_text(&row, "status", status);
  hl_row_text(&row, "detail", detail);
  hl_row_text(&row, "reason", reason);
  hl_csv_rows_put(&e->rows, &row);
}

void bench_expect(bench_expectations *e, const bench_device *d, const char *name, double value, double low, double high,
                  const char *detail, const char *reason) {
  const bool pass = !isnan(value) && (isnan(low) || value >= low) && (isnan(high) || value <= high);
  pass ? e->pass++ : e->miss++;
  printf("%s  %s: %s\n", pass ? "PASS" : "MISS", name, detail);
  expectation_row(e, d, name, &value, low, high, pass ? "PASS" : "MISS", detail, reason);
}

void bench_expect_info(bench_expectations *e, const bench_device *d, const char *name, double value, const char *detail,
                       const char *reason) {
  printf("INFO  %s: %s\n", name, detail);
  expectation_row(e, d, name, &value, NAN, NAN, "INFO", detail, reason);
}

void bench_expect_skip(bench_expectations *e, const bench_device *d, const char *name, const char *why,
                       const char *reason) {
  e->skip++;
  printf("SKIP  %s: %s\n", name, why);
  expectation_row(e, d, name, NULL, NAN, NAN, "SKIP", why, reason);
}

void bench_expectations_write(bench_expectations *e, const char *dir) {
  if (e->rows.n == 0) return;
  bench_rows_write(&e->rows, dir, e->schema);
  hl_csv_rows_free(&e->rows);
}

/* -------------------------------------------------------- progress -- */

void bench_progress(const char *fmt, ...) {
  static int tty = -1;
  if (tty < 0) tty = isatty(2);
  if (!tty) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s\n", hl_prog(), msg); /* one call, one write */
}
