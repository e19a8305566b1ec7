#!/usr/bin/env bash
# tests/plots/style_rules.sh DIR — plots/style.gp owns every size: no other
# chart script in DIR sets a terminal, names a font or scales the terminal's
# line width, and none calls png() or svg() past out_open(). Lists each offending line (file:line) and exits 1; 0 when none.
# The test runs it on plots/ and, expecting failure, on tests/plots/fixture/.
set -euo pipefail
dir=${1:?usage: tests/plots/style_rules.sh DIR}
status=0
for gp in "$dir"/*.gp; do
  [ "$(basename "$gp")" = style.gp ] && continue
  # code only: drop comments (a '#' outside quotes is rare enough in these
  # scripts that a plain cut at ' #' or a leading '#' does)
  if sed -E 's/^[[:space:]]*#.*$//' "$gp" | grep -nE "\\bfont\\b|set +term(inal)?\\b|\\bfontscale\\b|\\b(png|svg)\\("  >/tmp/style_rules.$$; then
    sed "s|^|$gp:|" /tmp/style_rules.$$
    status=1
  fi
done
rm -f /tmp/style_rules.$$
[ $status = 0 ] && echo "no chart script sets a font or a terminal of its own"
exit $status
