#!/usr/bin/env python3
"""hlfiles_text.py — the PyTorch peer's CSV writer and reader (bench/peers/hlfiles.py) treat text as
halflab-train does (cli/csv_text.h): every metadata value one line, every text cell quoted when it
must be, and a file read back with CRLF line ends and a byte order mark as the file written.

Usage: hlfiles_text.py SOURCE_ROOT (exit 1 naming the first case that fails)
"""
import csv
import io
import os
import sys
import tempfile


def main(root):
    sys.path.insert(0, os.path.join(root, "bench", "peers"))
    import hlfiles

    cases = [("fp16", "fp16"), ("a,b", '"a,b"'), ('say "hi"', '"say ""hi"""'), ("x\ny", "x\\ny"),
             ("c\r\n,d", '"c\\r\\n,d"'), ("t\tu\x01\x7f", "t\\tu\\x01\\x7F"), ("\ufeffname", "\\xEF\\xBB\\xBFname"),
             ("bad\udcff", "bad\\xFF"), ("caf\u00e9", "caf\u00e9"), ("\x85next", "\\xC2\\x85next")]
    for value, want in cases:
        got = hlfiles.csv_cell(value)
        if got != want:
            return "csv_cell(%r) is %r, wanted %r" % (value, got, want)
    meta = hlfiles.Meta("cpu: test", argv=["peer", "--out", "dir,with\"quote\nand line\r", "\ufeff\udcff"])
    meta.set("why", "first\nsecond\r\n# forged: line")
    for line in meta.text().split("\n")[:-1]:
        if not line.startswith("# ") or any(ord(c) < 0x20 for c in line):
            return "a metadata line is bare or holds a control character: %r" % line
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.csv")
        hlfiles.write_table(path, meta, "name,note", [{"name": "a,b", "note": 'q"\n'}, {"name": "c", "note": ""}])
        body = [l for l in open(path, encoding="utf-8").read().split("\n") if l and not l.startswith("#")]
        rows = list(csv.reader(io.StringIO("\n".join(body)), strict=True))
        if [len(r) for r in rows] != [2, 2, 2] or rows[1] != ["a,b", 'q"\\n']:
            return "the table reads back as %r" % rows
        # the committed step log, with CRLF and a byte order mark, reads as the file written
        src = os.path.join(root, "results", "cpu-amd-epyc-family-25-model-17", "train_absorb_amp-fp16_steps.csv")
        raw = open(src, "rb").read()
        crlf = os.path.join(d, "crlf.csv")
        open(crlf, "wb").write(b"\xef\xbb\xbf" + raw.replace(b"\n", b"\r\n"))
        if hlfiles.read_csv(crlf) != hlfiles.read_csv(src) or not hlfiles.read_csv(src)[2]:
            return "read_csv of the CRLF and BOM copy differs"
        back = hlfiles.read_csv(path)
        if back[2][0]["name"] != "a,b":
            return "read_csv splits a quoted cell: %r" % back[2]
    return None


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        sys.exit(2)
    why = main(sys.argv[1])
    if why:
        print("hlfiles_text: " + why)
        sys.exit(1)
    print("hlfiles_text: every case held")
