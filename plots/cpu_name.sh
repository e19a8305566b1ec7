#!/usr/bin/env bash
# plots/cpu_name.sh DEVICE-LINE | --folder DIR CSV — a machine's name for
# charts and captions that compare machines: the microarchitecture that
# plots/cpu_names.tsv gives for the cpuid vendor, family and model of a
# device line ("cpu: AMD EPYC (family 25 model 17), 2 logical cores, ..." ->
# "AMD Zen 4"), else the line's own name (the text before its first comma,
# "cuda: " left off). With --folder, the line is CSV's "# device:" line in
# DIR; where it names no family and model (files from before halflab wrote
# them), the first device line of DIR's other CSVs that names the same CPU
# with its family and model stands in.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
usage() { echo "usage: plots/cpu_name.sh DEVICE-LINE | --folder DIR CSV" >&2; exit 2; }
[ $# -ge 1 ] || usage
device_line() { sed -n 's/^# device: //p' "$1" | head -1; }
if [ "$1" = --folder ]; then
  [ $# -eq 3 ] || usage
  [ -f "$2/$3" ] || { echo "plots/cpu_name.sh: $2/$3: no such file" >&2; exit 2; }
  line=$(device_line "$2/$3")
  if [[ $line == cpu:* && $line != *"(family "* ]]; then
    name=${line%%,*}
    for f in "$2"/*.csv; do
      other=$(device_line "$f")
      if [[ $other == "$name (family "* ]]; then line=$other; break; fi
    done
  fi
else
  line=$1
fi
line=${line#\# device: }
awk -F'\t' -v line="$line" '
  function hex(s,   v, i, d) { v = 0; s = tolower(s); sub(/^0x/, "", s)
    for (i = 1; i <= length(s); i++) { d = index("0123456789abcdef", substr(s, i, 1)); if (!d) return -1; v = v * 16 + d - 1 }
    return v }
  BEGIN {
    own = line; sub(/;.*/, "", own); sub(/,.*/, "", own); sub(/^(cpu|cuda): /, "", own)
    vendor = own ~ /AMD/ ? "AMD" : own ~ /Intel/ ? "Intel" : ""
    if (vendor != "" && match(own, /\(family [0-9]+ model [0-9]+\)/)) {
      split(substr(own, RSTART + 1, RLENGTH - 2), w, " "); family = w[2] + 0; model = w[4] + 0
    } else vendor = ""
  }
  /^#/ || NF < 5 { next }
  vendor != "" && $1 == vendor && $2 + 0 == family && model >= hex($3) && model <= hex($4) { found = $5; exit }
  END { print found != "" ? found : own }' "$here/cpu_names.tsv"
