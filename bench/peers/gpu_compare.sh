#!/usr/bin/env bash
# bench/peers/gpu_compare.sh BUILD_DIR [--full] [--out DIR] — on a machine with
# an NVIDIA GPU and a CUDA PyTorch: halflab-train against the PyTorch peer
# (bench/peers/gpt_peer.py) on the gpt2 preset (GPT-2 124M's shape, 8 x 1024
# tokens), from the same initial weights and batches, timed the same way
# (warm-up steps left out, then the median of the timed steps, each from the
# batch upload to the synchronised end of the update). Modes in order of
# importance: fp32, amp-fp16 (halflab's dynamic scaler / torch's GradScaler),
# amp-bf16. The peer's attention is F.scaled_dot_product_attention (--attention
# sdpa), the form a user writes. After each mode it rewrites
# peer_step_times.csv, so a run stopped by a timeout keeps what it measured;
# one run answers both GPU expectations:
#   halflab amp-fp16 / halflab fp32 median step time (expected <= 0.5), and
#   PyTorch amp-fp16 / halflab amp-fp16 (expected >= 1: halflab at least as fast).
#
#   --quick (default): halflab-train's --quick lengths (3 warm-up + 7 timed
#           steps); --full: the preset's 20 + 50.
# Writes in DIR (default results/<gpu>/, as halflab's programs name it):
#   peers/train_peers-cuda_MODE_*.csv, peers/peer_peers-cuda_MODE_*.csv, peer_step_times.csv.
# PyTorch: $PEER_PYTHON, else the first of the pinned peer (scripts/peer-python.sh)
# and the image's python3 that imports torch and sees a GPU; without one the
# comparison is skipped (exit 0, said on stderr). scripts/gpu-check.sh runs
# this as its 'peers' stage.
set -euo pipefail
build=$(cd "${1:?usage: bench/peers/gpu_compare.sh BUILD_DIR [--quick|--full] [--out DIR]}" && pwd)
shift
full=0
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) full=0 ;;
    --full) full=1 ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    *) echo "gpu_compare.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
here=$(cd "$(dirname "$0")" && pwd)
train=$build/train/halflab-train
[ -x "$train" ] || { echo "gpu_compare: halflab-train is not built in $build; skipped" >&2; exit 0; }

python=""
for p in ${PEER_PYTHON:-} $("$here/../../scripts/peer-python.sh" 2>/dev/null) python3; do
  if command -v "$p" >/dev/null 2>&1 &&
     "$p" -c 'import sys, torch, numpy; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    python=$p
    break
  fi
done
if [ -z "$python" ]; then
  echo "gpu_compare: no Python here imports a CUDA-enabled torch (set PEER_PYTHON); PyTorch comparison skipped" >&2
  exit 0
fi
echo "gpu_compare: PyTorch: $("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, torch.cuda.get_device_name(0))')" >&2

scratch=$(mktemp -d /tmp/halflab-peers-gpu.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
if [ -z "$out" ]; then # the GPU's results folder, as halflab-train names it (asked in a scratch folder)
  (cd "$scratch" && HALFLAB_RESULTS= "$train" --device cuda --steps 1 --layers 1 --heads 1 --embd 8 --batch 1 --eval-samples 1 \
     --stats-every 0 >/dev/null 2>&1) || { echo "gpu_compare: halflab-train cannot train on the GPU here" >&2; exit 1; }
  out=${HALFLAB_RESULTS:-$PWD/results}/$(ls "$scratch/results" | sed -n 1p)
  rm -rf "$scratch/results"
fi
mkdir -p "$out/peers"

if [ $full = 1 ]; then steps=70 warmup=20; else steps=10 warmup=3; fi  # the preset's, and its --quick
# the gpt2 preset's settings, given to the peer explicitly (halflab-train picks them from the preset)
peer_common=(--device cuda --heads 12 --attention sdpa --optimizer adamw --lr 3e-4 --schedule cosine --steps "$steps" --warmup "$warmup"
             --eval-every 10 --stats-every 10)
name=peers-cuda
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
summarise() {
  "$python" "$here/step_times.py" --runs "$out/peers" --out "$out/peer_step_times.csv" --preset gpt2 \
    --load-before "$load_before" --load-after "$(cut -d' ' -f1-3 /proc/loadavg)" \
    --note "gpt2 preset (12 layers, 12 heads, width 768, vocabulary 50257, 8 x 1024 tokens), AdamW lr 3e-4, $steps steps ($warmup warm-up), same weights and batches; PyTorch's attention: F.scaled_dot_product_attention"
}

for mode in fp32 amp-fp16 amp-bf16; do
  files=(--init-weights "$scratch/w.bin")
  [ "$mode" = fp32 ] && files=(--save-init "$scratch/w.bin" --export-batches "$scratch/b.bin")
  echo "gpu_compare: halflab-train $mode" >&2
  "$train" --preset gpt2 --device cuda --mode "$mode" --steps "$steps" --warmup "$warmup" "${files[@]}" --name "$name" --out "$out/peers"
  echo "gpu_compare: PyTorch $mode" >&2
  "$python" "$here/gpt_peer.py" --mode "$mode" "${peer_common[@]}" --init-weights "$scratch/w.bin" \
    --batches "$scratch/b.bin" --name "$name" --out "$out/peers"
  summarise
done
