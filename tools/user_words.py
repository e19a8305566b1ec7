#!/usr/bin/env python3
"""tools/user_words.py SOURCE_ROOT [BUILD_DIR] — no user-facing text speaks
the team's internal language. A reader has never seen the notes the project
grew from, its tracker or its process, so none of these may appear in:

  - README.md, docs/*.md and every results/**/REPORT.md under SOURCE_ROOT;
  - the text of every committed chart (results/**/*.svg, tags stripped);
  - with BUILD_DIR, the --help of every program built there and of each of
    their subcommands.

What is refused (each with why): issue numbers and "the issue", the seed
notes ("the seeds", "seeds' demos"), and performance "targets", which are
stated as expectations with their physical or peer reason. A training
run's random seed and a model's target tokens are fine: the patterns name
the internal senses only. Prints file:line: text for each hit; exit 1 when
there is one, 0 otherwise.
"""
import pathlib
import re
import subprocess
import sys

FORBIDDEN = [
    (re.compile(r"\b[Ii]ssues? ?#?\d+\b"), "an issue number"),
    (re.compile(r"\b[Tt]he issue(?:'s)?\b"), "the tracker's issue"),
    (re.compile(r"\bseeds'|\bseed's\b|\b[Tt]he seeds\b|\bseed notes?\b"), "the notes the project grew from"),
    (re.compile(r"\b(?:[Pp]erformance|[Ss]peed|CPU|GPU|[Pp]eer)[- ]targets?\b"), "a performance target (say expectation)"),
    (re.compile(r"\btargets? (?:holds?|held|missed|passes|is (?:SKIP|PASS|FAIL))\b"), "a performance target (say expectation)"),
    (re.compile(r"_targets\.csv\b"), "a targets file (say expectations)"),
    (re.compile(r"\b(?:coordinator|helper agents?|our process|this session)\b"), "the team's process"),
]

# A line that names the older files as older (how a folder measured before the
# rename reads), or a report's list of the files a section read, points at
# files that exist; it does not speak the internal word.
HISTORY = re.compile(r"\b(?:before|older|earlier)\b|^Measured with: ")
HISTORICAL_OK = {"a targets file (say expectations)"}

PROGRAMS = ["numerics/halflab-numerics", "bench/halflab-bench", "train/halflab-train"]


def svg_text(path):
    return re.sub(r"<[^>]*>", "", path.read_text(errors="replace"))


def help_texts(build):
    """(label, text) for each program's --help and its subcommands' --help."""
    found = []
    programs = [build / p for p in PROGRAMS]
    programs += sorted(p for p in (build / "examples").glob("*") if p.is_file() and p.stat().st_mode & 0o111)
    for program in programs:
        if not program.exists():
            continue
        text = run_help([str(program), "--help"])
        found.append((f"{program.name} --help", text))
        block = re.search(r"^Subcommands:\n((?:  .*\n|\n)+)", text, re.M)
        for sub in re.findall(r"^  ([a-z][\w-]*) ", block.group(1), re.M) if block else []:
            found.append((f"{program.name} {sub} --help", run_help([str(program), sub, "--help"])))
    return found


def run_help(argv):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


def hits(label, text):
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, why in FORBIDDEN:
            if pattern.search(line) and not (why in HISTORICAL_OK and HISTORY.search(line)):
                yield f"{label}:{number}: {why}: {line.strip()[:140]}"


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: tools/user_words.py SOURCE_ROOT [BUILD_DIR]", file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    texts = []
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md")), *sorted(root.glob("results/**/REPORT.md"))]:
        if path.exists():
            texts.append((str(path.relative_to(root)), path.read_text(errors="replace")))
    for path in sorted(root.glob("results/**/*.svg")):
        texts.append((str(path.relative_to(root)), svg_text(path)))
    if len(argv) == 3:
        texts += help_texts(pathlib.Path(argv[2]))
    found = [hit for label, text in texts for hit in hits(label, text)]
    for hit in found:
        print(hit)
    print(f"{len(texts)} texts read, {len(found)} internal word(s) found")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
