#!/usr/bin/env bash
# scripts/setup.sh [--peers] — make this machine ready to build and test
# halflab, then configure build/ (release). Idempotent: what is installed
# stays, a configured build/ is left as it is, so a second run changes nothing.
#
#   as root:   installs the Debian packages that are missing (apt-get);
#   otherwise: prints the exact apt-get line and exits 1 when something is missing.
#   --peers:   also the PyTorch peer (Debian's python3-torch, for bench/peers/
#              and the e2e parity test).
#
# The CUDA backend is built when nvcc is on PATH (the CUDA toolkit does not
# come from Debian; see README). Without it halflab builds for the CPU only.
set -euo pipefail
cd "$(dirname "$0")/.."

peers=0
for arg in "$@"; do
  case "$arg" in
    --peers) peers=1 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (see scripts/setup.sh --help)" >&2; exit 2 ;;
  esac
done

packages=(gcc libc6-dev pkg-config meson ninja-build git gnuplot-nox libcmocka-dev libopenblas-dev libopenblas-openmp-dev)
[ $peers = 1 ] && packages+=(python3 python3-torch python3-numpy)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  line="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "setup.sh: missing Debian packages: ${missing[*]}" >&2
    echo "setup.sh: run as root:  $line" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ -f build/build.ninja ]; then
  echo "setup.sh: build/ is configured (ninja reconfigures it by itself when meson.build changes)" >&2
else
  meson setup build --buildtype=release >&2
fi
