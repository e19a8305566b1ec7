#!/usr/bin/env bash
# tests/plots/slides.sh SOURCE_ROOT BUILD_ROOT — the lecture deck (scripts/slides.sh,
# `ninja slides`) built into a temporary folder, twice: with the committed
# training histograms (--no-train) and, where halflab-train is built, with its
# own short run. Each time: one page per slide (a title, then the eight charts
# in the lecture's order, each page's claim checked), every page 16:9, the
# sizes of the slides preset (tools/chart_sizes.py slides), and the training
# slide naming where its data came from. Also: a missing build folder and a
# missing pdfunite are one-line errors with exit status 2. Exit 77 (skipped)
# where gnuplot or poppler-utils is not installed.
set -euo pipefail
root=$(cd "${1:?usage: tests/plots/slides.sh SOURCE_ROOT BUILD_ROOT}" && pwd)
build=$(cd "${2:?usage: tests/plots/slides.sh SOURCE_ROOT BUILD_ROOT}" && pwd)
for tool in gnuplot pdfunite pdfinfo pdftotext; do
  command -v $tool >/dev/null 2>&1 || { echo "$tool is not installed: deck test skipped"; exit 77; }
done
work=$(mktemp -d /tmp/halflab-slides.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# the deck's slides in order: a fragment of each page's text (the claim, or
# for the title and the training slide what the deck itself writes there)
pages=("What half precision does to numbers" "0.4 is not stored exactly" "4096 x 16" "1 + 0.0001 = 1 in fp16 and bf16"
       "fp16's smallest power of two" "Loss scale" "10000 x 0.0001" "values are NaN in e4m3" "gradients")

# DECK-FOLDER NOTE: the checks on one deck; NOTE: what the training slide must say
check_deck() {
  local deck=$1/halflab-numerics-deck.pdf note=$2 n i size
  [ -s "$deck" ] || { fail "$deck not written"; return; }
  n=$(pdfinfo "$deck" | sed -n 's/^Pages: *//p')
  [ "$n" = ${#pages[@]} ] || fail "$deck: $n pages, not one per slide (${#pages[@]})"
  # every page 16:9 (pdfinfo: "Page    3 size: 959.999 x 540 pts")
  pdfinfo -f 1 -l "$n" "$deck" | awk '/^Page +[0-9]+ size:/ { r = $4 / $6; if (r < 16 / 9 * 0.99 || r > 16 / 9 * 1.01) { print "page " $2 ": " $4 " x " $6; bad = 1 } } END { exit bad }' \
    || fail "$deck: a page that is not 16:9 (above)"
  for ((i = 1; i <= ${#pages[@]} && i <= n; i++)); do
    pdftotext -f $i -l $i "$deck" - | tr '\n' ' ' | grep -F "${pages[i - 1]}" >/dev/null || fail "$deck: page $i lacks '${pages[i - 1]}'"
  done
  pdftotext -f "$n" -l "$n" "$deck" - | tr '\n' ' ' | grep -F "$note" >/dev/null || fail "$deck: the training slide does not say '$note'"
  python3 "$root/tools/chart_sizes.py" slides "$deck" || fail "$deck: text or lines below the slides preset's sizes"
}

# with the committed histograms
if "$root/scripts/slides.sh" "$build" --out "$work/committed" --no-train >"$work/log" 2>&1; then
  grep -q "^slides: ${#pages[@]} slides in $work/committed/halflab-numerics-deck.pdf" "$work/log" || fail "slides.sh did not name the deck and its slides: $(tail -1 "$work/log")"
  check_deck "$work/committed" "gradients from results/"
else
  cat "$work/log" >&2
  fail "scripts/slides.sh --no-train failed"
fi
# with halflab-train's own run, where it is built
if [ -x "$build/train/halflab-train" ]; then
  if "$root/scripts/slides.sh" "$build" --out "$work/trained" >"$work/log" 2>&1; then
    check_deck "$work/trained" "3-step halflab-train run on this machine"
  else
    cat "$work/log" >&2
    fail "scripts/slides.sh with halflab-train failed"
  fi
fi

# bad input: no build folder; no pdfunite (a PATH with the tools before that check only)
rc=0
"$root/scripts/slides.sh" "$work/none" >"$work/log" 2>&1 || rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$work/log")" = 1 ] || fail "a missing build folder: exit $rc, $(cat "$work/log")"
mkdir -p "$work/bin"
ln -s "$(command -v dirname)" "$(command -v gnuplot)" "$work/bin/"
rc=0
PATH=$work/bin "$BASH" "$root/scripts/slides.sh" "$build" --out "$work/nopdfunite" >"$work/log" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q "poppler-utils" "$work/log" && [ "$(wc -l <"$work/log")" = 1 ] || fail "no pdfunite: exit $rc, $(cat "$work/log")"

if [ $failures -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "deck: all checks passed"
