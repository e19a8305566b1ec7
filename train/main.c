/* main.c — halflab-train: full AMP training runs (docs/train.md).
 *
 * Order of work, so that bad input changes nothing: options (inputs that
 * must be regular files looked at); data (a text file read and checked);
 * the device; the memory a step needs against what the device has; every
 * output path proven writable (cli/output_guard.h), nothing made yet; the
 * run's lock when its --out folder exists; the model, optimizer and scaler
 * (and a checkpoint or weight file, refused whole when it does not match);
 * only then the --out folder made, the lock taken if not yet, and files.
 *
 * Under mpirun (core/training/dist.h) every rank builds the same model and
 * trains on its shard of each batch (loop.c); rank 0 alone checks, makes
 * and writes the output files and holds the lock, the other ranks write
 * nothing. GPU ranks (--device cuda under mpirun) each take a GPU of their
 * node before any CUDA work, then join NCCL's communicator. */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/training/checkpoint.h"
#include "core/training/dist.h"
#include "cli/cli.h"
#include "cli/csv.h"
#include "cli/output_guard.h"
#include "cli/path_set.h"
#include "cli/std_streams.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/base/profiler_ranges.h"
#include "train/train.h"

/* Data-parallel on GPUs (core/training/dist.h, GPU ranks): every node
 * needs a GPU for each of its ranks (counted on every rank, one verdict for
 * all); without them --device cuda is bad input and auto takes CPU ranks.
 * The rank's GPU is made current before the first CUDA work (the check of
 * the mode below runs a step), and NCCL's communicator follows it. */
static hl_device_kind pick_rank_device(const train_opts *o, const char *request, char *notice, size_t len) {
  char why[768];
  const bool is_auto = !strcmp(request, "auto");
  if (!hl_dist_gpu_ranks_fit(why, sizeof why)) {
    if (!is_auto) hl_usage_error("--device %s: %s", request, why);
    snprintf(notice, len, "%s: no GPU ranks (%s): running on CPU ranks\n", TRAIN_PROG, why);
    return HL_DEVICE_CPU;
  }
  hl_dist_bind_gpu();
  if (!is_auto) (void)hl_cli_device(request, NULL, 0); /* exit 1 when the GPU is there but unusable */
  const bool runs = setup_device_runs(o, HL_DEVICE_CUDA, why, sizeof why);
  if (!is_auto && !runs)
    hl_fatal("--device %s: a %s step does not run on %s in this build: %s", request, o->mode->name, request, why);
  if (is_auto && hl_dist_allreduce_max(runs ? 0.0 : 1.0) > 0) { /* every rank the same device */
    if (runs) snprintf(why, sizeof why, "so another rank said");
    snprintf(notice, len, "%s: a %s step does not run on the GPU in this build (%s): running on CPU ranks\n", TRAIN_PROG,
             o->mode->name, why);
    return HL_DEVICE_CPU;
  }
  hl_dist_nccl_init();
  return HL_DEVICE_CUDA;
}

/* The device: --device auto takes the GPU when a step of this mode runs
 * there (the core's CUDA kernels are needed), else the CPU with a notice. */
static hl_device_kind pick_device(const train_opts *o, char *notice, size_t len) {
  notice[0] = '\0';
  char why[512];
  const char *request = o->device ? o->device : "auto";
  if (hl_dist_active() && hl_dist_nccl_built() &&
      (!strcmp(request, "auto") || !strcmp(request, "cuda") || !strcmp(request, "gpu")))
    return pick_rank_device(o, request, notice, len);
  if (!strcmp(request, "auto") && hl_dist_size() > 1) return HL_DEVICE_CPU; /* no GPU ranks in this build: CPU ranks */
  if (!strcmp(request, "auto")) {
    if (!hl_device_available(HL_DEVICE_CUDA, why, sizeof why)) {
      snprintf(notice, len, "%s: no usable GPU (%s): running on the CPU\n", TRAIN_PROG, why);
      return HL_DEVICE_CPU;
    }
    if (!setup_device_runs(o, HL_DEVICE_CUDA, why, sizeof why)) {
      snprintf(notice, len, "%s: a %s step does not run on the GPU in this build (%s): running on the CPU\n",
               TRAIN_PROG, o->mode->name, why);
      return HL_DEVICE_CPU;
    }
    return HL_DEVICE_CUDA;
  }
  const hl_device_kind k = hl_cli_device(request, NULL, 0); /* exit 2 malformed, 1 unusable */
  if (!setup_device_runs(o, k, why, sizeof why))
    hl_fatal("--device %s: a %s step does not run on %s in this build: %s", request, o->mode->name, request, why);
  return k;
}

static void require_memory(const train_opts *o, const train_data *d, hl_device_kind dev) {
  uint64_t device, host;
  setup_step_bytes(o, d, &device, &host);
  const hl_device_facts *f = hl_device_facts_get(dev), *h = hl_device_facts_get(HL_DEVICE_CPU);
  char a[32], b[32];
  if (dev == HL_DEVICE_CPU) device += host, host = 0;
  if (device > f->free_mem)
    hl_usage_error("--batch %lld: a %s step of this model needs about %s (core/models/nn.h's accounting), the %s has %s free",
                   (long long)o->batch, o->mode->name, hl_format_bytes(device, a, sizeof a),
                   dev == HL_DEVICE_CPU ? "host" : "device", hl_format_bytes(f->free_mem, b, sizeof b));
  if (host > h->free_mem)
    hl_usage_error("this run needs about %s of host memory beside the device's (evaluation logits, statistics), the host "
                   "has %s free",
                   hl_format_bytes(host, a, sizeof a), hl_format_bytes(h->free_mem, b, sizeof b));
}

static void describe_run(const train_opts *o, const train_data *d, hl_device_kind dev) {
  hl_meta_set_devices(&dev, 1);
  hl_meta_set("run", "%s", o->name);
  hl_meta_set("run_id", "%s", o->run_id);
  hl_meta_set("mode", "%s: %s", o->mode->name, o->mode->what);
  if (o->model == MODEL_GPT)
    hl_meta_set("model", "GPT %d layers, %d heads, width %d, vocabulary %d, block %d; init std %.4g", o->gpt.n_layer,
                o->gpt.n_head, o->gpt.n_embd, o->gpt.vocab_size, o->gpt.block_size, o->gpt.init_std);
  else
    hl_meta_set("model", "MLP %d inputs, %d hidden layers of %d, %d classes; init gain %.4g", o->mlp.n_in,
                o->mlp.n_hidden, o->mlp.n_hidden ? o->mlp.hidden[0] : 0, o->classes, o->init_gain);
  hl_meta_set("data", "%s", data_describe(d));
  if (hl_dist_backend_kind() == HL_DIST_NCCL_DEVICE) { /* GPU ranks, even one */
    hl_meta_set("data_parallel", "%d GPU rank%s, one GPU each (NCCL %s), %lld rows of each micro-batch per rank; gradients "
                "all-reduced on the devices after the backward (ncclAllReduce sum x 1/N: mean, %s on the wire) before "
                "unscale, found_inf all-reduced over MPI (max); --rank-timeout %g s%s",
                hl_dist_size(), hl_dist_size() == 1 ? "" : "s", hl_dist_nccl_version(),
                (long long)(o->batch / hl_dist_size()), hl_dtype_name(o->allreduce_dtype), o->rank_timeout,
                getenv(TRAIN_TEST_NO_FOUND_INF_ALLREDUCE) ? "; TEST SWITCH: found_inf NOT all-reduced" : "");
  } else if (hl_dist_size() > 1) { /* only then: a single-process run's metadata stays as it was */
    char how[160];
    if (o->bucket_mb > 0 && hl_dist_threads_serialized())
      snprintf(how, sizeof how, "in buckets of %g MiB, each started by a communication thread during the backward",
               o->bucket_mb);
    else if (o->bucket_mb > 0)
      snprintf(how, sizeof how, "in buckets of %g MiB after the backward (MPI without MPI_THREAD_SERIALIZED: no "
               "communication thread)", o->bucket_mb);
    else snprintf(how, sizeof how, "in one piece after the backward (--bucket-mb 0)");
    hl_meta_set("data_parallel", "%d MPI ranks, %lld rows of each micro-batch per rank; gradients all-reduced (mean, "
                "%s on the wire) %s, before unscale; found_inf all-reduced (max); --rank-timeout %g s%s",
                hl_dist_size(), (long long)(o->batch / hl_dist_size()), hl_dtype_name(o->allreduce_dtype), how,
                o->rank_timeout, getenv(TRAIN_TEST_NO_FOUND_INF_ALLREDUCE) ? "; TEST SWITCH: found_inf NOT all-reduced" : "");
  }
  hl_meta_set("batch", "%lld x %lld %s per micro-batch, %d micro-batches per step", (long long)o->batch,
              (long long)o->seq, o->model == MODEL_GPT ? "tokens" : "sample", o->accum);
  const char *sched = o->cosine ? " (cosine schedule: lr x (1 + cos(pi (step - 1) / steps)) / 2)" : " (constant)";
  if (o->optimizer == HL_OPTIM_ADAMW)
    hl_meta_set("optimizer", "adamw lr %g%s weight_decay %g betas (0.9, 0.999) eps 1e-8", o->lr, sched, o->weight_decay);
  else hl_meta_set("optimizer", "sgd lr %g%s momentum %g weight_decay %g", o->lr, sched, o->momentum, o->weight_decay);
  static const char *const scaler_names[] = {"none", "dynamic", "fixed scale"};
  hl_meta_set("scaler", "%s", scaler_names[o->mode->scaling]);
  if (o->clip_norm > 0) hl_meta_set("clip_norm", "%g (L2, unscaled gradients)", o->clip_norm);
  if (o->grad_penalty > 0) hl_meta_set("grad_penalty", "%g x ||grad||_2", o->grad_penalty);
  char inj[256];
  if (hl_step_set_count(&o->inject)) hl_meta_set("inject_nonfinite", "%s", hl_step_set_format(&o->inject, inj, sizeof inj));
  const char *policy = getenv("OMP_WAIT_POLICY");
  if (dev == HL_DEVICE_CPU)
    hl_meta_set("threads", "%d (OpenMP; OMP_WAIT_POLICY %s)", omp_get_max_threads(),
                policy && *policy ? policy : "unset: libgomp's default");
  hl_meta_set("stats", "census and absorbed updates every %d steps (0: never); histograms at the --hist-steps",
              o->stats_every);
  hl_meta_set("timing", "per step: batch upload to the end of the update, device synchronised; statistics, evaluation "
                        "and logging left out; the summary's median leaves out the first %lld steps",
              (long long)o->warmup);
  hl_meta_set("nvtx", "%s", hl_trace_enabled() ? "ranges forward, backward, unscale, optimizer step, evaluate"
                                                 : "not built (no ranges)");
}

/* No output of the run is one of its inputs or another of its outputs,
 * links resolved (cli/path_set.h): checked before anything is written. The
 * checkpoint --resume reads may be the one --checkpoint writes: it is read
 * whole before the run starts and replaced atomically. */
static void check_path_collisions(const train_opts *o, const char *outdir) {
  hl_path_set set;
  hl_path_set_init(&set);
  hl_path_set_input(&set, "--text", o->text_path);
  hl_path_set_input(&set, "--init-weights", o->init_weights);
  hl_path_set_input(&set, "--resume", o->resume);
  const struct {
    const char *option, *path;
  } outputs[] = {{"--checkpoint", o->checkpoint},
                 {"--save-init", o->save_init},
                 {"--export-batches", o->export_batches},
                 {"--dump-grads", o->dump_grads},
                 {"--dump-activations", o->dump_activations}};
  for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++) {
    if (!outputs[i].path) continue;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", outputs[i].path); /* where it is written before its rename */
    hl_path_set_output(&set, outputs[i].option, NULL, outputs[i].path);
    hl_path_set_output(&set, outputs[i].option, "staging file", tmp);
  }
  hl_path_set_allow(&set, "--resume", "--checkpoint");
  if (outdir) output_register_files(o, outdir, &set);
  char err[9000];
  const bool ok = hl_path_set_check(&set, err, sizeof err);
  hl_path_set_free(&set);
  if (!ok) hl_usage_error("%s", err);
}

/* The output files, each proven writable now (a probe file in its folder;
 * the file itself is neither made nor truncated). A file whose folder is
 * the --out folder still to be made is covered by --out's own check. */
static void check_output_files(const train_opts *o, const char *outdir) {
  const struct {
    const char *option, *path;
  } files[] = {{"--checkpoint", o->checkpoint},
               {"--save-init", o->save_init},
               {"--export-batches", o->export_batches},
               {"--dump-grads", o->dump_grads},
               {"--dump-activations", o->dump_activations}};
  struct stat st;
  const bool outdir_to_make = outdir && stat(outdir, &st) != 0;
  char err[4400], folder[4096];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    if (!files[i].path) continue;
    snprintf(folder, sizeof folder, "%s", files[i].path);
    char *slash = strrchr(folder, '/');
    if (slash) *slash = '\0';
    if (outdir_to_make && slash && !strcmp(folder, outdir)) continue;
    if (!hl_out_probe_file(files[i].path, err, sizeof err)) hl_usage_error("%s: %s", files[i].option, err);
  }
}

/* The lock on this run's files (train_NAME_MODE_*) in the --out folder:
 * a second run of the same --name and --mode into it is refused. */
static hl_out_lock *lock_run(const train_opts *o, const char *outdir) {
  char name[128], err[4400];
  snprintf(name, sizeof name, "train_%s_%s", o->name, o->mode->name);
  hl_out_lock *l = hl_out_lock_take(outdir, name, err, sizeof err);
  if (!l && errno != EWOULDBLOCK) hl_fatal("%s", err); /* the folder passed its probe: a runtime failure */
  if (!l) hl_usage_error("--out: %s: wait for it, or give another --name", err);
  return l;
}

/* --list-params and --columns-md print and write nothing: true when one of
 * them was asked for (and done). */
static bool print_only(const train_opts *o, const train_data *d, bool writer) {
  if (o->list_params && writer) setup_list_params(o, d, stdout);
  return o->list_params;
}

/* Where the run starts: step 1, or after a checkpoint's step (--resume,
 * whose definition matched the command line while parsing), with the
 * checkpoint's state applied to the model, optimizer and scaler. */
typedef struct {
  int64_t first_step;
  run_totals totals, *resumed; /* resumed: &totals, or NULL for a fresh run */
  const char *hist_rows;       /* the checkpoint's histogram rows (its bytes, until hl_checkpoint_close) */
  size_t hist_len;
  int resume_log;              /* the per-step log a resumed run continues (output_resume_log) */
} start_point;

static start_point apply_resume(const train_opts *o, train_model *m, train_mode *t) {
  start_point p = {.first_step = 1};
  if (!o->resumed) return p;
  hl_train_state st = {.params = m->trainable, .n_params = m->n_trainable, .optims = &t->opt, .n_optims = 1,
                       .scaler = t->scaler};
  if (!hl_checkpoint_apply(o->resumed, &st)) hl_usage_error("--resume: %s", hl_error());
  size_t len = 0;
  const char *totals = hl_checkpoint_get_field(o->resumed, RESUME_FIELD_TOTALS, &len);
  if (!totals || !run_totals_parse(totals, len, o->steps, &p.totals) || p.totals.steps != st.step)
    hl_usage_error("--resume %s: the checkpoint's summary totals are missing or cannot be read", o->resume);
  p.resumed = &p.totals;
  p.hist_rows = hl_checkpoint_get_field(o->resumed, RESUME_FIELD_HIST, &p.hist_len);
  if (!p.hist_rows) hl_usage_error("--resume %s: the checkpoint holds no histogram rows", o->resume);
  p.first_step = st.step + 1;
  hl_meta_set("resumed", "from %s after step %lld", o->resume, (long long)st.step);
  hl_meta_set("resume-overrides", "%s", o->resume_overrides);
  return p;
}

/* What a process holds for the run, freed at its end. */
typedef struct {
  train_data *d;
  train_model m;
  train_mode t;
} run_parts;

static void run_parts_free(run_parts *p) {
  setup_mode_free(&p->t);
  setup_model_free(&p->m);
  data_free(p->d);
}

/* A number of the result line; "-" when it was not measured, "nan" when
 * it is one (a loss that stopped being a number). */
static const char *result_cell(double v, bool measured, char *buf, size_t len) {
  if (!measured) snprintf(buf, len, "-");
  else if (isnan(v)) snprintf(buf, len, "nan");
  else snprintf(buf, len, "%.4g", v);
  return buf;
}

/* The run's result on stdout, under the summary's column names, and what
 * autocast's cast cache saved. */
static void print_result(const train_opts *o, const train_mode *t, const run_result *r) {
  char loss[32], eval_loss[32], eval_acc[32], step_time[32];
  printf("%-10s %-13s %10s %10s %10s %9s %8s %19s %14s  %s\n", "name", "mode", "steps_done", "final_loss", "eval_loss",
         "eval_acc", "skipped", "step_time_ms_median", "mem_peak_bytes", "status");
  if (isnan(r->step_time_ms_median)) snprintf(step_time, sizeof step_time, "-");
  else snprintf(step_time, sizeof step_time, "%.3f", r->step_time_ms_median);
  printf("%-10s %-13s %10lld %10s %10s %9s %8lld %19s %14llu  %s\n", o->name, o->mode->name,
         (long long)run_steps_done(r), result_cell(r->final_loss, run_steps_done(r) > 0, loss, sizeof loss),
         result_cell(r->eval_loss, r->eval_step > 0, eval_loss, sizeof eval_loss),
         result_cell(r->eval_acc, r->eval_step > 0, eval_acc, sizeof eval_acc), (long long)r->skipped, step_time,
         (unsigned long long)r->mem_peak_bytes, run_status_name(r->status));
  if (t->autocast == HL_DTYPE_NONE || r->steps_run == 0) return;
  /* what the cast cache saved: a weight used again in the same forward is converted once */
  const double steps = (double)r->steps_run, rate = run_cast_cache_hit_rate(r);
  char rate_text[48];
  if (isnan(rate)) snprintf(rate_text, sizeof rate_text, "- (no f32 weight was cast)");
  else snprintf(rate_text, sizeof rate_text, "%.1f%%", 100 * rate);
  printf("autocast %s casts per step: %.1f made (%.1f of weights, then cached; %.1f of activations and inputs, never cached), "
         "%.1f answered by the cache; cache hit rate %s\n",
         hl_dtype_name(t->autocast), (double)r->autocast_casts / steps, (double)r->autocast_cache_misses / steps,
         (double)(r->autocast_casts - r->autocast_cache_misses) / steps, (double)r->autocast_cache_hits / steps,
         rate_text);
}

/* Where the run's files went, and why it ended when it did not complete. */
static void report_files(const train_opts *o, const run_result *r, const char *outdir) {
  const char *suffix = output_suffix(r->status), *profile = o->profile && r->profile_steps > 0 ? ",profile" : "";
  if (suffix[0])
    fprintf(stderr, "%s: wrote %s/train_%s_%s_{steps,hist,summary%s}.csv%s (train_summary.csv holds completed runs only)\n",
            TRAIN_PROG, outdir, o->name, o->mode->name, profile, suffix);
  else
    fprintf(stderr, "%s: wrote %s/train_%s_%s_{steps,hist,summary%s}.csv and train_summary.csv\n", TRAIN_PROG, outdir,
            o->name, o->mode->name, profile);
  if (r->status == RUN_DIVERGED) fprintf(stderr, "%s: %s diverged: %s\n", TRAIN_PROG, o->mode->name, r->why);
}

/* A failed run ends the process (exit 1); under mpirun every rank knows,
 * rank 0 says it, then all end together. */
static void end_if_failed(const train_opts *o, const run_result *r, const char *outdir, bool writer) {
  if (r->status != RUN_FAILED) return;
  const char *suffix = output_suffix(r->status);
  if (hl_dist_size() == 1)
    hl_fatal("%s; the run's files are %s/train_%s_%s_*.csv%s", r->why, outdir, o->name, o->mode->name, suffix);
  if (writer)
    fprintf(stderr, "%s: %s; the run's files are %s/train_%s_%s_*.csv%s\n", TRAIN_PROG, r->why, outdir, o->name,
            o->mode->name, suffix);
  fflush(stderr);
  hl_dist_barrier();
  hl_dist_finalize();
  exit(HL_EXIT_FAILURE);
}

/* The run, from its start point to its files' final names; the process's
 * exit status. */
static int train_and_finish(train_opts *o, run_parts *p, hl_device_kind dev, const char *outdir, bool writer,
                            start_point *start, hl_out_lock *run_lock) {
  train_output *out = writer ? output_open(o, &p->m, outdir, dev, start->first_step - 1, start->resume_log) : NULL;
  if (o->resumed) {
    output_hist_restore(out, start->hist_rows, start->hist_len);
    hl_checkpoint_close(o->resumed); /* the rows are copied: the file's bytes go */
    o->resumed = NULL;
  }
  loop_install_signals();
  run_result r = loop_run(o, p->d, &p->m, &p->t, dev, start->first_step, start->resumed, out);
  if (start->resumed) free(start->totals.step_time_ms);
  output_finish(out, &r); /* the files' names by the status: docs/train.md, "What a run leaves behind" */
  end_if_failed(o, &r, outdir, writer);
  const int status = r.status == RUN_INTERRUPTED ? 128 + r.signal : 0;
  if (writer) { /* the result and messages are rank 0's */
    print_result(o, &p->t, &r);
    report_files(o, &r, outdir);
  }
  run_parts_free(p);
  hl_out_lock_release(run_lock);
  if (writer && r.status == RUN_INTERRUPTED)
    fprintf(stderr, "%s: stopped by signal %d after step %lld; the %s CSVs hold every completed step\n", TRAIN_PROG,
            r.signal, (long long)run_steps_done(&r), output_suffix(r.status));
  /* data-parallel: the other ranks wait here for rank 0's files and lines, since mpirun ends the job
   * as soon as one rank exits with a status other than 0 (128 + signal) */
  hl_dist_finalize();
  return status;
}

int main(int argc, char **argv) {
  hl_dist_init(&argc, &argv); /* mpirun's job: before anything reads argv */
  hl_cli_init(TRAIN_PROG, argc, argv);
  const bool writer = hl_dist_rank() == 0;
  train_opts o;
  train_parse_options(argc, argv, &o);
  if (o.columns_md) {
    if (writer) train_print_columns(stdout);
    hl_dist_finalize();
    return 0;
  }
  hl_dist_start_watchdog(o.rank_timeout, "--rank-timeout"); /* data-parallel only */

  char err[1024];
  run_parts p = {.d = data_new(&o, err, sizeof err)};
  if (!p.d) hl_usage_error("%s", err);
  if (print_only(&o, p.d, writer)) {
    hl_dist_finalize();
    data_free(p.d);
    return 0;
  }

  char notice[1024];
  const hl_device_kind dev = pick_device(&o, notice, sizeof notice);
  require_memory(&o, p.d, dev);
  if (writer && o.export_batches && !data_export_fits(p.d, &o, o.export_batches, err, sizeof err))
    hl_usage_error("%s", err);
  /* every output path proven writable before any work; nothing made yet */
  char outbuf[4096];
  const char *outdir = writer && o.steps > 0 ? hl_cli_outdir_check(o.out, dev, outbuf, sizeof outbuf) : NULL;
  if (writer) check_path_collisions(&o, outdir);
  if (writer) check_output_files(&o, outdir);
  if (outdir) profile_check_output(&o, outdir);
  struct stat out_st;
  hl_out_lock *run_lock = outdir && stat(outdir, &out_st) == 0 ? lock_run(&o, outdir) : NULL;
  /* a resumed run continues its own log, found now: none there is bad input */
  const int resume_log = outdir && o.resumed ? output_resume_log(&o, outdir, o.resumed_step) : -1;
  if (writer) fputs(notice, stderr);
  describe_run(&o, p.d, dev);

  if (!setup_model(&o, p.d, dev, &p.m)) {
    /* a file that does not fit is bad input; one the system failed to read is a runtime failure */
    if (o.init_weights && !hl_error_is_system()) hl_usage_error("--init-weights: %s", hl_error());
    hl_fatal("building the model: %s", hl_error());
  }
  if (!setup_mode(&o, &p.m, &p.t)) hl_fatal("setting up %s: %s", o.mode->name, hl_error());
  start_point start = apply_resume(&o, &p.m, &p.t);
  start.resume_log = resume_log;

  /* every input accepted: from here on a failure is a runtime failure (exit 1) */
  if (outdir) {
    outdir = hl_cli_outdir(o.out, dev, outbuf, sizeof outbuf);
    if (!run_lock) run_lock = lock_run(&o, outdir);
  }
  if (writer && o.save_init && !hl_params_save(p.m.params, o.save_init)) hl_fatal("--save-init: %s", hl_error());
  if (writer && o.export_batches && !data_export_batches(p.d, &o, o.export_batches, err, sizeof err))
    hl_fatal("%s", err);
  if (o.steps == 0) {
    run_parts_free(&p);
    hl_dist_finalize();
    return 0;
  }
  /* a signalled run keeps its status (128 + signal) when stdout failed too */
  return hl_stdout_finish(train_and_finish(&o, &p, dev, outdir, writer, &start, run_lock));
}
