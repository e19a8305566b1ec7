#!/usr/bin/env bash
# plots/report.d/25-footprint.sh RESULTS_DIR — the memory-footprint section
# of REPORT.md: GPT-2 124M's parameter bytes per weight policy three ways
# (analytic, accounting allocator, independent reading), any custom shape
# of the run, the training state per mode with the largest batch that fits,
# the measured step against the analytic one, and the chart.
# Prints nothing when the folder holds no footprint CSV.
set -euo pipefail
dir=${1:?usage: plots/report.d/25-footprint.sh RESULTS_DIR}
. "$(dirname "$0")/../report-lib.sh"
[ -f "$dir/footprint_params.csv" ] || [ -f "$dir/footprint_training.csv" ] || exit 0

AWK_FMT='function mib(b) { return sprintf("%.1f", b / 1048576) } function gib(b) { return sprintf("%.2f", b / 1073741824) }
         function commas(v,   s) { s = sprintf("%.0f", v); while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]([,]|$)/, ",&", s); return s }'

echo "## Memory footprint (\`halflab-bench footprint\`)"
echo

if [ -f "$dir/footprint_params.csv" ]; then
  ind=$(table footprint_params.csv '{ print $c["independent_method"]; exit }')
  if [ "$ind" = rss ]; then
    how="the process's resident set before and after building the model (/proc/self/statm, heap trimmed before each reading)"
  else
    how="the device's free memory before and after building the model (cudaMemGetInfo)"
  fi
  echo "### GPT-2 124M: parameter bytes per weight policy"
  echo
  echo "Measured on: $(meta footprint_params.csv device). Three ways: counted from the shapes (analytic), through the"
  echo "core's accounting allocator (equal to the byte, or the run fails), and independently of our allocator: $how."
  echo "The int8 policy is LLM.int8-style storage: projection weights int8 with one fp32 scale per output row,"
  echo "their biases fp16, layer norms fp32, embeddings fp16."
  echo
  echo "| model | policy | parameters | analytic bytes | allocator bytes | independent bytes | independent / analytic |"
  echo "|---|---|---|---|---|---|---|"
  table footprint_params.csv "$AWK_FMT"'
    { printf "| %s | %s | %s | %s (%s MiB) | %s | %s | %.2f%% |\n", $c["model"], $c["policy"], commas($c["params"]),
        commas($c["analytic_bytes"]), mib($c["analytic_bytes"]), commas($c["allocator_bytes"]),
        commas($c["independent_bytes"]), $c["independent_of_analytic_pct"] }'
  echo
fi

if [ -f "$dir/footprint_training.csv" ]; then
  opt=$(meta footprint_training.csv optimizer)
  mem=$(meta footprint_training.csv memory_for_max_batch)
  step=$(meta footprint_training.csv measured_step)
  echo "### Training state per mode"
  echo
  echo "Optimizer: $opt. Analytic bytes (core/models/nn.h, checked against the allocator by the unit tests); \"peak\" is the"
  echo "step's estimated allocator peak (weights, optimizer state, and the fullest moment of forward and backward)."
  echo "\"largest batch\" fits the peak into $mem."
  # the peak against the sum of the parts listed, from the same rows
  table footprint_training.csv '
    $c["measured"] == 0 { sum = $c["weights_bytes"] + $c["master_bytes"] + $c["gradients_bytes"] + $c["moments_bytes"] + $c["weight_casts_bytes"] + $c["activations_bytes"]
      if (sum <= 0) next; r = 100 * ($c["peak_bytes"] / sum - 1); n++; if (r > 0) above++; if (n == 1 || r < lo) lo = r; if (n == 1 || r > hi) hi = r }
    END { if (!n) exit
      if (above == n) printf "Every peak exceeds the sum of its parts (by %.1f%% to %.1f%%): the step'"'"'s transient tensors (backward'"'"'s activation gradients and scratch buffers) come on top of what the columns list.\n", lo, hi
      else if (above == 0) printf "Every peak is below the sum of its parts (by %.1f%% to %.1f%%): the parts are not all alive at once.\n", -hi, -lo
      else printf "%d of the %d peaks exceed the sum of their parts (from %+.1f%% to %+.1f%%): where a peak is above it, transient tensors come on top of the parts; where below, not all parts are alive at once.\n", above, n, lo, hi }'
  echo
  echo "| model | mode | batch x seq | weights | master | gradients | moments | weight casts | activations | peak | largest batch |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  table footprint_training.csv "$AWK_FMT"'
    $c["measured"] == 0 {
      printf "| %s | %s | %s x %s | %s | %s | %s | %s | %s | %s | **%s GiB** | %s |\n", $c["model"], $c["mode"], $c["batch"], $c["seq"],
        gib($c["weights_bytes"]), gib($c["master_bytes"]), gib($c["gradients_bytes"]), gib($c["moments_bytes"]),
        gib($c["weight_casts_bytes"]), gib($c["activations_bytes"]), gib($c["peak_bytes"]), $c["max_batch"] }'
  echo
  echo "(GiB.) Under autocast the attention probabilities are kept twice for backward — softmax's fp32 output and"
  echo "the fp16/bf16 copy the next product uses: 6 bytes per element of batch x heads x T x T against fp32's 4."
  echo "With this unfused attention that outweighs the halved linear activations beyond about T = 14 x width / heads"
  echo "tokens (896 for GPT-2's shape)."
  echo
  if table footprint_training.csv '$c["measured"] == 1 { found = 1 } END { exit !found }'; then
    echo "### The measured step against the analytic figures"
    echo
    echo "One real training step ($step): forward and loss under the mode's autocast, backward, the optimizer's"
    echo "update. \"saved\" is what forward and loss left alive for backward (activations and weight casts)."
    echo
    echo "| model | mode | batch x seq | saved (analytic) | saved (allocator) | peak (analytic) | peak (allocator) | allocator / analytic peak |"
    echo "|---|---|---|---|---|---|---|---|"
    table footprint_training.csv "$AWK_FMT"'
      $c["measured"] == 1 {
        printf "| %s | %s | %s x %s | %s MiB | %s MiB | %s MiB | %s MiB | %.4f |\n", $c["model"], $c["mode"], $c["batch"], $c["seq"],
          mib($c["weight_casts_bytes"] + $c["activations_bytes"]), mib($c["alloc_saved_bytes"]), mib($c["peak_bytes"]),
          mib($c["alloc_peak_bytes"]), $c["alloc_peak_bytes"] / $c["peak_bytes"] }'
    echo
  else
    echo "No measured step in this run (${step:-not recorded})."
    echo
  fi
fi

if [ -f "$dir/footprint.png" ]; then
  echo "![GPT-2 124M memory footprint](footprint.png)"
  echo
  echo "Left: parameter bytes per weight policy, three ways. Middle: the training state per mode, stacked, its GiB"
  echo "on the bar; the black dash is the estimated peak of a step, the red line the memory the largest batch (in"
  echo "each mode's tick label) was fitted to. Right: the measured step — analytic bars and dash, the allocator's"
  echo "measured peak as a red diamond (its value above the bar). The parts keep one colour in both panels; the"
  echo "left panel's three ways are greys."
  echo
else
  echo '_Chart footprint.png not drawn here (gnuplot missing or its CSV absent); `ninja -C build plots` draws it._'
  echo
fi
