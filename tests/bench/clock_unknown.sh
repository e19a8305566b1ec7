#!/usr/bin/env bash
# clock_unknown.sh BUILD_DIR — suite e2e: a CPU clock measured outside the range
# the machine allows (forced with the test switch HALFLAB_TEST_CLOCK_MHZ) gives
# "peak unknown": gemm.csv's peak_tflop_per_s and peak_pct are empty, the
# metadata and the report's GEMM section say why and how the clock was
# measured. Then the same run without the switch: the clock is measured, its
# metadata present, and (on a CPU in the peak table) the percentages filled.
set -euo pipefail
build=$(cd "${1:?usage: clock_unknown.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/halflab-clock-unknown.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "clock-unknown: $*" >&2; exit 1; }
meta() { grep -m1 "^# $2: " "$1" | sed "s/^# $2: //"; }
# the values of column NAME in CSV FILE, one a line
column() { grep -v '^#' "$1" | awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) k = i; next } { print $k }'; }
gemm() { "$build/bench/halflab-bench" gemm --device cpu --quick --studies square --dtypes fp32 --sizes 64 --reps 3 --out "$1" >/dev/null 2>&1; }

HALFLAB_TEST_CLOCK_MHZ=20000 gemm "$tmp/forced" || fail "halflab-bench gemm failed with the clock forced"
csv=$tmp/forced/gemm.csv
[ "$(meta "$csv" clock_measured_mhz)" = 20000 ] || fail "clock_measured_mhz: $(meta "$csv" clock_measured_mhz)"
[ "$(meta "$csv" clock_trusted)" = no ] || fail "clock_trusted: $(meta "$csv" clock_trusted)"
meta "$csv" clock_method | grep -q "imul.*TEST SWITCH: measurement replaced by 20000 MHz" || fail "clock_method: $(meta "$csv" clock_method)"
meta "$csv" clock_bounds_mhz | grep -Eq '^[0-9]+\.\.[0-9]+: low .*; high ' || fail "clock_bounds_mhz: $(meta "$csv" clock_bounds_mhz)"
meta "$csv" peak_source | grep -q "^peak unknown: the clock measured, 20000 MHz, is outside the range" ||
  fail "peak_source: $(meta "$csv" peak_source)"
[ -z "$(column "$csv" peak_tflop_per_s | tr -d '\n')" ] || fail "peak_tflop_per_s filled with the clock out of bounds"
[ -z "$(column "$csv" peak_pct | tr -d '\n')" ] || fail "peak_pct filled with the clock out of bounds"
[ "$(column "$csv" tflop_per_s | grep -c .)" -ge 1 ] || fail "no rows"
report=$(bash "$src/plots/report.d/20-bench.sh" "$tmp/forced")
grep -q "| peak unknown |" <<<"$report" || fail "the report's table does not say peak unknown"
grep -q "Peaks: peak unknown: the clock measured, 20000 MHz" <<<"$report" || fail "the report does not give the reason"
grep -q "CPU clock: 20000 MHz, measured with a dependent chain of 64-bit imul" <<<"$report" ||
  fail "the report does not say how the clock was measured"
grep -q "the measurement is \*\*outside it: not used, the peaks are unknown\*\*" <<<"$report" || fail "the report does not say the clock was refused"

gemm "$tmp/measured" || fail "halflab-bench gemm failed"
csv=$tmp/measured/gemm.csv
mhz=$(meta "$csv" clock_measured_mhz)
meta "$csv" clock_method | grep -q "TEST SWITCH" && fail "the test switch reported without being set"
if meta "$csv" peak_source | grep -q "^CPU table"; then
  [ "$(meta "$csv" clock_trusted)" = yes ] || fail "a CPU-table peak without a trusted clock: $mhz"
  [ -n "$(column "$csv" peak_pct | tr -d '\n')" ] || fail "peak_pct empty although the peak is known"
  report=$(bash "$src/plots/report.d/20-bench.sh" "$tmp/measured")
  grep -q "CPU clock: $mhz MHz, measured with" <<<"$report" || fail "the report does not give the measured clock"
  grep -q "the measurement is within it" <<<"$report" || fail "the report does not say the clock was accepted"
fi
echo "clock-unknown: a clock outside its range leaves peak_pct empty and the report says why; measured here: $mhz MHz"
