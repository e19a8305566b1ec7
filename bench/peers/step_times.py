#!/usr/bin/env python3
"""step_times.py — halflab vs PyTorch step times from one comparison run.

    step_times.py --runs DIR --out FILE --preset NAME [--warmup N] [--load-before L --load-after L] [--note TEXT]

Reads, in DIR, halflab-train's train_NAME_MODE_{steps,summary}.csv and the
peer's peer_NAME_MODE_{steps,summary}.csv (NAME = peers-POLICY, as
compare_cpu.sh and gpu_compare.sh name their runs), and writes FILE
(peer_step_times.csv): one row per implementation, mode and OMP_WAIT_POLICY
with the minimum, median and maximum step time over the steps after the
warm-up, computed the same way for both sides from their per-step rows, and
the tokens per second at the median; --preset names the halflab-train preset
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

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hlfiles  # noqa: E402

HEADER = ("impl,device,preset,mode,omp_wait_policy,threads,tokens_per_step,steps,timed_steps,step_ms_min,step_ms_median,"
          "step_ms_max,tokens_per_s,final_loss,eval_loss,load_start,load_end,run,attention")
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


def main(argv):
    p = argparse.ArgumentParser(prog="step_times", description=__doc__.split("\n")[0])
    p.add_argument("--runs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--preset", required=True, help="the halflab-train preset of the runs (tiny, small, gpt2)")
    p.add_argument("--warmup", type=int, default=None, help="steps left out (default: each summary's own count)")
    p.add_argument("--load-before", default="")
    p.add_argument("--load-after", default="")
    p.add_argument("--note", default="")
    a = p.parse_args(argv)

    rows, devices, torch_version, carried = [], {}, "", {}
    for path in sorted(glob.glob(os.path.join(a.runs, "*_peers-*_steps.csv"))):
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
        warm = a.warmup if a.warmup is not None else int(s["steps_done"]) - int(s["timed_steps"])
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
        for key, who, out_key in CARRIED:
            if who == impl and meta_value(meta, key):
                carried.setdefault(out_key, meta_value(meta, key))
        policy = s["omp_wait_policy"] if s["device"] == "cpu" else "-"
        # "sdpa: torch.nn...." -> "sdpa"; the peer wrote no such line before it had --attention
        attention = (meta_value(meta, "attention").split(":", 1)[0] or "exact") if impl == "pytorch" else "exact"
        rows.append(dict(impl=impl, device=s["device"], preset=a.preset, mode=s["mode"], omp_wait_policy=policy,
                         threads=s["threads"], tokens_per_step="%d" % tokens, steps=s["steps_done"],
                         timed_steps=str(len(timed)), step_ms_min="%.4f" % timed.min(),
                         step_ms_median="%.4f" % med, step_ms_max="%.4f" % timed.max(),
                         tokens_per_s="%.6g" % (tokens / (med / 1e3)), final_loss=s["final_loss"],
                         eval_loss=s["eval_loss"], load_start=s["load_start"], load_end=s["load_end"],
                         run=m.group(2), attention=attention))
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
    hlfiles.write_table(a.out, meta, HEADER, [[r[c] for c in HEADER.split(",")] for r in rows])

    print("%-8s %-5s %-9s %-8s %7s %10s %10s %10s %12s  %s" % ("impl", "dev", "mode", "policy", "threads", "min_ms",
                                                                "median_ms", "max_ms", "tokens/s", "attention"))
    for r in rows:
        print("%-8s %-5s %-9s %-8s %7s %10s %10s %10s %12s  %s" % (
            r["impl"], r["device"], r["mode"], r["omp_wait_policy"], r["threads"], r["step_ms_min"],
            r["step_ms_median"], r["step_ms_max"], r["tokens_per_s"], r["attention"]))
    med = {(r["impl"], r["device"], r["mode"], r["omp_wait_policy"]): float(r["step_ms_median"]) for r in rows}
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
