/* train.h — what the files of halflab-train share: the run's options, the
 * generated and text data, the model and mode set-up, the step loop and the
 * output files. One file per concern:
 *
 *   main.c     entry point: options, then --list-params / --export-batches /
 *              the run
 *   options.c  the command line, presets, validation (bad input: exit 2,
 *              nothing written)
 *   data.c     the tasks: sorting (GPT, default), bytes of a text file or of
 *              the generated text (GPT), a teacher-labelled classification
 *              set (MLP); held-out splits; the batch file for peers
 *   text_gen.c the generated English-like text (--task text without --text)
 *   setup.c    a mode's model, optimizer and scaler; the memory check; the
 *              parameter listing
 *   loop.c     the training step, evaluation, statistics, checkpoints,
 *              signals
 *   resume.c   what a checkpoint records of the run beside the state: the
 *              run's definition (checked against the command line on
 *              --resume) and the summary's running totals
 *   stats.c    gradient census (fp16 zero / subnormal / overflow), log2
 *              histograms, absorbed updates (stats.h: no tensors, unit-tested)
 *   output.c   the per-step log, histogram and summary CSVs, their names
 *              through the run (in progress, final, interrupted, failed),
 *              progress
 *   summary_table.c  train_summary.csv: the earlier table's rows of other
 *              runs and this run's, under the lines all its rows share
 *   profile_csv.c  --profile's table of ops, phases and the step time
 *   schemas.c  the columns of every CSV above, described once (cli/schema.h)
 */
#ifndef HL_TRAIN_H
#define HL_TRAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/csv.h"
#include "cli/schema.h"
#include "core/training/fault.h"
#include "core/models/nn.h"
#include "core/training/optim.h"
#include "core/training/scaler.h"
#include "train/gradient_stats.h"

#define TRAIN_PROG "halflab-train"
/* Test only (tests/train/test_train_mpi.c): set, a data-parallel run does
 * not all-reduce found_inf, so each rank skips on its own gradients only
 * and the replicas can drift apart. Never for real training. */
#define TRAIN_TEST_NO_FOUND_INF_ALLREDUCE "HALFLAB_TEST_NO_FOUND_INF_ALLREDUCE"
/* Test only: "RANK@STEP" makes that rank stop itself (SIGSTOP) at the start
 * of that step, as a hung rank would, for the --rank-timeout test. */
#define TRAIN_TEST_STOP_RANK "HALFLAB_TEST_STOP_RANK"
#define TRAIN_RANK_TIMEOUT_DEFAULT 300.0
/* --bucket-mb: DistributedDataParallel's bucket_cap_mb default */
#define TRAIN_BUCKET_MB_DEFAULT 25.0

/* ------------------------------------------------------------ options -- */

typedef enum { MODEL_GPT = 0, MODEL_MLP } model_kind;
typedef enum { TASK_SORT = 0, TASK_TEXT, TASK_CLASSIFY } task_kind;

#define TRAIN_MAX_HIST_STEPS 32
#define RUN_ID_LEN 16 /* hex digits of a run's identity (resume.c) */

typedef struct {
  /* model */
  model_kind model;
  const char *preset; /* "tiny", "small", "gpt2" */
  hl_gpt_config gpt;  /* block_size = seq */
  hl_mlp_config mlp;
  double init_gain;   /* GPT: init std 0.02 x gain; MLP: nn.Linear's bound x gain */

  /* data */
  task_kind task;
  const char *text_path; /* NULL with TASK_TEXT: the generated text */
  int sort_len;        /* numbers per sorting problem */
  int sort_digits;     /* alphabet of the numbers */
  int classes;         /* MLP task */
  int64_t batch;       /* sequences (GPT) or samples (MLP) per micro-batch */
  int64_t seq;         /* tokens per sequence */
  int64_t eval_samples;
  double eval_frac;    /* --text: the file's tail held out */
  int eval_every;

  /* training */
  const hl_train_setup *mode;
  hl_optim_kind optimizer;
  double lr, momentum, weight_decay;
  bool cosine;         /* --schedule cosine: lr x (1 + cos(pi (step - 1) / steps)) / 2 */
  double clip_norm;    /* 0: no clipping */
  int accum;           /* micro-batches per step */
  double grad_penalty; /* 0: none */
  double init_scale;   /* the scaler's initial (or, fp16-static, fixed) scale */
  int64_t growth_interval;
  hl_step_set inject;  /* steps whose gradient gets an inf */
  int inject_rank;     /* --inject-nonfinite STEPS@RANK: only that rank's gradients (-1: every rank's) */
  int check_replicas;  /* every N steps the ranks' weights and scaler state are compared (0: never) */
  hl_dtype allreduce_dtype; /* --allreduce-dtype: the gradients' type on the wire (HL_F32, HL_BF16, HL_F16) */
  double rank_timeout; /* --rank-timeout: seconds a rank waits in a collective before the job is ended (0: never) */
  double bucket_mb;    /* --bucket-mb: gradient buckets all-reduced during the backward, MiB of f32 (0: one piece after it) */
  const char *checkpoint;
  int checkpoint_every;
  const char *resume;
  /* --resume: the checkpoint, read, checked whole and held against the
   * command line while parsing (a mismatch exits 2 there); applied by main */
  struct hl_checkpoint *resumed;
  int64_t resumed_step;
  char resume_overrides[512]; /* the overrides taken ("none"), for the metadata */
  /* the run's identity (resume.c): 16 hex digits, computed at a fresh start,
   * taken from the checkpoint when resuming; in the log ("# run_id:") and
   * in every checkpoint, so that a resume continues this run's log only */
  char run_id[RUN_ID_LEN + 1];
  int64_t steps;
  int64_t stop_after;  /* 0: run to --steps */
  int64_t warmup;      /* steps left out of the timing summary */
  uint64_t seed;

  /* statistics */
  int stats_every;
  int64_t hist_steps[TRAIN_MAX_HIST_STEPS];
  int n_hist;

  /* outputs */
  const char *device;
  const char *out;
  char name[64];
  bool quick;
  bool list_params;
  bool columns_md;     /* --columns-md: print every CSV's columns as Markdown, write nothing */
  bool trace_ops;
  bool profile;        /* --profile: train_NAME_MODE_profile.csv (core/engine/op_profile.h) */
  const char *init_weights;
  const char *save_init;
  const char *export_batches;
  int64_t export_steps;
  const char *dump_grads; /* the first step's unscaled gradients, weight-file format */
  const char *dump_activations; /* the first step's linear-layer inputs (GPT), weight-file format */
} train_opts;

/* Parses argv into o; exits 2 with one line on any bad input, 0 after
 * --help / --version. Files named by the options are not opened here, but
 * for --resume's checkpoint: options not given take its values, and one
 * given that differs from it (but the overrides, resume.c) is refused. */
void train_parse_options(int argc, char **argv, train_opts *o);
const char *train_task_name(task_kind t);
/* --allreduce-dtype's name of a wire type: "fp32", "bf16", "fp16" */
const char *train_wire_name(hl_dtype wire);
/* The learning rate of a step (from 1) under the run's schedule. */
double train_lr_at(const train_opts *o, int64_t step);

/* --------------------------------------------------------------- data -- */

typedef struct train_data train_data;

/* Token data of a batch of rows x T: inputs, next-token targets, and
 * whether each position counts for accuracy (1) or not (0). */
typedef struct {
  int64_t rows, T;
  int32_t *idx, *tgt;
  uint8_t *scored;
} token_batch;

/* Samples of the classification task: x [rows, n_in] f32, labels [rows]. */
typedef struct {
  int64_t rows, n_in;
  float *x;
  int32_t *y;
} sample_batch;

/* NULL with a message in err for bad input (an unreadable, empty or too
 * short text file): the caller exits 2. */
train_data *data_new(const train_opts *o, char *err, size_t len);
void data_free(train_data *d);
int data_vocab(const train_data *d);  /* tokens the task uses */
int64_t data_eval_rows(const train_data *d);
const char *data_describe(const train_data *d); /* one line for the CSV metadata */

token_batch token_batch_new(int64_t rows, int64_t T);
void token_batch_free(token_batch *b);
sample_batch sample_batch_new(int64_t rows, int64_t n_in);
void sample_batch_free(sample_batch *b);

/* Training micro-batch `micro` of step `step` (from 1): a pure function of
 * (seed, step, micro), so every mode and a resumed run see the same data. */
void data_train_tokens(const train_data *d, int64_t step, int micro, token_batch *b);
void data_train_samples(const train_data *d, int64_t step, int micro, sample_batch *b);
/* Rows [first, first + b->rows) of the held-out set. */
void data_eval_tokens(const train_data *d, int64_t first, token_batch *b);
void data_eval_samples(const train_data *d, int64_t first, sample_batch *b);

/* --task text without --text FILE: len bytes of English-like sentences, a
 * pure function of seed (the first n bytes do not depend on len). */
#define TEXT_GENERATED_BYTES 262144
void text_generate(uint64_t seed, uint8_t *out, int64_t len);

/* The sorting task's tokens: digits 0..K-1, then the separator. */
int sort_sep_token(int digits);
/* One sorting sequence of T tokens from the given stream (for tests). */
void sort_sequence(uint64_t seed, uint64_t stream, int n, int digits, bool held_out, int64_t T, int32_t *idx,
                   int32_t *tgt, uint8_t *scored);
bool sort_problem_held_out(const int32_t *x, int n);

/* The batch file's size, in bytes (UINT64_MAX beyond that). */
uint64_t data_export_bytes(const train_data *d, const train_opts *o);
/* Whether it fits: at most DATA_EXPORT_MAX_BYTES, and no more than the free
 * space of the file system that would hold `path`; false with a message. */
#define DATA_EXPORT_MAX_BYTES (16ull << 30)
bool data_export_fits(const train_data *d, const train_opts *o, const char *path, char *err, size_t len);
/* The batch file for peers (docs/train.md): false with a message on an I/O
 * error, at the first write that fails (the partial file removed). */
bool data_export_batches(const train_data *d, const train_opts *o, const char *path, char *err, size_t len);

/* --------------------------------------------------------------- setup -- */

typedef struct {
  model_kind kind;
  hl_gpt *gpt;
  hl_mlp *mlp;
  hl_param_list *params;
  hl_tensor **trainable; /* the optimizer's parameters (borrowed) */
  int n_trainable;
  int64_t numel;         /* elements of the trainable parameters */
} train_model;

typedef struct {
  const hl_train_setup *setup;
  hl_dtype autocast;       /* HL_DTYPE_NONE: no autocast region */
  bool scaled;             /* a GradScaler is enabled */
  hl_optim *opt;
  hl_scaler *scaler;       /* always made; disabled where the mode has none */
} train_mode;

/* The model of o on the device, initialised from --seed (or --init-weights).
 * NULL with hl_error(). */
/* --dump-activations (activations.c): record starts keeping each linear
 * layer's input (retained), stop ends it, write saves them as a weight file
 * and releases them. */
typedef struct {
  hl_param *items;
  int n, cap;
} train_activations;
void train_activations_record(train_activations *a, hl_gpt *gpt);
void train_activations_stop(hl_gpt *gpt);
void train_activations_write(train_activations *a, const char *path);

bool setup_model(const train_opts *o, const train_data *d, hl_device_kind dev, train_model *m);
void setup_model_free(train_model *m);
bool setup_mode(const train_opts *o, train_model *m, train_mode *t);
void setup_mode_free(train_mode *t);

/* What a step needs: the analytic peak on the device (core/models/nn.h's
 * accounting) and the host's buffers (evaluation logits, statistics). */
void setup_step_bytes(const train_opts *o, const train_data *d, uint64_t *device, uint64_t *host);
int64_t setup_classes(const train_opts *o);    /* logits per position or sample */
int64_t setup_eval_chunk(const train_opts *o); /* rows per evaluation forward */
/* Prints the parameters under the run's mode: dtype, name, shape, bytes. */
void setup_list_params(const train_opts *o, const train_data *d, FILE *out);
/* Can this device run a step of the mode (a small model tries)? why says
 * what failed. */
bool setup_device_runs(const train_opts *o, hl_device_kind dev, char *why, size_t len);

/* -------------------------------------------------------------- resume -- */

/* The run's definition: every option that decides what the run computes,
 * as "option value" pairs (the option's own name and a value it reads
 * back exactly), in a fixed order, plus the text file's contents. */
#define RUN_DEFINITION_MAX 64
typedef struct {
  int n;
  const char *key[RUN_DEFINITION_MAX], *value[RUN_DEFINITION_MAX];
  char *text; /* holds the strings */
} run_definition;

/* "key value\n" lines of o's definition (malloc'd); NULL when out of memory. */
char *run_definition_format(const train_opts *o);
/* Splits the text into pairs; false when it is not such text. */
bool run_definition_parse(const char *text, size_t len, run_definition *d);
const char *run_definition_get(const run_definition *d, const char *key); /* NULL: not there */
void run_definition_free(run_definition *d);
/* Whether the option (by name, without "--") can be part of a definition. */
bool run_definition_key(const char *key);
/* Options that a resumed run may change: --steps, --stats-every, --hist-steps. */
bool run_definition_overridable(const char *key);
/* The checkpoint's name for its fields. */
#define RESUME_FIELD_DEFINITION "train/definition"
#define RESUME_FIELD_TOTALS "train/totals"
#define RESUME_FIELD_HIST "train/hist-rows"
#define RESUME_FIELD_RUN_ID "train/run_id"
/* The run's identity, RUN_ID_LEN hex digits of a 64-bit FNV-1a hash over
 * the definition's text (every option that shapes the run, --steps, --seed
 * and the --text file's size and CRC-32 among them) and the --init-weights
 * file's size and CRC-32. Only a fresh run computes it: a resumed run keeps
 * its checkpoint's, whatever it overrides. */
void run_id_compute(const train_opts *o, char out[RUN_ID_LEN + 1]);
/* --resume FILE: the checkpoint read and checked, its definition and its
 * run's identity; exits 2 naming the file when it cannot be read, is not
 * sound, is of another format version, is not halflab-train's or holds no
 * identity (written by a halflab-train before identities: its log cannot
 * be told from another run's). */
struct hl_checkpoint *resume_open(const char *path, run_definition *saved, char run_id[RUN_ID_LEN + 1]);
/* After parsing: o's definition against the checkpoint's; a difference is
 * refused (exit 2: "--resume FILE: KEY is A in the checkpoint, B on the
 * command line") unless the key is overridable, and then it is listed in
 * o->resume_overrides. */
void resume_check(train_opts *o, const run_definition *saved);

/* The summary's running totals over every step of the run, resumed or not:
 * saved in the checkpoint, so that a resumed run's summary is the
 * uninterrupted run's. */
#define RUN_STAT_COLUMNS 7
typedef struct {
  int64_t steps;        /* steps 1 .. steps are counted */
  int64_t skipped;
  int64_t consecutive_skips;
  double final_loss;
  double eval_loss, eval_acc;
  int64_t eval_step;
  double stats_sum[RUN_STAT_COLUMNS];
  int64_t stats_cnt[RUN_STAT_COLUMNS], stats_n;
  uint64_t mem_peak_bytes;
  uint64_t autocast_casts, autocast_cache_misses, autocast_cache_hits;
  double *step_time_ms; /* [steps]: every step's time, for the median */
} run_totals;

/* As text (malloc'd, exact: hex floats); NULL when out of memory. The
 * text's keys are the checkpoint format's (older names kept: last_loss,
 * mem_peak, step_ms), so that earlier checkpoints still resume. */
char *run_totals_format(const run_totals *t);
/* Back from text, step_time_ms malloc'd with room for `capacity` steps; false
 * when the text is not such text or holds more steps. */
bool run_totals_parse(const char *text, size_t len, int64_t capacity, run_totals *t);

/* ---------------------------------------------------------------- loop -- */

typedef enum { RUN_COMPLETED = 0, RUN_STOPPED, RUN_INTERRUPTED, RUN_DIVERGED, RUN_FAILED } run_status;
const char *run_status_name(run_status s);

typedef struct {
  int64_t steps_run, first_step; /* steps this process ran, from first_step (a resumed run: its checkpoint's + 1) */
  int64_t skipped;
  double final_loss;          /* the last step's; NaN before the first */
  double eval_loss, eval_acc; /* last evaluation; NaN when none */
  int64_t eval_step;          /* 0 when none */
  double final_scale;
  /* means over the steps with statistics */
  double grad_zero_frac, fp16_underflow_frac, fp16_underflow_scaled_frac, fp16_zero_frac, fp16_zero_scaled_frac,
      absorbed_frac, fp16_absorbed_frac;
  int stats_n;
  /* timing over the steps after the warm-up (NaN when none) */
  double step_time_ms_median, step_time_ms_min, tokens_per_s, samples_per_s;
  int timed_steps;
  /* --profile: the steps it covers (the timed ones) and their summed step time */
  int64_t profile_steps, profile_first_step;
  double profile_step_time_ms;
  uint64_t mem_peak_bytes;
  /* autocast's casts in the training steps this process ran (evaluation,
   * under no-grad, left out): conversions made, the weight casts among them
   * the cache then kept (misses), and weight casts the cache answered */
  uint64_t autocast_casts, autocast_cache_misses, autocast_cache_hits;
  /* data-parallel: the gradient all-reduce per step, medians over the steps
   * this process ran after the warm-up (NaN / 0 in one process) */
  double allreduce_ms_median, allreduce_exposed_ms_median;
  int allreduce_buckets;
  uint64_t allreduce_bytes;
  run_status status;
  char why[256];
  int signal;
} run_result;

/* The cast cache's hit rate, hits / (hits + misses); NaN when no weight cast
 * was asked for (no autocast, or weights already in the autocast dtype). */
double run_cast_cache_hit_rate(const run_result *r);
/* The last step completed: first_step + steps_run - 1 (0 when none). */
int64_t run_steps_done(const run_result *r);

/* Installs the SIGINT / SIGTERM / SIGHUP / SIGPIPE handlers (an ignored
 * SIGHUP or SIGPIPE stays ignored): the loop stops at the next step
 * boundary, a wait for train_summary.csv's lock ends, and the run's files
 * are finished as an interrupted run's (exit status 128 + the signal); a
 * second signal ends the process at once (after SIGPIPE, later writes to
 * stdout fail instead, reported at exit). */
void loop_install_signals(void);
/* The first of those signals that came (0: none). */
int loop_stop_signal(void);

struct train_output;
/* resumed: the checkpoint's totals (its steps, first_step - 1, of them);
 * NULL for a fresh run. */
run_result loop_run(const train_opts *o, const train_data *d, train_model *m, train_mode *t, hl_device_kind dev,
                    int64_t first_step, const run_totals *resumed, struct train_output *out);

/* -------------------------------------------------------------- output -- */

/* A data-parallel run's ranks but rank 0 have no train_output (NULL): the
 * functions taking one then do nothing. */
typedef struct train_output train_output;

/* Registers in set, as outputs of "--out", every file the run may write in
 * dir: each of its tables under every suffix, train_summary.csv and its
 * staging name, each of those's PATH.tmp, the links a completed run keeps
 * of the files it replaces, and its lock files. */
struct hl_path_set;
void output_register_files(const train_opts *o, const char *dir, struct hl_path_set *set);
/* Resuming after `step` into dir: which of this NAME_MODE's per-step logs
 * (in progress, final, interrupted or failed) the run continues: one of
 * the checkpoint's identity (o->run_id) that holds the row of `step`, the
 * one ending there first, then the newest. When there is none, exit 2 in
 * one line saying what dir holds instead, nothing written. */
int output_resume_log(const train_opts *o, const char *dir, int64_t step);
/* Opens the run's per-step log, train_NAME_MODE_steps.csv.inprogress:
 * fresh, or, resuming after resumed_step, the rows up to it of the log
 * output_resume_log chose (resume_log; that file is not changed). From here
 * until output_finish, a process that ends on a runtime error (hl_fatal)
 * leaves the run's files marked .failed. Exits 1 on an I/O error. */
train_output *output_open(const train_opts *o, const train_model *m, const char *dir, hl_device_kind dev,
                          int64_t resumed_step, int resume_log);
/* One line of the log; a write that fails ends the run at once (exit 1,
 * the file and the error named, the log's complete lines kept). */
void output_step_row(train_output *w, hl_row *row);
void output_hist(train_output *w, int64_t step, const grad_hist *unscaled, const grad_hist *scaled, double scale);
/* The histogram rows so far, '\n'-terminated each (malloc'd; *len its
 * size), for a checkpoint; and those rows given back to a resumed run. */
char *output_hist_rows(const train_output *w, size_t *len);
void output_hist_restore(train_output *w, const char *rows, size_t len);
/* output_hist_restore's reading of those rows into out, each completed
 * with `mode` where it lacks that cell; false at a row of another width. */
bool output_hist_rows_parse(const char *mode, const char *rows, size_t len, hl_csv_rows *out);
/* The run so far (after each step): what a failure's summary reports. */
void output_keep(train_output *w, const run_result *r);
/* Ends the run's files by its status (docs/train.md, "What a run leaves
 * behind"): completed or diverged, the final names and the row in
 * train_summary.csv (under its lock); stopped or interrupted, the
 * .interrupted suffix; failed, .failed. A signal that ends the wait for
 * train_summary.csv's lock makes a completed run an interrupted one (r's
 * status and signal changed). Frees w; exits 1 on an I/O error. */
void output_finish(train_output *w, run_result *r);
/* The suffix a run of that status leaves on its files ("" when final). */
const char *output_suffix(run_status s);
/* What output_open does to a resumed run's log: the rows of the log `src`
 * up to `step`, after its metadata and header, written whole as `dst`; false
 * with the failure in err when the log cannot be read or is not this
 * program's (tests/fuzz/fuzz_steplog.c reads logs through it). */
bool output_copy_resumed_log(const char *src, const char *dst, long long step, char *err, size_t len);

/* DIR/train_summary.csv.inprogress (summary_table.c): the rows of
 * DIR/train_summary.csv but the run (name, mode)'s, then `row`, the run's;
 * its metadata lines are those every row's run shares. false with the
 * failure in err. Called under the table's lock (output.c). */
bool summary_table_stage(const char *dir, const char *name, const char *mode, const char *row, char *err, size_t len);

/* --profile: refuses (exit 2) a profile CSV that could not be written at
 * any of its names; nothing is created. */
void profile_check_output(const train_opts *o, const char *dir);
/* --profile: DIR/NAME from core/engine/op_profile.h's table over r's
 * profiled steps; *wrote says whether there was one to write. false with
 * the failure in err. */
bool profile_write(const train_opts *o, const char *dir, const char *name, hl_device_kind dev, const run_result *r,
                   bool *wrote, char *err, size_t len);

/* ------------------------------------------------------------ schemas -- */

/* The CSVs (schemas.c): the per-step log, the histograms, a run's summary,
 * train_summary.csv (the same columns) and --profile's table. */
extern const hl_schema train_steps_schema, train_hist_schema, train_run_summary_schema, train_summary_schema,
    train_profile_schema;
#define TRAIN_SCHEMAS 5
extern const hl_schema *const train_schemas[TRAIN_SCHEMAS]; /* in that order */
/* --columns-md: every schema's section of docs/columns.md, in that order. */
void train_print_columns(FILE *out);
/* A real cell that is empty when v is NaN: the quantity was not measured
 * or does not apply (a NaN that is a result goes through hl_row_real). */
void train_row_real_or_missing(hl_row *row, const char *column, double v);

/* A progress line on stderr when it is a terminal. */
void output_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void output_progress_end(void); /* ends the progress line */

#endif
