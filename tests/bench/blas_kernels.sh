#!/usr/bin/env bash
# blas_kernels.sh BUILD_DIR — suite e2e: the BLAS kernel set, as a user meets it.
#   1. Started with an empty environment (env -i), each program records in its
#      CSV metadata the BLAS, its version and a kernel set that fits this CPU:
#      never a generic one on a CPU with AVX2 or AVX-512, chosen by halflab
#      unless the library decided.
#   2. A user's OPENBLAS_CORETYPE wins: forced to the generic Prescott kernels,
#      the metadata says so, carries a blas-warning, and REPORT.md warns.
set -euo pipefail
build=$(cd "${1:?usage: blas_kernels.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/halflab-blas-kernels.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "blas-kernels: $*" >&2; exit 1; }
meta() { grep -m1 "^# $2: " "$1" | sed "s/^# $2: //"; }
cpu_has() { grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -qx "$1"; }

wide=""
cpu_has avx2 && wide=AVX2
cpu_has avx512f && wide=AVX-512

# ---- 1. nothing set: every program, started bare
env -i "$build/bench/halflab-bench" gemm --device cpu --quick --studies square --dtypes fp32 --out "$tmp/gemm" >/dev/null 2>&1 ||
  fail "halflab-bench gemm failed under env -i"
env -i "$build/numerics/halflab-numerics" formats --out "$tmp/numerics" >/dev/null 2>&1 ||
  fail "halflab-numerics formats failed under env -i"
env -i "$build/train/halflab-train" --device cpu --steps 2 --batch 4 --eval-samples 4 --stats-every 0 \
  --out "$tmp/train" >/dev/null 2>&1 || fail "halflab-train failed under env -i"
n=0
for f in "$tmp"/gemm/gemm.csv "$tmp"/numerics/*.csv "$tmp"/train/*.csv; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  blas=$(meta "$f" blas)
  [ -n "$blas" ] || fail "$f has no '# blas:' metadata"
  case "$blas" in OpenBLAS\ [0-9]*) ;; *) fail "$f: the BLAS and its version are not named: $blas" ;; esac
  [ -n "$(meta "$f" cpu-features)" ] || fail "$f has no '# cpu-features:' metadata"
  for feature in fma f16c avx2 avx512f avx512_bf16 avx512_fp16 amx_tile amx_bf16 amx_fp16 "AMX tile state"; do
    meta "$f" cpu-features | grep -qF "$feature" || fail "$f: cpu-features does not mention $feature"
  done
  if [ -n "$wide" ]; then
    grep -q '^# blas-warning:' "$f" && fail "$f: generic kernels on a CPU with $wide under env -i: $blas"
    case "$blas" in *"chosen by halflab, from cpuid"*) ;; *) fail "$f: kernel set not chosen from cpuid: $blas" ;; esac
  fi
done
[ $n -ge 3 ] || fail "only $n CSV files to check"

# ---- 2. the user's choice wins, and a generic kernel set is flagged
env -i OPENBLAS_CORETYPE=Prescott "$build/bench/halflab-bench" gemm --device cpu --quick --studies square \
  --dtypes fp32 --out "$tmp/forced" >/dev/null 2>&1 || fail "halflab-bench gemm failed with OPENBLAS_CORETYPE=Prescott"
blas=$(meta "$tmp/forced/gemm.csv" blas)
case "$blas" in *"kernels Prescott (chosen by OPENBLAS_CORETYPE=Prescott, set in the environment)"*) ;;
  *) fail "forced kernels not recorded: $blas" ;; esac
if [ -n "$wide" ]; then
  grep -q '^# blas-warning: kernel set Prescott' "$tmp/forced/gemm.csv" || fail "no blas-warning for Prescott on a $wide CPU"
  bash "$src/plots/report.sh" "$tmp/forced" 2>/dev/null
  grep -q 'Warning: generic BLAS kernels' "$tmp/forced/REPORT.md" || fail "REPORT.md does not warn about the generic kernels"
  bash "$src/plots/report.sh" "$tmp/gemm" 2>/dev/null
  grep -q 'generic BLAS kernels' "$tmp/gemm/REPORT.md" && fail "REPORT.md warns although the kernels fit"
fi
echo "blas-kernels: $n CSV files name the BLAS and a fitting kernel set; a forced generic set is flagged"
