#!/usr/bin/env bash
# scripts/plots.sh [RESULTS_DIR...] — what `ninja -C build plots` runs: every
# chart of plots/*.gp for every results folder (default: all of results/*/),
# then each folder's REPORT.md. Charts need the CSVs they read; a script whose
# input is absent says so and draws nothing. Without gnuplot the charts are
# skipped with a notice and the reports are still written.
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  for d in results/*/; do [ -d "$d" ] && dirs+=("${d%/}"); done
fi
if [ ${#dirs[@]} -eq 0 ]; then
  echo "plots: no results folder yet; run 'ninja -C build bench' first" >&2
  exit 0
fi
have_gnuplot=1
command -v gnuplot >/dev/null 2>&1 || have_gnuplot=0
[ $have_gnuplot = 1 ] || echo "plots: gnuplot is not installed here: charts skipped (run 'ninja -C build plots' where it is)" >&2
for d in "${dirs[@]}"; do
  if [ $have_gnuplot = 1 ]; then
    for gp in plots/*.gp; do
      [ -e "$gp" ] || continue
      case "$(basename "$gp")" in compare-*) continue ;; esac  # cross-machine charts: below
      gnuplot -c "$gp" "$d" || { echo "plots: $gp failed on $d" >&2; exit 1; }
    done
  fi
  plots/report.sh "$d"
done
# comparison charts when results/ holds several machines
if [ $have_gnuplot = 1 ] && [ "$(ls -d results/*/ 2>/dev/null | wc -l)" -gt 1 ]; then
  for gp in plots/compare-*.gp; do
    [ -e "$gp" ] && gnuplot -c "$gp" results
  done
fi
exit 0
