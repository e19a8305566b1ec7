#!/usr/bin/env bash
# numerics_only_no_blas.sh — suite e2e, in a numerics-only build
# (-Dnumerics-only=true) only: halflab-numerics runs every probe with no BLAS
# to open (HALFLAB_BLAS_LIBRARY names a file that does not exist), and each
# CSV's "# blas:" line says none was opened. A full build opens the BLAS to
# describe it in every CSV, and stops when it cannot.
set -euo pipefail
prog=${HALFLAB_NUMERICS:?run through meson test}
tmp=$(mktemp -d /tmp/halflab-numerics-no-blas.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "numerics-only-no-blas: $*" >&2; exit 1; }

HALFLAB_BLAS_LIBRARY=$tmp/no-such-libopenblas.so.0 "$prog" all --device cpu --quick --out "$tmp/out" >/dev/null 2>"$tmp/err" ||
  { cat "$tmp/err" >&2; fail "halflab-numerics all failed without a BLAS"; }
n=0
for csv in "$tmp"/out/*.csv; do
  n=$((n + 1))
  grep -q '^# blas: not opened' "$csv" || fail "$(basename "$csv"): $(grep '^# blas:' "$csv" || echo 'no # blas: line')"
done
[ $n -ge 10 ] || fail "only $n CSV files written"
echo "numerics-only-no-blas: $n CSV files written without a BLAS, each saying none was opened"
