/* loop.c — the training loop: the AMP recipes (typical loop, unscale +
 * clip, gradient accumulation, gradient penalty) driven by the mode, with
 * evaluation, the per-step measurements, checkpoints and a clean stop on
 * SIGINT / SIGTERM / SIGHUP / SIGPIPE.
 *
 * One step:
 *   for each micro-batch: forward + loss under the mode's autocast
 *     ("forward"), loss / accum, scaled backward ("backward")
 *   --inject-nonfinite: an inf into the first gradient
 *   unscale ("unscale": a no-op without a scaler; fp16-master copies the
 *     fp16 gradients into the f32 master gradients here), then the gradient
 *     norm (clipping with --clip-norm)
 *   [statistics: census and histogram of the unscaled gradients, a copy of
 *     the stored weights; not timed]
 *   optimizer step through the scaler ("optimizer step": skipped on inf /
 *     NaN), scale update
 * Data-parallel (mpirun, core/training/dist.h): each rank uploads its
 * --batch / N rows of every micro-batch; after the last micro-batch the
 * gradients are replaced by their mean over the ranks, before
 * --inject-nonfinite (STEPS@RANK: that rank's only) and the unscale; the
 * unscale's found_inf is then all-reduced (max), so that every rank skips
 * together; the logged loss is the ranks' mean (all-reduced with the
 * gradients, phase "other" in --profile). --check-replicas compares
 * the ranks' weights and scaler state. Only rank 0 evaluates and writes.
 * The step time runs from the batch upload to the end of the update (the
 * device synchronised), without the statistics, evaluation and logging.
 * --profile records exactly that time (core/engine/op_profile.h), in the
 * phases forward, backward, optimizer (unscale, norm, step, scale update)
 * and other (zero_grad, the batch upload), from the first step after the
 * warm-up on (all steps when the run ends within it, as the summary does).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "core/training/checkpoint.h"
#include "cli/cli.h"
#include "core/training/clip.h"
#include "core/training/dist.h"
#include "core/training/grad_buckets.h"
#include "core/base/crc32.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/base/mem.h"
#include "core/engine/op_profile.h"
#include "core/engine/op_trace.h"
#include "core/engine/ops.h"
#include "cli/stats.h"
#include "cli/timer.h"
#include "core/base/profiler_ranges.h"
#include "cli/output_guard.h"
#include "train/train.h"

/* Consecutive skipped steps after which a scaled run is declared diverged
 * (the scale has been halved this many times without a finite step). */
#define MAX_CONSECUTIVE_SKIPS 50

double run_cast_cache_hit_rate(const run_result *r) {
  const uint64_t lookups = r->autocast_cache_hits + r->autocast_cache_misses;
  return lookups ? (double)r->autocast_cache_hits / (double)lookups : NAN;
}

int64_t run_steps_done(const run_result *r) { return r->first_step + r->steps_run - 1; }

const char *run_status_name(run_status s) {
  static const char *names[] = {"completed", "stopped", "interrupted", "diverged", "failed"};
  return names[s];
}

/* ------------------------------------------------------------- signals -- */

static volatile sig_atomic_t stop_signal;

/* The signals that stop a run at the next step boundary, its files
 * finished as an interrupted run's: Ctrl-C, kill, a closed terminal or ssh
 * session (SIGHUP), a reader of stdout that went away (SIGPIPE). */
static const int stopping_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
enum { STOPPING_SIGNALS = sizeof stopping_signals / sizeof stopping_signals[0] };

static void on_signal(int sig) {
  if (!stop_signal) stop_signal = sig;
  hl_out_lock_wait_stop(sig); /* a wait for train_summary.csv ends too: the run finishes as interrupted */
  /* a second Ctrl-C, kill or hangup ends the process at once; a closed stdout's later writes just fail (EPIPE),
   * and the exit check reports them */
  struct sigaction dfl, ign;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  for (int i = 0; i < STOPPING_SIGNALS; i++)
    if (stopping_signals[i] != SIGPIPE) sigaction(stopping_signals[i], &dfl, NULL);
  sigaction(SIGPIPE, &ign, NULL);
}

int loop_stop_signal(void) { return stop_signal; }

void loop_install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < STOPPING_SIGNALS; i++) {
    struct sigaction old; /* an ignored hangup or pipe (nohup, a parent's choice) stays ignored */
    const int sig = stopping_signals[i];
    if ((sig == SIGHUP || sig == SIGPIPE) && sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(sig, &sa, NULL);
  }
}

/* ------------------------------------------------------------- batches -- */

typedef struct {
  token_batch tokens;
  sample_batch samples;
  hl_dtype x_dtype; /* MLP inputs: f32, or the model's dtype where no autocast casts them */
} host_batch;

static host_batch host_batch_new(const train_opts *o, const train_mode *t, int64_t rows) {
  host_batch h;
  memset(&h, 0, sizeof h);
  if (o->model == MODEL_GPT) h.tokens = token_batch_new(rows, o->seq);
  else h.samples = sample_batch_new(rows, o->mlp.n_in);
  h.x_dtype = t->autocast == HL_DTYPE_NONE ? hl_weight_policy_dtype(t->setup->weights, HL_ROLE_WEIGHT) : HL_F32;
  return h;
}

static void host_batch_free(host_batch *h) {
  token_batch_free(&h->tokens);
  sample_batch_free(&h->samples);
}

/* Rows [first, first + rows) of the batch on the device: inputs and
 * targets (new references). */
static void upload(const train_model *m, const host_batch *h, hl_device_kind dev, int64_t first, int64_t rows,
                   hl_tensor **in, hl_tensor **tgt) {
  if (m->kind == MODEL_GPT) {
    const token_batch *b = &h->tokens;
    *in = hl_from_i32(HL_SHAPE(rows, b->T), b->idx + first * b->T, HL_I32, dev);
    *tgt = hl_from_i32(HL_SHAPE(rows, b->T), b->tgt + first * b->T, HL_I32, dev);
  } else {
    const sample_batch *b = &h->samples;
    *in = hl_from_f32(HL_SHAPE(rows, b->n_in), b->x + first * b->n_in, h->x_dtype, dev);
    *tgt = hl_from_i32(HL_SHAPE(rows), b->y + first, HL_I32, dev);
  }
  if (!*in || !*tgt) hl_fatal("uploading a batch: %s", hl_error());
}

static hl_tensor *model_loss(train_model *m, hl_tensor *in, hl_tensor *tgt, hl_tensor **logits) {
  return m->kind == MODEL_GPT ? hl_gpt_loss(m->gpt, in, tgt, logits) : hl_mlp_loss(m->mlp, in, tgt, logits);
}

/* ------------------------------------------------------------ evaluate -- */

typedef struct {
  double loss, acc;
  double ms;
} eval_result;

static eval_result evaluate(const train_opts *o, const train_data *d, train_model *m, train_mode *t,
                            hl_device_kind dev) {
  const double t0 = hl_now_s();
  const int64_t rows = data_eval_rows(d), chunk = setup_eval_chunk(o) < rows ? setup_eval_chunk(o) : rows;
  host_batch h = host_batch_new(o, t, chunk);
  const int64_t classes = setup_classes(o);
  const int64_t per_row = m->kind == MODEL_GPT ? o->seq : 1;
  float *logits = malloc(sizeof(float) * (size_t)(chunk * per_row * classes));
  if (!logits) hl_fatal("out of host memory for the evaluation's logits");
  double loss_sum = 0;
  int64_t correct = 0, scored = 0;
  hl_range_push("evaluate");
  for (int64_t first = 0; first < rows; first += chunk) { /* finished even after a signal: no partial figures */
    const int64_t n = rows - first < chunk ? rows - first : chunk;
    if (m->kind == MODEL_GPT) {
      h.tokens.rows = n;
      data_eval_tokens(d, first, &h.tokens);
    } else {
      h.samples.rows = n;
      data_eval_samples(d, first, &h.samples);
    }
    hl_tensor *in, *tgt, *out = NULL, *loss = NULL;
    upload(m, &h, dev, 0, n, &in, &tgt);
    HL_NO_GRAD {
      HL_AUTOCAST(dev, t->autocast, t->autocast != HL_DTYPE_NONE) { loss = model_loss(m, in, tgt, &out); }
    }
    if (!loss || !hl_read_f32(out, logits)) hl_fatal("evaluation: %s", hl_error());
    loss_sum += hl_item(loss) * (double)n;
    for (int64_t r = 0; r < n * per_row; r++) {
      const bool counts = m->kind == MODEL_GPT ? h.tokens.scored[r] : true;
      if (!counts) continue;
      const float *row = logits + r * classes;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; c++)
        if (row[c] > row[best]) best = c;
      const int32_t want = m->kind == MODEL_GPT ? h.tokens.tgt[r] : h.samples.y[r];
      correct += best == want;
      scored++;
    }
    hl_release(loss);
    hl_release(out);
    hl_release(in);
    hl_release(tgt);
  }
  hl_range_pop();
  free(logits);
  host_batch_free(&h);
  eval_result e = {loss_sum / (double)rows, scored ? (double)correct / (double)scored : NAN, (hl_now_s() - t0) * 1e3};
  return e;
}

/* ------------------------------------------------------------ statistics -- */

typedef struct {
  float *grad, *before, *after; /* host copies, numel each */
} stat_buffers;

static float *read_all(train_model *m, train_mode *t, bool grads, float *out) {
  int64_t at = 0;
  for (int i = 0; i < m->n_trainable; i++) {
    hl_tensor *x = grads ? hl_optim_grad(t->opt, i) : hl_optim_param(t->opt, i);
    const int64_t n = hl_numel(hl_optim_param(t->opt, i));
    if (!x) memset(out + at, 0, sizeof(float) * (size_t)n); /* no gradient: nothing to count but zeros */
    else if (!hl_read_f32(x, out + at)) hl_fatal("reading %s: %s", hl_tensor_name(hl_optim_param(t->opt, i)), hl_error());
    at += n;
  }
  return out;
}

/* --dump-grads: the gradients the optimizer will step with (unscaled, not
 * yet clipped), named and shaped as their parameters, in core/models/nn.h's weight
 * file format, so a peer's gradients can be compared entry by entry. A
 * parameter without a gradient is written as zeros. */
static void dump_grads(const char *path, train_model *m, train_mode *t) {
  hl_param_list l = *m->params;
  l.items = calloc((size_t)m->n_trainable, sizeof *l.items);
  hl_tensor **zeros = calloc((size_t)m->n_trainable, sizeof *zeros);
  if (!l.items || !zeros) hl_fatal("out of host memory");
  l.n = 0;
  for (int i = 0; i < m->params->n; i++) {
    const hl_param *p = &m->params->items[i];
    for (int k = 0; k < m->n_trainable; k++) {
      if (hl_optim_param(t->opt, k) != p->tensor) continue;
      hl_tensor *g = hl_optim_grad(t->opt, k);
      if (!g) g = zeros[l.n] = hl_zeros(hl_tensor_shape(p->tensor), HL_F32, hl_optim_device(t->opt));
      if (!g) hl_fatal("--dump-grads: %s", hl_error());
      l.items[l.n++] = (hl_param){.name = p->name, .tensor = g, .role = p->role, .block = p->block};
    }
  }
  if (!hl_params_save(&l, path)) hl_fatal("--dump-grads: %s", hl_error());
  for (int k = 0; k < m->n_trainable; k++) hl_release(zeros[k]);
  free(zeros);
  free(l.items);
}

/* ------------------------------------------------------------- the loop -- */

static const char *nonfinite_name(double v) { return isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

static bool is_hist_step(const train_opts *o, int64_t s) {
  for (int i = 0; i < o->n_hist; i++)
    if (o->hist_steps[i] == s) return true;
  return false;
}

/* The statistics columns of a row, and of the summary's means: exact zeros,
 * fp16 underflow unscaled and scaled, fp16 zeros unscaled and scaled,
 * absorbed updates, absorbed in fp16. */
enum { STAT_COLUMNS = RUN_STAT_COLUMNS };

/* What the loop keeps from step to step. */
typedef struct {
  const train_opts *o;
  const train_data *d;
  train_model *m;
  train_mode *t;
  hl_device_kind dev;
  int64_t first_step;
  train_output *out;
  const hl_backend *be;
  double items, tokens; /* per step: sequences or samples; tokens (NaN for the MLP) */
  host_batch h;
  stat_buffers sb;      /* allocated when some step takes statistics */
  double *step_time_ms; /* every step of the whole run (a resumed run's earlier ones from its checkpoint) */
  int64_t n_times;
  int64_t consecutive_skips;
  double last_progress; /* when the progress line was last printed */
  double stats_sum[STAT_COLUMNS];
  int64_t stats_cnt[STAT_COLUMNS];
  char *definition;     /* --checkpoint: the run's definition (resume.c) */
  int rank, ranks;      /* data-parallel: this process's rank and their count (0 of 1 outside mpirun) */
  float *reduce_buf;    /* every parameter in f32: the CPU ranks' all-reduce, --check-replicas */
  hl_grad_buckets *buckets; /* CPU ranks: the gradient all-reduce (in buckets during the backward with --bucket-mb > 0) */
  double *allreduce_ms, *allreduce_exposed_ms; /* hl_dist_reduces(): per step this process ran, the all-reduce's time and what the backward left exposed */
  int64_t n_allreduce;
  hl_grad_buckets_stats allreduce_last;
  hl_profile_phase held_phase; /* --profile: the phase a pause interrupted */
  train_activations activations; /* --dump-activations: the first step's linear inputs, until written */
} loop_state;

/* One step as it went: what its row, the progress line and the checks after it need. */
typedef struct {
  int64_t step;
  bool stats;       /* census, histogram and absorbed updates at this step */
  double lr, scale; /* the learning rate and the loss scale the step used */
  double loss_sum;  /* over the micro-batches */
  bool nonfinite_loss;
  double paused;    /* seconds inside the timed region spent on data, statistics, --dump-grads and --dump-activations */
  double grad_norm;
  grad_census census, census_scaled;
  absorb_count absorb;
  bool skipped;     /* the scaler skipped the update (inf / NaN gradients) */
  double step_time_s; /* the step's time (step_time_ms in the log) */
  eval_result ev;
  bool evaluated;   /* ev holds this step's evaluation */
  uint64_t casts, cache_misses, cache_hits; /* autocast's counters over the step's forwards */
  hl_grad_buckets_stats allreduce; /* hl_dist_reduces(): the step's gradient all-reduce */
} step_record;

static loop_state loop_state_new(const train_opts *o, const train_data *d, train_model *m, train_mode *t,
                                 hl_device_kind dev, int64_t first_step, train_output *out) {
  loop_state s = {.o = o, .d = d, .m = m, .t = t, .dev = dev, .first_step = first_step, .out = out,
                  .be = hl_backend_for(dev)};
  s.items = (double)(o->batch * o->accum);
  s.tokens = m->kind == MODEL_GPT ? s.items * (double)o->seq : NAN;
  s.h = host_batch_new(o, t, o->batch);
  if (o->stats_every > 0 || o->n_hist > 0) {
    s.sb.grad = malloc(sizeof(float) * (size_t)m->numel);
    s.sb.before = malloc(sizeof(float) * (size_t)m->numel);
    s.sb.after = malloc(sizeof(float) * (size_t)m->numel);
    if (!s.sb.grad || !s.sb.before || !s.sb.after) hl_fatal("out of host memory for the gradient statistics");
  }
  s.step_time_ms = malloc(sizeof(double) * (size_t)(o->steps > 0 ? o->steps : 1));
  if (!s.step_time_ms) hl_fatal("out of host memory");
  if (o->checkpoint && !(s.definition = run_definition_format(o))) hl_fatal("out of host memory");
  s.rank = hl_dist_rank();
  s.ranks = hl_dist_size();
  /* CPU ranks: the host all-reduce in buckets; GPU ranks all-reduce on the devices (allreduce_gradients) */
  const bool cpu_ranks = s.ranks > 1 && hl_dist_backend_kind() != HL_DIST_NCCL_DEVICE;
  if ((cpu_ranks || o->check_replicas) && !(s.reduce_buf = malloc(sizeof(float) * (size_t)m->numel)))
    hl_fatal("out of host memory for the gradient all-reduce");
  if (hl_dist_reduces()) {
    s.allreduce_ms = malloc(sizeof(double) * (size_t)(o->steps > 0 ? o->steps : 1));
    s.allreduce_exposed_ms = malloc(sizeof(double) * (size_t)(o->steps > 0 ? o->steps : 1));
    if (!s.allreduce_ms || !s.allreduce_exposed_ms) hl_fatal("out of host memory for the all-reduce's timings");
  }
  if (cpu_ranks) {
    s.buckets = hl_grad_buckets_new(m->trainable, m->n_trainable, (int64_t)(o->bucket_mb * 1024 * 1024),
                                    o->allreduce_dtype, s.reduce_buf, m->numel);
    if (!s.buckets) hl_fatal("%s", hl_error());
  }
  return s;
}

static void loop_state_free(loop_state *s) {
  free(s->definition);
  hl_grad_buckets_free(s->buckets);
  free(s->reduce_buf);
  free(s->allreduce_ms);
  free(s->allreduce_exposed_ms);
  free(s->step_time_ms);
  free(s->sb.grad);
  free(s->sb.before);
  free(s->sb.after);
  host_batch_free(&s->h);
}

static bool takes_statistics(const loop_state *s, int64_t step) {
  const train_opts *o = s->o;
  /* step 1, not the first of this process: a resumed run measures the steps the uninterrupted one does */
  return (o->stats_every > 0 && (step % o->stats_every == 0 || step == 1)) || is_hist_step(o, step);
}

/* ---- checkpoints */

/* The summary's totals so far (the times point into the loop's array). */
static run_totals totals_of(const loop_state *s, const run_result *r) {
  run_totals t = {.steps = s->n_times, .skipped = r->skipped, .consecutive_skips = s->consecutive_skips,
                  .final_loss = r->final_loss, .eval_loss = r->eval_loss, .eval_acc = r->eval_acc,
                  .eval_step = r->eval_step, .stats_n = r->stats_n, .mem_peak_bytes = r->mem_peak_bytes,
                  .autocast_casts = r->autocast_casts, .autocast_cache_misses = r->autocast_cache_misses,
                  .autocast_cache_hits = r->autocast_cache_hits, .step_time_ms = s->step_time_ms};
  memcpy(t.stats_sum, s->stats_sum, sizeof t.stats_sum);
  memcpy(t.stats_cnt, s->stats_cnt, sizeof t.stats_cnt);
  return t;
}

/* The state after `step` with the run's definition, the summary's totals
 * and the histogram rows so far (resume.c): everything a resumed run needs
 * to continue as this one would. */
static void save_checkpoint(const loop_state *s, const run_result *r, int64_t step) {
  const run_totals totals = totals_of(s, r);
  char *totals_text = run_totals_format(&totals);
  size_t hist_len = 0;
  char *hist = output_hist_rows(s->out, &hist_len);
  if (!totals_text || !hist) hl_fatal("out of host memory");
  const hl_checkpoint_field fields[4] = {
      {RESUME_FIELD_DEFINITION, s->definition, strlen(s->definition)},
      {RESUME_FIELD_TOTALS, totals_text, strlen(totals_text)},
      {RESUME_FIELD_HIST, hist, hist_len},
      {RESUME_FIELD_RUN_ID, s->o->run_id, RUN_ID_LEN},
  };
  hl_train_state st = {.params = s->m->trainable, .n_params = s->m->n_trainable, .optims = &s->t->opt, .n_optims = 1,
                       .scaler = s->t->scaler, .step = step, .rng_seed = s->o->seed, .rng_offset = (uint64_t)step,
                       .fields = fields, .n_fields = 4};
  hl_range_push("checkpoint");
  if (!hl_checkpoint_save(s->o->checkpoint, &st)) hl_fatal("--checkpoint: %s", hl_error());
  hl_range_pop();
  free(totals_text);
  free(hist);
}

/* ---- the timed step */

/* --profile leaves out what the step time leaves out: the loop pauses the
 * profile wherever it pauses the step's clock. */
static void profile_pause(loop_state *s) {
  if (s->o->profile) s->held_phase = hl_op_profile_pause();
}
static void profile_resume(loop_state *s) {
  if (s->o->profile) hl_op_profile_resume(s->held_phase, s->dev);
}

/* The gradient penalty recipe: gradients of the scaled loss with
 * create_graph, unscaled by a plain multiplication, the penalty computed
 * inside autocast; returns objective + penalty (a temporary of the pool). */
static hl_tensor *add_gradient_penalty(loop_state *s, hl_tensor *objective, double scale, int64_t step) {
  train_model *m = s->m;
  train_mode *t = s->t;
  hl_tensor **g = calloc((size_t)m->n_trainable, sizeof *g);
  if (!g) hl_fatal("out of host memory");
  hl_tensor *scaled = hl_tmp(hl_scaler_scale(t->scaler, objective));
  if (!hl_autograd_grad(&scaled, 1, NULL, m->trainable, m->n_trainable, g,
                        (hl_grad_opts){.create_graph = true, .retain_graph = true, .allow_unused = true}))
    hl_fatal("step %lld: gradient penalty: %s", (long long)step, hl_error());
  const double inv = 1.0 / scale;
  hl_tensor *sq = NULL;
  HL_AUTOCAST(s->dev, t->autocast, t->autocast != HL_DTYPE_NONE) {
    for (int i = 0; i < m->n_trainable; i++) {
      if (!g[i]) continue;
      hl_tensor *term = hl_tmp(hl_sum(hl_tmp(hl_pow(hl_tmp(hl_mul_scalar(g[i], inv)), 2.0))));
      sq = sq ? hl_tmp(hl_add(sq, term)) : term;
    }
    objective = hl_tmp(hl_add(objective, hl_tmp(hl_mul_scalar(hl_tmp(hl_sqrt(sq)), s->o->grad_penalty))));
  }
  for (int i = 0; i < m->n_trainable; i++) hl_release(g[i]);
  free(g);
  return objective;
}

/* One micro-batch: its data (generated outside the step time), forward and
 * loss under the mode's autocast, loss / accum, the scaled backward. */
static void forward_backward(loop_state *s, int micro, step_record *rec) {
  const train_opts *o = s->o;
  train_model *m = s->m;
  train_mode *t = s->t;
  const int64_t step = rec->step;
  profile_pause(s);
  const double g0 = hl_now_s(); /* the data generator is not part of the step */
  if (m->kind == MODEL_GPT) data_train_tokens(s->d, step, micro, &s->h.tokens);
  else data_train_samples(s->d, step, micro, &s->h.samples);
  rec->paused += hl_now_s() - g0;
  profile_resume(s);
  hl_op_profile_set_phase(HL_PROFILE_OTHER);
  hl_pool_push();
  hl_tensor *in, *tgt, *loss = NULL;
  const int64_t shard = o->batch / s->ranks; /* options.c: --batch splits evenly */
  upload(m, &s->h, s->dev, shard * s->rank, shard, &in, &tgt);
  hl_tmp(in);
  hl_tmp(tgt);
  hl_op_profile_set_phase(HL_PROFILE_FORWARD);
  hl_range_push("forward");
  const bool record = o->dump_activations && step == s->first_step && micro == 0 && s->rank == 0;
  if (record) train_activations_record(&s->activations, m->gpt); /* options.c: the GPT only */
  HL_AUTOCAST(s->dev, t->autocast, t->autocast != HL_DTYPE_NONE) { loss = hl_tmp(model_loss(m, in, tgt, NULL)); }
  if (record) train_activations_stop(m->gpt);
  hl_range_pop();
  if (!loss) hl_fatal("step %lld: forward: %s", (long long)step, hl_error());
  const double lv = hl_item(loss); /* data-parallel: this rank's shard; the mean over the ranks comes after the step's micro-batches */
  rec->loss_sum += lv;
  rec->nonfinite_loss |= !isfinite(lv);
  hl_tensor *objective = o->accum > 1 ? hl_tmp(hl_div_scalar(loss, (double)o->accum)) : loss;
  hl_op_profile_set_phase(HL_PROFILE_BACKWARD);
  hl_range_push("backward");
  if (o->grad_penalty > 0) objective = add_gradient_penalty(s, objective, rec->scale, step);
  /* data-parallel: the last micro-batch's backward finishes the gradients, and starts their all-reduce */
  const bool last = micro == o->accum - 1;
  if (last && s->buckets) hl_grad_buckets_arm(s->buckets);
  const bool hooked = last && s->buckets && hl_grad_buckets_overlaps(s->buckets);
  if (!hl_backward_with_ready_hook(hl_tmp(hl_scaler_scale(t->scaler, objective)), NULL, false,
                                   hooked ? hl_grad_buckets_ready : NULL, s->buckets))
    hl_fatal("step %lld: backward: %s", (long long)step, hl_error());
  hl_range_pop();
  hl_pool_pop();
}

/* --inject-nonfinite: an inf into the first gradient, before the unscale,
 * as an overflow in the backward would leave it. */
static void inject_inf(train_model *m) {
  hl_tensor *g0 = hl_tensor_grad(m->trainable[0]);
  if (!g0 || !hl_fault_poison(g0, 0, HL_FAULT_INF)) hl_fatal("--inject-nonfinite: %s", hl_error());
}

/* Data-parallel: every gradient replaced by its mean over the ranks (the
 * buckets the backward started, waited for; the rest now). */
static void allreduce_gradients(loop_state *s, step_record *rec) {
  hl_range_push("all-reduce");
  if (s->buckets) {
    if (!hl_grad_buckets_finish(s->buckets, &rec->allreduce))
      hl_fatal("step %lld: gradient all-reduce: %s", (long long)rec->step, hl_error());
  } else { /* GPU ranks: one grouped all-reduce on the devices after the backward, all of it exposed */
    const double t0 = hl_now_s();
    if (!hl_dist_allreduce_grads_mean_device(s->m->trainable, s->m->n_trainable, s->o->allreduce_dtype))
      hl_fatal("step %lld: gradient all-reduce: %s", (long long)rec->step, hl_error());
    rec->allreduce.busy_s = rec->allreduce.exposed_s = hl_now_s() - t0;
    rec->allreduce.buckets = 1;
    rec->allreduce.bytes = (uint64_t)s->m->numel * hl_dtype_size(s->o->allreduce_dtype);
  }
  hl_range_pop();
}

/* Data-parallel: the step is skipped on every rank when any rank's
 * gradients held inf / NaN. The test switch leaves each rank its own
 * verdict, so that a test can show the replicas then drift apart. */
static void agree_on_found_inf(loop_state *s, int64_t step) {
  if (s->ranks == 1 || !s->t->scaled || getenv(TRAIN_TEST_NO_FOUND_INF_ALLREDUCE)) return;
  bool found = false;
  if (!hl_scaler_found_inf(s->t->scaler, s->t->opt, &found)) hl_fatal("step %lld: %s", (long long)step, hl_error());
  const bool any = hl_dist_allreduce_max(found ? 1.0 : 0.0) > 0;
  if (any != found && !hl_scaler_set_found_inf(s->t->scaler, s->t->opt, any))
    hl_fatal("step %lld: %s", (long long)step, hl_error());
}

/* --check-replicas: checksums of the weights and of the optimizer's state
 * (moments, master weights, step counts), the scale and the growth
 * tracker, each compared over the ranks (max against min); differing
 * replicas end the run (r->status RUN_FAILED). */
static bool replicas_agree(loop_state *s, int64_t step, run_result *r) {
  read_all(s->m, s->t, false, s->reduce_buf);
  uint32_t optim_crc = 0;
  if (!hl_optim_state_crc(s->t->opt, &optim_crc)) hl_fatal("step %lld: --check-replicas: %s", (long long)step, hl_error());
  const double values[4] = {(double)hl_crc32_update(0, s->reduce_buf, sizeof(float) * (size_t)s->m->numel),
                            (double)optim_crc, hl_scaler_get_scale(s->t->scaler),
                            (double)hl_scaler_get_growth_tracker(s->t->scaler)};
  static const char *const names[4] = {"weights (CRC-32 of their f32 values)",
                                       "optimizer state (CRC-32 of the step counts, moments and master weights)",
                                       "loss scale", "growth tracker"};
  for (int k = 0; k < 4; k++) {
    const double hi = hl_dist_allreduce_max(values[k]), lo = -hl_dist_allreduce_max(-values[k]);
    if (hi == lo) continue;
    r->status = RUN_FAILED;
    snprintf(r->why, sizeof r->why, "--check-replicas: after step %lld the ranks' %s differ (from %.17g to %.17g)",
             (long long)step, names[k], lo, hi);
    return false;
  }
  return true;
}

/* A no-op without a scaler but for the optimizer's preparation; fp16-master
 * copies the fp16 gradients into the f32 master gradients here. */
static void unscale_gradients(train_mode *t, int64_t step) {
  hl_range_push("unscale");
  if (t->scaled) {
    if (!hl_scaler_unscale(t->scaler, t->opt)) hl_fatal("step %lld: unscale: %s", (long long)step, hl_error());
  } else if (!hl_optim_prepare_grads(t->opt)) {
    hl_fatal("step %lld: %s", (long long)step, hl_error());
  }
  hl_range_pop();
}

/* The unscaled gradients' L2 norm, clipped to --clip-norm when given. */
static double gradient_norm(const train_opts *o, train_mode *t, int64_t step) {
  double grad_norm = NAN;
  bool norm_ok = o->clip_norm > 0 ? hl_clip_grad_norm_optim(t->opt, o->clip_norm, 2.0, false, &grad_norm)
                                  : hl_grad_norm_optim(t->opt, 2.0, &grad_norm);
  if (!norm_ok) hl_fatal("step %lld: gradient norm: %s", (long long)step, hl_error());
  return grad_norm;
}

static void write_histograms(loop_state *s, const step_record *rec) {
  grad_hist *hu = calloc(1, sizeof *hu), *hs = calloc(1, sizeof *hs);
  if (!hu || !hs) hl_fatal("out of host memory");
  hist_add(hu, s->sb.grad, s->m->numel, 1.0f);
  hist_add(hs, s->sb.grad, s->m->numel, (float)rec->scale);
  output_hist(s->out, rec->step, hu, hs, rec->scale);
  free(hu);
  free(hs);
}

/* Statistics of the unscaled gradients (census, histograms) and a copy of
 * the stored weights, to find the updates the optimizer step absorbs. */
static void census_before_update(loop_state *s, step_record *rec) {
  read_all(s->m, s->t, true, s->sb.grad);
  census_add(&rec->census, s->sb.grad, s->m->numel, 1.0f);
  census_add(&rec->census_scaled, s->sb.grad, s->m->numel, (float)rec->scale);
  if (is_hist_step(s->o, rec->step)) write_histograms(s, rec);
  read_all(s->m, s->t, false, s->sb.before);
}

/* The optimizer step through the scaler (skipped on inf / NaN), then the
 * scale update; true when the step was skipped. `absorbed` (NULL: not
 * counted) gets the updates the optimizer itself found absorbed. */
static bool optimizer_step(train_mode *t, int64_t step, int64_t *absorbed) {
  hl_range_push("optimizer step");
  bool skipped = false;
  if (!hl_scaler_step(t->scaler, t->opt, &skipped, absorbed))
    hl_fatal("step %lld: optimizer step: %s", (long long)step, hl_error());
  if (t->scaled && !hl_scaler_update(t->scaler)) hl_fatal("step %lld: scale update: %s", (long long)step, hl_error());
  hl_range_pop();
  return skipped;
}

static void count_absorbed(loop_state *s, int64_t by_optimizer, step_record *rec) {
  read_all(s->m, s->t, false, s->sb.after);
  absorb_compare(&rec->absorb, s->sb.before, s->sb.after, s->m->numel, s->t->setup->weights == HL_WEIGHTS_FP32);
  absorb_add_optimizer(&rec->absorb, by_optimizer);
}

/* One optimizer step. The step time runs from here to the end of the
 * update, the device synchronised, less rec->paused. */
static void train_step(loop_state *s, step_record *rec) {
  const train_opts *o = s->o;
  train_mode *t = s->t;
  const int64_t step = rec->step;
  const bool trace = o->trace_ops && step == s->first_step;
  if (trace) hl_op_trace_to(stderr);
  if (o->profile) hl_op_profile_resume(HL_PROFILE_OTHER, s->dev);
  const double t0 = hl_now_s();
  hl_optim_zero_grad(t->opt);
  rec->lr = train_lr_at(o, step);
  if (!hl_optim_set_lr(t->opt, rec->lr)) hl_fatal("step %lld: %s", (long long)step, hl_error());
  rec->scale = hl_scaler_get_scale(t->scaler);
  /* autocast's counters are per thread and never reset: the step's share is the difference */
  const uint64_t casts0 = hl_autocast_conversions(), misses0 = hl_autocast_cache_misses(),
                 hits0 = hl_autocast_cache_hits();
  for (int micro = 0; micro < o->accum; micro++) forward_backward(s, micro, rec);
  rec->casts = hl_autocast_conversions() - casts0;
  rec->cache_misses = hl_autocast_cache_misses() - misses0;
  rec->cache_hits = hl_autocast_cache_hits() - hits0;
  if (trace) hl_op_trace_to(NULL);
  hl_op_profile_set_phase(HL_PROFILE_OTHER);
  if (hl_dist_reduces()) { /* more than one rank, or GPU ranks (NCCL runs even for one) */
    allreduce_gradients(s, rec); /* first: no other collective while the buckets' thread may run one */
    /* equal shards: the ranks' mean is the global batch's loss; an inf or NaN on any rank makes it not finite */
    rec->loss_sum = hl_dist_allreduce_sum(rec->loss_sum) / s->ranks;
    rec->nonfinite_loss = !isfinite(rec->loss_sum);
  }
  if (hl_step_set_has(&o->inject, step) && (o->inject_rank < 0 || o->inject_rank == s->rank)) inject_inf(s->m);
  hl_op_profile_set_phase(HL_PROFILE_OPTIMIZER);
  unscale_gradients(t, step);
  agree_on_found_inf(s, step);
  if (o->dump_grads && step == s->first_step && s->rank == 0) { /* for a peer's parity test; not timed */
    profile_pause(s);
    const double d0 = hl_now_s();
    dump_grads(o->dump_grads, s->m, t);
    rec->paused += hl_now_s() - d0;
    profile_resume(s);
  }
  if (o->dump_activations && step == s->first_step && s->rank == 0) { /* for the quantization probes; not timed */
    profile_pause(s);
    const double d0 = hl_now_s();
    train_activations_write(&s->activations, o->dump_activations);
    rec->paused += hl_now_s() - d0;
    profile_resume(s);
  }
  rec->grad_norm = gradient_norm(o, t, step);
  profile_pause(s);
  const double p0 = hl_now_s();
  if (rec->stats) census_before_update(s, rec);
  rec->paused += hl_now_s() - p0;
  profile_resume(s);
  int64_t absorbed = 0;
  rec->skipped = optimizer_step(t, step, rec->stats ? &absorbed : NULL);
  s->be->synchronize();
  rec->step_time_s = hl_now_s() - t0 - rec->paused;
  profile_pause(s);
  if (rec->stats && !rec->skipped) count_absorbed(s, absorbed, rec);
}

/* ---- after the step: evaluation, the row, progress, stops */

/* Every --eval-every steps and after the last, unless the loss is not
 * finite (the model is then no use to evaluate). */
static void evaluate_when_due(loop_state *s, step_record *rec, run_result *r) {
  rec->ev = (eval_result){NAN, NAN, 0};
  rec->evaluated = false;
  if (s->rank != 0) return; /* the replicas agree: rank 0's evaluation is everyone's */
  const bool last = rec->step == s->o->steps;
  if (!rec->nonfinite_loss && (rec->step % s->o->eval_every == 0 || last)) {
    rec->ev = evaluate(s->o, s->d, s->m, s->t, s->dev);
    rec->evaluated = true;
    r->eval_loss = rec->ev.loss, r->eval_acc = rec->ev.acc, r->eval_step = rec->step;
  }
}

/* The step's line of the per-step CSV (train_steps_schema); its statistics
 * also go into the summary's means. */
static void write_step_row(loop_state *s, const step_record *rec, run_result *r) {
  const hl_mem_stats ms = hl_mem_get_stats(s->dev);
  if (ms.peak > r->mem_peak_bytes) r->mem_peak_bytes = ms.peak;
  const bool counted = rec->stats && !rec->skipped;
  const grad_census *census = &rec->census, *census_scaled = &rec->census_scaled;
  double cols[STAT_COLUMNS] = {census_exact_zero_frac(census), census_underflow_frac(census),
                               census_underflow_frac(census_scaled), census_zero_frac(census),
                               census_zero_frac(census_scaled), absorb_frac(&rec->absorb),
                               absorb_fp16_frac(&rec->absorb)};
  if (!counted)
    for (int k = 0; k < STAT_COLUMNS; k++) cols[k] = NAN;
  else {
    for (int k = 0; k < STAT_COLUMNS; k++)
      if (!isnan(cols[k])) s->stats_sum[k] += cols[k], s->stats_cnt[k]++;
    r->stats_n++;
  }
  if (!s->out) return; /* a data-parallel rank but 0: it writes nothing */
  static const char *const stat_names[STAT_COLUMNS] = {
      "grad_zero_frac", "fp16_underflow_frac", "fp16_underflow_scaled_frac", "fp16_zero_frac",
      "fp16_zero_scaled_frac", "absorbed_frac", "fp16_absorbed_frac"};
  const double step_time_s = rec->step_time_s;
  hl_row row;
  hl_row_begin(&row, &train_steps_schema);
  hl_row_text(&row, "mode", s->t->setup->name);
  hl_row_int(&row, "step", rec->step);
  hl_row_real(&row, "loss", r->final_loss);
  if (rec->evaluated) {
    hl_row_real(&row, "eval_loss", rec->ev.loss);
    hl_row_real(&row, "eval_acc", rec->ev.acc);
  } else {
    hl_row_missing(&row, "eval_loss");
    hl_row_missing(&row, "eval_acc");
  }
  hl_row_real(&row, "lr", rec->lr);
  hl_row_real(&row, "scale", rec->scale);
  hl_row_bool(&row, "skipped", rec->skipped);
  hl_row_real(&row, "grad_norm", rec->grad_norm);
  for (int k = 0; k < STAT_COLUMNS; k++) train_row_real_or_missing(&row, stat_names[k], cols[k]);
  hl_row_real(&row, "step_time_ms", step_time_s * 1e3);
  train_row_real_or_missing(&row, "tokens_per_s", s->tokens / step_time_s);
  train_row_real_or_missing(&row, "samples_per_s", s->items / step_time_s);
  hl_row_int(&row, "mem_current_bytes", (int64_t)ms.current);
  hl_row_int(&row, "mem_peak_bytes", (int64_t)ms.peak);
  output_step_row(s->out, &row);
}

/* At most two progress lines a second, and the last step's. */
static void show_progress(loop_state *s, const step_record *rec, const run_result *r) {
  const double now = hl_now_s();
  if (now - s->last_progress > 0.5 || rec->step == s->o->steps) {
    output_progress("%s %s step %lld/%lld  loss %.4f  scale %g%s  %.1f ms/step", s->o->name, s->t->setup->name,
                    (long long)rec->step, (long long)s->o->steps, r->final_loss, rec->scale,
                    rec->skipped ? " (skipped)" : "", rec->step_time_s * 1e3);
    s->last_progress = now;
  }
}

/* Whether the run ends after this step: a non-finite loss that no scaler
 * skips (fp32: a failure), too many skipped steps in a row, --stop-after.
 * r->status and r->why say which. */
static bool run_ends_after(const loop_state *s, const step_record *rec, run_result *r) {
  const int64_t step = rec->step;
  if (rec->nonfinite_loss) {
    if (!strcmp(s->t->setup->name, "fp32")) {
      r->status = RUN_FAILED;
      snprintf(r->why, sizeof r->why, "non-finite loss (%s) at step %lld in fp32 mode", nonfinite_name(r->final_loss),
               (long long)step);
      return true;
    }
    if (!s->t->scaled) {
      r->status = RUN_DIVERGED;
      snprintf(r->why, sizeof r->why, "the loss became %s at step %lld (no loss scaler to skip the step)",
               nonfinite_name(r->final_loss), (long long)step);
      return true;
    }
  }
  if (s->consecutive_skips >= MAX_CONSECUTIVE_SKIPS) {
    r->status = RUN_DIVERGED;
    snprintf(r->why, sizeof r->why, "%lld consecutive steps skipped for inf/NaN (last at step %lld, scale %g)",
             (long long)s->consecutive_skips, (long long)step, hl_scaler_get_scale(s->t->scaler));
    return true;
  }
  if (s->o->stop_after && step == s->o->stop_after && step < s->o->steps) {
    r->status = RUN_STOPPED;
    return true;
  }
  return false;
}

/* ---- the end of the run */

/* A signal that came during the last step still counts as an interruption
 * while steps were left; a run that can resume gets its checkpoint. */
static void finish_run(loop_state *s, run_result *r) {
  const train_opts *o = s->o;
  if (r->status == RUN_COMPLETED && stop_signal && r->first_step + r->steps_run <= o->steps) {
    r->status = RUN_INTERRUPTED;
    r->signal = stop_signal;
  }
  if (o->checkpoint && s->rank == 0 && r->steps_run > 0 && r->status <= RUN_INTERRUPTED)
    save_checkpoint(s, r, r->first_step + r->steps_run - 1);
  output_progress_end();
}

/* The summary: the final scale, the statistics' means, and the timing of
 * the steps after the warm-up. */
static void summarize(const loop_state *s, run_result *r) {
  const train_opts *o = s->o;
  r->final_scale = hl_scaler_get_scale(s->t->scaler);
  double *means[STAT_COLUMNS] = {&r->grad_zero_frac, &r->fp16_underflow_frac, &r->fp16_underflow_scaled_frac,
                                 &r->fp16_zero_frac, &r->fp16_zero_scaled_frac, &r->absorbed_frac,
                                 &r->fp16_absorbed_frac};
  for (int k = 0; k < STAT_COLUMNS; k++) *means[k] = s->stats_cnt[k] ? s->stats_sum[k] / s->stats_cnt[k] : NAN;
  /* the whole run's steps, a resumed run's earlier ones included */
  const int64_t skip = o->warmup < s->n_times ? o->warmup : 0;
  r->timed_steps = (int)(s->n_times - skip);
  r->step_time_ms_min = r->step_time_ms_median = r->tokens_per_s = r->samples_per_s = NAN;
  if (r->timed_steps > 0) {
    const hl_stats st = hl_stats_of(s->step_time_ms + skip, r->timed_steps);
    r->step_time_ms_min = st.min;
    r->step_time_ms_median = st.median;
    /* the GPT's samples per second from its tokens per second: the figures the summary always gave */
    if (s->m->kind == MODEL_GPT) {
      r->tokens_per_s = s->tokens / (r->step_time_ms_median / 1e3);
      r->samples_per_s = r->tokens_per_s / (double)o->seq;
    } else {
      r->samples_per_s = s->items / (r->step_time_ms_median / 1e3);
    }
  }
  /* the all-reduce: over the steps this process ran after the warm-up */
  r->allreduce_ms_median = r->allreduce_exposed_ms_median = NAN;
  const int64_t allreduce_skip = o->warmup < s->n_allreduce ? o->warmup : 0;
  if (s->n_allreduce - allreduce_skip > 0) {
    r->allreduce_ms_median = hl_stats_of(s->allreduce_ms + allreduce_skip, (int)(s->n_allreduce - allreduce_skip)).median;
    r->allreduce_exposed_ms_median = hl_stats_of(s->allreduce_exposed_ms + allreduce_skip, (int)(s->n_allreduce - allreduce_skip)).median;
  }
  r->allreduce_buckets = s->allreduce_last.buckets;
  r->allreduce_bytes = s->allreduce_last.bytes;
}

/* A resumed run starts from its checkpoint's totals. */
static void take_totals(loop_state *s, run_result *r, const run_totals *t) {
  if (t->steps > s->o->steps) hl_fatal("--resume: the checkpoint's totals hold %lld steps, more than --steps", (long long)t->steps);
  memcpy(s->step_time_ms, t->step_time_ms, sizeof(double) * (size_t)t->steps);
  s->n_times = t->steps;
  s->consecutive_skips = t->consecutive_skips;
  memcpy(s->stats_sum, t->stats_sum, sizeof s->stats_sum);
  memcpy(s->stats_cnt, t->stats_cnt, sizeof s->stats_cnt);
  r->skipped = t->skipped;
  r->final_loss = t->final_loss;
  r->eval_loss = t->eval_loss, r->eval_acc = t->eval_acc, r->eval_step = t->eval_step;
  r->stats_n = (int)t->stats_n;
  r->mem_peak_bytes = t->mem_peak_bytes;
  r->autocast_casts = t->autocast_casts;
  r->autocast_cache_misses = t->autocast_cache_misses;
  r->autocast_cache_hits = t->autocast_cache_hits;
}

/* HALFLAB_TEST_STOP_RANK=RANK@STEP (test only): this rank hangs as a
 * stopped process does, so that the others' watchdog must end the job. */
static void stop_if_test_asks(const loop_state *s, int64_t step) {
  const char *v = getenv(TRAIN_TEST_STOP_RANK);
  int rank = -1;
  long long at = -1;
  if (v && sscanf(v, "%d@%lld", &rank, &at) == 2 && rank == s->rank && at == step) raise(SIGSTOP);
}

run_result loop_run(const train_opts *o, const train_data *d, train_model *m, train_mode *t, hl_device_kind dev,
                    int64_t first_step, const run_totals *resumed, train_output *out) {
  run_result r;
  memset(&r, 0, sizeof r);
  r.first_step = first_step;
  r.eval_loss = r.eval_acc = r.final_loss = NAN;
  loop_state s = loop_state_new(o, d, m, t, dev, first_step, out);
  if (resumed) take_totals(&s, &r, resumed);
  for (int64_t step = first_step; step <= o->steps; step++) {
    /* every rank stops at the same step: on the ranks' verdict, read once.
     * A signal that lands during the all-reduce stays in stop_signal for
     * the next step (assigning the all-reduce's result to it would lose it) */
    int stop = stop_signal;
    if (s.ranks > 1) {
      stop_if_test_asks(&s, step);
      stop = (int)hl_dist_allreduce_max(stop);
    }
    if (stop) {
      r.status = RUN_INTERRUPTED;
      r.signal = stop;
      break;
    }
    step_record rec = {.step = step, .stats = takes_statistics(&s, step)};
    if (o->profile && r.steps_run == o->warmup) { /* the warm-up is over: the profile starts again */
      hl_op_profile_reset();
      r.profile_steps = 0;
      r.profile_step_time_ms = 0;
    }
    train_step(&s, &rec);
    if (r.profile_steps++ == 0) r.profile_first_step = step;
    r.profile_step_time_ms += rec.step_time_s * 1e3;
    s.step_time_ms[s.n_times++] = rec.step_time_s * 1e3;
    if (s.allreduce_ms) {
      s.allreduce_ms[s.n_allreduce] = rec.allreduce.busy_s * 1e3;
      s.allreduce_exposed_ms[s.n_allreduce++] = rec.allreduce.exposed_s * 1e3;
      s.allreduce_last = rec.allreduce;
    }
    r.steps_run++;
    r.skipped += rec.skipped;
    r.autocast_casts += rec.casts;
    r.autocast_cache_misses += rec.cache_misses;
    r.autocast_cache_hits += rec.cache_hits;
    s.consecutive_skips = rec.skipped ? s.consecutive_skips + 1 : 0;
    r.final_loss = rec.loss_sum / o->accum;
    evaluate_when_due(&s, &rec, &r);
    write_step_row(&s, &rec, &r);
    output_keep(out, &r); /* what a failure's summary will say */
    show_progress(&s, &rec, &r);
    if (run_ends_after(&s, &rec, &r)) break;
    if (o->check_replicas && step % o->check_replicas == 0 && !replicas_agree(&s, step, &r)) break;
    if (o->checkpoint && s.rank == 0 && o->checkpoint_every && step % o->checkpoint_every == 0 && step < o->steps)
      save_checkpoint(&s, &r, step);
  }
  finish_run(&s, &r);
  summarize(&s, &r);
  loop_state_free(&s);
  return r;
}
