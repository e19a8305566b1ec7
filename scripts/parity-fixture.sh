#!/usr/bin/env bash
# scripts/parity-fixture.sh BUILD_DIR [--out DIR] — writes the frozen parity
# fixture (default tests/peers/fixture/; docs/peers.md, "The frozen parity
# fixture") with the PyTorch peer (bench/peers/gpt_peer.py):
#   init.bin      a small GPT's initial weights (halflab-train --save-init)
#   batches.bin   its token batches (halflab-train --export-batches)
#   MODE.bin      for fp32, amp-bf16 and amp-fp16, the peer's run from them
#                 (gpt_peer --record): every step's loss, gradient norm, loss
#                 scale and every parameter's unscaled gradient
#   source.txt    the PyTorch version, the date, the commands, and the
#                 options tests/peers/test_fixture.c runs halflab-train with
# BUILD_DIR holds the halflab-train that writes the weights and batches. The
# fixture is written into a scratch folder first and moved in complete.
# Without the pinned peer (scripts/peer-python.sh) it says why and exits 1.
set -euo pipefail
usage="usage: scripts/parity-fixture.sh BUILD_DIR [--out DIR]"
command_line="scripts/parity-fixture.sh $*"
[ $# -ge 1 ] || { echo "parity-fixture.sh: no BUILD_DIR ($usage)" >&2; exit 2; }
[ -d "$1" ] || { echo "parity-fixture.sh: BUILD_DIR '$1' is not a folder ($usage)" >&2; exit 2; }
build=$(cd "$1" && pwd)
shift
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/tests/peers/fixture
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "parity-fixture.sh: --out needs a folder ($usage)" >&2; exit 2; }
           out=$2; shift ;;
    *) echo "parity-fixture.sh: unknown option '$1' ($usage)" >&2; exit 2 ;;
  esac
  shift
done
train=$build/train/halflab-train
[ -x "$train" ] || { echo "parity-fixture.sh: $train is not built (ninja -C $build)" >&2; exit 2; }
[ -d "$(dirname "$out")" ] || { echo "parity-fixture.sh: --out: the folder above '$out' does not exist" >&2; exit 2; }
python=$("$root/scripts/peer-python.sh") || exit 1
peer=$root/bench/peers/gpt_peer.py

# The model: the tiny preset's GPT (2 layers, 4 heads, 16 tokens of the
# sorting task, batch 16, SGD lr 0.1 cosine) at width 16 in place of 64:
# 7,024 parameters, so that 3 steps of every gradient in 3 modes stay
# under 300 KiB. The peer runs the exact attention (halflab's arithmetic) on
# one thread.
steps=3
train_options="--device cpu --layers 2 --heads 4 --embd 16 --batch 16 --eval-samples 16 --optimizer sgd"
peer_options="--heads 4 --optimizer sgd --attention exact --threads 1"
modes="fp32 amp-bf16 amp-fp16"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/parity-fixture.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/fixture" "$scratch/runs"
# shellcheck disable=SC2086  # the option strings are word lists
"$train" $train_options --steps 0 --export-steps $steps --save-init "$scratch/fixture/init.bin" \
  --export-batches "$scratch/fixture/batches.bin" --out "$scratch/runs" >/dev/null
for mode in $modes; do
  # shellcheck disable=SC2086
  "$python" "$peer" --init-weights "$scratch/fixture/init.bin" --batches "$scratch/fixture/batches.bin" \
    $peer_options --steps $steps --mode "$mode" --record "$scratch/fixture/$mode.bin" \
    --name fixture --out "$scratch/runs" >/dev/null
done

torch_line=$("$python" -c 'import torch, numpy; print("%s, numpy %s, CPU capability %s" % (torch.__version__,
  numpy.__version__, torch.backends.cpu.get_cpu_capability()))')
cat >"$scratch/fixture/source.txt" <<TEXT
PyTorch: $torch_line
date: $(date -u +%Y-%m-%dT%H:%M:%SZ)
command: $command_line
halflab: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
init.bin, batches.bin: halflab-train <halflab-train options> --steps 0 --export-steps <steps> --save-init init.bin --export-batches batches.bin
MODE.bin: gpt_peer.py --init-weights init.bin --batches batches.bin <peer options> --steps <steps> --mode MODE --record MODE.bin
steps: $steps
modes: $modes
halflab-train options: $train_options
peer options: $peer_options
TEXT

mkdir -p "$out"
for f in init.bin batches.bin source.txt $(for m in $modes; do echo "$m.bin"; done); do
  mv "$scratch/fixture/$f" "$out/$f"
done
du -cb "$out"/* | tail -1 | awk -v out="$out" '{printf "parity-fixture.sh: wrote %s (%d bytes)\n", out, $1}'
