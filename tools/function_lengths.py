#!/usr/bin/env python3
"""function_lengths.py — no function longer than 120 lines outside tests/.

In Python files a function is any def (ast's line numbers). In C and CUDA,
a function is a definition at the top level of the file: a line at
column 0 that is not a comment, a preprocessor line or a declaration, ending a
parenthesised parameter list and opening a brace (on that line or the next),
closed by the next '}' at column 0. Its length counts the lines from the
signature's first line to the closing brace.

  function_lengths.py [--max N] [ROOT]

Prints one line per function over the limit (file:line, name, lines), exit 1
when there is any, 0 when none. Build folders, tests/ and hidden folders are
left out.
"""
import ast
import os
import re
import sys

SUFFIXES = (".c", ".h", ".cu", ".cuh", ".py")
NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")


def python_functions(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def functions(path):
    if path.endswith(".py"):
        yield from python_functions(path)
        return
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        opens = line.rstrip().endswith("{") or (i + 1 < len(lines) and lines[i + 1].strip() == "{")
        head = line[:1]
        if head and (head.isalpha() or head == "_") and opens and not line.startswith(
                ("typedef", "struct", "enum", "union", "static const", "const", "extern \"C\"")) \
                and ")" in line and "=" not in line.split("(")[0]:
            # the signature may start on earlier lines (return type on its own line)
            start = i
            while start > 0 and lines[start - 1][:1].isalpha() and not lines[start - 1].rstrip().endswith((";", "}")):
                start -= 1
            signature = " ".join(lines[start:i + 1])
            m = NAME.search(signature.split("(")[0] + "(")
            end = i + 1
            while end < len(lines) and not lines[end].startswith("}"):
                end += 1
            if m:
                yield m.group(1), start + 1, end - start + 1
            i = end + 1
            continue
        # a signature whose parameter list spans lines: join until ') {'
        if head and (head.isalpha() or head == "_") and "(" in line and not line.rstrip().endswith(";") \
                and ")" not in line and not line.startswith(("typedef", "struct", "enum", "#")):
            j = i
            while j + 1 < len(lines) and ")" not in lines[j] and not lines[j].rstrip().endswith(";"):
                j += 1
            if lines[j].rstrip().endswith("{") and ")" in lines[j]:
                m = NAME.search(line)
                end = j + 1
                while end < len(lines) and not lines[end].startswith("}"):
                    end += 1
                if m:
                    yield m.group(1), i + 1, end - i + 1
                i = end + 1
                continue
        i += 1


def main(argv):
    limit = 120
    if argv[:1] == ["--max"]:
        limit = int(argv[1])
        argv = argv[2:]
    root = os.path.abspath(argv[0] if argv else os.path.join(os.path.dirname(__file__), ".."))
    long_ones = []
    for base, dirs, files in os.walk(root):
        rel = os.path.relpath(base, root)
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build")) and not (rel == "." and d == "tests"))
        for name in sorted(files):
            if name.endswith(SUFFIXES):
                path = os.path.join(base, name)
                for fn, line, length in functions(path):
                    if length > limit:
                        long_ones.append(f"{os.path.relpath(path, root)}:{line}: {fn}: {length} lines (at most {limit})")
    for l in long_ones:
        print(l)
    print(f"function_lengths: {len(long_ones)} functions over {limit} lines")
    return 1 if long_ones else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
