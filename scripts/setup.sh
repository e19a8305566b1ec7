#!/usr/bin/env bash
# scripts/setup.sh [--peers | --numerics-only] [--fuzz] — make this machine ready to
# build and test halflab, then configure build/ (release). Idempotent: what is
# installed stays, a configured build/ is left as it is, so a second run
# changes nothing.
#
#   as root:   installs the Debian packages that are missing (apt-get);
#   otherwise: prints the exact apt-get line and exits 1 when something is missing.
#   always (but --numerics-only): ml_dtypes, the independent reference the
#              tests check the fp8, fp6, fp4 and E8M0 conversions against, from
#              pip in a small virtual environment outside the checkout
#              (scripts/reference-python.sh: ~/.cache/halflab/ml_dtypes-0.7.0,
#              about 100 MB). Without the package index it says so and goes on;
#              those tests are then skipped.
#   --numerics-only: for a class: only what halflab-numerics and its charts
#              need (a C compiler, meson, ninja, gnuplot, and poppler-utils to
#              join slides into one PDF), and build/ configured with
#              -Dnumerics-only=true, which builds halflab-numerics alone. A
#              build/ configured in full already has it and is left as it is;
#              a later run without --numerics-only installs the rest and turns
#              build/ into a full one.
#   --peers:   also the PyTorch peer (bench/peers/, the e2e parity tests):
#              PyTorch 2.15.0 and numpy from pip in a virtual environment
#              outside the checkout, $HALFLAB_PEER_VENV or by default
#              ~/.cache/halflab/torch-2.15.0, shared by every clone. The first
#              install downloads about 2.8 GB (the wheel brings CUDA libraries)
#              and takes a few minutes; later runs find it and change nothing.
#              Without access to the package index it says what failed and
#              exits 1, leaving the rest of the set-up in place.
#   --fuzz:    also clang, its libFuzzer and sanitizer runtimes and its
#              OpenMP, for the fuzz targets (scripts/fuzz.sh, which
#              configures its own build-fuzz/).
#
# The CUDA backend is built when nvcc is on PATH (the CUDA toolkit does not
# come from Debian; see docs/build.md). Without it halflab builds for the CPU only.
#
# NCCL (data-parallel training on GPUs, meson option nccl), only where nvcc
# is on PATH: NCCL is not part of the CUDA toolkit's own install, so when
# neither the toolkit (nccl.h beside cuda_runtime.h, libnccl in its lib64/ or
# lib/) nor /usr nor an installed pip wheel has it (scripts/nccl-wheel.sh),
# the pinned wheel nvidia-nccl-cu<CUDA major> is installed with pip into a
# virtual environment outside the checkout (scripts/nccl-wheel.sh --venv,
# ~/.cache/halflab/nccl-cu13 for CUDA 13; about 250 MB), where meson looks.
# Without access to the package index it says so and goes on: the configure
# summary then says NCCL is not built.
set -euo pipefail
cd "$(dirname "$0")/.."

peers=0
numerics_only=0
fuzz=0
for arg in "$@"; do
  case "$arg" in
    --peers) peers=1 ;;
    --numerics-only) numerics_only=1 ;;
    --fuzz) fuzz=1 ;;
    -h | --help) sed -n '2,45p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (see scripts/setup.sh --help)" >&2; exit 2 ;;
  esac
done

if [ $peers = 1 ] && [ $numerics_only = 1 ]; then
  echo "setup.sh: --peers and --numerics-only exclude each other (the peer needs the full build)" >&2
  exit 2
fi
if [ $fuzz = 1 ] && [ $numerics_only = 1 ]; then
  echo "setup.sh: --fuzz and --numerics-only exclude each other (the fuzz targets need the full build's packages)" >&2
  exit 2
fi

packages=(gcc libc6-dev pkg-config meson ninja-build git gnuplot-nox poppler-utils libcmocka-dev libopenblas-dev libopenblas-openmp-dev libdnnl-dev
          libopenmpi-dev openmpi-bin)
[ $numerics_only = 1 ] && packages=(gcc libc6-dev meson ninja-build gnuplot-nox poppler-utils)
[ $numerics_only = 0 ] && packages+=(python3 python3-venv) # the narrow formats' reference (below)
[ $fuzz = 1 ] && packages+=(clang libclang-rt-dev libomp-dev)
# NCCL for GPU ranks: the toolkit's or the system's, an installed wheel, else the wheel to install (below)
nccl_wheel=0
if [ $numerics_only = 0 ] && command -v nvcc >/dev/null 2>&1; then
  toolkit=$(dirname "$(dirname "$(command -v nvcc)")")
  if { [ -f "$toolkit/include/nccl.h" ] && ls "$toolkit"/lib64/libnccl.so* "$toolkit"/lib/libnccl.so* >/dev/null 2>&1; } ||
     { [ -f /usr/include/nccl.h ] && ls /usr/lib/*/libnccl.so* >/dev/null 2>&1; }; then
    echo "setup.sh: NCCL: the CUDA toolkit's or the system's" >&2
  elif wheel=$(scripts/nccl-wheel.sh 2>/dev/null); then
    echo "setup.sh: NCCL: the pip wheel in $wheel" >&2
  else
    nccl_wheel=1
  fi
fi

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

# ---- NCCL's pinned pip wheel, where nvcc is here and nothing else has NCCL
nccl_installed=0
if [ $nccl_wheel = 1 ]; then
  nvenv=$(scripts/nccl-wheel.sh --venv)
  pin=$(scripts/nccl-wheel.sh --pin)
  echo "setup.sh: installing NCCL ($pin) into $nvenv, for data-parallel training on GPUs" >&2
  log=$(mktemp /tmp/halflab-nccl-install.XXXXXX)
  mkdir -p "$(dirname "$nvenv")"
  if { [ -x "$nvenv/bin/pip" ] || /usr/bin/python3 -m venv "$nvenv" >"$log" 2>&1; } &&
    "$nvenv/bin/pip" install --disable-pip-version-check --no-input -q "$pin" >>"$log" 2>&1 &&
    scripts/nccl-wheel.sh >/dev/null 2>>"$log"; then
    rm -f "$log"
    nccl_installed=1
  else
    why=$(grep -m1 -E 'ERROR|Error|error' "$log" | cut -c1-200)
    echo "setup.sh: could not install NCCL ($pin): ${why:-see $log}; halflab builds without GPU ranks" >&2
  fi
fi

# build/'s numerics-only option as configured ("true", "false"; "" when it is not configured)
configured_numerics_only() {
  [ -f build/meson-info/intro-buildoptions.json ] || return 0
  python3 -c 'import json, sys
print(next((str(o["value"]).lower() for o in json.load(open(sys.argv[1])) if o["name"] == "numerics-only"), "false"))' \
    build/meson-info/intro-buildoptions.json
}

if [ $numerics_only = 1 ]; then
  if [ -f build/build.ninja ]; then
    echo "setup.sh: build/ is configured (halflab-numerics is in every build of it)" >&2
  else
    meson setup build --buildtype=release -Dnumerics-only=true >&2
  fi
elif [ -f build/build.ninja ] && [ "$(configured_numerics_only)" = true ]; then
  meson setup --reconfigure build -Dnumerics-only=false >&2 # the full build, now that its packages are here
elif [ -f build/build.ninja ] && [ $nccl_installed = 1 ]; then
  meson setup --reconfigure build >&2 # NCCL is new: the configured build/ looks again
elif [ -f build/build.ninja ]; then
  echo "setup.sh: build/ is configured (ninja reconfigures it by itself when meson.build changes)" >&2
else
  meson setup build --buildtype=release >&2
fi

# ---- ml_dtypes, the narrow formats' independent reference: a small pinned pip
# install in its own virtual environment (about 100 MB); the tests that need it
# say they are skipped without it
if [ $numerics_only = 0 ]; then
  rvenv=$(scripts/reference-python.sh --venv)
  if scripts/reference-python.sh >/dev/null 2>&1; then
    echo "setup.sh: ml_dtypes reference ready in $rvenv" >&2
  else
    rpins=$(scripts/reference-python.sh --pins)
    echo "setup.sh: installing the formats' reference ($rpins) into $rvenv" >&2
    log=$(mktemp /tmp/halflab-reference-install.XXXXXX)
    mkdir -p "$(dirname "$rvenv")"
    rm -f "$rvenv/halflab-reference-complete" # written only once pip finished
    # shellcheck disable=SC2086
    if { [ -x "$rvenv/bin/pip" ] || /usr/bin/python3 -m venv "$rvenv" >"$log" 2>&1; } &&
      "$rvenv/bin/pip" install --disable-pip-version-check --no-input -q $rpins >>"$log" 2>&1 &&
      echo "$rpins" >"$rvenv/halflab-reference-complete" && scripts/reference-python.sh >/dev/null 2>>"$log"; then
      rm -f "$log"
    else
      rm -f "$rvenv/halflab-reference-complete"
      why=$(grep -m1 -E 'ERROR|Error|error' "$log" | cut -c1-200)
      echo "setup.sh: could not install ml_dtypes ($rpins): ${why:-see $log}; the tests that compare with it will be skipped" >&2
    fi
  fi
fi

# ---- the PyTorch peer: a pinned pip install in its own virtual environment
if [ $peers = 1 ]; then
  venv=$(scripts/peer-python.sh --venv)
  if scripts/peer-python.sh >/dev/null 2>&1; then
    echo "setup.sh: PyTorch peer ready in $venv" >&2
  else
    pins=$(scripts/peer-python.sh --pins)
    echo "setup.sh: installing the PyTorch peer ($pins) into $venv (about 2.8 GB the first time)" >&2
    log=$(mktemp /tmp/halflab-peer-install.XXXXXX)
    mkdir -p "$(dirname "$venv")"
    # peer-python.sh accepts the venv only once its marker file is written,
    # after pip finished: an interrupted install is never taken for a ready one.
    rm -f "$venv/halflab-peer-complete"
    # shellcheck disable=SC2086
    if { [ -x "$venv/bin/pip" ] || /usr/bin/python3 -m venv "$venv" >"$log" 2>&1; } &&
      "$venv/bin/pip" install --disable-pip-version-check --no-input -q $pins >>"$log" 2>&1 &&
      echo "$pins" >"$venv/halflab-peer-complete" && scripts/peer-python.sh >/dev/null 2>>"$log"; then
      rm -f "$log"
      echo "setup.sh: PyTorch peer ready in $venv" >&2
    else
      rm -f "$venv/halflab-peer-complete"
      why=$(grep -m1 -E 'ERROR|Error|error' "$log" | cut -c1-200)
      echo "setup.sh: could not install the PyTorch peer ($pins) from the package index: ${why:-see $log}; the rest of the set-up is in place" >&2
      exit 1
    fi
  fi
fi
