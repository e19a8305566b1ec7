#!/usr/bin/env bash
# tests/plots/format_legends.sh SOURCE_ROOT BUILD_ROOT — the charts that show
# every format side by side (absorption, subnormal, tour_fp8), drawn from a
# fresh halflab-numerics run (screen preset): every format in a chart's CSV
# has its legend entry, e8m0's missing ladder is said on the subnormal chart,
# and the tour_fp8 chart's title counts the CSV's NaN. Exit 77 (skipped)
# where gnuplot is not installed.
set -euo pipefail
root=$(cd "${1:?usage: tests/plots/format_legends.sh SOURCE_ROOT BUILD_ROOT}" && pwd)
build=$(cd "${2:?usage: tests/plots/format_legends.sh SOURCE_ROOT BUILD_ROOT}" && pwd)
command -v gnuplot >/dev/null 2>&1 || { echo "gnuplot is not installed: legend test skipped"; exit 77; }
work=$(mktemp -d /tmp/halflab-legends.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

for sub in absorption subnormal tour; do
  "$build/numerics/halflab-numerics" "$sub" --device cpu --out "$work" >/dev/null || fail "halflab-numerics $sub failed"
done
for chart in absorption subnormal tour_fp8; do
  gnuplot -c "$root/plots/$chart.gp" "$work" >"$work/$chart.log" 2>&1 || fail "plots/$chart.gp failed: $(cat "$work/$chart.log")"
  [ ! -s "$work/$chart.log" ] || fail "plots/$chart.gp wrote: $(cat "$work/$chart.log")"
done
# FILE: the formats its rows name (CSV column "format")
formats_of() { awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } !s[$c["format"]]++ { print $c["format"] }' "$1"; }
# SVG: its text, one string per line (tags dropped)
svg_text() { sed 's/<[^>]*>/\n/g' "$1" | sed '/^[[:space:]]*$/d'; }
svg_text "$work/absorption.svg" >"$work/absorption.txt"
n=0
for f in $(formats_of "$work/absorption_sweep.csv"); do
  n=$((n + 1))
  grep -qE "^ *$f(:|$)" "$work/absorption.txt" || fail "absorption.svg: no legend entry for $f"
done
[ $n = 9 ] || fail "absorption_sweep.csv has $n formats, not 9"
svg_text "$work/subnormal.svg" >"$work/subnormal.txt"
for f in $(formats_of "$work/subnormal_ladder.csv"); do
  grep -qE "^ *$f, " "$work/subnormal.txt" || fail "subnormal.svg: no legend entry for $f"
done
grep -q "e8m0 has no ladder" "$work/subnormal.txt" || fail "subnormal.svg does not say e8m0 has no ladder"
nans=$(awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["way"] == "e4m3" && $c["stored"] ~ /nan/ { n++ } END { print n + 0 }' "$work/tour_fp8.csv")
[ "$nans" -gt 0 ] || fail "tour_fp8.csv: no NaN in e4m3 without a scale"
svg_text "$work/tour_fp8.svg" | tr '\n' ' ' | grep -q "What a scale does" || fail "tour_fp8.svg: no title"
mkdir -p "$work/slides"
gnuplot -e "preset='slides'" -c "$root/plots/tour_fp8.gp" "$work" >/dev/null 2>&1 || fail "plots/tour_fp8.gp: the slides preset failed"
if command -v pdftotext >/dev/null 2>&1 && [ -s "$work/slides/tour_fp8.pdf" ]; then
  pdftotext "$work/slides/tour_fp8.pdf" - | tr '\n' ' ' | grep -q "Without a scale $nans of 32 values are NaN" ||
    fail "the tour_fp8 slide's claim does not count the $nans NaN of tour_fp8.csv"
fi

if [ $failures -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "legends: every format has its entry"
