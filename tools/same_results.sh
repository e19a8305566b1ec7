#!/usr/bin/env bash
# tools/same_results.sh BUILD_BEFORE BUILD_AFTER — for a change meant to
# leave behaviour alone: runs the tiny GPT preset in all seven modes, an MLP
# run and `halflab-numerics all` from two builds, and compares every CSV they
# write. Lines starting with '# ' (metadata: version, date, command) and the
# columns that measure time or the machine's load (step_time_ms*,
# tokens_per_s, samples_per_s, load_start, load_end, wall_s) are left out;
# everything else must be identical, byte for byte. Both builds run with two
# OpenMP threads, so that reductions split the same way. Exit status 0 when
# identical, 1 when anything differs (each differing file is named), 2 on bad
# usage. Scratch output goes to a temporary folder, removed at the end.
set -euo pipefail
usage="usage: tools/same_results.sh BUILD_BEFORE BUILD_AFTER"
[ $# -eq 2 ] || { echo "$usage" >&2; exit 2; }
for b in "$1" "$2"; do
  for p in train/halflab-train numerics/halflab-numerics; do
    [ -x "$b/$p" ] || { echo "same_results: $b/$p is not built" >&2; exit 2; }
  done
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

run_all() { # BUILD OUT
  local build=$1 out=$2 mode
  for mode in fp32 amp-fp16 amp-bf16 fp16-noscale fp16-static fp16-master fp16-pure; do
    OMP_NUM_THREADS=2 "$build/train/halflab-train" --device cpu --preset tiny --mode "$mode" --steps 120 \
      --eval-every 40 --name tiny --out "$out/train" >/dev/null 2>&1
  done
  OMP_NUM_THREADS=2 "$build/train/halflab-train" --device cpu --model mlp --mode amp-fp16 --steps 60 --name mlp \
    --out "$out/train" >/dev/null 2>&1
  "$build/numerics/halflab-numerics" all --device cpu --out "$out/numerics" >/dev/null 2>&1
}

# The CSV without metadata lines and without the measured columns (by header name).
strip() {
  grep -v '^# ' "$1" | awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++)
                if ($i ~ /^(step_time_ms.*|tokens_per_s|samples_per_s|load_start|load_end|wall_s)$/) drop[i] = 1 }
    { line = ""; for (i = 1; i <= NF; i++) if (!drop[i]) line = line (line == "" ? "" : ",") $i; print line }'
}

run_all "$1" "$scratch/before"
run_all "$2" "$scratch/after"
status=0 count=0
while IFS= read -r f; do
  count=$((count + 1))
  if [ ! -f "$scratch/after/$f" ]; then
    echo "same_results: $f: written before, not after"
    status=1
  elif ! cmp -s <(strip "$scratch/before/$f") <(strip "$scratch/after/$f"); then
    echo "same_results: $f differs"
    status=1
  fi
done < <(cd "$scratch/before" && find . -name '*.csv' | LC_ALL=C sort)
extra=$(comm -13 <(cd "$scratch/before" && find . -name '*.csv' | LC_ALL=C sort) \
                 <(cd "$scratch/after" && find . -name '*.csv' | LC_ALL=C sort))
[ -z "$extra" ] || { echo "same_results: written after, not before: $extra"; status=1; }
echo "same_results: $count CSV files: $([ $status = 0 ] && echo identical || echo DIFFERENT)"
exit $status
