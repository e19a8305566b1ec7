#!/usr/bin/env bash
# scripts/plots.sh [--strict] [--presets LIST] [RESULTS_DIR...] — what
# `ninja -C build plots` runs: every chart of plots/*.gp for every results
# folder (default: all of results/*/), in each preset of LIST (screen, slides,
# print, comma-separated; default $HALFLAB_PLOT_PRESETS, else meson's
# plot-presets option, else screen: see plots/style.gp), then each folder's REPORT.md. slides and print renderings
# go to the folder's slides/ and print/ subfolders. Charts need the CSVs they read;
# a script whose input is absent says so (on stdout) and draws nothing.
# Anything gnuplot writes to stderr is a warning or an error: it is shown
# with the script's name, and with --strict (the chart test) it fails the
# run. Without gnuplot the charts are skipped with a notice and the reports
# are still written.
set -euo pipefail
strict=0
presets=${HALFLAB_PLOT_PRESETS:-${HALFLAB_PLOT_PRESETS_CONFIGURED:-screen}}
while [ $# -gt 0 ]; do
  case "$1" in
    --strict) strict=1; shift ;;
    --presets) presets=${2:?plots: --presets needs a list (screen,slides,print)}; shift 2 ;;
    --presets=*) presets=${1#--presets=}; shift ;;
    *) break ;;
  esac
done
IFS=, read -r -a preset_list <<<"$presets"
[ ${#preset_list[@]} -gt 0 ] || { echo "plots: no preset named (screen, slides or print)" >&2; exit 2; }
for p in "${preset_list[@]}"; do
  case "$p" in screen|slides|print) ;; *) echo "plots: unknown preset '$p' (screen, slides or print)" >&2; exit 2 ;; esac
done
for d in "$@"; do [ -d "$d" ] || { echo "plots: $d: no such folder" >&2; exit 2; }; done
dirs=()
for d in "$@"; do dirs+=("$(cd "$d" && pwd)"); done   # absolute: the script changes directory
cd "$(dirname "$0")/.."
if [ ${#dirs[@]} -eq 0 ]; then
  # a machine's folder holds CSVs (results/slides/ and results/print/ hold
  # the comparison charts' renderings)
  for d in results/*/; do ls "$d"*.csv >/dev/null 2>&1 && dirs+=("${d%/}"); done
fi
if [ ${#dirs[@]} -eq 0 ]; then
  echo "plots: no results folder yet; run 'ninja -C build bench' first" >&2
  exit 0
fi
# draw SCRIPT FOLDER PRESET: stdout (the scripts' notices) passes through;
# stderr is captured
draw() {
  local rc=0 err
  { err=$(gnuplot -e "preset='$3'" -c "$1" "$2" 2>&1 1>&3 3>&-) || rc=$?; } 3>&1
  if [ $rc != 0 ]; then printf '%s\n' "$err" >&2; echo "plots: $1 ($3) failed on $2" >&2; exit 1; fi
  if [ -n "$err" ]; then
    printf '%s\n' "$err" | sed "s|^|plots: $1 ($3) on $2: |" >&2
    [ $strict = 0 ] || { echo "plots: gnuplot wrote to stderr (--strict)" >&2; exit 1; }
  fi
}
have_gnuplot=1
command -v gnuplot >/dev/null 2>&1 || have_gnuplot=0
[ $have_gnuplot = 1 ] || echo "plots: gnuplot is not installed here: charts skipped (run 'ninja -C build plots' where it is)" >&2
for d in "${dirs[@]}"; do
  if [ $have_gnuplot = 1 ]; then
    for preset in "${preset_list[@]}"; do
      [ "$preset" = screen ] || mkdir -p "$d/$preset"
      for gp in plots/*.gp; do
        [ -e "$gp" ] || continue
        case "$(basename "$gp")" in
          compare-*) continue ;;  # cross-machine charts: below
          style.gp) continue ;;   # the preamble the charts load
        esac
        draw "$gp" "$d" "$preset"
      done
    done
  fi
  plots/report.sh "$d"
done
# comparison charts where the folder above the ones drawn holds several
# machines (results/, not a smoke run's scratch folder beside it)
root=$(dirname "${dirs[0]}")
if [ $have_gnuplot = 1 ] && [ "$(ls "$root"/*/*.csv 2>/dev/null | xargs -r -n1 dirname | sort -u | wc -l)" -gt 1 ]; then
  for preset in "${preset_list[@]}"; do
    [ "$preset" = screen ] || mkdir -p "$root/$preset"
    for gp in plots/compare-*.gp; do
      [ -e "$gp" ] && draw "$gp" "$root" "$preset"
    done
  done
fi
exit 0
