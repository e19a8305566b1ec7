#!/usr/bin/env bash
# scripts/train-all.sh BUILD_DIR [--quick] — the training runs of `ninja bench`
# (scripts/bench.sh calls it): halflab-train in every precision mode on the
# same weights and data, the demonstrations of what fp16 without loss
# scaling and pure fp16 weights lose, the loss scale's dynamics, and the
# thread measurements of the CPU step. Results go to results/<machine>/
# (halflab-train's default); the charts and REPORT.md come from
# scripts/plots.sh.
#
# On the CPU (no usable GPU):
#   tiny        the tiny GPT preset (2 layers, width 64, sorting), every mode, 600 steps
#   scale       amp-fp16 with the scale doubling every 25 clean steps: GradScaler's sawtooth
#   absorb      SGD with a small learning rate (0.001): pure fp16 weights absorb most updates
#   underflow   SGD, initial weights x 0.05, the loss averaged over 4096 tokens: unscaled fp16
#               gradients flush to zero
#   threads-*   the tiny fp32 step with 1 and 2 threads, OMP_WAIT_POLICY passive and libgomp's default
#   gpt2-cpu    GPT-2 124M (--preset gpt2) in fp32, amp-bf16 and amp-fp16 at the largest batch of
#               1024 tokens the footprint benchmark found to fit (footprint_training.csv) that
#               halflab-train's own check accepts, 1 warm-up + 3 timed steps: what a step costs on
#               this CPU (about 25 minutes on 2 cores at batch 12)
#   profile-small  the small preset's step op by op (--profile), fp32, amp-bf16 and amp-fp16: 2 warm-up + 4
#               timed steps each (about 20 s on 2 cores; --quick: 1 + 2 steps of 4 x 128 tokens)
#   profile-small-portable  the same amp-bf16 run with HALFLAB_CPU_UNITS=portable: what a CPU without
#               bf16 units gets
#   dp-small    data-parallel (MPI): the small preset's step, 1 process x 2 threads against 2 ranks x 1
#               thread in fp32, amp-bf16 and amp-fp16, the gradients all-reduced in fp32, bf16 and fp16
#               (buckets during the backward) and in fp32 in one piece after it (dp-small-2x1-whole);
#               2 warm-up + 6 timed steps each (about 3 minutes on 2 cores)
#   dp-wire     data-parallel: the tiny preset in amp-fp16 on 2 ranks, 600 steps, per all-reduce wire type:
#               what bf16 and fp16 gradients on the wire cost in accuracy
# On a GPU, dp-gpu: the small preset in one process against one rank per GPU over NCCL (mpirun -n GPUs),
# fp32, amp-fp16, amp-bf16 (not yet run: no GPU has run halflab).
# On a GPU (the core's CUDA kernels present): the gpt2 preset (GPT-2 124M's shape, 8 x 1024 tokens,
# 20 warm-up + 50 timed steps) in every mode, a 300-step convergence run of fp32 and amp-fp16 at that
# shape, and the CPU's runs above on the GPU.
# --quick: the same runs, a few steps each (bench-quick). --out DIR: another folder. --only NAME:
# only the runs of that group (e.g. --only gpt2-cpu), the others' results left as they are.
set -euo pipefail
usage="usage: scripts/train-all.sh BUILD_DIR [--quick] [--out DIR] [--only NAME]"
build=$(cd "${1:?$usage}" && pwd)
shift
quick=0
out=()
only=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --out) out=(--out "$(mkdir -p "${2:?$usage}" && cd "$2" && pwd)"); shift ;;
    --only) only=${2:?$usage}; shift ;;
    *) echo "train-all: unknown argument '$1' ($usage)" >&2; exit 2 ;;
  esac
  shift
done
cd "$(dirname "$0")/.."
train=$build/train/halflab-train
[ -x "$train" ] || { echo "train-all: $train is not built" >&2; exit 1; }

modes="fp32 amp-fp16 amp-bf16 fp16-noscale fp16-static fp16-master fp16-pure"
steps() { if [ $quick = 1 ]; then echo "$2"; else echo "$1"; fi; }
wanted() { [ -z "$only" ] || [ "$only" = "$1" ]; } # NAME: is this group to run?
run() { # NAME MODE ARGS...: one run, its table line on stdout
  local name=$1 mode=$2
  shift 2
  wanted "$name" || return 0
  echo "train-all: $name $mode" >&2
  "$train" --name "$name" --mode "$mode" "${out[@]}" "$@"
}

# Does a step run on the GPU here? (a GPU, and the core's CUDA kernels in this build)
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  probe=$(mktemp -d)
  if "$train" --device cuda --steps 1 --batch 2 --eval-samples 2 --stats-every 0 --out "$probe" >/dev/null 2>"$probe/err"; then
    gpu=1
  else
    echo "train-all: a GPU is present but a training step does not run on it: $(tail -1 "$probe/err")" >&2
    echo "train-all: running the CPU's set on the CPU" >&2
  fi
  rm -rf "$probe"
fi
device=cpu
[ $gpu = 1 ] && device=cuda

start=$SECONDS
if [ $gpu = 1 ]; then
  # GPT-2 124M's shape: throughput per mode (the first 20 steps are warm-up), then convergence
  for m in $modes; do
    run gpt2 "$m" --device cuda --preset gpt2 $([ $quick = 1 ] && echo --quick)
  done
  for m in fp32 amp-fp16; do
    run gpt2-converge "$m" --device cuda --preset gpt2 --steps "$(steps 300 20)" --eval-every "$(steps 50 10)" \
      --warmup "$(steps 20 3)" --stats-every 10
  done
fi

# the tiny preset, every mode
for m in $modes; do
  run tiny "$m" --device $device --steps "$(steps 600 60)" --eval-every "$(steps 50 20)"
done

# The small preset's step op by op: where fp32's and amp-bf16's time goes (REPORT.md's per-op table),
# and amp-fp16's (fp16 products widened for sgemm on a CPU: its table is in its own CSV)
for m in fp32 amp-bf16 amp-fp16; do
  run profile-small "$m" --device $device --preset small --steps "$(steps 6 3)" --warmup "$(steps 2 1)" \
    --batch "$(steps 16 4)" --stats-every 0 --eval-every 1000000 --eval-samples 8 --profile
done

# ... and amp-bf16 forced onto the portable paths (HALFLAB_CPU_UNITS=portable: bf16 products widened to fp32
# for sgemm, conversions in plain C): the step a CPU without bf16 units gets
if [ $gpu = 0 ] && wanted profile-small-portable; then
  echo "train-all: profile-small-portable amp-bf16 (HALFLAB_CPU_UNITS=portable)" >&2
  HALFLAB_CPU_UNITS=portable "$train" --name profile-small-portable --mode amp-bf16 "${out[@]}" --device cpu \
    --preset small --steps "$(steps 6 3)" --warmup "$(steps 2 1)" --batch "$(steps 16 4)" --stats-every 0 \
    --eval-every 1000000 --eval-samples 8 --profile
fi

# GradScaler's dynamics: growth every 25 clean steps until fp16 overflows, then a back-off
run scale amp-fp16 --device $device --steps "$(steps 600 60)" --eval-every "$(steps 50 20)" \
  --growth-interval "$(steps 25 5)" --hist-steps 1

# The demonstrations (docs/train.md). Pure fp16 weights lose small updates to absorption
# (the classic 1 + 0.0001); master weights keep them.
for m in fp32 amp-fp16 fp16-master fp16-pure; do
  run absorb "$m" --device $device --optimizer sgd --lr 0.001 --schedule constant \
    --steps "$(steps 600 40)" --eval-every "$(steps 50 20)"
done
# Unscaled fp16 gradients flush to zero: small initial weights and a loss averaged over many tokens.
for m in fp32 amp-fp16 fp16-noscale fp16-static; do
  run underflow "$m" --device $device --optimizer sgd --lr 0.05 --schedule constant --init-gain 0.05 \
    --batch 256 --steps "$(steps 150 15)" --eval-every "$(steps 25 5)"
done

# Threads on the CPU: the tiny fp32 step with 1 and 2 threads, OpenMP's passive wait policy and
# libgomp's default. The
# machine's load is in each summary row (load_start, load_end).
if [ $gpu = 0 ]; then
  for threads in 1 2; do
    for policy in passive default; do
      wanted "threads-$threads-$policy" || wanted threads || continue
      env=(OMP_WAIT_POLICY=passive)
      [ $policy = default ] && env=(-u OMP_WAIT_POLICY)
      echo "train-all: threads-$threads-$policy" >&2
      env "${env[@]}" OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
        "$train" "${out[@]}" --name "threads-$threads-$policy" --mode fp32 --device cpu --steps "$(steps 200 20)" \
        --eval-every 1000000 --stats-every 0 --warmup 10
    done
  done
fi
# Data-parallel on the CPU (halflab-train built with MPI, mpirun found): the small preset's step as
# 1 process x 2 threads against 2 ranks x 1 thread, per mode and per all-reduce wire type, the
# gradients in buckets overlapping the backward (the default) and in one piece after it; then the
# tiny preset's accuracy with each wire type (amp-fp16, 2 ranks, the tiny group's 600 steps).
mpirun_cmd=()
if [ $gpu = 0 ] && { wanted dp-small || wanted dp-wire; }; then
  if ! "$train" --help | grep -q '(built in this build: MPI'; then
    echo "train-all: dp-small, dp-wire skipped: this halflab-train is built without MPI" >&2
  elif ! command -v mpirun >/dev/null 2>&1; then
    echo "train-all: dp-small, dp-wire skipped: mpirun not found (openmpi-bin)" >&2
  else
    mpirun_cmd=(mpirun -n 2)
    [ "$(id -u)" = 0 ] && mpirun_cmd+=(--allow-run-as-root)
    [ "$(nproc)" -lt 2 ] && mpirun_cmd+=(--oversubscribe)
  fi
fi
dp_small=(--device cpu --preset small --batch "$(steps 16 4)" --steps "$(steps 8 3)" --warmup "$(steps 2 1)"
  --stats-every 0 --eval-every 1000000 --eval-samples 8)
if [ ${#mpirun_cmd[@]} -gt 0 ] && wanted dp-small; then
  for m in fp32 amp-bf16 amp-fp16; do
    echo "train-all: dp-small-1x2 $m" >&2
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 "$train" --name dp-small-1x2 --mode "$m" "${out[@]}" "${dp_small[@]}"
    for wire in fp32 bf16 fp16; do
      echo "train-all: dp-small-2x1-$wire $m" >&2
      OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "${mpirun_cmd[@]}" "$train" --name "dp-small-2x1-$wire" --mode "$m" \
        "${out[@]}" "${dp_small[@]}" --allreduce-dtype "$wire" --profile
    done
    echo "train-all: dp-small-2x1-whole $m" >&2
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "${mpirun_cmd[@]}" "$train" --name dp-small-2x1-whole --mode "$m" \
      "${out[@]}" "${dp_small[@]}" --bucket-mb 0 --profile
  done
fi
if [ ${#mpirun_cmd[@]} -gt 0 ] && wanted dp-wire; then
  for wire in fp32 bf16 fp16; do
    echo "train-all: dp-wire-$wire amp-fp16" >&2
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "${mpirun_cmd[@]}" "$train" --name "dp-wire-$wire" --mode amp-fp16 \
      "${out[@]}" --device cpu --steps "$(steps 600 60)" --eval-every "$(steps 50 20)" --allreduce-dtype "$wire"
  done
fi

# Data-parallel on GPUs (halflab-train built with GPU ranks, mpirun found): the small preset's step in one
# process against one rank per GPU under mpirun over NCCL (one GPU: one rank, the whole GPU ranks' path
# with its all-reduce), per mode: step time, the all-reduce's time and bytes (dp-gpu-1proc, dp-gpu-Nrank).
if [ $gpu = 1 ] && wanted dp-gpu; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if ! "$train" --help | grep -q 'GPU ranks over NCCL'; then
    echo "train-all: dp-gpu skipped: this halflab-train is built without GPU ranks (NCCL)" >&2
  elif ! command -v mpirun >/dev/null 2>&1; then
    echo "train-all: dp-gpu skipped: mpirun not found (openmpi-bin)" >&2
  elif [ "${ngpu:-0}" -lt 1 ]; then
    echo "train-all: dp-gpu skipped: nvidia-smi lists no GPU" >&2
  else
    gpu_mpirun=(mpirun -n "$ngpu")
    [ "$(id -u)" = 0 ] && gpu_mpirun+=(--allow-run-as-root)
    dp_gpu=(--device cuda --preset small --batch "$(steps 16 4)" --steps "$(steps 12 3)" --warmup "$(steps 4 1)"
      --stats-every 0 --eval-every 1000000 --eval-samples 8)
    for m in fp32 amp-fp16 amp-bf16; do
      echo "train-all: dp-gpu-1proc $m" >&2
      "$train" --name dp-gpu-1proc --mode "$m" "${out[@]}" "${dp_gpu[@]}"
      echo "train-all: dp-gpu-${ngpu}rank $m (mpirun -n $ngpu, NCCL)" >&2
      "${gpu_mpirun[@]}" "$train" --name "dp-gpu-${ngpu}rank" --mode "$m" "${out[@]}" "${dp_gpu[@]}"
    done
  fi
fi

# GPT-2 124M on the CPU: what a step costs per mode, at the largest batch of 1024 tokens that the
# footprint benchmark says fits in this machine's memory and halflab-train accepts (all three modes
# alike), 1 warm-up + 3 timed steps, no convergence (--quick: batch 1, 1 + 1 steps).
if [ $gpu = 0 ] && wanted gpt2-cpu; then
  if [ $quick = 1 ]; then
    gpt2_batch=1
  else
    dir=${out[1]:-$(scripts/results-dir.sh "$build" cpu)}
    fp=$dir/footprint_training.csv
    gpt2_batch=$( [ -f "$fp" ] && awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next }
      $c["device"] == "cpu" && $c["model"] == "gpt2-124m" && $c["seq"] == 1024 && $c["mode"] ~ /^(fp32|amp-bf16|amp-fp16)$/ {
        b = $c["max_batch"] + 0; if (!n++ || b < best) best = b } END { if (n) print best }' "$fp" )
  fi
  if [ -z "${gpt2_batch:-}" ] || [ "$gpt2_batch" -lt 1 ]; then
    echo "train-all: gpt2-cpu skipped: no footprint_training.csv with a GPT-2 124M batch that fits (halflab-bench footprint writes it)" >&2
  else
    # The footprint counts the training state against the memory free when it ran; halflab-train
    # checks its own step (evaluation logits included) against what is free now and refuses a batch
    # that does not fit (exit 2). amp-bf16 needs the most (its weight casts): it goes first, one
    # sequence fewer at each refusal, and the others run at the batch it took.
    err=$(mktemp)
    for m in amp-bf16 fp32 amp-fp16; do
      mode_batch=$gpt2_batch
      while :; do
        rc=0
        run gpt2-cpu "$m" --device cpu --preset gpt2 --batch "$mode_batch" --steps "$(steps 4 2)" --warmup 1 \
          --eval-every 1000000 --eval-samples 1 --stats-every 0 2>"$err" || rc=$?
        cat "$err" >&2
        if [ $rc = 2 ] && grep -q "needs about" "$err" && [ "$mode_batch" -gt 1 ]; then
          mode_batch=$((mode_batch - 1)) gpt2_batch=$((mode_batch))
          echo "train-all: gpt2-cpu: trying batch $mode_batch" >&2
          continue
        fi
        # Killed by the OS (SIGKILL, 137: out of memory) at a batch the accounting accepted: the
        # process needs more than core/models counts (library and allocator overhead, the widening
        # path's fp32 copies); two sequences fewer for this mode alone, at most twice
        if [ $rc = 137 ] && [ "$mode_batch" -gt 2 ] && [ "$mode_batch" -gt $((gpt2_batch - 4)) ]; then
          mode_batch=$((mode_batch - 2))
          echo "train-all: gpt2-cpu $m stopped by the OS (exit 137): trying batch $mode_batch" >&2
          continue
        fi
        # a run the OS stops is said, and the other modes still run
        [ $rc = 0 ] || echo "train-all: gpt2-cpu $m at batch $mode_batch stopped (exit $rc): no row for it in the report" >&2
        break
      done
    done
    rm -f "$err"
  fi
fi
echo "train-all: done in $((SECONDS - start)) s" >&2
