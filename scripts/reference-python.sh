#!/usr/bin/env bash
# scripts/reference-python.sh [--venv | --pins] — where the independent
# reference for the narrow formats lives: ml_dtypes (and the numpy it needs),
# against which the tests check halflab's fp8, fp6, fp4 and E8M0 conversions
# bit for bit.
#
#   (no option)  prints the Python interpreter and exits 0 when the pinned
#                ml_dtypes and numpy import; exits 1 with a one-line reason on
#                stderr otherwise (scripts/setup.sh installs them).
#   --venv       prints the virtual environment's folder: $HALFLAB_REFERENCE_VENV,
#                else ${XDG_CACHE_HOME:-~/.cache}/halflab/ml_dtypes-<version>,
#                outside the checkout so that every clone and CI share it.
#   --pins       prints the pinned pip requirements.
set -euo pipefail
ml_dtypes_version=0.7.0
numpy_version=2.4.6
venv=${HALFLAB_REFERENCE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/halflab/ml_dtypes-$ml_dtypes_version}

case "${1:-}" in
  --venv) echo "$venv"; exit 0 ;;
  --pins) echo "ml_dtypes==$ml_dtypes_version numpy==$numpy_version"; exit 0 ;;
  "") ;;
  *) echo "reference-python.sh: unknown option '$1'" >&2; exit 2 ;;
esac

python=$venv/bin/python
if [ ! -f "$venv/halflab-reference-complete" ] || [ ! -x "$python" ]; then
  echo "reference-python.sh: ml_dtypes $ml_dtypes_version is not installed in $venv (scripts/setup.sh installs it)" >&2
  exit 1
fi
have=$("$python" -c 'import ml_dtypes, numpy; print(ml_dtypes.__version__, numpy.__version__)' 2>/dev/null) || {
  echo "reference-python.sh: $python cannot import ml_dtypes and numpy" >&2; exit 1; }
if [ "$have" != "$ml_dtypes_version $numpy_version" ]; then
  echo "reference-python.sh: $venv has ml_dtypes and numpy $have, not the pinned $ml_dtypes_version $numpy_version" >&2
  exit 1
fi
echo "$python"
