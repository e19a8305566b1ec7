#!/usr/bin/env bash
# plots/report.d/35-peers.sh RESULTS_DIR — the PyTorch-peer section of
# REPORT.md: halflab-train against the same GPT in PyTorch (bench/peers/),
# same weights, batches and thread count, from one run: step times per
# preset, mode (and OpenMP wait policy on the CPU), the ratios PyTorch /
# halflab (expected on the CPU in fp32: halflab at least as fast; GPU:
# amp-fp16 at least as fast as PyTorch AMP), each implementation's amp-bf16 /
# fp32 and amp-fp16 / fp32 (expected of halflab on a GPU: amp-fp16 at most
# half of fp32's step time), the CPU expectations with their bounds and
# reasons (peer_expectations.csv, or peer_targets.csv from before), the
# final losses side by side, and the chart. The heading is always printed;
# without peer_step_times.csv the section is one line saying why it was
# skipped (peer_skipped.csv's reason, written by bench/peers/compare_cpu.sh).
set -euo pipefail
dir=${1:?usage: plots/report.d/35-peers.sh RESULTS_DIR}

. "$(dirname "$0")/../report-lib.sh"

echo "## PyTorch peer (\`bench/peers/\`)"
echo
provenance peer_step_times.csv peer_expectations.csv peer_targets.csv
if ! have peer_step_times.csv; then
  reason=""
  have peer_skipped.csv && reason=$(table peer_skipped.csv '{ print $c["reason"]; exit }')
  echo "skipped: ${reason:-PyTorch not installed (no peer measurement in this folder; scripts/setup.sh --peers installs it)}"
  echo
  exit 0
fi
f=peer_step_times.csv
# A CSV written before the preset column (the tiny preset was the only one then) reads as preset "-".
preset='(("preset" in c) ? $c["preset"] : "-")'
# One written before the attention column timed the peer's exact form, its only one then.
attention='(("attention" in c) ? $c["attention"] : "exact")'

if have peer_skipped.csv; then
  echo "_The latest comparison run was skipped ($(table peer_skipped.csv '{ print $c["reason"]; exit }'), $(meta peer_skipped.csv date)):"
  echo "the tables below are the earlier run's, $(meta $f date)._"
  echo
fi
echo "The same GPT written in PyTorch ($(meta $f peer | sed 's/ peer of.*//')), started from halflab-train's initial"
echo "weights (\`--save-init\`) on its exact batches (\`--export-batches\`), with the same optimizer, schedule and thread"
echo "count; each side's step time is taken the same way (batch upload to the synchronised end of the update) and"
echo "summarised by the same script from its own per-step CSV. Run: $(meta $f note)."
echo "Devices: $(meta $f device). Load average (1, 5, 15 min) $(meta $f load)."
echo
timed_forms=$(table $f '$c["impl"] == "pytorch" { print '"$attention"' }' | sort -u | paste -sd/ -)
if [ -n "$timed_forms" ]; then
  echo "PyTorch's attention as timed: **${timed_forms}** (column attention). \`sdpa\` is"
  echo "\`F.scaled_dot_product_attention(is_causal=True)\`, the form a user writes, on a fused kernel of torch's choice;"
  echo "\`exact\` is the written-out form halflab computes (scores, explicit causal mask, fp32 softmax), which the parity"
  echo "test uses."
  echo
fi
built_with=""
for key in halflab_blas torch_blas torch_onednn torch_cpu_capability cpu-features; do
  v=$(meta $f "$key")
  if [ -n "$v" ]; then built_with+="- \`$key\`: $v"$'\n'; fi
done
if [ -n "$built_with" ]; then printf '%s\n' "$built_with"; fi
echo "| implementation | attention | device | preset | mode | OMP_WAIT_POLICY | threads | tokens/step | steps (timed) | min ms | median ms | max ms | tokens/s | final loss | eval loss |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
table $f '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s (%s) | %.2f | **%.2f** | %.2f | %.0f | %s | %s |\n", $c["impl"],
         '"$attention"', $c["device"], '"$preset"', $c["mode"], $c["omp_wait_policy"], $c["threads"], (("tokens_per_step" in c) ? $c["tokens_per_step"] : "-"),
         $c["steps"], $c["timed_steps"], $c["step_time_ms_min"], $c["step_time_ms_median"], $c["step_time_ms_max"], $c["tokens_per_s"],
         ($c["final_loss"] == "" ? "-" : $c["final_loss"]), ($c["eval_loss"] == "" ? "-" : $c["eval_loss"]) }'
echo
echo "PyTorch / halflab median step time per mode (above 1: halflab faster):"
echo
echo "| device | preset | mode | OMP_WAIT_POLICY | PyTorch / halflab | expected |"
echo "|---|---|---|---|---|---|"
table $f '{ k = $c["device"] SUBSEP '"$preset"' SUBSEP $c["mode"] SUBSEP $c["omp_wait_policy"]; m[k, $c["impl"]] = $c["step_time_ms_median"]
         if (!(k in seen)) { seen[k] = 1; key[++n] = k } }
       END { for (i = 1; i <= n; i++) { k = key[i]; if (!((k, "halflab") in m) || !((k, "pytorch") in m)) continue
               split(k, p, SUBSEP); r = m[k, "pytorch"] / m[k, "halflab"]
               goal = "-"
               if ((p[3] == "fp32" && p[1] == "cpu") || (p[3] == "amp-fp16" && p[1] == "cuda"))
                 goal = r >= 1 ? "halflab at least as fast: **met**" : "halflab at least as fast: **not met**"
               printf "| %s | %s | %s | %s | %.3f (%s) | %s |\n", p[1], p[2], p[3], p[4], r, (r >= 1 ? "halflab faster" : "halflab slower"), goal } }'
echo
echo "Each implementation's mixed-precision step against its own fp32 step (below 1: AMP is faster):"
echo
echo "| implementation | device | preset | OMP_WAIT_POLICY | amp-bf16 / fp32 | amp-fp16 / fp32 | expected |"
echo "|---|---|---|---|---|---|---|"
table $f '{ k = $c["impl"] SUBSEP $c["device"] SUBSEP '"$preset"' SUBSEP $c["omp_wait_policy"]; m[k, $c["mode"]] = $c["step_time_ms_median"]
         if (!(k in seen)) { seen[k] = 1; key[++n] = k } }
       function ratio(k, mode) { return ((k, mode) in m && (k, "fp32") in m) ? sprintf("%.3f", m[k, mode] / m[k, "fp32"]) : "-" }
       END { for (i = 1; i <= n; i++) { k = key[i]; if (!((k, "fp32") in m)) continue
               split(k, p, SUBSEP); goal = "-"
               if (p[1] == "halflab" && p[2] == "cuda" && (k, "amp-fp16") in m)
                 goal = m[k, "amp-fp16"] / m[k, "fp32"] <= 0.5 ? "amp-fp16 <= 0.5: **met**" : "amp-fp16 <= 0.5: **not met**"
               printf "| %s | %s | %s | %s | %s | %s | %s |\n", p[1], p[2], p[3], p[4], ratio(k, "amp-bf16"), ratio(k, "amp-fp16"), goal } }'
echo
# the expectations, or the same table under its earlier name (peer_targets.csv: one threshold, no reasons)
exp=""
if have peer_expectations.csv; then exp=peer_expectations.csv; elif have peer_targets.csv; then exp=peer_targets.csv; fi
if [ -n "$exp" ]; then
  echo "The CPU expectations, from the same runs (each figure the median of the rounds' medians; PASS when the ratio"
  echo "lies within its bounds; an expectation whose path did not run here is SKIP, with why):"
  echo
  echo "| expectation | ratio | passes when | status | detail | reason |"
  echo "|---|---|---|---|---|---|"
  table $exp '{ name = ("expectation" in c) ? $c["expectation"] : $c["target"]
    if ("low" in c) { lo = $c["low"]; hi = $c["high"]
      side = lo != "" && hi != "" ? lo " <= ratio <= " hi : lo != "" ? "ratio >= " lo : hi != "" ? "ratio <= " hi : "-" }
    else side = "ratio <= " $c["threshold"]
    printf "| %s | %s | %s | **%s** | %s | %s |\n", name, ($c["value"] == "" ? "-" : $c["value"]), side, $c["status"], $c["detail"],
      (("reason" in c) ? $c["reason"] : "-") }'
  echo
  if [ "$exp" = peer_targets.csv ]; then
    echo "(\`peer_targets.csv\` was written before expectations carried lower bounds and reasons.)"
    echo
  fi
fi
echo "On the CPU, \`default\` is libgomp's own wait policy (idle workers spin for a while before sleeping) and"
echo "\`passive\` puts them to sleep at once: spinning wins on an idle machine and can lose many times over when other"
echo "work competes for the cores (halflab-train and the peer both leave the variable to the environment)."
# PyTorch's CPU amp-fp16 many times its fp32: say why, with the CPU's fp16 features
slow_fp16=$(table $f '$c["impl"] == "pytorch" && $c["device"] == "cpu" { m[$c["mode"], $c["omp_wait_policy"]] = $c["step_time_ms_median"] }
       END { for (k in m) { split(k, p, SUBSEP); if (p[1] == "amp-fp16" && (("fp32", p[2]) in m) && m[k] > 3 * m["fp32", p[2]])
               { printf "%.0f", m[k] / m["fp32", p[2]]; exit } } }')
if [ -n "$slow_fp16" ]; then
  fp16_units=$(meta $f cpu-features | grep -o 'avx512_fp16 [a-z]*\|amx_fp16 [a-z]*' | paste -sd, - | sed 's/,/, /')
  echo "PyTorch's amp-fp16 step is ${slow_fp16}x its own fp32 step here${fp16_units:+ (this CPU: $fp16_units)}: its CPU fp16"
  echo "products take a slow path, where halflab widens fp16 (and bf16) to fp32 around OpenBLAS's sgemm."
  if meta $f note | grep "PyTorch amp-fp16:" >/dev/null; then
    echo "That is why PyTorch's amp-fp16 run is shorter than the others (the run note above says how)."
  fi
fi
echo "The parity of the two implementations (first-step loss and every gradient, 30 steps of losses in fp32, amp-bf16"
echo "and amp-fp16, the loss scale and skipped steps identical) is checked by the e2e test \`peers-parity\`"
echo "(docs/peers.md)."
# how far the per-step losses of this run drift apart, against the unit roundoff of each mode's narrowest type
drift=""
for m in fp32 amp-bf16 amp-fp16; do
  for h in "$dir"/peers/train_peers-*_"${m}"_steps.csv; do
    [ -f "$h" ] || continue
    r=${h##*/train_}; r=${r%_"${m}"_steps.csv}
    p=$dir/peers/peer_${r}_${m}_steps.csv
    [ -f "$p" ] || continue
    case $m in fp32) u=24 ;; amp-bf16) u=8 ;; amp-fp16) u=11 ;; esac
    drift+=$(awk -F, -v m="$m" -v u="$u" "$AS_WRITTEN_AWK"'FNR == 1 { f++ } /^#/ { next } !hdr[f]++ { for (j = 1; j <= NF; j++) c[f, $j] = j; next }
      f == 1 { l[$c[1, "step"]] = $c[1, "loss"]; next }
      ($c[2, "step"] in l) { d = l[$c[2, "step"]] - $c[2, "loss"]; if (d < 0) d = -d; d /= l[$c[2, "step"]]; if (d > mx) { mx = d; at = $c[2, "step"] } n++ }
      END { if (!n) exit; ur = 2 ^ -u; printf "%s%s over %d steps: largest %.2g (step %d), %.3g times fp32'"'"'s unit roundoff 2^-24%s (%s)", sep, m, n, mx, at, mx / 2 ^ -24, u == 24 ? "" : sprintf(" and %.2g times 2^-%d, its narrow type'"'"'s", mx / ur, u),
              mx <= 16 * ur ? "within 16: rounding differences" : "beyond 16: more than the rounding of a few operations; the two summation orders compound over the steps" }' sep="${drift:+; }" "$h" "$p")
    break
  done
done
if [ -n "$drift" ]; then
  echo "The per-step losses of this comparison, relative difference halflab against PyTorch: $drift."
fi
echo
chart peers "halflab vs PyTorch" \
  "Left: median step time per mode, halflab (dark) beside PyTorch (pale); whiskers: fastest to slowest timed step; above each pair halflab's speed-up over PyTorch (PyTorch's step time / halflab's, above 1: halflab faster). Middle: the training losses of both, overlaid (halflab's points filled, PyTorch's open; colour the mode's precision family; $(line_convention)). Right: their relative difference per step, against fp32's, fp16's and bf16's unit roundoff. Run: $(meta $f note). Devices: $(meta $f device). Load average $(meta $f load)."

