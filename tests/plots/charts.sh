#!/usr/bin/env bash
# tests/plots/charts.sh SOURCE_ROOT — the chart test (suite e2e). Three parts:
#  1. every plots/*.gp, through scripts/plots.sh --strict (what `ninja plots`
#     runs), on a copy of the committed CPU results folder: no output on
#     gnuplot's stderr, every chart whose CSVs are there drawn, and no GPU
#     wording in the CPU report or the CPU charts;
#  2. the same on a synthetic GPU folder this test writes (the columns the
#     scripts read): no stderr, the GPU charts drawn, GPU captions present;
#  3. each computed report sentence on either side of its threshold (copies
#     of the CPU CSVs with one number changed): with the numbers masked, the
#     sentence must read differently, and where a bound names what went
#     wrong (the copy reference, a disturbed fp32 run, a unit not in use) the
#     words appear on the far side only.
# Part 1 also draws the slides and print presets and checks their text and
# line sizes (tools/chart_sizes.py). Exit 77 (skipped) only where gnuplot is
# not installed.
set -euo pipefail
root=$(cd "${1:?usage: tests/plots/charts.sh SOURCE_ROOT}" && pwd)
command -v gnuplot >/dev/null 2>&1 || { echo "gnuplot is not installed: chart test skipped"; exit 77; }

work=$(mktemp -d /tmp/halflab-charts.XXXXXX)
# HALFLAB_KEEP_CHARTS=1 keeps the folders for a look at the charts (the path is printed)
if [ -n "${HALFLAB_KEEP_CHARTS:-}" ]; then echo "charts in $work"; else trap 'rm -rf "$work"' EXIT; fi
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# the committed CPU reference folder: the first results/*/ whose gemm.csv names a CPU device
src=""
for d in "$root"/results/*/; do
  [ -f "$d/gemm.csv" ] && grep -q '^# device: cpu' "$d/gemm.csv" && { src=${d%/}; break; }
done
[ -n "$src" ] || { echo "FAIL: no CPU results folder with gemm.csv under $root/results" >&2; exit 1; }

gpu_words='\bGPU|cuBLAS|cublas|tensor.cores?\b|\bCUDA\b|cudaMem|\bSIMT\b|\bH100\b|\bH200\b'

# ------------------------------------------------------------ 1. the CPU folder
# a long path on purpose: commands built from it must not break (gnuplot's
# sprintf mangles long results of formats holding %%)
cpu=$work/$(printf 'a-results-folder-with-a-long-name-%.0s' 1 2 3 4 5)/cpu
mkdir -p "$(dirname "$cpu")"
cp -r "$src" "$cpu"
rm -f "$cpu"/*.png "$cpu"/*.svg "$cpu/REPORT.md"
# the quantization probes' CSVs (halflab-bench quantize-error), from the committed folder that has them
qsrc=$(ls "$root"/results/*/quantize_error.csv 2>/dev/null | head -1 || true)
quantize_charts=""
if [ -n "$qsrc" ]; then
  cp "$(dirname "$qsrc")/quantize_error.csv" "$(dirname "$qsrc")/quantize_sweep.csv" "$cpu/"
  quantize_charts="quantize-sweep quantize-sqnr quantize-floor-rceil"
  if [ -f "$(dirname "$qsrc")/quantize_gemm.csv" ]; then
    cp "$(dirname "$qsrc")/quantize_gemm.csv" "$cpu/"
    quantize_charts="$quantize_charts quantize-gemm"
  fi
fi
if ! "$root/scripts/plots.sh" --strict "$cpu" >"$work/cpu.log" 2>&1; then
  cat "$work/cpu.log" >&2
  fail "scripts/plots.sh --strict on the CPU folder (gnuplot wrote to stderr or failed)"
fi
for c in overflow absorption lost_update subnormal loss_scale gemm-tflops gemm-speedup gemm-align gemm-accuracy \
         bandwidth bandwidth-gelems footprint peers train-loss train-scale train-hist train-underflow train-perf train-dp \
         $quantize_charts; do
  [ -s "$cpu/$c.png" ] && [ -s "$cpu/$c.svg" ] || fail "CPU folder: $c.png/.svg not drawn"
done
[ ! -e "$cpu/bandwidth-host.png" ] || fail "CPU folder: bandwidth-host.png drawn without bandwidth_host.csv"
[ -z "$qsrc" ] || grep -q "FLOOR clips the maximum of [0-9.]*% of MXFP4 blocks" "$cpu/REPORT.md" ||
  fail "CPU report: no MX FLOOR sentence from quantize_error.csv"
[ ! -f "$cpu/quantize_gemm.csv" ] || grep -q "median error of the layers' products" "$cpu/REPORT.md" ||
  fail "CPU report: no GEMM sentence from quantize_gemm.csv"
if grep -nE "$gpu_words" "$cpu/REPORT.md" >"$work/words" 2>/dev/null; then
  cat "$work/words" >&2
  fail "GPU wording in the CPU report (lines above)"
fi
for svg in "$cpu"/*.svg; do
  if sed 's/<[^>]*>//g' "$svg" | grep -E "$gpu_words" >/dev/null; then fail "GPU wording in the CPU chart $(basename "$svg")"; fi
done
# the slides and print presets of the same charts: every chart in both files
# of each, and the sizes style.gp promises (tools/chart_sizes.py)
if ! "$root/scripts/plots.sh" --strict --presets slides,print "$cpu" >"$work/presets.log" 2>&1; then
  cat "$work/presets.log" >&2
  fail "scripts/plots.sh --strict --presets slides,print on the CPU folder"
fi
for c in $(cd "$cpu" && ls *.png | sed 's/\.png$//'); do
  for f in slides/$c.png slides/$c.pdf print/$c-3.5in.pdf print/$c-7in.pdf; do
    [ -s "$cpu/$f" ] || fail "CPU folder: $f not drawn (screen has $c.png)"
  done
done
python3 "$root/tools/chart_sizes.py" slides "$cpu"/slides/*.pdf >"$work/sizes.log" || { grep FAIL "$work/sizes.log" >&2; fail "slides: text or lines below style.gp's sizes"; }
python3 "$root/tools/chart_sizes.py" print "$cpu"/print/*.pdf >"$work/sizes.log" || { grep FAIL "$work/sizes.log" >&2; fail "print: text or lines outside style.gp's sizes"; }
# the bandwidth chart's reference is the one the tables use (the first row's ref_kernel), named in its legend
ref=$(awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["ref_kernel"] != "" { print $c["ref_kernel"]; exit }' "$cpu/bandwidth.csv")
grep -qF "copy reference ($ref)" "$cpu/bandwidth.svg" || fail "bandwidth.svg does not name the tables' reference ($ref)"
# one measure of speed: the tiny text's amp-fp16 speed-up is the table's speed-up column, the same number
# (single readers, no early-exiting pipe: pipefail would end the test on SIGPIPE)
tiny_row=$(awk -F' [|] ' '/^### The tiny preset/ { in_t = 1; next } /^### / { in_t = 0 } in_t && $1 == "| amp-fp16" && r == "" { r = $10 } END { print r }' "$cpu/REPORT.md")
tiny_text=$(sed -n 's/.* \([0-9.]*x\) for amp-fp16 (.*/\1/p' "$cpu/REPORT.md" | awk 'NR == 1')
[ -n "$tiny_row" ] && [ "$tiny_row" = "$tiny_text" ] ||
  fail "the tiny table's amp-fp16 speed-up ($tiny_row) and the text's ($tiny_text) differ"
# train-dp's message: the caption's first words are the slide's title (two computations of one sentence)
dp_msg=$(sed -n 's/^\*\*\(2 ranks[^*]*\)\.\*\*.*/\1/p' "$cpu/REPORT.md")
if [ -z "$dp_msg" ]; then fail "the train-dp caption opens with no message"
elif command -v pdftotext >/dev/null 2>&1 && ! pdftotext "$cpu/slides/train-dp.pdf" - | grep -F "$dp_msg" >/dev/null; then
  fail "the train-dp slide's title is not the caption's message: $dp_msg"
fi

# ------------------------------------------------------------ 2. a synthetic GPU folder
gpu=$work/gpu
mkdir -p "$gpu"
dev='# device: cuda: NVIDIA H200 (synthetic), sm_90, 132 SMs, 139.8 GiB; cpu: synthetic host'
{
  echo "$dev"
  echo "device,study,shape,variant,dtype,accumulate,out_dtype,implementation,m,n,k,batch,trans_a,trans_b,flop,warmups,samples,inner,rotation_slots,time_ms_min,time_ms_median,time_ms_max,tflop_per_s,tflop_per_s_best,peak_tflop_per_s,peak_pct,max_err_norm,err_bound_norm,max_err_over_bound,attempts"
  awk 'BEGIN { split("fp32 tf32 fp16 bf16 fp8", v, " "); split("67 495 989 989 1979", pk, " "); split("0.8 0.6 0.7 0.7 0.6", ef, " ")
    for (n = 256; n <= 4096; n *= 2) for (i = 1; i <= 5; i++) { t = pk[i] * ef[i] * n / (n + 512)
      printf "cuda,square,%d^3,%s,x,f32,x,cublas,%d,%d,%d,1,0,0,1,3,10,1,1,1,1,1,%.6g,%.6g,%s,%.4g,0,1,0,1\n", n, v[i], n, n, n, t, t, pk[i], 100 * t / pk[i] }
    for (n = 4088; n <= 4104; n++) for (i = 1; i <= 5; i++) { t = pk[i] * ef[i] * (n % 8 == 0 ? 0.9 : 0.8)
      printf "cuda,align,%d^3,%s,x,f32,x,cublas,%d,%d,%d,1,0,0,1,3,10,1,1,1,1,1,%.6g,%.6g,%s,%.4g,0,1,0,1\n", n, v[i], n, n, n, t, t, pk[i], 100 * t / pk[i] } }'
} >"$gpu/gemm.csv"
{
  echo "$dev"
  echo "device,method,variant,input,accumulate,out_dtype,data,m,n,k,rel_err,rel_err_accumulation,implementation"
  awk 'BEGIN { split("fp32 tf32 fp16 fp16-acc16 bf16 fp8", v, " "); split("1e-7 3e-4 3e-4 1e-3 2e-3 3e-2", e, " "); split("0.5 0 0 1 0 0", s, " ")
    for (i = 1; i <= 6; i++) for (k = 64; k <= 65536; k *= 4) for (d = 1; d <= 2; d++) for (m = 1; m <= 2; m++)
      printf "cuda,%s,%s,x,%s,x,%s,16,16,%d,%.4g,0,synthetic\n", m == 1 ? "simulated" : "cublas", v[i], v[i] ~ /acc16/ ? "f16" : "f32", d == 1 ? "signed" : "positive", k, e[i] * (k / 64) ^ s[i] }'
} >"$gpu/gemm_accuracy.csv"
{
  echo "$dev"
  echo "device,kernel,dtype,array_bytes,elements,arrays,moved_bytes,warmups,samples,inner,time_ms_min,time_ms_median,time_ms_max,gb_per_s,gb_per_s_best,gelem_per_s,ref_kernel,ref_gb_per_s,ref_pct,datasheet_gb_per_s,datasheet_pct,attempts"
  awk 'BEGIN { split("copy scale add triad dot", k, " "); split("fp32 fp16 bf16", t, " "); split("4 2 2", w, " ")
    for (b = 1048576; b <= 536870912; b *= 4) { ref = 4000 - 1000 * (b < 67108864); printf "cuda,memcpy-d2d,bytes,%d,%d,2,1,3,10,1,1,1,1,%g,%g,,,,,4800,,1\n", b, b, ref, ref
      for (i = 1; i <= 5; i++) for (j = 1; j <= 3; j++) { g = ref * 0.9; printf "cuda,%s,%s,%d,%d,2,1,3,10,1,1,1,1,%g,%g,%g,memcpy-d2d,%g,%.1f,4800,%.1f,1\n", k[i], t[j], b, b / w[j], g, g, g / w[j] / 3, ref, 90, 100 * g / 4800 } } }'
} >"$gpu/bandwidth.csv"
{
  echo "$dev"
  echo "device,direction,memory,bytes,gb_per_s"
  for b in 1048576 16777216 268435456; do
    for dm in "h2d pinned 50" "h2d pageable 20" "d2h pinned 52" "d2h pageable 18"; do set -- $dm; echo "cuda,$1,$2,$b,$3"; done
  done
} >"$gpu/bandwidth_host.csv"
# the training runs: the CPU's tiny group renamed to the gpt2 preset of a GPU run
awk -F, -v OFS=, -v dev="$dev" '/^# device: / { print dev; next } /^#/ { print; next }
  !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
  $c["name"] == "tiny" && $c["device"] == "cpu" { $c["name"] = "gpt2"; $c["device"] = "cuda"; print }' \
  "$cpu/train_summary.csv" >"$gpu/train_summary.csv"
for f in "$cpu"/train_tiny_*_steps.csv; do
  sed "s/^# device: .*/$dev/" "$f" >"$gpu/$(basename "${f/train_tiny_/train_gpt2_}")"
done
if ! "$root/scripts/plots.sh" --strict "$gpu" >"$work/gpu.log" 2>&1; then
  cat "$work/gpu.log" >&2
  fail "scripts/plots.sh --strict on the synthetic GPU folder"
fi
for c in gemm-tflops gemm-speedup gemm-align gemm-accuracy bandwidth bandwidth-gelems bandwidth-host train-scale train-perf; do
  [ -s "$gpu/$c.png" ] || fail "GPU folder: $c.png not drawn"
done
grep -q "Tensor cores want 16-byte aligned rows" "$gpu/REPORT.md" || fail "GPU report: no tensor-core caption for the alignment study"
grep -q "the GPU fills up" "$gpu/REPORT.md" || fail "GPU report: no GPU caption for gemm-tflops"
grep -q '"cublas": the GPU' "$gpu/REPORT.md" || fail "GPU report: the accuracy table does not explain its cublas rows"

# ------------------------------------------------------------ 3. sentences against their thresholds
# FILE AWK-CONDITION COLUMN VALUE: set COLUMN (by name) of the rows where the condition holds
setcol() {
  awk -F, -v OFS=, -v col="$3" -v val="$4" '/^#/ { print; next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
    '"$2"' { $c[col] = val } { print }' "$1" >"$1.new" && mv "$1.new" "$1"
}
mask() { sed -E 's/[-+]?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?/N/g'; }
# NAME PATTERN: the report of folders NAME-lo and NAME-hi (already prepared), the lines matching
# PATTERN, numbers masked: they must exist and differ
crosses() {
  local name=$1 pattern=$2 a b
  for side in lo hi; do
    touch "$work/$name-$side"/{gemm-tflops,gemm-speedup,gemm-align,gemm-accuracy,bandwidth,bandwidth-gelems,footprint,peers,train-underflow,train-perf,train-dp}.png
    "$root/plots/report.sh" "$work/$name-$side" 2>/dev/null
  done
  a=$(grep -E "$pattern" "$work/$name-lo/REPORT.md" | mask || true)
  b=$(grep -E "$pattern" "$work/$name-hi/REPORT.md" | mask || true)
  if [ -z "$a" ] || [ -z "$b" ]; then fail "$name: no sentence matching /$pattern/ on one side"
  elif [ "$a" = "$b" ]; then fail "$name: the sentence reads the same on both sides of its threshold: $a"
  else echo "ok: $name"; fi
}
prepare() { # NAME FILE...: two copies of the CPU folder's FILEs (and peers/ if asked)
  local name=$1; shift
  for side in lo hi; do
    mkdir -p "$work/$name-$side"
    for f in "$@"; do cp -r "$cpu/$f" "$work/$name-$side/"; done
  done
}

# NAME SIDE PATTERN: the report of folder NAME-SIDE has a line matching PATTERN (has_not: none)
has() { grep -qE "$3" "$work/$1-$2/REPORT.md" || fail "$1-$2: no line matching /$3/ in its report"; }
has_not() { ! grep -qE "$3" "$work/$1-$2/REPORT.md" || fail "$1-$2: a line matches /$3/ in its report: $(grep -m1 -E "$3" "$work/$1-$2/REPORT.md")"; }

# the bandwidth reference past the caches: every kernel within 110% of it, or one beyond (the reference is
# wrong), by the fastest samples; beyond by the medians only, the reference's runs were disturbed
prepare bw-ref bandwidth.csv
cp -r "$work/bw-ref-hi" "$work/bw-ref-disturbed"
for side in lo hi disturbed; do setcol "$work/bw-ref-$side/bandwidth.csv" '$c["dtype"] == "bytes"' gb_per_s_best 100; done
setcol "$work/bw-ref-lo/bandwidth.csv" '$c["dtype"] != "bytes"' ref_pct 105
setcol "$work/bw-ref-lo/bandwidth.csv" '$c["dtype"] != "bytes"' gb_per_s_best 105
setcol "$work/bw-ref-hi/bandwidth.csv" '$c["dtype"] != "bytes"' ref_pct 115
setcol "$work/bw-ref-hi/bandwidth.csv" '$c["dtype"] != "bytes"' gb_per_s_best 115
setcol "$work/bw-ref-disturbed/bandwidth.csv" '$c["dtype"] != "bytes"' ref_pct 115
setcol "$work/bw-ref-disturbed/bandwidth.csv" '$c["dtype"] != "bytes"' gb_per_s_best 105
crosses bw-ref 'copy reference \(the highest|copy reference is wrong'
has_not bw-ref lo 'copy reference is wrong'
has bw-ref hi 'The copy reference is wrong here.*115% of the fastest copy'
"$root/plots/report.sh" "$work/bw-ref-disturbed" 2>/dev/null
has bw-ref disturbed 'by their medians .* but none by the fastest samples: other work slowed'
has_not bw-ref disturbed 'copy reference is wrong'

# triad's elements per second against the 2x line, from above: 1.95x is memory-bound, 2.3x means fp32 was disturbed
prepare bw-2x bandwidth.csv
for side in lo hi; do setcol "$work/bw-2x-$side/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] == "fp32"' gelem_per_s 10; done
setcol "$work/bw-2x-lo/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] == "fp16"' gelem_per_s 19.5
setcol "$work/bw-2x-hi/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] == "fp16"' gelem_per_s 23
crosses bw-2x 'dashed line is exactly twice'
has bw-2x lo 'fp16 1\.95x: at the 2x line, memory-bound'
has_not bw-2x lo 'fp16 [0-9.]+x: above 2.1x, fp32 disturbed'
has bw-2x hi 'fp16 2\.30x: above 2.1x, fp32 disturbed: rerun'

# ... and from below: at 1.5x with the fastest samples at 1.5x the conversions limit fp16; at 1.95x its run was disturbed
prepare bw-low bandwidth.csv
for side in lo hi; do
  setcol "$work/bw-low-$side/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] == "fp32"' gelem_per_s 10
  setcol "$work/bw-low-$side/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] == "fp32"' gb_per_s_best 40
  setcol "$work/bw-low-$side/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] == "fp16"' gelem_per_s 15
done
setcol "$work/bw-low-lo/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] == "fp16"' gb_per_s_best 30
setcol "$work/bw-low-hi/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] == "fp16"' gb_per_s_best 39
crosses bw-low 'dashed line is exactly twice'
has bw-low lo 'fp16 1\.50x: below the 2x line, so not memory-bound: converting'
has bw-low hi 'fp16 1\.50x: below the 2x line, but 1\.95x by the fastest samples: its run was disturbed'

# the same bytes per second in cache, or not: each size range said from its own numbers
prepare bw-cache bandwidth.csv
for side in lo hi; do
  setcol "$work/bw-cache-$side/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] == "fp32"' gelem_per_s 10
  setcol "$work/bw-cache-$side/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] != "fp32"' gelem_per_s 19.5
done
setcol "$work/bw-cache-hi/bandwidth.csv" '$c["kernel"] == "triad" && $c["dtype"] == "bf16" && $c["array_bytes"] <= 8388608' gelem_per_s 12
crosses bw-cache 'dashed line is exactly twice'
has bw-cache lo 'In cache \(the three arrays within the last-level cache\): fp16 1\.95x to 1\.95x, bf16 1\.95x to 1\.95x: the same bytes per second there too'
has bw-cache hi 'bf16 1\.20x to 1\.20x: not the same bytes per second there'

# the units table: avx512_fp16 open to the kernels but used by nothing that ran, or by the fp16 products
prepare units gemm.csv bandwidth.csv
for side in lo hi; do
  for f in gemm.csv bandwidth.csv; do
    sed -i 's/avx512_fp16 no/avx512_fp16 yes/; s/^# cpu-units: .*/# cpu-units: f16c, avx512_bf16, avx512_fp16/' "$work/units-$side/$f"
  done
done
setcol "$work/units-hi/gemm.csv" '$c["variant"] == "fp16"' implementation 'onednn 3.5 brg:avx512_core_fp16'
crosses units '^\| avx512_fp16 \|'
has_not units lo '^\| avx512_fp16 \| \*\*in use'
has units lo '^\| avx512_fp16 \| present, not used by these runs'
has units hi '^\| avx512_fp16 \| \*\*in use\*\*: fp16 products \(onednn 3.5 brg:avx512_core_fp16\)'
# and the speed-up caption names units that multiply, never F16C
crosses units 'multiplies in it'
has units lo 'fp16 on no unit of its own: widened to fp32 for sgemm; F16C only converts'
has units hi 'fp16 on AVX512-FP16'
has_not units lo 'here: f16c'

# the expectations: bounds on both sides and the reason of each, from the file's own columns
prepare expect bandwidth.csv
{ grep '^# ' "$cpu/bandwidth.csv"
  echo "expectation,device,value,low,high,status,detail,reason"
  echo "fp16 triad Gelem/s 1.8x to 2.1x fp32's at 512 MiB,cpu,1.9500,1.8,2.1,PASS,19.5 vs 10 Gelem/s,half the width streams twice the elements"
  echo "every kernel past the caches at most 110% of the copy reference,cpu,1.0500,,1.1,PASS,the highest,the reference is the fastest copy"
} >"$work/expect-lo/bandwidth_expectations.csv"
sed 's/,1.9500,1.8,2.1,PASS,19.5/,2.3000,1.8,2.1,MISS,23/' "$work/expect-lo/bandwidth_expectations.csv" >"$work/expect-hi/bandwidth_expectations.csv"
crosses expect '^\| fp16 triad Gelem/s'
has expect lo '^\| fp16 triad Gelem/s .* \| 1\.9500 \| 1\.8 <= ratio <= 2\.1 \| \*\*PASS\*\* \| .* \| half the width streams twice the elements \|'
has expect hi '^\| fp16 triad Gelem/s .* \| 2\.3000 \| 1\.8 <= ratio <= 2\.1 \| \*\*MISS\*\*'
has expect lo '^\| every kernel past the caches .* \| ratio <= 1\.1 \|'
has_not expect lo '[Tt]arget'

# the peers' expectations: both bounds and the reason, a MISS past the lower one
prepare peer-exp peer_step_times.csv
{ grep '^# ' "$cpu/peer_step_times.csv"
  echo "expectation,device,value,low,high,status,detail,reason"
  echo "amp-bf16 step at most 0.6x halflab's fp32 step (passive),cpu,0.5500,0.5,0.6,PASS,55 ms / 100 ms,bf16 dot products at twice fp32's rate"
} >"$work/peer-exp-lo/peer_expectations.csv"
sed 's/,0.5500,0.5,0.6,PASS,55/,0.4500,0.5,0.6,MISS,45/' "$work/peer-exp-lo/peer_expectations.csv" >"$work/peer-exp-hi/peer_expectations.csv"
crosses peer-exp "^\| amp-bf16 step at most"
has peer-exp lo "^\| amp-bf16 step at most 0.6x .* \| 0\.5500 \| 0\.5 <= ratio <= 0\.6 \| \*\*PASS\*\* \| .* \| bf16 dot products at twice fp32's rate \|"
has peer-exp hi "\| 0\.4500 \| 0\.5 <= ratio <= 0\.6 \| \*\*MISS\*\*"

# the cross-machine captions follow the one line-style convention (plots/report-lib.sh line_convention)
mkdir -p "$work/machines/one"
cp "$cpu/bandwidth.csv" "$work/machines/one/"
touch "$work/machines/compare-bandwidth.png" "$work/machines/compare-gemm.png"
"$root/plots/report.sh" "$work/machines/one" 2>/dev/null
note=$(dir=/nonexistent; . "$root/plots/report-lib.sh"; line_convention)
[ "$(grep -cF "Line style: $note" "$work/machines/one/REPORT.md")" = 2 ] ||
  fail "the compare-* captions do not state the line-style convention ($note)"
grep -qE 'solid (fp16|bf16)|dashed fp32' "$work/machines/one/REPORT.md" && fail "a caption states a line style of its own"

# bf16's speed-up at the largest size: a gain or a loss
prepare speedup gemm.csv
setcol "$work/speedup-lo/gemm.csv" '$c["variant"] == "bf16"' tflop_per_s 0.0001
setcol "$work/speedup-hi/gemm.csv" '$c["variant"] == "bf16"' tflop_per_s 1000
crosses speedup 'bf16 runs at'

# fp32 accumulation on positive data: the error falls, or stays flat
prepare accuracy gemm_accuracy.csv
setcol "$work/accuracy-hi/gemm_accuracy.csv" '$c["variant"] == "fp32" && $c["data"] == "positive"' rel_err 1e-6
crosses accuracy 'From the smallest to the largest k'

# the footprint's peak above or below the sum of its parts
prepare footprint footprint_params.csv footprint_training.csv
setcol "$work/footprint-lo/footprint_training.csv" '$c["measured"] == 0' peak_bytes 1000
crosses footprint 'sum of (its|their) parts'

# fp16-pure in the absorb run: most updates lost, or most applied
prepare absorb train_summary.csv
setcol "$work/absorb-lo/train_summary.csv" '$c["name"] == "absorb" && $c["mode"] == "fp16-pure"' absorbed_frac 0.4
setcol "$work/absorb-hi/train_summary.csv" '$c["name"] == "absorb" && $c["mode"] == "fp16-pure"' absorbed_frac 0.6
crosses absorb '^applied: '

# fp16-noscale in the underflow run: the best eval loss of its group, or not
prepare underflow train_summary.csv
setcol "$work/underflow-lo/train_summary.csv" '$c["name"] == "underflow" && $c["mode"] == "fp16-noscale"' eval_loss 0.5
setcol "$work/underflow-hi/train_summary.csv" '$c["name"] == "underflow" && $c["mode"] == "fp16-noscale"' eval_loss 5
crosses underflow "fp16-noscale's eval loss"

# the tiny step's speed-up over fp32 in words: amp-fp16 slower or faster than fp32
prepare tiny-speed train_summary.csv
setcol "$work/tiny-speed-lo/train_summary.csv" '$c["name"] == "tiny" && $c["mode"] == "amp-fp16"' step_time_ms_median 1000
setcol "$work/tiny-speed-hi/train_summary.csv" '$c["name"] == "tiny" && $c["mode"] == "amp-fp16"' step_time_ms_median 0.01
crosses tiny-speed 'x for amp-fp16 \('

# amp-fp16's peak memory below fp32's, or not
prepare tiny-memory train_summary.csv
setcol "$work/tiny-memory-hi/train_summary.csv" '$c["name"] == "tiny" && $c["mode"] == "amp-fp16"' mem_peak_bytes 1e12
crosses tiny-memory 'saves no arithmetic'

# fp16-noscale's tiny eval loss against amp-fp16's (1.01): below by more than 2%, within 2%, above by more
prepare noscale-below train_summary.csv
setcol "$work/noscale-below-lo/train_summary.csv" '$c["name"] == "tiny" && $c["mode"] == "fp16-noscale"' eval_loss 0.9
setcol "$work/noscale-below-hi/train_summary.csv" '$c["name"] == "tiny" && $c["mode"] == "fp16-noscale"' eval_loss 1.0101
crosses noscale-below '^- \*\*fp16-noscale '
prepare noscale-above train_summary.csv
setcol "$work/noscale-above-lo/train_summary.csv" '$c["name"] == "tiny" && $c["mode"] == "fp16-noscale"' eval_loss 1.0101
setcol "$work/noscale-above-hi/train_summary.csv" '$c["name"] == "tiny" && $c["mode"] == "fp16-noscale"' eval_loss 1.2
crosses noscale-above '^- \*\*fp16-noscale '

# fp16-noscale the best of the underflow group: its check passing on the lost elements, or missing
prepare underflow-pass train_summary.csv
for side in lo hi; do setcol "$work/underflow-pass-$side/train_summary.csv" '$c["name"] == "underflow" && $c["mode"] == "fp16-noscale"' eval_loss 0.5; done
setcol "$work/underflow-pass-lo/train_summary.csv" '$c["name"] == "underflow" && $c["mode"] == "fp16-noscale"' grad_zero_frac 0.01
setcol "$work/underflow-pass-hi/train_summary.csv" '$c["name"] == "underflow" && $c["mode"] == "fp16-noscale"' grad_zero_frac 0.5
crosses underflow-pass '^  this run, and '

# the demonstrations' loss cost against their lost fractions: far less, or as much
prepare demo-cost train_summary.csv
setcol "$work/demo-cost-hi/train_summary.csv" '$c["name"] == "absorb" && $c["mode"] == "fp16-pure"' eval_loss 20
crosses demo-cost '^the loss suffered'

# the tiny run's absorbed share rising under the cosine schedule (the learning rate explains it), or flat
prepare cosine-note train_summary.csv train_tiny_fp32_steps.csv
setcol "$work/cosine-note-lo/train_tiny_fp32_steps.csv" '$c["fp16_absorbed_frac"] != ""' fp16_absorbed_frac 0.5
crosses cosine-note 'In the tiny run the share'

# amp-fp16's speed-up over fp32 on a GPU's gpt2 preset: under 2x, within [2x, the fp16/fp32 GEMM peak
# ratio], above it (the fp32 run disturbed); the gpt2 rows are the tiny ones renamed
for name in gpt2-speed gpt2-peak; do
  for side in lo hi; do
    mkdir -p "$work/$name-$side"
    awk -F, -v OFS=, '/^#/ { print; next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
      $c["name"] == "tiny" { $c["name"] = "gpt2"; $c["device"] = "cuda"; print }' "$cpu/train_summary.csv" >"$work/$name-$side/train_summary.csv"
    printf '%s\n' "$dev" "device,variant,peak_tflop_per_s" "cuda,fp32,67" "cuda,fp16,989" >"$work/$name-$side/gemm.csv"
  done
done
speedup_at() { # FOLDER SPEEDUP: amp-fp16's gpt2 step at fp32's over SPEEDUP
  local t32
  t32=$(awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["name"] == "gpt2" && $c["mode"] == "fp32" { print $c["step_time_ms_median"] }' "$1/train_summary.csv")
  setcol "$1/train_summary.csv" '$c["name"] == "gpt2" && $c["mode"] == "amp-fp16"' step_time_ms_median "$(awk -v t="$t32" -v s="$2" 'BEGIN { print t / s }')"
}
speedup_at "$work/gpt2-speed-lo" 1.5
speedup_at "$work/gpt2-speed-hi" 3
speedup_at "$work/gpt2-peak-lo" 3
speedup_at "$work/gpt2-peak-hi" 30
crosses gpt2-speed "speed-up over fp32 on the gpt2 preset"
crosses gpt2-peak "speed-up over fp32 on the gpt2 preset|Above the peaks"

# two ranks against one process: faster or slower
prepare dp-speed train_summary.csv
setcol "$work/dp-speed-lo/train_summary.csv" '$c["name"] == "dp-small-2x1-fp32"' step_time_ms_median 100000
setcol "$work/dp-speed-hi/train_summary.csv" '$c["name"] == "dp-small-2x1-fp32"' step_time_ms_median 1
crosses dp-speed 'Two ranks of one thread'

# the data-parallel threads sharing the cores, or each on its own
prepare dp-cores train_summary.csv
sed -i 's/^\(# device: .*\) [0-9][0-9]* logical cores/\1 64 logical cores/' "$work/dp-cores-hi/train_summary.csv"
crosses dp-cores '^On this machine'

# the fp16 wire's own overflows: none beyond the fp32 wire's, or some
prepare dp-skips train_summary.csv
setcol "$work/dp-skips-lo/train_summary.csv" '$c["name"] ~ /^dp-wire-/' skipped 0
setcol "$work/dp-skips-hi/train_summary.csv" '$c["name"] ~ /^dp-wire-/' skipped 0
setcol "$work/dp-skips-hi/train_summary.csv" '$c["name"] == "dp-wire-fp16"' skipped 3
crosses dp-skips '^The fp16 wire skipped'

# the peers' loss drift: within 16 unit roundoffs, or beyond
prepare peers peer_step_times.csv peers
for f in "$work"/peers-hi/peers/peer_*_fp32_steps.csv; do setcol "$f" '1' loss 9.5; done
crosses peers 'The per-step losses of this comparison'

if [ $failures -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "charts and report: all checks passed"
