#!/usr/bin/env bash
# bench/peers/compare_cpu.sh BUILD_DIR [--quick] [--out DIR] — the tiny GPT's
# training step on the CPU, halflab-train against the PyTorch peer
# (bench/peers/gpt_peer.py), side by side in one run: same weights, same
# batches, same optimizer, same thread count, and each OpenMP wait policy
# (OMP_WAIT_POLICY=passive, and libgomp's default) for both.
#
# Writes, in DIR (default results/<machine>/ of the CPU, as halflab's programs
# name it):
#   peers/train_peers-POLICY_MODE_*.csv   halflab-train's runs (own folder: its
#   peers/peer_peers-POLICY_MODE_*.csv    train_summary.csv stays out of the
#                                         training table), the peer's runs
#   peer_step_times.csv                   min / median / max step time and
#                                         tokens/s per implementation, mode, policy
# and prints the ratio (PyTorch / halflab median; above 1: halflab faster) with
# the machine's load. Modes: fp32 (the comparison the goal is about) and
# amp-bf16. Runs interleave halflab and PyTorch so that a change of load hits
# both. Without PyTorch (/usr/bin/python3 cannot import torch) it says so and
# exits 0: the benchmark is skipped, not faked.
set -euo pipefail
build=$(cd "${1:?usage: bench/peers/compare_cpu.sh BUILD_DIR [--quick] [--out DIR]}" && pwd)
shift
quick=0
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    *) echo "compare_cpu.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
printf '\n== PyTorch peer: tiny GPT training step on the CPU, halflab vs PyTorch ==\n' >&2

train=$build/train/halflab-train
python=${PEER_PYTHON:-/usr/bin/python3}
if [ ! -x "$train" ]; then
  echo "compare_cpu: halflab-train is not built in $build; skipping the peer comparison" >&2
  exit 0
fi
if ! "$python" -c 'import torch, numpy' 2>/dev/null; then
  echo "compare_cpu: $python cannot import torch and numpy (scripts/setup.sh --peers installs them); peer comparison skipped" >&2
  exit 0
fi

# The machine's folder, as halflab's programs name it: ask halflab-train in a scratch folder.
scratch=$(mktemp -d /tmp/halflab-peers.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
if [ -z "$out" ]; then
  (cd "$scratch" && HALFLAB_RESULTS= "$train" --device cpu --steps 1 --batch 1 --eval-samples 1 --stats-every 0 >/dev/null 2>&1)
  slug=$(ls "$scratch/results" 2>/dev/null | sed -n 1p)
  [ -n "$slug" ] || { echo "compare_cpu: could not learn the results folder from halflab-train" >&2; exit 1; }
  out=${HALFLAB_RESULTS:-results}/$slug
  rm -rf "$scratch/results"
fi
mkdir -p "$out/peers"

if [ $quick = 1 ]; then steps=60 warmup=10; else steps=300 warmup=20; fi
threads=${OMP_NUM_THREADS:-$(nproc)}
common=(--steps "$steps" --warmup "$warmup" --stats-every 0 --eval-every "$steps")
"$train" --device cpu --mode fp32 --steps 0 --save-init "$scratch/w.bin" --export-batches "$scratch/b.bin" \
  --export-steps "$steps" >/dev/null

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "compare_cpu: $steps steps ($warmup warm-up) per run, $threads threads, load average before: $load_before" >&2
for policy in passive default; do
  # libgomp reads the policy when the program starts
  if [ $policy = passive ]; then env=(OMP_WAIT_POLICY=passive); else env=(-u OMP_WAIT_POLICY); fi
  for mode in fp32 amp-bf16; do
    env "${env[@]}" OMP_NUM_THREADS="$threads" "$train" --device cpu --mode "$mode" "${common[@]}" \
      --init-weights "$scratch/w.bin" --name "peers-$policy" --out "$out/peers" 2>"$scratch/log" >/dev/null ||
      { cat "$scratch/log" >&2; exit 1; }
    env "${env[@]}" "$python" bench/peers/gpt_peer.py --device cpu --mode "$mode" "${common[@]}" \
      --init-weights "$scratch/w.bin" --batches "$scratch/b.bin" --heads 4 --threads "$threads" \
      --name "peers-$policy" --out "$out/peers" 2>"$scratch/log" >/dev/null ||
      { cat "$scratch/log" >&2; exit 1; }
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "compare_cpu: load average after: $load_after ($(nproc) CPUs)" >&2

"$python" bench/peers/step_times.py --runs "$out/peers" --out "$out/peer_step_times.csv" \
  --load-before "$load_before" --load-after "$load_after" \
  --note "tiny GPT preset (2 layers, 4 heads, width 64, 64 x 16 tokens), AdamW, $steps steps, same weights and batches"
