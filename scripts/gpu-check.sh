#!/usr/bin/env bash
# scripts/gpu-check.sh [OUTDIR] — on a machine with an NVIDIA GPU: configure
# with the CUDA backend, build, run the gpu test suite, then the quick GPU
# measurements, in that order of priority. After every stage it rewrites ONE
# archive, OUTDIR/gpu-check.tar.gz (logs + CSVs under results/<gpu>/), so a
# run cut short still brings back what it did. Budget: about 5 minutes on one
# H200 for build + tests + probes; later stages are bounded by their timeouts.
#
#   scripts/gpu-check.sh --fetch-deps   (on a Debian machine with network)
#       downloads the Debian packages a bare GPU node lacks (cmocka, OpenBLAS,
#       oneDNN with the OpenCL loader its library links) into .deps/
#       (git-ignored); carry .deps/ to the GPU node, where this script unpacks
#       them under /tmp/deps when pkg-config (cmocka, OpenBLAS) or the compiler
#       (oneDNN's header) cannot find them. oneDNN's other dependencies
#       (libgomp1, libstdc++6, libgcc-s1, libc6) come with any gcc. oneDNN is
#       optional: where its library does not load (the node's libraries older
#       than Debian 12's) the build goes without it, bf16 on the widening path.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

deps_list=(libcmocka0 libcmocka-dev libopenblas0-openmp libopenblas-openmp-dev libgfortran5 libquadmath0
           libdnnl2 libdnnl-dev ocl-icd-libopencl1)
if [ "${1:-}" = "--fetch-deps" ]; then
  mkdir -p .deps && cd .deps && apt-get download "${deps_list[@]}"
  exit $?
fi

out=$(mkdir -p "${1:-gpu-check-out}" && cd "${1:-gpu-check-out}" && pwd)
work=$(mktemp -d /tmp/halflab-gpu-check.XXXXXX)
mkdir -p "$work/logs"
archive=$out/gpu-check.tar.gz
started=$SECONDS

pack() { # rewrite the archive with everything so far
  tar czf "$archive.tmp" -C "$work" logs $( [ -d "$work/results" ] && echo results ) && mv "$archive.tmp" "$archive"
}
note() { echo "[gpu-check $((SECONDS - started))s] $*" | tee -a "$work/logs/summary.txt" >&2; }
stage() { # stage NAME TIMEOUT_S COMMAND... : logs/NAME.log, status in summary.txt, archive rewritten
  local name=$1 limit=$2
  shift 2
  note "stage $name: $*"
  timeout "$limit" "$@" >"$work/logs/$name.log" 2>&1
  local rc=$?
  note "stage $name: exit $rc$( [ $rc = 124 ] && echo ' (timed out)')"
  pack
  return $rc
}

{
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown) $([ -n "$(git status --porcelain 2>/dev/null)" ] && echo '(uncommitted changes)')"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.sm,clocks.max.sm,ecc.mode.current,mig.mode.current --format=csv 2>&1
  nvcc --version | tail -2
} >"$work/logs/machine.txt" 2>&1
pack

# A bare GPU node has no cmocka / OpenBLAS development files: use .deps/.
if ! pkg-config --exists cmocka openblas 2>/dev/null && ls .deps/*.deb >/dev/null 2>&1; then
  D=/tmp/deps
  mkdir -p $D
  for f in .deps/*.deb; do dpkg -x "$f" $D; done
  export PKG_CONFIG_SYSROOT_DIR=$D
  export PKG_CONFIG_LIBDIR=$D/usr/lib/x86_64-linux-gnu/pkgconfig:$D/usr/lib/x86_64-linux-gnu/openblas-openmp/pkgconfig
  export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  note "using Debian packages unpacked from .deps/ into $D"
fi

# oneDNN (optional, bf16 GEMM on the CPU): the node's own, else the one in .deps/ if its library loads here
onednn=auto
if ! echo '#include <oneapi/dnnl/dnnl.h>' | cc -E -x c - >/dev/null 2>&1 && ls .deps/libdnnl-dev_*.deb >/dev/null 2>&1; then
  D=/tmp/deps
  mkdir -p $D
  for f in .deps/libdnnl2_*.deb .deps/libdnnl-dev_*.deb .deps/ocl-icd-libopencl1_*.deb; do dpkg -x "$f" $D; done
  lib=$D/usr/lib/x86_64-linux-gnu
  if missing=$(LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd $lib/libdnnl.so.2 2>&1 | grep 'not found'); then
    onednn=disabled
    note "oneDNN from .deps/ does not load here ($(echo "$missing" | head -1 | tr -s ' \t' ' ')): building without it"
  else
    export CPATH=$D/usr/include${CPATH:+:$CPATH}
    export LIBRARY_PATH=$lib${LIBRARY_PATH:+:$LIBRARY_PATH}
    case ":${LD_LIBRARY_PATH:-}:" in *":$lib:"*) ;; *) export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;; esac
    note "using oneDNN unpacked from .deps/ into $D"
  fi
fi

build=$root/build-gpu
rm -rf "$build"
stage configure 120 meson setup "$build" --buildtype=release -Dcuda=enabled -Donednn=$onednn || exit 1
stage build 300 ninja -C "$build" || exit 1

# 1. correctness: the CUDA backend against the CPU backend
stage gpu-tests 240 meson test -C "$build" --suite gpu --print-errorlogs --num-processes 4
cp "$build/meson-logs/testlog.txt" "$work/logs/gpu-testlog.txt" 2>/dev/null && pack

# 2. measurements, written under results/<gpu>/ in the work folder (whatever
# the caller's $HALFLAB_RESULTS says: the archive packs this folder)
unset HALFLAB_RESULTS
mkdir -p "$work/results"
cd "$work"
measure() { # measure NAME TIMEOUT PROGRAM ARGS... : a stage running a built program
  local name=$1 limit=$2 exe=$build/$3
  shift 3
  if [ -x "$exe" ]; then stage "$name" "$limit" "$exe" "$@"; else note "$(basename "$exe") not built: $name skipped"; fi
}
measure numerics 120 numerics/halflab-numerics all --device auto
measure gemm-quick 240 bench/halflab-bench gemm --quick --device cuda
measure bandwidth-quick 180 bench/halflab-bench bandwidth --quick --device cuda
measure mlp-step 120 bench/halflab-bench mlp-step --quick --device cuda
measure footprint 120 bench/halflab-bench footprint --device cuda
measure train-tiny 180 train/halflab-train --mode amp-fp16 --device cuda
# halflab vs PyTorch (the image's CUDA torch) on the gpt2 preset: fp32, amp-fp16 (GradScaler), amp-bf16;
# peer_step_times.csv holds amp-fp16 / fp32 and halflab / PyTorch AMP from one run
stage peers 360 "$root/bench/peers/gpu_compare.sh" "$build"
note "done; archive: $archive"
pack
