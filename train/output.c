/* output.c — what a run writes, and its files' life (docs/train.md, "What
 * a run leaves behind"):
 *
 *   train_NAME_MODE_steps.csv    one row per step, each line one write(2)
 *                                (cli/csv.h LOG mode); while the run goes it
 *                                is train_NAME_MODE_steps.csv.inprogress
 *   train_NAME_MODE_hist.csv     gradient histograms at the --hist-steps
 *   train_NAME_MODE_summary.csv  the run in one row
 *   train_NAME_MODE_profile.csv  --profile (profile_csv.c)
 *   train_summary.csv            every completed run's summary row, one per
 *                                (name, mode), replaced when a run is repeated,
 *                                with the run's provenance (summary_table.c)
 *
 * The tables are written at the end. A completed (or diverged) run writes
 * them under .inprogress names, then renames all of its files, the new
 * train_summary.csv included, to their final names, keeping hard links to
 * the files it replaces until the folder is synced: a rename that fails puts
 * the earlier files back, so the final names always hold one run. A run
 * that is interrupted (a signal, --stop-after) or fails (a non-finite loss
 * in fp32, a runtime error, a write that fails) gives its files the suffix
 * .interrupted or .failed instead, its status in its summary, and touches
 * neither the final names nor train_summary.csv. Whatever ends a run also
 * removes the .interrupted / .failed / .inprogress files an earlier attempt
 * of the same run left: every file carries the run's identity ("# run_id:",
 * resume.c), and a file of another identity is left alone. A resumed run
 * continues the log of its checkpoint's identity that holds the
 * checkpoint's step (output_resume_log), and no other. */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/atomic_file.h"
#include "cli/cli.h"
#include "cli/csv.h"
#include "cli/output_guard.h"
#include "cli/path_set.h"
#include "core/base/device.h"
#include "core/training/dist.h"
#include "cli/timer.h"
#include "kernels/host.h"
#include "train/train.h"

/* ---------------------------------------------------------- the files -- */

typedef enum { FILE_STEPS, FILE_HIST, FILE_SUMMARY, FILE_PROFILE, RUN_FILES } run_file;
static const char *const file_kind[RUN_FILES] = {"steps", "hist", "summary", "profile"};

/* Where one of the run's files is: its name's suffix. */
typedef enum { AT_NONE = -1, AT_INPROGRESS, AT_FINAL, AT_INTERRUPTED, AT_FAILED, FILE_STATES } file_state;
static const char *const state_suffix[FILE_STATES] = {".inprogress", "", ".interrupted", ".failed"};

struct train_output {
  char dir[4096];
  char base[160]; /* train_NAME_MODE */
  const train_opts *o;
  const train_model *m;
  hl_device_kind dev;
  hl_csv *log;
  hl_csv_rows hist; /* train_hist_schema's rows so far */
  double load_start, t_start;
  file_state at[RUN_FILES]; /* this run's files (AT_NONE: none written) */
  bool staged_summary;      /* train_summary.csv.inprogress is this run's */
  bool done;                /* its files have their names for good */
  bool wait_stopped;        /* a signal ended the wait for train_summary.csv's lock */
  run_result kept;          /* the run so far, for the summary of a failure */
  char why[1024];           /* the failure this output itself met */
};

static const char *run_path(const train_output *w, run_file k, file_state s, char *buf, size_t len) {
  snprintf(buf, len, "%s/%s_%s.csv%s", w->dir, w->base, file_kind[k], state_suffix[s]);
  return buf;
}

static bool is_file(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The one run whose files are not yet in place: what the exit handler
 * finishes when the process stops on a runtime error (hl_fatal). */
static train_output *unfinished;
static void on_exit_unfinished(void);

/* A write of this output failed: one line naming the file and the error,
 * exit 1; the exit handler marks the run's files failed. */
__attribute__((noreturn)) static void io_failure(train_output *w, const char *msg) {
  snprintf(w->why, sizeof w->why, "%s", msg);
  hl_fatal("%s", msg);
}

/* ------------------------------------------------------------ opening -- */

static double load_average(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  double v = NAN;
  if (f) {
    if (fscanf(f, "%lf", &v) != 1) v = NAN;
    fclose(f);
  }
  return v;
}

/* The cell of a data row in the given column (0 from the left), as a
 * number; -1 when the row has no such cell. */
static long long row_cell_number(const char *line, int column) {
  const char *p = line;
  for (int i = 0; i < column && p; i++)
    if ((p = strchr(p, ','))) p++;
  return p ? strtoll(p, NULL, 10) : -1;
}

/* A resumed run's log: the rows of `src` up to `step`, after its metadata
 * (plus a line saying so) and header, written whole as `dst` (src itself
 * when it is the in-progress log; src is never changed otherwise). false
 * with the failure in err. */
/* A line of a log another system saved, as halflab wrote it: the BOM of
 * the first line and a CRLF line end removed; returns the new length. */
static ssize_t as_written_line(char *line, ssize_t n, bool first) {
  if (first && n >= 3 && !strncmp(line, "\xEF\xBB\xBF", 3)) memmove(line, line + 3, (size_t)(n -= 3) + 1);
  if (n >= 2 && line[n - 2] == '\r' && line[n - 1] == '\n') {
    line[n - 2] = '\n';
    line[--n] = '\0';
  }
  return n;
}

static bool cut_log(const char *src, const char *dst, long long step, char *err, size_t len) {
  FILE *f = fopen(src, "r");
  if (!f) {
    snprintf(err, len, "reading %s: %s", src, strerror(errno));
    return false;
  }
  hl_atomic_file a;
  if (!hl_atomic_open(&a, dst)) {
    hl_atomic_describe(&a, errno, err, len);
    fclose(f);
    return false;
  }
  FILE *o = a.f;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  bool header = false;
  char want[4096];
  hl_schema_header(&train_steps_schema, want, sizeof want);
  const int step_column = hl_schema_find(&train_steps_schema, "step");
  for (long long lineno = 1; (n = getline(&line, &cap, f)) > 0; lineno++) {
    n = as_written_line(line, n, lineno == 1); /* a BOM and CRLF line ends are not copied */
    if (!header && line[0] == '#') {
      fputs(line, o);
      continue;
    }
    if (!header) {
      if (strncmp(line, want, strlen(want)) || (line[strlen(want)] != '\n' && line[strlen(want)] != '\0')) {
        snprintf(err, len, "resuming from %s: its columns are not this halflab-train's (an older halflab?)", src);
        free(line);
        fclose(f);
        hl_atomic_discard(&a);
        return false;
      }
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
    if (line[n - 1] == '\n' && row_cell_number(line, step_column) <= step) fputs(line, o);
  }
  free(line);
  fclose(f);
  if (!hl_atomic_commit(&a)) { /* the stream keeps every write's error for this */
    hl_atomic_describe(&a, errno, err, len);
    return false;
  }
  return true;
}

/* The resumed log's reader alone (its fuzz target calls it): src's rows up
 * to `step` copied into dst, as a resume does. */
bool output_copy_resumed_log(const char *src, const char *dst, long long step, char *err, size_t len) {
  return cut_log(src, dst, step, err, len);
}

/* The run_id of a file's "# run_id: " metadata line (one of the lines
 * before its header); "" when it has none or cannot be read. */
static void file_run_id(const char *path, char id[RUN_ID_LEN + 1]) {
  id[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[4096];
  for (bool first = true; fgets(line, sizeof line, f); first = false) {
    as_written_line(line, (ssize_t)strlen(line), first);
    if (line[0] != '#') break;
    if (!strncmp(line, "# run_id: ", 10) && strspn(line + 10, "0123456789abcdef") == RUN_ID_LEN) {
      memcpy(id, line + 10, RUN_ID_LEN);
      id[RUN_ID_LEN] = '\0';
      break;
    }
  }
  fclose(f);
}

/* Whether the file at path is one this run (its identity) wrote. */
static bool is_this_runs(const char *path, const char *run_id) {
  char id[RUN_ID_LEN + 1];
  file_run_id(path, id);
  return !strcmp(id, run_id);
}

/* NAME.RUN_ID: where another run's file under a suffix this run takes is
 * kept ("earlier" for a file of a halflab before run identities). */
static const char *aside_path(const char *path, const char *run_id, char *buf, size_t len) {
  snprintf(buf, len, "%.4096s.%s", path, run_id[0] ? run_id : "earlier");
  return buf;
}

/* Before this run takes the names under suffix `at`: the files there of
 * another run (another run_id) are renamed to NAME.RUN_ID, so that no run
 * replaces a file another run wrote (a resume of that run finds its log
 * there). false with the failure in err (err NULL: best effort). */
static bool set_aside_others(train_output *w, file_state at, char *err, size_t len) {
  for (int k = 0; k < RUN_FILES; k++) {
    char path[4400], aside[4400], id[RUN_ID_LEN + 1];
    if (w->at[k] == at || !is_file(run_path(w, (run_file)k, at, path, sizeof path))) continue;
    file_run_id(path, id);
    if (!strcmp(id, w->o->run_id)) continue; /* an earlier attempt of this run: superseded */
    if (rename(path, aside_path(path, id, aside, sizeof aside)) != 0 && err) {
      snprintf(err, len, "rename of %s to %s failed: %s", path, aside, strerror(errno));
      return false;
    }
  }
  return true;
}

/* What a per-step log holds: its identity, whether it has the row of
 * `step`, and the step of its last complete row (0: none). */
typedef struct {
  char run_id[RUN_ID_LEN + 1];
  bool has_step;
  long long last_step;
} log_facts;

static void read_log_facts(const char *path, long long step, log_facts *facts) {
  memset(facts, 0, sizeof *facts);
  file_run_id(path, facts->run_id);
  FILE *f = fopen(path, "r");
  if (!f) return;
  const int step_column = hl_schema_find(&train_steps_schema, "step");
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  bool header = false;
  for (bool first = true; (n = getline(&line, &cap, f)) > 0; first = false) {
    n = as_written_line(line, n, first);
    if (line[0] == '#' && !header) continue;
    if (!header) {
      header = true;
      continue;
    }
    if (line[n - 1] != '\n') break; /* a line cut short by a kill: not a row */
    facts->last_step = row_cell_number(line, step_column);
    facts->has_step |= facts->last_step == step;
  }
  free(line);
  fclose(f);
}

/* The log a resume may continue, by number: the states' names, then the
 * same kept aside under this run's identity (NULL: no such name, a final
 * log is never kept aside). */
static const char *resume_log_path(const char *dir, const train_opts *o, int which, char *buf, size_t len) {
  const file_state s = (file_state)(which % FILE_STATES);
  if (which >= FILE_STATES && s == AT_FINAL) return NULL;
  char path[4400];
  snprintf(path, sizeof path, "%.4096s/train_%s_%s_steps.csv%s", dir, o->name, o->mode->name, state_suffix[s]);
  if (which < FILE_STATES) snprintf(buf, len, "%s", path);
  else aside_path(path, o->run_id, buf, len);
  return buf;
}

int output_resume_log(const train_opts *o, const char *dir, int64_t step) {
  int best = AT_NONE;
  bool best_ends = false;
  struct timespec t = {0, 0};
  char found[3000] = "";
  size_t at = 0;
  for (int s = 0; s < 2 * FILE_STATES; s++) { /* then each one kept aside under this run's identity */
    char path[4420];
    struct stat st;
    if (!resume_log_path(dir, o, s, path, sizeof path) || lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    log_facts f;
    read_log_facts(path, step, &f);
    const char *name = strrchr(path, '/') + 1;
    if (strcmp(f.run_id, o->run_id) || !f.has_step) {
      if (at < sizeof found) {
        if (!f.run_id[0])
          at += (size_t)snprintf(found + at, sizeof found - at, "; %s names no run (an earlier halflab-train's)", name);
        else if (strcmp(f.run_id, o->run_id))
          at += (size_t)snprintf(found + at, sizeof found - at, "; %s belongs to another run (run_id %s)", name,
                                 f.run_id);
        else
          at += (size_t)snprintf(found + at, sizeof found - at, "; %s is this run's but has no row of step %lld", name,
                                 (long long)step);
      }
      continue;
    }
    /* the log that ends at the checkpoint's step first, then the newest */
    const bool ends = f.last_step == step;
    const bool newer = st.st_mtim.tv_sec > t.tv_sec || (st.st_mtim.tv_sec == t.tv_sec && st.st_mtim.tv_nsec > t.tv_nsec);
    if (best == AT_NONE || (ends && !best_ends) || (ends == best_ends && newer)) {
      best = s;
      best_ends = ends;
      t = st.st_mtim;
    }
  }
  if (best == AT_NONE)
    hl_usage_error("--resume %s: --out %s holds no per-step log of the checkpoint's run (run_id %s, step %lld)%s; resume "
                   "with the --out that holds it",
                   o->resume, dir, o->run_id, (long long)step, found);
  return best;
}

train_output *output_open(const train_opts *o, const train_model *m, const char *dir, hl_device_kind dev,
                          int64_t resumed_step, int resume_log) {
  train_output *w = calloc(1, sizeof *w);
  if (!w) hl_fatal("out of host memory");
  snprintf(w->dir, sizeof w->dir, "%s", dir);
  w->o = o;
  w->m = m;
  w->dev = dev;
  snprintf(w->base, sizeof w->base, "train_%s_%s", o->name, o->mode->name);
  for (int k = 0; k < RUN_FILES; k++) w->at[k] = AT_NONE;
  w->load_start = load_average();
  w->t_start = hl_now_s();
  w->kept.first_step = resumed_step + 1;
  w->kept.eval_loss = w->kept.eval_acc = w->kept.final_loss = NAN;
  char name[256], path[4400], err[4600];
  snprintf(name, sizeof name, "%s_steps.csv%s", w->base, state_suffix[AT_INPROGRESS]);
  run_path(w, FILE_STEPS, AT_INPROGRESS, path, sizeof path);
  /* from here a failure leaves whatever the run made marked .failed */
  unfinished = w;
  static bool registered;
  if (!registered) atexit(on_exit_unfinished);
  registered = true;
  bool continued = false;
  if (!set_aside_others(w, AT_INPROGRESS, err, sizeof err)) io_failure(w, err);
  if (resumed_step > 0) { /* the histogram rows come from the checkpoint (output_hist_restore) */
    char src[4420];
    w->at[FILE_STEPS] = AT_INPROGRESS; /* maybe, once the cut is renamed into place */
    if (!resume_log_path(dir, o, resume_log, src, sizeof src) || !cut_log(src, path, resumed_step, err, sizeof err))
      io_failure(w, err);
    continued = true;
  }
  w->log = hl_csv_open_schema(dir, name, &train_steps_schema, continued ? HL_CSV_LOG_APPEND : HL_CSV_LOG, err,
                              sizeof err);
  w->at[FILE_STEPS] = AT_INPROGRESS;
  if (!w->log) io_failure(w, err);
  return w;
}

void output_step_row(train_output *w, hl_row *row) {
  if (!w) return; /* a data-parallel rank but 0: it writes nothing */
  if (!hl_csv_put(w->log, row)) io_failure(w, hl_csv_failure(w->log)); /* at once: the row is the record */
}

void output_keep(train_output *w, const run_result *r) {
  if (w) w->kept = *r;
}

/* One row of the histograms: log2_lo < HIST_MIN_LOG2 leaves the bin's cell
 * empty (the exact-zero and nonfinite rows). */
static void add_hist_row(train_output *w, int64_t step, const char *grads, double scale, int log2_lo, int64_t count,
                         double total, const char *zone) {
  hl_row row;
  hl_row_begin(&row, &train_hist_schema);
  hl_row_text(&row, "mode", w->o->mode->name);
  hl_row_int(&row, "step", step);
  hl_row_text(&row, "grads", grads);
  hl_row_real(&row, "scale", scale);
  if (log2_lo >= HIST_MIN_LOG2) hl_row_int(&row, "log2_lo", log2_lo);
  else hl_row_missing(&row, "log2_lo");
  hl_row_int(&row, "count", count);
  hl_row_real(&row, "frac", (double)count / total);
  hl_row_text(&row, "fp16_zone", zone);
  hl_csv_rows_put(&w->hist, &row);
}

void output_hist(train_output *w, int64_t step, const grad_hist *unscaled, const grad_hist *scaled, double scale) {
  if (!w) return; /* a data-parallel rank but 0: it writes nothing */
  const grad_hist *h[2] = {unscaled, scaled};
  const char *which[2] = {"unscaled", "scaled"};
  for (int k = 0; k < 2; k++) {
    const double total = (double)hist_total(h[k]);
    if (total == 0) continue;
    add_hist_row(w, step, which[k], k ? scale : 1.0, HIST_MIN_LOG2 - 1, h[k]->zero, total, "exact-zero");
    for (int b = 0; b < HIST_BINS; b++) {
      if (!h[k]->bin[b]) continue;
      const int e = b + HIST_MIN_LOG2;
      add_hist_row(w, step, which[k], k ? scale : 1.0, e, h[k]->bin[b], total, hist_fp16_zone(e));
    }
    if (h[k]->nonfinite) add_hist_row(w, step, which[k], k ? scale : 1.0, HIST_MIN_LOG2 - 1, h[k]->nonfinite, total, "nonfinite");
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

/* A checkpoint's histogram rows: whole rows of train_hist_schema, or, from
 * a checkpoint of an older halflab, the rows without their first cell (the
 * mode), which this run's mode completes. A row of any other width is
 * refused (exit 1): the histograms would not be the run's. */
bool output_hist_rows_parse(const char *mode, const char *rows, size_t len, hl_csv_rows *out) {
  const char *p = rows, *end = rows + len;
  const int columns = train_hist_schema.n_columns;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    int cells = 1;
    for (const char *c = p; c < eol; c++) cells += *c == ',';
    if (cells == columns) hl_csv_rows_add(out, "%.*s", (int)(eol - p), p);
    else if (cells == columns - 1) hl_csv_rows_add(out, "%s,%.*s", mode, (int)(eol - p), p);
    else return false;
    p = eol + 1;
  }
  return true;
}

void output_hist_restore(train_output *w, const char *rows, size_t len) {
  if (!w) return; /* a data-parallel rank but 0: it writes nothing */
  if (!output_hist_rows_parse(w->o->mode->name, rows, len, &w->hist))
    io_failure(w, "--resume: the checkpoint's histogram rows do not have the histogram file's columns");
}

/* ------------------------------------------------- the names it takes -- */

/* One name of the completed run's rename phase. */
typedef struct {
  char final[4400], staged[4420], kept[4420]; /* kept: a hard link to the file final replaces */
  bool has_new, had_old, done;
} replacement;

static void replacement_init(replacement *p, const char *dir, const char *final_name, bool has_new) {
  snprintf(p->final, sizeof p->final, "%s/%s", dir, final_name);
  snprintf(p->staged, sizeof p->staged, "%.4400s%s", p->final, state_suffix[AT_INPROGRESS]);
  snprintf(p->kept, sizeof p->kept, "%.4096s/.%.256s.replaced", dir, final_name);
  p->has_new = has_new;
  p->had_old = p->done = false;
}


/* One file of the run in dir, and the staging file its atomic write makes
 * beside it (core/base/atomic_file.h: PATH.tmp). */
static void add_own_file(hl_path_set *set, const char *dir, const char *name) {
  char path[4400], tmp[4420];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  hl_path_set_output(set, "--out", name, path);
  hl_path_set_output(set, "--out", name, tmp);
}

void output_register_files(const train_opts *o, const char *dir, hl_path_set *set) {
  char base[160], name[256], path[4400];
  snprintf(base, sizeof base, "train_%s_%s", o->name, o->mode->name);
  for (int k = 0; k < RUN_FILES; k++) {
    for (int s = 0; s < FILE_STATES; s++) {
      snprintf(name, sizeof name, "%s_%s.csv%s", base, file_kind[k], state_suffix[s]);
      add_own_file(set, dir, name);
    }
    snprintf(name, sizeof name, "%s_%s.csv", base, file_kind[k]);
    replacement p;
    replacement_init(&p, dir, name, true);
    hl_path_set_output(set, "--out", name, p.kept);
  }
  const char *summary = "train_summary.csv";
  add_own_file(set, dir, summary);
  snprintf(name, sizeof name, "%s%s", summary, state_suffix[AT_INPROGRESS]);
  add_own_file(set, dir, name);
  replacement p;
  replacement_init(&p, dir, summary, true);
  hl_path_set_output(set, "--out", summary, p.kept);
  if (hl_out_lock_path(dir, base, path, sizeof path)) hl_path_set_output(set, "--out", "lock", path);
  if (hl_out_lock_path(dir, summary, path, sizeof path)) hl_path_set_output(set, "--out", "lock", path);
}

/* ------------------------------------------------------------- summary -- */

/* What the run's metadata lines say of its build, start and units, as
 * the cells that end its row of train_summary.csv (rows of many runs). */
static void provenance_cells(hl_row *row) {
  char units[128];
  hl_cpu_units_words(units, sizeof units);
  hl_row_text(row, "version", hl_meta_version());
  hl_row_text(row, "date", hl_meta_date());
  hl_row_text(row, "cpu_units", units);
  hl_row_text(row, "blas_kernels", hl_blas_info_get()->kernels);
}

/* The run's row of the summary tables: of train_run_summary_schema, or of
 * train_summary_schema (the same columns, then the run's provenance). */
static void summary_row(const train_output *w, const run_result *r, const hl_schema *schema, hl_row *row) {
  const train_opts *o = w->o;
  const train_model *m = w->m;
  const char *policy = getenv("OMP_WAIT_POLICY");
  const bool gpt = o->model == MODEL_GPT;
  hl_row_begin(row, schema);
  hl_row_text(row, "name", o->name);
  hl_row_text(row, "mode", o->mode->name);
  hl_row_text(row, "model", gpt ? "gpt" : "mlp");
  hl_row_text(row, "task", train_task_name(o->task));
  hl_row_text(row, "device", hl_device_kind_name(w->dev));
  hl_row_text(row, "status", run_status_name(r->status));
  hl_row_int(row, "steps", o->steps);
  hl_row_int(row, "steps_done", run_steps_done(r));
  hl_row_int(row, "skipped", r->skipped);
  if (run_steps_done(r) > 0) hl_row_real(row, "final_loss", r->final_loss); /* nan or inf: the loss the run reached */
  else hl_row_missing(row, "final_loss");
  if (r->eval_step > 0) {
    hl_row_int(row, "eval_step", r->eval_step);
    hl_row_real(row, "eval_loss", r->eval_loss);
    hl_row_real(row, "eval_acc", r->eval_acc);
  } else {
    hl_row_missing(row, "eval_step");
    hl_row_missing(row, "eval_loss");
    hl_row_missing(row, "eval_acc");
  }
  train_row_real_or_missing(row, "final_scale", r->final_scale);
  train_row_real_or_missing(row, "grad_zero_frac", r->grad_zero_frac);
  train_row_real_or_missing(row, "fp16_underflow_frac", r->fp16_underflow_frac);
  train_row_real_or_missing(row, "fp16_underflow_scaled_frac", r->fp16_underflow_scaled_frac);
  train_row_real_or_missing(row, "fp16_zero_frac", r->fp16_zero_frac);
  train_row_real_or_missing(row, "fp16_zero_scaled_frac", r->fp16_zero_scaled_frac);
  train_row_real_or_missing(row, "absorbed_frac", r->absorbed_frac);
  train_row_real_or_missing(row, "fp16_absorbed_frac", r->fp16_absorbed_frac);
  train_row_real_or_missing(row, "step_time_ms_median", r->step_time_ms_median);
  train_row_real_or_missing(row, "step_time_ms_min", r->step_time_ms_min);
  hl_row_int(row, "timed_steps", r->timed_steps);
  train_row_real_or_missing(row, "tokens_per_s", r->tokens_per_s);
  train_row_real_or_missing(row, "samples_per_s", r->samples_per_s);
  hl_row_int(row, "mem_peak_bytes", (int64_t)r->mem_peak_bytes);
  hl_row_int(row, "param_bytes", (int64_t)hl_params_bytes(m->params));
  hl_row_int(row, "params", hl_params_numel(m->params));
  hl_row_int(row, "layers", gpt ? o->gpt.n_layer : o->mlp.n_hidden + 1);
  if (gpt) hl_row_int(row, "heads", o->gpt.n_head);
  else hl_row_missing(row, "heads");
  hl_row_int(row, "embd", gpt ? o->gpt.n_embd : o->mlp.n_in);
  hl_row_int(row, "vocab", gpt ? o->gpt.vocab_size : o->classes);
  hl_row_int(row, "seq", o->seq);
  hl_row_int(row, "batch", o->batch);
  hl_row_int(row, "accum", o->accum);
  hl_row_text(row, "optimizer", hl_optim_kind_name(o->optimizer));
  hl_row_real(row, "lr", o->lr);
  hl_row_text(row, "schedule", o->cosine ? "cosine" : "constant");
  hl_row_real(row, "init_gain", o->init_gain);
  if (o->mode->scaling == HL_LOSS_SCALE_NONE) hl_row_missing(row, "init_scale");
  else hl_row_real(row, "init_scale", o->init_scale);
  hl_row_int(row, "seed", (int64_t)o->seed);
  if (w->dev == HL_DEVICE_CPU) hl_row_int(row, "threads", omp_get_max_threads());
  else hl_row_missing(row, "threads");
  hl_row_text(row, "omp_wait_policy", policy && *policy ? policy : "default");
  train_row_real_or_missing(row, "load_start", w->load_start);
  train_row_real_or_missing(row, "load_end", load_average());
  hl_row_real(row, "wall_s", hl_now_s() - w->t_start);
  hl_row_int(row, "autocast_casts", (int64_t)r->autocast_casts);
  hl_row_int(row, "autocast_cache_misses", (int64_t)r->autocast_cache_misses);
  hl_row_int(row, "autocast_cache_hits", (int64_t)r->autocast_cache_hits);
  train_row_real_or_missing(row, "autocast_cache_hit_rate", run_cast_cache_hit_rate(r));
  hl_row_int(row, "ranks", hl_dist_size());
  /* one process all-reduces nothing (a GPU rank alone under mpirun does: NCCL runs for one) */
  if (hl_dist_reduces()) {
    hl_row_text(row, "allreduce_dtype", train_wire_name(o->allreduce_dtype));
    hl_row_real(row, "bucket_mb", o->bucket_mb);
    hl_row_int(row, "allreduce_buckets", r->allreduce_buckets);
    hl_row_int(row, "allreduce_bytes", (int64_t)r->allreduce_bytes);
    train_row_real_or_missing(row, "allreduce_ms_median", r->allreduce_ms_median);
    train_row_real_or_missing(row, "allreduce_exposed_ms_median", r->allreduce_exposed_ms_median);
  } else {
    static const char *const data_parallel[] = {"allreduce_dtype",   "bucket_mb",           "allreduce_buckets",
                                                "allreduce_bytes",   "allreduce_ms_median", "allreduce_exposed_ms_median"};
    for (size_t i = 0; i < sizeof data_parallel / sizeof data_parallel[0]; i++) hl_row_missing(row, data_parallel[i]);
  }
  if (schema == &train_summary_schema) provenance_cells(row);
}

static bool write_summary(const train_output *w, const run_result *r, file_state at, char *err, size_t len) {
  char name[256];
  hl_row row;
  summary_row(w, r, &train_run_summary_schema, &row);
  hl_csv_rows one = {0};
  hl_csv_rows_put(&one, &row);
  snprintf(name, sizeof name, "%s_summary.csv%s", w->base, state_suffix[at]);
  if (r->why[0]) hl_meta_set("why", "%s", r->why);
  const bool ok = hl_csv_rows_write_schema(&one, w->dir, name, &train_run_summary_schema, err, len);
  hl_csv_rows_free(&one);
  return ok;
}

/* train_summary.csv.inprogress (summary_table.c): the rows of train_summary.csv for other runs, then
 * this run's. */
static bool stage_train_summary(train_output *w, const char *row, char *err, size_t len) {
  w->staged_summary = true; /* from here, train_summary.csv.inprogress may be this run's */
  return summary_table_stage(w->dir, w->o->name, w->o->mode->name, row, err, len);
}

/* The tables of a run that ends, under the suffix of `at`: histograms,
 * summary, profile (--profile) last, its metadata lines being its own.
 * What an earlier attempt left under that suffix goes first, so that every
 * table found there afterwards is this run's, even one whose write failed
 * only at the folder's sync. */
static bool write_tables(train_output *w, const run_result *r, file_state at, char *err, size_t len) {
  char name[256], path[4400];
  if (!set_aside_others(w, at, err, len)) return false;
  for (int k = FILE_HIST; k < RUN_FILES; k++) unlink(run_path(w, (run_file)k, at, path, sizeof path));
  w->at[FILE_HIST] = at;
  snprintf(name, sizeof name, "%s_hist.csv%s", w->base, state_suffix[at]);
  if (!hl_csv_rows_write_schema(&w->hist, w->dir, name, &train_hist_schema, err, len)) return false;
  w->at[FILE_SUMMARY] = at;
  if (!write_summary(w, r, at, err, len)) return false;
  snprintf(name, sizeof name, "%s_profile.csv%s", w->base, state_suffix[at]);
  bool profiled = false;
  w->at[FILE_PROFILE] = at;
  const bool ok = profile_write(w->o, w->dir, name, w->dev, r, &profiled, err, len);
  if (ok && !profiled) w->at[FILE_PROFILE] = AT_NONE;
  return ok;
}

/* Removes what earlier attempts of this run (its identity: NAME_MODE files
 * of another run are never touched) left that this run's end supersedes:
 * after a completed run, every .interrupted, .failed and .inprogress file;
 * after an unfinished one, the files under its own suffix that are not its
 * own (so that the set under that suffix is one run's) and the .inprogress
 * tables of a run killed while it renamed them. */
static void remove_stale(const train_output *w, file_state ended) {
  for (int k = 0; k < RUN_FILES; k++)
    for (int s = 0; s < FILE_STATES; s++) {
      if (s == AT_FINAL || w->at[k] == (file_state)s) continue;
      if (ended != AT_FINAL && s != ended && s != AT_INPROGRESS) continue;
      char path[4400];
      if (is_file(run_path(w, (run_file)k, (file_state)s, path, sizeof path)) && is_this_runs(path, w->o->run_id))
        unlink(path);
      char aside[4420]; /* one another run kept aside */
      if (is_file(aside_path(path, w->o->run_id, aside, sizeof aside))) unlink(aside);
    }
}

/* ------------------------------------------------------------- ending -- */

/* Puts back what the rename phase replaced: each new file returns to its
 * staged name (the failure path then marks it failed), each earlier one to
 * its final name; the links of the names not reached are dropped. */
static void roll_back(replacement *p, int n) {
  for (int i = n - 1; i >= 0; i--) {
    if (p[i].done && p[i].has_new) rename(p[i].final, p[i].staged);
    if (p[i].had_old) {
      if (p[i].done) rename(p[i].kept, p[i].final);
      else unlink(p[i].kept);
    }
  }
}

/* The completed run's files, staged under .inprogress names, all renamed
 * to their final names. false (everything as it was before, the staged
 * files still staged) with the failure in err. */
static bool rename_into_place(train_output *w, bool profiled, char *err, size_t len) {
  enum { N = RUN_FILES + 1 };
  replacement p[N];
  const run_file order[RUN_FILES] = {FILE_HIST, FILE_PROFILE, FILE_SUMMARY, FILE_STEPS};
  for (int i = 0; i < RUN_FILES; i++) {
    char name[256];
    snprintf(name, sizeof name, "%s_%s.csv", w->base, file_kind[order[i]]);
    /* a run without --profile leaves no profile of an earlier run beside its files */
    replacement_init(&p[i], w->dir, name, order[i] != FILE_PROFILE || profiled);
  }
  replacement_init(&p[RUN_FILES], w->dir, "train_summary.csv", true); /* last: its row says the files are there */
  for (int i = 0; i < N; i++) {
    if (!is_file(p[i].final)) continue;
    unlink(p[i].kept); /* one a killed run left */
    /* a file system without hard links gets no way back: the renames still go ahead */
    p[i].had_old = link(p[i].final, p[i].kept) == 0;
  }
  for (int i = 0; i < N; i++) {
    int failed = 0;
    if (p[i].has_new && rename(p[i].staged, p[i].final) != 0) failed = errno;
    else if (!p[i].has_new && p[i].had_old && unlink(p[i].final) != 0) failed = errno;
    if (failed) {
      snprintf(err, len, "rename of %.4420s to %.4400s failed: %s", p[i].staged, p[i].final, strerror(failed));
      roll_back(p, N);
      return false;
    }
    p[i].done = true;
  }
  if (!hl_sync_folder_of(p[0].final)) {
    snprintf(err, len, "fsync of the folder %s failed: %s", w->dir, strerror(errno));
    roll_back(p, N);
    return false;
  }
  for (int i = 0; i < N; i++)
    if (p[i].had_old) unlink(p[i].kept);
  for (int k = 0; k < RUN_FILES; k++) w->at[k] = k == FILE_PROFILE && !profiled ? AT_NONE : AT_FINAL;
  w->staged_summary = false;
  return true;
}

/* A completed (or diverged) run: every table staged, then the renames. */
static bool end_completed(train_output *w, const run_result *r, char *err, size_t len) {
  hl_row row;
  summary_row(w, r, &train_summary_schema, &row);
  /* runs of other names may finish into this folder at the same time: the
   * read-modify-write of train_summary.csv, from its staging to its rename,
   * is theirs one at a time */
  hl_out_lock *summary_lock = hl_out_lock_wait(w->dir, "train_summary.csv", err, len);
  if (!summary_lock) {
    w->wait_stopped = errno == EINTR;
    return false;
  }
  const bool ok = stage_train_summary(w, hl_row_line(&row), err, len) && write_tables(w, r, AT_INPROGRESS, err, len) &&
                  rename_into_place(w, w->at[FILE_PROFILE] == AT_INPROGRESS, err, len);
  hl_out_lock_release(summary_lock);
  if (ok) remove_stale(w, AT_FINAL);
  return ok;
}

/* An interrupted, stopped or failed run: its tables written under the
 * suffix, the log renamed to it, the folder synced. */
static bool end_unfinished(train_output *w, const run_result *r, file_state at, char *err, size_t len) {
  if (!write_tables(w, r, at, err, len)) return false;
  char from[4400], to[4400];
  run_path(w, FILE_STEPS, AT_INPROGRESS, from, sizeof from);
  run_path(w, FILE_STEPS, at, to, sizeof to);
  if (rename(from, to) != 0) {
    snprintf(err, len, "rename of %s to %s failed: %s", from, to, strerror(errno));
    return false;
  }
  w->at[FILE_STEPS] = at;
  if (!hl_sync_folder_of(to)) {
    snprintf(err, len, "fsync of the folder %s failed: %s", w->dir, strerror(errno));
    return false;
  }
  remove_stale(w, at);
  return true;
}

static file_state state_of(run_status s) {
  switch (s) {
  case RUN_COMPLETED:
  case RUN_DIVERGED: return AT_FINAL; /* a divergence is the measurement */
  case RUN_STOPPED:
  case RUN_INTERRUPTED: return AT_INTERRUPTED;
  default: return AT_FAILED;
  }
}

const char *output_suffix(run_status s) { return state_suffix[state_of(s)]; }

void output_finish(train_output *w, run_result *r) {
  if (!w) return; /* a data-parallel rank but 0: it writes nothing */
  char err[9400];
  w->kept = *r;
  if (!hl_csv_close(w->log, err, sizeof err)) {
    w->log = NULL;
    io_failure(w, err);
  }
  w->log = NULL;
  const file_state at = state_of(r->status);
  bool ok = at == AT_FINAL ? end_completed(w, r, err, sizeof err) : end_unfinished(w, r, at, err, sizeof err);
  if (!ok && w->wait_stopped) { /* a signal while waiting for train_summary.csv: the run ends as a stopped one */
    r->status = RUN_INTERRUPTED;
    r->signal = loop_stop_signal();
    w->kept = *r;
    ok = end_unfinished(w, r, AT_INTERRUPTED, err, sizeof err);
  }
  if (!ok) io_failure(w, err);
  w->done = true;
  unfinished = NULL;
  hl_csv_rows_free(&w->hist);
  free(w);
}

/* ------------------------------------------------- a run that stopped -- */

/* The exit handler: the process is ending (hl_fatal) before the run's files
 * got their names. Best effort and silent (the message that ended the run
 * is the one line): the log keeps its complete lines; every file of the
 * run moves to the .failed suffix; the summary says failed. */
static void on_exit_unfinished(void) {
  train_output *w = unfinished;
  if (!w || w->done) return;
  unfinished = NULL;
  if (w->log) hl_csv_abandon(w->log);
  w->log = NULL;
  char path[4400], to[4400], err[4600];
  if (w->staged_summary) unlink(strcat(strcpy(path, w->dir), "/train_summary.csv.inprogress"));
  set_aside_others(w, AT_FAILED, NULL, 0);
  for (int k = 0; k < RUN_FILES; k++) {
    if (k == FILE_SUMMARY || w->at[k] == AT_NONE || w->at[k] == AT_FAILED || w->at[k] == AT_FINAL) continue;
    if (rename(run_path(w, (run_file)k, w->at[k], path, sizeof path),
               run_path(w, (run_file)k, AT_FAILED, to, sizeof to)) == 0)
      w->at[k] = AT_FAILED;
  }
  run_result r = w->kept;
  r.status = RUN_FAILED;
  if (w->why[0]) snprintf(r.why, sizeof r.why, "%.*s", (int)sizeof r.why - 1, w->why);
  else if (!r.why[0]) snprintf(r.why, sizeof r.why, "a runtime error (its message went to stderr)");
  /* a summary with another status than failed must not stay */
  const file_state had = w->at[FILE_SUMMARY];
  if (had != AT_NONE && had != AT_FAILED && had != AT_FINAL) unlink(run_path(w, FILE_SUMMARY, had, path, sizeof path));
  unlink(run_path(w, FILE_SUMMARY, AT_FAILED, path, sizeof path));
  write_summary(w, &r, AT_FAILED, err, sizeof err);
  w->at[FILE_SUMMARY] = is_file(path) ? AT_FAILED : AT_NONE;
  remove_stale(w, AT_FAILED);
  hl_sync_folder_of(run_path(w, FILE_STEPS, AT_FAILED, path, sizeof path));
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
