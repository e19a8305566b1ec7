#!/usr/bin/env python3
"""gpt_peer.py — halflab's GPT written again in PyTorch, for side-by-side numbers.

The peer trains the same model as `halflab-train --model gpt` from the same
initial weights on the same token batches, with the same optimizer, learning
rate schedule and clipping, and writes the same per-step CSV, so that losses,
gradients and step times can be compared line by line (docs/peers.md).

    halflab-train --mode fp32 --steps 100 --save-init w.bin --export-batches b.bin --out DIR
    "$(scripts/peer-python.sh)" bench/peers/gpt_peer.py --init-weights w.bin --batches b.bin --heads 4 \\
        --mode fp32 --steps 100 --out DIR           # DIR/peer_tiny_fp32_{steps,summary}.csv

It runs under the pinned PyTorch's Python (scripts/peer-python.sh prints it;
scripts/setup.sh --peers installs it), or, on a GPU machine, a CUDA PyTorch.

The model (GPT-2's layout, HuggingFace's parameter names, written here with
torch.nn; no HuggingFace import): token + position embeddings; per block
x += attn.c_proj(causal_attention(attn.c_attn(ln_1(x)))), x += mlp.c_proj(
gelu_tanh(mlp.c_fc(ln_2(x)))); ln_f; logits = x @ wte^T (tied head); the
mean cross-entropy over every position. Projection weights are [out, in]
(nn.Linear), as in halflab's weight files. The shape comes from the weight
file; only the number of heads must be given.

Modes (halflab-train's names), on the CPU and on CUDA:
  fp32      fp32 everywhere (on CUDA with TF32 matmuls off, as halflab's fp32 GEMMs)
  amp-bf16  torch.autocast(bfloat16), no scaler
  amp-fp16  torch.autocast(float16) + torch.amp.GradScaler(device) with
            halflab-train's scaler settings: --init-scale and
            --growth-interval as given to it, growth factor 2 and backoff 0.5
            (core/training/scaler.h's defaults, which halflab-train always uses)
--inject-nonfinite STEPS does what halflab-train's does: after the backward
of those steps, element 0 of the first parameter's (the token embedding's)
still-scaled gradient becomes +inf, so the scaler sees it when it unscales.
--record FILE writes every step's loss, gradient norm, loss scale and unscaled
gradients (before clipping) into one weight-format file (hlfiles.Record): the
frozen parity fixture that scripts/parity-fixture.sh writes and
tests/peers/test_fixture.c checks halflab against without PyTorch.
--stop-after K, as halflab-train's, runs the first K steps of the --steps
schedule (status "stopped"). Under autocast the products run in the low
precision; softmax, layer norm and the loss run in fp32 (halflab's autocast
policy, docs/core.md, which is CUDA autocast's; CPU autocast would leave
softmax in bf16, so the code asks for fp32 explicitly).

--attention picks how the attention is written:
  exact     (default) scores, an explicit causal mask, the fp32 softmax, the
            product with v: the same arithmetic as halflab's, which the
            parity tests (tests/peers/) rely on
  sdpa      F.scaled_dot_product_attention(q, k, v, is_causal=True), the form
            a user writes: torch picks a fused kernel (on the CPU its flash
            attention, in the autocast dtype), which rounds differently; the
            timing comparisons (compare_cpu.sh, gpu_compare.sh) use it
The form that ran is in the CSV metadata (# attention:).

One step, as halflab-train's loop: zero_grad; lr of the step; per micro-batch
upload, forward + loss under autocast, loss.item(), (loss / accum) scaled,
backward; unscale; gradient norm (clip_grad_norm_ with --clip-norm); optimizer
step through the scaler; scale update; device synchronised. The step time
runs from the upload to the synchronised end of the update; the gradient
census, the evaluation and the logging are not timed. The census columns
(zero / fp16-underflow fractions) are measured the way halflab counts them;
absorbed_frac and fp16_absorbed_frac need the optimizer's own count and are
left empty, as are the memory columns on the CPU (no accounting allocator).

Threads: --threads (default: what halflab uses, OMP_NUM_THREADS or the CPUs
this process may run on) goes to torch.set_num_threads. OMP_WAIT_POLICY is left
as the environment sets it (and recorded in the CSV metadata), as halflab-train does.
The CSV metadata also names what torch computed with: its version and
install (torch), its BLAS (torch_blas), oneDNN (torch_onednn) and the CPU
kernels ATen dispatched to (torch_cpu_capability).

Exit status: 0 done (also a diverged bf16 / fp16 run: the divergence is the
measurement), 1 a failed run (a non-finite loss in fp32), 2 bad input (one
line, no file written), 130 / 143 stopped by SIGINT / SIGTERM (complete lines,
summary written).
"""
import os
import sys

import argparse
import math
import re
import signal
import time

try:
    import numpy as np
except ImportError as _e:
    sys.stderr.write("gpt_peer: %s cannot import numpy (%s): run the peer with the Python that "
                     "scripts/peer-python.sh prints (scripts/setup.sh --peers installs it)\n" % (sys.executable, _e))
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hlfiles  # noqa: E402

PROG = "gpt_peer"
MODES = ("fp32", "amp-bf16", "amp-fp16")
# the attention's two forms (--attention), as the metadata line names them
ATTENTION = {"exact": "exact: scores, explicit causal mask, fp32 softmax (halflab's arithmetic, for parity)",
             "sdpa": "sdpa: torch.nn.functional.scaled_dot_product_attention(is_causal=True), the form a user writes "
                     "(a fused kernel of torch's choice)"}
MAX_CONSECUTIVE_SKIPS = 50  # halflab-train's rule for a scaled run that diverged
# halflab-train's GradScaler factors: core/training/scaler.h's defaults, which it has no flag for
GROWTH_FACTOR, BACKOFF_FACTOR = 2.0, 0.5
DEFAULT_INIT_SCALE, DEFAULT_GROWTH_INTERVAL = 65536.0, 2000

STEP_HEADER = ("mode,step,loss,eval_loss,eval_acc,lr,scale,skipped,grad_norm,grad_zero_frac,fp16_underflow_frac,"
               "fp16_underflow_scaled_frac,fp16_zero_frac,fp16_zero_scaled_frac,absorbed_frac,fp16_absorbed_frac,"
               "step_time_ms,tokens_per_s,samples_per_s,mem_current_bytes,mem_peak_bytes")
SUMMARY_HEADER = ("name,mode,model,task,device,status,steps,steps_done,skipped,final_loss,eval_step,eval_loss,eval_acc,"
                  "final_scale,grad_zero_frac,fp16_underflow_frac,fp16_underflow_scaled_frac,fp16_zero_frac,"
                  "fp16_zero_scaled_frac,absorbed_frac,fp16_absorbed_frac,step_time_ms_median,step_time_ms_min,"
                  "timed_steps,tokens_per_s,samples_per_s,mem_peak_bytes,param_bytes,params,layers,heads,embd,vocab,"
                  "seq,batch,accum,optimizer,lr,schedule,init_gain,init_scale,seed,threads,omp_wait_policy,"
                  "load_start,load_end,wall_s,autocast_casts,autocast_cache_misses,autocast_cache_hits,"
                  "autocast_cache_hit_rate,ranks,allreduce_dtype,bucket_mb,allreduce_buckets,allreduce_bytes,"
                  "allreduce_ms_median,allreduce_exposed_ms_median")


def usage_error(msg):
    sys.stderr.write("%s: %s (see '%s --help')\n" % (PROG, msg, PROG))
    sys.exit(2)


def fatal(msg):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.exit(1)


# ------------------------------------------------------------------ options --

def default_threads():
    v = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if v.isdigit() and int(v) > 0:
        return int(v)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


DECIMAL = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z")
INTEGER = re.compile(r"-?\d+\Z")


def strict_real(negative=False):
    """A real option read as halflab's programs read one (cli/cli.h): a plain decimal, no blanks or
    '+', a '-' only where the value may be negative, and nothing that rounds to 0 or to inf."""
    def parse(text):
        if not DECIMAL.match(text):
            raise argparse.ArgumentTypeError("'%s' is not a number (a plain decimal such as 3e-4)" % text)
        if text.startswith("-") and not negative:
            raise argparse.ArgumentTypeError("'%s': no sign (the value cannot be negative)" % text)
        v = float(text)
        if math.isinf(v):
            raise argparse.ArgumentTypeError("%s is beyond the double range" % text)
        mantissa = re.split("[eE]", text)[0]
        if v == 0 and any(c in "123456789" for c in mantissa):
            raise argparse.ArgumentTypeError("%s is not 0 but rounds to 0 (underflow)" % text)
        if v != 0 and abs(v) < sys.float_info.min:
            raise argparse.ArgumentTypeError("%s is subnormal in double precision" % text)
        return v
    return parse


def strict_int(text):
    """An integer option: digits, a '-' sign at most (the ranges are checked in check_ranges)."""
    if not INTEGER.match(text):
        raise argparse.ArgumentTypeError("'%s' is not an integer" % text)
    return int(text)


def make_parser():
    """The command line's options (halflab-train's names), whose errors are one line and exit 2."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Give it the flags you gave halflab-train (mode, optimizer, lr, schedule, "
                                       "clipping, scaler, steps, warm-up, evaluation). See docs/peers.md.")
    p.add_argument("--init-weights", metavar="FILE", help="halflab-train --save-init's weight file (required)")
    p.add_argument("--batches", metavar="FILE", help="halflab-train --export-batches's file (required)")
    p.add_argument("--heads", type=strict_int, help="attention heads (required: the weight file has no head count)")
    p.add_argument("--mode", default="fp32", help="fp32 (default), amp-bf16, amp-fp16")
    p.add_argument("--device", default="auto", help="auto (default: cuda when torch sees a GPU), cpu, cuda")
    p.add_argument("--attention", default="exact",
                   help="exact (default: scores, explicit mask, fp32 softmax, for parity) or sdpa "
                        "(F.scaled_dot_product_attention, for timing)")
    p.add_argument("--optimizer", default="adamw", help="adamw (default) or sgd")
    p.add_argument("--lr", type=strict_real(), default=None, help="default 3e-3 for adamw, 0.1 for sgd (the tiny preset's)")
    p.add_argument("--momentum", type=strict_real(), default=0.0)
    p.add_argument("--weight-decay", type=strict_real(), default=0.0)
    p.add_argument("--schedule", default="cosine", help="cosine (default): lr (1 + cos(pi (step-1)/steps)) / 2; constant")
    p.add_argument("--clip-norm", type=strict_real(), default=0.0, help="clip the unscaled gradients' L2 norm")
    p.add_argument("--init-scale", type=strict_real(), default=None,
                   help="GradScaler's initial scale (amp-fp16; default 65536)")
    p.add_argument("--growth-interval", type=strict_int, default=None,
                   help="clean steps before the scale doubles (amp-fp16; default 2000)")
    p.add_argument("--inject-nonfinite", metavar="STEPS", default="none",
                   help="as halflab-train: an inf into the first gradient at these steps, e.g. 3,7,10-12")
    p.add_argument("--steps", type=strict_int, default=None, help="optimizer steps (default: every step in --batches)")
    p.add_argument("--stop-after", type=strict_int, default=None, metavar="K",
                   help="as halflab-train: stop after step K of the --steps schedule (status 'stopped')")
    p.add_argument("--warmup", type=strict_int, default=5, help="first steps left out of the timing summary (default 5)")
    p.add_argument("--eval-every", type=strict_int, default=100, help="evaluate every N steps and after the last (default 100)")
    p.add_argument("--stats-every", type=strict_int, default=1, help="gradient census every N steps (0: never; default 1)")
    p.add_argument("--threads", type=strict_int, default=None, help="torch.set_num_threads (default: as halflab: "
                                                             "OMP_NUM_THREADS or the usable CPUs)")
    p.add_argument("--out", default=".", help="output folder (default: the current one)")
    p.add_argument("--name", default="tiny", help="run name in the file names (default tiny)")
    p.add_argument("--dump-grads", metavar="FILE", help="write the first step's unscaled gradients (weight-file format)")
    p.add_argument("--record", metavar="FILE",
                   help="write every step's loss, gradient norm, loss scale and unscaled gradients into one "
                        "weight-format file (the frozen parity fixture, tests/peers/fixture/)")
    p.add_argument("--version", action="store_true", help="print the versions and exit")

    def error(message):  # one line, exit 2 (argparse prints the usage block otherwise)
        usage_error(message)

    p.error = error
    return p


def parse_args(argv):
    """The options, with their defaults filled in and each checked on its own (against the
    inputs: check_inputs); a bad one is one line and exit 2."""
    a = make_parser().parse_args(argv)
    if a.version:
        return a
    check_choices(a)
    check_ranges(a)
    check_paths(a)
    return a


def same_file_key(path):
    """What tells two spellings of a path apart or not: the file's device and inode when it exists
    (links of either kind), else its folder resolved plus its name."""
    try:
        st = os.stat(path)
        return ("inode", st.st_dev, st.st_ino)
    except OSError:
        return ("path", os.path.join(os.path.realpath(os.path.dirname(path) or "."), os.path.basename(path)))


def check_paths(a):
    """No empty path; no output (with its PATH.tmp) that is an input or another output, links
    resolved, as halflab-train checks its own (cli/path_set.h): one line and exit 2, nothing written."""
    for flag, path in (("--init-weights", a.init_weights), ("--batches", a.batches), ("--out", a.out),
                       ("--dump-grads", a.dump_grads), ("--record", a.record)):
        if path is not None and path == "":
            usage_error("%s: empty path" % flag)
    base = os.path.join(a.out, "peer_%s_%s" % (a.name, a.mode))
    outputs = [("--dump-grads", a.dump_grads), ("--record", a.record),
               ("--out's step log", base + "_steps.csv"), ("--out's summary", base + "_summary.csv")]
    outputs += [(flag + "'s staging file", path + ".tmp") for flag, path in outputs if path]
    inputs = [("--init-weights", a.init_weights), ("--batches", a.batches)]
    seen = {}
    for flag, path in inputs + [o for o in outputs if o[1]]:
        key = same_file_key(path)
        if key in seen:
            other_flag, other_path = seen[key]
            usage_error("%s %s is the same file as %s %s: give each its own path (an output may not replace %s)"
                        % (flag, path, other_flag, other_path, "an input" if (other_flag, other_path) in inputs
                           else "another output"))
        seen[key] = (flag, path)


def check_choices(a):
    """Required options given, names among those the peer knows; --lr and the scaler's defaults filled in."""
    for flag, v in (("--init-weights", a.init_weights), ("--batches", a.batches), ("--heads", a.heads)):
        if v is None:
            usage_error("%s is required" % flag)
    if a.mode not in MODES:
        usage_error("--mode: '%s' is not one the peer runs (%s)" % (a.mode, ", ".join(MODES)))
    if a.attention not in ATTENTION:
        usage_error("--attention: '%s' (exact or sdpa)" % a.attention)
    if a.device not in ("auto", "cpu", "cuda"):
        usage_error("--device: '%s' (auto, cpu or cuda)" % a.device)
    if a.optimizer not in ("adamw", "sgd"):
        usage_error("--optimizer: unknown optimizer '%s' (sgd or adamw)" % a.optimizer)
    if a.schedule not in ("cosine", "constant"):
        usage_error("--schedule: unknown schedule '%s' (cosine or constant)" % a.schedule)
    if a.lr is None:
        a.lr = 3e-3 if a.optimizer == "adamw" else 0.1
    if a.mode != "amp-fp16" and (a.init_scale is not None or a.growth_interval is not None):
        usage_error("--init-scale and --growth-interval need a mode with a loss scaler (amp-fp16); %s has none"
                    % a.mode)
    a.init_scale = DEFAULT_INIT_SCALE if a.init_scale is None else a.init_scale
    a.growth_interval = DEFAULT_GROWTH_INTERVAL if a.growth_interval is None else a.growth_interval
    try:
        a.inject = parse_steps(a.inject_nonfinite)
    except ValueError as e:
        usage_error("--inject-nonfinite: %s" % e)


def check_ranges(a):
    """Every number in its range, --momentum with SGD only, a --name that fits a file name."""
    for name, v, ok in (("--lr", a.lr, a.lr > 0), ("--momentum", a.momentum, 0 <= a.momentum < 1),
                        ("--weight-decay", a.weight_decay, a.weight_decay >= 0),
                        ("--clip-norm", a.clip_norm, a.clip_norm >= 0),
                        ("--init-scale", a.init_scale, 1.1754943508222875e-38 <= a.init_scale <= 3.4028234663852886e38),
                        ("--growth-interval", a.growth_interval, a.growth_interval >= 1),
                        ("--heads", a.heads, a.heads >= 1), ("--warmup", a.warmup, a.warmup >= 0),
                        ("--eval-every", a.eval_every, a.eval_every >= 1),
                        ("--stats-every", a.stats_every, a.stats_every >= 0)):
        if not (v == v and ok):
            usage_error("%s: %s is out of range" % (name, v))
    if a.momentum > 0 and a.optimizer != "sgd":
        usage_error("--momentum is SGD's (--optimizer sgd)")
    if a.steps is not None and a.steps < 1:
        usage_error("--steps: %d must be >= 1" % a.steps)
    if a.stop_after is not None and a.stop_after < 1:
        usage_error("--stop-after: %d must be >= 1" % a.stop_after)
    if a.threads is not None and a.threads < 1:
        usage_error("--threads: %d must be >= 1" % a.threads)
    if not a.name or len(a.name) > 47 or not all(c.isalnum() or c in "-." for c in a.name):
        usage_error("--name: '%s' must be 1 to 47 letters, digits, '-' or '.'" % a.name)


def parse_steps(text):
    """halflab's step lists (core/training/fault.h): "3,7,10-12", "" or "none"; the set of steps."""
    steps = set()
    if text in ("", "none"):
        return steps
    for item in text.split(","):
        lo, dash, hi = item.partition("-")
        if not (lo.isdigit() and (not dash or hi.isdigit())):
            raise ValueError("step list \"%s\": bad item \"%s\" (steps are integers >= 1, ranges lo-hi with lo <= hi, "
                             "separated by commas, e.g. 3,7,10-12)" % (text, item))
        first = int(lo)
        last = int(hi) if dash else first
        if first < 1 or last < first:
            raise ValueError("step list \"%s\": bad item \"%s\" (steps are integers >= 1, ranges lo-hi with lo <= hi)"
                             % (text, item))
        steps.update(range(first, last + 1))
    return steps


def format_steps(steps):
    """The canonical "3,7,10-12" of a set of steps (halflab-train's metadata)."""
    out, run = [], []
    for s in sorted(steps):
        if run and s == run[-1] + 1:
            run.append(s)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
        run = [s]
    if run:
        out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
    return ",".join(out)


# -------------------------------------------------------------------- model --

def build_model_class(torch):
    nn = torch.nn
    F = torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, C, H, block, attention):
            super().__init__()
            self.H = H
            self.sdpa = attention == "sdpa"
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)
            self.register_buffer("allowed", torch.tril(torch.ones(block, block, dtype=torch.bool)), persistent=False)

        def forward(self, x):
            B, T, C = x.shape
            H, D = self.H, C // self.H
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T, H, D).transpose(1, 2)
            k = k.view(B, T, H, D).transpose(1, 2)
            v = v.view(B, T, H, D).transpose(1, 2)
            if self.sdpa:  # what a user writes: torch's fused kernel, its own rounding
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.c_proj(y.transpose(1, 2).reshape(B, T, C))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))  # halflab: product, then the scale
            att = att.masked_fill(~self.allowed[:T, :T], float("-inf"))
            att = F.softmax(att.float(), dim=-1)  # fp32 under any autocast (CUDA's policy and halflab's)
            y = att @ v
            return self.c_proj(y.transpose(1, 2).reshape(B, T, C))

    class MLP(nn.Module):
        def __init__(self, C):
            super().__init__()
            self.c_fc = nn.Linear(C, 4 * C)
            self.c_proj = nn.Linear(4 * C, C)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))

    class Block(nn.Module):
        def __init__(self, C, H, block, attention):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C, eps=1e-5)
            self.attn = CausalSelfAttention(C, H, block, attention)
            self.ln_2 = nn.LayerNorm(C, eps=1e-5)
            self.mlp = MLP(C)

        def forward(self, x):
            # x is the fp32 residual stream; layer norm runs in fp32 (x.float() is x outside autocast)
            x = x + self.attn(self.ln_1(x.float()))
            return x + self.mlp(self.ln_2(x.float()))

    class GPT(nn.Module):
        def __init__(self, n_layer, n_head, n_embd, vocab, block, attention):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, n_embd),
                wpe=nn.Embedding(block, n_embd),
                h=nn.ModuleList([Block(n_embd, n_head, block, attention) for _ in range(n_layer)]),
                ln_f=nn.LayerNorm(n_embd, eps=1e-5)))

        def forward(self, idx, targets):
            T = idx.shape[1]
            tr = self.transformer
            x = tr.wte(idx) + tr.wpe(torch.arange(T, device=idx.device))
            for b in tr.h:
                x = b(x)
            x = tr.ln_f(x.float())
            logits = F.linear(x, tr.wte.weight)  # the head, tied to the token embedding
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))
            return logits, loss

    return GPT


def shape_from_weights(w):
    """(layers, embd, vocab, block) from a weight file's names and shapes."""
    if "transformer.wte.weight" not in w or "transformer.wpe.weight" not in w:
        raise hlfiles.FileFormatError("no transformer.wte.weight / transformer.wpe.weight: not a GPT's weights")
    vocab, C = w["transformer.wte.weight"].shape
    block = w["transformer.wpe.weight"].shape[0]
    layers = 0
    while "transformer.h.%d.ln_1.weight" % layers in w:
        layers += 1
    return layers, C, vocab, block


# -------------------------------------- torch, signals, the gradient census --

stop_signal = 0


def on_signal(sig, frame):
    global stop_signal
    stop_signal = sig
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C ends the process at once
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def import_torch():
    """torch, or one line saying which Python lacks it (the peer's is scripts/peer-python.sh's)."""
    try:
        import torch
    except ImportError as e:
        fatal("%s cannot import torch (%s): run the peer with the Python that scripts/peer-python.sh prints "
              "(scripts/setup.sh --peers installs it)" % (sys.executable, e))
    return torch


def torch_build(torch):
    """The CSV metadata lines naming what torch computes with: version, BLAS, oneDNN, CPU kernels."""
    config = torch.__config__.show()

    def config_line(*words):
        for line in config.splitlines():
            if all(w in line for w in words):
                return line.strip().lstrip("- ").strip()
        return ""

    blas = "unknown"
    for line in config.splitlines():
        if "BLAS_INFO=" in line:
            blas = line.split("BLAS_INFO=", 1)[1].split(",", 1)[0].strip()
    blas_library = config_line("Math Kernel Library") or config_line("OpenBLAS")
    onednn_version = re.search(r"v(\d+(\.\d+)+)", config_line("MKL-DNN") or config_line("oneDNN"))
    onednn = "oneDNN " + onednn_version.group(0) if onednn_version else ""
    mkldnn = torch.backends.mkldnn
    return [("torch", "%s (%s)" % (torch.__version__, torch.__file__.rsplit("/", 2)[0])),
            ("torch_blas", "%s%s" % (blas, " (%s)" % blas_library if blas_library else "")),
            ("torch_onednn", "%s (torch.backends.mkldnn: %s, %s)" % (
                onednn or "not built", "available" if mkldnn.is_available() else "not available",
                "enabled" if mkldnn.enabled else "disabled")),
            ("torch_cpu_capability", "%s (torch.backends.cpu.get_cpu_capability(): the ATen kernels it dispatches to)"
             % torch.backends.cpu.get_cpu_capability())]


def census(torch, grads, scale):
    """halflab's gradient census (train/gradient_stats.h) of the gradients times scale (in f32):
    (exact zero, fp16 underflow, fp16 zero) counts and the finite element count."""
    exact = zero = under = finite = 0
    s = torch.tensor(scale, dtype=torch.float32)
    for g in grads:
        g = g.detach().float().reshape(-1)
        v = g * s.to(g.device)
        ok = torch.isfinite(g) & ~torch.isnan(v)
        h = v[ok].half()  # round to nearest even, overflow to inf
        mag = h.view(torch.int16).to(torch.int32) & 0x7FFF
        finite += int(ok.sum())
        exact += int((g[ok] == 0).sum())
        zero += int((mag == 0).sum())
        under += int((mag < 0x0400).sum())
    return exact, under, zero, finite


# ------------------------------------------------------------------- set-up --

class Inputs:
    """The weight file, the batches and the shape they give, checked before anything is written."""

    def __init__(self, weights, data, layers, embd, vocab, block, steps):
        self.weights, self.data, self.steps = weights, data, steps
        self.layers, self.embd, self.vocab, self.block = layers, embd, vocab, block


def check_inputs(a):
    """The weight file and the batches read, and every option checked against them:
    Inputs, or one line and exit 2 (before torch is imported, before any file is written)."""
    try:
        w = hlfiles.read_weights(a.init_weights)
    except (OSError, hlfiles.FileFormatError) as e:
        usage_error("--init-weights: %s" % e)
    try:
        data = hlfiles.Batches(a.batches)
    except (OSError, hlfiles.FileFormatError) as e:
        usage_error("--batches: %s" % e)
    try:
        layers, C, vocab, block = shape_from_weights(w)
    except hlfiles.FileFormatError as e:
        usage_error("--init-weights: %s: %s" % (a.init_weights, e))
    if layers < 1:
        usage_error("--init-weights: %s has no transformer blocks" % a.init_weights)
    if C % a.heads:
        usage_error("--heads %d does not divide the width %d" % (a.heads, C))
    if data.model_vocab != vocab:
        usage_error("--batches: made for a vocabulary of %d, the weights have %d" % (data.model_vocab, vocab))
    if data.T > block:
        usage_error("--batches: sequences of %d tokens, the model's block is %d" % (data.T, block))
    steps = a.steps if a.steps is not None else data.steps
    if steps > data.steps:
        usage_error("--steps %d: %s holds %d steps (halflab-train --export-steps)" % (steps, a.batches, data.steps))
    if a.stop_after is not None and a.stop_after >= steps:
        usage_error("--stop-after %d must be below --steps %d" % (a.stop_after, steps))
    if a.inject and max(a.inject) > steps:
        usage_error("--inject-nonfinite: step %d is past the last step (%d)" % (max(a.inject), steps))
    if not os.path.isdir(a.out) or not os.access(a.out, os.W_OK | os.X_OK):
        usage_error("--out: folder '%s' does not exist or is not writable" % a.out)
    for flag, path in (("--dump-grads", a.dump_grads), ("--record", a.record)):
        d = os.path.dirname(path or "") or "."
        if path and not os.access(d, os.W_OK | os.X_OK):
            usage_error("%s: cannot write into %s" % (flag, d))
    return Inputs(w, data, layers, C, vocab, block, steps)


class Run:
    """What one run trains with, fixed before its first step: the options, the inputs, the
    device, the model and its optimizer (and loss scaler in amp-fp16)."""

    def __init__(self, torch, a, inputs):
        self.torch, self.a, self.inputs, self.data, self.steps = torch, a, inputs, inputs.data, inputs.steps
        self.device, self.threads = choose_device(torch, a)
        self.dev = torch.device(self.device)
        self.model, self.params = load_model(torch, a, inputs, self.dev)
        self.scaled = a.mode == "amp-fp16"
        self.opt, self.scaler = make_optimizer(torch, a, self.params, self.device)
        self.amp_dtype = {"fp32": None, "amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}[a.mode]
        self.policy = os.environ.get("OMP_WAIT_POLICY")
        self.rows, self.T, self.accum = self.data.rows, self.data.T, self.data.accum
        self.tokens, self.items = float(self.rows * self.accum * self.T), float(self.rows * self.accum)

    def autocast(self):
        return self.torch.autocast(device_type=self.device, dtype=self.amp_dtype or self.torch.bfloat16,
                                   enabled=self.amp_dtype is not None)

    def sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def lr_at(self, step):
        a = self.a
        if a.schedule == "constant":
            return a.lr
        return a.lr * 0.5 * (1.0 + math.cos(math.pi * (step - 1) / self.steps))

    def scale(self):
        """The loss scale the next step multiplies by (1 without a scaler)."""
        return float(self.scaler.get_scale()) if self.scaled else 1.0


def choose_device(torch, a):
    """(device, threads): --device resolved, torch's threads set, TF32 off on CUDA."""
    cuda_ok = torch.cuda.is_available()
    device = a.device if a.device != "auto" else ("cuda" if cuda_ok else "cpu")
    if device == "cuda" and not cuda_ok:
        fatal("--device cuda: torch %s sees no usable GPU (torch.cuda.is_available() is False)" % torch.__version__)
    threads = a.threads if a.threads is not None else default_threads()
    torch.set_num_threads(threads)
    if device == "cuda":  # fp32 means fp32: halflab's fp32 GEMMs never use TF32
        torch.set_float32_matmul_precision("highest")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return device, threads


def load_model(torch, a, inputs, dev):
    """(model, parameters): the GPT built from the weight file's shape, its weights copied in,
    on the device, in training mode; a weight file of another model is exit 2."""
    w = inputs.weights
    GPT = build_model_class(torch)
    model = GPT(inputs.layers, a.heads, inputs.embd, inputs.vocab, inputs.block, a.attention)
    names = [n for n, _ in model.named_parameters()]
    if set(names) != set(w):
        missing = sorted(set(names) - set(w))
        extra = sorted(set(w) - set(names))
        usage_error("--init-weights: %s does not match a GPT of %d layers: %s" %
                    (a.init_weights, inputs.layers, ("missing " + missing[0]) if missing else ("extra " + extra[0])))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if tuple(p.shape) != w[n].shape:
                usage_error("--init-weights: %s is %s, the model's is %s" % (n, list(w[n].shape), list(p.shape)))
            p.copy_(torch.from_numpy(w[n]))
    model.to(dev)
    model.train()
    return model, [p for _, p in model.named_parameters()]


def make_optimizer(torch, a, params, device):
    """(optimizer, GradScaler or None): halflab-train's optimizer, and its scaler settings in amp-fp16."""
    if a.optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=a.weight_decay)
    else:
        opt = torch.optim.SGD(params, lr=a.lr, momentum=a.momentum, weight_decay=a.weight_decay)
    scaler = None
    if a.mode == "amp-fp16":
        scaler = torch.amp.GradScaler(device, init_scale=a.init_scale, growth_factor=GROWTH_FACTOR,
                                      backoff_factor=BACKOFF_FACTOR, growth_interval=a.growth_interval)
    return opt, scaler


# ----------------------------------------------------------------- metadata --

def device_description(run):
    """The CSV's '# device:' line: the GPU or the CPU, and the torch that drives it."""
    torch = run.torch
    if run.device == "cuda":
        pr = torch.cuda.get_device_properties(run.dev)
        try:
            cudnn = torch.backends.cudnn.version()
        except RuntimeError as e:  # a mismatched cuDNN on the library path: the peer uses none
            cudnn = "unusable (%s)" % str(e).split(".")[0]
        return "cuda: %s, sm_%d%d, %d SMs, %.1f GiB; pytorch %s (CUDA %s, cuDNN %s)" % (
            pr.name, pr.major, pr.minor, pr.multi_processor_count, pr.total_memory / 2 ** 30, torch.__version__,
            torch.version.cuda, cudnn)
    return "cpu: %s, %d logical cores, %d torch threads; pytorch %s" % (
        hlfiles.cpu_model(), os.cpu_count() or 0, torch.get_num_threads(), torch.__version__)


def optimizer_description(a):
    sched = (" (cosine schedule: lr x (1 + cos(pi (step - 1) / steps)) / 2)" if a.schedule == "cosine"
             else " (constant)")
    if a.optimizer == "adamw":
        return "torch.optim.AdamW lr %g%s weight_decay %g betas (0.9, 0.999) eps 1e-8" % (a.lr, sched, a.weight_decay)
    return "torch.optim.SGD lr %g%s momentum %g weight_decay %g" % (a.lr, sched, a.momentum, a.weight_decay)


def run_metadata(run):
    """The '# key: value' lines both CSVs start with: what ran, on what, and how it was measured."""
    torch, a, inputs, data = run.torch, run.a, run.inputs, run.data
    meta = hlfiles.Meta(device_description(run))
    meta.set("halflab-peer", "PyTorch %s peer of halflab-train (bench/peers/gpt_peer.py); numpy %s" %
             (torch.__version__, np.__version__))
    for key, value in torch_build(torch):
        meta.set(key, value)
    meta.set("run", a.name)
    meta.set("mode", {"fp32": "fp32: fp32 weights, no autocast",
                      "amp-bf16": "amp-bf16: fp32 weights, torch.autocast bfloat16, no scaler",
                      "amp-fp16": "amp-fp16: fp32 weights, torch.autocast float16, GradScaler"}[a.mode])
    meta.set("model", "GPT %d layers, %d heads, width %d, vocabulary %d, block %d; weights from %s" %
             (inputs.layers, a.heads, inputs.embd, inputs.vocab, inputs.block, os.path.basename(a.init_weights)))
    meta.set("attention", ATTENTION[a.attention])
    meta.set("data", "%s: %d micro-batches of %d x %d tokens (accum %d), %d held-out sequences" %
             (os.path.basename(a.batches), data.micro_batches, data.rows, data.T, data.accum, data.eval_rows))
    meta.set("batch", "%d x %d tokens per micro-batch, %d micro-batches per step" % (data.rows, data.T, data.accum))
    meta.set("optimizer", optimizer_description(a))
    meta.set("scaler", "dynamic (torch.amp.GradScaler('%s') init %g, growth %g every %d, backoff %g)" % (
        run.device, a.init_scale, GROWTH_FACTOR, a.growth_interval, BACKOFF_FACTOR) if run.scaled else "none")
    if a.inject:
        meta.set("inject_nonfinite", format_steps(a.inject))
    if a.clip_norm > 0:
        meta.set("clip_norm", "%g (L2, unscaled gradients; torch.nn.utils.clip_grad_norm_)" % a.clip_norm)
    if run.device == "cpu":
        meta.set("threads", "%d (torch.set_num_threads; OMP_WAIT_POLICY %s)" % (
            torch.get_num_threads(), run.policy if run.policy else "unset: libgomp's default"))
    else:
        meta.set("cuda_math", "TF32 off; fp16 reduced-precision reductions %s (torch's default)" %
                 torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)
    meta.set("stats", "gradient census every %d steps (0: never); absorbed_frac, fp16_absorbed_frac not measured%s" %
             (a.stats_every, "; memory columns: torch.cuda.memory_allocated" if run.device == "cuda"
              else "; memory columns not measured (no accounting allocator)"))
    meta.set("timing", "per step: batch upload to the end of the update, device synchronised; census, evaluation "
                       "and logging left out; the summary's median leaves out the first %d steps" % a.warmup)
    return meta


# ----------------------------------------------------------------- one step --

# the census columns, in the order census_fractions gives them
CENSUS_COLUMNS = ("grad_zero_frac", "fp16_underflow_frac", "fp16_underflow_scaled_frac", "fp16_zero_frac",
                  "fp16_zero_scaled_frac")


class Step:
    """What one optimizer step measured."""

    def __init__(self, step, lr, scale):
        self.step, self.lr, self.scale = step, lr, scale  # scale: the one the step's loss was multiplied by
        self.loss = self.grad_norm = self.step_s = float("nan")
        self.nonfinite = self.skipped = False
        self.grads = []


def named_gradients(model, torch):
    """[(name, unscaled f32 gradient as a numpy array)], zeros for a parameter that got none."""
    return [(n, (p.grad if p.grad is not None else torch.zeros_like(p)).detach().float().cpu().numpy())
            for n, p in model.named_parameters()]


def forward_backward(run, step, s):
    """Every micro-batch of the step: upload, forward + loss under autocast, backward of the
    (scaled) loss / accum. Sets s.loss (the mean) and s.nonfinite."""
    loss_sum, nonfinite = 0.0, False
    for m in range(run.accum):
        idx, tgt, _ = run.data.micro(step, m)
        x = run.torch.from_numpy(idx).to(run.dev)
        y = run.torch.from_numpy(tgt).to(run.dev)
        with run.autocast():
            _, loss = run.model(x, y)
        lv = float(loss.item())
        loss_sum += lv
        nonfinite |= not math.isfinite(lv)
        objective = loss / run.accum if run.accum > 1 else loss
        (run.scaler.scale(objective) if run.scaled else objective).backward()
    s.loss, s.nonfinite = loss_sum / run.accum, nonfinite


def save_gradients(run, step, record):
    """--dump-grads (step 1) and --record (every step): the unscaled gradients before clipping.
    Returns the seconds it took, which the step time leaves out."""
    a = run.a
    dump = a.dump_grads and step == 1  # for the parity test
    if not (dump or a.record):
        return 0.0
    t0 = time.perf_counter()
    if dump:
        hlfiles.write_weights(a.dump_grads, named_gradients(run.model, run.torch))
    if a.record:  # copies: the next step's backward overwrites the gradients
        record.append_gradients([(n, g.copy()) for n, g in named_gradients(run.model, run.torch)])
    return time.perf_counter() - t0


def gradient_norm(run, grads):
    """The unscaled gradients' L2 norm, clipped to --clip-norm when one is given."""
    torch = run.torch
    if run.a.clip_norm > 0:
        return float(torch.nn.utils.clip_grad_norm_(run.params, run.a.clip_norm, norm_type=2.0))
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.detach(), 2.0) for g in grads]),
                                          2.0))


def one_step(run, step, record):
    """One optimizer step, as halflab-train's loop; the time runs from the first upload to the
    synchronised end of the update, less the gradients saved for --dump-grads / --record."""
    a, opt = run.a, run.opt
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    lr = run.lr_at(step)
    for g in opt.param_groups:
        g["lr"] = lr
    s = Step(step, lr, run.scale())
    forward_backward(run, step, s)
    if step in a.inject:  # halflab-train's fault: the first parameter's gradient, element 0, still scaled
        with run.torch.no_grad():
            run.params[0].grad.view(-1)[0] = float("inf")
    if run.scaled:
        run.scaler.unscale_(opt)
    paused = save_gradients(run, step, record)
    s.grads = [p.grad for p in run.params if p.grad is not None]
    s.grad_norm = gradient_norm(run, s.grads)
    if run.scaled:
        run.scaler.step(opt)  # skips the update when unscale_ found inf / NaN
        run.scaler.update()
    else:
        opt.step()
    run.sync()
    s.step_s = time.perf_counter() - t0 - paused
    # a skipped step is exactly one that backed the scale off (GradScaler's rule)
    s.skipped = run.scaled and run.scale() < s.scale
    if a.record:
        record.append_step(s.loss, s.grad_norm, s.scale)
    return s


def census_fractions(run, s):
    """The census of the gradients the step updated with, {CENSUS_COLUMNS: fraction}, or None where
    none is taken (a skipped step, a step between --stats-every, no finite element); not timed."""
    a, step = run.a, s.step
    if a.stats_every == 0 or (step % a.stats_every != 0 and step != 1) or s.skipped:
        return None
    exact, under, zero, fin = census(run.torch, s.grads, 1.0)
    _, under_s, zero_s, fin_s = census(run.torch, s.grads, s.scale)
    if not (fin and fin_s):
        return None
    return dict(zip(CENSUS_COLUMNS, (exact / fin, under / fin, under_s / fin_s, zero / fin, zero_s / fin_s)))


def evaluate(run):
    """(loss, accuracy on the scored positions) of the held-out sequences, in chunks of a micro-batch."""
    torch, data, model = run.torch, run.data, run.model
    model.eval()
    n_eval = data.eval_rows
    chunk = min(run.rows, n_eval)
    loss_sum, correct, scored = 0.0, 0, 0
    with torch.no_grad():
        for first in range(0, n_eval, chunk):
            n = min(chunk, n_eval - first)
            x = torch.from_numpy(data.eval_inputs[first:first + n]).to(run.dev)
            y = torch.from_numpy(data.eval_targets[first:first + n]).to(run.dev)
            with run.autocast():
                logits, loss = model(x, y)
            loss_sum += float(loss) * n
            sc = torch.from_numpy(data.eval_scored[first:first + n]).to(run.dev)
            hit = (logits.argmax(dim=-1) == y) & sc
            correct += int(hit.sum())
            scored += int(sc.sum())
    model.train()
    return loss_sum / n_eval, (correct / scored if scored else float("nan"))


def step_row(run, s, census_cols, ev_loss, ev_acc, mem_cur, mem_pk):
    """The steps log's row of one step, by column name (STEP_HEADER)."""
    c = hlfiles.cell
    step_ms = s.step_s * 1e3
    return dict(mode=run.a.mode, step=str(s.step), loss=hlfiles.measured(s.loss), eval_loss=c(ev_loss),
                eval_acc=c(ev_acc), lr="%.9g" % s.lr, scale=c(s.scale), skipped="1" if s.skipped else "0",
                grad_norm=hlfiles.measured(s.grad_norm),
                **{name: c(census_cols[name]) if census_cols else "" for name in CENSUS_COLUMNS},
                absorbed_frac="", fp16_absorbed_frac="",  # the optimizer's own count: not torch's
                step_time_ms="%.4f" % step_ms, tokens_per_s=c(run.tokens / s.step_s),
                samples_per_s=c(run.items / s.step_s), mem_current_bytes=c(mem_cur, "%d"),
                mem_peak_bytes=c(mem_pk, "%d"))


# ----------------------------------------------------------------- the loop --

class Progress:
    """What the steps so far measured: the summary row's numbers and how the run ended."""

    def __init__(self):
        self.steps_done = 0
        self.times = []  # each step's time, ms
        self.status, self.why, self.signal_seen = "completed", "", 0
        self.skipped_total, self.consecutive_skips = 0, 0
        self.last_loss = self.eval_loss = self.eval_acc = float("nan")
        self.eval_step = 0
        self.stats_sum, self.stats_n = [0.0] * len(CENSUS_COLUMNS), 0
        self.mem_peak = 0

    def add_step(self, s):
        self.times.append(s.step_s * 1e3)
        self.skipped_total += s.skipped
        self.consecutive_skips = self.consecutive_skips + 1 if s.skipped else 0
        self.last_loss = s.loss

    def add_census(self, census_cols):
        if census_cols:
            self.stats_sum = [total + census_cols[name] for total, name in zip(self.stats_sum, CENSUS_COLUMNS)]
            self.stats_n += 1


def should_stop(run, s, progress, log):
    """After a logged step: True where the run ends here (diverged, or --stop-after), with
    progress.status and .why set; a non-finite loss in fp32 ends the process (exit 1)."""
    a, step = run.a, s.step
    if s.nonfinite:
        if a.mode == "fp32":
            log.close()
            fatal("non-finite loss (%g) at step %d in fp32 mode" % (s.loss, step))
        if not run.scaled:
            progress.status = "diverged"
            progress.why = "the loss became %g at step %d (no loss scaler to skip the step)" % (s.loss, step)
            return True
    if progress.consecutive_skips >= MAX_CONSECUTIVE_SKIPS:
        progress.status = "diverged"
        progress.why = "%d consecutive steps skipped for inf/NaN (last at step %d, scale %g)" % (
            progress.consecutive_skips, step, run.scaler.get_scale())
        return True
    if a.stop_after is not None and step == a.stop_after:
        progress.status = "stopped"
        return True
    return False


def train(run, log, record):
    """The step loop: each step run, its census and evaluation taken, its row logged, until the
    last step, a divergence, --stop-after or a signal. Returns the Progress."""
    a, steps = run.a, run.steps
    progress = Progress()
    tty = sys.stderr.isatty()
    step = 0
    for step in range(1, steps + 1):
        if stop_signal:
            progress.status, progress.signal_seen = "interrupted", stop_signal
            step -= 1
            break
        s = one_step(run, step, record)
        progress.add_step(s)
        census_cols = census_fractions(run, s)
        progress.add_census(census_cols)
        ev_loss = ev_acc = float("nan")
        if not s.nonfinite and (step % a.eval_every == 0 or step == steps):
            ev_loss, ev_acc = evaluate(run)
            progress.eval_loss, progress.eval_acc, progress.eval_step = ev_loss, ev_acc, step
        mem_cur = mem_pk = None
        if run.device == "cuda":
            mem_cur, mem_pk = run.torch.cuda.memory_allocated(run.dev), run.torch.cuda.max_memory_allocated(run.dev)
            progress.mem_peak = max(progress.mem_peak, mem_pk)
        log.row(step_row(run, s, census_cols, ev_loss, ev_acc, mem_cur, mem_pk))
        if tty:
            sys.stderr.write("\r%s %s step %d/%d  loss %.4f  scale %g%s  %.1f ms/step\033[K" % (
                a.name, a.mode, step, steps, s.loss, s.scale, " (skipped)" if s.skipped else "", s.step_s * 1e3))
            sys.stderr.flush()
        if should_stop(run, s, progress, log):
            break
    if tty:
        sys.stderr.write("\n")
    if progress.status == "completed" and stop_signal and step < steps:
        progress.status, progress.signal_seen = "interrupted", stop_signal
    progress.steps_done = step
    return progress


# ------------------------------------------------------------------ results --

def median_step_ms(run, progress):
    """(median, minimum, timed steps) of the step times, the first --warmup steps left out."""
    times, warmup = progress.times, run.a.warmup
    timed = times[warmup:] if warmup < len(times) else times
    med = float(np.median(timed)) if timed else float("nan")
    return med, (min(timed) if timed else float("nan")), len(timed)


def summary_row(run, progress, t_start, load_start):
    """The summary's row, by column name (SUMMARY_HEADER): halflab-train's columns, empty where torch
    has no such count (the optimizer's absorbed updates, the cast cache, a seed, the init gain)."""
    a, inputs, device, c = run.a, run.inputs, run.device, hlfiles.cell
    med, tmin, timed_steps = median_step_ms(run, progress)
    numel = sum(p.numel() for p in run.params)
    means = {name: c(s / progress.stats_n if progress.stats_n else float("nan"))
             for name, s in zip(CENSUS_COLUMNS, progress.stats_sum)}
    return dict(name=a.name, mode=a.mode, model="gpt", task="exported", device=device, status=progress.status,
                steps=str(run.steps), steps_done=str(progress.steps_done), skipped=str(progress.skipped_total),
                final_loss=c(progress.last_loss), eval_step=str(progress.eval_step), eval_loss=c(progress.eval_loss),
                eval_acc=c(progress.eval_acc), final_scale=c(run.scale()), **means,
                absorbed_frac="", fp16_absorbed_frac="",
                step_time_ms_median=c(med), step_time_ms_min=c(tmin), timed_steps=str(timed_steps),
                tokens_per_s=c(run.tokens / (med / 1e3)), samples_per_s=c(run.items / (med / 1e3)),
                mem_peak_bytes=str(progress.mem_peak) if device == "cuda" else "",
                param_bytes=str(numel * 4), params=str(numel), layers=str(inputs.layers), heads=str(a.heads),
                embd=str(inputs.embd), vocab=str(inputs.vocab), seq=str(run.T), batch=str(run.rows),
                accum=str(run.accum), optimizer=a.optimizer, lr="%.9g" % a.lr, schedule=a.schedule, init_gain="",
                init_scale=c(a.init_scale) if run.scaled else "", seed="",
                threads=str(run.threads if device == "cpu" else 0),
                omp_wait_policy=run.policy if run.policy else "default", load_start=c(load_start),
                load_end=c(hlfiles.load_average()), wall_s="%.3f" % (time.perf_counter() - t_start),
                # halflab's cast-cache counts: not torch's
                autocast_casts="", autocast_cache_misses="", autocast_cache_hits="", autocast_cache_hit_rate="",
                # one process: nothing all-reduced
                ranks="1", allreduce_dtype="", bucket_mb="", allreduce_buckets="", allreduce_bytes="",
                allreduce_ms_median="", allreduce_exposed_ms_median="")


def print_result(run, progress):
    """halflab-train's result line, under the same column names; the reason on stderr where the
    run diverged or was stopped by a signal. Returns the exit status."""
    a = run.a
    med = median_step_ms(run, progress)[0]
    print("%-10s %-13s %10s %10s %10s %9s %8s %19s  %s" % ("name", "mode", "steps_done", "final_loss", "eval_loss",
                                                           "eval_acc", "skipped", "step_time_ms_median", "status"))
    print("%-10s %-13s %10d %10.4f %10.4f %9.4f %8d %19.3f  %s" % (
        a.name, "pytorch-" + a.mode, progress.steps_done, progress.last_loss, progress.eval_loss, progress.eval_acc,
        progress.skipped_total, med, progress.status))
    sys.stdout.flush()
    if progress.status == "diverged":
        sys.stderr.write("%s: %s diverged: %s\n" % (PROG, a.mode, progress.why))
    if progress.status == "interrupted":
        sys.stderr.write("%s: stopped by signal %d after step %d; the CSVs hold every completed step\n" %
                         (PROG, progress.signal_seen, progress.steps_done))
        return 128 + progress.signal_seen
    return 0


def print_version():
    torch = import_torch()
    print("%s: pytorch %s, numpy %s, halflab %s (%s)" % ((PROG, torch.__version__, np.__version__) +
                                                         hlfiles.halflab_version()))
    return 0


def main(argv):
    a = parse_args(argv)
    if a.version:
        return print_version()
    t_start = time.perf_counter()
    load_start = hlfiles.load_average()
    inputs = check_inputs(a)
    torch = import_torch()  # after the checks: a bad command line is refused fast
    run = Run(torch, a, inputs)
    meta = run_metadata(run)
    base = os.path.join(a.out, "peer_%s_%s" % (a.name, a.mode))
    log = hlfiles.LogCSV(base + "_steps.csv", meta, STEP_HEADER)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    record = hlfiles.Record()
    progress = train(run, log, record)
    log.close()
    row = summary_row(run, progress, t_start, load_start)
    if progress.why:
        meta.set("why", progress.why)
    meta.set("rows", "this run")
    hlfiles.write_table(base + "_summary.csv", meta, SUMMARY_HEADER, [row])
    if a.record:
        record.write(a.record)
    return print_result(run, progress)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
