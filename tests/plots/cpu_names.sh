#!/usr/bin/env bash
# tests/plots/cpu_names.sh SOURCE_ROOT — plots/cpu_name.sh against known
# cpuid rows of plots/cpu_names.tsv (each side of a range boundary), models
# and vendors the table does not know (the device line's own name comes
# back), and --folder's stand-in line from a sibling CSV.
set -euo pipefail
root=$(cd "${1:?usage: tests/plots/cpu_names.sh SOURCE_ROOT}" && pwd)
name="$root/plots/cpu_name.sh"
failures=0
expect() { # LINE WANT
  local got
  got=$("$name" "$1")
  if [ "$got" = "$2" ]; then echo "ok: $1 -> $got"; else echo "FAIL: $1 -> '$got', want '$2'" >&2; failures=$((failures + 1)); fi
}
# known rows, and the edges of AMD family 25's ranges
expect "cpu: AMD EPYC (family 25 model 1), 2 logical cores, 2 OpenMP threads, 23.5 GiB" "AMD Zen 3"
expect "cpu: AMD EPYC (family 25 model 15), 2 logical cores" "AMD Zen 3"
expect "cpu: AMD EPYC (family 25 model 16), 2 logical cores" "AMD Zen 4"
expect "cpu: AMD EPYC (family 25 model 17), 2 logical cores" "AMD Zen 4"
expect "cpu: AMD Ryzen 9 7950X 16-Core Processor (family 25 model 97), 32 logical cores" "AMD Zen 4"
expect "cpu: AMD EPYC (family 26 model 2), 2 logical cores" "AMD Zen 5"
expect "cpu: AMD EPYC 7B12 (family 23 model 49), 8 logical cores" "AMD Zen 2"
expect "cpu: Intel(R) Xeon(R) Platinum 8480+ (family 6 model 143), 224 logical cores" "Intel Sapphire Rapids"
expect "cpu: Intel(R) Xeon(R) Platinum 8592+ (family 6 model 207), 128 logical cores" "Intel Emerald Rapids"
expect "cpu: Intel(R) Xeon(R) 6972P (family 6 model 173), 192 logical cores" "Intel Granite Rapids"
expect "cpu: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz (family 6 model 106), 8 logical cores" "Intel Ice Lake-SP"
expect "cpu: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz (family 6 model 85), 8 logical cores" "Intel Skylake-SP / Cascade Lake"
# unknown: a model in no range, a family the table lacks, another vendor, no family at all, a GPU
expect "cpu: AMD EPYC (family 25 model 240), 2 logical cores" "AMD EPYC (family 25 model 240)"
expect "cpu: Intel(R) Core(TM) i7 (family 6 model 1), 4 logical cores" "Intel(R) Core(TM) i7 (family 6 model 1)"
expect "cpu: AMD Opteron (family 16 model 4), 4 logical cores" "AMD Opteron (family 16 model 4)"
expect "cpu: Hygon C86 7285 (family 24 model 1), 64 logical cores" "Hygon C86 7285 (family 24 model 1)"
expect "cpu: AMD EPYC, 2 logical cores, 2 OpenMP threads" "AMD EPYC"
expect "cuda: NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 79.1 GiB; cpu: AMD EPYC (family 25 model 17)" "NVIDIA H100 80GB HBM3"
# --folder: a CSV from before family and model were written takes them from a sibling naming the same CPU
work=$(mktemp -d /tmp/halflab-cpu-names.XXXXXX)
trap 'rm -rf "$work"' EXIT
printf '# device: cpu: AMD EPYC, 2 logical cores, 2 OpenMP threads, 23.5 GiB\nx\n1\n' >"$work/gemm.csv"
got=$("$name" --folder "$work" gemm.csv)
[ "$got" = "AMD EPYC" ] && echo "ok: --folder, no sibling -> $got" || { echo "FAIL: --folder without a sibling -> '$got'" >&2; failures=$((failures + 1)); }
printf '# device: cpu: AMD EPYC (family 26 model 2), 2 logical cores\nx\n1\n' >"$work/other.csv"
printf '# device: cpu: AMD EPYC (family 25 model 17), 2 logical cores, 1 OpenMP threads, 23.5 GiB\nx\n1\n' >"$work/tour.csv"
# both siblings name "AMD EPYC" with a family and model: the first in glob order stands in (other.csv)
got=$("$name" --folder "$work" gemm.csv)
[ "$got" = "AMD Zen 5" ] && echo "ok: --folder, sibling -> $got" || { echo "FAIL: --folder took '$got', want the first sibling's AMD Zen 5" >&2; failures=$((failures + 1)); }
# bad use: exit 2
if "$name" --folder "$work" absent.csv 2>/dev/null; then echo "FAIL: a missing CSV did not fail" >&2; failures=$((failures + 1)); fi
"$name" 2>/dev/null && { echo "FAIL: no argument did not fail" >&2; failures=$((failures + 1)); }
rc=0; "$name" --folder "$work" 2>/dev/null || rc=$?
[ $rc = 2 ] || { echo "FAIL: a short --folder exited $rc, want 2" >&2; failures=$((failures + 1)); }
[ $failures = 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
echo "cpu names: all checks passed"
