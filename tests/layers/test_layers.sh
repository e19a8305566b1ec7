#!/bin/sh
# test_layers.sh CHECKER ROOT — suite unit: no dependency in the tree at ROOT
# points up a layer or into a private folder, and the checker finds the four
# planted in the fixture (one include up, one include sideways, one library
# dependency up, one include into a private folder from a layer it does not
# name) and nothing else there: not the includes the private folder allows.
set -u
checker=$1 root=$2
fixture=$root/tests/layers/fixture
fail() { echo "test_layers: $*" >&2; exit 1; }

out=$("$checker" --root "$root" 2>&1) || fail "the tree has edges that point up:
$out"

out=$("$checker" --root "$fixture" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "on the fixture the checker exited $rc, not 1:
$out"
for edge in 'low/low.h:2: includes "high/high.h": layer 0 low' \
            'side/side.c:2: includes "high/high.h": layer 1 side' \
            'low/meson.build:2: depends on high_dep: layer 0 low' \
            'high/high.c:2: includes "low/backend/backend.h": layer 1 high (high/) may not use low/backend/'; do
  printf '%s\n' "$out" | grep -qF "$edge" || fail "the checker missed the planted edge '$edge':
$out"
done
found=$(printf '%s\n' "$out" | grep -c ' may not ')
[ "$found" -eq 4 ] || fail "the checker reported $found edges on the fixture, expected the 4 planted:
$out"
echo "test_layers: the tree's layers hold; the fixture's 4 planted edges were found"
