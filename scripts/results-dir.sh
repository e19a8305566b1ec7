#!/usr/bin/env bash
# scripts/results-dir.sh BUILD_DIR [DEVICE] — prints the folder halflab's programs
# write to by default on this machine (${HALFLAB_RESULTS:-results}/<machine>,
# <machine> as the programs name it: the GPU's name, else the CPU's), for
# the scripts that read what an earlier stage wrote there. It asks
# halflab-train (on DEVICE: auto, the default, cpu or cuda), with a one-step
# run in a scratch folder that is removed.
set -euo pipefail
build=$(cd "${1:?usage: scripts/results-dir.sh BUILD_DIR [DEVICE]}" && pwd)
device=${2:-auto}
train=$build/train/halflab-train
[ -x "$train" ] || { echo "results-dir: $train is not built" >&2; exit 1; }
scratch=$(mktemp -d /tmp/halflab-results-dir.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && HALFLAB_RESULTS= "$train" --device "$device" --steps 1 --batch 1 --eval-samples 1 --stats-every 0 >/dev/null 2>&1)
slug=$(ls "$scratch/results" 2>/dev/null | sed -n 1p)
[ -n "$slug" ] || { echo "results-dir: halflab-train wrote no results folder" >&2; exit 1; }
echo "${HALFLAB_RESULTS:-results}/$slug"
