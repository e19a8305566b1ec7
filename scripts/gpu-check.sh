#!/usr/bin/env bash
# scripts/gpu-check.sh — halflab's check on a machine with an NVIDIA GPU, made for a lent GPU node:
# one command of at most 10 minutes, a node with nvcc, ninja and python3 but none of halflab's
# Debian packages, and files back only from one folder (at most 8 files of 16 MiB each).
#
#   scripts/gpu-check.sh --fetch-deps
#       Here, on Debian 12 with network: fills .deps/ (git-ignored) with what a bare node lacks:
#         debian-root.tar.xz  the files of the Debian packages listed below (cmocka, OpenBLAS,
#                             oneDNN, Open MPI and the libraries they load, pkgconf), static
#                             libraries and documentation left out; packages.txt names them
#         meson.pyz           meson (pinned below) from its PyPI wheel, as a zipapp
#         source.txt          the commit and whether the tree had changes (the node gets no .git)
#       About 18 MiB; with the working tree (about 21 MiB) some 40 MiB travel, well under the
#       node's 64 MiB. Run it again right before carrying .deps/: where the packages and meson
#       are there already it only rewrites source.txt.
#
#   scripts/gpu-check.sh OUTDIR [--deadline S] [--keep-build] [--cuda-arch LIST]
#       On the GPU node (carry .deps/). Stages in order of value, each one's log written straight
#       to OUTDIR/running.log while it runs:
#         preflight  versions of gcc, nvcc, meson, ninja, pkg-config, python, torch; nvidia-smi's
#                    GPU, driver, clocks, compute mode (machine.txt)
#         deps       the node's own tools and libraries where it has them, else .deps/'s
#         configure  meson setup build-gpu (-Dtests=auto: without cmocka the programs alone)
#         build      ninja -k 0: a target that fails leaves the others built
#         gpu-tests  meson test --suite gpu with HALFLAB_REQUIRE_GPU=1 (a GPU test that cannot
#                    use the GPU fails, saying why, instead of skipping)
#         numerics, gemm-quick, bandwidth-quick, train-tiny  the GPU's first numbers
#         sanitizer  each failed GPU test once more under compute-sanitizer (memcheck)
#         mlp-step, footprint, dp-gpu (one GPU rank over NCCL), peers (PyTorch on the GPU)
#       A stage that would not fit before the deadline (default 480 s from the start) is skipped
#       and named; one that overruns its share is stopped. Between stages OUTDIR holds exactly
#       two files: summary.txt (plain text: a line per stage, the expectations, the result) and
#       gpu-check.tar.gz (gpu-check/: summary.txt, machine.txt, logs/, results/<gpu>/ with the
#       CSVs). Exit 0: every stage that ran passed on a GPU; 1: a stage failed or timed out;
#       2: bad usage; 3: no GPU was found (every GPU stage then says "no GPU").
#       --keep-build reuses build-gpu/ from an earlier call (a second call on a warm node does
#       not rebuild); --cuda-arch 90 builds for that architecture only (default: the GPU's).
#       The running stage's CSVs reach the archive when it ends; the deadline keeps the node's
#       10-minute limit from cutting one short.
#
#   scripts/gpu-check.sh --import OUTDIR
#       Back here: the archive's results/<gpu>/ into results/<gpu>/, with summary.txt, machine.txt
#       and the gpu suite's log in results/<gpu>/gpu-check/; refuses to overwrite anything.
#
# Times (seconds), from tests/setup/gpu_check_rehearsal.sh on the 2-core development VM with no
# GPU, and as expected on an H100 node (16 cores; not yet measured there) — docs/gpu-check.md
# has the table. On a GPU the budget is the build (~90 s on 16 cores), gpu-tests
# (~120 s: 2^32-input sweeps) and the measurements (~30-60 s each).
set -uo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."
root=$(pwd)
me="gpu-check.sh"
# "$self --stage-fn FUNCTION ARGS...": one of the functions below in a process of its own, so that
# `timeout` can stop it and everything it started (the run's state comes in the environment)
stage_fn=()
if [ "${1:-}" = --stage-fn ]; then
  shift
  stage_fn=("$@")
  set --
fi

# ------------------------------------------------------------------ what is carried
# Debian 12 packages a bare node lacks. oneDNN's other dependencies (libgomp1, libstdc++6,
# libgcc-s1, libc6) come with any gcc.
deb_packages=(libcmocka0 libcmocka-dev libopenblas0-openmp libopenblas-openmp-dev libgfortran5 libquadmath0
  libdnnl2 libdnnl-dev ocl-icd-libopencl1
  libopenmpi3 libopenmpi-dev openmpi-bin openmpi-common libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1
  libhwloc15 libibverbs1 ibverbs-providers libmunge2 libnl-3-200 libnl-route-3-200 libnuma1 libpmix2
  libpsm-infinipath1 libpsm2-2 librdmacm1 libucx0
  pkgconf pkgconf-bin libpkgconf3)
meson_pin=meson==1.5.2

usage="usage: scripts/gpu-check.sh OUTDIR [--deadline S] [--keep-build] [--cuda-arch LIST] | --fetch-deps | --import OUTDIR | --help"
die_usage() { echo "$me: $*" >&2; exit 2; }

write_source_txt() {
  {
    echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
    if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
      echo "changes: uncommitted changes to tracked files ($(git diff HEAD | sha256sum | cut -c1-12))"
    else
      echo "changes: none"
    fi
    echo "written: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >.deps/source.txt
}
deps_current() { # .deps/ holds the packages and the meson named here
  [ -f .deps/debian-root.tar.xz ] && [ -f .deps/meson.pyz ] &&
    [ "$(cut -d' ' -f1 .deps/packages.txt 2>/dev/null | sort)" = "$(printf '%s\n' "${deb_packages[@]}" | sort)" ] &&
    [ "$(python3 .deps/meson.pyz --version 2>/dev/null)" = "${meson_pin#meson==}" ]
}
fetch_deps() {
  if deps_current; then
    write_source_txt
    echo "$me: .deps/ is up to date; source.txt names $(git rev-parse --short HEAD 2>/dev/null || echo '?')" >&2
    return 0
  fi
  command -v apt-get >/dev/null || die_usage "--fetch-deps needs apt-get (a Debian 12 machine)"
  fetch_tmp=$(mktemp -d /tmp/halflab-fetch-deps.XXXXXX)
  trap 'rm -rf "$fetch_tmp"' EXIT
  local tmp=$fetch_tmp
  mkdir -p "$tmp/debs" "$tmp/root" "$tmp/meson" .deps
  (cd "$tmp/debs" && apt-get download "${deb_packages[@]}") >"$tmp/apt.log" 2>&1 ||
    { echo "$me: apt-get download failed: $(grep -m1 -E '^E:' "$tmp/apt.log")" >&2; exit 1; }
  : >"$tmp/packages.txt"
  for f in "$tmp"/debs/*.deb; do
    dpkg-deb -x "$f" "$tmp/root"
    echo "$(dpkg-deb -f "$f" Package) $(dpkg-deb -f "$f" Version) $(sha256sum "$f" | cut -c1-16)" >>"$tmp/packages.txt"
  done
  # what the node needs: shared libraries, headers, pkg-config files, programs, Open MPI's help and
  # components; not static libraries, LAPACK, Fortran modules, documentation or manuals
  find "$tmp/root" -name '*.a' -delete
  rm -rf "$tmp"/root/usr/share/{doc,man,lintian,bug} "$tmp"/root/usr/lib/x86_64-linux-gnu/fortran \
    "$tmp"/root/usr/lib/x86_64-linux-gnu/openblas-openmp/liblapack.so.3
  tar -cJf .deps/debian-root.tar.xz.tmp -C "$tmp/root" . && mv .deps/debian-root.tar.xz.tmp .deps/debian-root.tar.xz
  mv "$tmp/packages.txt" .deps/packages.txt
  # meson as a zipapp: the wheel's package and a __main__ that starts it
  python3 -m pip download --no-deps --disable-pip-version-check -q -d "$tmp/wheel" "$meson_pin" >"$tmp/pip.log" 2>&1 ||
    { echo "$me: pip download $meson_pin failed: $(grep -m1 -i error "$tmp/pip.log")" >&2; exit 1; }
  python3 -m zipfile -e "$tmp"/wheel/meson-*.whl "$tmp/meson"
  printf 'import sys\nfrom mesonbuild import mesonmain\nsys.exit(mesonmain.main())\n' >"$tmp/meson/__main__.py"
  python3 -c 'import sys, zipapp; zipapp.create_archive(sys.argv[1], sys.argv[2], "/usr/bin/env python3", compressed=True)' \
    "$tmp/meson" .deps/meson.pyz.tmp && mv .deps/meson.pyz.tmp .deps/meson.pyz
  rm -f .deps/*.deb .deps/debian-root.tar.gz # earlier layouts
  write_source_txt
  local deps_kib tree_kib
  deps_kib=$(du -sk .deps | cut -f1)
  tree_kib=$(git ls-files -z | xargs -0 du -ck 2>/dev/null | tail -1 | cut -f1)
  echo "$me: .deps/ ready: $(wc -l <.deps/packages.txt) Debian packages, $meson_pin; $((deps_kib / 1024)) MiB," \
    "with the working tree's $((tree_kib / 1024)) MiB: $(((deps_kib + tree_kib) / 1024)) MiB to carry" >&2
}

# ------------------------------------------------------------------ build and tests
# Run through "$self --stage-fn" under timeout; the state they read is exported by the run:
# build, box, cuda_arch, gpu, onednn.
find_sanitizer() {
  local c
  for c in "$(command -v compute-sanitizer 2>/dev/null)" "$(dirname "$(command -v nvcc 2>/dev/null || echo /x/x)")/compute-sanitizer" \
    /usr/local/cuda/compute-sanitizer/compute-sanitizer /usr/local/cuda/bin/compute-sanitizer; do
    [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
  done
  return 1
}
configure() {
  local arch=$cuda_arch
  if [ -z "$arch" ] && [ $gpu = 1 ]; then
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  fi
  rm -rf "$build"
  meson setup "$build" --buildtype=release -Dcuda=enabled -Dtests=auto -Donednn=$onednn ${arch:+-Dcuda-arch=$arch}
}
build_all() { # ninja -k 0; what depends on a failed step loses its earlier copy (--keep-build)
  ninja -C "$build" -k 0 2>&1 | tee "$build/.gpu-check-ninja.log"
  local rc=${PIPESTATUS[0]} next=() seen=" " t
  [ $rc = 0 ] && return 0
  # everything downstream of a failed step is out of date: an earlier build's program would
  # otherwise run as if this build had made it
  mapfile -t next < <(sed -n 's/^FAILED: //p' "$build/.gpu-check-ninja.log" | tr ' ' '\n' | grep -v '^$')
  while [ ${#next[@]} -gt 0 ]; do
    t=${next[0]}
    next=("${next[@]:1}")
    case "$seen" in *" $t "*) continue ;; esac
    seen="$seen$t "
    [ -f "$build/$t" ] && case "$t" in *.o) ;; *) rm -f "$build/$t" && echo "gpu-check.sh: not rebuilt, earlier copy removed: $t" ;; esac
    mapfile -t -O ${#next[@]} next < <(ninja -C "$build" -t query "$t" 2>/dev/null | sed -n '/^  outputs:$/,$ s/^    //p')
  done
  return $rc
}
gpu_tests() { # the gpu suite's tests that were built (meson refuses to run any while one is missing)
  local built=() missing=() line rc
  while read -r line; do
    case "$line" in built\ *) built+=("${line#built }") ;; missing\ *) missing+=("${line#missing }") ;; esac
  done < <(python3 -c '
import json, os, sys
for t in json.load(open(os.path.join(sys.argv[1], "meson-info", "intro-tests.json"))):
    if any(s.endswith(":gpu") for s in t["suite"]):
        print(("built " if os.path.exists(t["cmd"][0]) else "missing ") + t["name"])' "$build")
  [ ${#missing[@]} -eq 0 ] || echo "not built (the build failed for them): ${missing[*]}"
  [ ${#built[@]} -gt 0 ] || return 1
  HALFLAB_REQUIRE_GPU=1 meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 4 "${built[@]}"
  rc=$?
  [ ${#missing[@]} -eq 0 ] || rc=1
  cp "$build/meson-logs/testlog.txt" "$box/logs/gpu-testlog.txt" 2>/dev/null
  cp "$build/meson-logs/testlog.json" "$box/logs/gpu-testlog.json" 2>/dev/null
  return $rc
}
failed_gpu_tests() { # the gpu suite's failures, by name, from the stage's log
  grep -E '^ *[0-9]+/[0-9]+ [^ ]+:gpu / [^ ]+ +(FAIL|TIMEOUT|ERROR)' "$box/logs/gpu-tests.log" 2>/dev/null |
    sed -E 's|.*:gpu / ([^ ]+) .*|\1|' | awk '!seen[$0]++' # meson lists a failure twice: as it ends, and at the end
}
sanitize() { # sanitize SECONDS TEST...: each failed GPU test once more under compute-sanitizer's memcheck,
  # SECONDS each at most; a line per test says what memcheck found (the failures are gpu-tests')
  local sanitizer per_test=$1 t line
  shift
  sanitizer=$(find_sanitizer) || { echo "sanitizer: compute-sanitizer not found: no reruns"; return 0; }
  for t in "$@"; do
    echo "== $t under $sanitizer --tool memcheck (at most $per_test s)"
    HALFLAB_REQUIRE_GPU=1 timeout -k 5 "$per_test" meson test -C "$build" --no-rebuild --print-errorlogs --timeout-multiplier 10 \
      --wrapper "$sanitizer --tool memcheck --error-exitcode 99 --print-limit 20" "$t" >"$box/logs/sanitizer-$t.log" 2>&1
    case $? in
      0) echo "sanitizer: $t: passed under memcheck, no memcheck errors" ;;
      124 | 137) echo "sanitizer: $t: stopped after $per_test s (memcheck slows a test 10-100x)" ;;
      *) line=$(grep -m1 -E "/ $t +(FAIL|TIMEOUT|ERROR)" "$box/logs/sanitizer-$t.log")
        case "$line" in
          *"exit status 99"*) echo "sanitizer: $t: memcheck reported errors (logs/sanitizer-$t.log)" ;;
          *) echo "sanitizer: $t: failed again, no memcheck errors: ${line:-see logs/sanitizer-$t.log}" ;;
        esac ;;
    esac
  done
  return 0
}
have_tests() { [ -f "$build/meson-info/intro-tests.json" ] && grep -q '"halflab:gpu"' "$build/meson-info/intro-tests.json"; }
program() { [ -x "$build/$1" ]; }

if [ ${#stage_fn[@]} -gt 0 ]; then
  "${stage_fn[@]}"
  exit $?
fi

# ------------------------------------------------------------------ --import
# What a GPU node brought back, into results/<gpu>/: the CSVs as the programs wrote them, and
# summary.txt, machine.txt and the gpu suite's log under results/<gpu>/gpu-check/. Nothing that is
# there already is overwritten.
import_run() {
  local from=${1:-} tmp slug dest clash
  [ -n "$from" ] || die_usage "--import takes the folder a run wrote (summary.txt, gpu-check.tar.gz)"
  [ -f "$from/gpu-check.tar.gz" ] || die_usage "'$from' holds no gpu-check.tar.gz"
  import_tmp=$(mktemp -d /tmp/halflab-gpu-import.XXXXXX)
  trap 'rm -rf "$import_tmp"' EXIT
  tmp=$import_tmp
  tar -xzf "$from/gpu-check.tar.gz" -C "$tmp" || { echo "$me: $from/gpu-check.tar.gz does not unpack" >&2; exit 1; }
  slug=$(ls "$tmp/gpu-check/results" 2>/dev/null)
  [ -n "$slug" ] || die_usage "the run in '$from' measured nothing (no results/ in its archive): $(grep -m1 '^result: ' "$tmp/gpu-check/summary.txt")"
  [ "$(echo "$slug" | wc -l)" = 1 ] || die_usage "the archive holds results of several machines: $(echo $slug)"
  dest=results/$slug
  mkdir -p "$tmp/gpu-check/results/$slug/gpu-check"
  cp "$tmp/gpu-check/summary.txt" "$tmp/gpu-check/machine.txt" "$tmp/gpu-check/results/$slug/gpu-check/"
  cp "$tmp/gpu-check/logs/gpu-testlog.txt" "$tmp/gpu-check/results/$slug/gpu-check/" 2>/dev/null
  clash=$(cd "$tmp/gpu-check/results/$slug" && find . -type f | while read -r f; do [ -e "$root/$dest/$f" ] && echo "${f#./}"; done)
  [ -z "$clash" ] || die_usage "$dest already holds $(echo "$clash" | head -3 | tr '\n' ' ')(and perhaps more): move them away first"
  mkdir -p "$dest" && cp -r "$tmp/gpu-check/results/$slug/." "$dest/" || { echo "$me: could not write $dest" >&2; exit 1; }
  echo "$me: imported into $dest: $(cd "$tmp/gpu-check/results/$slug" && find . -type f | wc -l) files; next: ninja -C build plots, then commit $dest" >&2
}

# ------------------------------------------------------------------ arguments
out_arg="" deadline=480 keep_build=0 cuda_arch=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fetch-deps) fetch_deps; exit 0 ;;
    --import) import_run "${2:-}"; exit 0 ;;
    -h | --help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$self"; exit 0 ;;
    --deadline) deadline=${2-}; shift ;;
    --deadline=*) deadline=${1#*=} ;;
    --keep-build) keep_build=1 ;;
    --cuda-arch) cuda_arch=${2-}; shift ;;
    --cuda-arch=*) cuda_arch=${1#*=} ;;
    -*) die_usage "unknown option '$1' ($usage)" ;;
    *) [ -z "$out_arg" ] || die_usage "one output folder, not '$out_arg' and '$1'"; out_arg=$1 ;;
  esac
  shift
done
[ -n "$out_arg" ] || die_usage "$usage"
case "$deadline" in '' | *[!0-9]*) die_usage "--deadline takes whole seconds, not '$deadline'" ;; esac
[ "$deadline" -ge 60 ] && [ "$deadline" -le 3600 ] || die_usage "--deadline must be 60 to 3600 seconds, not $deadline"
case "$cuda_arch" in *[!0-9\;]*) die_usage "--cuda-arch takes architectures like 90 or '80;90', not '$cuda_arch'" ;; esac
if [ -e "$out_arg" ] && [ ! -d "$out_arg" ]; then die_usage "output folder '$out_arg' is a file"; fi
for f in summary.txt gpu-check.tar.gz; do
  [ -e "$out_arg/$f" ] && die_usage "'$out_arg' already holds an earlier run's $f: give another folder"
done
mkdir -p "$out_arg" 2>/dev/null && [ -w "$out_arg" ] || die_usage "cannot write to output folder '$out_arg'"
out=$(cd "$out_arg" && pwd)

# ------------------------------------------------------------------ the run's record
started=$SECONDS
reserve=10 # kept back for the last archive
work=$(mktemp -d /tmp/halflab-gpu-check.XXXXXX)
box=$work/gpu-check # what the archive holds
mkdir -p "$box/logs" "$box/results"
summary=$out/summary.txt
gpu=0 gpu_why="" gpu_name="" failed=() ok=() skipped=() nogpu=()
build=$root/build-gpu

left() { echo $((started + deadline - reserve - SECONDS)); }
say() { printf '%s\n' "$*" >>"$summary"; printf '%s: %s\n' "$me" "$*" >&2; }
record() { # record NAME STATUS SECONDS [DETAIL]
  printf '[t=%4ds] %-16s %-10s %4ss%s\n' $((SECONDS - started)) "$1" "$2" "$3" "${4:+  $4}" >>"$summary"
  printf '%s: %s %s (%ss)%s\n' "$me" "$1" "$2" "$3" "${4:+: $4}" >&2
}
pack() { # the archive, rewritten whole and renamed into place: a cut run keeps the last one
  cp "$summary" "$box/summary.txt"
  tar -czf "$out/.gpu-check.tar.gz.tmp" -C "$work" gpu-check 2>/dev/null || return 0
  if [ "$(stat -c %s "$out/.gpu-check.tar.gz.tmp")" -gt $((15 * 1024 * 1024)) ]; then
    # over the node's 16 MiB a file: shorten the longest logs to their first and last lines
    find "$box/logs" -type f -size +1M | while read -r f; do
      { head -c 200000 "$f"; printf '\n[... gpu-check.sh cut this log to fit the archive ...]\n'; tail -c 800000 "$f"; } >"$f.cut"
      mv "$f.cut" "$f"
    done
    tar -czf "$out/.gpu-check.tar.gz.tmp" -C "$work" gpu-check 2>/dev/null || return 0
  fi
  mv "$out/.gpu-check.tar.gz.tmp" "$out/gpu-check.tar.gz"
}
first_error() { # the line of a log that best says what went wrong
  grep -m1 -E 'FAILED:|error:|Error:|ERROR|halflab-[a-z]+: ' "$1" 2>/dev/null | cut -c1-200 ||
    grep -v '^\s*$' "$1" | tail -1 | cut -c1-200
}

# stage NAME NEED CAP KIND COMMAND...: runs COMMAND (a program, or with KIND inline a function of
# this script) with its output in OUTDIR/running.log, then logs/NAME.log. NEED: the seconds it
# needs at least, else it is skipped; CAP: the most it may take. KIND gpu: without a GPU its
# failure is recorded as "no GPU".
stage() {
  local name=$1 need=$2 cap=$3 kind=$4 t0=$SECONDS rc avail limit
  shift 4
  avail=$(left)
  if [ "$avail" -lt "$need" ]; then
    record "$name" skipped 0 "needs ~${need} s, ${avail} s left before the deadline"
    skipped+=("$name")
    return 3
  fi
  limit=$((cap < avail ? cap : avail))
  echo "== $name: $* (limit ${limit} s)" >"$out/running.log"
  if [ "$kind" = inline ]; then # a function that sets up this shell: short, not stopped
    "$@" >>"$out/running.log" 2>&1 </dev/null
  elif [ "$(type -t "$1")" = function ]; then
    timeout -k 5 "$limit" "$self" --stage-fn "$@" >>"$out/running.log" 2>&1 </dev/null
  else
    timeout -k 5 "$limit" "$@" >>"$out/running.log" 2>&1 </dev/null
  fi
  rc=$?
  mv "$out/running.log" "$box/logs/$name.log"
  local took=$((SECONDS - t0))
  if [ "$kind" = gpu ] && [ $gpu = 0 ]; then # nothing ran on a GPU, whatever the exit status
    record "$name" "no-GPU" "$took" "exit $rc: $(first_error "$box/logs/$name.log")"
    nogpu+=("$name")
  elif [ $rc = 0 ]; then
    record "$name" ok "$took" "$(grep -m1 -i -E '(skipped|skipping)[: ]' "$box/logs/$name.log" | cut -c1-160)"
    ok+=("$name")
  elif [ $rc = 124 ] || [ $rc = 137 ]; then
    record "$name" "TIMED-OUT" "$took" "stopped at its limit of ${limit} s (logs/$name.log)"
    failed+=("$name")
  else
    record "$name" "FAILED" "$took" "exit $rc: $(first_error "$box/logs/$name.log")"
    failed+=("$name")
  fi
  pack
  return $rc
}

# ------------------------------------------------------------------ preflight
version_of() { # version_of NAME COMMAND...: one line
  local v
  if v=$("${@:2}" 2>&1 | grep -v '^\s*$' | head -1) && [ -n "$v" ]; then printf '%-16s %s\n' "$1:" "$v"; else printf '%-16s not found\n' "$1:"; fi
}
preflight() {
  echo "date:            $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  if git rev-parse HEAD >/dev/null 2>&1; then
    echo "commit:          $(git rev-parse HEAD)$([ -n "$(git status --porcelain --untracked-files=no)" ] && echo ' (uncommitted changes)')"
  elif [ -f .deps/source.txt ]; then
    echo "commit:          $(sed -n 's/^commit: //p' .deps/source.txt) (.deps/source.txt; $(sed -n 's/^changes: //p' .deps/source.txt))"
  else
    echo "commit:          unknown (no .git, no .deps/source.txt)"
  fi
  echo "host:            $(uname -srm), $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}"), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "cpu:             $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "deadline:        $deadline s"
  version_of gcc gcc --version
  version_of nvcc sh -c 'nvcc --version | tail -2 | head -1'
  version_of ninja ninja --version
  version_of meson meson --version
  version_of pkg-config pkg-config --version
  version_of python3 python3 --version
  version_of torch timeout 60 python3 -c 'import torch; c = torch.cuda.is_available(); print(torch.__version__, "CUDA", torch.version.cuda, "GPU:", torch.cuda.get_device_name(0) if c else "none visible")'
  version_of mpirun sh -c 'mpirun --version | head -1'
  version_of gnuplot gnuplot --version
  version_of dpkg-deb dpkg-deb --version
  local sanitizer
  sanitizer=$(find_sanitizer) && version_of compute-sanitizer sh -c "'$sanitizer' --version | tail -1" ||
    echo "compute-sanitizer: not found"
  echo
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "nvidia-smi: not found"
    return 0
  fi
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,pci.bus_id,compute_cap,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,compute_mode,persistence_mode,ecc.mode.current,mig.mode.current,temperature.gpu --format=csv 2>&1
  nvidia-smi --query-gpu=clocks_event_reasons.active --format=csv 2>&1 # newer drivers only
  nvidia-smi 2>&1 | head -20
}

# ------------------------------------------------------------------ deps
# The node's own tools and libraries where it has them, else .deps/'s, unpacked once into $D (a
# second call on a warm node finds them). Carried libraries go on LD_LIBRARY_PATH only where the
# node has no library of that name, so none of them shadows a newer one of the node's.
D=${HALFLAB_DEPS_DIR:-/tmp/halflab-deps}
onednn=auto
carried_ready=0
unpack_carried() {
  [ $carried_ready = 1 ] && return 0
  local tarball=.deps/debian-root.tar.xz stamp
  [ -f $tarball ] || { echo "no $tarball: run scripts/gpu-check.sh --fetch-deps first"; return 1; }
  stamp=$(cksum <$tarball)
  if [ "$(cat "$D/.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$D/root" && mkdir -p "$D/root" || return 1
    if command -v xz >/dev/null 2>&1; then
      tar -xJf $tarball -C "$D/root" || return 1
    else # python's lzma, where the node has no xz
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $tarball "$D/root" || return 1
    fi
    echo "$stamp" >"$D/.stamp"
    echo "unpacked $tarball into $D/root"
  fi
  # libraries the node lacks, by name, in one folder for LD_LIBRARY_PATH
  rm -rf "$D/lib" && mkdir -p "$D/lib"
  local known f name
  known=$(ldconfig -p 2>/dev/null | awk '/=>/ {print $NF}')
  for f in "$D"/root/usr/lib/x86_64-linux-gnu/*.so.* "$D"/root/usr/lib/x86_64-linux-gnu/openblas-openmp/*.so.* \
    "$D"/root/usr/lib/x86_64-linux-gnu/openmpi/lib/*.so.*; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    if echo "$known" | grep -q "/$name\$" && [ -e "$(echo "$known" | grep -m1 "/$name\$")" ]; then continue; fi
    ln -sf "$f" "$D/lib/$name"
  done
  export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "carried libraries the node lacks: $(ls "$D/lib" | wc -l) (in $D/lib, on LD_LIBRARY_PATH)"
  carried_ready=1
}
deps() {
  mkdir -p "$D/bin"
  export PATH=$D/bin:$PATH
  local carried=0
  # pkg-config
  if command -v pkg-config >/dev/null 2>&1 && ! [ "$(command -v pkg-config)" = "$D/bin/pkg-config" ]; then
    echo "pkg-config: the node's ($(pkg-config --version))"
  else
    unpack_carried || return 1
    carried=1
    printf '#!/bin/sh\nexec "%s/root/usr/bin/pkgconf" "$@"\n' "$D" >"$D/bin/pkg-config"
    chmod +x "$D/bin/pkg-config"
    echo "pkg-config: carried pkgconf $(pkg-config --version)"
  fi
  # meson
  if command -v meson >/dev/null 2>&1 && ! [ "$(command -v meson)" = "$D/bin/meson" ] && meson --version >/dev/null 2>&1; then
    echo "meson: the node's ($(meson --version))"
  elif [ -f .deps/meson.pyz ]; then
    printf '#!/bin/sh\nexec python3 "%s/.deps/meson.pyz" "$@"\n' "$root" >"$D/bin/meson"
    chmod +x "$D/bin/meson"
    meson --version >/dev/null 2>&1 || { echo "the carried meson does not run: $(meson --version 2>&1 | tail -1)"; return 1; }
    echo "meson: carried $(meson --version) (.deps/meson.pyz)"
  else
    echo "meson: not on this node and not carried (run scripts/gpu-check.sh --fetch-deps)"
    return 1
  fi
  # cmocka and OpenBLAS: the node's if its pkg-config finds both, else the carried ones
  if [ $carried = 0 ] && pkg-config --exists cmocka openblas 2>/dev/null; then
    echo "cmocka, OpenBLAS: the node's"
  elif [ -f .deps/debian-root.tar.xz ]; then
    unpack_carried || return 1
    export PKG_CONFIG_SYSROOT_DIR=$D/root
    export PKG_CONFIG_LIBDIR=$D/root/usr/lib/x86_64-linux-gnu/pkgconfig:$D/root/usr/lib/x86_64-linux-gnu/openblas-openmp/pkgconfig
    echo "cmocka, OpenBLAS: carried (pkg-config reads only $D/root)"
  else
    echo "cmocka, OpenBLAS: not on this node and not carried: configure will say what is missing"
  fi
  # oneDNN (optional): the node's, else the carried one where its library loads here
  if echo '#include <oneapi/dnnl/dnnl.h>' | cc -E -x c - >/dev/null 2>&1; then
    echo "oneDNN: the node's"
  elif [ -d "$D/root/usr/include/oneapi" ]; then
    local missing
    if missing=$(ldd "$D/root/usr/lib/x86_64-linux-gnu/libdnnl.so.2" 2>&1 | grep 'not found'); then
      onednn=disabled
      echo "oneDNN: the carried one does not load here ($(echo "$missing" | head -1 | tr -s ' \t' ' ')): built without it"
    else
      export CPATH=$D/root/usr/include${CPATH:+:$CPATH}
      export LIBRARY_PATH=$D/root/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
      echo "oneDNN: carried"
    fi
  fi
  # Open MPI (GPU ranks' test): the node's where mpirun runs and meson can find it, else the carried one
  if mpirun --version >/dev/null 2>&1 && { pkg-config --exists ompi-c || pkg-config --exists mpich || mpicc -show || mpicc --showme; } >/dev/null 2>&1; then
    echo "MPI: the node's"
  elif [ -x "$D/root/usr/bin/orterun" ]; then
    local lib=$D/root/usr/lib/x86_64-linux-gnu missing
    if missing=$(ldd "$D/root/usr/bin/orterun" "$lib/libmpi.so.40" 2>&1 | grep 'not found'); then
      echo "MPI: the carried Open MPI does not load here ($(echo "$missing" | head -1 | tr -s ' \t' ' ')): built without MPI"
    else
      ln -sf "$D/root/usr/bin/orterun" "$D/bin/mpirun" # Debian names mpirun through alternatives, which tar does not make
      export OPAL_PREFIX=$D/root/usr                  # Open MPI's components and help files, moved
      export PMIX_PREFIX=$lib/pmix2 PMIX_PKGDATADIR=$lib/pmix2/share/pmix PMIX_MCA_mca_base_component_path=$lib/pmix2/lib/pmix
      if [ -z "${PKG_CONFIG_SYSROOT_DIR:-}" ]; then # the node's pkg-config: a copy of Open MPI's file with its prefix moved
        mkdir -p "$D/mpi-pc"
        sed "s|^prefix=/usr\$|prefix=$D/root/usr|" "$lib/openmpi/lib/pkgconfig/ompi-c.pc" >"$D/mpi-pc/ompi-c.pc"
        export PKG_CONFIG_PATH=$D/mpi-pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
      else
        export PKG_CONFIG_LIBDIR=$PKG_CONFIG_LIBDIR:$lib/openmpi/lib/pkgconfig
      fi
      echo "MPI: carried Open MPI"
    fi
  else
    echo "MPI: none: built without it (train-nccl skips, saying why)"
  fi
  [ -n "${PEER_PYTHON:-}" ] && export HALFLAB_NCCL_PYTHON=$PEER_PYTHON # the node's CUDA PyTorch may carry NCCL's wheel
  return 0
}

# ------------------------------------------------------------------ the run
export build box cuda_arch gpu onednn
: >"$summary"
say "halflab gpu-check, $(date -u +%Y-%m-%dT%H:%M:%SZ): deadline ${deadline} s$([ $keep_build = 1 ] && echo ', --keep-build')"
stage preflight 5 60 inline preflight
cp "$box/logs/preflight.log" "$box/machine.txt"
if command -v nvidia-smi >/dev/null 2>&1 && gpu_list=$(nvidia-smi -L 2>&1) && echo "$gpu_list" | grep -q '^GPU '; then
  gpu=1
  gpu_name=$(echo "$gpu_list" | sed -n '1s/^GPU 0: \(.*\) (UUID.*/\1/p')
  say "GPU: ${gpu_name:-$(echo "$gpu_list" | head -1)} ($(echo "$gpu_list" | grep -c '^GPU ') listed by nvidia-smi)"
else
  gpu_why=$( { command -v nvidia-smi >/dev/null && echo "nvidia-smi: $(echo "${gpu_list:-}" | head -1)"; } || echo "nvidia-smi not found")
  say "GPU: none ($gpu_why): the GPU stages run to show they fail cleanly, and are recorded as no-GPU"
fi
pack
stage deps 5 60 inline deps
deps_rc=$?
grep -E '^(pkg-config|meson|cmocka|oneDNN|MPI)' "$box/logs/deps.log" | sed 's/^/    /' >>"$summary"

built=0
if [ $keep_build = 1 ] && [ -f "$build/build.ninja" ]; then
  record configure kept 0 "--keep-build: $build as an earlier call configured it"
  built=1
elif [ $deps_rc != 0 ]; then
  record configure skipped 0 "the deps stage failed"
  skipped+=(configure)
else
  stage configure 20 180 cpu configure && built=1
  grep -E '^ *(CUDA backend|BLAS|oneDNN|MPI|NCCL|Tests) ' "$box/logs/configure.log" | sed -E 's/^ */    /; s/ +: /: /' >>"$summary"
  cp "$build/meson-logs/meson-log.txt" "$box/logs/meson-log.txt" 2>/dev/null
fi
if [ $built = 1 ]; then
  stage build 30 420 cpu build_all
  [ -f "$box/logs/build.log" ] && n=$(grep -c '^FAILED: ' "$box/logs/build.log") && [ "$n" -gt 0 ] &&
    say "    build: $n targets failed; the stages below run what was built"
else
  record build skipped 0 "not configured"
  skipped+=(build)
fi

# 1. correctness: the CUDA backend against the CPU backend on the same inputs
if have_tests; then
  stage gpu-tests 30 300 gpu gpu_tests
  if [ -f "$box/logs/gpu-tests.log" ]; then # a line per test, as meson ends it
    grep -E '^ *[0-9]+/[0-9]+ [^ ]+:gpu / ' "$box/logs/gpu-tests.log" | awk '!seen[$4]++' | tr -s ' ' | sed 's/^ */    /' >>"$summary"
  fi
else
  record gpu-tests skipped 0 "tests not built (cmocka not found, or the build failed before them)"
  skipped+=(gpu-tests)
fi

# 2. the first numbers, written to results/<machine>/ in the archive (whatever $HALFLAB_RESULTS says)
unset HALFLAB_RESULTS
measure() { # measure NAME NEED CAP PROGRAM ARGS...: a built program, run in the archive's folder
  local name=$1 need=$2 cap=$3 exe=$4
  shift 4
  if program "$exe"; then
    cd "$box" && stage "$name" "$need" "$cap" gpu "$build/$exe" "$@"
    cd "$root"
  else
    record "$name" skipped 0 "$(basename "$exe") not built"
    skipped+=("$name")
  fi
}
numerics_device=$([ $gpu = 1 ] && echo auto || echo cuda) # auto: the CPU beside the GPU; without one, fail fast
measure numerics 15 120 numerics/halflab-numerics all --device "$numerics_device"
measure gemm-quick 30 150 bench/halflab-bench gemm --quick --device cuda
measure bandwidth-quick 20 120 bench/halflab-bench bandwidth --quick --device cuda
measure train-tiny 20 150 train/halflab-train --mode amp-fp16 --device cuda

# 3. a failed GPU test once more under compute-sanitizer
mapfile -t to_sanitize < <(failed_gpu_tests)
if [ ${#to_sanitize[@]} -gt 0 ] && [ $gpu = 1 ]; then
  stage sanitizer 30 240 gpu sanitize $(( ($(left) < 240 ? $(left) : 240) / ${#to_sanitize[@]} )) "${to_sanitize[@]}"
  grep '^sanitizer: ' "$box/logs/sanitizer.log" 2>/dev/null | sed 's/^/    /' >>"$summary"
elif [ ${#to_sanitize[@]} -gt 0 ]; then
  record sanitizer skipped 0 "no GPU (would rerun: ${to_sanitize[*]})"
  skipped+=(sanitizer)
fi

# 4. the rest
measure mlp-step 15 90 bench/halflab-bench mlp-step --quick --device cuda
measure footprint 10 90 bench/halflab-bench footprint --device cuda
# the folder the measurements above wrote into: results/<machine>/, named after the GPU; where none
# did (no GPU), a scratch folder outside the archive's results/
slug=$(ls "$box/results" 2>/dev/null | head -1)
more_results=$([ -n "$slug" ] && echo "$box/results/$slug" || echo "$work/unmeasured")
if program train/halflab-train; then
  cd "$box" && stage dp-gpu 30 150 gpu "$root/scripts/train-all.sh" "$build" --only dp-gpu --out "$more_results"
  cd "$box" && stage peers 60 360 gpu "$root/bench/peers/gpu_compare.sh" "$build" --out "$more_results"
  cd "$root"
else
  record dp-gpu skipped 0 "halflab-train not built"
  record peers skipped 0 "halflab-train not built"
  skipped+=(dp-gpu peers)
fi

# ------------------------------------------------------------------ the expectations and the result
expectations=$(find "$box/results" -name '*_expectations.csv' 2>/dev/null | sort)
if [ -n "$expectations" ]; then
  say "expectations (from the programs' *_expectations.csv):"
  for f in $expectations; do
    awk -F, -v file="$(basename "$f")" '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next }
      { printf "    %-5s %s (%s)\n", $c["status"], $c["expectation"], file }' "$f" >>"$summary"
  done
fi
if [ $gpu = 0 ]; then
  rc=3
elif [ ${#failed[@]} -gt 0 ]; then
  rc=1
else
  rc=0
fi
say "result: ${#ok[@]} ok, ${#failed[@]} failed${failed:+ (${failed[*]})}, ${#nogpu[@]} no-GPU, ${#skipped[@]} skipped${skipped:+ (${skipped[*]})}; $((SECONDS - started)) s of ${deadline}; exit $rc"
say "archive: gpu-check.tar.gz (gpu-check/summary.txt, machine.txt, logs/, results/)"
pack
rm -rf "$work"
exit $rc
