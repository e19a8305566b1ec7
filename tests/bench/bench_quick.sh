#!/usr/bin/env bash
# bench_quick.sh BUILD_DIR — suite e2e: the main job end to end at smoke-test
# sizes (scripts/bench.sh --quick, what `ninja -C build bench-quick` runs)
# into a scratch folder: it must finish, every CSV must carry halflab's
# metadata header, REPORT.md must have every section (a skipped one saying
# 'skipped: why'), every chart the
# report shows must have been drawn (where gnuplot is installed), and the
# committed results/ must not be touched.
set -euo pipefail
build=$(cd "${1:?usage: bench_quick.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/halflab-bench-quick.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "bench-quick: $*" >&2; exit 1; }

touch "$tmp/start"
if ! HALFLAB_RESULTS=$tmp/results "$src/scripts/bench.sh" "$build" --quick >"$tmp/log" 2>&1; then
  tail -20 "$tmp/log" >&2
  fail "scripts/bench.sh --quick failed (last lines above)"
fi

machines=("$tmp"/results/*)
[ ${#machines[@]} = 1 ] && [ -d "${machines[0]}" ] || fail "expected one machine folder, got: ${machines[*]}"
d=${machines[0]}

ncsv=0
while IFS= read -r -d '' f; do
  ncsv=$((ncsv + 1))
  [ "$(head -c 9 "$f")" = "# halflab" ] || fail "$f does not start with halflab's metadata header"
done < <(find "$d" -name '*.csv' -print0)
[ $ncsv -ge 40 ] || fail "only $ncsv CSV files written"

report=$d/REPORT.md
[ -s "$report" ] || fail "no REPORT.md"
for section in "## Numerics probes" "## GEMM and memory bandwidth" "## Memory footprint" "## Training runs" \
  "## PyTorch peer"; do
  grep -qF "$section" "$report" || fail "REPORT.md lacks the section '$section'"
done
# On a CPU the training section shows what a GPT-2 124M step costs there
if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
  grep -q '^### GPT-2 124M on this CPU' "$report" || fail "REPORT.md lacks the GPT-2 124M CPU step table"
  for m in fp32 amp-bf16 amp-fp16; do
    grep -q "^| $m | completed |" <(awk '/^### GPT-2 124M on this CPU/ { p = 1; next } /^##/ { p = 0 } p' "$report") ||
      fail "the GPT-2 124M CPU table has no completed $m row"
  done
fi
# The peer is optional (scripts/setup.sh --peers): without it the section must
# say it was skipped and why; with it, show the measurement. CI installs the
# peer and sets HALFLAB_REQUIRE_PEER=1, so a skipped peer fails there.
peer=$(awk '/^## PyTorch peer/ { p = 1; next } /^## / { p = 0 } p' "$report")
if skipped=$(grep -m1 '^skipped: ' <<<"$peer"); then
  [ "${HALFLAB_REQUIRE_PEER:-0}" = 1 ] && fail "the PyTorch peer is required (HALFLAB_REQUIRE_PEER=1) but REPORT.md says: $skipped"
  echo "bench-quick: PyTorch peer section says: $skipped"
else
  grep -q '^| halflab |' <<<"$peer" || fail "the PyTorch peer section neither says 'skipped: ...' nor shows halflab's step times"
fi

if command -v gnuplot >/dev/null 2>&1; then
  charts=$(grep -o '([A-Za-z0-9_-]*\.png)' "$report" | tr -d '()' | sort -u)
  [ "$(echo "$charts" | wc -l)" -ge 16 ] || fail "REPORT.md shows only these charts: $charts"
  for c in $charts; do
    [ -s "$d/$c" ] || fail "REPORT.md shows $c, which was not drawn"
  done
else
  echo "bench-quick: gnuplot is not installed: charts not checked"
fi

changed=$(find "$src/results" -newer "$tmp/start" -type f 2>/dev/null || true)
[ -z "$changed" ] || fail "bench-quick wrote into the committed results: $changed"
echo "bench-quick: $ncsv CSV files, REPORT.md and its charts in order"
