#!/usr/bin/env bash
# plots/report.d/10-numerics.sh RESULTS_DIR — the numerics section of
# REPORT.md: the tour's numbers per format and device as the headline table,
# the overflow, absorption and subnormal results, and every numerics chart.
# Prints nothing when the folder holds no numerics CSV.
set -euo pipefail
dir=${1:?usage: plots/report.d/10-numerics.sh RESULTS_DIR}
. "$(dirname "$0")/../report-lib.sh"
have tour.csv || have overflow.csv || have absorption.csv || have subnormal_ladder.csv || exit 0

# the rows of a halflab CSV: no "# " metadata, no header
rows() { grep -v '^#' "$dir/$1" | tail -n +2; }
# devices present in a file, the CPU first
devices() { rows "$1" | cut -d, -f1 | awk '!seen[$0]++' | sort; }
# awk helper: numbers as %.9g, inf and nan as they are
AWK_FMT='function fmt(x) { return (x ~ /^-?(inf|nan)$/) ? (x ~ /nan/ ? "nan" : x) : sprintf("%.9g", x) }'

echo "## Numerics probes (\`halflab-numerics\`)"
echo
if on_gpu; then
  echo "Every number here was computed by the probe kernels on the device named in its column (the GPU with its own"
  echo "fp16/bf16 instructions); the \`gpu\` test suite checks that the GPU's bits equal the CPU's."
else
  echo "Every number here was computed by the probe kernels on this CPU (the \`cpu\` column), in halflab's own"
  echo "correctly rounded fp16/bf16 arithmetic."
fi
echo

if have tour.csv; then
  devs=$(devices tour.csv | tr '\n' ' ')
  echo "### The seeds' examples (\`halflab-numerics tour\`)"
  echo
  rows tour.csv | awk -F, -v devs="$devs" "$AWK_FMT"'
    BEGIN { nd = split(devs, dv, " ") }
    { key = $2 SUBSEP $4; if (!(key in seen)) { seen[key] = 1; order[++n] = key; title[key] = $3; what[key] = $4 }
      val[key, $1] = fmt($6) " (" $7 ")" }
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

if have overflow.csv; then
  primary=$(rows overflow.csv | sed -n 1p | cut -d, -f2,3)
  echo "### Overflow: ${primary%,*} copies of ${primary#*,} summed seven ways (\`halflab-numerics overflow\`)"
  echo
  devs=$(devices overflow.csv | tr '\n' ' ')
  rows overflow.csv | awk -F, -v devs="$devs" -v primary="$primary" "$AWK_FMT"'
    BEGIN { nd = split(devs, dv, " ") }
    $2 "," $3 == primary {
      if (!($4 in seen)) { seen[$4] = 1; order[++n] = $4; exact[$4] = fmt($7) }
      res[$4, $1] = fmt($8); lost[$4, $1] = $10; over[$4, $1] = $12
    }
    END {
      printf "| strategy | exact sum |"; for (d = 1; d <= nd; d++) printf " result (%s) |", dv[d]
      printf " first add lost | first add to inf/NaN |\n|---|---|"; for (d = 1; d <= nd; d++) printf "---|"; printf "---|---|\n"
      for (i = 1; i <= n; i++) {
        s = order[i]; printf "| %s | %s |", s, exact[s]
        for (d = 1; d <= nd; d++) printf " %s |", res[s, dv[d]]
        printf " %s | %s |\n", lost[s, dv[1]] == 0 ? "-" : lost[s, dv[1]], over[s, dv[1]] == 0 ? "-" : over[s, dv[1]]
      }
    }'
  echo
  chart overflow "running sums of the seven strategies" \
    "How to read it: each line is the running sum after each element. Lines that flatten have stopped growing (an fp16 or bf16 accumulator whose spacing has reached twice the addend: every later add rounds back). The rows above the grey line mark strategies whose sum became inf or NaN, at the element where it happened. The dashed line is fp16's largest value, 65504."
fi

if have absorption.csv; then
  echo "### Absorption: updates too small to count (\`halflab-numerics absorption\`)"
  echo
  devs=$(devices absorption.csv | tr '\n' ' ')
  rows absorption.csv | awk -F, -v devs="$devs" "$AWK_FMT"'
    BEGIN { nd = split(devs, dv, " ") }
    $2 == "1+0.0001" { if (!($3 in seen)) { seen[$3] = 1; order[++n] = $3; stored[$3] = fmt($7) }; res[$3, $1] = fmt($8) " (" $9 ")" }
    END {
      printf "| 1 + 0.0001 in | 0.0001 stored as |"; for (d = 1; d <= nd; d++) printf " result (%s) |", dv[d]
      printf "\n|---|---|"; for (d = 1; d <= nd; d++) printf "---|"; printf "\n"
      for (i = 1; i <= n; i++) { f = order[i]; printf "| %s | %s |", f, stored[f]; for (d = 1; d <= nd; d++) printf " %s |", res[f, dv[d]]; printf "\n" }
    }'
  echo
  chart absorption "effective against intended update, log-log" \
    "How to read it: the x axis is the update u added to 1, the y axis what survives, fl(1 + u) - 1, both in powers of two. On the grey diagonal nothing is lost. Each format follows it in steps of its spacing at 1 (2^-23, 2^-10, 2^-7) and drops to the bottom row, lost entirely, for every u up to half that spacing."
fi

if have lost_update.csv; then
  devs=$(devices lost_update.csv | tr '\n' ' ')
  echo "Lost-update experiment: w = 1, then 10000 updates of 0.0001:"
  echo
  rows lost_update.csv | awk -F, -v devs="$devs" "$AWK_FMT"'
    BEGIN { nd = split(devs, dv, " ") }
    { if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }; if ($3 >= last[$2, $1]) { last[$2, $1] = $3; w[$2, $1] = fmt($4); ex[$2] = fmt($5) } }
    END {
      printf "| weight held as | exact |"; for (d = 1; d <= nd; d++) printf " final weight (%s) |", dv[d]
      printf "\n|---|---|"; for (d = 1; d <= nd; d++) printf "---|"; printf "\n"
      for (i = 1; i <= n; i++) { s = order[i]; printf "| %s | %s |", s, ex[s]; for (d = 1; d <= nd; d++) printf " %s |", w[s, dv[d]]; printf "\n" }
    }'
  echo
  chart lost_update "the weight over 10000 updates, held five ways" \
    "How to read it: top, the weight after each update; bottom, its distance from the exact sum of the updates. fp16 and bf16 weights stay at 1. An fp32 master weight and Kahan compensation follow the exact line; stochastic rounding follows it on average, wandering by a few hundredths."
fi

if have harmonic.csv; then
  echo "Harmonic series 1 + 1/2 + 1/3 + ..., summed in each format until a term no longer changes the sum:"
  echo
  echo "| device | format | stalls at term | sum | true sum of those terms |"
  echo "|---|---|---|---|---|"
  rows harmonic.csv | awk -F, "$AWK_FMT"'{ printf "| %s | %s | 1/%s | %s | %s |\n", $1, $2, $3, fmt($5), fmt($7) }'
  echo
fi

if have subnormal_ladder.csv; then
  echo "### Subnormals, loss scaling, flush to zero (\`halflab-numerics subnormal\`)"
  echo
  chart subnormal "relative error of the subnormal ladder" \
    "How to read it: relative error of storing x (log scales). In fp16's normal zone (green) it stays below 2^-11; in the subnormal zone (yellow) the spacing is fixed at 2^-24, so the error bound (dashed) doubles with every halving of x; in the zero zone (grey) x rounds to 0, error 1. bf16 keeps its 2^-8 bound throughout: it has fp32's exponent range. Points on the bottom row are stored exactly."
fi

if have loss_scale_distribution.csv; then
  chart loss_scale "share of gradients zero, subnormal, normal, inf by loss scale" \
    "How to read it: gradients spread over 32 octaves, multiplied by S and stored in fp16. Raising S moves them out of zero and subnormal into normal, until the largest start to overflow; a dynamic loss scaler looks for the largest S without inf."
fi

if have ftz.csv; then
  echo "Flush to zero: operations whose exact result (or input) is subnormal, per device and build:"
  echo
  rows ftz.csv | awk -F, "$AWK_FMT"'
    function p2(x,   e) { if (x == 0) return "0"; e = log(x) / log(2); return (e == int(e)) ? sprintf("2^%d", e) : fmt(x) }
    { col = $1 ": " $2; if (!(col in cseen)) { cseen[col] = 1; cols[++nc] = col }
      key = $4 SUBSEP $3; if (!(key in rseen)) { rseen[key] = 1; order[++n] = key; exact[key] = p2($5) }
      cell[key, col] = p2($6) ($8 == 1 ? " (flushed)" : "") }
    END {
      printf "| operation | format | exact |"; for (c = 1; c <= nc; c++) printf " %s |", cols[c]
      printf "\n|---|---|---|"; for (c = 1; c <= nc; c++) printf "---|"; printf "\n"
      for (i = 1; i <= n; i++) { k = order[i]; split(k, kp, SUBSEP); printf "| %s | %s | %s |", kp[1], kp[2], exact[k]
        for (c = 1; c <= nc; c++) printf " %s |", ((k, cols[c]) in cell) ? cell[k, cols[c]] : "-"; printf "\n" }
    }'
  echo
fi
