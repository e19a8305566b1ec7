#!/usr/bin/env bash
# scripts/fuzz.sh [--seconds N] [--jobs J] [TARGET...] — fuzzes the readers
# of the files halflab reads (tests/fuzz/, docs/tests.md "Fuzz targets"):
# checkpoint, weights, text, summary, steplog; all of them when none is
# named.
#
#   Configures build-fuzz/ when it is not (clang, -Dfuzz=true: libFuzzer,
#   AddressSanitizer and UndefinedBehaviorSanitizer, CPU only; scripts/setup.sh
#   --fuzz installs clang), builds the targets alone, writes a starting corpus
#   (fuzz_start_corpus: files made by halflab's own writers) and runs each target
#   for N seconds (default 600), J targets at a time (default 1), from the
#   starting corpus, the inputs kept in tests/fuzz/corpus/TARGET/ and what earlier runs
#   found (build-fuzz/fuzz/corpus/TARGET/, which grows).
#   Prints per target: executions, crashes, the corpus's size, and where a
#   crash's input was saved (build-fuzz/fuzz/crashes/); a target's whole
#   output is in build-fuzz/fuzz/TARGET.log. Exit status 1 on any crash (or
#   a target that did not run), 2 on bad usage.
set -uo pipefail
cd "$(dirname "$0")/.."

all_targets=(checkpoint weights text summary steplog)
seconds=600
jobs=1
targets=()
usage() { echo "fuzz.sh: $1 (see scripts/fuzz.sh --help)" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) [ $# -ge 2 ] || usage "--seconds needs a number"; seconds=$2; shift 2 ;;
    --jobs) [ $# -ge 2 ] || usage "--jobs needs a number"; jobs=$2; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage "unknown option '$1'" ;;
    *) [[ " ${all_targets[*]} " == *" $1 "* ]] || usage "no fuzz target '$1' (there are: ${all_targets[*]})"
       targets+=("$1"); shift ;;
  esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || usage "--seconds '$seconds' is not a whole number of seconds above 0"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || usage "--jobs '$jobs' is not a whole number above 0"
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

build=build-fuzz
if ! command -v clang >/dev/null 2>&1; then
  echo "fuzz.sh: clang is not installed (scripts/setup.sh --fuzz installs it)" >&2
  exit 1
fi
if [ ! -f $build/build.ninja ]; then
  CC=clang meson setup $build --buildtype=debugoptimized -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcuda=disabled -Dtests=disabled -Donednn=disabled -Dmpi=disabled >$build.setup.log 2>&1 || {
    cat $build.setup.log >&2; echo "fuzz.sh: configuring $build failed" >&2; exit 1; }
  rm -f $build.setup.log
fi
ninja -C $build tests/fuzz/fuzz_start_corpus "${targets[@]/#/tests/fuzz/fuzz_}" >$build/fuzz-build.log 2>&1 || {
  tail -n 40 $build/fuzz-build.log >&2; echo "fuzz.sh: building the fuzz targets failed" >&2; exit 1; }

work=$build/fuzz
rm -rf $work/start
mkdir -p $work/corpus $work/crashes
$build/tests/fuzz/fuzz_start_corpus $work/start || { echo "fuzz.sh: writing the starting corpus failed" >&2; exit 1; }
# the readers' scratch files (train_summary.csv, a resumed log) on tmpfs
# where there is one: they flush to disk, which a disk makes slow
scratch_root=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && scratch_root=/dev/shm

run_target() {
  local t=$1 kept=()
  [ -d tests/fuzz/corpus/$t ] && kept=(tests/fuzz/corpus/$t)
  mkdir -p $work/corpus/$t
  rm -f $work/crashes/$t-*
  # -close_fd_mask=3: the readers' messages about bad input are not wanted;
  # libFuzzer's own lines and the sanitizers' reports still come
  TMPDIR=$scratch_root ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    nice $build/tests/fuzz/fuzz_$t -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -close_fd_mask=3 \
    -print_final_stats=1 -artifact_prefix=$work/crashes/$t- $work/corpus/$t $work/start/$t "${kept[@]}" \
    >$work/$t.log 2>&1
  echo $? >$work/$t.rc
}

start=$(date +%s)
running=0
for t in "${targets[@]}"; do
  run_target "$t" &
  running=$((running + 1))
  if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

status=0
printf '%-11s %12s %8s %8s  %s\n' target executions crashes corpus "crash inputs"
for t in "${targets[@]}"; do
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' $work/$t.log | grep -o '[0-9]*$' | tail -n 1)
  crashes=$(find $work/crashes -name "$t-*" -type f | wc -l)
  corpus=$(find $work/corpus/$t -type f | wc -l)
  rc=$(cat $work/$t.rc 2>/dev/null || echo 1)
  where=$(find $work/crashes -name "$t-*" -type f | tr '\n' ' ')
  if [ "$rc" != 0 ] || [ "$crashes" -gt 0 ] || [ -z "$execs" ]; then
    status=1
    [ -n "$where" ] || where="none saved; see $work/$t.log (exit status $rc)"
    grep -m 3 -E 'ERROR|SUMMARY|deadly signal|fuzz target exited' $work/$t.log | sed "s/^/  $t: /" >&2
  fi
  printf '%-11s %12s %8s %8s  %s\n' "$t" "${execs:-?}" "$crashes" "$corpus" "${where:--}"
done
echo "fuzz.sh: ${#targets[@]} targets, ${seconds} s each, $(( $(date +%s) - start )) s in all; $([ $status = 0 ] && echo "no crash" || echo "FAILED")"
exit $status
