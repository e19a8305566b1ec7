#!/usr/bin/env bash
# plots/report.d/20-bench.sh RESULTS_DIR — the GEMM and bandwidth section of
# REPORT.md: which half-precision units the runs used (from what ran), best
# TFLOP/s and % of peak per variant (on a CPU, with the clock the peaks are
# scaled by and how it was measured), the expectations with their bounds and
# reasons (NAME_expectations.csv, or NAME_targets.csv from before), triad
# GB/s against the copy reference, the verdicts that bound the numbers on
# both sides (a kernel past the caches more than 10% above the copy
# reference makes the reference wrong; half-width triad above 2.1x fp32's
# elements per second means fp32 was disturbed), the accuracy study's numbers
# at the largest k, and every chart.
# Prints nothing when the folder holds neither gemm nor bandwidth CSVs.
set -euo pipefail
dir=${1:?usage: plots/report.d/20-bench.sh RESULTS_DIR}
. "$(dirname "$0")/../report-lib.sh"
have gemm.csv || have bandwidth.csv || have gemm_accuracy.csv || have quantize.csv || exit 0


echo "## GEMM and memory bandwidth (\`halflab-bench gemm\`, \`halflab-bench bandwidth\`)"
echo
provenance 'gemm*.csv' 'bandwidth*.csv' 'mlp_step*.csv' 'quantize*.csv'
# What the runs here actually used of each half-precision unit: the evidence
# from gemm.csv's implementation column (the library's instruction set named
# there) and the types the bandwidth and GEMM rows converted. Prints one
# "unit<TAB>evidence" line per unit in use; a unit with no line was not used.
units_in_use() {
  local allowed=$1 impls="" types=""
  have gemm.csv && impls=$(table gemm.csv '$c["variant"] ~ /^(fp16|bf16)$/ { print $c["variant"] ": " $c["implementation"] }' | sort -u)
  have gemm.csv && types+=$(table gemm.csv '{ print $c["variant"] }' | sort -u | paste -sd' ' -)" "
  have bandwidth.csv && types+=$(table bandwidth.csv '{ print $c["dtype"] }' | sort -u | paste -sd' ' -)
  allows() { [[ $allowed != none* ]] && [[ ", $allowed," == *", $1,"* ]]; }
  if allows f16c && [[ " $types " == *" fp16 "* ]]; then
    printf 'f16c\tfp16 <-> fp32 conversions of the fp16 rows\n'
  fi
  local bf16_products
  bf16_products=$(grep -m1 '^bf16: .*avx512_core_bf16' <<<"$impls" | grep -v amx || true)
  if allows avx512_bf16 && [ -n "$bf16_products" ]; then
    printf 'avx512_bf16\tbf16 products (%s) and fp32 -> bf16 rounding\n' "${bf16_products#bf16: }"
  elif allows avx512_bf16 && [[ " $types " == *" bf16 "* ]]; then
    printf 'avx512_bf16\tfp32 -> bf16 rounding of the bf16 rows\n'
  fi
  local fp16_unit
  fp16_unit=$(grep -m1 -i '^fp16: .*avx512_core_fp16\|^fp16: .*avx512_fp16' <<<"$impls" || true)
  if allows avx512_fp16 && [ -n "$fp16_unit" ]; then printf 'avx512_fp16\tfp16 products (%s)\n' "${fp16_unit#fp16: }"; fi
  local amx
  amx=$(grep -m1 -i '^bf16: .*amx' <<<"$impls" || true)
  if allows amx_bf16 && [ -n "$amx" ]; then printf 'amx_bf16\tbf16 tile products (%s)\n' "${amx#bf16: }"; fi
}

for f in gemm.csv bandwidth.csv; do
  if have $f; then
    echo "Measured on: $(meta $f device). Peaks: $(meta $f peak_source)."
    echo
    # the clock a CPU's peaks are scaled by: its value, how it was measured, the range it had to fall in
    if [ -n "$(meta $f clock_method)" ]; then
      if [ "$(meta $f clock_measured_mhz)" = "not measured" ]; then
        echo "CPU clock: $(meta $f clock_method); the peaks are unknown."
      else
        verdict="within it"
        [ "$(meta $f clock_trusted)" = yes ] || verdict="**outside it: not used, the peaks are unknown**"
        echo "CPU clock: $(meta $f clock_measured_mhz) MHz, measured with $(meta $f clock_method). Accepted"
        echo "range $(meta $f clock_bounds_mhz | sed 's/:/ MHz:/'); the measurement is $verdict."
      fi
      echo
    fi
    echo "Method: $(meta $f method)."
    echo
    if [ -n "$(meta $f blas)" ]; then
      features=$(meta $f cpu-features) units=$(meta $f cpu-units)
      in_use=$(units_in_use "$units")
      echo "fp32 products ran on $(meta $f blas | sed 's/; library .*//'). The CPU's half-precision units: $features."
      echo "Open to halflab's kernels (HALFLAB_CPU_UNITS): ${units:-not recorded}. Which of them these runs used, from what"
      echo "ran (gemm.csv's implementation column, the types converted), what each does here, and what a CPU without it gets:"
      echo
      has() { [[ $features == *"$1 yes"* ]]; }
      row() { # UNIT ROLE WITHOUT
        local state="not on this CPU" used
        used=$(awk -F'\t' -v u="$1" '$1 == u { print $2 }' <<<"$in_use")
        if [ -n "$used" ]; then state="**in use**: $used"
        elif has "$1" && [[ $units == *portable* ]]; then state="present, not used (HALFLAB_CPU_UNITS=portable)"
        elif has "$1"; then state="present, not used by these runs"; fi
        echo "| $1 | $state | $2 | $3 |"
      }
      echo "| unit | here | what it can do in halflab | without it |"
      echo "|---|---|---|---|"
      row f16c "converts fp16 <-> fp32, eight values per instruction (conversion only: it computes nothing)" "conversions in portable C"
      row avx512_bf16 "rounds fp32 -> bf16 (vcvtneps2bf16, sixteen values, subnormals fixed up); bf16 dot products through oneDNN where no AMX" "rounding with AVX2 integer ops, else portable C; bf16 products widened to fp32 for sgemm"
      row avx512_fp16 "fp16 arithmetic, 32 lanes: a library's fp16 product can run on it (halflab's own kernels only convert fp16)" "fp16 products widened to fp32 for sgemm"
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

# A program's expectations file, or the same table under its earlier name (NAME_targets.csv)
expectations_file() {
  if have "$1_expectations.csv"; then echo "$1_expectations.csv"
  elif have "$1_targets.csv"; then echo "$1_targets.csv"; fi
}
exp_files=()
for p in gemm bandwidth mlp_step quantize; do
  f=$(expectations_file $p)
  [ -n "$f" ] && exp_files+=("$f")
done
if [ ${#exp_files[@]} -gt 0 ]; then
  echo "### Expectations (ratios measured in the same run, each with its reason)"
  echo
  echo "Each row holds a ratio measured in the same run between the bounds that physics or a peer sets; the reason"
  echo "says which. Outside either bound the row is MISS: above an upper bound usually means the run it is compared"
  echo "with was disturbed, below a lower one that something other than the named limit holds the kernel back."
  echo
  echo "| expectation | ratio | passes when | status | measured | reason |"
  echo "|---|---|---|---|---|---|"
  for f in "${exp_files[@]}"; do
    table $f '{
      name = ("expectation" in c) ? $c["expectation"] : $c["target"]
      v = $c["value"]; st = $c["status"]; d = $c["detail"]; side = "-"
      if ("low" in c) {
        lo = $c["low"]; hi = $c["high"]
        if (lo != "" && hi != "") side = lo " <= ratio <= " hi
        else if (lo != "") side = "ratio >= " lo
        else if (hi != "") side = "ratio <= " hi
        why = $c["reason"]
      } else if (v != "" && $c["threshold"] != "") {
        # a file from before the bounds: one threshold; which side passes, from the status and the two numbers
        t = $c["threshold"]
        up = (st == "PASS" && v + 0 >= t + 0) || (st == "MISS" && v + 0 < t + 0)
        # "goal <= Lx" with a threshold of 1/L: the ratio was stored inverted; show it the way the goal reads
        if (up && match(d, /goal <= [0-9.]+x/)) {
          L = substr(d, RSTART + 8, RLENGTH - 9) + 0
          if (L > 0 && (1 / t - L < 0.01 && L - 1 / t < 0.01)) { v = sprintf("%.4f", 1 / v); t = L; up = 0 }
        }
        side = (up ? "ratio >= " : "ratio <= ") t
        why = "-"
      } else why = ("reason" in c) ? $c["reason"] : "-"
      printf "| %s | %s | %s | **%s** | %s | %s |\n", name, v == "" ? "-" : v, side, st, d, why }'
  done
  echo
  for f in "${exp_files[@]}"; do
    if [[ $f == *_targets.csv ]]; then
      echo "\`$f\` was written before expectations carried their bounds on both sides and their reasons (reason: -)."
      echo
    fi
  done
fi

# ---- bandwidth verdicts, each bounded on both sides where the physics is
# Past twice the last-level cache (GPU: L2) no array survives in cache between launches: every
# kernel streams from memory and the bounds below hold. In cache a core's load and store ports
# set the rate, and triad (two loads per store) can outrun any copy (one).
llc_of_bandwidth() {
  local b
  b=$(meta bandwidth.csv llc_bytes); [ -n "$b" ] || b=$(meta bandwidth.csv l2_bytes)
  echo "${b:-33554432}"  # unrecorded: 32 MiB, the kernels' own fallback
}
REFERENCE_LIMIT=110  # per cent: the most a kernel may beat the copy reference by past the caches

# The reference's own check, as halflab-bench makes it: a kernel past the caches above
# REFERENCE_LIMIT% of it by the fastest samples of each makes the reference wrong (named, with its
# size). Other work on the machine slows a median, rarely every sample: medians above the limit
# with the fastest samples within it say the reference's runs were disturbed.
reference_verdict() {
  table bandwidth.csv "BEGIN { llc = $(llc_of_bandwidth); limit = $REFERENCE_LIMIT }"'
    $c["dtype"] == "bytes" { b = $c["array_bytes"] + 0; if ($c["gb_per_s_best"] + 0 > best[b]) best[b] = $c["gb_per_s_best"] + 0; next }
    $c["ref_pct"] == "" { next }
    { b = $c["array_bytes"] + 0
      if (b < 2 * llc) next
      n++; p = $c["ref_pct"] + 0; pb = best[b] > 0 ? 100 * $c["gb_per_s_best"] / best[b] : 0
      what = sprintf("%s %s at %d MiB", $c["kernel"], $c["dtype"], b / 1048576)
      if (p > top) { top = p; topw = sprintf("%s, %.0f%% of %s", what, p, $c["ref_kernel"]) }
      if (p > limit) slow++
      if (pb > limit) { wrong++; if (pb > worst) { worst = pb; worstw = sprintf("%s, %.0f%% of the fastest copy by the fastest samples; by the medians %.0f%% of %s", what, pb, p, $c["ref_kernel"]) } } }
    END {
      if (!n) { printf "No size here is past twice the last-level cache (%d MiB): the arrays stay partly cached, where a kernel with more loads per store (triad) can outrun any copy; no bound is checked.\n", 2 * llc / 1048576; exit }
      if (wrong) {
        printf "**The copy reference is wrong here**: past twice the last-level cache %d of the %d kernel, type and size points exceed it by more than %d%% (the highest: %s). ", wrong, n, limit - 100, worstw
        printf "A copy with streaming stores moves the bytes it counts at the memory'"'"'s rate, as the kernels do, so no kernel should beat the fastest copy by more than a different mix of reads and writes allows: the reference copies miss a faster way to copy on this machine.\n"
      } else if (slow) printf "Past twice the last-level cache %d of the %d points exceed the copy reference by more than %d%% by their medians (the highest: %s) but none by the fastest samples: other work slowed the reference'"'"'s runs; the reference holds, and a rerun on a quiet machine gives a clean table.\n", slow, n, limit - 100, topw
      else printf "Past twice the last-level cache (from %d MiB) every kernel stays within %d%% of the copy reference (the highest: %s): the reference bounds what the kernels reach, as a copy that moves the bytes it counts should.\n", 2 * llc / 1048576, limit, topw }'
}

if have bandwidth.csv; then
  echo "### Memory bandwidth at the largest size"
  echo
  ref_text=$(meta bandwidth.csv reference)
  case $ref_text in
    "the fastest of"*) echo "BabelStream's byte accounting; the \"copy reference\" at each size is $ref_text." ;;
    ?*) echo "BabelStream's byte accounting; the \"copy reference\" as this run recorded it: $ref_text." ;;
    *) echo "BabelStream's byte accounting; the \"copy reference\" is not described in this CSV." ;;
  esac
  echo
  reference_verdict
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

if have quantize.csv; then
  echo "### Block quantizers (\`halflab-bench quantize\`)"
  echo
  echo "fp32 to codes and block scales, $(meta quantize.csv input); bytes: $(meta quantize.csv bytes). Codes: $(meta quantize.csv codes)."
  echo "The reference: $(meta quantize.csv reference)."
  echo
  echo "| format | element | rule | block | GB/s | x copy reference | reads the input first for its amax |"
  echo "|---|---|---|---|---|---|---|"
  table quantize.csv '$c["unit"] != "copy" {
      printf "| %s | %s | %s | %s | %.2f | %.2f | %s |\n", $c["kernel"] == "amax" ? "amax pass alone" : $c["format"], $c["element"],
        $c["rule"], $c["block"], $c["gb_per_s"], $c["ref_ratio"], $c["amax_first"] == "" ? "-" : $c["amax_first"] }'
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
  table gemm_accuracy.csv '$c["method"] == "emulated" { f = 1 } END { exit !f }' && methods+="; \"emulated\": block-scaled inputs quantized and dequantized on the CPU, summed in fp32 or in a model of Hopper's 14-bit fp8 accumulator (accumulate e8m13), never a hardware speed"
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

# The unit each narrow type's products ran on at the largest square size, from gemm.csv's
# implementation column: only units that compute are named; F16C converts, it multiplies nothing
product_units() {
  local f16c=""
  if [[ ", $(meta gemm.csv cpu-units)," == *", f16c,"* ]]; then f16c="; F16C only converts"; fi
  table gemm.csv "BEGIN { f16c = \"$f16c\" }"'$c["study"] == "square" && $c["variant"] ~ /^(fp16|bf16)$/ { if ($c["m"] + 0 >= top) { top = $c["m"] + 0; impl[$c["variant"]] = $c["implementation"] } }
    END { for (i = 1; i <= 2; i++) { v = i == 1 ? "bf16" : "fp16"; if (!(v in impl)) continue; x = impl[v]
            if (x ~ /amx/) u = "AMX-BF16 tiles"
            else if (x ~ /avx512_core_fp16|avx512_fp16/) u = "AVX512-FP16"
            else if (x ~ /avx512_core_bf16/) u = "AVX512-BF16 dot products"
            else if (x ~ /widened/) u = "no unit of its own: widened to fp32 for sgemm" (v == "fp16" ? f16c : "")
            else u = x
            s = s sprintf("%s%s on %s", s == "" ? "" : "; ", v, u) }
          print s == "" ? "no fp16 or bf16 products in this run" : s }'
}

# Triad's elements per second, fp16 and bf16 against fp32's, per size range: past twice the
# last-level cache (memory-bound: half the width streams twice the elements, so 2x; above
# STREAM_HIGH fp32's run was slower than the memory allows; below the low bound something other
# than the memory limits the narrow type, its conversions unless its fastest samples say its run
# was disturbed) and in cache (three arrays within the last-level cache: the cores set the rate).
STREAM_HIGH=2.1
streaming_verdict() {
  local low=1.8
  if on_gpu; then low=1.9; fi
  table bandwidth.csv "BEGIN { llc = $(llc_of_bandwidth); low = $low; high = $STREAM_HIGH }"'
    $c["kernel"] == "triad" { b = $c["array_bytes"] + 0; g[b, $c["dtype"]] = $c["gelem_per_s"]
      es = $c["dtype"] == "fp32" ? 4 : 2; gb[b, $c["dtype"]] = $c["gb_per_s_best"] / es
      if (b >= 2 * llc && b > top) top = b; if (3 * b <= llc) cached[b] = 1; sizes[b] = 1 }
    function range(kind, x,   b, r, lo, hi, n) {
      for (b in sizes) { if ((kind == "dram") != (b + 0 >= 2 * llc) || (kind == "cache" && !(b in cached))) continue
        if (!((b, x) in g) || !((b, "fp32") in g) || g[b, "fp32"] <= 0) continue
        r = g[b, x] / g[b, "fp32"]; if (!n++ || r < lo) lo = r; if (n == 1 || r > hi) hi = r
        if (r < low || r > high) outside++ }
      return n ? sprintf("%s %.2fx to %.2fx", x, lo, hi) : "" }
    function verdict(x,   r, rb) {
      r = g[top, x] / g[top, "fp32"]; rb = gb[top, "fp32"] > 0 ? gb[top, x] / gb[top, "fp32"] : 0
      if (r > high) return sprintf("%s %.2fx: above %.1fx, fp32 disturbed: rerun (a streaming kernel cannot move more than twice the elements at half the width; fp32 ran slower than the memory allows)", x, r, high)
      if (r >= low) return sprintf("%s %.2fx: at the 2x line, memory-bound", x, r)
      if (rb >= low && rb <= high) return sprintf("%s %.2fx: below the 2x line, but %.2fx by the fastest samples: its run was disturbed; rerun", x, r, rb)
      return sprintf("%s %.2fx: below the 2x line, so not memory-bound: converting to and from fp32 limits it", x, r) }
    END {
      for (i = 1; i <= 2; i++) { x = i == 1 ? "fp16" : "bf16"
        if (top && (top, x) in g && (top, "fp32") in g) d = d sprintf("%s%s", d == "" ? "" : "; ", verdict(x))
        s = range("dram", x); if (s != "") dr = dr (dr == "" ? "" : ", ") s
        outside = 0; s = range("cache", x); if (s != "") { cr = cr (cr == "" ? "" : ", ") s; cout += outside } }
      if (top) printf "Past twice the last-level cache (from %d MiB; fp32 = 1): %s. At %d MiB: %s. ", 2 * llc / 1048576, dr, top / 1048576, d
      else printf "No size here is past twice the last-level cache (%d MiB): no memory-bound verdict. ", 2 * llc / 1048576
      if (cr != "") printf "In cache (the three arrays within the last-level cache): %s: %s", cr,
        cout ? "not the same bytes per second there: the cores'"'"' loads, stores and conversions set the rate, not the memory." : "the same bytes per second there too."
      else printf "No size here keeps the three arrays within the last-level cache." }'
}

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
    how="On a CPU a narrower type gains only where its products run on a unit that multiplies in it (here: $(product_units)); widened to fp32 it cannot gain."
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
  # the emulated rows (block-scaled inputs, the narrow fp8 accumulator) at the largest k
  emulated=$(table gemm_accuracy.csv '$c["method"] == "emulated" { k = $c["k"] + 0; if (k > top) top = k; r[++n] = $c["k"] "|" $c["variant"] "|" $c["data"] "|" $c["rel_err"] }
    END { if (!n) exit
          for (i = 1; i <= n; i++) { split(r[i], f, "|"); if (f[1] + 0 == top) e[f[2], f[3]] = f[4] }
          s = sprintf("The lower panels are emulated on the CPU (inputs quantized and dequantized, summed in fp32 or in a model of Hopper'"'"'s 14-bit fp8 accumulator; no hardware speed): at k = %d on mixed-sign data", top)
          split("fp8-tensor mxfp8 mxfp6 mxfp4 nvfp4", v, " ")
          for (i = 1; i <= 5; i++) if ((v[i], "signed") in e) s = s sprintf("%s %s %.2g", i == 1 ? "" : ",", v[i], e[v[i], "signed"])
          if (("fp8-tensor-acc14", "positive") in e && ("fp8-tensor", "positive") in e) {
            s = s sprintf("; on positive data the 14-bit accumulator gives %.2g against %.2g with fp32 accumulation of the same fp8 inputs", e["fp8-tensor-acc14", "positive"], e["fp8-tensor", "positive"])
            if (("fp8-tensor-acc14-p128", "positive") in e) s = s sprintf(", and %.2g when promoted to fp32 every 128 products", e["fp8-tensor-acc14-p128", "positive"])
          }
          print s "." }')
  chart gemm-accuracy "GEMM error against k" \
    "Relative error against fp64 as the inner dimension k grows, per input type and accumulator (colour: the input's family; $(line_convention); dash-dotted: a narrow accumulator). From the smallest to the largest k on positive data: ${acc:-no simulated rows}. An fp16 or bf16 accumulator stops adding once the running sum is so large that the addends fall below half its spacing, and reaches O(1) error on positive data: the reason mixed precision keeps accumulation in fp32.${emulated:+ $emulated}"
fi
if have bandwidth.csv; then
  # the cache the chart marks: a CPU's last-level cache, a GPU's L2 (none where not recorded)
  cache=last-level
  llc=$(meta bandwidth.csv llc_bytes | awk '$1 > 0 { printf "%g MiB", $1 / 1048576 }')
  [ -n "$llc" ] || { cache=L2; llc=$(meta bandwidth.csv l2_bytes | awk '$1 > 0 { printf "%g MiB", $1 / 1048576 }'); }
  [ -z "$llc" ] || llc=" The dotted vertical line in each panel is where the kernel's arrays together fill the $llc $cache cache the run recorded."
  bw=$(table bandwidth.csv "BEGIN { llc = $(llc_of_bandwidth) }"'$c["kernel"] == "triad" && $c["dtype"] == "fp32" { b = $c["array_bytes"] + 0
        if (small == "" || b < small) { small = b; gs = $c["gb_per_s"] } if (b >= 2 * llc && b > top) { top = b; gt = $c["gb_per_s"]; pt = $c["ref_pct"] } }
    END { if (small == "") exit
          printf "fp32 triad: %.1f GB/s at %g MiB", gs, small / 1048576
          if (top) printf ", %.1f GB/s at %d MiB past the caches (%.0f%% of the copy reference there)", gt, top / 1048576, pt
          print "." }')
  chart bandwidth "bandwidth per kernel and type" \
    "GB/s of each kernel against the array size, one panel per kernel, one line per type (its family colour), with the copy reference at each size (grey dashes: the fastest of several copies of that size, same run, same threads); the last panel shows the copies themselves.$llc $bw"
  chart bandwidth-gelems "triad elements per second by type" \
    "Triad in elements per second; the dashed line is exactly twice fp32's. $(streaming_verdict)"
fi
if have quantize.csv; then
  chart quantize "block quantizers against the copy reference" \
    "Bytes read and written per second by each block quantizer over the fastest copy of the same input in the same run (grey dashes: 1; dotted: the 0.7 expected past the caches on a CPU), blocks along rows filled and down columns hatched; the first bar is the amax pass alone, which the tensor rule and nvfp4 pay before their codes. Codes by $(table quantize.csv '$c["kernel"] == "quantize" { print $c["unit"]; exit }')."
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
