#!/usr/bin/env bash
# scripts/peer-python.sh [--venv | --pins] — where the PyTorch peer lives.
#
#   (no option)  prints the peer's Python interpreter and exits 0 when it is
#                installed and imports the pinned torch and numpy; exits 1 with
#                a one-line reason on stderr otherwise (scripts/setup.sh --peers
#                installs it).
#   --venv       prints the virtual environment's folder: $HALFLAB_PEER_VENV,
#                else ${XDG_CACHE_HOME:-~/.cache}/halflab/torch-<version>,
#                outside the checkout so that every clone and CI share it.
#   --pins       prints the pinned pip requirements.
#
# One place names the pinned versions; setup.sh, the tests (through meson) and
# bench/peers/compare_cpu.sh all ask this script.
set -euo pipefail
torch_version=2.15.0
numpy_version=2.4.6
# torchao: a second reference for the MX and NVFP4 quantizers (tests/quantize); pure Python
torchao_version=0.18.0
venv=${HALFLAB_PEER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/halflab/torch-$torch_version}

case "${1:-}" in
  --venv) echo "$venv"; exit 0 ;;
  --pins) echo "torch==$torch_version numpy==$numpy_version torchao==$torchao_version"; exit 0 ;;
  "") ;;
  *) echo "peer-python.sh: unknown option '$1'" >&2; exit 2 ;;
esac

python=$venv/bin/python
if [ ! -f "$venv/halflab-peer-complete" ] || [ ! -x "$python" ]; then
  echo "peer-python.sh: PyTorch $torch_version is not installed in $venv (scripts/setup.sh --peers installs it)" >&2
  exit 1
fi
have=$("$python" -c 'import torch, numpy; print(torch.__version__.split("+")[0])' 2>/dev/null) || {
  echo "peer-python.sh: $python cannot import torch and numpy" >&2; exit 1; }
if [ "$have" != "$torch_version" ]; then
  echo "peer-python.sh: $venv has torch $have, not the pinned $torch_version" >&2
  exit 1
fi
echo "$python"
