#!/usr/bin/env python3
"""peer_input.py SOURCE_ROOT — the PyTorch peer (bench/peers/gpt_peer.py) reads its command line as
halflab's programs do: numbers strictly (no blanks, '+', '_', inf or nan, no '-' where a value
cannot be negative, nothing that rounds to 0), no empty path, and no output that is an input or
another output (links resolved). Each bad command line: one line, exit 2, nothing written. A good
one gets past the command line (to the inputs' check). Runs under the peer's Python (numpy; no
PyTorch is imported before these checks); skips (77) without it, fails where HALFLAB_REQUIRE_PEER=1.
"""
import os
import subprocess
import sys
import tempfile


def main(root):
    r = subprocess.run([os.path.join(root, "scripts", "peer-python.sh")], capture_output=True, text=True)
    if r.returncode != 0:
        print("peer_input: the peer's Python is not installed (scripts/setup.sh --peers)")
        return 1 if os.environ.get("HALFLAB_REQUIRE_PEER") == "1" else 77
    python, peer = r.stdout.strip(), os.path.join(root, "bench", "peers", "gpt_peer.py")
    refused = [["--lr", v] for v in (" 3", "+3", "1e-400", "nan", "inf", "1_0", "-0.1", "0", "1e-310", "")]
    refused += [["--steps", v] for v in ("+5", " 5", "1_0", "5.0", "")]
    refused += [["--init-scale", "1e-39"], ["--momentum", "-0"], ["--out", ""], ["--dump-grads", ""],
                ["--dump-grads", "./w.bin"], ["--record", "link.bin"], ["--record", "g.bin", "--dump-grads", "g.bin"],
                ["--record", "peer_tiny_fp32_summary.csv"], ["--dump-grads", "peer_tiny_fp32_steps.csv.tmp"]]
    passed = [["--lr", "3e-4"], ["--lr", ".5"], ["--momentum", "0"], ["--record", "r.bin"]]
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "w.bin"), "wb").write(b"not weights")
        os.symlink("w.bin", os.path.join(d, "link.bin"))
        before = sorted(os.listdir(d))
        for args, want_ok in [(a, False) for a in refused] + [(a, True) for a in passed]:
            cmd = [python, peer, "--init-weights", "w.bin", "--batches", "b.bin", "--heads", "2"] + args
            r = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
            lines = r.stderr.strip().split("\n")
            past_command_line = r.returncode == 2 and lines[0].startswith("gpt_peer: --init-weights: w.bin: not a")
            ok = (past_command_line if want_ok else
                  r.returncode == 2 and len(lines) == 1 and lines[0].startswith("gpt_peer: ") and args[0] in lines[0]
                  and not past_command_line and sorted(os.listdir(d)) == before)
            if not ok:
                failures += 1
                print("peer_input: %s: exit %d, %r" % (" ".join(repr(a) for a in args), r.returncode, r.stderr))
    cases = len(refused) + len(passed)
    print("peer_input: %d cases tried, %d held" % (cases, cases - failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1])))
