#!/usr/bin/env bash
# tests/plots/provenance.sh SOURCE_ROOT — REPORT.md names the builds its numbers come from
# (plots/report-lib.sh: provenance), on synthetic folders: files of one clean build give no warning;
# two builds give the "Mixed builds" line and list both; a -dirty version gives the modified-tree
# line; the same build on two days is one build listed twice; train_summary.csv counts each row by
# its version and date cells, a row without them by its run's own file; a metadata line
# train_summary.csv left out is read from a run's own file (run_meta); the report's head lists
# every build of the folder and each section its own. Needs no gnuplot.
set -euo pipefail
root=$(cd "${1:?usage: tests/plots/provenance.sh SOURCE_ROOT}" && pwd)
work=$(mktemp -d /tmp/halflab-provenance.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# DIR NAME VERSION DATE [HEADER ROW...]: a CSV of halflab's layout (one row when none is given)
csv() {
  local d=$1 name=$2 version=$3 date=$4
  shift 4
  mkdir -p "$d"
  {
    echo "# halflab 0.1.0 ($version)"
    echo "# schema: 2"
    echo "# device: cpu: synthetic"
    echo "# date: $date"
    if [ $# -gt 0 ]; then printf '%s\n' "$@"; else printf 'device,x\ncpu,1\n'; fi
  } >"$d/$name"
}
# DIR ARG...: provenance's lines for the folder DIR
prov() { (dir=$1; shift; . "$root/plots/report-lib.sh"; provenance "$@"); }
# TEXT PATTERN WHAT: PATTERN (grep -E) must be in TEXT
has() { grep -qE -- "$2" <<<"$1" || fail "$3: no /$2/ in:"$'\n'"$1"; }
lacks() { ! grep -qE -- "$2" <<<"$1" || fail "$3: /$2/ should not be in:"$'\n'"$1"; }

# one clean build: the files listed, no warning
d=$work/clean
csv "$d" gemm.csv abc1234 2026-12-01T10:00:00Z
csv "$d" bandwidth.csv abc1234 2026-12-01T11:00:00Z
out=$(prov "$d" gemm.csv bandwidth.csv absent.csv)
has "$out" '^Measured with: halflab 0\.1\.0 \(abc1234\) on 2026-12-01 \(gemm\.csv, bandwidth\.csv\)\.$' "one build"
lacks "$out" 'Mixed builds|modified tree' "one clean build"
[ -z "$(prov "$d" absent.csv)" ] || fail "no file: provenance should print nothing"

# two builds: the warning, and both listed with their files, the earlier day first
d=$work/mixed
csv "$d" gemm.csv def5678 2026-12-03T09:00:00Z
csv "$d" bandwidth.csv abc1234 2026-12-01T11:00:00Z
out=$(prov "$d" gemm.csv bandwidth.csv)
has "$out" '^> \*\*Mixed builds:\*\* these results come from 2 builds' "two builds"
has "$out" 'halflab 0\.1\.0 \(abc1234\) on 2026-12-01 \(bandwidth\.csv\); halflab 0\.1\.0 \(def5678\) on 2026-12-03 \(gemm\.csv\)' \
  "two builds listed"
lacks "$out" 'modified tree' "two clean builds"

# a modified tree: its own warning, no mixed one
d=$work/dirty
csv "$d" gemm.csv abc1234-dirty 2026-12-01T10:00:00Z
csv "$d" bandwidth.csv abc1234-dirty 2026-12-01T10:30:00Z
out=$(prov "$d" 'gemm*.csv' 'bandwidth*.csv')
has "$out" '^> \*\*Built from a modified tree \(-dirty\):\*\* the build had' "-dirty"
lacks "$out" 'Mixed builds' "one -dirty build"
has "$out" '\(abc1234-dirty\) on 2026-12-01 \(gemm\.csv, bandwidth\.csv\)' "-dirty listed"

# the same build on two days: one build, two entries
d=$work/days
csv "$d" gemm.csv abc1234 2026-12-01T10:00:00Z
csv "$d" bandwidth.csv abc1234 2026-12-02T10:00:00Z
out=$(prov "$d" gemm.csv bandwidth.csv)
lacks "$out" 'Mixed builds' "one build on two days"
has "$out" 'on 2026-12-01 \(gemm\.csv\); halflab 0\.1\.0 \(abc1234\) on 2026-12-02 \(bandwidth\.csv\)' "two days"

# train_summary.csv: each row by its cells; a row without them by its run's own file
d=$work/train
csv "$d" train_summary.csv abc1234 2026-12-05T00:00:00Z "name,mode,x,version,date" \
  "tiny,fp32,1,0.1.0 (abc1234),2026-12-01T10:00:00Z" "tiny,amp-fp16,1,0.1.0 (abc1234),2026-12-01T10:05:00Z" \
  "dp-wire-fp16,amp-fp16,1,0.1.0 (def5678-dirty),2026-12-02T10:00:00Z" "older,fp32,1,,"
csv "$d" train_older_fp32_summary.csv 0badc0d 2026-11-30T10:00:00Z
out=$(prov "$d" train_summary.csv)
has "$out" 'come from 3 builds' "train_summary.csv's rows"
has "$out" '1 of the 3 builds had uncommitted' "train_summary.csv's -dirty row"
has "$out" '\(0badc0d\) on 2026-11-30 \(train_summary\.csv: older\); halflab 0\.1\.0 \(abc1234\) on 2026-12-01 \(train_summary\.csv: tiny\); halflab 0\.1\.0 \(def5678-dirty\) on 2026-12-02 \(train_summary\.csv: dp-wire-fp16\)' \
  "train_summary.csv's runs"
lacks "$out" '2026-12-05' "train_summary.csv's own lines (its last writer) count for no row"
out=$(prov "$d" --rows '$c["name"] ~ /^dp-/' train_summary.csv)
has "$out" '^Measured with: halflab 0\.1\.0 \(def5678-dirty\) on 2026-12-02 \(train_summary\.csv: dp-wire-fp16\)\.$' "--rows"
lacks "$out" 'Mixed builds' "--rows: one build"
# an older train_summary.csv (no version column): every row by its run's own file
csv "$d" train_summary.csv abc1234 2026-12-05T00:00:00Z "name,mode,x" "older,fp32,1" "gone,fp32,1"
out=$(prov "$d" train_summary.csv)
has "$out" '\(version not recorded\) \(train_summary\.csv: gone\); halflab 0\.1\.0 \(0badc0d\) on 2026-11-30 \(train_summary\.csv: older\)' \
  "an older train_summary.csv"

# a line train_summary.csv left out (its runs differ on it) is read from a run's own file
d=$work/run-meta
mkdir -p "$d"
printf '# halflab 0.1.0 (abc1234)\n# schema: 2\nname,mode\ntiny,fp32\n' >"$d/train_summary.csv"
csv "$d" train_tiny_fp32_summary.csv abc1234 2026-12-01T10:00:00Z
[ "$( (dir=$d; . "$root/plots/report-lib.sh"; run_meta device) )" = "cpu: synthetic" ] ||
  fail "run_meta: the device line of the run's own file"
csv "$d" train_summary.csv abc1234 2026-12-01T10:00:00Z
sed -i 's/^# device: .*/# device: cpu: the shared one/' "$d/train_summary.csv"
[ "$( (dir=$d; . "$root/plots/report-lib.sh"; run_meta device) )" = "cpu: the shared one" ] ||
  fail "run_meta: train_summary.csv's own line first"

# the report: its head lists every build of the folder, each section its own at its top
d=$work/report
src=""
for s in "$root"/results/*/; do [ -f "$s/gemm.csv" ] && [ -f "$s/footprint_params.csv" ] && { src=${s%/}; break; }; done
[ -n "$src" ] || { echo "FAIL: no results folder with gemm.csv and footprint_params.csv" >&2; exit 1; }
mkdir -p "$d"
for f in gemm.csv bandwidth.csv footprint_params.csv footprint_training.csv; do
  sed '/^# halflab /d; /^# date: /d' "$src/$f" >"$d/$f.body"
done
# the bench section from two clean builds, the footprint from one -dirty build
for f in gemm.csv:abc1234:2026-12-01 bandwidth.csv:def5678:2026-12-02 footprint_params.csv:0ddba11-dirty:2026-12-03 \
         footprint_training.csv:0ddba11-dirty:2026-12-03; do
  IFS=: read -r name version day <<<"$f"
  { echo "# halflab 0.1.0 ($version)"; echo "# date: ${day}T00:00:00Z"; cat "$d/$name.body"; } >"$d/$name"
  rm "$d/$name.body"
done
"$root/plots/report.sh" "$d" 2>/dev/null
report=$d/REPORT.md
# SECTION-HEADING: the section's lines up to its first line of prose
top() { awk -v h="$1" 'index($0, h) == 1 { on = 1; next } on && /^## / { exit } on' "$report" | sed -n '1,/^Measured with/p'; }
head=$(sed -n '1,/^## /p' "$report")
has "$head" 'come from 3 builds' "the report's head"
has "$head" '\(abc1234\) on 2026-12-01 \(gemm\.csv\); halflab 0\.1\.0 \(def5678\) on 2026-12-02 \(bandwidth\.csv\); halflab 0\.1\.0 \(0ddba11-dirty\) on 2026-12-03 \(footprint_params\.csv, footprint_training\.csv\)' \
  "the report's head lists every build"
bench=$(top "## GEMM and memory bandwidth")
has "$bench" 'Mixed builds:\*\* these results come from 2 builds' "the bench section"
lacks "$bench" 'modified tree' "the bench section"
footprint=$(top "## Memory footprint")
has "$footprint" 'modified tree' "the footprint section"
lacks "$footprint" 'Mixed builds' "the footprint section"
has "$footprint" '^Measured with: halflab 0\.1\.0 \(0ddba11-dirty\) on 2026-12-03' "the footprint section"

if [ $failures -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "provenance: all checks passed"
