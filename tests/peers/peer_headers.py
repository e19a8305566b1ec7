#!/usr/bin/env python3
"""peer_headers.py HALFLAB_TRAIN GPT_PEER — the peer writes halflab-train's files.

bench/peers/gpt_peer.py writes train_RUN_MODE_steps.csv and
train_RUN_MODE_summary.csv in halflab-train's layout, so that every reader
(charts, report, step_times.py) takes either. Its two headers must be the
column tables' (halflab-train --columns-md), in order. Read without importing
the peer (no PyTorch needed). Exit 1 naming the first difference.
"""
import ast
import re
import subprocess
import sys


def table_columns(markdown, file):
    section = markdown.split("## " + file + "\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z0-9_]+)` \|", section, re.M)


def peer_constant(path, name):
    for node in ast.parse(open(path, encoding="utf-8").read()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit(f"peer_headers: {path} has no {name}")


def main(train, peer):
    markdown = subprocess.run([train, "--columns-md"], check=True, capture_output=True, text=True).stdout
    status = 0
    for file, constant in (("train_RUN_MODE_steps.csv", "STEP_HEADER"), ("train_RUN_MODE_summary.csv", "SUMMARY_HEADER")):
        want = table_columns(markdown, file)
        got = peer_constant(peer, constant).split(",")
        if got != want:
            extra = [c for c in got if c not in want]
            missing = [c for c in want if c not in got]
            print(f"peer_headers: {constant} is not {file}'s header: missing {missing}, extra {extra}"
                  + ("" if missing or extra else ", order differs"))
            status = 1
        else:
            print(f"peer_headers: {constant} = {file}'s {len(want)} columns")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
