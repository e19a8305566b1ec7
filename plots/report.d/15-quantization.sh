#!/usr/bin/env bash
# plots/report.d/15-quantization.sh RESULTS_DIR — the narrow-format section
# of REPORT.md: what e4m3, e5m2, e2m3, e3m2 and e2m1 under each scale rule
# do to the GPT's weights, gradients and activations (median SQNR per
# format, rule, model and kind), MX FLOOR against RCEIL (blocks clipped,
# what it costs, against a log-uniform significand and the outside report's
# figure), NVFP4's rounded block scale, and the three charts. Every figure
# in a sentence is computed from quantize_error.csv / quantize_sweep.csv.
# Prints nothing when the folder holds neither.
set -euo pipefail
dir=${1:?usage: plots/report.d/15-quantization.sh RESULTS_DIR}
. "$(dirname "$0")/../report-lib.sh"
have quantize_error.csv || have quantize_sweep.csv || have quantize_gemm.csv || exit 0

echo "## Narrow formats on the GPT's tensors (\`halflab-bench quantize-error\`)"
echo
provenance 'quantize_*.csv'
src=quantize_error.csv
have $src || src=quantize_sweep.csv
have $src || src=quantize_gemm.csv
made=$(meta $src tensors_made)
kinds=$(table $src '{ p = $c["model"] " " ($c["kind"] == "" ? "layer" : $c["kind"]) "s"; if (!(p in s)) { s[p] = 1; printf "%s%s", n++ ? ", " : "", p } }')
echo "Tensors: ${made:-as given to --tensors}: $kinds. Each tensor of two or more dimensions is a matrix"
echo "(blocks run along its last dimension), quantized and decoded again by the CPU backend's quantizers, nearest-even"
echo "and saturating: **software quantization on the CPU (emulated)**; no fp8, fp6 or fp4 unit ran. Device: $(meta $src device)."
echo

if have quantize_error.csv; then
  # the (model, kind) pairs in file order, for the table's columns
  pairs=$(table quantize_error.csv '{ p = $c["model"] " " $c["kind"]; if (!(p in s)) { s[p] = 1; printf "%s,", p } }')
  echo "### Median SQNR over the tensors, dB"
  echo
  echo "SQNR = 10 log10(sum x^2 / sum (q - x)^2) over a tensor's elements, q the decoded value; higher is better."
  echo "Rules: none (scale 1), tensor (max / amax, Transformer Engine), block-fp32 (1x128, DeepSeek-V3; e4m3),"
  echo "mx-floor and mx-rceil (1x32, E8M0), nvfp4 (1x16, E4M3 scale and an fp32 tensor scale; e2m1)."
  echo
  PAIRS=$pairs table quantize_error.csv '
    function median(key,   n, i, j, t, a) { n = cnt[key]; for (i = 1; i <= n; i++) a[i] = v[key, i]
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    $c["sqnr_db"] != "" { fr = $c["format"] " " $c["rule"]; if (!(fr in seen)) { seen[fr] = 1; order[++nfr] = fr }
      key = fr SUBSEP $c["model"] " " $c["kind"]; v[key, ++cnt[key]] = $c["sqnr_db"] + 0 }
    END { np = split(ENVIRON["PAIRS"], P, ","); np--
      printf "| format | rule |"; for (p = 1; p <= np; p++) printf " %s |", P[p]; print ""
      printf "|---|---|"; for (p = 1; p <= np; p++) printf "---|"; print ""
      for (i = 1; i <= nfr; i++) { split(order[i], FR, " "); printf "| %s | %s |", FR[1], FR[2]
        for (p = 1; p <= np; p++) { key = order[i] SUBSEP P[p]; printf " %s |", cnt[key] ? sprintf("%.1f", median(key)) : "-" }
        print "" } }'
  echo
  # the best per-block rule against the per-tensor scale, per format, pooled over every tensor
  table quantize_error.csv '
    $c["sqnr_db"] != "" { key = $c["model"] SUBSEP $c["kind"] SUBSEP $c["tensor"] SUBSEP $c["format"]; q[key, $c["rule"]] = $c["sqnr_db"] + 0; k[key] = $c["format"] }
    END { for (key in k) { if (!((key, "tensor") in q) || !((key, "mx-rceil") in q)) continue; f = k[key]; n[f]++
        if (q[key, "mx-rceil"] >= q[key, "tensor"]) better[f]++; d[f] += q[key, "mx-rceil"] - q[key, "tensor"] }
      split("e4m3 e5m2 e2m3 e3m2 e2m1", F, " "); s = ""
      for (i = 1; i <= 5; i++) { f = F[i]; if (!n[f]) continue
        s = s sprintf("%s%s %+.1f dB (%d of %d tensors better)", s == "" ? "" : "; ", f, d[f] / n[f], better[f], n[f]) }
      if (s != "") printf "Per-block against per-tensor: MX RCEIL'"'"'s SQNR minus the per-tensor scale'"'"'s, the mean over the tensors: %s.\n", s }'
  echo

  echo "### MX: FLOOR against RCEIL"
  echo
  echo "FLOOR (OCP MX v1.0) sets a block's E8M0 scale to 2^(floor(log2 amax) - emax): a block maximum whose significand"
  echo "passes max / 2^emax (1.75 for e4m3, e5m2 and e3m2, 1.875 for e2m3, 1.5 for e2m1) is clipped. RCEIL rounds"
  echo "amax / max up to a power of two, so that the maximum fits. \"log-uniform\" is the share FLOOR would clip if the block"
  echo "maxima's significands were log-uniform (Benford): log2(2 / that threshold). The SQNR column is RCEIL's minus"
  echo "FLOOR's, the mean over the tensors: positive where FLOOR's clipping costs more than RCEIL's coarser scale."
  echo
  echo "| model | format | FLOOR: blocks clipped | weights | activations | gradients | RCEIL: blocks clipped | log-uniform | SQNR RCEIL - FLOOR |"
  echo "|---|---|---|---|---|---|---|---|---|"
  table quantize_error.csv '
    function pct(a, b) { return b ? sprintf("%.1f%%", 100 * a / b) : "-" }
    $c["rule"] == "mx-floor" || $c["rule"] == "mx-rceil" { m = $c["model"]; f = $c["format"]; r = $c["rule"]; b = $c["blocks"] * $c["blocks_clipped_share"]
      if (!(m in ms)) { ms[m] = 1; mo[++nm] = m }
      cl[m, f, r] += b; bl[m, f, r] += $c["blocks"]; kc[m, f, r, $c["kind"]] += b; kb[m, f, r, $c["kind"]] += $c["blocks"]
      key = m SUBSEP f SUBSEP $c["kind"] SUBSEP $c["tensor"]; q[key, r] = $c["sqnr_db"]; t[key] = m SUBSEP f }
    END { for (key in t) if (q[key, "mx-floor"] != "" && q[key, "mx-rceil"] != "") { g[t[key]] += q[key, "mx-rceil"] - q[key, "mx-floor"]; gn[t[key]]++ }
      split("e4m3 e5m2 e2m3 e3m2 e2m1", F, " "); split("1.75 1.75 1.875 1.75 1.5", T, " ")
      split("MXFP8 e4m3,MXFP8 e5m2,MXFP6 e2m3,MXFP6 e3m2,MXFP4 e2m1", L, ",")
      for (i = 1; i <= nm; i++) for (j = 1; j <= 5; j++) { m = mo[i]; f = F[j]; if (!bl[m, f, "mx-floor"]) continue
        printf "| %s | %s | %s | %s | %s | %s | %s | %.1f%% | %+.2f dB |\n", m, L[j], pct(cl[m, f, "mx-floor"], bl[m, f, "mx-floor"]),
          pct(kc[m, f, "mx-floor", "weight"], kb[m, f, "mx-floor", "weight"]), pct(kc[m, f, "mx-floor", "activation"], kb[m, f, "mx-floor", "activation"]),
          pct(kc[m, f, "mx-floor", "gradient"], kb[m, f, "mx-floor", "gradient"]), pct(cl[m, f, "mx-rceil"], bl[m, f, "mx-rceil"]),
          100 * log(2 / T[j]) / log(2), gn[m SUBSEP f] ? g[m SUBSEP f] / gn[m SUBSEP f] : 0 } }'
  echo
  table quantize_error.csv '
    $c["format"] == "e2m1" && ($c["rule"] == "mx-floor" || $c["rule"] == "mx-rceil" || $c["rule"] == "nvfp4") {
      r = $c["rule"]; cl[r] += $c["blocks"] * $c["blocks_clipped_share"]; bl[r] += $c["blocks"]
      key = $c["model"] SUBSEP $c["kind"] SUBSEP $c["tensor"]; q[key, r] = $c["sqnr_db"]; t[key] = 1 }
    END { if (!bl["mx-floor"]) exit
      floor = 100 * cl["mx-floor"] / bl["mx-floor"]
      printf "Over every tensor here, FLOOR clips the maximum of %.1f%% of MXFP4 blocks, ", floor
      printf "%s the outside report'"'"'s figure of about 37%% and near the %.1f%% a log-uniform significand gives. ", \
        (floor > 32 && floor < 42) ? "close to" : (floor >= 42 ? "above" : "below"), 100 * log(2 / 1.5) / log(2)
      for (key in t) if (q[key, "mx-floor"] != "" && q[key, "mx-rceil"] != "") { n++; if (q[key, "mx-floor"] + 0 > q[key, "mx-rceil"] + 0) fb++ }
      if (n && 2 * fb > n) printf "Yet in %d of %d tensors FLOOR'"'"'s MXFP4 SQNR is the higher: RCEIL'"'"'s scale, up to twice FLOOR'"'"'s, coarsens every element of the block, and with e2m1'"'"'s two significands per binade that costs more than clipping a maximum in [6, 8) to 6 does.", fb, n
      else if (n) printf "RCEIL'"'"'s MXFP4 SQNR is the higher in %d of %d tensors: clipping the maximum costs more than RCEIL'"'"'s coarser scale.", n - fb, n
      print ""
      if (bl["nvfp4"]) {
        printf "\nNVFP4 rounds its block scale (amax / 6) to the nearest E4M3 value, so where it rounds down the block maximum clips too: %.1f%% of NVFP4 blocks", 100 * cl["nvfp4"] / bl["nvfp4"]
        for (key in t) if (q[key, "nvfp4"] != "" && q[key, "mx-rceil"] != "") { nn++; d += q[key, "nvfp4"] - q[key, "mx-rceil"] }
        if (nn) printf ", each by at most 6.25%% (half an E4M3 step at the significand 1); its finer scale gives %+.1f dB against MXFP4 RCEIL (mean over %d tensors).", d / nn, nn
        print ""
      } }'
  echo
  chart quantize-floor-rceil "MX blocks clipped under FLOOR and RCEIL per format, and the SQNR difference" \
    "Top: the share of 1x32 blocks whose maximum clips, every tensor's blocks pooled (bars), weights, activations and gradients apart (points), the log-uniform share (dashes). Bottom: SQNR under RCEIL minus under FLOOR, mean over the tensors."
  chart quantize-sqnr "SQNR of every tensor per format and scale rule" \
    "One point per tensor, a bar at the median, per element format (groups) and scale rule (colour and shape); rows: models, columns: weights, activations, gradients."
fi

if have quantize_sweep.csv; then
  echo "### The scale sweep"
  echo
  table quantize_sweep.csv '
    $c["log2_scale_rel"] == 0 { key = $c["model"] "|" $c["kind"]; if (!(key in s)) { s[key] = 1; o[++n] = key; tn[key] = $c["tensor"] }
      z[key, $c["format"]] = $c["zero_share"]; sub_[key, $c["format"]] = $c["subnormal_share"] }
    END { if (!n) exit
      print "At x = 0 (scale = max / amax: the tensor'"'"'s largest value lands on the format'"'"'s max), the share of each swept"
      print "tensor'"'"'s values stored as zero (and as subnormal):"
      print ""
      print "| model | kind | tensor | e4m3 | e5m2 | e2m3 | e3m2 | e2m1 |"
      print "|---|---|---|---|---|---|---|---|"
      split("e4m3 e5m2 e2m3 e3m2 e2m1", F, " ")
      for (i = 1; i <= n; i++) { split(o[i], mk, "|"); printf "| %s | %s | %s |", mk[1], mk[2], tn[o[i]]
        for (j = 1; j <= 5; j++) printf " %.1f%% (%.1f%%) |", 100 * z[o[i], F[j]], 100 * sub_[o[i], F[j]]; print "" } }'
  echo
  chart quantize-sweep "Shares of zero, subnormal, normal and clipped values as the per-tensor scale moves" \
    "Per kind the tensor with the largest amax / rms; x = log2 of the scale over max / amax. Left of 0 the smallest values flush to zero, right of it the largest clip; a format's usable window is the width of its normal band."
fi

if have quantize_gemm.csv; then
  echo "### The GPT's linear layers as GEMMs"
  echo
  echo "Each linear layer's product Y = X W^T (W stored out x in, as PyTorch stores it; the head reads the tied token"
  echo "embedding), with X and W quantized and decoded by the same rule, blocks along the reduction k for both operands"
  echo "(X in 1x128 tiles and W in 128x128 blocks for DeepSeek-V3's rule), summed in fp32; the error is"
  echo "||Y - Y_fp64||_F / ||Y_fp64||_F against the fp64 product of the fp32 tensors, over at most the first"
  echo "$(table quantize_gemm.csv '$c["m"] + 0 > m { m = $c["m"] + 0 } END { print m }') rows of X (its scales see every row). **Emulated** on the CPU: no fp8, fp6 or fp4 unit ran. Median over the layers:"
  echo
  table quantize_gemm.csv '
    function median(key,   n, i, j, t, a) { n = cnt[key]; for (i = 1; i <= n; i++) a[i] = v[key, i]
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    { fr = $c["format"] " " $c["rule"]; if (!(fr in seen)) { seen[fr] = 1; order[++nfr] = fr; blk[fr] = $c["x_block"] " / " $c["w_block"] }
      m = $c["model"]; if (!(m in ms)) { ms[m] = 1; mo[++nm] = m }
      key = fr SUBSEP m; v[key, ++cnt[key]] = $c["rel_err"] + 0; layers[m] = cnt[key] }
    END { printf "| format | rule | blocks of X / W |"; for (i = 1; i <= nm; i++) printf " %s (%d layers) |", mo[i], layers[mo[i]]; print ""
      printf "|---|---|---|"; for (i = 1; i <= nm; i++) printf "---|"; print ""
      for (f = 1; f <= nfr; f++) { split(order[f], FR, " "); printf "| %s | %s | %s |", FR[1], FR[2], blk[order[f]]
        for (i = 1; i <= nm; i++) { key = order[f] SUBSEP mo[i]; x = median(key)
          printf " %s |", !cnt[key] ? "-" : x < 1e-4 ? sprintf("%.1e", x) : sprintf("%.2f%%", 100 * x) }
        print "" } }'
  echo
  # the sentences: the largest model (the last named), medians over its layers
  table quantize_gemm.csv '
    function median(key,   n, i, j, t, a) { n = cnt[key]; for (i = 1; i <= n; i++) a[i] = v[key, i]
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    { m = $c["model"]; last = m; key = m SUBSEP $c["format"] " " $c["rule"]; v[key, ++cnt[key]] = $c["rel_err"] + 0 }
    END { m = last; t = median(m SUBSEP "e4m3 tensor"); b = median(m SUBSEP "e4m3 block-fp32")
      x8 = median(m SUBSEP "e4m3 mx-rceil"); x4 = median(m SUBSEP "e2m1 mx-rceil"); nv = median(m SUBSEP "e2m1 nvfp4")
      f32 = median(m SUBSEP "fp32 none"); e5 = median(m SUBSEP "e5m2 tensor")
      printf "On the %s GPT the median error of the layers'"'"' products is %.2f%% with e4m3 and one scale per tensor, ", m, 100 * t
      printf "%.2f%% with DeepSeek-V3'"'"'s blocks and %.2f%% with MXFP8: ", 100 * b, 100 * x8
      if (b > 0.8 * t && x8 > 0.8 * t) printf "a floating-point element'"'"'s relative precision does not depend on its scale, so where no value underflows or clips, finer scales gain little. "
      else printf "finer scales cut the error, as the tensors hold values a single scale pushes under e4m3'"'"'s normal range. "
      printf "e5m2, one significand bit fewer, gives %.2f%% (%.1fx e4m3'"'"'s). ", 100 * e5, e5 / t
      printf "In fp4, MXFP4 reaches %.1f%% and NVFP4 %.1f%%", 100 * x4, 100 * nv
      if (nv < x4) printf ": NVFP4'"'"'s 16-element blocks with E4M3 scales (not powers of two) fit each block more closely.\n"
      else printf ": NVFP4'"'"'s finer blocks do not help here.\n"
      printf "The unquantized fp32 operands summed in fp32 give %.1e: the error is the operands'"'"' rounding, not the sums.\n", f32 }'
  echo
  chart quantize-gemm "Error of each linear layer's product per format and scale rule" \
    "One point per layer (shape: which layer), a bar at the median over the layers, per format and rule (colour: the element format); one panel per model; log scale."
fi
