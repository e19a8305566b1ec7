#!/usr/bin/env bash
# scripts/quantize-tensors.sh BUILD_DIR [--quick] — the quantization probes
# of `ninja bench` (scripts/bench.sh calls it): the tiny and the small GPT
# presets trained a little in fp32 (tiny: 100 steps of its 600-step
# schedule; small: 20 of 200), then one more step that writes the trained
# weights (--save-init of the resumed run), that step's unscaled gradients
# (--dump-grads) and each linear layer's input (--dump-activations); then
# halflab-bench quantize-error on the six files: quantize_error.csv,
# quantize_sweep.csv and (each model's activations against its weights)
# quantize_gemm.csv in the results folder. The weight files stay in a
# scratch folder, removed at the end. --quick: the tiny preset alone, no
# training first (the initial weights and the first step's tensors), the
# sweep in steps of 2^4 (bench-quick).
set -euo pipefail
usage="usage: scripts/quantize-tensors.sh BUILD_DIR [--quick]"
build=$(cd "${1:?$usage}" && pwd)
shift
quick=()
[ "${1:-}" = "--quick" ] && quick=(--quick) && shift
[ $# -eq 0 ] || { echo "quantize-tensors: unknown argument '$1' ($usage)" >&2; exit 2; }
train=$build/train/halflab-train
bench=$build/bench/halflab-bench
for p in "$train" "$bench"; do [ -x "$p" ] || { echo "quantize-tensors: $p is not built" >&2; exit 1; }; done
scratch=$(mktemp -d /tmp/halflab-quantize-tensors.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

# dump PRESET STEPS SCHEDULE ARGS...: train STEPS of a SCHEDULE-step run, then write the three files of
# the next step into $scratch/PRESET-{weights,gradients,activations}.bin
dump() {
  local preset=$1 trained=$2 schedule=$3
  shift 3
  local files=(--save-init "$scratch/$preset-weights.bin" --dump-grads "$scratch/$preset-gradients.bin"
               --dump-activations "$scratch/$preset-activations.bin")
  local common=(--name "quantize-$preset" --out "$scratch/runs" --stats-every 0 --eval-every 1000000 --eval-samples 8)
  echo "quantize-tensors: $preset: $trained steps, then the tensors of step $((trained + 1))" >&2
  if [ "$trained" = 0 ]; then
    "$train" --preset "$preset" --steps 1 "${common[@]}" "$@" "${files[@]}" >/dev/null
  else
    "$train" --preset "$preset" --steps "$schedule" --stop-after "$trained" --checkpoint "$scratch/$preset.ck" \
      "${common[@]}" "$@" >/dev/null
    "$train" --resume "$scratch/$preset.ck" --stop-after $((trained + 1)) --out "$scratch/runs" "${files[@]}" >/dev/null
  fi
}
presets="tiny small"
if [ ${#quick[@]} -gt 0 ]; then
  presets=tiny
  dump tiny 0 1 --batch 16
  made="the tiny GPT preset in fp32 at 16 sequences: its initial weights and its first step's gradients and linear-layer inputs"
else
  dump tiny 100 600
  dump small 20 200
  made="the tiny and small GPT presets in fp32 after 100 (tiny) and 20 (small) training steps: the weights, the next step's unscaled gradients and its linear-layer inputs"
fi
tensors=()
for preset in $presets; do
  for kind in weight gradient activation; do
    tensors+=(--tensors "$preset:$kind:$scratch/$preset-${kind}s.bin")
  done
done
"$bench" quantize-error "${tensors[@]}" --tensors-made "$made" "${quick[@]}"
