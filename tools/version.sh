#!/bin/sh
# tools/version.sh SOURCE_DIR — the version string every CSV carries: `git describe`, or, in a copy
# of the tree without .git (a GPU node's, scripts/gpu-check.sh), the commit .deps/source.txt names
# (written by gpu-check.sh --fetch-deps), "-dirty" where that tree had changes.
cd "$1" || exit 1
git describe --always --dirty --tags 2>/dev/null && exit 0
[ -f .deps/source.txt ] || exit 1
commit=$(sed -n 's/^commit: \([0-9a-f]\{7\}\).*/\1/p' .deps/source.txt)
[ -n "$commit" ] || exit 1
grep -q '^changes: none' .deps/source.txt && echo "$commit" || echo "$commit-dirty"
