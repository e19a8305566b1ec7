#!/usr/bin/env python3
"""rename_columns.py — gives CSVs written under an older schema today's column names.

  rename_columns.py FILE_OR_FOLDER...

Follows tools/column_renames/*.txt (lines `FILE OLD NEW`; FILE may be a
pattern such as train_RUN_MODE_steps.csv, the capitalised words matching any
text). Only header names change: every cell stays as measured, and the
`# schema:` line keeps the schema the file was written with. A line
`# columns-renamed: ...` records what was renamed. A file whose header
already has today's names is left alone, so running it twice changes nothing.
Each file is rewritten through FILE.tmp and a rename, never half written.
"""
import fnmatch
import glob
import os
import re
import sys


def read_renames(root):
    renames = []
    for path in sorted(glob.glob(os.path.join(root, "tools", "column_renames", "*.txt"))):
        for line in open(path, encoding="utf-8"):
            line = line.split("#", 1)[0].strip()
            if line:
                file, old, new = line.split()
                renames.append((re.sub(r"[A-Z]+", "*", file), old, new))
    return renames


def rename_file(path, renames):
    name = os.path.basename(path)
    mapping = {old: new for pattern, old, new in renames if fnmatch.fnmatch(name, pattern)}
    if not mapping:
        return False
    lines = open(path, encoding="utf-8").read().split("\n")
    header_at = next((i for i, l in enumerate(lines) if l and not l.startswith("#")), None)
    if header_at is None:
        return False
    columns = lines[header_at].split(",")
    renamed = [(c, mapping[c]) for c in columns if c in mapping]
    if not renamed:
        return False
    lines[header_at] = ",".join(mapping.get(c, c) for c in columns)
    note = "# columns-renamed: " + ", ".join(f"{a} -> {b}" for a, b in renamed) + \
        " (by tools/rename_columns.py; cells as measured)"
    lines.insert(header_at, note)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    os.replace(path + ".tmp", path)
    return True


def main(argv):
    if not argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    renames = read_renames(root)
    paths = []
    for a in argv:
        if os.path.isdir(a):
            paths += sorted(glob.glob(os.path.join(a, "**", "*.csv"), recursive=True))
        elif os.path.isfile(a):
            paths.append(a)
        else:
            print(f"rename_columns: {a}: no such file or folder", file=sys.stderr)
            return 2
    changed = sum(rename_file(p, renames) for p in paths)
    print(f"rename_columns: {changed} of {len(paths)} files renamed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
