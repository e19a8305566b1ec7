#!/usr/bin/env python3
"""same_results.py — for a change meant to leave every number alone.

  same_results.py --builds BUILD_BEFORE BUILD_AFTER   run both builds, then compare
  same_results.py --dirs DIR_BEFORE DIR_AFTER         compare CSVs already written

The runs: the tiny GPT preset in all seven modes and an MLP run
(halflab-train), `halflab-numerics all` and `halflab-bench gemm --accuracy
--quick`, each build with two OpenMP threads so that reductions split the same
way.

The comparison is cell for cell, by column name. A column renamed on purpose
is followed through tools/column_renames/*.txt (lines `FILE OLD NEW`; FILE may
be a pattern such as train_RUN_MODE_steps.csv, RUN and MODE matching any
text; `value FILE COLUMN OLD NEW` for a value spelled differently). Metadata lines ('# ') are left out, and so are
the columns that repeat them (train_summary.csv's version and date) and those that
measure time, rates or the machine's load, which no two runs share. Two cells
agree when their text is equal or both are numbers of equal value (1.50 and
1.5). A gap written differently (before 0, -nan or nan where the quantity
does not apply, after an empty cell), and a NaN result once written as a gap
(before empty, after nan), are counted apart and listed per column, so that a
reader can judge each; anything else is a difference.

Prints one line per file and a total; exit 0 when no cell differs, 1 when
any does, 2 on bad usage.
"""
import csv
import fnmatch
import glob
import math
import os
import re
import subprocess
import sys
import tempfile

from rename_columns import read_renames  # the one reader of tools/column_renames/

MEASURED = re.compile(
    r"^(version|date|step_time_ms.*|step_ms.*|.*_per_s(_.*)?|tokens_per_s.*|samples_per_s.*|load_start|load_end|wall_s|"
    r".*time_ms.*|.*_ms_(median|p\d+|min|max|mean)|tflops.*|gbps.*|gelems.*|.*rss.*|mem_free.*|.*clock_mhz.*)$")
GAPS = {"", "nan", "-nan", "0"}


def read_csv(path):
    # utf-8-sig: a byte order mark another system added is not part of the first line; csv takes CRLF
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith("#"))]
    return (rows[0], rows[1:]) if rows else ([], [])


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def same_cell(a, b):
    if a == b:
        return True
    x, y = number(a), number(b)
    if x is None or y is None:
        return False
    return (math.isnan(x) and math.isnan(y)) or x == y


def compare_file(name, before, after, renames, values, gaps):
    header_b, rows_b = read_csv(before)
    header_a, rows_a = read_csv(after)
    renamed = {old: new for pattern, old, new in renames if fnmatch.fnmatch(name, pattern)}
    respelled = {}
    for pattern, column, old, new in values:
        if fnmatch.fnmatch(name, pattern):
            respelled[(column, old)] = new
    header_b = [renamed.get(c, c) for c in header_b]
    problems = []
    if len(rows_b) != len(rows_a):
        problems.append(f"{len(rows_b)} rows before, {len(rows_a)} after")
    compared = [c for c in header_b if c in header_a and not MEASURED.match(c)]
    missing = [c for c in header_b if c not in header_a]
    added = [c for c in header_a if c not in header_b]
    if missing:
        problems.append("columns gone: " + " ".join(missing))
    differing = {}
    for i, (rb, ra) in enumerate(zip(rows_b, rows_a)):
        cb = dict(zip(header_b, rb))
        ca = dict(zip(header_a, ra))
        for c in compared:
            x, y = cb.get(c, ""), ca.get(c, "")
            x = respelled.get((c, x), x)
            if same_cell(x, y):
                continue
            if (y == "" and x in GAPS) or (x == "" and y == "nan"):
                gaps.setdefault((name, c, x, y), 0)
                gaps[(name, c, x, y)] += 1
                continue
            differing.setdefault(c, []).append((i + 1, x, y))
    for c, cells in differing.items():
        row, x, y = cells[0]
        problems.append(f"{c}: {len(cells)} cells differ (row {row}: {x!r} before, {y!r} after)")
    note = f"{len(rows_a)} rows x {len(compared)} columns compared"
    if added:
        note += "; new columns: " + " ".join(added)
    return problems, note


def run_build(build, out):
    env = dict(os.environ, OMP_NUM_THREADS="2")
    train = os.path.join(build, "train", "halflab-train")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env, "check": True}
    for mode in ["fp32", "amp-fp16", "amp-bf16", "fp16-noscale", "fp16-static", "fp16-master", "fp16-pure"]:
        subprocess.run([train, "--device", "cpu", "--preset", "tiny", "--mode", mode, "--steps", "120",
                        "--eval-every", "40", "--name", "tiny", "--out", os.path.join(out, "train")], **quiet)
    subprocess.run([train, "--device", "cpu", "--model", "mlp", "--mode", "amp-fp16", "--steps", "60", "--name",
                    "mlp", "--out", os.path.join(out, "train")], **quiet)
    subprocess.run([os.path.join(build, "numerics", "halflab-numerics"), "all", "--device", "cpu", "--out",
                    os.path.join(out, "numerics")], **quiet)
    subprocess.run([os.path.join(build, "bench", "halflab-bench"), "gemm", "--accuracy", "--quick", "--device",
                    "cpu", "--out", os.path.join(out, "gemm")], **quiet)


def csv_files(folder):
    return sorted(os.path.relpath(p, folder) for p in glob.glob(os.path.join(folder, "**", "*.csv"), recursive=True))


def main(argv):
    if len(argv) != 3 or argv[0] not in ("--builds", "--dirs"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    renames, values = read_renames(root)
    with tempfile.TemporaryDirectory() as scratch:
        if argv[0] == "--builds":
            for b in argv[1:]:
                for p in ("train/halflab-train", "numerics/halflab-numerics", "bench/halflab-bench"):
                    if not os.access(os.path.join(b, p), os.X_OK):
                        print(f"same_results: {b}/{p} is not built", file=sys.stderr)
                        return 2
            before, after = os.path.join(scratch, "before"), os.path.join(scratch, "after")
            run_build(argv[1], before)
            run_build(argv[2], after)
        else:
            before, after = argv[1], argv[2]
            for d in (before, after):
                if not os.path.isdir(d):
                    print(f"same_results: {d} is not a folder", file=sys.stderr)
                    return 2
        status, gaps = 0, {}
        files_b, files_a = csv_files(before), csv_files(after)
        for f in files_b:
            if f not in files_a:
                print(f"same_results: {f}: written before, not after")
                status = 1
                continue
            problems, note = compare_file(os.path.basename(f), os.path.join(before, f), os.path.join(after, f),
                                          renames, values, gaps)
            print(f"same_results: {f}: {'DIFFERENT: ' + '; '.join(problems) if problems else 'identical'} ({note})")
            status |= 1 if problems else 0
        for f in files_a:
            if f not in files_b:
                print(f"same_results: {f}: written after, not before")
                status = 1
        for (name, column, was, now), n in sorted(gaps.items()):
            why = "a gap, written one way" if now == "" else "a NaN result, no longer written as a gap"
            print(f"same_results: {name}: {column}: {n} cells {was!r} before, {now!r} after ({why})")
        print(f"same_results: {len(files_b)} CSV files: {'identical' if status == 0 else 'DIFFERENT'}")
        return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
