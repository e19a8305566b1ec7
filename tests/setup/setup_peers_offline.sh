#!/usr/bin/env bash
# setup_peers_offline.sh BUILD_DIR — suite e2e: `scripts/setup.sh --peers`
# without access to the package index (pip pointed at a closed port on the
# loopback) must say in one line what failed, exit 1, leave the rest of the
# set-up in place and no peer that looks installed; the peer comparison then
# skips, and the report's peer section says "skipped: PyTorch not installed".
# The ml_dtypes reference setup.sh installs by default fails the same way in one line.
# setup.sh runs in a scratch copy of scripts/ beside a configured-looking
# build/, so that nothing of the real tree is touched.
set -euo pipefail
build=$(cd "${1:?usage: setup_peers_offline.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/halflab-setup-offline.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "setup-peers-offline: $*" >&2; exit 1; }

mkdir -p "$tmp/tree/scripts" "$tmp/tree/build"
cp "$src/scripts/setup.sh" "$src/scripts/peer-python.sh" "$src/scripts/nccl-wheel.sh" "$src/scripts/reference-python.sh" \
  "$tmp/tree/scripts/"
echo "# stand-in" >"$tmp/tree/build/build.ninja"
cp "$tmp/tree/build/build.ninja" "$tmp/build.ninja.before"

export HALFLAB_PEER_VENV=$tmp/venv
export HALFLAB_REFERENCE_VENV=$tmp/reference-venv # setup.sh installs the ml_dtypes reference by default
export HALFLAB_NCCL_VENV=$tmp/nccl-venv # where nvcc is and the toolkit lacks NCCL, setup.sh tries its wheel too
set +e
PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_RETRIES=0 PIP_TIMEOUT=2 PIP_CONFIG_FILE=/dev/null \
  "$tmp/tree/scripts/setup.sh" --peers >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
if grep -q 'missing Debian packages' "$tmp/err"; then
  echo "setup-peers-offline: Debian packages missing and not root: cannot test the peer step here" >&2
  exit 77
fi
[ $rc = 1 ] || { cat "$tmp/err" >&2; fail "expected exit 1 without the package index, got $rc"; }
[ "$(grep -c 'could not install the PyTorch peer' "$tmp/err")" = 1 ] || { cat "$tmp/err" >&2; fail "no one-line reason"; }
grep 'could not install' "$tmp/err" | grep -q 'torch==' || fail "the reason does not name what failed"
grep -q 'the rest of the set-up is in place' "$tmp/err" || fail "the message does not say the rest is in place"
cmp -s "$tmp/tree/build/build.ninja" "$tmp/build.ninja.before" || fail "build/ was changed"
if "$tmp/tree/scripts/peer-python.sh" >/dev/null 2>&1; then fail "a failed install looks installed"; fi
# the ml_dtypes reference: one line naming it, and nothing that looks installed
[ "$(grep -c 'could not install ml_dtypes (ml_dtypes==' "$tmp/err")" = 1 ] || { cat "$tmp/err" >&2; fail "no one-line reason for ml_dtypes"; }
if "$tmp/tree/scripts/reference-python.sh" >/dev/null 2>&1; then fail "a failed ml_dtypes install looks installed"; fi

# the comparison skips and says why, and the report says so
if [ -x "$build/train/halflab-train" ]; then
  out=$tmp/results
  PEER_PYTHON= "$src/bench/peers/compare_cpu.sh" "$build" --quick --out "$out" >/dev/null 2>"$tmp/cmp" ||
    { cat "$tmp/cmp" >&2; fail "compare_cpu.sh failed instead of skipping"; }
  [ ! -e "$out/peer_step_times.csv" ] || fail "compare_cpu.sh wrote step times without a peer"
  bash "$src/plots/report.sh" "$out" 2>/dev/null
  awk '/^## PyTorch peer/ { p = 1; next } /^## / { p = 0 } p' "$out/REPORT.md" |
    grep -q '^skipped: PyTorch not installed' || fail "REPORT.md's peer section does not say 'skipped: PyTorch not installed'"
fi
echo "setup-peers-offline: one line, exit 1, nothing half-installed; the peer section says it was skipped"
