#!/usr/bin/env python3
"""tour_class.py — suite e2e: `halflab-numerics tour` as a lecturer drives it.

  --list    the demonstrations numbered 1..N, one line each, and no file;
  --only X  (a number or a name from --list) that demonstration alone, with
            its "look:" line, and no file; a bad X: one line, exit 2, no file;
  --step    with stdin from /dev/null or an idle pipe: no pause, the whole
            tour and tour.csv; on a terminal (a pseudo-terminal here): a pause
            after each demonstration, Enter shows the next, q then Enter
            stops, end of input (Ctrl-D) shows the rest without pausing.

Needs python3 only (meson's own interpreter), so it also runs in a build of
halflab-numerics alone (-Dnumerics-only=true). The program comes from
$HALFLAB_NUMERICS (meson test sets it). One line per failed check, exit 1.
"""
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

PROG = os.environ.get("HALFLAB_NUMERICS", "")
HEADING = re.compile(r"^(\d+)\. ", re.M)  # "3. Underflow of an update: ..."
PROMPT = "press Enter for the next demo"
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"tour_class: FAIL: {what}")
    return ok


def env():
    e = dict(os.environ)
    e.pop("HALFLAB_RESULTS", None)  # the default folder, results/ under the working directory
    return e


def run(args, cwd, stdin=subprocess.DEVNULL, timeout=60):
    return subprocess.run([PROG, "--device", "cpu"] + args, cwd=cwd, stdin=stdin, capture_output=True, text=True,
                          timeout=timeout, env=env())


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs)


def demos_shown(text):
    return [int(n) for n in HEADING.findall(text)]


def listed(cwd):
    """--list's lines as [(number, name, what it shows)]."""
    r = run(["tour", "--list"], cwd)
    check(r.returncode == 0, f"tour --list: exit {r.returncode}, stderr {r.stderr!r}")
    rows = [m.groups() for m in re.finditer(r"^\s+(\d+)\s+(\S+)\s+(\S.*)$", r.stdout, re.M)]
    check(files_under(cwd) == [], f"tour --list wrote {files_under(cwd)}")
    return [(int(n), name, shows) for n, name, shows in rows]


def test_list_and_only(cwd):
    demos = listed(cwd)
    numbers = [n for n, _, _ in demos]
    check(len(demos) >= 5 and numbers == list(range(1, len(demos) + 1)),
          f"--list numbers the demonstrations 1..N in order (got {numbers})")
    check(len({name for _, name, _ in demos}) == len(demos), "--list names each demonstration once")
    check("fp8" in [name for _, name, _ in demos], "--list has the fp8 demonstration (tour --only fp8)")
    full = run(["tour"], cwd)
    check(demos_shown(full.stdout) == numbers, f"the full tour shows {demos_shown(full.stdout)}, --list {numbers}")
    check(full.stdout.count("   look: ") == len(demos), "the full tour has one 'look:' line per demonstration")
    shutil.rmtree(os.path.join(cwd, "results"), ignore_errors=True)
    for n, name, _ in demos:
        for key in (str(n), name, name.upper()):
            r = run(["tour", "--only", key], cwd)
            check(r.returncode == 0, f"--only {key}: exit {r.returncode}, stderr {r.stderr!r}")
            check(demos_shown(r.stdout) == [n], f"--only {key} shows demonstrations {demos_shown(r.stdout)}, not [{n}]")
            block = r.stdout[r.stdout.find(f"\n{n}. "):]
            check("   look: " in block and "   why: " in block, f"--only {key}: its 'look:' and 'why:' lines")
            check(files_under(cwd) == [], f"--only {key} wrote {files_under(cwd)}")


def test_bad_only(cwd):
    for bad in ("0", "99", "bogus", "", "-1", "2x"):
        for extra in ([], ["--out", os.path.join(cwd, "out")]):
            r = run(["tour", "--only", bad] + extra, cwd)
            lines = r.stderr.strip().split("\n")
            check(r.returncode == 2, f"--only '{bad}' {extra}: exit {r.returncode}, not 2")
            check(len(lines) == 1 and "--only" in lines[0] and f"'{bad}'" in lines[0],
                  f"--only '{bad}': one line naming --only and the value, got {r.stderr!r}")
            check(files_under(cwd) == [] and not os.path.exists(os.path.join(cwd, "out")),
                  f"--only '{bad}' {extra} created {files_under(cwd)}")
    for args, names in ((["overflow", "--only", "2"], "--only"), (["all", "--step"], "--step"),
                        (["formats", "--list"], "--list"), (["tour", "--list", "--only", "2"], "--list"),
                        (["tour", "--only", "2", "--out", os.path.join(cwd, "out")], "--out")):
        r = run(args, cwd)
        check(r.returncode == 2 and names in r.stderr and r.stderr.count("\n") == 1,
              f"{' '.join(args)}: exit {r.returncode}, stderr {r.stderr!r} (expected exit 2, one line naming {names})")
        check(files_under(cwd) == [], f"{' '.join(args)} created {files_under(cwd)}")


def csv_rows(cwd):
    """tour.csv's header and rows, from the one folder under results/; [] when there is none."""
    found = [os.path.join(d, "tour.csv") for d, _, fs in os.walk(os.path.join(cwd, "results")) if "tour.csv" in fs]
    if len(found) != 1:
        return []
    with open(found[0]) as f:
        return [line for line in f if not line.startswith("#")]


def test_step_without_terminal(cwd):
    plain = run(["tour"], cwd)
    rows = csv_rows(cwd)
    shutil.rmtree(os.path.join(cwd, "results"), ignore_errors=True)
    r = run(["tour", "--step"], cwd, stdin=subprocess.DEVNULL, timeout=30)
    check(r.returncode == 0 and demos_shown(r.stdout) == demos_shown(plain.stdout),
          f"--step < /dev/null: exit {r.returncode}, demonstrations {demos_shown(r.stdout)}")
    check(PROMPT not in r.stdout + r.stderr, "--step < /dev/null prompted")
    check(rows and csv_rows(cwd) == rows, "--step < /dev/null: tour.csv missing or different from the plain tour's")
    check(any(f.endswith("tour_fp8.csv") for f in files_under(cwd)), "the full tour wrote no tour_fp8.csv")
    shutil.rmtree(os.path.join(cwd, "results"), ignore_errors=True)
    # an idle pipe: never written, never closed while the program runs
    p = subprocess.Popen([PROG, "--device", "cpu", "tour", "--step"], cwd=cwd, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    try:
        p.wait(timeout=30)  # not communicate(): it would close stdin, an end of input
        out, err = p.stdout.read(), p.stderr.read()
        check(p.returncode == 0 and demos_shown(out) == demos_shown(plain.stdout),
              f"--step with an idle pipe on stdin: exit {p.returncode}, demonstrations {demos_shown(out)}")
        check(PROMPT not in out + err, "--step with a pipe on stdin prompted")
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        check(False, "--step with an idle pipe on stdin waited for input (killed after 30 s)")
    finally:
        p.stdin.close()
        p.stdout.close()
        p.stderr.close()
    shutil.rmtree(os.path.join(cwd, "results"), ignore_errors=True)


class Terminal:
    """The program with a pseudo-terminal as stdin, stdout and stderr."""

    def __init__(self, args, cwd):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([PROG, "--device", "cpu"] + args, cwd=cwd, stdin=slave, stdout=slave,
                                     stderr=slave, env=env(), close_fds=True)
        os.close(slave)
        self.text = ""

    def read_until(self, pattern, seconds=20):
        """What the terminal shows until `pattern` (a regex) appears, or until it is closed or time runs out."""
        end = time.time() + seconds
        while not re.search(pattern, self.text) and time.time() < end:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: every copy of the terminal's other side is closed
                break
            if not chunk:
                break
            self.text += chunk.decode(errors="replace")
        return re.search(pattern, self.text) is not None

    def type(self, keys):
        os.write(self.master, keys)

    def finish(self, seconds=20):
        self.read_until(r"\Z\A", seconds=0.5)  # drain
        try:
            self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.read_until(r"\Z\A", seconds=0.5)
        os.close(self.master)
        return self.proc.returncode


def shown_after(text, mark):
    return demos_shown(text[mark:])


def test_step_on_a_terminal(cwd, count):
    # Enter shows the next one; q then Enter stops; the CSV is written all the same
    t = Terminal(["tour", "--step"], cwd)
    check(t.read_until(PROMPT), f"--step on a terminal: no prompt after the first demonstration: {t.text[-300:]!r}")
    check(demos_shown(t.text) == [1], f"--step: before the first pause the terminal shows {demos_shown(t.text)}")
    time.sleep(0.5)  # a program that does not wait would print on now
    t.read_until(r"\n2\. ", seconds=0.5)
    check(demos_shown(t.text) == [1], f"--step: without Enter the terminal shows {demos_shown(t.text)}")
    mark = len(t.text)
    t.type(b"\n")
    check(t.read_until(r"\n2\. [\s\S]*" + PROMPT), f"--step: Enter did not show demonstration 2 and pause: "
          f"{t.text[mark:][-300:]!r}")
    check(shown_after(t.text, mark) == [2], f"--step: after one Enter the terminal added {shown_after(t.text, mark)}")
    mark = len(t.text)
    t.type(b"q\n")
    rc = t.finish()
    check(rc == 0, f"--step: q then Enter: exit {rc}")
    check(shown_after(t.text, mark) == [], f"--step: after q the terminal added {shown_after(t.text, mark)}")
    check(len(csv_rows(cwd)) > 0, "--step stopped with q: tour.csv not written")
    shutil.rmtree(os.path.join(cwd, "results"), ignore_errors=True)

    # end of input at a pause: the rest without pausing
    t = Terminal(["tour", "--step"], cwd)
    check(t.read_until(PROMPT), "--step on a terminal: no first prompt")
    mark = len(t.text)
    t.type(b"\x04")  # Ctrl-D at the start of a line: end of input
    rc = t.finish()
    check(rc == 0, f"--step: end of input at a pause: exit {rc}")
    check(shown_after(t.text, mark) == list(range(2, count + 1)),
          f"--step: after end of input the terminal added {shown_after(t.text, mark)}, not 2..{count}")
    check(t.text[mark:].count(PROMPT) == 0, "--step: prompted again after end of input")
    shutil.rmtree(os.path.join(cwd, "results"), ignore_errors=True)


def main():
    if not PROG or not os.access(PROG, os.X_OK):
        print("tour_class: $HALFLAB_NUMERICS names no program: run through meson test", file=sys.stderr)
        return 1
    cwd = tempfile.mkdtemp(prefix="halflab-tour-class.")
    try:
        test_list_and_only(cwd)
        test_bad_only(cwd)
        test_step_without_terminal(cwd)
        test_step_on_a_terminal(cwd, len(listed(cwd)))
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    if failures:
        print(f"tour_class: {len(failures)} checks failed")
        return 1
    print("tour_class: --list, --only and --step behave, on a terminal and off one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
