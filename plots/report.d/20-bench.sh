#!/usr/bin/env bash
# plots/report.d/20-bench.sh RESULTS_DIR — the GEMM and bandwidth section of
# REPORT.md: best TFLOP/s and % of peak per variant, triad GB/s and % of the
# copy measured in the same run, the issue's targets (the CPU's ratios
# against OpenBLAS, fp32 and memcpy; the GPU's against peak and D2D copy),
# the accuracy study's numbers at the largest k, and every chart.
# Prints nothing when the folder holds neither gemm nor bandwidth CSVs.
set -euo pipefail
dir=${1:?usage: plots/report.d/20-bench.sh RESULTS_DIR}
. "$(dirname "$0")/../report-lib.sh"
have gemm.csv || have bandwidth.csv || have gemm_accuracy.csv || exit 0


echo "## GEMM and memory bandwidth (\`halflab-bench gemm\`, \`halflab-bench bandwidth\`)"
echo
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
    { v = $c["variant"]; t = $c["tflops"] + 0
      if (!(v in best) || t > best[v]) { best[v] = t; row[v] = $0 }
      if (!(v in seen)) { seen[v] = 1; order[++n] = v } }
    END {
      for (i = 1; i <= n; i++) {
        split(row[order[i]], f, ",")
        pct = f[c["pct_of_peak"]] == "" ? "peak unknown" : sprintf("%.1f%%", f[c["pct_of_peak"]])
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
    $c["study"] == "square" { t[$c["m"], $c["variant"]] = $c["tflops"]; if ($c["m"] + 0 > top) top = $c["m"] + 0; v[$c["variant"]] = 1 }
    END {
      if (!((top, "fp32") in t)) { print "_no fp32 point at the largest size_"; exit }
      for (x in v) if (x != "fp32" && (top, x) in t) printf "- %s: %.2fx fp32 at %d^3 (%.4g vs %.4g TFLOP/s)\n", x, t[top, x] / t[top, "fp32"], top, t[top, x], t[top, "fp32"]
    }' | sort
  echo
fi

if have gemm_targets.csv || have bandwidth_targets.csv || have mlp_step_targets.csv; then
  echo "### The issue's performance targets (ratios measured in the same run)"
  echo
  echo "| target | ratio | threshold | status | measured |"
  echo "|---|---|---|---|---|"
  for f in gemm_targets.csv bandwidth_targets.csv mlp_step_targets.csv; do
    have $f && table $f '{ printf "| %s | %s | %s | **%s** | %s |\n", $c["target"], $c["value"] == "" ? "-" : $c["value"], $c["threshold"] == "" ? "-" : $c["threshold"], $c["status"], $c["detail"] }'
  done
  echo
fi

if have bandwidth.csv; then
  echo "### Memory bandwidth at the largest size"
  echo
  echo "BabelStream's byte accounting; \"copy reference\" is the platform's own copy of the same array size measured"
  echo "in the same run (the practical limit)."
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
          f[c["gbps"]], f[c["gelems"]], f[c["pct_of_ref"]], f[c["ref_kernel"]], f[c["ref_gbps"]],
          f[c["pct_of_datasheet"]] == "" ? "-" : sprintf("%.1f%%", f[c["pct_of_datasheet"]])
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
    { b = $c["bytes"] + 0; if (b > top) { top = b; n = 0 } if (b == top) r[++n] = $c["direction"] "|" $c["memory"] "|" $c["gbps"] }
    END { for (i = 1; i <= n; i++) { split(r[i], f, "|"); printf "| %s | %s | %.2f |\n", f[1], f[2], f[3] } }'
  echo
fi

if have gemm_accuracy.csv; then
  echo "### Accuracy: relative error against fp64 at the largest k"
  echo
  echo "Normwise relative error of C = A B, data uniform in [0, 1) (one sign: the hard case for a narrow"
  echo "accumulator) and in [-1, 1). \"simulated\": sequential sums on the CPU, rounded to the accumulation format"
  echo "after every addition; \"cublas\": the GPU's own GEMM; \"onednn\": the CPU's bf16 GEMM on oneDNN's matmul."
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
chart gemm-tflops "GEMM TFLOP/s against size per variant" \
  "TFLOP/s against n for n x n x n products, log axes; dashed lines are the datasheet's dense peak of the same colour. The curves rise while the GPU fills up (small n are launch- and latency-bound) and flatten near the peak; on a CPU the fp16 line sits just under fp32 because the CPU widens it to fp32, and bf16 sits above fp32 where oneDNN runs it on the CPU's bf16 units (under it where it is widened too)."
chart gemm-speedup "speed-up over fp32 against size" \
  "Each variant's TFLOP/s divided by fp32's at the same n: above 1 the narrower type pays off. Tensor-core variants should approach the ratio of their peaks (on an H100/H200: tf32 ~7x, fp16/bf16 ~15x, fp8 ~30x of SIMT fp32); on a CPU fp16 stays at or below 1 (conversion overhead), bf16 gains where oneDNN runs it, and the OpenBLAS and oneDNN lines show what the fp32 and bf16 paths cost against the libraries called directly."
chart gemm-align "alignment study around 4096" \
  "TFLOP/s for n = 4088 ... 4104: filled points are multiples of 8. Tensor cores want 16-byte aligned rows (8 fp16 elements); the open points show what a ragged dimension costs (padding is the fix)."
chart gemm-accuracy "GEMM error against k" \
  "Relative error against fp64 as the inner dimension k grows. With fp32 accumulation the error stays near the inputs' own rounding (flat lines); with an fp16 or bf16 accumulator it grows with k and, for positive data, reaches O(1) once the running sum is so large that the addends fall below half its spacing — the reason mixed precision keeps accumulation in fp32."
chart bandwidth "bandwidth per kernel and type" \
  "Top: GB/s of each kernel against the array size per type, with the platform's own copy of the same size (dashed) and the datasheet figure (dotted). Small arrays fit in cache and run above the memory's rate; from a few times the last-level cache onwards the kernels run at the memory's. Bottom: the same runs in elements per second: fp16/bf16 stream twice the elements of fp32 at the same GB/s."
chart bandwidth-gelems "triad elements per second by type" \
  "Triad in elements per second; the dashed line is exactly twice fp32's. Half-width types near that line are memory-bound, as a bandwidth kernel should be; below it, converting the halves costs more than the memory system saves."
if have bandwidth_host.csv || [ -f "$dir/bandwidth-host.png" ]; then
  chart bandwidth-host "host to device copies" \
    "Host<->device copies: page-locked (pinned) host memory against pageable malloc'd memory, each direction; the gap is the staging copy the driver makes for pageable memory."
fi
root=$(dirname "$dir")
for cmp in compare-gemm compare-bandwidth; do
  if [ -f "$root/$cmp.png" ]; then
    printf '![%s](../%s.png)\n\n%s\n\n' "$cmp" "$cmp" "Across the machines in $(basename "$root")/: each colour one machine (solid fp16, dashed fp32)."
  fi
done
