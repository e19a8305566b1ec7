#!/usr/bin/env python3
"""tools/chart_sizes.py PRESET PDF... — check the text and line sizes of the
charts gnuplot's pdfcairo drew, against what plots/style.gp promises:

  print   body text 8 to 9 pt, no text under 0.8 of 8 pt (gnuplot's
          super- and subscripts are 0.8 of their line), no line thinner
          than 0.75 pt
  slides  body text at least 1/40 of the page height, no text under 0.8
          of that, no line thinner than 0.75 pt on the 7.5-in page

"Body text" is the size most characters are set in. The sizes come from the
PDF's content streams: pdfcairo sets text with a text matrix scaled to the
size (`s 0 0 -s x y Tm` with `1 Tf`) and lines with `w`. Prints one line per
file; exits 1 when any file breaks a promise, 2 on bad arguments.
"""
import collections
import re
import sys
import zlib

STREAM = re.compile(rb"stream\r?\n(.*?)endstream", re.S)
MEDIABOX = re.compile(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]")
TEXT_MATRIX = re.compile(rb"([-\d.]+) ([-\d.]+) ([-\d.]+) ([-\d.]+) [-\d.]+ [-\d.]+ Tm")
SHOWN = re.compile(rb"\((?:[^()\\]|\\.)*\)\s*Tj|\[(?:[^\]\\]|\\.)*\]\s*TJ")
FONT_SIZE = re.compile(rb"/[\w.+-]+ ([\d.]+) Tf")
LINE_WIDTH = re.compile(rb"(?<![\w.])([\d.]+) w\b")


def sizes(path):
    """(page height in pt, Counter of text size -> characters, set of line widths)."""
    data = open(path, "rb").read()
    box = MEDIABOX.search(data)
    if not box:
        raise ValueError(f"{path}: no /MediaBox: not a PDF page")
    height = float(box.group(4)) - float(box.group(2))
    text = collections.Counter()
    widths = set()
    for match in STREAM.finditer(data):
        try:
            content = zlib.decompress(match.group(1))
        except zlib.error:
            continue  # a font or an image, not a page's content
        if b"BT" not in content and b" w" not in content:
            continue
        for block in content.split(b"BT")[1:]:
            block = block.split(b"ET")[0]
            matrix = TEXT_MATRIX.search(block)
            font = FONT_SIZE.search(block)
            if not matrix:
                continue
            a, b = float(matrix.group(1)), float(matrix.group(2))
            size = (a * a + b * b) ** 0.5 * (float(font.group(1)) if font else 1.0)
            chars = sum(max(len(s.group(0)) - 4, 1) for s in SHOWN.finditer(block))
            text[round(size, 2)] += max(chars, 1)
        widths.update(float(w) for w in LINE_WIDTH.findall(content))
    return height, text, widths


def check(preset, path):
    height, text, widths = sizes(path)
    problems = []
    if not text:
        problems.append("no text found")
        body = small = 0.0
    else:
        body = text.most_common(1)[0][0]
        small = min(text)
    if preset == "print":
        lo, hi = 8.0, 9.0
        if text and not lo <= body <= hi:
            problems.append(f"body text {body:g} pt, not {lo:g}-{hi:g}")
        floor = 0.8 * lo
    else:
        lo, hi = height / 40.0, None
        if text and body < lo:
            problems.append(f"body text {body:g} pt, under 1/40 of the page height ({lo:.2f} pt)")
        floor = 0.8 * lo
    if text and small < floor - 0.01:
        problems.append(f"text at {small:g} pt, under {floor:.2f} pt")
    thin = sorted(w for w in widths if 0 < w < 0.75 - 1e-6)
    if thin:
        problems.append(f"lines of {thin[0]:g} pt, under 0.75 pt")
    verdict = "FAIL" if problems else "ok"
    detail = "; ".join(problems) if problems else f"body {body:g} pt, smallest {small:g} pt, thinnest line {min(widths) if widths else 0:g} pt"
    print(f"{verdict}: {path}: {detail}")
    return not problems


def main(argv):
    if len(argv) < 3 or argv[1] not in ("print", "slides"):
        print("usage: tools/chart_sizes.py print|slides PDF...", file=sys.stderr)
        return 2
    good = True
    for path in argv[2:]:
        try:
            good = check(argv[1], path) and good
        except (OSError, ValueError) as err:
            print(f"FAIL: {err}")
            good = False
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
