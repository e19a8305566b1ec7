/* output.c — what a run writes (docs/train.md):
 *
 *   train_NAME_MODE_steps.csv    one row per step, each a whole flushed line
 *                                (cli/csv.h LOG mode), so an interrupted run
 *                                leaves complete lines; a resumed run keeps
 *                                the rows up to its checkpoint and appends
 *   train_NAME_MODE_hist.csv     gradient histograms at the --hist-steps
 *   train_NAME_MODE_summary.csv  the run in one row
 *   train_summary.csv            every run's summary row, one per (name,
 *                                mode), replaced when a run is repeated
 *   train_NAME_MODE_profile.csv  --profile (profile_csv.c)
 * Tables are written to NAME.tmp and renamed when complete.
 */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/atomic_file.h"
#include "cli/cli.h"
#include "cli/csv.h"
#include "cli/output_guard.h"
#include "core/base/device.h"
#include "cli/timer.h"
#include "train/train.h"

static const char step_header[] =
    "mode,step,loss,eval_loss,eval_acc,lr,scale,skipped,grad_norm,grad_zero_frac,fp16_underflow_frac,"
    "fp16_underflow_scaled_frac,fp16_zero_frac,fp16_zero_scaled_frac,absorbed_frac,fp16_absorbed_frac,step_time_ms,"
    "tokens_per_s,samples_per_s,mem_current_bytes,mem_peak_bytes";

static const char hist_header[] = "mode,step,grads,scale,log2_lo,count,frac,fp16_zone";

static const char summary_header[] =
    "name,mode,model,task,device,status,steps,steps_done,skipped,final_loss,eval_step,eval_loss,eval_acc,"
    "final_scale,grad_zero_frac,fp16_underflow_frac,fp16_underflow_scaled_frac,fp16_zero_frac,fp16_zero_scaled_frac,"
    "absorbed_frac,fp16_absorbed_frac,step_time_ms_median,step_time_ms_min,timed_steps,tokens_per_s,samples_per_s,"
    "mem_peak_bytes,param_bytes,params,layers,heads,embd,vocab,seq,batch,accum,optimizer,lr,schedule,init_gain,init_scale,"
    "seed,threads,omp_wait_policy,load_start,load_end,wall_s,autocast_casts,autocast_cache_misses,autocast_cache_hits,"
    "autocast_cache_hit_rate";

struct train_output {
  char dir[4096];
  char base[160]; /* train_NAME_MODE */
  hl_device_kind dev;
  hl_csv *log;
  hl_csv_rows hist; /* without the mode cell, which the file's writer puts first */
  double load_start, t_start;
};

static double load_average(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  double v = NAN;
  if (f) {
    if (fscanf(f, "%lf", &v) != 1) v = NAN;
    fclose(f);
  }
  return v;
}

/* The step of a data row: its second cell (mode,step,...). */
static long long row_step(const char *line) {
  const char *comma = strchr(line, ',');
  return comma ? strtoll(comma + 1, NULL, 10) : -1;
}

/* A resumed run: the log keeps its metadata (plus a line saying so), its
 * header and the rows up to `step`, rewritten atomically. */
static void cut_log(const char *path, long long step) {
  FILE *f = fopen(path, "r");
  if (!f) return; /* nothing to keep: a fresh log */
  hl_atomic_file a;
  if (!hl_atomic_open(&a, path)) hl_fatal("cannot write %s: %s", a.tmp, strerror(errno));
  FILE *o = a.f;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  bool header = false;
  while ((n = getline(&line, &cap, f)) > 0) {
    if (!header && line[0] == '#') {
      fputs(line, o);
      continue;
    }
    if (!header) {
      const char *cmd = strstr(hl_meta_text(), "# command: ");
      const char *eol = cmd ? strchr(cmd, '\n') : NULL;
      fprintf(o, "# resumed: after step %lld by%.*s\n", step, cmd && eol ? (int)(eol - cmd - 10) : 0,
              cmd ? cmd + 10 : "");
      const char *overrides = strstr(hl_meta_text(), "# resume-overrides: "); /* main.c's, from the options */
      const char *end = overrides ? strchr(overrides, '\n') : NULL;
      if (overrides && end) fprintf(o, "%.*s\n", (int)(end - overrides), overrides);
      fputs(line, o);
      header = true;
      continue;
    }
    if (line[n - 1] == '\n' && row_step(line) <= step) fputs(line, o);
  }
  free(line);
  fclose(f);
  if (!hl_atomic_commit(&a)) hl_fatal("rewriting %s: %s: %s", path, a.call, strerror(errno));
}

train_output *output_open(const train_opts *o, const char *dir, hl_device_kind dev, int64_t resumed_step) {
  train_output *w = calloc(1, sizeof *w);
  if (!w) hl_fatal("out of host memory");
  snprintf(w->dir, sizeof w->dir, "%s", dir);
  w->dev = dev;
  snprintf(w->base, sizeof w->base, "train_%s_%s", o->name, o->mode->name);
  w->load_start = load_average();
  w->t_start = hl_now_s();
  char name[256], path[4400], err[512];
  snprintf(name, sizeof name, "%s_steps.csv", w->base);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (resumed_step > 0) cut_log(path, resumed_step); /* the histogram rows come from the checkpoint */
  w->log = hl_csv_open(dir, name, step_header, resumed_step > 0 ? HL_CSV_LOG_APPEND : HL_CSV_LOG, err, sizeof err);
  if (!w->log) hl_fatal("%s", err);
  return w;
}

void output_step_row(train_output *w, const char *fmt, ...) {
  char line[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  hl_csv_row(w->log, "%s", line);
}

void output_hist(train_output *w, int64_t step, const grad_hist *unscaled, const grad_hist *scaled, double scale) {
  const grad_hist *h[2] = {unscaled, scaled};
  const char *which[2] = {"unscaled", "scaled"};
  for (int k = 0; k < 2; k++) {
    const double total = (double)hist_total(h[k]);
    if (total == 0) continue;
    hl_csv_rows_add(&w->hist, "%lld,%s,%.9g,,%lld,%.9g,exact-zero", (long long)step, which[k], k ? scale : 1.0,
                    (long long)h[k]->zero, (double)h[k]->zero / total);
    for (int b = 0; b < HIST_BINS; b++) {
      if (!h[k]->bin[b]) continue;
      const int e = b + HIST_MIN_LOG2;
      hl_csv_rows_add(&w->hist, "%lld,%s,%.9g,%d,%lld,%.9g,%s", (long long)step, which[k], k ? scale : 1.0, e,
                      (long long)h[k]->bin[b], (double)h[k]->bin[b] / total, hist_fp16_zone(e));
    }
    if (h[k]->nonfinite)
      hl_csv_rows_add(&w->hist, "%lld,%s,%.9g,,%lld,%.9g,nonfinite", (long long)step, which[k], k ? scale : 1.0,
                      (long long)h[k]->nonfinite, (double)h[k]->nonfinite / total);
  }
}

char *output_hist_rows(const train_output *w, size_t *len) {
  size_t total = 0;
  for (int i = 0; i < w->hist.n; i++) total += strlen(w->hist.rows[i]) + 1;
  char *text = malloc(total + 1), *at = text;
  if (!text) return NULL;
  for (int i = 0; i < w->hist.n; i++) {
    const size_t n = strlen(w->hist.rows[i]);
    memcpy(at, w->hist.rows[i], n);
    at[n] = '\n';
    at += n + 1;
  }
  *at = '\0';
  *len = total;
  return text;
}

void output_hist_restore(train_output *w, const char *rows, size_t len) {
  const char *p = rows, *end = rows + len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    hl_csv_rows_add(&w->hist, "%.*s", (int)(eol - p), p);
    p = eol + 1;
  }
}

/* ------------------------------------------------------------- summary -- */

const char *output_cell(double v, char *buf, size_t len) {
  if (isnan(v)) buf[0] = '\0';
  else snprintf(buf, len, "%.9g", v);
  return buf;
}

static void write_table(const char *dir, const char *name, const char *header, const hl_csv_rows *rows,
                        const char *mode) {
  char err[4400];
  if (!hl_csv_rows_write(rows, dir, name, header, mode, err, sizeof err)) hl_fatal("%s", err);
}

/* Columns that summary_header has after an older header it starts with
 * (columns are only ever added at the end), or -1 when it does not. */
static int columns_added_after(const char *older) {
  const size_t n = strlen(older);
  if (strncmp(summary_header, older, n) || summary_header[n] != ',') return -1;
  int added = 0;
  for (const char *c = summary_header + n; *c; c++) added += *c == ',';
  return added;
}

/* train_summary.csv: the rows of other runs (same header, or an older one
 * whose rows get empty cells for the newer columns), then ours. */
static void upsert_summary(const char *dir, const char *name, const char *mode, const char *row) {
  char path[4400];
  snprintf(path, sizeof path, "%s/train_summary.csv", dir);
  hl_csv_rows rows = {0};
  FILE *f = fopen(path, "r");
  if (f) {
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    bool header = false;
    int added = 0; /* empty cells each older row gets */
    char empty_cells[sizeof summary_header]; /* more commas than the header has */
    memset(empty_cells, ',', sizeof empty_cells - 1);
    empty_cells[sizeof empty_cells - 1] = '\0';
    while ((len = getline(&line, &lcap, f)) > 0) {
      if (line[0] == '#') continue;
      if (line[len - 1] == '\n') line[--len] = '\0';
      if (!header) {
        header = true;
        added = strcmp(line, summary_header) ? columns_added_after(line) : 0;
        if (added < 0) {
          fprintf(stderr, "%s: %s has other columns (an older halflab?): its rows are dropped\n", TRAIN_PROG, path);
          break;
        }
        continue;
      }
      char key[256];
      snprintf(key, sizeof key, "%s,%s,", name, mode);
      if (!strncmp(line, key, strlen(key))) continue;
      hl_csv_rows_add(&rows, "%s%s", line, empty_cells + sizeof empty_cells - 1 - added);
    }
    free(line);
    fclose(f);
  }
  hl_csv_rows_add(&rows, "%s", row);
  hl_meta_set("rows", "one per run (name, mode); each run's own command line is in its train_NAME_MODE_summary.csv");
  write_table(dir, "train_summary.csv", summary_header, &rows, NULL);
  hl_meta_set("rows", "this run");
  hl_csv_rows_free(&rows);
}

void output_finish(train_output *w, const train_opts *o, const train_model *m, const run_result *r) {
  char err[512];
  if (!hl_csv_close(w->log, err, sizeof err)) hl_fatal("%s", err);
  w->log = NULL;
  char name[256];
  snprintf(name, sizeof name, "%s_hist.csv", w->base);
  write_table(w->dir, name, hist_header, &w->hist, o->mode->name);

  const char *policy = getenv("OMP_WAIT_POLICY");
  char b[24][48];
  const bool gpt = o->model == MODEL_GPT;
  char row[4096];
  snprintf(row, sizeof row,
           "%s,%s,%s,%s,%s,%s,%lld,%lld,%lld,%s,%lld,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%s,%s,%llu,%llu,%lld,"
           "%d,%d,%d,%d,%lld,%lld,%d,%s,%.9g,%s,%.9g,%s,%llu,%d,%s,%s,%s,%.3f,%llu,%llu,%llu,%s",
           o->name, o->mode->name, gpt ? "gpt" : "mlp", train_task_name(o->task), hl_device_kind_name(w->dev),
           run_status_name(r->status), (long long)o->steps, (long long)(r->first_step + r->steps_done - 1),
           (long long)r->skipped, output_cell(r->last_loss, b[0], 48), (long long)r->eval_step, output_cell(r->eval_loss, b[1], 48),
           output_cell(r->eval_acc, b[2], 48), output_cell(r->final_scale, b[3], 48), output_cell(r->grad_zero, b[4], 48),
           output_cell(r->underflow, b[5], 48), output_cell(r->underflow_scaled, b[6], 48), output_cell(r->fp16_zero, b[7], 48),
           output_cell(r->fp16_zero_scaled, b[8], 48), output_cell(r->absorbed, b[9], 48), output_cell(r->fp16_absorbed, b[10], 48),
           output_cell(r->step_ms_median, b[11], 48), output_cell(r->step_ms_min, b[12], 48), r->timed_n,
           output_cell(gpt ? r->items_per_s : NAN, b[13], 48),
           output_cell(gpt ? r->items_per_s / (double)o->seq : r->items_per_s, b[14], 48), (unsigned long long)r->mem_peak,
           (unsigned long long)hl_params_bytes(m->params), (long long)hl_params_numel(m->params),
           gpt ? o->gpt.n_layer : o->mlp.n_hidden + 1, gpt ? o->gpt.n_head : 0, gpt ? o->gpt.n_embd : o->mlp.n_in,
           gpt ? o->gpt.vocab_size : o->classes, (long long)o->seq, (long long)o->batch, o->accum,
           hl_optim_kind_name(o->optimizer), o->lr, o->cosine ? "cosine" : "constant", o->init_gain,
           output_cell(o->mode->scaling == HL_LOSS_SCALE_NONE ? NAN : o->init_scale, b[15], 48),
           (unsigned long long)o->seed, w->dev == HL_DEVICE_CPU ? omp_get_max_threads() : 0,
           policy && *policy ? policy : "default", output_cell(w->load_start, b[16], 48), output_cell(load_average(), b[17], 48),
           hl_now_s() - w->t_start, (unsigned long long)r->autocast_casts, (unsigned long long)r->autocast_cache_misses,
           (unsigned long long)r->autocast_cache_hits, output_cell(run_cast_cache_hit_rate(r), b[18], 48));
  hl_csv_rows one = {0};
  hl_csv_rows_add(&one, "%s", row);
  snprintf(name, sizeof name, "%s_summary.csv", w->base);
  if (r->why[0]) hl_meta_set("why", "%s", r->why);
  write_table(w->dir, name, summary_header, &one, NULL);
  hl_csv_rows_free(&one);
  /* runs of other names may finish into this folder at the same time: the
   * read-modify-write of train_summary.csv is theirs one at a time */
  char lock_err[4400];
  hl_out_lock *summary_lock = hl_out_lock_wait(w->dir, "train_summary.csv", lock_err, sizeof lock_err);
  if (!summary_lock) hl_fatal("%s", lock_err);
  upsert_summary(w->dir, o->name, o->mode->name, row);
  hl_out_lock_release(summary_lock);
  profile_write(o, w->dir, w->dev, r); /* last: its metadata lines are its own */
  hl_csv_rows_free(&w->hist);
  free(w);
}

void output_abort(train_output *w) {
  if (!w) return;
  char err[512];
  if (w->log && !hl_csv_close(w->log, err, sizeof err)) fprintf(stderr, "%s: %s\n", TRAIN_PROG, err);
  hl_csv_rows_free(&w->hist);
  free(w);
}

/* ------------------------------------------------------------ progress -- */

static bool progress_shown;

void output_progress(const char *fmt, ...) {
  if (!isatty(STDERR_FILENO)) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\r%s\033[K", line);
  fflush(stderr);
  progress_shown = true;
}

void output_progress_end(void) {
  if (progress_shown) fputc('\n', stderr);
  progress_shown = false;
}
