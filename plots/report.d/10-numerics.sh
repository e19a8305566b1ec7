#!/usr/bin/env bash
# plots/report.d/10-numerics.sh RESULTS_DIR — the numerics section of
# REPORT.md: the tour's numbers per format and device as the headline table,
# the overflow, absorption and subnormal results, and every numerics chart,
# each caption with the charts' line convention and the run it shows (the
# charts carry that only in their screen footer).
# Prints nothing when the folder holds no numerics CSV.
set -euo pipefail
dir=${1:?usage: plots/report.d/10-numerics.sh RESULTS_DIR}
. "$(dirname "$0")/../report-lib.sh"
have tour.csv || have overflow.csv || have absorption.csv || have subnormal_ladder.csv || have formats_value.csv || exit 0

# Columns are read by name (table, plots/report-lib.sh: c["name"] is a column's index);
# the awk programs get the devices as ENVIRON["devs"].
# devices present in a file, the CPU first
devices() { table "$1" '{ print $c["device"] }' | awk '!seen[$0]++' | sort; }
# awk helpers: numbers as %.9g, inf and nan as they are; none() for an event that never
# happened (an empty cell; 0 in files written before empty cells)
AWK_FMT='function fmt(x) { return (x ~ /^-?(inf|nan)$/) ? (x ~ /nan/ ? "nan" : x) : sprintf("%.9g", x) }
  function none(x) { return x == "" || x == "0" }'
# FILE: the run a chart shows, for its caption: device, build, date, seed (and --quick)
run_of() {
  printf 'Run: %s; %s, %s; seed %s%s.' "$(meta "$1" device)" "$(sed -n '1s/^# //p' "$dir/$1")" \
    "$(meta "$1" date | cut -c1-10)" "$(meta "$1" seed)" "$([ "$(meta "$1" quick)" = yes ] && echo ', --quick sizes')"
}

echo "## Numerics probes (\`halflab-numerics\`)"
echo
provenance tour.csv overflow.csv overflow_trajectory.csv absorption.csv absorption_sweep.csv lost_update.csv harmonic.csv subnormal_ladder.csv loss_scale_distribution.csv ftz.csv
if on_gpu; then
  echo "Every number here was computed by the probe kernels on the device named in its column (the GPU with its own"
  echo "fp16/bf16 instructions); the \`gpu\` test suite checks that the GPU's bits equal the CPU's."
else
  echo "Every number here was computed by the probe kernels on this CPU (the \`cpu\` column), in halflab's own"
  echo "correctly rounded fp16/bf16 arithmetic."
fi
echo

if have formats_value.csv; then
  x=$(table formats_value.csv '{ printf "%.15g\n", $c["input"]; exit }')
  echo "### $x in three formats (\`halflab-numerics formats --value $x\`)"
  echo
  echo "| format | bits (sign exponent mantissa) | hex | value stored | error |"
  echo "|---|---|---|---|---|"
  table formats_value.csv "$AWK_FMT"'$c["format"] ~ /^(fp32|fp16|bf16)$/ && !seen[$c["format"]]++ {
    printf "| %s | %s %s %s | %s | %s | %s |\n", $c["format"], $c["sign"], $c["exponent"], $c["mantissa"], $c["bits_hex"],
      fmt($c["value"]), $c["abs_error"] == "" ? "-" : $c["abs_error"] }'
  echo
  chart value_bits "$x as fp32, fp16 and bf16 store it, bit by bit" \
    "How to read it: one row of boxes per format, one box per bit: the sign, the exponent and the mantissa each in their own colour, the rows aligned at the sign (bf16 is fp32's upper half, rounded). Right of each row: the value the format keeps and its error against $x. $(run_of formats_value.csv)"
fi

if have tour.csv; then
  devs=$(devices tour.csv | tr '\n' ' ')
  echo "### The classic demonstrations (\`halflab-numerics tour\`)"
  echo
  devs=$devs table tour.csv "$AWK_FMT"'
    BEGIN { nd = split(ENVIRON["devs"], dv, " ") }
    { key = $c["demo"] SUBSEP $c["what"]
      if (!(key in seen)) { seen[key] = 1; order[++n] = key; title[key] = $c["title"]; what[key] = $c["what"] }
      val[key, $c["device"]] = fmt($c["result"]) " (" $c["result_hex"] ")" }
    END {
      printf "| # | example | value |"; for (d = 1; d <= nd; d++) printf " %s |", dv[d]; printf "\n"
      printf "|---|---|---|"; for (d = 1; d <= nd; d++) printf "---|"; printf "\n"
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, parts, SUBSEP)
        printf "| %s | %s | %s |", parts[1], title[k], what[k]
        for (d = 1; d <= nd; d++) printf " %s |", ((k, dv[d]) in val) ? val[k, dv[d]] : "-"
        printf "\n"
      }
    }'
  echo
fi
if have tour_fp8.csv; then
  chart tour_fp8 "what a scale does: a tensor with amax 1000 stored five ways" \
    "How to read it: the stored value over x against |x| (1: exact) for the tour's tensor, ±1000 x 2^(-i/4). e4m3 without a scale turns the values from 464 up into NaN (top row) and, clamped, holds them at 448; after the per-tensor scale 448 / amax every value stays within half e4m3's spacing. The MXFP4 block (e2m1 elements, one E8M0 power-of-two scale) under the FLOOR and RCEIL rules shows what 2 significant bits leave; values stored as 0 lie on the bottom. Lines: the colour is the element format's family (fp8 green, fp4 violet), each way its own dash. $(run_of tour_fp8.csv)"
fi

if have overflow.csv; then
  primary=$(table overflow.csv '{ print $c["count"] "," $c["value"]; exit }')
  echo "### Overflow: ${primary%,*} copies of ${primary#*,} summed seven ways (\`halflab-numerics overflow\`)"
  echo
  devs=$(devices overflow.csv | tr '\n' ' ')
  devs=$devs primary=$primary table overflow.csv "$AWK_FMT"'
    BEGIN { nd = split(ENVIRON["devs"], dv, " ") }
    $c["count"] "," $c["value"] == ENVIRON["primary"] {
      s = $c["strategy"]; d = $c["device"]
      if (!(s in seen)) { seen[s] = 1; order[++n] = s; exact[s] = fmt($c["exact_sum"]) }
      res[s, d] = fmt($c["result"]); lost[s, d] = $c["first_lost_add"]; over[s, d] = $c["first_overflow_add"]
    }
    END {
      printf "| strategy | exact sum |"; for (d = 1; d <= nd; d++) printf " result (%s) |", dv[d]
      printf " first add lost | first add to inf/NaN |\n|---|---|"; for (d = 1; d <= nd; d++) printf "---|"; printf "---|---|\n"
      for (i = 1; i <= n; i++) {
        s = order[i]; printf "| %s | %s |", s, exact[s]
        for (d = 1; d <= nd; d++) printf " %s |", res[s, dv[d]]
        printf " %s | %s |\n", none(lost[s, dv[1]]) ? "-" : lost[s, dv[1]], none(over[s, dv[1]]) ? "-" : over[s, dv[1]]
      }
    }'
  echo
  chart overflow "running sums of the seven strategies" \
    "How to read it: each line is the running sum after each element; the strategies whose every finite sum is exact share the black line, named beside it. Lines that flatten have stopped growing (an fp16 or bf16 accumulator whose spacing has reached twice the addend: every later add rounds back). The rows above the grey line mark strategies whose sum became inf or NaN, at the element where it happened. The grey dashed line is fp16's largest value, 65504. Lines: $(line_convention). $(run_of overflow_trajectory.csv)"
fi

if have absorption.csv; then
  echo "### Absorption: updates too small to count (\`halflab-numerics absorption\`)"
  echo
  devs=$(devices absorption.csv | tr '\n' ' ')
  devs=$devs table absorption.csv "$AWK_FMT"'
    BEGIN { nd = split(ENVIRON["devs"], dv, " ") }
    $c["case"] == "1+0.0001" {
      f = $c["format"]; if (!(f in seen)) { seen[f] = 1; order[++n] = f; stored[f] = fmt($c["b_stored"]) }
      res[f, $c["device"]] = fmt($c["result"]) " (" $c["result_hex"] ")"
    }
    END {
      printf "| 1 + 0.0001 in | 0.0001 stored as |"; for (d = 1; d <= nd; d++) printf " result (%s) |", dv[d]
      printf "\n|---|---|"; for (d = 1; d <= nd; d++) printf "---|"; printf "\n"
      for (i = 1; i <= n; i++) { f = order[i]; printf "| %s | %s |", f, stored[f]; for (d = 1; d <= nd; d++) printf " %s |", res[f, dv[d]]; printf "\n" }
    }'
  echo
  chart absorption "effective against intended update, log-log" \
    "How to read it: the x axis is the update u added to 1, the y axis what survives, fl(1 + u) - 1, both in powers of two. On the grey dotted diagonal nothing is lost. Each format follows it in steps of its spacing at 1 (2^-23, 2^-10, 2^-7 for fp32, fp16, bf16; 2^-3 to 1 for the fp8, fp6 and fp4 formats and e8m0, which the inset zooms on where they are present) and drops to its bottom row, lost entirely, for every u up to half that spacing (its dotted vertical line); the thin grey line is u = 0.0001. Lines: $(line_convention). $(run_of absorption_sweep.csv)"
fi

if have lost_update.csv; then
  devs=$(devices lost_update.csv | tr '\n' ' ')
  echo "Lost-update experiment: w = 1, then 10000 updates of 0.0001:"
  echo
  devs=$devs table lost_update.csv "$AWK_FMT"'
    BEGIN { nd = split(ENVIRON["devs"], dv, " ") }
    { s = $c["strategy"]; d = $c["device"]; if (!(s in seen)) { seen[s] = 1; order[++n] = s }
      if ($c["step"] >= last[s, d]) { last[s, d] = $c["step"]; w[s, d] = fmt($c["weight"]); ex[s] = fmt($c["exact_weight"]) } }
    END {
      printf "| weight held as | exact |"; for (d = 1; d <= nd; d++) printf " final weight (%s) |", dv[d]
      printf "\n|---|---|"; for (d = 1; d <= nd; d++) printf "---|"; printf "\n"
      for (i = 1; i <= n; i++) { s = order[i]; printf "| %s | %s |", s, ex[s]; for (d = 1; d <= nd; d++) printf " %s |", w[s, dv[d]]; printf "\n" }
    }'
  echo
  steps=$(table lost_update.csv '{ if ($c["step"] + 0 > m) m = $c["step"] + 0 } END { print m + 0 }')
  # the weights that never moved (the last step's weight is still 1)
  stuck=$(table lost_update.csv '$c["step"] == '"$steps"' && $c["weight"] == 1 && !seen[$c["strategy"]]++ { s = s (s == "" ? "" : " and ") $c["strategy"] } END { print s }')
  chart lost_update "the weight over $steps updates, held five ways" \
    "How to read it: top, the weight after each update; bottom, its distance from the exact sum of the updates.${stuck:+ The $stuck weights stay at 1.} An fp32 master weight and Kahan compensation follow the exact line (wide grey); stochastic rounding follows it on average, wandering by a few hundredths. Lines: $(line_convention). $(run_of lost_update.csv)"
fi

if have harmonic.csv; then
  echo "Harmonic series 1 + 1/2 + 1/3 + ..., summed in each format until a term no longer changes the sum:"
  echo
  echo "| device | format | stalls at term | sum | true sum of those terms |"
  echo "|---|---|---|---|---|"
  table harmonic.csv "$AWK_FMT"'{ printf "| %s | %s | %s | %s | %s |\n", $c["device"], $c["format"],
    none($c["stall_n"]) ? "none" : "1/" $c["stall_n"], fmt($c["sum"]), fmt($c["true_sum"]) }'
  echo
fi

if have subnormal_ladder.csv; then
  echo "### Subnormals, loss scaling, flush to zero (\`halflab-numerics subnormal\`)"
  echo
  chart subnormal "relative error of the subnormal ladder" \
    "How to read it: relative error of storing x (log scales). In fp16's normal zone (green) it stays below 2^-11; in the subnormal zone (yellow) the spacing is fixed at 2^-24, so the error bound (dotted) doubles with every halving of x; in the zero zone (grey) x rounds to 0, error 1. bf16 keeps its 2^-8 bound throughout: it has fp32's exponent range. Points on the bottom row are stored exactly. Where the run has the fp8, fp6 and fp4 formats, the second panel lines up every format's ladder at its own smallest normal: one bit lost per subnormal step, as many steps as mantissa bits, then 0 (e8m0 has no ladder: no subnormals, no zero). Lines: $(line_convention); the bounds dotted. $(run_of subnormal_ladder.csv)"
fi

if have loss_scale_distribution.csv; then
  best=$(table loss_scale_distribution.csv '$c["frac_overflow"] == 0 { s = $c["scale_log2"] } END { print s + 0 }')
  chart loss_scale "share of gradients zero, subnormal, normal, inf by loss scale" \
    "How to read it: gradients spread over 32 octaves, multiplied by S and stored in fp16. Raising S moves them out of zero and subnormal into normal, until the largest start to overflow; a dynamic loss scaler looks for the largest S without inf (here 2^$best, the dashed vertical line). The four outcomes take colours no precision uses; all four are fp16's, so all are dashed or dotted (the convention: $(line_convention)). $(run_of loss_scale_distribution.csv)"
fi

if have ftz.csv; then
  echo "Flush to zero: operations whose exact result (or input) is subnormal, per device and build:"
  echo
  table ftz.csv "$AWK_FMT"'
    function p2(x,   e) { if (x == 0) return "0"; e = log(x) / log(2); return (e == int(e)) ? sprintf("2^%d", e) : fmt(x) }
    { col = $c["device"] ": " $c["build"]; if (!(col in cseen)) { cseen[col] = 1; cols[++nc] = col }
      key = $c["operation"] SUBSEP $c["format"]
      if (!(key in rseen)) { rseen[key] = 1; order[++n] = key; exact[key] = p2($c["expected"]) }
      cell[key, col] = p2($c["result"]) ($c["flushed"] == 1 ? " (flushed)" : "") }
    END {
      printf "| operation | format | exact |"; for (k = 1; k <= nc; k++) printf " %s |", cols[k]
      printf "\n|---|---|---|"; for (k = 1; k <= nc; k++) printf "---|"; printf "\n"
      for (i = 1; i <= n; i++) { k = order[i]; split(k, kp, SUBSEP); printf "| %s | %s | %s |", kp[1], kp[2], exact[k]
        for (j = 1; j <= nc; j++) printf " %s |", ((k, cols[j]) in cell) ? cell[k, cols[j]] : "-"; printf "\n" }
    }'
  echo
fi
