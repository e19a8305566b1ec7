/* schemas.c — the columns of every CSV halflab-train writes, each described
 * once (cli/schema.h): the tables write the files' headers, their "# units:"
 * lines and every row, and --columns-md prints them for docs/columns.md.
 * A column's filled_by names the function that computes its value. */
#include <math.h>
#include <stdio.h>

#include "cli/schema.h"
#include "train/train.h"

/* --------------------------------------------------- the per-step log -- */

static const hl_column step_columns[] = {
    {"mode", "", HL_COL_TEXT, NULL, "The precision mode (--mode).", "train/options.c: train_parse_options"},
    {"step", "1", HL_COL_INT, NULL, "The optimizer step, from 1.", "train/loop.c: loop_run"},
    {"loss", "1", HL_COL_REAL, "%.9g",
     "The training loss of the step, the mean over its micro-batches (and ranks); nan or inf when it stopped being "
     "finite.",
     "train/loop.c: loop_run"},
    {"eval_loss", "1", HL_COL_REAL, "%.9g", "The held-out loss; empty at the steps without an evaluation.",
     "train/loop.c: evaluate"},
    {"eval_acc", "1", HL_COL_REAL, "%.9g",
     "The held-out accuracy (0 to 1); empty at the steps without an evaluation.", "train/loop.c: evaluate"},
    {"lr", "1", HL_COL_REAL, "%.9g", "The learning rate the step used (after the schedule).",
     "train/options.c: train_lr_at"},
    {"scale", "1", HL_COL_REAL, "%.9g", "The loss scale the step used (1 in a mode without a scaler).",
     "train/loop.c: train_step"},
    {"skipped", "1", HL_COL_INT, NULL, "1 when the scaler skipped the update (inf or NaN gradients), else 0.",
     "train/loop.c: optimizer_step"},
    {"grad_norm", "1", HL_COL_REAL, "%.9g",
     "The L2 norm of the unscaled gradients (before clipping); nan or inf when they were not finite.",
     "train/loop.c: gradient_norm"},
    {"grad_zero_frac", "1", HL_COL_REAL, "%.9g",
     "Share of the unscaled gradient elements exactly zero; empty at steps without statistics (--stats-every) and at "
     "skipped steps.",
     "train/gradient_stats.c: census_exact_zero_frac"},
    {"fp16_underflow_frac", "1", HL_COL_REAL, "%.9g",
     "Share of the unscaled gradient elements that fp16 would make zero or subnormal; empty as grad_zero_frac.",
     "train/gradient_stats.c: census_underflow_frac"},
    {"fp16_underflow_scaled_frac", "1", HL_COL_REAL, "%.9g",
     "The same share for the gradients times the loss scale; empty as grad_zero_frac.",
     "train/gradient_stats.c: census_underflow_frac"},
    {"fp16_zero_frac", "1", HL_COL_REAL, "%.9g",
     "Share of the unscaled gradient elements that fp16 would make zero; empty as grad_zero_frac.",
     "train/gradient_stats.c: census_zero_frac"},
    {"fp16_zero_scaled_frac", "1", HL_COL_REAL, "%.9g",
     "The same share for the gradients times the loss scale; empty as grad_zero_frac.",
     "train/gradient_stats.c: census_zero_frac"},
    {"absorbed_frac", "1", HL_COL_REAL, "%.9g",
     "Share of the non-zero updates that left the stored weight unchanged; empty as grad_zero_frac, and when no "
     "update was non-zero.",
     "train/gradient_stats.c: absorb_frac"},
    {"fp16_absorbed_frac", "1", HL_COL_REAL, "%.9g",
     "Share of the non-zero updates that fp16 storage of the weights would have absorbed; empty as absorbed_frac.",
     "train/gradient_stats.c: absorb_fp16_frac"},
    {"step_time_ms", "ms", HL_COL_REAL, "%.9g",
     "The step's time: batch upload to the end of the update, the device synchronised; statistics, evaluation and "
     "logging left out.",
     "train/loop.c: train_step"},
    {"tokens_per_s", "tokens/s", HL_COL_REAL, "%.9g", "Tokens trained per second of this step; empty for the MLP.",
     "train/loop.c: write_step_row"},
    {"samples_per_s", "samples/s", HL_COL_REAL, "%.9g",
     "Sequences (GPT) or samples (MLP) trained per second of this step.", "train/loop.c: write_step_row"},
    {"mem_current_bytes", "bytes", HL_COL_INT, NULL, "The device memory halflab's allocator holds after the step.",
     "train/loop.c: write_step_row"},
    {"mem_peak_bytes", "bytes", HL_COL_INT, NULL, "The most device memory halflab's allocator held so far.",
     "train/loop.c: write_step_row"},
};

const hl_schema train_steps_schema = {
    .file = "train_RUN_MODE_steps.csv",
    .program = "halflab-train",
    .written_by = "train/loop.c: write_step_row",
    .about = "One row per optimizer step (RUN: --name, MODE: --mode), each line written as the step ends; a resumed "
             "run continues the log after its checkpoint's step.",
    .columns = HL_SCHEMA_COLUMNS(step_columns)};

/* --------------------------------------------------------- histograms -- */

static const hl_column hist_columns[] = {
    {"mode", "", HL_COL_TEXT, NULL, "The precision mode (--mode).", "train/options.c: train_parse_options"},
    {"step", "1", HL_COL_INT, NULL, "The step of the histogram (--hist-steps).", "train/loop.c: write_histograms"},
    {"grads", "", HL_COL_TEXT, NULL, "unscaled: the gradients as the optimizer sees them; scaled: times the loss scale.",
     "train/output.c: output_hist"},
    {"scale", "1", HL_COL_REAL, "%.9g", "The loss scale of the scaled histogram (1 for the unscaled one).",
     "train/loop.c: train_step"},
    {"log2_lo", "1", HL_COL_INT, NULL,
     "The bin: elements with floor(log2 |g|) equal to it; empty for the exact-zero and nonfinite rows.",
     "train/gradient_stats.c: hist_log2_floor"},
    {"count", "1", HL_COL_INT, NULL, "Gradient elements in the bin.", "train/gradient_stats.c: hist_add"},
    {"frac", "1", HL_COL_REAL, "%.9g", "count over every element of the histogram.", "train/output.c: output_hist"},
    {"fp16_zone", "", HL_COL_TEXT, NULL,
     "What fp16 makes of the bin: zero, subnormal, normal or overflow; exact-zero and nonfinite rows name themselves.",
     "train/gradient_stats.c: hist_fp16_zone"},
};

const hl_schema train_hist_schema = {
    .file = "train_RUN_MODE_hist.csv",
    .program = "halflab-train",
    .written_by = "train/output.c: output_hist",
    .about = "Log2 histograms of the weight gradients at the --hist-steps: one row per non-empty bin, per step, "
             "unscaled and scaled.",
    .columns = HL_SCHEMA_COLUMNS(hist_columns)};

/* ------------------------------------------------------------ summary -- */

static const hl_column summary_columns[] = {
    {"name", "", HL_COL_TEXT, NULL, "The run group (--name).", "train/options.c: train_parse_options"},
    {"mode", "", HL_COL_TEXT, NULL, "The precision mode (--mode).", "train/options.c: train_parse_options"},
    {"model", "", HL_COL_TEXT, NULL, "gpt or mlp (--model).", "train/output.c: summary_row"},
    {"task", "", HL_COL_TEXT, NULL, "sort, text or classify.", "train/options.c: train_task_name"},
    {"device", "", HL_COL_TEXT, NULL, "cpu or cuda.", "train/main.c: pick_device"},
    {"status", "", HL_COL_TEXT, NULL, "completed, diverged, stopped, interrupted or failed.",
     "train/loop.c: run_ends_after"},
    {"steps", "1", HL_COL_INT, NULL, "The steps asked for (--steps).", "train/options.c: train_parse_options"},
    {"steps_done", "1", HL_COL_INT, NULL, "The last step completed (a resumed run's earlier steps included).",
     "train/loop.c: run_steps_done"},
    {"skipped", "1", HL_COL_INT, NULL, "Steps the scaler skipped (inf or NaN gradients).", "train/loop.c: loop_run"},
    {"final_loss", "1", HL_COL_REAL, "%.9g",
     "The training loss of the last step; nan or inf when it stopped being finite; empty when no step ran.",
     "train/loop.c: loop_run"},
    {"eval_step", "1", HL_COL_INT, NULL, "The step of the last evaluation; empty when none was made.",
     "train/loop.c: evaluate_when_due"},
    {"eval_loss", "1", HL_COL_REAL, "%.9g", "The held-out loss at eval_step; empty when no evaluation was made.",
     "train/loop.c: evaluate"},
    {"eval_acc", "1", HL_COL_REAL, "%.9g", "The held-out accuracy (0 to 1) at eval_step; empty as eval_loss.",
     "train/loop.c: evaluate"},
    {"final_scale", "1", HL_COL_REAL, "%.9g", "The loss scale after the last step (1 in a mode without a scaler).",
     "train/loop.c: summarize"},
    {"grad_zero_frac", "1", HL_COL_REAL, "%.9g",
     "The mean of the steps log's grad_zero_frac over the steps that have it; empty when none has.",
     "train/loop.c: summarize"},
    {"fp16_underflow_frac", "1", HL_COL_REAL, "%.9g", "The mean of the steps log's column, as grad_zero_frac.",
     "train/loop.c: summarize"},
    {"fp16_underflow_scaled_frac", "1", HL_COL_REAL, "%.9g", "The mean of the steps log's column, as grad_zero_frac.",
     "train/loop.c: summarize"},
    {"fp16_zero_frac", "1", HL_COL_REAL, "%.9g", "The mean of the steps log's column, as grad_zero_frac.",
     "train/loop.c: summarize"},
    {"fp16_zero_scaled_frac", "1", HL_COL_REAL, "%.9g", "The mean of the steps log's column, as grad_zero_frac.",
     "train/loop.c: summarize"},
    {"absorbed_frac", "1", HL_COL_REAL, "%.9g", "The mean of the steps log's column, as grad_zero_frac.",
     "train/loop.c: summarize"},
    {"fp16_absorbed_frac", "1", HL_COL_REAL, "%.9g", "The mean of the steps log's column, as grad_zero_frac.",
     "train/loop.c: summarize"},
    {"step_time_ms_median", "ms", HL_COL_REAL, "%.9g",
     "The median step_time_ms of the steps after the --warmup ones (every step when the run has no more); empty "
     "when no step ran.",
     "train/loop.c: summarize"},
    {"step_time_ms_min", "ms", HL_COL_REAL, "%.9g", "The least step_time_ms of the same steps.",
     "train/loop.c: summarize"},
    {"timed_steps", "1", HL_COL_INT, NULL, "The steps the timing columns are over.", "train/loop.c: summarize"},
    {"tokens_per_s", "tokens/s", HL_COL_REAL, "%.9g",
     "Tokens per step over step_time_ms_median; empty for the MLP.", "train/loop.c: summarize"},
    {"samples_per_s", "samples/s", HL_COL_REAL, "%.9g",
     "Sequences (GPT) or samples (MLP) per step over step_time_ms_median.", "train/loop.c: summarize"},
    {"mem_peak_bytes", "bytes", HL_COL_INT, NULL, "The most device memory halflab's allocator held in the run.",
     "train/loop.c: write_step_row"},
    {"param_bytes", "bytes", HL_COL_INT, NULL, "The bytes of the model's parameters as stored.",
     "core/models/nn_params.c: hl_params_bytes"},
    {"params", "1", HL_COL_INT, NULL, "The model's parameters (elements).", "core/models/nn_params.c: hl_params_numel"},
    {"layers", "1", HL_COL_INT, NULL, "GPT: transformer blocks; MLP: linear layers (hidden ones and the output).",
     "train/output.c: summary_row"},
    {"heads", "1", HL_COL_INT, NULL, "Attention heads per block; empty for the MLP.", "train/output.c: summary_row"},
    {"embd", "1", HL_COL_INT, NULL, "GPT: the width; MLP: the inputs per sample.", "train/output.c: summary_row"},
    {"vocab", "1", HL_COL_INT, NULL, "GPT: the vocabulary; MLP: the classes.", "train/output.c: summary_row"},
    {"seq", "1", HL_COL_INT, NULL, "Tokens per sequence (--seq).", "train/options.c: train_parse_options"},
    {"batch", "1", HL_COL_INT, NULL, "Sequences or samples per micro-batch (--batch).",
     "train/options.c: train_parse_options"},
    {"accum", "1", HL_COL_INT, NULL, "Micro-batches per step (--accum).", "train/options.c: train_parse_options"},
    {"optimizer", "", HL_COL_TEXT, NULL, "adamw or sgd.", "train/options.c: train_parse_options"},
    {"lr", "1", HL_COL_REAL, "%.9g", "The peak learning rate (--lr).", "train/options.c: train_parse_options"},
    {"schedule", "", HL_COL_TEXT, NULL, "constant or cosine.", "train/options.c: train_parse_options"},
    {"init_gain", "1", HL_COL_REAL, "%.9g", "The initialisation's gain (--init-gain).",
     "train/options.c: train_parse_options"},
    {"init_scale", "1", HL_COL_REAL, "%.9g", "The scaler's initial (or fixed) scale; empty in a mode without one.",
     "train/options.c: train_parse_options"},
    {"seed", "1", HL_COL_INT, NULL, "The seed of the weights and the data (--seed).",
     "train/options.c: train_parse_options"},
    {"threads", "1", HL_COL_INT, NULL, "OpenMP threads on the CPU; empty on a GPU.", "train/output.c: summary_row"},
    {"omp_wait_policy", "", HL_COL_TEXT, NULL, "OMP_WAIT_POLICY, or default when unset.", "train/output.c: summary_row"},
    {"load_start", "1", HL_COL_REAL, "%.9g", "The 1-minute load average when the run's files were opened; empty when "
     "/proc/loadavg cannot be read.", "train/output.c: load_average"},
    {"load_end", "1", HL_COL_REAL, "%.9g", "The 1-minute load average when the summary was written; empty as "
     "load_start.", "train/output.c: load_average"},
    {"wall_s", "s", HL_COL_REAL, "%.3f", "Seconds from the opening of the run's files to the summary.",
     "train/output.c: summary_row"},
    {"autocast_casts", "1", HL_COL_INT, NULL, "Conversions autocast made in the training steps this process ran.",
     "train/loop.c: train_step"},
    {"autocast_cache_misses", "1", HL_COL_INT, NULL, "The weight casts among them, then kept by the cast cache.",
     "train/loop.c: train_step"},
    {"autocast_cache_hits", "1", HL_COL_INT, NULL, "Weight casts the cast cache answered.", "train/loop.c: train_step"},
    {"autocast_cache_hit_rate", "1", HL_COL_REAL, "%.9g",
     "hits / (hits + misses); empty when no f32 weight was cast.", "train/loop.c: run_cast_cache_hit_rate"},
    {"ranks", "1", HL_COL_INT, NULL, "Data-parallel processes (1 outside mpirun).", "core/training/dist.c: hl_dist_size"},
    {"allreduce_dtype", "", HL_COL_TEXT, NULL,
     "The gradients' type on the wire (--allreduce-dtype); empty when nothing is all-reduced (one process).",
     "train/options.c: train_wire_name"},
    {"bucket_mb", "MiB", HL_COL_REAL, "%g", "The gradient buckets' size in MiB of f32 (--bucket-mb); empty as "
     "allreduce_dtype.", "train/options.c: train_parse_options"},
    {"allreduce_buckets", "1", HL_COL_INT, NULL, "Buckets all-reduced per step; empty as allreduce_dtype.",
     "train/loop.c: allreduce_gradients"},
    {"allreduce_bytes", "bytes", HL_COL_INT, NULL, "Bytes each rank sends per step; empty as allreduce_dtype.",
     "train/loop.c: allreduce_gradients"},
    {"allreduce_ms_median", "ms", HL_COL_REAL, "%.9g",
     "The median time per step inside the gradient all-reduces, over this process's steps after the warm-up; empty "
     "as allreduce_dtype.",
     "train/loop.c: summarize"},
    {"allreduce_exposed_ms_median", "ms", HL_COL_REAL, "%.9g",
     "The median of the all-reduce's part that the backward did not hide; empty as allreduce_dtype.",
     "train/loop.c: summarize"},
    {"version", "", HL_COL_TEXT, NULL,
     "The halflab that ran, as its files' \"# halflab\" line names it: the version and git describe, "
     "0.1.0 (GIT-DESCRIBE), -dirty when built from a tree with uncommitted changes.",
     "cli/csv.c: hl_meta_version"},
    {"date", "", HL_COL_TEXT, NULL, "When the run started: UTC, ISO 8601, as its files' \"# date:\" line.",
     "cli/csv.c: hl_meta_init"},
    {"cpu_units", "", HL_COL_TEXT, NULL,
     "The CPU's half-precision units halflab's kernels used (its files' \"# cpu-units:\" line), space-separated: "
     "f16c avx512_bf16 ...; portable under HALFLAB_CPU_UNITS=portable; none when the CPU has none.",
     "kernels/cpu/cpu_features.c: hl_cpu_units_words"},
    {"blas_kernels", "", HL_COL_TEXT, NULL,
     "The BLAS kernel set that ran the fp32 products (OpenBLAS's core, as the \"# blas:\" line names it), or "
     "unknown.",
     "kernels/cpu/blas.c: describe_kernels"},
};

/* train_summary.csv's rows come from many runs: each ends with its run's provenance, the last
 * PROVENANCE_COLUMNS of summary_columns, which a run's own file has in its metadata lines instead */
enum { PROVENANCE_COLUMNS = 4 };

const hl_schema train_run_summary_schema = {
    .file = "train_RUN_MODE_summary.csv",
    .program = "halflab-train",
    .written_by = "train/output.c: summary_row",
    .about = "The run in one row, whatever its status; its metadata holds the run's command line (and, for a run that "
             "did not complete, a why line).",
    .columns = summary_columns,
    .n_columns = (int)(sizeof summary_columns / sizeof summary_columns[0]) - PROVENANCE_COLUMNS};

const hl_schema train_summary_schema = {
    .file = "train_summary.csv",
    .program = "halflab-train",
    .written_by = "train/summary_table.c: summary_table_stage",
    .about = "Every completed (or diverged) run's summary row, one per (name, mode), replaced when a run is "
             "repeated: the columns of train_RUN_MODE_summary.csv, then the run's version, date, cpu_units and "
             "blas_kernels (its own file's metadata lines); the file's metadata lines are only those every row's "
             "run shares.",
    .columns = HL_SCHEMA_COLUMNS(summary_columns)};

/* ------------------------------------------------------------ profile -- */

static const hl_column profile_columns[] = {
    {"phase", "", HL_COL_TEXT, NULL, "forward, backward, optimizer, other, or step for the whole step.",
     "core/engine/op_profile.c: hl_profile_phase_name"},
    {"op", "", HL_COL_TEXT, NULL,
     "The op or kernel; (phase total), (unattributed) or (step total) in the summing rows.",
     "train/profile_csv.c: profile_write"},
    {"kind", "", HL_COL_TEXT, NULL, "op, kernel, beside, phase, unattributed or step (docs/train.md, \"Profile\").",
     "train/profile_csv.c: profile_write"},
    {"calls", "1", HL_COL_INT, NULL, "Calls over the profiled steps; empty in the unattributed and step rows.",
     "core/engine/op_profile.c: hl_op_profile_entries"},
    {"calls_per_step", "1", HL_COL_REAL, "%.6g", "calls over the profiled steps' count; empty as calls.",
     "train/profile_csv.c: add_profile_row"},
    {"time_ms", "ms", HL_COL_REAL, "%.6f", "Self time summed over the profiled steps.",
     "core/engine/op_profile.c: hl_op_profile_entries"},
    {"time_ms_per_step", "ms", HL_COL_REAL, "%.6f", "time_ms over the profiled steps' count.",
     "train/profile_csv.c: add_profile_row"},
    {"time_of_step_pct", "%", HL_COL_REAL, "%.3f", "time_ms as a share of the profiled steps' summed step_time_ms.",
     "train/profile_csv.c: add_profile_row"},
    {"bytes", "bytes", HL_COL_INT, NULL,
     "The bytes of the inputs and outputs (kernels: read plus written) over the profiled steps; empty as calls.",
     "core/engine/op_profile.c: hl_op_profile_entries"},
    {"gb_per_s", "GB/s", HL_COL_REAL, "%.6g", "bytes over time_ms; empty as calls and when time_ms is 0.",
     "train/profile_csv.c: add_profile_row"},
};

const hl_schema train_profile_schema = {
    .file = "train_RUN_MODE_profile.csv",
    .program = "halflab-train --profile",
    .written_by = "train/profile_csv.c: profile_write",
    .about = "One row per (op, phase) over the timed steps, sorted by time, then each phase's total and unattributed "
             "time, then the step's.",
    .columns = HL_SCHEMA_COLUMNS(profile_columns)};

/* ------------------------------------------------------ --columns-md -- */

const hl_schema *const train_schemas[TRAIN_SCHEMAS] = {&train_steps_schema, &train_hist_schema,
                                                       &train_run_summary_schema, &train_summary_schema,
                                                       &train_profile_schema};

void train_print_columns(FILE *out) {
  for (int i = 0; i < TRAIN_SCHEMAS; i++) hl_schema_markdown(train_schemas[i], out);
}

void train_row_real_or_missing(hl_row *row, const char *column, double v) {
  if (isnan(v)) hl_row_missing(row, column);
  else hl_row_real(row, column, v);
}
