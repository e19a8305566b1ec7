#!/usr/bin/env bash
# plots/report.d/32-train-dp.sh RESULTS_DIR — REPORT.md's data-parallel
# section: scripts/train-all.sh's dp-small runs (the small preset's step,
# one process of 2 threads against 2 MPI ranks of 1 thread, per mode and
# all-reduce wire type, buckets during the backward against one piece
# after it) and dp-wire runs (the tiny preset's accuracy per wire type),
# every number from train_summary.csv and the runs' logs, and the chart.
# Prints a "not measured" line when neither ran here.
set -euo pipefail
dir=${1:?usage: plots/report.d/32-train-dp.sh RESULTS_DIR}
in=$dir/train_summary.csv
[ -f "$in" ] || exit 0
. "$(dirname "$0")/../report-lib.sh"
q() { table train_summary.csv "$1"; }

echo "## Data-parallel training (\`mpirun -n N halflab-train\`)"
echo
provenance --rows '$c["name"] ~ /^dp-(small|wire|gpu)-/' train_summary.csv 'train_dp-wire-*_steps.csv'
if ! q '$c["name"] ~ /^dp-(small|wire|gpu)-/ { n++ } END { exit !n }'; then
  echo "not measured: no dp-small, dp-wire or dp-gpu runs in train_summary.csv (scripts/train-all.sh runs them"
  echo "where halflab-train is built with MPI, or with GPU ranks on a GPU, and mpirun is found)."
  echo
  exit 0
fi

echo "Each rank holds the whole model and trains on its half of every batch; the gradients' mean over the"
echo "ranks is all-reduced before the unscale, found_inf after it (docs/train.md, \"Data-parallel training\")."
echo "Measured on: $(run_meta device | cut -d, -f1-2), $(run_meta host | cut -d, -f1)."
echo

if q '$c["name"] ~ /^dp-small-/ { n++ } END { exit !n }'; then
  echo "### The small preset's step: one process of 2 threads against 2 ranks of 1 thread"
  echo
  echo "Batch 16 (2 ranks: 8 rows each), 2 warm-up steps, medians of the timed steps. \`whole\`: the gradients"
  echo "all-reduced in one piece after the backward (\`--bucket-mb 0\`); \`buckets\`: in buckets of 25 MiB that a"
  echo "communication thread all-reduces while the backward runs (the default). \"In the collectives\" is the"
  echo "time inside the all-reduces; \"exposed\" the main thread's time in the all-reduce after the backward (the"
  echo "wait for the last buckets and writing the means back): the part the backward did not hide."
  echo
  echo "| mode | ranks x threads | all-reduce | wire | step (ms) | speed-up over one process | in the collectives (ms) | exposed (ms) | buckets | MiB sent per step |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  q '$c["name"] ~ /^dp-small-/ { r[$c["name"] " " $c["mode"]] = $0 }
     END {
       split("fp32 amp-bf16 amp-fp16", m, " ")
       split("dp-small-1x2 dp-small-2x1-whole dp-small-2x1-fp32 dp-small-2x1-bf16 dp-small-2x1-fp16", g, " ")
       split("1 x 2|2 x 1|2 x 1|2 x 1|2 x 1", rt, "|")
       split("none|whole|buckets|buckets|buckets", how, "|")
       for (i = 1; i <= 3; i++) {
         base = ""
         if ((g[1] " " m[i]) in r) { split(r[g[1] " " m[i]], b, ","); base = b[c["step_time_ms_median"]] }
         for (j = 1; j <= 5; j++) {
           k = g[j] " " m[i]
           if (!(k in r)) continue
           split(r[k], v, ",")
           t = v[c["step_time_ms_median"]]
           st = v[c["status"]] == "completed" ? "" : " (" v[c["status"]] ")"
           printf "| %s | %s | %s | %s | %.0f%s | %s | %s | %s | %s | %s |\n", m[i], rt[j], how[j], j == 1 ? "-" : v[c["allreduce_dtype"]], t, st, \
             (base != "" && j > 1 && t > 0) ? sprintf("%.2fx", base / t) : "-", \
             j == 1 ? "-" : sprintf("%.1f", v[c["allreduce_ms_median"]]), j == 1 ? "-" : sprintf("%.1f", v[c["allreduce_exposed_ms_median"]]), \
             j == 1 ? "-" : v[c["allreduce_buckets"]], j == 1 ? "-" : sprintf("%.1f", v[c["allreduce_bytes"]] / 1048576)
         }
       }
     }'
  echo
  # the headline: buckets against one piece, and 2 ranks against one process, per mode
  q '$c["name"] ~ /^dp-small-/ && $c["status"] == "completed" { r[$c["name"] " " $c["mode"]] = $0 }
     END {
       split("fp32 amp-bf16 amp-fp16", m, " ")
       for (i = 1; i <= 3; i++) {
         w = "dp-small-2x1-whole " m[i]; b = "dp-small-2x1-fp32 " m[i]; one = "dp-small-1x2 " m[i]
         if (!(w in r) || !(b in r)) continue
         split(r[w], x, ","); split(r[b], y, ",")
         s = s sprintf("%s%s: exposed %.1f ms in one piece, %.1f ms in buckets (step %.0f against %.0f ms)", s == "" ? "" : "; ", m[i], \
           x[c["allreduce_exposed_ms_median"]], y[c["allreduce_exposed_ms_median"]], y[c["step_time_ms_median"]], x[c["step_time_ms_median"]])
         # the speed-up over one process (its step over the step of the ranks), in words with a 2% band for as fast
         if (one in r) { split(r[one], z, ","); sp = z[c["step_time_ms_median"]] / y[c["step_time_ms_median"]]
           t = t sprintf("%s%s %.2fx (%s)", t == "" ? "" : ", ", m[i], sp, sp > 1.02 ? "the ranks faster" : sp < 0.98 ? "the ranks slower" : "as fast, within 2%") }
       }
       if (s != "") printf "**Buckets against one piece** (fp32 on the wire): %s.", s
       if (t != "") printf " **Two ranks of one thread against one process of two threads**, fp32 buckets: speed-up over one process (its step time / the ranks'"'"'; both use both cores) %s.", t
       print ""
     }'
  echo
  # what the 16-bit wires' bytes did: the bytes each rank sends and the time in the collectives, against the fp32 wire's
  q '$c["name"] ~ /^dp-small-2x1-(fp32|bf16|fp16)$/ && $c["status"] == "completed" {
       t = $c["allreduce_ms_median"] + 0; w = $c["allreduce_dtype"] == "fp32" ? 1 : 2
       if (!(w in lo) || t < lo[w]) lo[w] = t; if (!(w in hi) || t > hi[w]) hi[w] = t
       b = $c["allreduce_bytes"] + 0; if (!(w in blo) || b < blo[w]) blo[w] = b; if (!(w in bhi) || b > bhi[w]) bhi[w] = b }
     END { if ((1 in lo) && (2 in lo) && bhi[1] > 0)
       printf "**16-bit wires** send %s the bytes each rank sends on the fp32 wire; in the collectives they took %.1f to %.1f ms a step against fp32'"'"'s %.1f to %.1f ms (all modes).\n", \
         sprintf("%.2f", blo[2] / bhi[1]) == sprintf("%.2f", bhi[2] / blo[1]) ? sprintf("%.2fx", bhi[2] / bhi[1]) : sprintf("%.2fx to %.2fx", blo[2] / bhi[1], bhi[2] / blo[1]), lo[2], hi[2], lo[1], hi[1] }'
  echo
  # whether each rank's communication thread has a core of its own: the device line's logical cores
  # against the ranks' compute threads (ranks x threads) and their communication threads (one a rank)
  cores=$(meta train_summary.csv device | sed -n 's/.* \([0-9][0-9]*\) logical cores.*/\1/p')
  busy=$(q '$c["name"] == "dp-small-2x1-fp32" { print $c["ranks"] * $c["threads"] + $c["ranks"]; exit }')
  if [ -n "$cores" ] && [ -n "$busy" ] && [ "$cores" -lt "$busy" ]; then
    echo "On this machine the ranks' $busy threads (compute and communication) share $cores cores: the communication thread has no core of its own, and Open"
    echo "MPI's shared-memory collectives poll while they wait, so time in the collectives beside the backward"
    echo "also takes time from the backward; the exposed column is what the step pays at its end. Between"
  else
    echo "On this machine${cores:+ ($cores cores for ${busy:-all the} threads, compute and communication)} each rank's communication thread can run on a core of its own: time"
    echo "in the collectives beside the backward is hidden unless the backward ends first; the exposed column is"
    echo "what the step pays at its end. Between"
  fi
  echo "ranks in one machine the bytes are copies in memory, and a 16-bit wire adds a conversion to the wire"
  echo "type and back on each rank and sums in an MPI user operation (each addition in f32, rounded back)"
  echo "instead of MPI's own f32 sum; between machines, where the network is the bottleneck, halving the"
  echo "bytes is what a 16-bit wire is for."
  echo
fi

if q '$c["name"] ~ /^dp-wire-/ { n++ } END { exit !n }'; then
  echo "### What a 16-bit wire costs in accuracy: the tiny preset, amp-fp16, 2 ranks"
  echo
  echo "The same weights and batches, the gradients all-reduced in fp32, bf16 or fp16 (fp16 with the loss"
  echo "scale still applied, so that small gradients stay out of fp16's subnormals)."
  echo
  echo "| wire | steps | eval loss | vs fp32 wire | eval acc | skipped steps | final loss scale | largest per-step loss difference from the fp32 wire |"
  echo "|---|---|---|---|---|---|---|---|"
  base=$dir/train_dp-wire-fp32_amp-fp16_steps.csv
  for w in fp32 bf16 fp16; do
    row=$(q "\$c[\"name\"] == \"dp-wire-$w\" && \$c[\"mode\"] == \"amp-fp16\" { print \$c[\"steps_done\"] \",\" \$c[\"eval_loss\"] \",\" \$c[\"eval_acc\"] \",\" \$c[\"skipped\"] \",\" \$c[\"final_scale\"]; exit }")
    [ -n "$row" ] || continue
    ref=$(q '$c["name"] == "dp-wire-fp32" && $c["mode"] == "amp-fp16" { print $c["eval_loss"]; exit }')
    log=$dir/train_dp-wire-${w}_amp-fp16_steps.csv
    diff="-"
    if [ "$w" != fp32 ] && [ -f "$log" ] && [ -f "$base" ]; then
      diff=$(awk -F, "$AS_WRITTEN_AWK"'FNR == 1 { f++ } /^#/ { next } { if (!h[f]++) { for (i = 1; i <= NF; i++) c[f, $i] = i; next } }
        f == 1 { l[$c[1, "step"]] = $c[1, "loss"]; next }
        ($c[2, "step"] in l) { d = $c[2, "loss"] / l[$c[2, "step"]] - 1; if (d < 0) d = -d; if (d > worst) { worst = d; at = $c[2, "step"] } }
        END { printf "%.2g (step %d)", worst, at }' "$base" "$log")
    fi
    IFS=, read -r steps el ea skipped scale <<<"$row"
    printf '| %s | %s | %.4f | %s | %.2f%% | %s | %s | %s |\n' "$w" "$steps" "$el" \
      "$(awk -v a="$el" -v b="$ref" 'BEGIN { if (b == "" || a == "") print "-"; else printf "%+.3f%%", 100 * (a / b - 1) }')" \
      "$(calc "100 * $ea")" "$skipped" "$scale" "$diff"
  done
  echo
  # the fp16 wire's own overflows: the steps it skipped beyond the fp32 wire's
  steps() { if [ "$1" = 1 ]; then echo "1 step"; else echo "$1 steps"; fi; }
  s32=$(q '$c["name"] == "dp-wire-fp32" && $c["mode"] == "amp-fp16" { print $c["skipped"] + 0; exit }')
  s16=$(q '$c["name"] == "dp-wire-fp16" && $c["mode"] == "amp-fp16" { print $c["skipped"] + 0; exit }')
  if [ -n "$s32" ] && [ -n "$s16" ] && [ "$s16" -gt "$s32" ]; then
    echo "The fp16 wire skipped $(steps "$s16"), the fp32 wire $(steps "$s32"): a step skipped only with the fp16 wire is one where a"
    echo "scaled gradient, or the two ranks' sum of one, went beyond fp16's 65504 on the wire: every rank then finds"
    echo "inf, skips and halves the scale, as after any overflow; the runs then follow different scales, and their"
    echo "losses part by more than rounding."
    echo
  elif [ -n "$s32" ] && [ -n "$s16" ]; then
    echo "The fp16 wire skipped $(steps "$s16"), the fp32 wire $(steps "$s32"): no overflow on the wire beyond what the fp32 wire saw."
    echo
  fi
fi

if q '$c["name"] ~ /^dp-gpu-/ { n++ } END { exit !n }'; then
  echo "### GPU ranks (NCCL): one process against one rank per GPU"
  echo
  echo "The small preset, batch 16, medians after the warm-up; the ranks' gradients all-reduced on the devices"
  echo "by NCCL in one grouped call after the backward (all of it exposed). With one GPU the job has one rank:"
  echo "what the GPU ranks' path costs over one process, the all-reduce of one rank included."
  echo
  echo "| mode | run | ranks | step (ms) | speed-up over one process | all-reduce (ms) | MiB per step |"
  echo "|---|---|---|---|---|---|---|"
  q '$c["name"] ~ /^dp-gpu-/ { r[$c["mode"] " " ($c["name"] == "dp-gpu-1proc" ? 0 : 1)] = $0; if ($c["name"] != "dp-gpu-1proc") multi = $c["name"] }
     END {
       split("fp32 amp-fp16 amp-bf16", m, " ")
       for (i = 1; i <= 3; i++) {
         base = ""
         if ((m[i] " 0") in r) { split(r[m[i] " 0"], b, ","); base = b[c["step_time_ms_median"]] }
         for (j = 0; j <= 1; j++) {
           if (!((m[i] " " j) in r)) continue
           split(r[m[i] " " j], v, ",")
           t = v[c["step_time_ms_median"]]
           printf "| %s | %s | %s | %.1f | %s | %s | %s |\n", m[i], j ? "mpirun, NCCL" : "one process", v[c["ranks"]], t, \
             (j && base != "" && t > 0) ? sprintf("%.2fx", base / t) : "-", j ? sprintf("%.2f", v[c["allreduce_ms_median"]]) : "-", \
             j ? sprintf("%.1f", v[c["allreduce_bytes"]] / 1048576) : "-"
         }
       }
     }'
  echo
fi

# The chart's message, computed as train-dp.gp computes its title: 2 ranks (fp32 buckets) against one
# process as a speed-up, its range over the modes, and the fp16 wire's bytes against the fp32 wire's
dp_message() {
  q '$c["status"] == "completed" { t[$c["name"] " " $c["mode"]] = $c["step_time_ms_median"]
       if ($c["name"] ~ /^dp-small-2x1-(fp32|fp16)$/ && $c["allreduce_bytes"] > 0) b[$c["allreduce_dtype"]] = $c["allreduce_bytes"] }
     END { n = split("fp32 amp-bf16 amp-fp16", m, " ")
       for (i = 1; i <= n; i++) { a = t["dp-small-1x2 " m[i]]; r = t["dp-small-2x1-fp32 " m[i]]
         if (a == "" || r == "") continue; s = a / r; if (!k++ || s < lo) lo = s; if (k == 1 || s > hi) hi = s }
       if (!k) exit
       printf "2 ranks (fp32 wire): %s one process'"'"'s speed", (sprintf("%.2f", lo) == sprintf("%.2f", hi) ? sprintf("%.2fx", lo) : sprintf("%.2f-%.2fx", lo, hi))
       if (("fp32" in b) && ("fp16" in b)) printf "; fp16 wire: %.2fx the bytes", b["fp16"] / b["fp32"]
       printf "." }'
}
dp_settings() {
  q '$c["name"] == "dp-small-2x1-fp32" { printf "the small preset, batch %s, %s ranks of %s thread%s, buckets of %s MiB", $c["batch"], $c["ranks"], $c["threads"], $c["threads"] == 1 ? "" : "s", $c["bucket_mb"]; exit }'
}
msg=$(dp_message)
chart train-dp "Data-parallel step times, the all-reduce's time and its exposed part, and the 16-bit wires' per-step loss differences" \
  "${msg:+**$msg** }Top: the small preset's median step per mode, one process of 2 threads (grey) against 2 ranks of 1 thread, the all-reduce's exposed part pale on top, labelled with the speed-up over one process (its step time / this step's). Middle: the time inside the gradient all-reduces (open) and the exposed part (filled), labelled with the MiB each rank sends per step. Bottom: the tiny preset's per-step loss with a bf16 or fp16 wire against the fp32 wire's. Bars: colour the wire's precision family; lines: $(line_convention). Device: $(meta train_summary.csv device | cut -d, -f1); mpirun (Open MPI); $(dp_settings)."
