#!/usr/bin/env bash
# tests/plots/as_written.sh SOURCE_ROOT — charts and the report from CSVs another system saved: the
# committed CPU folder's gemm.csv and train CSVs copied twice, once as they are and once with CRLF line
# ends and a UTF-8 byte order mark; three charts (a bench table, train_summary.csv, the scaler's skips
# in the training logs)
# and the report's training section must come out byte for byte the same from both. Exit 77 (skipped)
# only where gnuplot is not installed.
set -euo pipefail
root=$(cd "${1:?usage: tests/plots/as_written.sh SOURCE_ROOT}" && pwd)
command -v gnuplot >/dev/null 2>&1 || { echo "gnuplot is not installed: skipped"; exit 77; }
work=$(mktemp -d /tmp/halflab-as-written.XXXXXX)
trap 'rm -rf "$work"' EXIT
src=$root/results/cpu-amd-epyc-family-25-model-17
mkdir "$work/lf" "$work/crlf"
for f in "$src"/gemm.csv "$src"/train_*.csv; do
  cp "$f" "$work/lf/"
  { printf '\357\273\277'; sed 's/$/\r/' "$f"; } > "$work/crlf/${f##*/}"
done
failures=0
for chart in gemm-speedup train-perf train-scale; do
  for v in lf crlf; do
    err=$(gnuplot -e "preset='screen'" -c "$root/plots/$chart.gp" "$work/$v" 2>&1 >/dev/null) || true
    [ -z "$err" ] || { echo "FAIL: $chart from the $v copy: gnuplot: $err"; failures=$((failures + 1)); }
  done
  for ext in svg png; do
    if [ ! -f "$work/lf/$chart.$ext" ]; then echo "FAIL: $chart.$ext not drawn"; failures=$((failures + 1))
    elif ! cmp -s "$work/lf/$chart.$ext" "$work/crlf/$chart.$ext"; then
      echo "FAIL: $chart.$ext differs when its CSVs have CRLF and a BOM"; failures=$((failures + 1))
    fi
  done
done
bash "$root/plots/report.d/30-train.sh" "$work/lf" > "$work/lf.md"
bash "$root/plots/report.d/30-train.sh" "$work/crlf" > "$work/crlf.md"
cmp -s "$work/lf.md" "$work/crlf.md" || { echo "FAIL: the training section differs:"; diff "$work/lf.md" "$work/crlf.md" | head -5; failures=$((failures + 1)); }
[ "$failures" = 0 ] && echo "as_written: 3 charts and the training section the same from CRLF and BOM copies"
exit $((failures > 0))
