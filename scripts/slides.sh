#!/usr/bin/env bash
# scripts/slides.sh BUILD_DIR [--out DIR] [--no-train] — what `ninja -C build slides`
# runs: the lecture deck, one PDF of 16:9 pages, each a one-line claim and the
# chart that proves it (the chart's slides title, computed from the data):
#
#   0  title
#   1  0.4 in three formats           plots/value_bits.gp   (formats --value 0.4)
#   2  4096 x 16 overflows fp16       plots/overflow.gp     (overflow)
#   3  1 + 0.0001 = 1 in fp16, bf16   plots/absorption.gp   (absorption)
#   4  2^-24, fp16's smallest         plots/subnormal.gp    (subnormal)
#   5  loss scaling                   plots/loss_scale.gp   (subnormal)
#   6  lost updates                   plots/lost_update.gp  (absorption)
#   7  fp8 and what a scale does      plots/tour_fp8.gp     (tour)
#   8  the training histogram         plots/train-hist.gp
#
# The data are measured here: BUILD_DIR/numerics/halflab-numerics runs into
# DIR/data/ (default DIR: BUILD_DIR/slides). The histogram comes from a
# 3-step run of the underflow recipe of scripts/train-all.sh (fp32,
# amp-fp16, fp16-noscale; a few seconds) where BUILD_DIR/train/halflab-train
# is built, else (or with --no-train) from the committed results folder
# that has those runs; its slide says which. The deck is DIR/halflab-numerics-deck.pdf
# (gnuplot's pdfcairo pages joined by pdfunite, from poppler-utils).
# Exit status: 0 done, 1 a program or chart failed, 2 bad arguments or a missing tool.
set -euo pipefail
usage="usage: scripts/slides.sh BUILD_DIR [--out DIR] [--no-train]"
case ${1:-} in -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
[ -d "$1" ] || { echo "slides: $1: no such build folder ($usage)" >&2; exit 2; }
build=$(cd "$1" && pwd)
shift
out=$build/slides
train_wanted=1
while [ $# -gt 0 ]; do
  case $1 in
    --out) [ $# -ge 2 ] || { echo "slides: --out needs a folder ($usage)" >&2; exit 2; }; out=$2; shift ;;
    --no-train) train_wanted=0 ;;
    *) echo "slides: unknown argument '$1' ($usage)" >&2; exit 2 ;;
  esac
  shift
done
cd "$(dirname "$0")/.."
numerics=$build/numerics/halflab-numerics
[ -x "$numerics" ] || { echo "slides: $numerics is not built (ninja -C $build numerics/halflab-numerics)" >&2; exit 2; }
command -v gnuplot >/dev/null 2>&1 || { echo "slides: gnuplot is not installed (Debian: apt-get install gnuplot-nox)" >&2; exit 2; }
command -v pdfunite >/dev/null 2>&1 || { echo "slides: pdfunite is not installed (Debian: apt-get install poppler-utils)" >&2; exit 2; }
mkdir -p "$out" || { echo "slides: cannot create $out" >&2; exit 2; }
out=$(cd "$out" && pwd)
data=$out/data
rm -rf "$data"
mkdir -p "$data/slides"
log=$data/programs.log

# PROGRAM ARGS...: a run whose tables go to the log; its last lines shown when it fails
run() {
  if ! "$@" >>"$log" 2>&1; then
    tail -5 "$log" >&2
    echo "slides: failed: $*" >&2
    exit 1
  fi
}

# ---------------------------------------------------------------- the numbers
echo "slides: halflab-numerics into $data" >&2
run "$numerics" formats --value 0.4 --out "$data"
for sub in overflow absorption subnormal tour; do run "$numerics" "$sub" --out "$data"; done

# ---------------------------------------------------------------- the gradients
train=$build/train/halflab-train
group=underflow
if [ $train_wanted = 1 ] && [ -x "$train" ]; then
  echo "slides: a 3-step halflab-train run of the $group recipe (fp32, amp-fp16, fp16-noscale)" >&2
  for mode in fp32 amp-fp16 fp16-noscale; do
    run "$train" --name "$group" --mode "$mode" --optimizer sgd --lr 0.05 --schedule constant --init-gain 0.05 \
      --batch 256 --steps 3 --hist-steps 2 --eval-every 1000 --eval-samples 64 --stats-every 0 --out "$data"
  done
  train_note="gradients of a 3-step halflab-train run on this machine ($group recipe, step 2)"
else
  src=""
  for d in results/*/; do
    [ -f "$d/train_${group}_fp32_hist.csv" ] && { src=${d%/}; break; }
  done
  [ -n "$src" ] || { echo "slides: no halflab-train here and no results/*/train_${group}_fp32_hist.csv to show" >&2; exit 1; }
  for mode in fp32 amp-fp16 fp16-noscale; do
    [ ! -f "$src/train_${group}_${mode}_hist.csv" ] || cp "$src/train_${group}_${mode}_hist.csv" "$data"/
  done
  why=$([ $train_wanted = 1 ] && echo "halflab-train is not built here" || echo "--no-train")
  train_note="gradients from $src ($why)"
fi

# ---------------------------------------------------------------- the slides
# the title slide: what the deck shows, and the run (a title page may carry it)
meta() { sed -n "s/\r\$//; s/^# $2: //p" "$data/$1" | head -1; } # (a CR before the line end is no part of it)
device=$(meta overflow.csv device | cut -d, -f1)
version=$(LC_ALL=C sed -n '1s/^\xef\xbb\xbf//; 1s/\r$//; 1s/^# //p' "$data/overflow.csv") # (a BOM is not)
date=$(meta overflow.csv date | cut -c1-10)
gnuplot 2>"$data/gnuplot.err" <<EOF || { cat "$data/gnuplot.err" >&2; echo "slides: the title slide failed" >&2; exit 1; }
preset = 'slides'
load 'plots/style.gp'
eval out_open('$data', 'deck-title', 1920, 1080, 2)
unset border
unset tics
unset key
set label 1 "What half precision does to numbers" at screen 0.5, screen 0.62 center font sprintf('Sans,%.1f', heading_pt(cur_pt))
set label 2 "fp32, fp16, bf16 and fp8 in eight charts" at screen 0.5, screen 0.54 center tc rgb c_note
set label 3 "computed by halflab-numerics on $device" at screen 0.5, screen 0.3 center tc rgb c_note noenhanced
set label 4 "$version, $date" at screen 0.5, screen 0.25 center tc rgb c_note noenhanced
plot [0:1] [0:1] NaN notitle
unset output
EOF
pages=("$data/slides/deck-title.pdf")
for chart in value_bits overflow absorption subnormal loss_scale lost_update tour_fp8 train-hist; do
  note=()
  [ "$chart" = train-hist ] && note=(-e "slide_note = '$train_note'")
  rm -f "$data/slides/$chart.pdf"
  if ! gnuplot -e "preset='slides'" "${note[@]}" -c "plots/$chart.gp" "$data" >>"$log" 2>"$data/gnuplot.err"; then
    cat "$data/gnuplot.err" >&2
    echo "slides: plots/$chart.gp failed" >&2
    exit 1
  fi
  [ ! -s "$data/gnuplot.err" ] || sed "s|^|slides: plots/$chart.gp: |" "$data/gnuplot.err" >&2
  [ -s "$data/slides/$chart.pdf" ] || { tail -3 "$log" >&2; echo "slides: plots/$chart.gp drew no slides/$chart.pdf" >&2; exit 1; }
  pages+=("$data/slides/$chart.pdf")
done
deck=$out/halflab-numerics-deck.pdf
pdfunite "${pages[@]}" "$deck" || { echo "slides: pdfunite failed" >&2; exit 1; }
echo "slides: ${#pages[@]} slides in $deck"
