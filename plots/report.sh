#!/usr/bin/env bash
# plots/report.sh RESULTS_DIR — writes RESULTS_DIR/REPORT.md: the headline
# numbers and every chart of one machine. Each family contributes a section
# (plots/report.d/NN-name.sh RESULTS_DIR prints markdown), in file order.
set -euo pipefail
dir=${1:?usage: plots/report.sh RESULTS_DIR}
here=$(cd "$(dirname "$0")" && pwd)
out=$dir/REPORT.md
tmp=$out.tmp
{
  echo "# halflab report: $(basename "$dir")"
  echo
  meta=""
  for f in "$dir"/*.csv; do [ -e "$f" ] && meta=$f && break; done  # a glob, not ls | head: pipefail and SIGPIPE
  if [ -n "$meta" ]; then
    echo "Generated from the CSV files in this folder by \`plots/report.sh\`. The machine, as $(basename "$meta") records it:"
    echo
    grep -E '^# (device:|host:|cuda:|cpu-features:|cpu-units:|blas:|onednn:)' "$meta" | sed 's/^# /- /'
    echo
    # every build of the folder (train_summary.csv's runs through their own files); each section names its own
    all=()
    for f in "$dir"/*.csv "$dir"/*/*.csv; do
      [ -e "$f" ] && [ "${f##*/}" != train_summary.csv ] && all+=("${f#"$dir"/}")
    done
    (. "$here/report-lib.sh" && provenance "${all[@]}")
    echo "Each section below names the builds of its own files."
    echo
  fi
  # A generic BLAS kernel set makes every CPU GEMM figure wrong for this CPU:
  # say so first, naming the files measured that way.
  warned=()
  for f in "$dir"/*.csv "$dir"/*/*.csv; do
    [ -e "$f" ] || continue
    grep -q '^# blas-warning:' "$f" && warned+=("${f#"$dir"/}")
  done
  if [ ${#warned[@]} -gt 0 ]; then
    echo "> **Warning: generic BLAS kernels.** $(grep -m1 '^# blas-warning:' "$dir/${warned[0]}" | sed 's/^# blas-warning: //')."
    echo "> Measured so: ${#warned[@]} file(s), e.g. \`${warned[0]}\`. Unset OPENBLAS_CORETYPE (halflab then picks the"
    echo "> kernels from the CPU's features) or set it to this CPU's kernel set, and measure again (docs/bench.md)."
    echo
  fi
  for section in "$here"/report.d/*.sh; do
    [ -e "$section" ] || continue
    bash "$section" "$dir"
  done
} >"$tmp"
mv "$tmp" "$out"
echo "plots: wrote $out" >&2
