#!/usr/bin/env python3
"""docs_map.py — the README stays a one-screen map, and every link resolves.

Checks, on the tree given (default: this checkout):
  - README.md is under 12,000 characters;
  - no README line outside a code block is longer than 120 characters;
  - the quick start's code block holds exactly two commands;
  - every relative link in README.md and docs/*.md (inline `](path)` and
    reference `[name]: path`) names a file or folder that exists;
  - every test docs/files.md names as the proof of a promise (its tables'
    last column) is a test some tests/**/meson.build declares.
One line per violation (file:line and what is wrong), exit 1 when any, 0 when none.
"""
import os
import re
import sys

README_MAX_CHARS = 12000
LINE_MAX = 120
INLINE = re.compile(r"\]\(([^)\s]+)\)")
REFERENCE = re.compile(r"^\[[^\]]+\]:\s*(\S+)")


def relative_targets(line):
    for m in INLINE.finditer(line):
        yield m.group(1)
    m = REFERENCE.match(line)
    if m:
        yield m.group(1)


def check(root):
    problems = []
    readme = os.path.join(root, "README.md")
    text = open(readme, encoding="utf-8").read()
    if len(text) >= README_MAX_CHARS:
        problems.append(f"README.md: {len(text)} characters (a map stays under {README_MAX_CHARS})")
    in_code = False
    quick, quick_commands, seen_quick = False, 0, False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("## "):
            quick = line.strip() == "## Quick start"
        if line.startswith("```"):
            if in_code and quick:
                seen_quick = True
            in_code = not in_code
            continue
        if in_code:
            if quick and not seen_quick and line.strip() and not line.lstrip().startswith("#"):
                quick_commands += 1
            continue
        if len(line) > LINE_MAX:
            problems.append(f"README.md:{number}: {len(line)} characters (at most {LINE_MAX} outside code blocks)")
    if quick_commands != 2:
        problems.append(f"README.md: the quick start's code block holds {quick_commands} commands (two: run, test)")
    docs = [readme] + sorted(
        os.path.join(root, "docs", n) for n in os.listdir(os.path.join(root, "docs")) if n.endswith(".md"))
    for path in docs:
        in_code = False
        for number, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            for target in relative_targets(line):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue  # a URL or an anchor in the same page
                file_part = target.split("#", 1)[0]
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(resolved):
                    problems.append(f"{os.path.relpath(path, root)}:{number}: the link {target} names nothing")
    problems += promised_tests_exist(root)
    return problems


def declared_tests(root):
    names = set()
    for folder, _, files in os.walk(os.path.join(root, "tests")):
        if "meson.build" in files:
            text = open(os.path.join(folder, "meson.build"), encoding="utf-8").read()
            # test('NAME', ...), or NAME in a list of [name, source, timeout] the file loops over
            names.update(re.findall(r"'([a-z][a-z0-9-]*[a-z0-9])'", text))
            names.update(n + "*" for n in re.findall(r"'([a-z0-9-]+-)'\s*\+", text))
    return names


def promised_tests_exist(root):
    """A promise is only as good as its test: a name there that no meson.build declares is a problem."""
    path = os.path.join(root, "docs", "files.md")
    if not os.path.exists(path):
        return []
    declared, problems = declared_tests(root), []
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if not line.startswith("|") or line.startswith("|---"):
            continue
        last = line.rstrip().rstrip("|").rsplit("|", 1)[-1]
        for name in re.findall(r"`([a-z][a-z0-9*-]+)`", last):
            if name not in declared:
                problems.append(f"docs/files.md:{number}: the test {name} is declared in no tests/**/meson.build")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    if problems:
        print(f"docs_map: {len(problems)} problems")
        return 1
    print("docs_map: README is a map and every link resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
