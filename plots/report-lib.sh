# plots/report-lib.sh — helpers the report sections (plots/report.d/*.sh)
# source; each section sets dir (the results folder) first. Every reader
# opens its file itself: no pipe that pipefail could fail on SIGPIPE.

have() { [ -f "$dir/$1" ]; }

# The start of every awk program that reads a halflab CSV: a file another system saved (CRLF line
# ends, a UTF-8 byte order mark before its first line) reads as the file halflab wrote.
AS_WRITTEN_AWK='{ sub(/\r$/, "") } FNR == 1 { sub(/^\357\273\277/, "") }
'

# FILE AWK-PROGRAM: the program runs on the rows of a halflab CSV, with c[]
# mapping each column name of the header to its index ("# " lines skipped)
table() { awk -F, "$AS_WRITTEN_AWK /^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[\$i] = i; next } $2" "$dir/$1"; }

# FILE KEY: the value of the metadata line "# KEY: value" (the first one; a CR before the line end is
# not part of it)
meta() { sed -n "s/\r\$//; /^# $2: /{s///p;q}" "$dir/$1"; }

# KEY: the value of KEY in train_summary.csv's metadata, which holds only the lines every one of its
# runs shares; where they differ (the line left out), in the first run's own train_*_summary.csv
# that has it
run_meta() {
  local f v
  v=$(meta train_summary.csv "$1")
  for f in "$dir"/train_*_summary.csv; do
    [ -z "$v" ] || break
    [ -f "$f" ] && v=$(meta "${f#"$dir"/}" "$1")
  done
  printf '%s\n' "$v"
}

# NAME ALT HOW: the chart NAME.png with its alt text and how to read it, or
# a line saying it is not drawn here
chart() {
  if [ -f "$dir/$1.png" ]; then
    printf '![%s](%s.png)\n\n%s\n\n' "$2" "$1" "$3"
  else
    printf '_Chart %s.png not drawn here (gnuplot missing or its CSV absent); `ninja -C build plots` draws it._\n\n' "$1"
  fi
}

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

# The charts' line-style convention, as plots/style.gp states it (one
# source: captions quote it rather than restating it)
line_convention() {
  sed -n 's/^line_convention = "\(.*\)"$/\1/p' "$(dirname "${BASH_SOURCE[0]}")/style.gp"
}
# [--rows AWK-CONDITION] FILE...: the builds the FILEs (names or globs under $dir; absent ones
# skipped) were measured with, for a section's top: a warning line when they come from more than one
# build, one when a build is from a modified tree (a version ending in -dirty), then "Measured with:"
# each distinct (version, day) and its files. A file counts by its "# halflab" and "# date:" lines;
# train_summary.csv, which holds many runs, counts each row (those where the --rows condition holds,
# c[] as in table) by its version and date cells, or, in a row without them (written before those
# columns), by its run's own train_NAME_MODE_summary.csv.
provenance() {
  local rows=1 f g
  [ "${1:-}" = --rows ] && { rows=$2; shift 2; }
  local files=()
  for g in "$@"; do
    for f in "$dir"/$g; do [ -f "$f" ] && files+=("$f"); done
  done
  [ ${#files[@]} -gt 0 ] || return 0
  awk -F, -v dir="$dir" "$AS_WRITTEN_AWK$PROVENANCE_AWK"'
    agg && '"$rows"' {
      v = ("version" in c) ? $c["version"] : ""; d = ("date" in c) ? substr($c["date"], 1, 10) : ""
      if (v == "") { own_file(dir "/train_" $c["name"] "_" $c["mode"] "_summary.csv"); v = own_version; d = own_day }
      build(v, d, "", $c["name"])
    }' "${files[@]}" | awk '!seen[$0]++ || $0 == ""' # (an END prints the lines once)
}
# provenance's awk: build() keeps each (version, day) with its files and runs; END prints the lines
PROVENANCE_AWK='
  function own_file(path,   line) { # the "# halflab" version and "# date:" day of a run'"'"'s own file
    own_version = own_day = ""
    while ((getline line < path) > 0 && (sub(/^\357\273\277/, "", line) || 1) && (sub(/\r$/, "", line) || 1) && line ~ /^#/) {
      if (line ~ /^# halflab /) own_version = substr(line, 11)
      if (line ~ /^# date: /) own_day = substr(line, 9, 10)
    }
    close(path)
  }
  function build(v, d, file, run,   k, i) {
    if (v == "") v = "(version not recorded)"
    k = v SUBSEP d
    if (!(k in at)) {
      at[k] = i = ++n; version[i] = v; day[i] = d
      if (!(v in builds)) { builds[v] = 1; nb++; if (v ~ /-dirty/) nd++ }
    }
    i = at[k]
    if (file != "" && !((i, file) in had)) { had[i, file] = 1; nf[i]++; files[i] = files[i] (files[i] == "" ? "" : ", ") file }
    if (run != "" && !((i, run) in had)) { had[i, run] = 1; runs[i] = runs[i] (runs[i] == "" ? "" : ", ") run }
  }
  FNR == 1 { name = substr(FILENAME, length(dir) + 2); agg = name == "train_summary.csv"; v = d = ""; h = 0; split("", c) }
  /^#/ && !h { if ($0 ~ /^# halflab /) v = substr($0, 11); if ($0 ~ /^# date: /) d = substr($0, 9, 10); next }
  !h++ { if (agg) for (i = 1; i <= NF; i++) c[$i] = i; else build(v, d, name, ""); next }
  END {
    if (!n) exit
    for (i = 1; i <= n; i++) order[i] = i # by day, then version
    for (i = 2; i <= n; i++)
      for (j = i; j > 1 && day[order[j]] version[order[j]] < day[order[j - 1]] version[order[j - 1]]; j--) {
        t = order[j]; order[j] = order[j - 1]; order[j - 1] = t }
    if (nb > 1)
      printf "> **Mixed builds:** these results come from %d builds of halflab (below): a difference between them may be the code'"'"'s, not the precision'"'"'s; compare with care.\n", nb
    if (nb > 1 && nd) print ">"
    if (nd)
      printf "> **Built from a modified tree (-dirty):** %s uncommitted changes: the commit named does not say exactly which code ran.\n", nb == 1 ? "the build had" : nd == nb ? "every build had" : nd " of the " nb " builds had"
    if (nb > 1 || nd) print ""
    line = "Measured with: "
    for (j = 1; j <= n; j++) {
      i = order[j]
      what = nf[i] > 4 ? nf[i] " files" : files[i]
      if (runs[i] != "") what = what (what == "" ? "" : "; ") "train_summary.csv: " runs[i]
      line = line (j > 1 ? "; " : "") "halflab " version[i] (day[i] == "" ? "" : " on " day[i]) " (" what ")"
    }
    print line "."
    print ""
  }'
