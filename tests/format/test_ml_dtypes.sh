#!/usr/bin/env bash
# test_ml_dtypes.sh CODES_OUT — suite numerics: test_ml_dtypes.py (every fp32
# input to every fp8, fp6 and fp4 format and to E8M0, and every code decoded,
# against ml_dtypes) in the pinned venv scripts/reference-python.sh names;
# skipped (77) without it, failed where HALFLAB_REQUIRE_REFERENCE=1.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! python=$("$src/scripts/reference-python.sh" 2>/dev/null); then
  [ "${HALFLAB_REQUIRE_REFERENCE:-0}" = 1 ] && { echo "test_ml_dtypes: the ml_dtypes venv is required" >&2; exit 1; }
  echo "skipped: $("$src/scripts/reference-python.sh" 2>&1 >/dev/null || true)"
  exit 77
fi
exec "$python" "$src/tests/format/test_ml_dtypes.py" "$@"
