#!/usr/bin/env bash
# plots/report.d/20-bench.sh RESULTS_DIR — the GEMM and bandwidth section of
# REPORT.md: best TFLOP/s and % of peak per variant, triad GB/s and % of the
# copy measured in the same run, the performance targets (the CPU's ratios
# against OpenBLAS, fp32 and memcpy; the GPU's against peak and D2D copy),
# the accuracy study's numbers at the largest k, and every chart.
# Prints nothing when the folder holds neither gemm nor bandwidth CSVs.
set -euo pipefail
dir=${1:?usage: plots/report.d/20-bench.sh RESULTS_DIR}
. "$(dirname "$0")/../report-lib.sh"
have gemm.csv || have bandwidth.csv || have gemm_accuracy.csv || exit 0


echo "## GEMM and memory bandwidth (\`halflab-bench gemm\`, \`halflab-bench bandwidth\`)"
echo
provenance 'gemm*.csv' 'bandwidth*.csv' mlp_step_targets.csv
for f in gemm.csv bandwidth.csv; do
  if have $f; then
    echo "Measured on: $(meta $f device). Peaks: $(meta $f peak_source)."
    echo
    echo "Method: $(meta $f method)."
    echo
    if [ -n "$(meta $f blas)" ]; then
      features=$(meta $f cpu-features) units=$(meta $f cpu-units)
      echo "fp32 products ran on $(meta $f blas | sed 's/; library .*//'). The CPU's half-precision units: $features."
      echo "In use by halflab's kernels: ${units:-not recorded}. What each one does here, and what a CPU without it gets:"
      echo
      uses() { case ", $units," in *", $1,"*|*" $1,"*) [[ $units != none* ]] ;; *) false ;; esac; }
      has() { [[ $features == *"$1 yes"* ]]; }
      row() { # UNIT ROLE WITHOUT
        local state="not on this CPU"
        if uses "$1"; then state="**in use**"
        elif has "$1" && [[ $units == *portable* ]]; then state="present, not used (HALFLAB_CPU_UNITS=portable)"
        elif has "$1"; then state="present, not used"; fi
        echo "| $1 | $state | $2 | $3 |"
      }
      echo "| unit | here | what it does in halflab | without it |"
      echo "|---|---|---|---|"
      row f16c "fp16 <-> fp32 conversions, eight values per instruction" "conversions in portable C"
      row avx512_bf16 "fp32 -> bf16 rounding (vcvtneps2bf16, sixteen values, subnormals fixed up); bf16 products through oneDNN where no AMX (see what ran)" "rounding with AVX2 integer ops, else portable C; bf16 products widened to fp32 for sgemm"
      row avx512_fp16 "not used by halflab's kernels (no library fp16 GEMM on the CPU; F16C converts)" "-"
      row amx_bf16 "bf16 tile products through oneDNN (needs the OS's AMX permission)" "AVX512-BF16's dot product, else fp32 widening"
      echo
      echo "bf16 products: $(meta $f onednn | grep . || echo 'oneDNN not recorded (a CSV from before oneDNN was used)')."
      echo "fp16 operands are never run as bf16: that would change the numerics being shown."
      echo
    fi
    break
  fi
done

if have gemm.csv; then
  echo "### Matrix products: best throughput per variant"
  echo
  echo "Every point was checked against an fp64 product on sampled entries before it was timed. TFLOP/s from the"
  echo "median time, FLOPs = 2 m n k per batch entry; \"best\" is the fastest shape of the run."
  echo
  echo "| variant | inputs | accumulate | output | best TFLOP/s | shape (m x n x k, batch) | % of dense peak | what ran |"
  echo "|---|---|---|---|---|---|---|---|"
  table gemm.csv '
    { v = $c["variant"]; t = $c["tflop_per_s"] + 0
      if (!(v in best) || t > best[v]) { best[v] = t; row[v] = $0 }
      if (!(v in seen)) { seen[v] = 1; order[++n] = v } }
    END {
      for (i = 1; i <= n; i++) {
        split(row[order[i]], f, ",")
        pct = f[c["peak_pct"]] == "" ? "peak unknown" : sprintf("%.1f%%", f[c["peak_pct"]])
        printf "| %s | %s | %s | %s | %.4g | %s x %s x %s, %s (%s) | %s | %s |\n", order[i], f[c["dtype"]], f[c["accumulate"]],
          f[c["out_dtype"]], best[order[i]], f[c["m"]], f[c["n"]], f[c["k"]], f[c["batch"]], f[c["shape"]], pct, f[c["implementation"]]
      }
    }'
  echo
  # points that other work still disturbed after every attempt: named, not hidden
  unstable=$(table gemm.csv '$c["attempts"] != "" && $c["time_ms_median"] > 1.25 * $c["time_ms_min"] {
      printf "%s %s %dx%dx%d (median %.3g ms, min %.3g ms); ", $c["variant"], $c["study"], $c["m"], $c["n"], $c["k"], $c["time_ms_median"], $c["time_ms_min"] }')
  if [ -n "$unstable" ]; then
    echo "Still disturbed after every attempt (median more than 1.25x the minimum; read these with care): ${unstable%; }."
    echo
  fi
  echo "Speed-up over fp32 at the largest square size of the run:"
  echo
  table gemm.csv '
    $c["study"] == "square" { t[$c["m"], $c["variant"]] = $c["tflop_per_s"]; if ($c["m"] + 0 > top) top = $c["m"] + 0; v[$c["variant"]] = 1 }
    END {
      if (!((top, "fp32") in t)) { print "_no fp32 point at the largest size_"; exit }
      for (x in v) if (x != "fp32" && (top, x) in t) printf "- %s: %.2fx fp32 at %d^3 (%.4g vs %.4g TFLOP/s)\n", x, t[top, x] / t[top, "fp32"], top, t[top, x], t[top, "fp32"]
    }' | sort
  echo
fi

if have gemm_targets.csv || have bandwidth_targets.csv || have mlp_step_targets.csv; then
  echo "### Performance targets (ratios measured in the same run)"
  echo
  echo "One convention throughout: the ratio, the limit it is held to and which side passes (a target that states a"
  echo "goal as \"within Lx\" of a reference is shown as that ratio against L)."
  echo
  echo "| target | ratio | passes when | status | measured |"
  echo "|---|---|---|---|---|"
  for f in gemm_targets.csv bandwidth_targets.csv mlp_step_targets.csv; do
    have $f && table $f '{
      v = $c["value"]; t = $c["threshold"]; st = $c["status"]; d = $c["detail"]; side = "-"
      if (v != "" && t != "") {
        # which side passes, from the status and the two numbers (PASS at or above the limit: "at least")
        up = (st == "PASS" && v + 0 >= t + 0) || (st == "MISS" && v + 0 < t + 0)
        # "goal <= Lx" with a threshold of 1/L: the ratio was stored inverted; show it the way the goal reads
        if (up && match(d, /goal <= [0-9.]+x/)) {
          L = substr(d, RSTART + 8, RLENGTH - 9) + 0
          if (L > 0 && (1 / t - L < 0.01 && L - 1 / t < 0.01)) { v = sprintf("%.4f", 1 / v); t = L; up = 0 }
        }
        side = (up ? "ratio >= " : "ratio <= ") t
      }
      printf "| %s | %s | %s | **%s** | %s |\n", $c["target"], v == "" ? "-" : v, side, st, d }'
  done
  echo
fi

if have bandwidth.csv; then
  echo "### Memory bandwidth at the largest size"
  echo
  echo "BabelStream's byte accounting; \"copy reference\" is the platform's own copy of the same array size measured"
  echo "in the same run (the reference the charts draw too)."
  echo
  # what the reference is, in words from the numbers: a limit only if no kernel exceeds it
  table bandwidth.csv '
    $c["dtype"] != "bytes" && $c["ref_pct"] != "" { b = $c["array_bytes"] + 0; if (b > top) { top = b; n = 0; above = 0; lo = ""; hi = "" }
      if (b == top) { p = $c["ref_pct"] + 0; n++; if (p > 100) above++; if (lo == "" || p < lo) lo = p; if (hi == "" || p > hi) hi = p; ref = $c["ref_kernel"] } }
    END { if (!n) exit
      printf "At %d MiB the kernels reach %.0f%% to %.0f%% of the copy reference (%s, same run). ", top / 1048576, lo, hi, ref
      if (above) printf "%d of the %d kernel and type pairs exceed it, so the copy is a reference point, not a limit: a kernel can move more bytes per second than this copy does.\n", above, n
      else printf "None of the %d kernel and type pairs exceeds it: here the copy bounds what the kernels reach.\n", n }'
  echo
  echo "| type | kernel | array size | GB/s | Gelem/s | % of copy reference | copy reference | % of datasheet |"
  echo "|---|---|---|---|---|---|---|---|"
  table bandwidth.csv '
    $c["dtype"] != "bytes" { b = $c["array_bytes"] + 0; if (b > top) top = b; r[++n] = $0 }
    END {
      for (i = 1; i <= n; i++) {
        split(r[i], f, ",")
        if (f[c["array_bytes"]] + 0 != top || (f[c["kernel"]] != "triad" && f[c["kernel"]] != "copy")) continue
        printf "| %s | %s | %d MiB | %.1f | %.2f | %.1f%% | %s %.1f GB/s | %s |\n", f[c["dtype"]], f[c["kernel"]], top / 1048576,
          f[c["gb_per_s"]], f[c["gelem_per_s"]], f[c["ref_pct"]], f[c["ref_kernel"]], f[c["ref_gb_per_s"]],
          f[c["datasheet_pct"]] == "" ? "-" : sprintf("%.1f%%", f[c["datasheet_pct"]])
      }
    }'
  echo
fi

if have bandwidth_host.csv; then
  echo "### Host <-> device copies at the largest size"
  echo
  echo "| direction | host memory | GB/s |"
  echo "|---|---|---|"
  table bandwidth_host.csv '
    { b = $c["bytes"] + 0; if (b > top) { top = b; n = 0 } if (b == top) r[++n] = $c["direction"] "|" $c["memory"] "|" $c["gb_per_s"] }
    END { for (i = 1; i <= n; i++) { split(r[i], f, "|"); printf "| %s | %s | %.2f |\n", f[1], f[2], f[3] } }'
  echo
fi

if have gemm_accuracy.csv; then
  echo "### Accuracy: relative error against fp64 at the largest k"
  echo
  echo "Normwise relative error of C = A B, data uniform in [0, 1) (one sign: the hard case for a narrow"
  methods="\"simulated\": sequential sums on the CPU, rounded to the accumulation format after every addition"
  table gemm_accuracy.csv '$c["method"] == "cublas" { f = 1 } END { exit !f }' && methods+="; \"cublas\": the GPU's own GEMM"
  table gemm_accuracy.csv '$c["method"] == "onednn" { f = 1 } END { exit !f }' && methods+="; \"onednn\": the CPU's bf16 GEMM on oneDNN's matmul"
  echo "accumulator) and in [-1, 1). $methods."
  echo
  echo "| variant | inputs | accumulate | method | k | error, positive data | error, mixed signs |"
  echo "|---|---|---|---|---|---|---|"
  table gemm_accuracy.csv '
    { k = $c["k"] + 0; if (k > top) top = k; r[++n] = $0 }
    END {
      for (i = 1; i <= n; i++) {
        split(r[i], f, ",")
        if (f[c["k"]] + 0 != top) continue
        key = f[c["variant"]] "|" f[c["method"]]
        if (!(key in seen)) { seen[key] = 1; order[++m] = key; info[key] = f[c["input"]] " | " f[c["accumulate"]] }
        err[key, f[c["data"]]] = f[c["rel_err"]]
      }
      for (i = 1; i <= m; i++) {
        split(order[i], p, "|")
        printf "| %s | %s | %s | %d | %.3g | %.3g |\n", p[1], info[order[i]], p[2], top, err[order[i], "positive"], err[order[i], "signed"]
      }
    }'
  echo
fi

echo "### Charts"
echo
# ---- the captions: what each chart shows here, computed from the same CSVs
if have gemm.csv; then
  # at the largest square size: each variant's share of its peak
  peaks=$(table gemm.csv '$c["study"] == "square" { if ($c["m"] + 0 > top) top = $c["m"] + 0; r[$c["m"], $c["variant"]] = $c["peak_pct"]; v[$c["variant"]] = 1 }
    END { for (x in v) if ((top, x) in r && r[top, x] != "" && x !~ /^(openblas|onednn-bf16)$/) s = s sprintf("%s%s %.0f%%", s == "" ? "" : ", ", x, r[top, x]); if (s != "") printf "at n = %d the variants reach %s of their peak", top, s }')
  if on_gpu; then
    how="The curves rise while the GPU fills up (small n are launch- and latency-bound) and flatten towards the peak"
  else
    how="On this CPU the curves rise while the products grow large enough for the cores' caches and threads, and flatten where the units run at their rate"
  fi
  chart gemm-tflops "GEMM TFLOP/s against size per variant" \
    "TFLOP/s against n for n x n x n products, log axes; colour is the precision family, the line style the type ($(line_convention); dotted: the widened fallback), open points a library called directly, and the dotted horizontal lines the peak of the unit each runs on. $how${peaks:+; $peaks}."
  # bf16 and fp16 against fp32 at the largest size; what that means on this device
  sp=$(table gemm.csv '$c["study"] == "square" { t[$c["m"], $c["variant"]] = $c["tflop_per_s"]; if ($c["m"] + 0 > top) top = $c["m"] + 0 }
    END { for (i = 1; i <= 2; i++) { x = i == 1 ? "bf16" : "fp16"; if (!((top, x) in t) || !((top, "fp32") in t)) continue; r = t[top, x] / t[top, "fp32"]
            s = s sprintf("%s%s runs at %.2fx fp32 (%s)", s == "" ? "" : "; ", x, r, r > 1.05 ? "a gain" : r < 0.95 ? "a loss" : "no gain: within 5%") }
          if (s != "") printf "At n = %d, %s", top, s }')
  if on_gpu; then
    how="Tensor-core variants climb towards the ratio of their peaks to fp32's."
  else
    how="On a CPU a narrower type gains only where its products run on units of their own (here: $(meta gemm.csv cpu-units | grep . || echo 'not recorded')); widened to fp32 it cannot gain."
  fi
  chart gemm-speedup "speed-up over fp32 against size" \
    "Each variant's TFLOP/s divided by fp32's at the same n: above 1 the narrower type pays off ($(line_convention)). $how${sp:+ $sp.}"
  if table gemm.csv '$c["study"] == "align" { f = 1 } END { exit !f }'; then
    al=$(table gemm.csv '$c["study"] == "align" { v = $c["variant"]; x = $c["tflop_per_s"] + 0; if (!(v in lo) || x < lo[v]) lo[v] = x; if (!(v in hi) || x > hi[v]) hi[v] = x
          if ($c["m"] % 8 == 0) { a8[v] += x; n8[v]++ } else { a1[v] += x; n1[v]++ } }
      END { for (v in lo) { if (!n8[v] || !n1[v]) continue; d = 100 * (a8[v] / n8[v]) / (a1[v] / n1[v]) - 100
              s = s sprintf("%s%s: spread %.1f%%, multiples of 8 %+.1f%% against the rest", s == "" ? "" : "; ", v, 100 * (hi[v] / lo[v] - 1), d)
              if (d > 3) { big++; who = who (who == "" ? "" : ", ") v } if (100 * (hi[v] / lo[v] - 1) > sp) sp = 100 * (hi[v] / lo[v] - 1); nv++ }
            printf "%s. %s", s, big ? sprintf("Multiples of 8 are faster by more than 3%% for %d of the %d variants (%s), against spreads of up to %.1f%% across the sweep.", big, nv, who, sp) : "No variant gains more than 3% at the multiples of 8: on this device alignment to 8 does not matter at this size." }')
    if on_gpu; then
      how="Tensor cores want 16-byte aligned rows (8 fp16 elements); a dip at the open points is what a ragged dimension costs (padding is the fix)."
    else
      how="Filled points are multiples of 8, open ones are not."
    fi
    chart gemm-align "alignment study around 4096" \
      "TFLOP/s for n = 4088 ... 4104 against each variant's median over the sweep, a linear axis in per cent, one panel per variant. The band around each line is the point's min-max over its timed launches (TFLOP/s at the longest and the shortest time): a difference inside the bands is the machine's noise. $how $al"
  fi
fi
if have gemm_accuracy.csv; then
  # how each fp32-accumulated line moves from the smallest to the largest k, in decades, on positive data
  acc=$(table gemm_accuracy.csv '$c["method"] == "simulated" && $c["data"] == "positive" { v = $c["variant"]; k = $c["k"] + 0
        if (!(v in kl) || k < kl[v]) { kl[v] = k; el[v] = $c["rel_err"] } if (!(v in kh) || k > kh[v]) { kh[v] = k; eh[v] = $c["rel_err"] }; acc[v] = $c["accumulate"] }
    END { for (v in kl) { if (el[v] <= 0 || eh[v] <= 0) continue; d = log(eh[v] / el[v]) / log(10)
            w = d > 0.3 ? sprintf("rises by %.1f decades", d) : d < -0.3 ? sprintf("falls by %.1f decades", -d) : "stays flat (within 0.3 decades)"
            s = s sprintf("%s%s (%s accumulation) %s", s == "" ? "" : "; ", v, acc[v], w) }
          print s }')
  chart gemm-accuracy "GEMM error against k" \
    "Relative error against fp64 as the inner dimension k grows, per input type and accumulator (colour: the input's family; $(line_convention); dash-dotted: a narrow accumulator). From the smallest to the largest k on positive data: ${acc:-no simulated rows}. An fp16 or bf16 accumulator stops adding once the running sum is so large that the addends fall below half its spacing, and reaches O(1) error on positive data: the reason mixed precision keeps accumulation in fp32."
fi
if have bandwidth.csv; then
  # the cache the chart marks: a CPU's last-level cache, a GPU's L2 (none where not recorded)
  cache=last-level
  llc=$(meta bandwidth.csv llc_bytes | awk '$1 > 0 { printf "%g MiB", $1 / 1048576 }')
  [ -n "$llc" ] || { cache=L2; llc=$(meta bandwidth.csv l2_bytes | awk '$1 > 0 { printf "%g MiB", $1 / 1048576 }'); }
  [ -z "$llc" ] || llc=" The dotted vertical line in each panel is where the kernel's arrays together fill the $llc $cache cache the run recorded."
  bw=$(table bandwidth.csv '$c["dtype"] != "bytes" && $c["ref_pct"] != "" { b = $c["array_bytes"] + 0; if (b > top) { top = b; s = "" } if (b == top && $c["kernel"] == "triad") s = s sprintf("%s%s triad %.0f%%", s == "" ? "" : ", ", $c["dtype"], $c["ref_pct"]) }
    END { if (s != "") printf "At %d MiB: %s of the reference.", top / 1048576, s }')
  chart bandwidth "bandwidth per kernel and type" \
    "GB/s of each kernel against the array size, one panel per kernel, one line per type (its family colour), with the same-run copy of the same size that the tables use as reference (grey dashes); the last panel shows the copies behind it. Small arrays fit in cache and run above the memory's rate; from a few times the last-level cache onwards the kernels run at the memory's.$llc $bw"
  ge=$(table bandwidth.csv '$c["kernel"] == "triad" { b = $c["array_bytes"] + 0; if (b > top) top = b; g[b, $c["dtype"]] = $c["gelem_per_s"] }
    END { if (!((top, "fp32") in g)) exit; for (i = 1; i <= 2; i++) { x = i == 1 ? "fp16" : "bf16"; if (!((top, x) in g)) continue; r = g[top, x] / g[top, "fp32"]
            s = s sprintf("%s%s %.2fx fp32 (%s)", s == "" ? "" : ", ", x, r, r >= 1.8 ? "at the 2x line: memory-bound" : "below it: converting the halves costs more than the bytes saved") }
          printf "At %d MiB: %s.", top / 1048576, s }')
  chart bandwidth-gelems "triad elements per second by type" \
    "Triad in elements per second; the dashed line is exactly twice fp32's. $ge"
fi
if have bandwidth_host.csv || [ -f "$dir/bandwidth-host.png" ]; then
  chart bandwidth-host "host to device copies" \
    "Host<->device copies: page-locked (pinned) host memory against pageable malloc'd memory, each direction; the gap is the staging copy the driver makes for pageable memory."
fi
root=$(dirname "$dir")
# the comparison charts: each machine by the name the chart gives it, with its device line
machines() { # CSV: "name (device line)" of every folder beside this one holding CSV
  local d out=""
  for d in "$root"/*/; do
    [ -f "$d/$1" ] || continue
    out+="${out:+; }$("$(dirname "$0")/../cpu_name.sh" --folder "$d" "$1") ($(sed -n 's/^# device: //p' "$d/$1" | head -1))"
  done
  printf '%s' "$out"
}
for cmp in compare-gemm compare-bandwidth; do
  if [ -f "$root/$cmp.png" ]; then
    csv=$([ $cmp = compare-gemm ] && echo gemm.csv || echo bandwidth.csv)
    widened=""
    if [ $cmp = compare-gemm ] && grep -lq ',fp16,.*widened' "$root"/*/gemm.csv 2>/dev/null; then
      widened=" fp16 is left out where it runs fp32's sgemm on widened inputs (its line would lie on fp32's)."
    fi
    printf '![%s](../%s.png)\n\n%s\n\n' "$cmp" "$cmp" "Across the machines in $(basename "$root")/, each colour one machine: $(machines $csv). Line style: $(line_convention) (bf16 dashed, fp16 dotted).$widened"
  fi
done
