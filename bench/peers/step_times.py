#!/usr/bin/env python3
"""step_times.py — halflab vs PyTorch step times from one comparison run.

    step_times.py --runs DIR --out FILE --preset NAME [--expectations FILE] [--warmup N] [--load-before L --load-after L]
                  [--note TEXT]
    step_times.py --columns-md


Reads, in DIR, halflab-train's train_NAME_MODE_{steps,summary}.csv and the
peer's peer_NAME_MODE_{steps,summary}.csv (NAME = peers-POLICY, as
compare_cpu.sh and gpu_compare.sh name their runs; NAME = peers-POLICY-rN
for round N of several), and writes FILE (peer_step_times.csv): one row per
implementation, mode and OMP_WAIT_POLICY with the minimum, median and
maximum step time over the steps after the warm-up, computed the same way
for both sides from their per-step rows, and the tokens per second at the
median. Over several rounds the median is the median of the rounds' own
medians (column run_medians_ms lists them; min and max are over every timed
step); --expectations FILE writes the CPU expectations (peer_expectations.csv:
halflab's amp-bf16 and amp-fp16 steps against its fp32 step and against
PyTorch's, per policy, each ratio between bounds with its physical or peer
reason; an expectation whose path did not run is SKIP with why); --preset names the halflab-train preset
the runs used (the preset column), and the attention column the form of the
attention each row timed: the peer's --attention (sdpa or exact, from its
"# attention:" line; a peer CSV without one ran the exact form, its only form
then), and exact for halflab, whose attention is written out (the peer's exact
form is its arithmetic). The metadata keeps what each side computed
with: halflab's cpu-features and blas lines, torch's torch_* lines and the
peer's attention line. Prints the
table and the ratios (PyTorch median / halflab median: above 1 means halflab
is faster; and, where both exist, amp-bf16 / fp32 and amp-fp16 / fp32 per
implementation). Standard library and numpy only: the peer's Python runs it.
"""
import argparse
import glob
import os
import re
import sys

try:
    import numpy as np
except ImportError:  # --columns-md needs no numpy; reading runs does
    np = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hlfiles  # noqa: E402

C, INT, REAL, TEXT = hlfiles.Column, hlfiles.INT, hlfiles.REAL, hlfiles.TEXT
HERE = "bench/peers/step_times.py: "
STEP_TIMES = hlfiles.Schema(
    "peer_step_times.csv", "bench/peers/step_times.py", HERE + "main",
    "One row per implementation (halflab, pytorch), device, mode and OMP_WAIT_POLICY: step times over the steps "
    "after the warm-up, from each side's per-step rows, over every round of the run.", [
        C("impl", "", TEXT, None, "halflab or pytorch", HERE + "read_runs"),
        C("device", "", TEXT, None, "cpu or cuda", HERE + "read_runs"),
        C("preset", "", TEXT, None, "the halflab-train preset the runs used (--preset)", HERE + "main"),
        C("mode", "", TEXT, None, "the precision mode", HERE + "read_runs"),
        C("omp_wait_policy", "", TEXT, None, "OMP_WAIT_POLICY of the CPU runs; - on a GPU", HERE + "read_runs"),
        C("threads", "1", INT, None, "threads the run used", HERE + "read_runs"),
        C("tokens_per_step", "tokens", INT, None, "batch x accumulation x sequence length", HERE + "read_runs"),
        C("steps", "1", INT, None, "steps the first round ran", HERE + "read_runs"),
        C("timed_steps", "1", INT, None, "steps after the warm-up, over every round", HERE + "summarise"),
        C("step_time_ms_min", "ms", REAL, "%.4f", "the fastest timed step", HERE + "summarise"),
        C("step_time_ms_median", "ms", REAL, "%.4f", "the median of the rounds' median step times", HERE + "summarise"),
        C("step_time_ms_max", "ms", REAL, "%.4f", "the slowest timed step", HERE + "summarise"),
        C("tokens_per_s", "tokens/s", REAL, "%.6g", "tokens_per_step / step_time_ms_median", HERE + "summarise"),
        C("final_loss", "1", REAL, "%.9g", "the first round's last training loss (its summary's); empty when not "
          "recorded", HERE + "read_runs"),
        C("eval_loss", "1", REAL, "%.9g", "the first round's evaluation loss; empty when not evaluated", HERE + "read_runs"),
        C("load_start", "1", REAL, "%.9g", "the 1-minute load average when the first round started", HERE + "read_runs"),
        C("load_end", "1", REAL, "%.9g", "the 1-minute load average when the last round ended", HERE + "read_runs"),
        C("run", "", TEXT, None, "the comparison run's name (peers-POLICY), rounds folded", HERE + "read_runs"),
        C("attention", "", TEXT, None, "the attention's form: sdpa or exact (halflab: exact, its only form)",
          HERE + "read_runs"),
        C("rounds", "1", INT, None, "rounds the row is over", HERE + "summarise"),
        C("run_medians_ms", "", TEXT, None, "each round's median step time in ms, in the order they ran, ;-separated",
          HERE + "summarise"),
    ])
EXPECTATIONS_SCHEMA = hlfiles.Schema(
    "peer_expectations.csv", "bench/peers/step_times.py --expectations", HERE + "write_expectations",
    "One row per CPU expectation and OMP_WAIT_POLICY: a step-time ratio between bounds, with the physical or peer "
    "reason; PASS when low <= value <= high, SKIP where a side did not run.", [
        C("expectation", "", TEXT, None, "what the runs should show, with the policy", HERE + "write_expectations"),
        C("device", "", TEXT, None, "cpu", HERE + "write_expectations"),
        C("value", "1", REAL, "%.4f", "the first step time over the second (medians); empty for SKIP",
          HERE + "write_expectations"),
        C("low", "1", REAL, "%.4g", "the smallest value that passes; empty where nothing bounds it from below",
          HERE + "write_expectations"),
        C("high", "1", REAL, "%.4g", "the largest value that passes", HERE + "write_expectations"),
        C("status", "", TEXT, None, "PASS, MISS or SKIP", HERE + "write_expectations"),
        C("detail", "", TEXT, None, "the step times behind the value, or why the expectation was skipped",
          HERE + "write_expectations"),
        C("reason", "", TEXT, None, "why the value should lie between the bounds: the physics or the peer behind it",
          HERE + "write_expectations"),
    ])
SKIPPED = hlfiles.Schema(
    "peer_skipped.csv", "bench/peers/compare_cpu.sh", "bench/peers/compare_cpu.sh: skip",
    "One row: why the PyTorch comparison did not run (earlier measurements are kept).", [
        C("reason", "", TEXT, None, "why the comparison was skipped", "bench/peers/compare_cpu.sh: skip"),
    ])
SCHEMAS = (STEP_TIMES, EXPECTATIONS_SCHEMA, SKIPPED)
# metadata lines carried over from the runs' CSVs: (key in the run's CSV, implementation, key written)
CARRIED = (("cpu-features", "halflab", "cpu-features"), ("blas", "halflab", "halflab_blas"),
           ("torch_blas", "pytorch", "torch_blas"), ("torch_onednn", "pytorch", "torch_onednn"),
           ("torch_cpu_capability", "pytorch", "torch_cpu_capability"), ("attention", "pytorch", "peer_attention"))
# halflab's attention, as the metadata says it
HALFLAB_ATTENTION = "exact: scores, explicit causal mask, fp32 softmax (its only form)"


def meta_value(meta, key):
    for line in meta:
        if line.startswith("# %s: " % key):
            return line[len(key) + 4:]
    return ""


# The CPU expectations: (name, numerator, denominator, low, high, reason); each side is (impl, mode); a low
# of None bounds nothing. Reasons are one CSV cell each: no commas.
BF16_UNITS_LOW = 0.5  # bf16 dot products at twice fp32's FMA rate: no part of the step runs more than twice as fast
EXPECTATIONS = (
    ("amp-bf16 step at most 0.6x halflab's fp32 step", ("halflab", "amp-bf16"), ("halflab", "fp32"), BF16_UNITS_LOW, 0.6,
     "bf16 products run on the CPU's bf16 dot products at twice fp32's FMA rate and are most of the step: the step "
     "should take at most 0.6x fp32's; with AVX512-BF16 (no AMX) no part runs more than twice as fast: below 0.5x "
     "the fp32 run was disturbed"),
    ("amp-bf16 step at most 1.0x PyTorch's amp-bf16 step", ("halflab", "amp-bf16"), ("pytorch", "amp-bf16"), None, 1.0,
     "PyTorch runs the same model's bf16 products through oneDNN on the same units and the same threads: halflab "
     "should be no slower"),
    ("fp32 step at most 1.0x PyTorch's fp32 step", ("halflab", "fp32"), ("pytorch", "fp32"), None, 1.0,
     "PyTorch runs the same model's fp32 products on its own BLAS (torch_blas) with the same threads: halflab on "
     "OpenBLAS should be no slower"),
    ("amp-fp16 step 0.9x to 1.1x halflab's fp32 step", ("halflab", "amp-fp16"), ("halflab", "fp32"), 0.9, 1.1,
     "the CPU has no fp16 product halflab uses: amp-fp16 widens to fp32 for the same sgemm and adds conversions; "
     "below 0.9x the fp32 run was disturbed; above 1.1x the conversions cost more than they should"),
    ("amp-fp16 step at most 1.0x PyTorch's amp-fp16 step", ("halflab", "amp-fp16"), ("pytorch", "amp-fp16"), None, 1.0,
     "PyTorch's CPU fp16 products take a slow path where the CPU multiplies no fp16: halflab's widening to sgemm "
     "should be no slower"))


def expectation_row(name, value, low, high, status, detail, reason):
    return dict(expectation=name, device="cpu", value=value, low=low, high=high, status=status, detail=detail,
                reason=reason)


def write_expectations(path, meta, rows, onednn_line):
    """peer_expectations.csv: each expectation per OMP_WAIT_POLICY of the CPU rows."""
    med = {(r["impl"], r["mode"], r["omp_wait_policy"]): r for r in rows if r["device"] == "cpu"}
    policies = sorted({r["omp_wait_policy"] for r in rows if r["device"] == "cpu"})
    # halflab's bf16 products ran on the CPU's bf16 units only where its oneDNN line says so; on AMX tiles
    # they can run many times fp32's rate, and no lower bound applies
    bf16_units = "bf16 GEMMs on its matmul" in onednn_line
    amx = "amx" in onednn_line.lower()
    out = []
    for name, num, den, low, high, reason in EXPECTATIONS:
        if low == BF16_UNITS_LOW and amx:
            low, reason = None, reason.split("; with AVX512-BF16")[0] + " (AMX tiles: no lower bound)"
        for pol in policies:
            label = "%s (%s)" % (name, pol)
            a, b = med.get(num + (pol,)), med.get(den + (pol,))
            if "amp-bf16" in (num[1], den[1]) and not bf16_units:
                out.append(expectation_row(label, None, low, high, "SKIP", "bf16 products did not run on the CPU's bf16 "
                                           "units (%s): nothing expected of that path"
                                           % (onednn_line or "no # onednn: line").replace(",", ";"), reason))  # one CSV cell
                continue
            if not a or not b:
                missing = "%s %s" % (num if not a else den)
                out.append(expectation_row(label, None, low, high, "SKIP", "no %s run under %s" % (missing, pol), reason))
                continue
            ratio = float(a["step_time_ms_median"]) / float(b["step_time_ms_median"])
            detail = "%s %s %.1f ms / %s %s %.1f ms (medians of %s and %s rounds)" % (
                num[0], num[1], float(a["step_time_ms_median"]), den[0], den[1], float(b["step_time_ms_median"]), a["rounds"],
                b["rounds"])
            if den[0] == "pytorch":
                detail += "; PyTorch's attention: %s" % b["attention"]
            passed = (low is None or ratio >= low) and ratio <= high
            out.append(expectation_row(label, ratio, low, high, "PASS" if passed else "MISS", detail, reason))
    meta.set("expectations", "value = the first step time over the second (medians); PASS when low <= value <= high")
    EXPECTATIONS_SCHEMA.write(path, meta, out)
    for r in out:
        print("%-4s  %s: %s" % (r["status"], r["expectation"], r["detail"]))


def read_runs(runs_dir, warmup):
    """Every comparison run in runs_dir with its summary: (runs, devices, torch version, carried metadata,
    halflab's oneDNN line)."""
    runs, devices, torch_version, carried, onednn_line = [], {}, "", {}, ""
    for path in sorted(glob.glob(os.path.join(runs_dir, "*_peers-*_steps.csv"))):
        base = os.path.basename(path)
        m = re.match(r"^(train|peer)_(peers-[A-Za-z0-9.-]+?)_(fp32|amp-bf16|amp-fp16|fp16-[a-z]+)_steps\.csv$", base)
        if not m:
            continue
        impl = "halflab" if m.group(1) == "train" else "pytorch"
        meta, _, steps = hlfiles.read_csv(path)
        summary_path = path[: -len("_steps.csv")] + "_summary.csv"
        if not os.path.exists(summary_path):
            print("step_times: %s has no summary (an interrupted run?): left out" % base, file=sys.stderr)
            continue
        smeta, _, summ = hlfiles.read_csv(summary_path)
        s = summ[0]
        warm = warmup if warmup is not None else int(s["steps_done"]) - int(s["timed_steps"])
        t = np.array([float(r["step_time_ms"]) for r in steps if r["step_time_ms"]])
        timed = t[warm:] if warm < len(t) else t
        if len(timed) == 0:
            continue
        tokens = float(s["batch"]) * float(s["accum"]) * float(s["seq"])
        med = float(np.median(timed))
        dev = meta_value(meta, "device")
        devices.setdefault(impl, dev)
        if impl == "pytorch":
            torch_version = meta_value(meta, "halflab-peer")
        elif meta_value(meta, "onednn"):
            onednn_line = meta_value(meta, "onednn")
        for key, who, out_key in CARRIED:
            if who == impl and meta_value(meta, key):
                carried.setdefault(out_key, meta_value(meta, key))
        policy = s["omp_wait_policy"] if s["device"] == "cpu" else "-"
        # "sdpa: torch.nn...." -> "sdpa"; the peer wrote no such line before it had --attention
        attention = (meta_value(meta, "attention").split(":", 1)[0] or "exact") if impl == "pytorch" else "exact"
        runs.append(dict(impl=impl, device=s["device"], mode=s["mode"], omp_wait_policy=policy, threads=s["threads"],
                         tokens=tokens, steps=s["steps_done"], timed=timed, median=med, final_loss=s["final_loss"],
                         eval_loss=s["eval_loss"], load_start=s["load_start"], load_end=s["load_end"],
                         run=re.sub(r"-r[0-9]+$", "", m.group(2)), round=m.group(2), attention=attention))
    return runs, devices, torch_version, carried, onednn_line


def summarise(runs, preset):
    """One row of peer_step_times.csv ({column: value}) per implementation, device, mode and policy, over its
    rounds (in the order they ran)."""
    groups = {}
    for r in sorted(runs, key=lambda r: r["round"]):
        groups.setdefault((r["impl"], r["device"], r["mode"], r["omp_wait_policy"], r["run"]), []).append(r)
    rows = []
    for (impl, device, mode, policy, run), g in groups.items():
        medians = [r["median"] for r in g]
        med = float(np.median(medians))
        timed = np.concatenate([r["timed"] for r in g])
        first, last = g[0], g[-1]
        # step times as written (%.4f): the expectations' ratios are those of the file's medians
        rows.append(dict(impl=impl, device=device, preset=preset, mode=mode, omp_wait_policy=policy,
                         threads=int(first["threads"]), tokens_per_step=int(first["tokens"]), steps=int(first["steps"]),
                         timed_steps=len(timed), step_time_ms_min=float("%.4f" % timed.min()),
                         step_time_ms_median=float("%.4f" % med), step_time_ms_max=float("%.4f" % timed.max()),
                         tokens_per_s=first["tokens"] / (med / 1e3),
                         final_loss=first["final_loss"], eval_loss=first["eval_loss"],
                         load_start=first["load_start"], load_end=last["load_end"], run=run,
                         attention=first["attention"], rounds=len(g),
                         run_medians_ms=";".join("%.1f" % x for x in medians)))
    return rows


def main(argv):
    if argv == ["--columns-md"]:
        for schema in SCHEMAS:
            sys.stdout.write(schema.markdown())
        return 0
    p = argparse.ArgumentParser(prog="step_times", description=__doc__.split("\n")[0])
    p.add_argument("--columns-md", action="store_true",
                   help="print the columns of every CSV this script writes as Markdown, and nothing else")
    p.add_argument("--runs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--preset", required=True, help="the halflab-train preset of the runs (tiny, small, gpt2)")
    p.add_argument("--warmup", type=int, default=None, help="steps left out (default: each summary's own count)")
    p.add_argument("--load-before", default="")
    p.add_argument("--load-after", default="")
    p.add_argument("--note", default="")
    p.add_argument("--expectations", default=None, help="also write the CPU expectations to this file")
    a = p.parse_args(argv)
    if a.columns_md:
        p.error("--columns-md takes no other option")
    if np is None:
        p.error("numpy is not installed (the peer's Python has it: scripts/peer-python.sh)")

    runs, devices, torch_version, carried, onednn_line = read_runs(a.runs, a.warmup)
    rows = summarise(runs, a.preset)
    if not rows:
        print("step_times: no comparison runs in %s" % a.runs, file=sys.stderr)
        return 1
    order = {"halflab": 0, "pytorch": 1}
    modes = {"fp32": 0, "amp-bf16": 1, "amp-fp16": 2}
    rows.sort(key=lambda r: (r["device"], modes.get(r["mode"], 9), r["omp_wait_policy"], order[r["impl"]]))

    meta = hlfiles.Meta("; ".join("%s: %s" % kv for kv in sorted(devices.items())), argv=["step_times.py"] + argv)
    meta.set("peer", torch_version or "no PyTorch run")
    meta.set("halflab_attention", HALFLAB_ATTENTION)
    for _, _, out_key in CARRIED:
        if out_key in carried:
            meta.set(out_key, carried[out_key])
    meta.set("method", "per implementation the same statistics of its own per-step step_time_ms (batch upload to the "
                       "end of the update, device synchronised), over the steps after the warm-up")
    if a.load_before or a.load_after:
        meta.set("load", "before: %s; after: %s" % (a.load_before, a.load_after))
    if a.note:
        meta.set("note", a.note)
    STEP_TIMES.write(a.out, meta, rows)
    if a.expectations:
        write_expectations(a.expectations, meta, rows, onednn_line)

    print("%-8s %-5s %-9s %-8s %7s %12s %14s %12s %12s  %s" % ("impl", "dev", "mode", "policy", "threads",
                                                                "step_time_ms_min", "step_time_ms_median", "step_time_ms_max",
                                                                "tokens_per_s", "attention"))
    for r in rows:
        print("%-8s %-5s %-9s %-8s %7d %12.4f %14.4f %12.4f %12.6g  %s" % (
            r["impl"], r["device"], r["mode"], r["omp_wait_policy"], r["threads"], r["step_time_ms_min"],
            r["step_time_ms_median"], r["step_time_ms_max"], r["tokens_per_s"], r["attention"]))
    med = {(r["impl"], r["device"], r["mode"], r["omp_wait_policy"]): float(r["step_time_ms_median"]) for r in rows}
    for (impl, dev, mode, pol), v in sorted(med.items()):
        if impl != "halflab":
            continue
        other = med.get(("pytorch", dev, mode, pol))
        if other:
            print("ratio %s %s%s: PyTorch / halflab median step time = %.3f (%s)" % (
                dev, mode, "" if pol == "-" else " " + pol, other / v,
                "halflab faster" if other > v else "halflab slower" if other < v else "equal"))
    for impl, dev, mode, pol in sorted(med):
        f32 = med.get((impl, dev, "fp32", pol))
        if mode != "fp32" and f32:
            print("ratio %s %s%s: %s / fp32 median step time = %.3f" % (impl, dev, "" if pol == "-" else " " + pol, mode,
                                                                      med[(impl, dev, mode, pol)] / f32))
    print("step_times: wrote %s" % a.out, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
