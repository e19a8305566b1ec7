#!/usr/bin/env bash
# scripts/plots.sh [--strict] [RESULTS_DIR...] — what `ninja -C build plots`
# runs: every chart of plots/*.gp for every results folder (default: all of
# results/*/), then each folder's REPORT.md. Charts need the CSVs they read;
# a script whose input is absent says so (on stdout) and draws nothing.
# Anything gnuplot writes to stderr is a warning or an error: it is shown
# with the script's name, and with --strict (the chart test) it fails the
# run. Without gnuplot the charts are skipped with a notice and the reports
# are still written.
set -euo pipefail
strict=0
if [ "${1:-}" = --strict ]; then strict=1; shift; fi
dirs=()
for d in "$@"; do dirs+=("$(cd "$d" && pwd)"); done   # absolute: the script changes directory
cd "$(dirname "$0")/.."
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
      case "$(basename "$gp")" in
        compare-*) continue ;;  # cross-machine charts: below
        style.gp) continue ;;   # the preamble the charts load
      esac
      # stdout (the scripts' notices) passes through; stderr is captured
      rc=0
      { err=$(gnuplot -c "$gp" "$d" 2>&1 1>&3 3>&-) || rc=$?; } 3>&1
      if [ $rc != 0 ]; then printf '%s\n' "$err" >&2; echo "plots: $gp failed on $d" >&2; exit 1; fi
      if [ -n "$err" ]; then
        printf '%s\n' "$err" | sed "s|^|plots: $gp on $d: |" >&2
        [ $strict = 0 ] || { echo "plots: gnuplot wrote to stderr (--strict)" >&2; exit 1; }
      fi
    done
  fi
  plots/report.sh "$d"
done
# comparison charts where the folder above the ones drawn holds several
# machines (results/, not a smoke run's scratch folder beside it)
root=$(dirname "${dirs[0]}")
if [ $have_gnuplot = 1 ] && [ "$(ls -d "$root"/*/ 2>/dev/null | wc -l)" -gt 1 ]; then
  for gp in plots/compare-*.gp; do
    [ -e "$gp" ] && gnuplot -c "$gp" "$root"
  done
fi
exit 0
