#!/usr/bin/env bash
# plots/report.d/30-train.sh RESULTS_DIR — the training section of REPORT.md:
# halflab-train per precision mode (final loss and accuracy, speed and
# memory against fp32), the demonstrations' checks computed from the CSVs, the
# demonstrations of fp16 without loss scaling and pure fp16 weights, the
# thread measurements, the small step op by op (--profile; "not measured"
# without its CSVs), and every chart. Prints nothing when the folder holds
# no train_summary.csv.
set -euo pipefail
dir=${1:?usage: plots/report.d/30-train.sh RESULTS_DIR}
in=$dir/train_summary.csv
[ -f "$in" ] || exit 0

# awk over the summary rows with c[] from the header; NAME selects the run group
. "$(dirname "$0")/../report-lib.sh"
q() { table train_summary.csv "$1"; }
has() { q "\$c[\"name\"] == \"$1\" { n++ } END { exit !n }"; }
val() { q "\$c[\"name\"] == \"$1\" && \$c[\"mode\"] == \"$2\" { print \$c[\"$3\"]; exit }"; }
tmeta() { run_meta "$1"; }
pct() { awk -v v="$1" 'BEGIN { if (v == "") print "-"; else printf "%.2f%%", 100 * v }'; }

echo "## Training runs (\`halflab-train\`)"
echo
provenance train_summary.csv
echo "Measured on: $(tmeta device | cut -d, -f1-2), one process of as many OpenMP threads as cores unless a section says otherwise. Every mode of a run group starts from the same weights and sees the same"
echo "batches. Modes, data, columns and charts: docs/train.md. The statistics are means over the steps that"
echo "had them: gradient elements of the unscaled gradients that fp16 would make zero or subnormal (\"underflow\","
echo "and after the loss scale), elements exactly zero as computed (\"lost\"), and the share of non-zero updates"
echo "that left the stored weight unchanged (\"absorbed\"; for fp32 weights also what fp16 storage would have absorbed)."
echo

# ---------------------------------------------------------------- a table per group
mode_table() { # GROUP: the mode table against fp32
  local g=$1
  echo "| mode | status | eval loss | vs fp32 | eval acc | vs fp32 | last train loss | skipped | step (ms) | speed-up | tokens/s | peak memory | vs fp32 | underflow (unscaled / scaled) | lost | absorbed (stored / as fp16) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  q "\$c[\"name\"] == \"$g\" { r[\$c[\"mode\"]] = \$0 }
     END {
       split(\"fp32 amp-fp16 amp-bf16 fp16-noscale fp16-static fp16-master fp16-pure\", m, \" \")
       if (\"fp32\" in r) { split(r[\"fp32\"], f, \",\") }
       for (k = 1; k <= 7; k++) {
         if (!(m[k] in r)) continue
         split(r[m[k]], v, \",\")
         st = v[c[\"status\"]]; if (st != \"completed\") st = \"**\" st \"** at step \" v[c[\"steps_done\"]]
         el = v[c[\"eval_loss\"]]; ea = v[c[\"eval_acc\"]]
         dl = (el != \"\" && f[c[\"eval_loss\"]] != \"\") ? sprintf(\"%+.2f%%\", 100 * (el / f[c[\"eval_loss\"]] - 1)) : \"-\"
         da = (ea != \"\" && f[c[\"eval_acc\"]] != \"\") ? sprintf(\"%+.2f\", 100 * (ea - f[c[\"eval_acc\"]])) : \"-\"
         t = v[c[\"step_time_ms_median\"]]; sp = (t != \"\" && f[c[\"step_time_ms_median\"]] != \"\") ? sprintf(\"%.2fx\", f[c[\"step_time_ms_median\"]] / t) : \"-\"
         # a mode run at another batch than fp32's (one that needed more memory): its tokens/s compare, its step does not
         if (v[c[\"batch\"]] != f[c[\"batch\"]] && v[c[\"tokens_per_s\"]] != \"\" && f[c[\"tokens_per_s\"]] > 0)
           sp = sprintf(\"%.2fx in tokens/s (batch %s)\", v[c[\"tokens_per_s\"]] / f[c[\"tokens_per_s\"]], v[c[\"batch\"]])
         # a run that stopped early: its few timed steps (the first included) are no measure of the mode
         early = v[c[\"status\"]] != \"completed\"
         if (early && t != \"\") { t = sprintf(\"%.2f (%d steps, %s)\", t, v[c[\"timed_steps\"]], v[c[\"status\"]]); sp = \"-\" }
         mem = v[c[\"mem_peak_bytes\"]] / 1048576; mr = f[c[\"mem_peak_bytes\"]] ? sprintf(\"%.2fx\", v[c[\"mem_peak_bytes\"]] / f[c[\"mem_peak_bytes\"]]) : \"-\"
         u = v[c[\"fp16_underflow_frac\"]]; us = v[c[\"fp16_underflow_scaled_frac\"]]
         printf \"| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f MiB | %s | %s / %s | %s | %s / %s |\\n\", m[k], st, \\
           el == \"\" ? \"-\" : sprintf(\"%.4f\", el), dl, ea == \"\" ? \"-\" : sprintf(\"%.2f%%\", 100 * ea), da, \\
           v[c[\"final_loss\"]] == \"\" ? \"-\" : v[c[\"final_loss\"]] ~ /^-?(nan|inf)$/ ? v[c[\"final_loss\"]] : sprintf(\"%.4f\", v[c[\"final_loss\"]]), v[c[\"skipped\"]], \\
           t == \"\" ? \"-\" : (early ? t : sprintf(\"%.2f\", t)), sp, (v[c[\"tokens_per_s\"]] == \"\" || early) ? \"-\" : sprintf(\"%.0f\", v[c[\"tokens_per_s\"]]), mem, mr, \\
           u == \"\" ? \"-\" : sprintf(\"%.2f%%\", 100 * u), us == \"\" ? \"-\" : sprintf(\"%.2f%%\", 100 * us), \\
           v[c[\"grad_zero_frac\"]] == \"\" ? \"-\" : sprintf(\"%.3f%%\", 100 * v[c[\"grad_zero_frac\"]]), \\
           v[c[\"absorbed_frac\"]] == \"\" ? \"-\" : sprintf(\"%.2f%%\", 100 * v[c[\"absorbed_frac\"]]), \\
           v[c[\"fp16_absorbed_frac\"]] == \"\" ? \"-\" : sprintf(\"%.2f%%\", 100 * v[c[\"fp16_absorbed_frac\"]])
       }
     }"
  echo
}

# one line of config for a group, from its fp32 row
config() {
  q "\$c[\"name\"] == \"$1\" && \$c[\"mode\"] == \"fp32\" {
       printf \"%s layers, width %s, %s heads, vocabulary %s; batch %s x %s tokens; %s lr %s (%s), init x %s; %s steps; %s threads (OMP_WAIT_POLICY %s); load average %s at the start\", \\
         \$c[\"layers\"], \$c[\"embd\"], \$c[\"heads\"], \$c[\"vocab\"], \$c[\"batch\"], \$c[\"seq\"], \$c[\"optimizer\"], \$c[\"lr\"], \$c[\"schedule\"], \\
         \$c[\"init_gain\"], \$c[\"steps\"], \$c[\"threads\"], \$c[\"omp_wait_policy\"], \$c[\"load_start\"]; exit }"
}

check() { # LABEL CONDITION-TEXT PASS(0/1)
  if [ "$3" = 1 ]; then echo "- PASS $1: $2"; else echo "- MISS $1: $2"; fi
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 <= b + 0) }'; }
# speed-up: fp32's step time / the mode's, the one measure of speed in this section (above 1: faster
# than fp32); SPEEDUP A B prints A / B
speedup() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# GROUP MODE: the demonstration's check, all three criteria computed (lost gradient elements, absorbed
# updates, eval loss against amp-fp16's); prints the check and sets demo_ok (1 PASS, 0 MISS)
demo_check() {
  local z ab l r
  z=$(val "$1" "$2" grad_zero_frac); ab=$(val "$1" "$2" absorbed_frac)
  l=$(val "$1" "$2" eval_loss); r=$(val "$1" amp-fp16 eval_loss)
  demo_ok=$(awk -v z="$z" -v a="$ab" -v l="$l" -v r="$r" 'BEGIN { print ((z != "" && z >= 0.1) || (a != "" && a >= 0.5) || (l != "" && r != "" && l / r - 1 >= 0.1)) ? 1 : 0 }')
  check "$1 shows what $2 loses (any one of the three criteria)" \
    "$(pct "$z") of its gradient elements lost, exactly zero (criterion: at least 10%; fp32: $(pct "$(val "$1" fp32 grad_zero_frac)"), amp-fp16: $(pct "$(val "$1" amp-fp16 grad_zero_frac)")); $(pct "$ab") of its non-zero updates absorbed (criterion: at least half); eval loss $(awk -v a="$l" -v b="$r" 'BEGIN { if (a == "" || b == "") print "-"; else printf "%.4f vs amp-fp16 %.4f (%+.2f%%; criterion: +10%%)", a, b, 100 * (a / b - 1) }')" \
    "$demo_ok"
}
# SPEEDUP: in words, with a 2% band for as fast (timings of one run move by that much)
pace() { awk -v s="$1" 'BEGIN { print (s > 1.02) ? "faster than fp32" : (s < 0.98) ? "slower than fp32" : "as fast as fp32, within 2%" }'; }
# amp-fp16's tiny peak memory against fp32's, in words from the numbers
memory_note() {
  awk -v a="$(val tiny amp-fp16 mem_peak_bytes)" -v b="$(val tiny fp32 mem_peak_bytes)" 'BEGIN {
    if (a == "" || b == "" || b <= 0) exit
    r = a / b
    if (r < 1) printf "it saves memory: its peak is %.2fx fp32'"'"'s (activations in 2 bytes instead of 4);", r
    else printf "here it saved no memory either: its peak is %.2fx fp32'"'"'s;", r }'
}
# The largest speed-up a whole step could have over fp32 on this GPU: the ratio of its fp16 to its fp32
# GEMM peaks (gemm.csv's peak_tflop_per_s); empty without those rows
peak_ratio() {
  have gemm.csv || return 0
  table gemm.csv '$c["device"] == "cuda" && $c["peak_tflop_per_s"] > 0 { p[$c["variant"]] = $c["peak_tflop_per_s"] }
    END { if (("fp16" in p) && ("fp32" in p)) printf "%.1f", p["fp16"] / p["fp32"] }'
}
# GROUP T32 T16: amp-fp16's speed-up over fp32, expected at least 2x on a GPU's fp16 units and at most
# the ratio of their peaks (a step cannot gain more than its products do: beyond it the fp32 run was disturbed)
speedup_check() {
  local sp peak
  sp=$(speedup "$2" "$3")
  peak=$(peak_ratio)
  check "amp-fp16's speed-up over fp32 on the $1 preset at least 2x${peak:+ and at most ${peak}x (the fp16 / fp32 GEMM peaks)}" \
    "$2 ms / $3 ms = ${sp}x" "$(awk -v s="$sp" -v p="$peak" 'BEGIN { print (s >= 2 && (p == "" || s <= p)) ? 1 : 0 }')"
  if [ -n "$peak" ] && awk -v s="$sp" -v p="$peak" 'BEGIN { exit !(s > p) }'; then
    echo "  Above the peaks' ratio: no step gains more than its products can, so the fp32 run was disturbed: rerun it."
  fi
}

if has gpt2; then
  echo "### GPT-2 124M's shape (\`--preset gpt2\`: 8 x 1024 tokens, 20 warm-up + 50 timed steps)"
  echo
  echo "$(config gpt2)."
  echo
  mode_table gpt2
  t32=$(val gpt2 fp32 step_time_ms_median)
  t16=$(val gpt2 amp-fp16 step_time_ms_median)
  if [ -n "$t32" ] && [ -n "$t16" ]; then
    speedup_check gpt2 "$t32" "$t16"
    echo
  fi
fi
if has gpt2-converge; then
  echo "### GPT-2 124M's shape, convergence run"
  echo
  echo "$(config gpt2-converge)."
  echo
  mode_table gpt2-converge
fi

if has gpt2-cpu; then
  echo "### GPT-2 124M on this CPU (\`--preset gpt2\` at the largest batch that fits, 1 warm-up + 3 timed steps)"
  echo
  echo "$(config gpt2-cpu). What a training step of GPT-2 124M costs on this CPU per mode, at the largest batch of"
  echo "1024 tokens that fits in its memory (the footprint benchmark's figure, lowered while halflab-train's own"
  echo "check refused it); no convergence run (the losses are those of the first steps). The products run as in the"
  echo "small preset: fp32 on sgemm, bf16 on oneDNN's bf16 matmul where the CPU has bf16 units, fp16 widened to fp32."
  echo
  mode_table gpt2-cpu
  b32=$(val gpt2-cpu fp32 batch)
  for m in amp-bf16 amp-fp16; do
    b=$(val gpt2-cpu $m batch)
    [ -z "$b" ] || [ -z "$b32" ] || [ "$b" = "$b32" ] ||
      echo "- $m ran at batch $b, fp32 at $b32 (at the larger batch the OS stopped it for memory: the process needs more than core/models' accounting counts): its speed-up is in tokens/s."
  done
  for m in fp32 amp-bf16 amp-fp16; do
    [ -n "$(val gpt2-cpu $m steps_done)" ] ||
      echo "- $m: no row: the run did not complete here (scripts/train-all.sh printed why; an out-of-memory stop is in README's Known limitations)."
  done
  echo
fi

if has tiny; then
  echo "### The tiny preset (sorting task, every mode)"
  echo
  echo "$(config tiny). The loss includes the random numbers of each problem, which no model can"
  echo "predict: its floor is 1.007 nats per token; accuracy counts the sorted numbers."
  echo
  mode_table tiny
  acc=$(val tiny fp32 eval_acc)
  el=$(val tiny fp32 eval_loss)
  check "fp32 reaches at least 90% held-out accuracy" "$(pct "$acc")" "$(awk -v a="$acc" 'BEGIN { print (a != "" && a >= 0.9) ? 1 : 0 }')"
  for m in amp-fp16 amp-bf16; do
    ml=$(val tiny $m eval_loss)
    ma=$(val tiny $m eval_acc)
    [ -n "$ml" ] || continue
    ok=$(awk -v l="$ml" -v f="$el" -v a="$ma" -v g="$acc" 'BEGIN { print (l != "" && a != "" && (l / f - 1 <= 0.02 && l / f - 1 >= -0.02) && (a - g <= 0.02 && g - a <= 0.02)) ? 1 : 0 }')
    check "$m within 2% of fp32's eval loss and 2 points of its accuracy" \
      "$(awk -v l="$ml" -v f="$el" -v a="$ma" -v g="$acc" 'BEGIN { printf "eval loss %.4f vs %.4f (%+.2f%%), accuracy %.2f%% vs %.2f%% (%+.2f points)", l, f, 100 * (l / f - 1), 100 * a, 100 * g, 100 * (a - g) }')" "$ok"
    # the narrow products and casts must not cost accuracy: the amp modes stay within 0.5%
    check "$m within 0.5% of fp32's eval loss" \
      "$(awk -v l="$ml" -v f="$el" 'BEGIN { printf "%+.3f%%", 100 * (l / f - 1) }')" \
      "$(awk -v l="$ml" -v f="$el" 'BEGIN { d = l / f - 1; print (d <= 0.005 && d >= -0.005) ? 1 : 0 }')"
  done
  echo
  case "$(tmeta device)" in cpu*)
    # In words from this run's numbers: the tiny step is milliseconds of small products, so its times
    # move with the machine's load and OpenMP's wait policy more than with the precision.
    f32=$(val tiny fp32 step_time_ms_median)
    bf=$(val tiny amp-bf16 step_time_ms_median)
    f16=$(val tiny amp-fp16 step_time_ms_median)
    if [ -n "$f32" ] && [ -n "$bf" ] && [ -n "$f16" ]; then
      sb=$(speedup "$f32" "$bf")
      sf=$(speedup "$f32" "$f16")
      echo "Speed on this CPU: in this run the tiny step's speed-up over fp32 (fp32's step time / the mode's, the table's"
      echo "column) is ${sb}x for amp-bf16 ($(pace "$sb")) and ${sf}x for amp-fp16 ($(pace "$sf")). Read these with care: a tiny"
      echo "step is a few milliseconds of small products, and its time moves with the machine's load and OpenMP's wait"
      echo "policy more than with the precision (the threads table below). halflab widens fp16 operands to fp32 for"
      echo "OpenBLAS's sgemm (this CPU's fp16 arithmetic is not used), so amp-fp16 saves no arithmetic; $(memory_note)"
      echo "bf16 products:"
      # the tiny amp-bf16 run's own line: train_summary.csv's header is the last run's, which may be
      # another group's (profile-small-portable runs with the bf16 units off)
      echo "$( (meta train_tiny_amp-bf16_summary.csv onednn 2>/dev/null || tmeta onednn) | grep . || echo 'widened too (no oneDNN recorded in this run)'). The small preset's comparison"
      echo "with PyTorch (below) times real work."
      echo
    fi ;;
  esac
  # autocast's cast cache per mode, where the summary has its columns (an older one has not)
  cache=$(q '$c["name"] == "tiny" && ("autocast_cache_hit_rate" in c) && $c["autocast_cache_hit_rate"] != "" && $c["steps_done"] > 0 {
       n = $c["steps_done"]
       printf "- %s: %.1f conversions per step, %.1f of them f32 weights (then cached), %.1f answered by the cache: hit rate %.1f%%\n", \
         $c["mode"], $c["autocast_casts"] / n, $c["autocast_cache_misses"] / n, $c["autocast_cache_hits"] / n, 100 * $c["autocast_cache_hit_rate"] }')
  if [ -n "$cache" ]; then
    echo "Autocast's cast cache in the training steps (a weight used again inside one autocast region is not converted"
    echo "again; each micro-batch's forward is one region, and in this GPT every weight feeds one product per forward,"
    echo "so the rate is 0 unless a weight is reused; docs/train.md, \"The cast cache\"):"
    echo
    echo "$cache"
    echo
  fi
  # fp16-noscale and fp16-pure at the tiny size, in words from the numbers
  ref=$(val tiny amp-fp16 eval_loss)
  for m in fp16-noscale fp16-pure; do
    st=$(val tiny $m status)
    [ -n "$st" ] || continue
    ml=$(val tiny $m eval_loss)
    u=$(val tiny $m fp16_underflow_frac)
    z=$(val tiny $m grad_zero_frac)
    ab=$(val tiny $m absorbed_frac)
    if [ "$st" != completed ]; then
      echo "- **$m does not train at the tiny size**: $st at step $(val tiny $m steps_done)$(sed -n 's/\r$//; /^# why: /{s//: /p;q}' "$dir/train_tiny_${m}_summary.csv" 2>/dev/null)."
      [ $m = fp16-pure ] && echo "  With AdamW its moments are fp16 too (as \`torch.zeros_like(p)\` of an fp16 parameter): the second moment's increments (1 - beta2) g^2 lie below fp16's subnormals for most elements, so v cannot accumulate what the bias correction assumes, and m / sqrt(v) grows until the weights blow up. With SGD it trains (the absorb demonstration)."
    elif [ -z "$ml" ] || [ -z "$ref" ]; then
      echo "- **$m completed at the tiny size** (no eval loss of it and of amp-fp16 to compare)."
    else
      d=$(awk -v l="$ml" -v r="$ref" 'BEGIN { printf "%+.2f%%", 100 * (l / r - 1) }')
      # within 2% of amp-fp16's loss either way: as well; beyond it, worse or (what losing gradients
      # should not buy) better, said as such
      verdict=$(awk -v l="$ml" -v r="$ref" 'BEGIN { d = l / r - 1; print (d > 0.02) ? "trains worse at the tiny size" : (d < -0.02) ? "ends below amp-fp16'"'"'s loss at the tiny size" : "trains as well as amp-fp16 at the tiny size" }')
      echo "- **$m $verdict**: eval loss $(printf %.4f "$ml") against amp-fp16's $(printf %.4f "$ref") ($d); mean share of its gradient elements zero or subnormal in fp16 $(pct "$u"), exactly zero (lost) $(pct "$z"), updates absorbed by its stored weights $(pct "$ab")."
    fi
  done
  echo
fi

if has absorb || has underflow; then
  echo "### Demonstrations: where fp16 without loss scaling and pure fp16 weights lose"
  echo
  echo "A demonstration must show where they hurt: final eval loss at least 10% worse than amp-fp16's, or"
  echo "at least 10% of the gradient elements lost to underflow, or at least half the updates absorbed. The"
  echo "checks below are computed from the runs."
  echo
fi
if has absorb; then
  echo "**absorb** — $(config absorb). Plain SGD with a small learning rate: many updates lr x g are"
  echo "smaller than half an fp16 ulp of their weight (1 + 0.0001 again) and leave pure fp16 weights where they were;"
  echo "fp16-master's fp16 model absorbs them too, but its fp32 master keeps them."
  echo
  mode_table absorb
  ab=$(val absorb fp16-pure absorbed_frac)
  pl=$(val absorb fp16-pure eval_loss)
  rl=$(val absorb amp-fp16 eval_loss)
  if [ -n "$ab" ] && [ -n "$pl" ] && [ -n "$rl" ]; then
    echo "In this run fp16-pure's stored weights absorbed $(pct "$ab") of its non-zero updates, so $(calc "sprintf(\"%.2f%%\", 100 * (1 - $ab))") of them were"
    echo "applied: $(awk -v a="$ab" 'BEGIN { print (a >= 0.5) ? "most updates were lost" : "most updates still moved the weights" }'), and its eval loss ended $(calc "sprintf(\"%+.2f%%\", 100 * ($pl / $rl - 1))") against amp-fp16's."
    echo
  fi
  demo_check absorb fp16-pure
  echo
fi
if has underflow; then
  echo "**underflow** — $(config underflow). Small initial weights and a loss averaged over many tokens"
  echo "make the backward's gradients small; without a loss scale fp16 flushes the smallest to zero."
  echo
  mode_table underflow
  nl=$(val underflow fp16-noscale eval_loss)
  rl=$(val underflow amp-fp16 eval_loss)
  demo_check underflow fp16-noscale
  # what the loss says beside the PASS: fp16-noscale's place among the group's eval losses
  rank=$(q '$c["name"] == "underflow" && $c["eval_loss"] != "" { l[$c["mode"]] = $c["eval_loss"] + 0; n++ }
    END { if (!("fp16-noscale" in l)) exit; r = 1; for (m in l) if (l[m] < l["fp16-noscale"]) r++; print r, n }')
  if [ -n "$rank" ]; then
    set -- $rank
    if [ "$1" = 1 ]; then
      # the best loss of the group cannot be 10% worse than amp-fp16's: a PASS here stands on the fractions
      echo "- fp16-noscale's eval loss is the best of the $2 modes of this group: the gradients it lost did not cost loss in"
      if [ "$demo_ok" = 1 ]; then
        echo "  this run, and the PASS stands on the lost elements alone, not on a worse model."
      else
        echo "  this run, and its fractions too stayed under the criteria: the check above misses."
      fi
    else
      echo "- fp16-noscale's eval loss ranks $1 of the $2 modes of this group ($(calc "sprintf(\"%+.2f%%\", 100 * ($nl / $rl - 1))") against amp-fp16's)."
    fi
  fi
  echo
fi
if has absorb || has underflow; then
  # the demonstrations' largest lost share (gradient elements or updates) against their largest loss cost
  q '$c["name"] == "absorb" || $c["name"] == "underflow" { if ($c["mode"] == "amp-fp16") r[$c["name"]] = $c["eval_loss"] }
     ($c["name"] == "absorb" && $c["mode"] == "fp16-pure") || ($c["name"] == "underflow" && $c["mode"] == "fp16-noscale") {
       l[$c["name"]] = $c["eval_loss"]; f = $c["grad_zero_frac"] > $c["absorbed_frac"] ? $c["grad_zero_frac"] : $c["absorbed_frac"]; if (f > fmax) fmax = f }
     END { for (g in l) if (l[g] != "" && r[g] > 0) { d = l[g] / r[g] - 1; if (!n++ || d > dmax) dmax = d }
       if (!n) exit
       printf "What is lost is the smallest of the gradients and updates: with SGD they move the weights least. In these runs\n"
       printf "up to %.1f%% of the gradient elements or updates were lost, and the eval loss ended at most %+.2f%% against amp-fp16'"'"'s:\n", 100 * fmax, 100 * dmax
       print (100 * dmax < 10 * fmax) ? "the loss suffered far less than the fractions suggest." : (dmax < fmax) ? "the loss suffered less than the fractions suggest." : "the loss suffered as much as the fractions suggest, or more." }'
  echo
fi

if q '$c["name"] ~ /^threads-/ { n++ } END { exit !n }'; then
  echo "### Threads: the tiny fp32 step"
  echo
  echo "The same $(q '$c["name"] ~ /^threads-/ { s = $c["steps"] } END { print s }')-step fp32 run with 1 and 2 OpenMP threads (OpenBLAS shares libgomp's pool), OpenMP's passive wait"
  echo "policy against libgomp's default (workers spin after each parallel region, which on a busy machine takes"
  echo "the cores the next region needs). halflab-train leaves OMP_WAIT_POLICY to the environment and records it"
  echo "in every CSV. The load average (1 minute) is the machine's, other work included."
  echo
  echo "| run | threads | wait policy | step (ms, median) | fastest step (ms) | load at start | load at end |"
  echo "|---|---|---|---|---|---|---|"
  q '$c["name"] ~ /^threads-/ { printf "| %s | %s | %s | %.2f | %.2f | %s | %s |\n", $c["name"], $c["threads"], $c["omp_wait_policy"], $c["step_time_ms_median"], $c["step_time_ms_min"], $c["load_start"], $c["load_end"] }'
  echo
fi

# ---------------------------------------------------------------- the step, op by op (--profile)
echo "### Where the step's time goes: \`--profile\`, the small preset"
echo
prof() { echo "train_profile-small_$1_profile.csv"; }
pfiles=()
for m in fp32 amp-bf16; do have "$(prof $m)" && pfiles+=("$dir/$(prof $m)"); done
if [ ${#pfiles[@]} = 0 ]; then
  echo "not measured: no train_profile-small_{fp32,amp-bf16}_profile.csv here (scripts/train-all.sh writes them)."
  echo
else
  for m in fp32 amp-bf16; do
    have "$(prof $m)" || { echo "- $m: not measured (no $(prof $m))."; continue; }
    th=$(meta "$(prof $m)" threads)
    echo "- $m: $(meta "$(prof $m)" profile_steps | sed 's/ (/ timed steps (/')${th:+; threads $th}."
  done
  tp=$(val profile-small-portable amp-bf16 step_time_ms_median)
  t32=$(val profile-small fp32 step_time_ms_median)
  tb=$(val profile-small amp-bf16 step_time_ms_median)
  th16=$(val profile-small amp-fp16 step_time_ms_median)
  if [ -n "$th16" ] && [ -n "$t32" ]; then
    echo "- amp-fp16 (fp16 products widened to fp32 for sgemm and rounded once, as on any CPU without fp16 matrix units;"
    echo "  its per-op table is $(prof amp-fp16)): $(awk -v h="$th16" -v f="$t32" \
      'BEGIN { printf "%.1f ms per step, a speed-up over fp32 of %.2fx (fp32: %.1f ms)", h, f / h, f }')."
  fi
  if [ -n "$tp" ] && [ -n "$t32" ] && [ -n "$tb" ]; then
    echo "- amp-bf16 forced onto the portable paths (\`HALFLAB_CPU_UNITS=portable\`: bf16 products widened to fp32 for"
    echo "  sgemm, conversions in plain C; what a CPU without bf16 units gets): $(awk -v p="$tp" -v f="$t32" -v b="$tb" \
      'BEGIN { printf "%.1f ms per step, a speed-up over fp32 of %.2fx (fp32: %.1f ms); amp-bf16 on the bf16 units (%.1f ms) has a speed-up of %.2fx over it", p, f / p, f, b, p / b }')."
  fi
  echo
  echo "Per op and phase, the time per step (self time: an op's wall clock, its kernel included, less the ops it ran"
  echo "inside it, such as autocast's casts, which are the \`to\` rows), its share of the step and amp-bf16's speed-up"
  echo "(fp32's time / amp-bf16's, above 1: faster); the top ops of"
  echo "each mode by time and every cast, sorted by fp32's. \`kernel\` rows are kernels the autograd engine and the optimizer call"
  echo "themselves. Bytes are the op's input and output tensors (not measured memory traffic). Files: $(prof '{fp32,amp-bf16}');"
  echo "columns and rows: docs/train.md (Profile)."
  echo
  echo "| phase | op | kind | calls/step (fp32 / amp-bf16) | fp32 ms/step | fp32 % of step | amp-bf16 ms/step | amp-bf16 % of step | amp-bf16 speed-up | amp-bf16 GB/s |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  awk -F, -v top=12 "$AS_WRITTEN_AWK"'
    FNR == 1 { h = 0; f = (FILENAME ~ /_fp32_profile\.csv$/) ? "fp32" : "amp-bf16"; got[f] = 1 }
    /^#/ { next }
    !h { split("", c); for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next }
    {
      k = $c["phase"] SUBSEP $c["op"]
      ms[f, k] = $c["time_ms_per_step"]; pct[f, k] = $c["time_of_step_pct"]; calls[f, k] = $c["calls_per_step"]
      gbs[f, k] = $c["gb_per_s"]; kind[k] = $c["kind"]
      if ($c["kind"] != "op" && $c["kind"] != "kernel") { if (!(k in tail)) { tail[k] = 1; tails[++nt] = k } ; next }
      # the top ops of each mode, and every cast: what autocast costs is the question
      if ((++rank[f] <= top || $c["op"] == "to") && !(k in chosen)) { chosen[k] = 1; keys[++n] = k }
    }
    function t(f, k) { return ((f, k) in ms) ? ms[f, k] + 0 : -1 }
    function cell(v, fmt) { return v == "" ? "-" : sprintf(fmt, v) }
    function row(k,   p, a, b) {
      split(k, p, SUBSEP)
      a = ((("fp32", k) in ms) ? ms["fp32", k] : ""); b = ((("amp-bf16", k) in ms) ? ms["amp-bf16", k] : "")
      printf "| %s | %s | %s | %s / %s | %s | %s | %s | %s | %s | %s |\n", p[1], p[2], kind[k],
        cell(calls["fp32", k], "%g"), cell(calls["amp-bf16", k], "%g"), cell(a, "%.2f"), cell(pct["fp32", k], "%.1f%%"),
        cell(b, "%.2f"), cell(pct["amp-bf16", k], "%.1f%%"), (a != "" && b != "" && b > 0) ? sprintf("%.2fx", a / b) : "-",
        cell(gbs["amp-bf16", k], "%.1f")
    }
    END {
      for (i = 2; i <= n; i++)  # by fp32 time, else amp-bf16 time, largest first
        for (j = i; j > 1; j--) {
          x = keys[j]; y = keys[j - 1]
          if (t("fp32", x) > t("fp32", y) || (t("fp32", x) == t("fp32", y) && t("amp-bf16", x) > t("amp-bf16", y))) { keys[j] = y; keys[j - 1] = x } else break
        }
      for (i = 1; i <= n; i++) row(keys[i])
      for (i = 1; i <= nt; i++) row(tails[i])
    }' "${pfiles[@]}"
  echo
  echo "The \`(phase total)\` rows are each phase's wall time, \`(unattributed)\` the part of a phase (or of the step)"
  echo "outside every op and kernel: the framework's own work (graph bookkeeping, allocation, dispatch)."
  echo
fi

# the tiny run's absorption at its last step, and why it climbs when the schedule is cosine
underflow_note() {
  local f=$dir/train_tiny_fp32_steps.csv
  [ -f "$f" ] || return 0
  local sched; sched=$(val tiny fp32 schedule)
  awk -F, -v sched="$sched" "$AS_WRITTEN_AWK"'/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["fp16_absorbed_frac"] != "" { first = (first == "") ? $c["fp16_absorbed_frac"] : first; last = $c["fp16_absorbed_frac"]; lr = $c["lr"] }
    END { if (last == "") exit
      printf " In the tiny run the share of fp32 updates that fp16 weights would absorb goes from %.1f%% to %.1f%% at the last step", 100 * first, 100 * last
      # the schedule explains a rise only: a falling learning rate shrinks the updates, never grows them
      if (sched == "cosine" && last > first) printf ", where the cosine schedule has taken the learning rate to %g: the updates shrink below half an ulp of their weights, not the gradients.", lr
      else printf "."
    }' "$f"
}
# the runs that did not complete: their bars are pale, and not measured
perf_note() {
  q '$c["status"] != "completed" && $c["name"] !~ /^(threads-|profile-)/ { s = s sprintf("%s%s %s (%s at step %s, %s steps timed)", s == "" ? "" : "; ", $c["name"], $c["mode"], $c["status"], $c["steps_done"], $c["timed_steps"]) }
     END { if (s != "") printf " Pale, and named instead of measured: runs that did not complete, whose timings are no measure of the mode: %s.", s }'
}
# the first run group the charts draw, and the device its runs name (the charts' screen footer)
first_group() {
  local g
  for g in tiny gpt2-converge absorb underflow; do have "train_${g}_fp32_steps.csv" && { echo "$g"; return 0; }; done
  return 0
}
g1=$(first_group)
device_of() { if [ -n "$1" ] && have "$1"; then echo " Device: $(meta "$1" device | cut -d, -f1)."; fi; }
lines="Lines: colour the mode's precision family; $(line_convention)."
chart train-loss "Loss and held-out accuracy per mode and run group" \
  "Loss and held-out accuracy per mode and run group (training loss of each step thin, evaluations as points; slides and print draw the loss panels). $lines$(device_of "train_${g1}_fp32_steps.csv")"
chart train-scale "The loss scale per step" \
  "The loss scale per step; skipped steps (inf/NaN gradients) marked, and counted in each panel's title. $lines$(device_of "$(cd "$dir" && ls train_scale_amp-fp16_steps.csv train_tiny_amp-fp16_steps.csv 2>/dev/null | head -1)")"
chart train-hist "Weight-gradient histograms against fp16's zones" \
  "Weight-gradient histograms against fp16's zero, subnormal and overflow zones: fp32's gradients (bars), amp-fp16's after the scale (dashed), fp16-noscale's as computed (dotted), at the middle histogram step of each group; a slide shows the first group's fp32 and amp-fp16 alone.$(device_of "train_${g1}_fp32_hist.csv")"
chart train-underflow "Underflow and absorption per step" \
  "Underflow and absorption per step: what fp16 loses of the gradients and of the updates. $lines$(underflow_note)$(device_of "train_${g1}_fp32_steps.csv")"
chart train-perf "Throughput and peak memory per mode" \
  "Throughput per mode labelled with its speed-up over fp32 (fp32's step time / the mode's, the tables' speed-up column), peak memory with its ratio to fp32's (colour: the mode's precision family), and the threads measurement on a linear axis.$(perf_note)$(device_of train_summary.csv)"
