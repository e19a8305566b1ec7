#!/usr/bin/env python3
"""rename_columns.py — gives CSVs written under an older schema today's column names.

  rename_columns.py FILE_OR_FOLDER...

Follows tools/column_renames/*.txt (lines `FILE OLD NEW`; FILE may be a
pattern such as train_RUN_MODE_steps.csv, the capitalised words matching any
text; and lines `value FILE COLUMN OLD NEW` for a value spelled differently,
such as yes -> 1). Header names change, and those spellings: every number stays
as measured, and the
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
    """[(file pattern, old name, new name)] and [(file pattern, column, old value, new value)]."""
    renames, values = [], []
    for path in sorted(glob.glob(os.path.join(root, "tools", "column_renames", "*.txt"))):
        for line in open(path, encoding="utf-8"):
            fields = line.split("#", 1)[0].split()
            if fields[:1] == ["value"] and len(fields) == 5:
                values.append((re.sub(r"[A-Z]+", "*", fields[1]), fields[2], fields[3], fields[4]))
            elif len(fields) == 3:
                renames.append((re.sub(r"[A-Z]+", "*", fields[0]), fields[1], fields[2]))
            elif fields:
                raise SystemExit(f"{path}: not FILE OLD NEW nor value FILE COLUMN OLD NEW: {line.strip()}")
    return renames, values


def rename_file(path, renames, values):
    name = os.path.basename(path)
    mapping = {old: new for pattern, old, new in renames if fnmatch.fnmatch(name, pattern)}
    value_map = {}
    for pattern, column, old, new in values:
        if fnmatch.fnmatch(name, pattern):
            value_map.setdefault(column, {})[old] = new
    if not mapping and not value_map:
        return False
    lines = open(path, encoding="utf-8").read().split("\n")
    header_at = next((i for i, l in enumerate(lines) if l and not l.startswith("#")), None)
    if header_at is None:
        return False
    columns = lines[header_at].split(",")
    renamed = [(c, mapping[c]) for c in columns if c in mapping]
    respelled = []
    for i, c in enumerate(columns):
        table = value_map.get(mapping.get(c, c))
        if not table:
            continue
        for k in range(header_at + 1, len(lines)):
            cells = lines[k].split(",")
            if lines[k] and not lines[k].startswith("#") and i < len(cells) and cells[i] in table:
                cells[i] = table[cells[i]]
                lines[k] = ",".join(cells)
                if mapping.get(c, c) not in respelled:
                    respelled.append(mapping.get(c, c))
    if not renamed and not respelled:
        return False
    lines[header_at] = ",".join(mapping.get(c, c) for c in columns)
    note = "# columns-renamed: " + (", ".join(f"{a} -> {b}" for a, b in renamed) or "none")
    if respelled:
        note += "; values respelled in " + ", ".join(respelled)
    lines.insert(header_at, note + " (by tools/rename_columns.py; numbers as measured)")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    os.replace(path + ".tmp", path)
    return True


def main(argv):
    if not argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    renames, values = read_renames(root)
    paths = []
    for a in argv:
        if os.path.isdir(a):
            paths += sorted(glob.glob(os.path.join(a, "**", "*.csv"), recursive=True))
        elif os.path.isfile(a):
            paths.append(a)
        else:
            print(f"rename_columns: {a}: no such file or folder", file=sys.stderr)
            return 2
    changed = sum(rename_file(p, renames, values) for p in paths)
    print(f"rename_columns: {changed} of {len(paths)} files renamed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
