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
    echo "Generated from the CSV files in this folder by \`plots/report.sh\`. Measured with:"
    echo
    grep -E '^# (halflab |device:|host:|cuda:|date:)' "$meta" | sed 's/^# /- /'
    echo
  fi
  for section in "$here"/report.d/*.sh; do
    [ -e "$section" ] || continue
    bash "$section" "$dir"
  done
} >"$tmp"
mv "$tmp" "$out"
echo "plots: wrote $out" >&2
