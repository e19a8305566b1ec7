#!/usr/bin/env bash
# scripts/bench.sh BUILD_DIR [--quick] — what `ninja -C build bench` runs:
# every measurement for the device (numerics probes, GEMM / bandwidth /
# footprint benchmarks, training runs), then the charts and REPORT.md.
# Results go to results/<machine>/ under the source tree. With --quick the
# same at smoke-test sizes (`ninja -C build bench-quick`), written to
# BUILD_DIR/results-quick/<machine>/ ($HALFLAB_RESULTS/<machine>/ when
# set) so that a smoke run never overwrites the reference results.
set -euo pipefail
build=$(cd "${1:?usage: scripts/bench.sh BUILD_DIR [--quick]}" && pwd)
shift
quick=()
[ "${1:-}" = "--quick" ] && quick=(--quick)
cd "$(dirname "$0")/.."
if [ ${#quick[@]} -gt 0 ]; then
  export HALFLAB_RESULTS=${HALFLAB_RESULTS:-$build/results-quick}  # every program's default folder root
else
  unset HALFLAB_RESULTS
fi

start=$SECONDS
stage() { printf '\n== %s (at %d s) ==\n' "$*" $((SECONDS - start)) >&2; }
run() { # run a program if it was built; a missing one is said, not hidden
  local exe=$build/$1
  shift
  if [ ! -x "$exe" ]; then
    echo "bench: $(basename "$exe") is not built in this tree; skipping its part" >&2
    return 0
  fi
  "$exe" "$@"
}

# Each family appends its measurements below, in the order the report reads.
stage "numerics probes"
run numerics/halflab-numerics all "${quick[@]}"
run numerics/halflab-numerics formats --value 0.4 "${quick[@]}"   # the 0.4 of the value_bits chart

stage "GEMM, bandwidth and the quantizers"
run bench/halflab-bench gemm "${quick[@]}"
run bench/halflab-bench gemm --accuracy "${quick[@]}"
run bench/halflab-bench bandwidth "${quick[@]}"
run bench/halflab-bench quantize "${quick[@]}"

stage "AMP core overhead (CPU)"
run bench/halflab-bench mlp-step --device cpu "${quick[@]}"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  stage "AMP core overhead (GPU)"
  run bench/halflab-bench mlp-step --device cuda "${quick[@]}"
fi

stage "memory footprint"
run bench/halflab-bench footprint "${quick[@]}"

stage "quantization probes on the GPT's tensors"
if [ -x "$build/train/halflab-train" ] && [ -x "$build/bench/halflab-bench" ]; then
  scripts/quantize-tensors.sh "$build" "${quick[@]}"
else
  echo "bench: halflab-train or halflab-bench is not built in this tree; skipping the quantization probes" >&2
fi

stage "training runs"
if [ -x "$build/train/halflab-train" ]; then
  scripts/train-all.sh "$build" "${quick[@]}"
else
  echo "bench: halflab-train is not built in this tree; skipping its part" >&2
fi
bench/peers/compare_cpu.sh "$build" "${quick[@]}"  # halflab vs the PyTorch peer on the CPU (says so when torch is absent)

stage "charts and report"
if [ ${#quick[@]} -gt 0 ]; then
  machine_dirs=()   # the folders that hold CSVs (not slides/ or print/)
  for d in "$HALFLAB_RESULTS"/*/; do ls "$d"*.csv >/dev/null 2>&1 && machine_dirs+=("${d%/}"); done
  scripts/plots.sh "${machine_dirs[@]}"
else
  scripts/plots.sh
fi
echo "bench: results in ${HALFLAB_RESULTS:-results}/" >&2
echo "bench: done in $((SECONDS - start)) s" >&2
