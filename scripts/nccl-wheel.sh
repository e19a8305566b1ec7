#!/usr/bin/env bash
# scripts/nccl-wheel.sh [--venv | --pin] [CUDA_MAJOR] — where NCCL's pip wheel
# (nvidia-nccl-cu<MAJOR>: include/nccl.h and lib/libnccl.so.2 under
# site-packages/nvidia/nccl) lives, for the GPU ranks of halflab-train.
#
#   (no option)  prints the wheel's folder and exits 0, from the first of
#                these Pythons that has the wheel for this CUDA major:
#                $HALFLAB_NCCL_PYTHON, setup.sh's virtual environment (--venv),
#                the PyTorch peer's (scripts/peer-python.sh --venv; a CUDA
#                PyTorch brings the wheel), python3 on PATH; exits 1 with a
#                one-line reason on stderr when none has it.
#   --venv       prints where scripts/setup.sh installs the wheel:
#                $HALFLAB_NCCL_VENV, else ${XDG_CACHE_HOME:-~/.cache}/halflab/nccl-cu<MAJOR>,
#                outside the checkout so that every clone shares it.
#   --pin        prints the pinned pip requirement.
#
# CUDA_MAJOR: the toolkit's major version (default: nvcc's, else 13); a wheel
# for another major links another CUDA runtime and is not taken. meson.build
# asks this script after the CUDA toolkit itself (docs/build.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nccl_version=2.28.9 # the version the development machine's toolkit carries

mode=find
case "${1:-}" in
  --venv) mode=venv; shift ;;
  --pin) mode=pin; shift ;;
  -*) echo "nccl-wheel.sh: unknown option '$1'" >&2; exit 2 ;;
esac
major=${1:-}
if [ -z "$major" ]; then
  major=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p' | head -1)
  major=${major:-13}
fi
case "$major" in *[!0-9]* | "") echo "nccl-wheel.sh: CUDA major '$major' is not a number" >&2; exit 2 ;; esac
package=nvidia-nccl-cu$major
venv=${HALFLAB_NCCL_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/halflab/nccl-cu$major}

case "$mode" in
  venv) echo "$venv"; exit 0 ;;
  pin) echo "$package==$nccl_version"; exit 0 ;;
esac

peer=$("$here/peer-python.sh" --venv 2>/dev/null || true)
# the package's metadata must name this CUDA major; nvidia.nccl is a namespace package (no __file__)
probe="import importlib.metadata as m, nvidia.nccl as n; m.version('$package'); print(list(n.__path__)[0])"
for python in ${HALFLAB_NCCL_PYTHON:-} "$venv/bin/python" ${peer:+"$peer/bin/python"} python3; do
  command -v "$python" >/dev/null 2>&1 || continue
  dir=$("$python" -c "$probe" 2>/dev/null) || continue
  if [ -f "$dir/include/nccl.h" ] && ls "$dir"/lib/libnccl.so* >/dev/null 2>&1; then
    echo "$dir"
    exit 0
  fi
done
echo "nccl-wheel.sh: no Python here has $package (scripts/setup.sh installs it into $venv when nvcc is on PATH)" >&2
exit 1
