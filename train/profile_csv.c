/* profile_csv.c — --profile's table, train_NAME_MODE_profile.csv: what
 * core/engine/op_profile.h recorded over the timed steps, one row per (op,
 * phase) sorted by time, then each phase's wall time and the part of it no
 * op or kernel accounts for, then the step time and its unattributed part
 * (docs/train.md, "Profile"). Written as a table (NAME.tmp renamed) when
 * the run ends, under the name output.c gives it: a failed run leaves an
 * earlier profile as it was. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/csv.h"
#include "core/engine/op_profile.h"
#include "core/engine/registry.h"
#include "train/train.h"

/* The table is written as NAME.tmp renamed to NAME, for NAME the final
 * name, its .inprogress stage and the .interrupted and .failed names: each
 * must be free for a file (absent, or a file; the folder's own permission
 * is checked with --out). */
void profile_check_output(const train_opts *o, const char *dir) {
  if (!o->profile) return;
  static const char *const suffixes[] = {"", ".tmp", ".inprogress", ".inprogress.tmp", ".interrupted",
                                         ".interrupted.tmp", ".failed", ".failed.tmp"};
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/train_%s_%s_profile.csv%s", dir, o->name, o->mode->name, suffixes[i]);
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
      hl_usage_error("--profile: cannot write %s: it exists and is not a regular file", path);
    if (lstat(path, &st) != 0 && errno != ENOENT) hl_usage_error("--profile: cannot write %s: %s", path, strerror(errno));
  }
}

static int by_time_desc(const void *a, const void *b) {
  const hl_op_profile_entry *x = a, *y = b;
  if (x->self_ns != y->self_ns) return x->self_ns < y->self_ns ? 1 : -1;
  if (x->phase != y->phase) return x->phase < y->phase ? -1 : 1;
  return strcmp(x->op, y->op);
}

/* One row of train_profile_schema; calls < 0 and bytes < 0 leave those
 * cells (and the rate) empty. */
static void add_profile_row(hl_csv_rows *rows, const char *phase, const char *op, const char *kind, long long calls,
                            long long bytes, double ns, double step_time_ms, int64_t steps) {
  const double ms = ns / 1e6;
  hl_row row;
  hl_row_begin(&row, &train_profile_schema);
  hl_row_text(&row, "phase", phase);
  hl_row_text(&row, "op", op);
  hl_row_text(&row, "kind", kind);
  if (calls >= 0) {
    hl_row_int(&row, "calls", calls);
    hl_row_real(&row, "calls_per_step", (double)calls / (double)steps);
  } else {
    hl_row_missing(&row, "calls");
    hl_row_missing(&row, "calls_per_step");
  }
  hl_row_real(&row, "time_ms", ms);
  hl_row_real(&row, "time_ms_per_step", ms / (double)steps);
  if (step_time_ms > 0) hl_row_real(&row, "time_of_step_pct", 100.0 * ms / step_time_ms);
  else hl_row_missing(&row, "time_of_step_pct");
  if (bytes >= 0) hl_row_int(&row, "bytes", bytes);
  else hl_row_missing(&row, "bytes");
  if (bytes >= 0 && ns > 0) hl_row_real(&row, "gb_per_s", (double)bytes / ns); /* bytes per ns = GB/s */
  else hl_row_missing(&row, "gb_per_s");
  hl_csv_rows_put(rows, &row);
}

bool profile_write(const train_opts *o, const char *dir, const char *name, hl_device_kind dev, const run_result *r,
                   bool *wrote, char *err, size_t len) {
  *wrote = false;
  if (!o->profile || r->profile_steps <= 0) return true;
  const int n = hl_op_profile_entries(NULL, 0);
  hl_op_profile_entry *e = calloc((size_t)(n > 0 ? n : 1), sizeof *e);
  if (!e) hl_fatal("out of host memory for the profile");
  hl_op_profile_entries(e, n);
  qsort(e, (size_t)n, sizeof *e, by_time_desc);

  const int64_t steps = r->profile_steps;
  const double step_time_ms = r->profile_step_time_ms;
  double op_ns[HL_PROFILE_PHASES] = {0}, all_ns = 0;
  long long calls[HL_PROFILE_PHASES] = {0}, bytes[HL_PROFILE_PHASES] = {0};
  hl_csv_rows rows = {0};
  for (int i = 0; i < n; i++) {
    /* an op of the registry, or a kernel the engine or an optimizer called itself */
    const char *kind = e[i].beside ? "beside" : hl_op_find(e[i].op) ? "op" : "kernel";
    add_profile_row(&rows, hl_profile_phase_name(e[i].phase), e[i].op, kind, (long long)e[i].calls, (long long)e[i].bytes,
            (double)e[i].self_ns, step_time_ms, steps);
    if (e[i].beside) continue; /* overlaps the phase: not part of its sums */
    op_ns[e[i].phase] += (double)e[i].self_ns;
    calls[e[i].phase] += (long long)e[i].calls;
    bytes[e[i].phase] += (long long)e[i].bytes;
    all_ns += (double)e[i].self_ns;
  }
  for (int p = 0; p < HL_PROFILE_PHASES; p++) {
    const double wall = (double)hl_op_profile_phase_ns((hl_profile_phase)p);
    const char *name = hl_profile_phase_name((hl_profile_phase)p);
    add_profile_row(&rows, name, "(phase total)", "phase", calls[p], bytes[p], wall, step_time_ms, steps);
    add_profile_row(&rows, name, "(unattributed)", "unattributed", -1, -1, wall > op_ns[p] ? wall - op_ns[p] : 0, step_time_ms,
            steps);
  }
  add_profile_row(&rows, "step", "(step total)", "step", -1, -1, step_time_ms * 1e6, step_time_ms, steps);
  add_profile_row(&rows, "step", "(unattributed)", "unattributed", -1, -1, step_time_ms * 1e6 > all_ns ? step_time_ms * 1e6 - all_ns : 0,
          step_time_ms, steps);
  free(e);

  const int64_t last = r->profile_first_step + steps - 1;
  hl_meta_set("profile_steps", "%lld (steps %lld to %lld; %s)", (long long)steps, (long long)r->profile_first_step,
              (long long)last,
              r->profile_first_step > r->first_step ? "the --warmup steps before them left out"
                                                    : "the run ended within --warmup: every step, as the summary's timing");
  hl_meta_set("profile_time",
              "self time per op: the wall clock (CLOCK_MONOTONIC) from the op's entry to its exit, its kernel included, "
              "less the ops it ran inside it (autocast's casts, contiguous copies); %s; summed over the profiled steps",
              dev == HL_DEVICE_CPU ? "on the CPU a kernel runs on the calling thread (OpenMP inside), so this is its work"
                                   : "the device synchronised at every op's entry and exit, so this is the device's work, "
                                     "not the launch (the synchronisations slow the step)");
  hl_meta_set("profile_bytes", "of each op's input tensors (after autocast's casts) and its output tensor, numel x "
                               "element size each; an output sharing an input's storage (a view) counts 0; kernel rows: "
                               "the bytes read plus the bytes written; not a measurement of memory traffic");
  hl_meta_set("profile_phases", "forward: the model and its loss under the mode's autocast; backward: the scaled loss's "
                                "backward (everything the autograd engine runs); optimizer: unscale, gradient norm and "
                                "clipping, the optimizer step, the scale update; other: zero_grad, the learning rate, "
                                "the batch upload, --inject-nonfinite");
  hl_meta_set("profile_rows", "kind op: an op of the registry (docs/ops.md); kernel: a kernel the autograd engine or an "
                              "optimizer calls itself; beside: the data-parallel gradient all-reduce's communication thread, "
                              "running beside the step (listed in the phase it overlapped: backward for the hidden part, "
                              "other while dist.allreduce_wait waited for it), not part of any sum; phase: the phase's wall time (ops and what runs between them); "
                              "unattributed: the phase's or the step's time outside every op and kernel (the framework's "
                              "own work: graph bookkeeping, allocation, dispatch); step: the summed step_time_ms of the "
                              "profiled steps");
  const bool ok = hl_csv_rows_write_schema(&rows, dir, name, &train_profile_schema, err, len);
  hl_csv_rows_free(&rows);
  *wrote = ok;
  return ok;
}
