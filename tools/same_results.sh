#!/usr/bin/env bash
# tools/same_results.sh — for a change meant to leave every number alone:
#   tools/same_results.sh BUILD_BEFORE BUILD_AFTER     run both builds, compare their CSVs
#   tools/same_results.sh --dirs BEFORE AFTER          compare CSV folders written earlier
# Cell for cell, by column name, renames followed through tools/column_renames/;
# time, rate and load columns left out (tools/same_results.py says how).
# Exit 0 identical, 1 different, 2 bad usage.
set -euo pipefail
here=$(dirname "$0")
if [ "${1:-}" = "--dirs" ]; then exec python3 "$here/same_results.py" "$@"; fi
[ $# -eq 2 ] || { echo "usage: tools/same_results.sh BUILD_BEFORE BUILD_AFTER | --dirs BEFORE AFTER" >&2; exit 2; }
exec python3 "$here/same_results.py" --builds "$1" "$2"
