#!/usr/bin/env bash
# bench/peers/compare_cpu.sh BUILD_DIR [--quick] [--out DIR] — the small GPT
# preset's training step on the CPU (6 layers, width 384, 6 heads, 16 x 128
# tokens of the generated text, ~10.8 M parameters), halflab-train against
# the PyTorch peer (bench/peers/gpt_peer.py), side by side in one run: same
# initial weights (--save-init / --init-weights), same batches
# (--export-batches / --batches), same optimizer and schedule, same thread
# count, in fp32, amp-bf16 and amp-fp16, each under OMP_WAIT_POLICY=passive
# and libgomp's default, three times over: the implementations, modes and
# policies alternate within each round, so that a change of load hits every
# side, and each figure is the median of the three runs' medians. The peer's attention is
# the form a user writes, F.scaled_dot_product_attention (--attention sdpa);
# the parity tests (tests/peers/) keep the exact form. peer_step_times.csv
# says which form each row timed (column attention).
#
#   full (ninja bench): 3 rounds of 2 warm-up + 6 timed steps per run, both
#     policies; about 10 minutes on 2 cores. PyTorch's amp-fp16 stops after 1
#     warm-up + 1 timed step of the same schedule: on a CPU without fp16
#     arithmetic (AVX512-FP16 / AMX-FP16) torch's fp16 products take a slow
#     path (about 25 s per step on the 2-core AMD EPYC development VM,
#     against 0.6 s for bf16).
#   --quick (ninja bench-quick): smoke size, one round of 1 warm-up + 2 timed
#     steps of 4 x 128 tokens, passive only; under a minute.
#
# The peer's Python: $PEER_PYTHON, else what scripts/peer-python.sh prints.
# Without it nothing measured earlier is touched: the reason is printed and
# written to DIR/peer_skipped.csv (one row, column reason), and the script
# exits 0. A completed comparison replaces, in DIR (default results/<machine>/
# of the CPU, as halflab's programs name it):
#   peers/train_peers-POLICY-rN_MODE_*.csv  halflab-train's runs of round N (own folder: its
#   peers/peer_peers-POLICY-rN_MODE_*.csv   train_summary.csv stays out of the
#                                         training table), the peer's runs
#   peer_step_times.csv                   min / median / max step time and
#                                         tokens/s per implementation, mode, policy
#   peer_expectations.csv                 the expectations: halflab's AMP steps
#                                         against its fp32 step and PyTorch's,
#                                         each with its reason
# and removes peer_skipped.csv (and peer_targets.csv, the expectations'
# earlier name); it prints the ratios (PyTorch / halflab median;
# above 1: halflab faster). Everything is measured in a scratch folder first,
# so an interrupted run leaves the earlier results as they were.
set -euo pipefail
usage="usage: bench/peers/compare_cpu.sh BUILD_DIR [--quick] [--out DIR]"
command_line="bench/peers/compare_cpu.sh $*"
build=$(cd "${1:?$usage}" && pwd)
shift
quick=0
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    *) echo "compare_cpu.sh: unknown option '$1' ($usage)" >&2; exit 2 ;;
  esac
  shift
done
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
printf '\n== PyTorch peer: the small GPT preset on the CPU, halflab vs PyTorch ==\n' >&2

train=$build/train/halflab-train
if [ ! -x "$train" ]; then
  echo "compare_cpu: halflab-train is not built in $build; peer comparison skipped" >&2
  exit 0
fi
scratch=$(mktemp -d /tmp/halflab-peers.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

# The machine's folder, as halflab's programs name it
[ -n "$out" ] || out=$(scripts/results-dir.sh "$build" cpu)
mkdir -p "$out"

# REASON: said, and recorded in peer_skipped.csv with halflab's metadata
# lines; earlier measurements stay as they are.
skip() {
  local reason=${1//,/;} # one CSV cell
  local version # "halflab-train (halflab 0.1.0, 61bcfa8)" -> "0.1.0 (61bcfa8)", as the programs' first line
  version=$("$train" --version 2>/dev/null | sed -n 's/.*(halflab \([^,]*\), \(.*\))$/\1 (\2)/p')
  {
    echo "# halflab ${version:-unknown}"
    echo "# schema: 2"
    echo "# command: $command_line"
    echo "# device: cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sed -n 1p)$(awk -F': *' '/^cpu family/ && !f {f = $2} /^model[[:space:]]*:/ && !m {m = $2} END {if (f != "" && m != "") printf " (family %s model %s)", f, m}' /proc/cpuinfo), $(nproc) logical cores"
    echo "# host: $(uname -n), $(uname -s) $(uname -r) $(uname -m)"
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# what: the PyTorch comparison (bench/peers/compare_cpu.sh) did not run; earlier measurements, if any, are kept"
    echo "# units: " # reason is text: no unit (step_times.py --columns-md describes the file)
    echo "reason"
    echo "$reason"
  } >"$out/peer_skipped.csv.tmp"
  mv "$out/peer_skipped.csv.tmp" "$out/peer_skipped.csv"
  echo "compare_cpu: PyTorch comparison skipped: $1 (wrote $out/peer_skipped.csv)" >&2
  exit 0
}

if [ -n "${PEER_PYTHON:-}" ]; then
  python=$PEER_PYTHON
  "$python" -c 'import torch, numpy' 2>/dev/null || skip "PEER_PYTHON=$python cannot import torch and numpy"
elif ! python=$(scripts/peer-python.sh 2>"$scratch/why"); then
  cat "$scratch/why" >&2
  if grep -q "is not installed" "$scratch/why"; then
    skip "PyTorch not installed (scripts/setup.sh --peers installs it)"
  fi
  skip "PyTorch peer unusable: $(sed -n '1s/^peer-python.sh: //p' "$scratch/why")"
fi

# ---- lengths (see the header); the small preset's settings, given to the peer explicitly
policies=(passive default)
rounds=3 steps=8 warmup=2 batch=16
torch_fp16_stop=2 torch_fp16_warmup=1 # PyTorch amp-fp16: 1 warm-up + 1 timed step of the same schedule
if [ $quick = 1 ]; then
  policies=(passive)
  rounds=1 steps=3 warmup=1 batch=4
  torch_fp16_stop=0
fi
threads=${OMP_NUM_THREADS:-$(nproc)}
eval_rows=8 # evaluation is not timed; its loss goes into the table
train_common=(--device cpu --preset small --batch "$batch" --steps "$steps" --warmup "$warmup" --stats-every 0
              --eval-every "$steps" --eval-samples "$eval_rows")
peer_common=(--device cpu --heads 6 --attention sdpa --optimizer adamw --lr 3e-4 --schedule cosine --steps "$steps" --stats-every 0
             --eval-every "$steps" --threads "$threads")
runs=$scratch/peers
mkdir -p "$runs"
"$train" "${train_common[@]}" --steps 0 --save-init "$scratch/w.bin" --export-batches "$scratch/b.bin" \
  --export-steps "$steps" 2>/dev/null >/dev/null

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "compare_cpu: small preset, $batch x 128 tokens, $rounds rounds of $steps steps ($warmup warm-up) per run," \
  "$threads threads, policies: ${policies[*]}; PyTorch: $python; load average before: $load_before" >&2
start=$SECONDS
for round in $(seq "$rounds"); do
for policy in "${policies[@]}"; do
  # libgomp reads the policy when the program starts
  if [ "$policy" = passive ]; then env=(OMP_WAIT_POLICY=passive); else env=(-u OMP_WAIT_POLICY); fi
  for mode in fp32 amp-bf16 amp-fp16; do
    name=peers-$policy-r$round
    echo "compare_cpu: round $round $policy $mode: halflab" >&2
    env "${env[@]}" OMP_NUM_THREADS="$threads" "$train" "${train_common[@]}" --mode "$mode" \
      --init-weights "$scratch/w.bin" --name "$name" --out "$runs" 2>"$scratch/log" >/dev/null ||
      { cat "$scratch/log" >&2; exit 1; }
    length=(--warmup "$warmup")
    if [ "$mode" = amp-fp16 ] && [ "$torch_fp16_stop" -gt 0 ]; then
      length=(--warmup "$torch_fp16_warmup" --stop-after "$torch_fp16_stop")
    fi
    echo "compare_cpu: round $round $policy $mode: PyTorch" >&2
    env "${env[@]}" "$python" bench/peers/gpt_peer.py "${peer_common[@]}" "${length[@]}" --mode "$mode" \
      --init-weights "$scratch/w.bin" --batches "$scratch/b.bin" --name "$name" --out "$runs" \
      2>"$scratch/log" >/dev/null || { cat "$scratch/log" >&2; exit 1; }
  done
done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "compare_cpu: load average after: $load_after ($(nproc) CPUs); runs took $((SECONDS - start)) s" >&2

fp16_note=""
[ "$torch_fp16_stop" -gt 0 ] && fp16_note="; PyTorch amp-fp16: $torch_fp16_stop steps ($torch_fp16_warmup warm-up) of that schedule"
"$python" bench/peers/step_times.py --runs "$runs" --out "$scratch/peer_step_times.csv" --preset small \
  --expectations "$scratch/peer_expectations.csv" \
  --load-before "$load_before" --load-after "$load_after" \
  --note "small preset, $batch x 128 tokens, AdamW lr 3e-4 cosine, $rounds rounds of $steps steps ($warmup warm-up) per run, same weights and batches; PyTorch's attention: F.scaled_dot_product_attention$fp16_note"

# the comparison is complete: it replaces the earlier one
rm -rf "$out/peers.new"
cp -r "$runs" "$out/peers.new"
rm -rf "$out/peers"
mv "$out/peers.new" "$out/peers"
for f in peer_step_times.csv peer_expectations.csv; do
  cp "$scratch/$f" "$out/$f.tmp"
  mv "$out/$f.tmp" "$out/$f"
done
rm -f "$out/peer_skipped.csv" "$out/peer_targets.csv"  # the latter: the expectations' earlier name, now replaced
echo "compare_cpu: wrote $out/peer_step_times.csv, $out/peer_expectations.csv and $out/peers/" >&2
