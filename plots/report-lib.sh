# plots/report-lib.sh — helpers the report sections (plots/report.d/*.sh)
# source; each section sets dir (the results folder) first. Every reader
# opens its file itself: no pipe that pipefail could fail on SIGPIPE.

have() { [ -f "$dir/$1" ]; }

# FILE AWK-PROGRAM: the program runs on the rows of a halflab CSV, with c[]
# mapping each column name of the header to its index ("# " lines skipped)
table() { awk -F, "/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[\$i] = i; next } $2" "$dir/$1"; }

# FILE KEY: the value of the metadata line "# KEY: value" (the first one)
meta() { sed -n "/^# $2: /{s///p;q}" "$dir/$1"; }

# NAME ALT HOW: the chart NAME.png with its alt text and how to read it, or
# a line saying it is not drawn here
chart() {
  if [ -f "$dir/$1.png" ]; then
    printf '![%s](%s.png)\n\n%s\n\n' "$2" "$1" "$3"
  else
    printf '_Chart %s.png not drawn here (gnuplot missing or its CSV absent); `ninja -C build plots` draws it._\n\n' "$1"
  fi
}

# The line-style convention of the charts that set precisions side by side (plots/style.gp states
# it): solid is the fp32 baseline, dashed the narrower type. A caption says it with this, never in
# words of its own. NARROW: the narrower types the chart draws (default "fp16, bf16").
style_note() { printf 'solid: fp32, the baseline; dashed: the narrower type (%s)' "${1:-fp16, bf16}"; }

# whether the folder's runs were on a GPU: its CSVs name a cuda device ("# device: cuda: ...")
# or hold cuda rows; captions describe GPU behaviour only then
on_gpu() {
  local f
  for f in "$dir"/*.csv; do
    [ -e "$f" ] || continue
    grep -q '^# device: cuda' "$f" && return 0
    grep -q '^cuda,' "$f" && return 0
  done
  return 1
}

# AWK-EXPRESSION: evaluate with awk and print (numbers from the report's own CSVs)
calc() { awk "BEGIN { print $1 }"; }
