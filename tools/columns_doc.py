#!/usr/bin/env python3
"""columns_doc.py — docs/columns.md from the column tables that write the CSVs.

  columns_doc.py --write BUILD   rewrite the generated part of docs/columns.md
  columns_doc.py --check BUILD   exit 1 (and say which file's section) when it is stale

The page keeps its hand-written head (conventions, changelog) above the line
MARKER; below it, each program's `--columns-md` output in a fixed order:
halflab-numerics, halflab-bench, halflab-train, then the PyTorch peer's
step_times.py (plain Python: it prints its tables without importing torch).
A program that is not built stops the script (exit 2): a partial page is never
written.
"""
import os
import subprocess
import sys

MARKER = "<!-- Generated below by tools/columns_doc.py from the programs' column tables: do not edit. -->"


def generated(build, root):
    parts = []
    for program in ("numerics/halflab-numerics", "bench/halflab-bench", "train/halflab-train"):
        path = os.path.join(build, program)
        if not os.access(path, os.X_OK):
            print(f"columns_doc: {path} is not built", file=sys.stderr)
            sys.exit(2)
        parts.append(subprocess.run([path, "--columns-md"], check=True, capture_output=True, text=True).stdout)
    peer = os.path.join(root, "bench", "peers", "step_times.py")
    parts.append(subprocess.run([sys.executable, peer, "--columns-md"], check=True, capture_output=True,
                                text=True).stdout)
    body = "".join(p.rstrip("\n") + "\n\n" for p in parts).rstrip("\n") + "\n"
    # an index of the files, linked to their sections (GitHub's anchors: lower case, dots dropped)
    files = [line[3:] for line in body.split("\n") if line.startswith("## ")]
    index = "Files: " + " · ".join("[%s](#%s)" % (f, f.lower().replace(".", "")) for f in files)
    return index + "\n\n" + body


def main(argv):
    if len(argv) != 2 or argv[0] not in ("--write", "--check"):
        print("usage: tools/columns_doc.py --write|--check BUILD", file=sys.stderr)
        return 2
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    page = os.path.join(root, "docs", "columns.md")
    text = open(page, encoding="utf-8").read()
    if MARKER not in text:
        print(f"columns_doc: {page} lacks the line {MARKER}", file=sys.stderr)
        return 2
    head = text.split(MARKER, 1)[0]
    fresh = head + MARKER + "\n\n" + generated(argv[1], root)
    if argv[0] == "--write":
        if fresh != text:
            with open(page + ".tmp", "w", encoding="utf-8") as f:
                f.write(fresh)
            os.replace(page + ".tmp", page)
        return 0
    if fresh == text:
        print("columns_doc: docs/columns.md matches the programs' column tables")
        return 0
    old = text.split(MARKER, 1)[1].split("\n## ")
    new = fresh.split(MARKER, 1)[1].split("\n## ")
    stale = sorted({s.split("\n", 1)[0] for s in set(old) ^ set(new) if s.strip()})
    print("columns_doc: docs/columns.md is stale; run tools/columns_doc.py --write BUILD. Sections that differ: "
          + ", ".join(stale))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
