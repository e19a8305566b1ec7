#!/bin/sh
# test_layers.sh CHECKER ROOT — suite unit: no dependency in the tree at ROOT
# points up a layer, and the checker finds the three planted in the fixture
# (one include up, one include sideways, one library dependency up) and
# nothing else there.
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
            'low/meson.build:2: depends on high_dep: layer 0 low'; do
  printf '%s\n' "$out" | grep -qF "$edge" || fail "the checker missed the planted edge '$edge':
$out"
done
found=$(printf '%s\n' "$out" | grep -c ' may not ')
[ "$found" -eq 3 ] || fail "the checker reported $found edges on the fixture, expected the 3 planted:
$out"
echo "test_layers: the tree's layers hold; the fixture's 3 planted edges were found"
