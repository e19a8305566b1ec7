#!/usr/bin/env bash
# plots/report.d/35-peers.sh RESULTS_DIR — the PyTorch-peer section of
# REPORT.md: halflab-train against the same GPT in PyTorch (bench/peers/),
# same weights, batches and thread count, from one run: step times per mode
# (and OpenMP wait policy on the CPU), the ratios the goals are about (CPU
# fp32: halflab at least as fast; GPU: amp-fp16 at most half of fp32's step
# time, and at least as fast as PyTorch AMP), the final losses side by side,
# and the chart. Prints nothing when the folder holds no peer_step_times.csv.
set -euo pipefail
dir=${1:?usage: plots/report.d/35-peers.sh RESULTS_DIR}
f=$dir/peer_step_times.csv
[ -f "$f" ] || exit 0

. "$(dirname "$0")/../report-lib.sh"

echo "## PyTorch peer (\`bench/peers/\`)"
echo
echo "The same GPT written in PyTorch ($(meta peer_step_times.csv peer | sed 's/ peer of.*//')), started from halflab-train's initial"
echo "weights (\`--save-init\`) on its exact batches (\`--export-batches\`), with the same optimizer, schedule and thread"
echo "count; each side's step time is taken the same way (batch upload to the synchronised end of the update) and"
echo "summarised by the same script from its own per-step CSV. Run: $(meta peer_step_times.csv note)."
echo "Devices: $(meta peer_step_times.csv device). Load average (1, 5, 15 min) $(meta peer_step_times.csv load)."
echo
echo "| implementation | device | mode | OMP_WAIT_POLICY | threads | min ms | median ms | max ms | tokens/s | final loss | eval loss |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
table peer_step_times.csv '{ printf "| %s | %s | %s | %s | %s | %.2f | **%.2f** | %.2f | %.0f | %s | %s |\n", $c["impl"], $c["device"], $c["mode"],
         $c["omp_wait_policy"], $c["threads"], $c["step_ms_min"], $c["step_ms_median"], $c["step_ms_max"],
         $c["tokens_per_s"], $c["final_loss"], $c["eval_loss"] }'
echo
echo "| device | mode | OMP_WAIT_POLICY | PyTorch / halflab median step time | goal |"
echo "|---|---|---|---|---|"
table peer_step_times.csv '{ k = $c["device"] SUBSEP $c["mode"] SUBSEP $c["omp_wait_policy"]; m[k, $c["impl"]] = $c["step_ms_median"]
         if (!(k in seen)) { seen[k] = 1; key[++n] = k } }
       END { for (i = 1; i <= n; i++) { k = key[i]; if (!((k, "halflab") in m) || !((k, "pytorch") in m)) continue
               split(k, p, SUBSEP); r = m[k, "pytorch"] / m[k, "halflab"]
               goal = "-"
               if ((p[2] == "fp32" && p[1] == "cpu") || (p[2] == "amp-fp16" && p[1] == "cuda"))
                 goal = r >= 1 ? "at least as fast: **met**" : "at least as fast: **not met**"
               printf "| %s | %s | %s | %.3f (%s) | %s |\n", p[1], p[2], p[3], r, (r >= 1 ? "halflab faster" : "halflab slower"), goal } }'
echo
if table peer_step_times.csv '$c["device"] == "cuda" && $c["mode"] == "amp-fp16" { found = 1 } END { exit !found }'; then
  echo "| implementation (GPU) | amp-fp16 / fp32 median step time | goal (halflab) |"
  echo "|---|---|---|"
  table peer_step_times.csv '$c["device"] == "cuda" { m[$c["impl"], $c["mode"]] = $c["step_ms_median"] }
         END { for (i = 1; i <= 2; i++) { x = i == 1 ? "halflab" : "pytorch"
                 if (!((x, "fp32") in m) || !((x, "amp-fp16") in m)) continue
                 r = m[x, "amp-fp16"] / m[x, "fp32"]
                 printf "| %s | %.3f | %s |\n", x, r, (x == "halflab" ? (r <= 0.5 ? "<= 0.5: **met**" : "<= 0.5: **not met**") : "-") } }'
  echo
fi
echo "On the CPU, \`default\` is libgomp's own wait policy (idle workers spin for a while before sleeping) and"
echo "\`passive\` puts them to sleep at once: spinning wins on an idle machine and can lose many times over when other"
echo "work competes for the cores (halflab-train and the peer both leave the variable to the environment). The parity of"
echo "the two implementations (first-step loss, every gradient, ten steps of losses) is checked by the e2e test"
echo "\`peers-parity\` (docs/peers.md); the final losses above drift apart only by rounding."
echo
if [ -f "$dir/peers.png" ]; then
  echo "![halflab vs PyTorch](peers.png)"
  echo
  echo "Left: median step time per mode, halflab beside PyTorch (whiskers: fastest to slowest timed step; the ratio"
  echo "PyTorch / halflab above each pair). Middle: the training losses of both, overlaid. Right: their relative"
  echo "difference per step, against fp32's and bf16's unit roundoff."
  echo
else
  echo '_Chart peers.png not drawn here (gnuplot missing); `ninja -C build plots` draws it._'
  echo
fi
