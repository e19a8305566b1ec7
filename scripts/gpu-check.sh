#!/usr/bin/env bash
# scripts/gpu-check.sh [OUTDIR] — on a machine with an NVIDIA GPU: configure
# with the CUDA backend, build, run the gpu test suite, then the quick GPU
# measurements, in that order of priority. After every stage it rewrites ONE
# archive, OUTDIR/gpu-check.tar.gz (logs + CSVs under results/<gpu>/), so a
# run cut short still brings back what it did. Budget: about 5 minutes on one
# H200 for build + tests + probes (an estimate: not yet run; the GPU ranks'
# test adds seconds); later stages are bounded by their timeouts.
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
#       Open MPI too (libopenmpi3, openmpi-bin and the libraries they load; 7 MB),
#       for the GPU ranks' test (train-nccl: one rank under mpirun over NCCL):
#       unpacked when the node has no MPI of its own, used when its programs load
#       here (OPAL_PREFIX and PMIx's prefix moved to /tmp/deps), else
#       the build goes without MPI and train-nccl skips, saying why.
#
# NCCL (GPU ranks): the toolkit's, else the pip wheel of the node's CUDA
# PyTorch (meson asks scripts/nccl-wheel.sh; $PEER_PYTHON, as for the peers'
# stage, names that Python where python3 is not it). The wheel itself (about
# 250 MB) is too big to carry. The configure summary's MPI and NCCL lines go
# into summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

deps_list=(libcmocka0 libcmocka-dev libopenblas0-openmp libopenblas-openmp-dev libgfortran5 libquadmath0
           libdnnl2 libdnnl-dev ocl-icd-libopencl1)
mpi_debs=(libopenmpi3 libopenmpi-dev openmpi-bin openmpi-common libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1
          libhwloc15 libibverbs1 ibverbs-providers libmunge2 libnl-3-200 libnl-route-3-200 libnuma1 libpmix2
          libpsm-infinipath1 libpsm2-2 librdmacm1 libucx0)
deps_list+=("${mpi_debs[@]}")
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

# Open MPI (GPU ranks' test): the node's own where mpirun runs and meson can find the library,
# else the one in .deps/ if its programs load here
node_mpi() { mpirun --version && { pkg-config --exists ompi-c || pkg-config --exists mpich || mpicc -show || mpicc --showme; }; } >/dev/null 2>&1
if ! node_mpi && ls .deps/libopenmpi3_*.deb >/dev/null 2>&1; then
  D=/tmp/deps
  mkdir -p $D
  for p in "${mpi_debs[@]}"; do for f in .deps/${p}_*.deb; do [ -f "$f" ] && dpkg -x "$f" $D; done; done
  lib=$D/usr/lib/x86_64-linux-gnu
  mpilibs=$lib:$lib/openmpi/lib
  if missing=$(LD_LIBRARY_PATH=$mpilibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd $D/usr/bin/orterun $lib/libmpi.so.40 2>&1 |
               grep 'not found'); then
    note "Open MPI from .deps/ does not load here ($(echo "$missing" | head -1 | tr -s ' \t' ' ')): building without MPI"
  else
    mkdir -p $D/mpi-bin # Debian names mpirun through alternatives, which dpkg -x does not make
    ln -sf $D/usr/bin/orterun $D/mpi-bin/mpirun
    export PATH=$D/mpi-bin:$PATH
    export OPAL_PREFIX=$D/usr                  # Open MPI's components and help files, moved
    export PMIX_PREFIX=$lib/pmix2 PMIX_PKGDATADIR=$lib/pmix2/share/pmix PMIX_MCA_mca_base_component_path=$lib/pmix2/lib/pmix # PMIx's
    export LD_LIBRARY_PATH=$mpilibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    if [ -z "${PKG_CONFIG_SYSROOT_DIR:-}" ]; then # the node's pkg-config: a copy of Open MPI's file with its prefix moved
      mkdir -p $D/mpi-pc
      sed "s|^prefix=/usr\$|prefix=$D/usr|" $lib/openmpi/lib/pkgconfig/ompi-c.pc >$D/mpi-pc/ompi-c.pc
      export PKG_CONFIG_PATH=$D/mpi-pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    fi # else .deps/'s pkg-config folder, in PKG_CONFIG_LIBDIR above, has it under the sysroot
    note "using Open MPI unpacked from .deps/ into $D"
  fi
fi
[ -n "${PEER_PYTHON:-}" ] && export HALFLAB_NCCL_PYTHON=$PEER_PYTHON # the node's CUDA PyTorch may carry NCCL's wheel

build=$root/build-gpu
rm -rf "$build"
stage configure 120 meson setup "$build" --buildtype=release -Dcuda=enabled -Donednn=$onednn || exit 1
note "$(grep -E '^ *(MPI|NCCL) \(data' "$work/logs/configure.log" | tr -s ' ')"
stage build 300 ninja -C "$build" || exit 1

# 1. correctness: the CUDA backend against the CPU backend, and GPU ranks (train-nccl: 1 rank over NCCL,
#    four 6-step runs of the tiny GPT, side by side with the other tests; 30 s more allowed for it)
stage gpu-tests 270 meson test -C "$build" --suite gpu --print-errorlogs --num-processes 4
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
# data-parallel: one process against one rank per GPU over NCCL (train-all.sh's dp-gpu group; skipped,
# saying why, without GPU ranks or mpirun)
stage dp-gpu 150 "$root/scripts/train-all.sh" "$build" --only dp-gpu --out "$work/results/$(basename "$("$root/scripts/results-dir.sh" "$build" cuda 2>/dev/null || echo gpu)")"
# halflab vs PyTorch (the image's CUDA torch) on the gpt2 preset: fp32, amp-fp16 (GradScaler), amp-bf16;
# peer_step_times.csv holds amp-fp16 / fp32 and halflab / PyTorch AMP from one run
stage peers 360 "$root/bench/peers/gpu_compare.sh" "$build"
note "done; archive: $archive"
pack
