#!/usr/bin/env python3
"""csv_strict.py — reads every *.csv under the folders given as a strict RFC 4180 reader would.

Each file must be UTF-8 (a byte order mark and CRLF allowed with --tolerant, as another system may
leave them), open with "# " metadata lines only (none bare, none blank), then a header and rows of
the header's number of cells, quoted cells allowed. One line per failing file; exit status 1 if any.

Usage: csv_strict.py [--tolerant] FOLDER...
"""
import csv
import io
import os
import sys


def check(path, tolerant):
    raw = open(path, "rb").read()
    if tolerant and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    text = raw.decode("utf-8")  # strict: invalid UTF-8 fails
    lines = text.split("\r\n" if tolerant and "\r\n" in text else "\n")
    if lines and lines[-1] == "":
        lines.pop()
    at = 0
    while at < len(lines) and lines[at].startswith("#"):
        if not lines[at].startswith("# "):
            return "metadata line %d is not '# ...': %r" % (at + 1, lines[at][:60])
        at += 1
    rows = list(csv.reader(io.StringIO("\n".join(lines[at:]) + "\n"), strict=True))
    if not rows:
        return "no header"
    for k, row in enumerate(rows[1:], start=at + 2):
        if len(row) != len(rows[0]):
            return "line %d has %d cells, its header %d: %r" % (k, len(row), len(rows[0]), row[:3])
        if any(cell.startswith("#") for cell in row[:1]):
            return "line %d: a '#' line after the header" % k
    return None


def main():
    args = sys.argv[1:]
    tolerant = bool(args) and args[0] == "--tolerant"
    folders = args[1:] if tolerant else args
    if not folders:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    bad = 0
    for folder in folders:
        for root, _, files in os.walk(folder):
            for name in sorted(files):
                if name.endswith(".csv"):
                    path = os.path.join(root, name)
                    try:
                        why = check(path, tolerant)
                    except (UnicodeDecodeError, csv.Error) as e:
                        why = str(e)
                    if why:
                        print("%r: %s" % (path, why))
                        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
