#!/usr/bin/env bash
# tests/setup/gpu_check_rehearsal.sh [--deadline S] — scripts/gpu-check.sh rehearsed here, on a
# machine shaped like the lent GPU node, before a GPU is lent: the working tree copied without
# .git, beside the .deps/ that --fetch-deps prepares (fetched first when missing), run in a mount
# namespace where an overlay on /usr hides every file of the Debian packages gpu-check.sh carries
# and of meson, pkg-config and gnuplot (the node has none of them); nvcc stays, and there is no GPU.
#
#   A  the whole run within its deadline (default 480 s): the carried pkgconf, meson and cmocka
#      used; every GPU stage recorded as no-GPU, none as a crash; exit 3 (no GPU);
#   B  cmocka taken out of the carried files: the programs still build, the tests are skipped
#      and the summary says so;
#   C  B's build again with --keep-build and a 60 s deadline: nothing rebuilt, the stages that
#      do not fit named as skipped, the run over within 60 s;
#   D  A's build again with a GPU test and halflab-bench made not to compile: the build fails,
#      the other targets are built, the GPU tests that were built run, the one that was not is
#      named, the other programs' stages run and halflab-bench's are skipped.
# After each: OUTDIR holds summary.txt and gpu-check.tar.gz only (the node returns at most 8
# files, each under 16 MiB, no folders), the archive holds summary.txt, machine.txt and a log for
# every stage the summary names. Prints the timeline (seconds per stage). Needs root, unshare
# and overlayfs; exit 77 (skipped) without them. .ci/run runs it.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
deadline=480 keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --deadline) deadline=${2:?--deadline needs seconds}; shift ;;
    --keep) keep=1 ;; # leave the scratch folder (trees, outputs) for a look
    *) echo "gpu_check_rehearsal.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
say() { echo "rehearsal: $*" >&2; }
fail() { echo "rehearsal: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || { echo "skipped: the rehearsal needs root (a mount namespace)"; exit 77; }
command -v unshare >/dev/null || { echo "skipped: unshare not found (util-linux)"; exit 77; }
tmp=$(mktemp -d /tmp/halflab-rehearsal.XXXXXX)
trap '[ $keep = 1 ] && echo "rehearsal: kept $tmp" >&2 || rm -rf "$tmp"' EXIT
mkdir -p "$tmp/probe/u" "$tmp/probe/w" "$tmp/probe/m"
if ! unshare -m --propagation private mount -t overlay overlay \
  -o "lowerdir=/usr,upperdir=$tmp/probe/u,workdir=$tmp/probe/w" "$tmp/probe/m" 2>"$tmp/probe.err"; then
  echo "skipped: no overlay mount in a mount namespace here: $(head -1 "$tmp/probe.err")"
  exit 77
fi

# ---- .deps/, as a developer prepares it before a GPU run (downloads only what is not there)
"$src/scripts/gpu-check.sh" --fetch-deps || fail "--fetch-deps failed"
mapfile -t carried < <(sed -n '/^deb_packages=(/,/)$/p' "$src/scripts/gpu-check.sh" | tr -d '()' | sed 's/deb_packages=//' | tr ' ' '\n' | grep -v '^$')
[ ${#carried[@]} -gt 20 ] || fail "could not read gpu-check.sh's package list"

# ---- the node's copy of the tree, as the device gets it: tracked files and untracked ones git does not
# ignore, as they are now; no .git; and .deps/
copy_tree() { # copy_tree DEST
  mkdir -p "$1"
  (cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - 2>/dev/null) | tar -xf - -C "$1"
  cp -r "$src/.deps" "$1/.deps"
}
copy_tree "$tmp/tree-a"
say "tree copied: $(du -sm "$tmp/tree-a" | cut -f1) MiB with .deps/ ($(du -sm "$tmp/tree-a/.deps" | cut -f1) MiB)"

# ---- the node's shape: whiteouts for every file of the hidden packages under /usr
hidden=(meson pkgconf pkg-config pkgconf-bin libpkgconf3 gnuplot-nox gnuplot-data libcmocka-dev
  libopenblas-dev libopenblas-openmp-dev libopenblas0-openmp libopenblas0 libdnnl-dev libdnnl2 libopenmpi-dev)
# and what gpu-check.sh carries (its list, read above)
mkdir -p "$tmp/usr-upper" "$tmp/usr-work"
n=0
for p in "${hidden[@]}" "${carried[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || continue
  while read -r f; do
    case "$f" in /usr/*) ;; *) continue ;; esac
    [ -d "$f" ] && [ ! -L "$f" ] && continue
    rel=${f#/usr/}
    mkdir -p "$tmp/usr-upper/$(dirname "$rel")"
    [ -e "$tmp/usr-upper/$rel" ] || { mknod "$tmp/usr-upper/$rel" c 0 0 && n=$((n + 1)); }
  done < <(dpkg -L "$p")
done
say "hiding $n files of ${#hidden[@]} + ${#carried[@]} packages under /usr"

# in_node DIR COMMAND...: COMMAND in DIR in the namespace, the node's shape checked first
in_node() {
  local dir=$1
  shift
  unshare -m --propagation private bash -c '
    set -e
    mount -t overlay overlay -o "lowerdir=/usr,upperdir=$1,workdir=$2" /usr
    shift 2
    for c in meson pkg-config pkgconf gnuplot mpirun; do
      if command -v $c >/dev/null 2>&1; then echo "rehearsal: $c is still on PATH: $(command -v $c)" >&2; exit 90; fi
    done
    for h in cmocka.h cblas.h oneapi/dnnl/dnnl.h mpi.h; do
      if echo "#include <$h>" | cc -E -x c - >/dev/null 2>&1; then echo "rehearsal: <$h> is still found" >&2; exit 90; fi
    done
    command -v nvcc >/dev/null || { echo "rehearsal: nvcc is not on PATH" >&2; exit 90; }
    cd "$1"
    shift
    exec "$@"' rehearsal "$tmp/usr-upper" "$tmp/usr-work" "$dir" "$@"
}

# check_run NAME OUTDIR RC WANT_RC DEADLINE [FAILED_STAGE]: what every run must leave
check_run() {
  local name=$1 o=$2 rc=$3 want=$4 limit=$5 may_fail=${6:-none}
  [ "$rc" != 90 ] || fail "$name: the namespace does not have the node's shape"
  [ "$rc" = "$want" ] || { cat "$o/summary.txt" >&2 2>/dev/null; fail "$name: gpu-check.sh exited $rc, not $want"; }
  local files
  files=$(cd "$o" && find . -mindepth 1 | sort | tr '\n' ' ')
  [ "$files" = "./gpu-check.tar.gz ./summary.txt " ] || fail "$name: OUTDIR holds '$files', not summary.txt and gpu-check.tar.gz alone"
  for f in "$o"/*; do
    [ "$(stat -c %s "$f")" -lt $((16 * 1024 * 1024)) ] || fail "$name: $f is 16 MiB or more"
  done
  grep -q '^result: ' "$o/summary.txt" || fail "$name: the summary has no result line"
  local took
  took=$(sed -n 's/^result: .*; \([0-9]*\) s of [0-9]*; exit .*/\1/p' "$o/summary.txt")
  [ -n "$took" ] && [ "$took" -le "$limit" ] || fail "$name: took ${took:-?} s, over its deadline of $limit s"
  mkdir -p "$tmp/$name-archive"
  tar -xzf "$o/gpu-check.tar.gz" -C "$tmp/$name-archive" || fail "$name: the archive does not unpack"
  local a=$tmp/$name-archive/gpu-check
  cmp -s "$a/summary.txt" "$o/summary.txt" || fail "$name: the archive's summary.txt is not the final one"
  [ -s "$a/machine.txt" ] || fail "$name: no machine.txt in the archive"
  local s
  for s in $(sed -nE 's/^\[t= *[0-9]+s\] ([a-z0-9-]+) +(ok|FAILED|TIMED-OUT|no-GPU) .*/\1/p' "$o/summary.txt"); do
    [ -s "$a/logs/$s.log" ] || fail "$name: stage $s ran but logs/$s.log is missing or empty"
  done
  if grep -E '^\[t= *[0-9]+s\] ' "$o/summary.txt" | grep -v -E "^\[t= *[0-9]+s\] $may_fail " | grep -q -E ' (FAILED|TIMED-OUT) '; then
    fail "$name: a stage failed:$(grep -E ' (FAILED|TIMED-OUT) ' "$o/summary.txt" | sed 's/^/\n  /')"
  fi
  say "$name: exit $rc in $took s of $limit; $(grep -c '^\[t=' "$o/summary.txt") stages recorded"
}
stage_line() { grep -E "^\[t= *[0-9]+s\] $2 " "$1/summary.txt" | tail -1; }
expect_stage() { # expect_stage NAME OUTDIR STAGE STATUS
  local line
  line=$(stage_line "$2" "$3")
  echo "$line" | grep -q -E "^\[t= *[0-9]+s\] $3 +$4( |\$)" || fail "$1: stage $3 should be $4: '${line:-not recorded}'"
}

# node_run NAME TREE DEADLINE MAY_FAIL ARGS...: gpu-check.sh in TREE in the node's shape, into
# $tmp/out-NAME, then check_run (no GPU: exit 3 wanted)
node_run() {
  local name=$1 tree=$2 limit=$3 may_fail=$4 rc
  shift 4
  set +e
  in_node "$tree" timeout $((limit + 60)) scripts/gpu-check.sh "$tmp/out-${name,,}" --deadline "$limit" "$@"
  rc=$?
  set -e
  check_run "$name" "$tmp/out-${name,,}" $rc 3 "$limit" "$may_fail"
}

export HALFLAB_DEPS_DIR=$tmp/node-deps # gpu-check.sh's cache of unpacked packages
gpu_stages=(numerics gemm-quick bandwidth-quick train-tiny mlp-step footprint dp-gpu peers)

# ---- A: the whole run
say "A: scripts/gpu-check.sh OUT --deadline $deadline --cuda-arch 90, in the node's shape"
node_run A "$tmp/tree-a" "$deadline" none --cuda-arch 90
for s in preflight deps configure build; do expect_stage A "$tmp/out-a" $s ok; done
expect_stage A "$tmp/out-a" gpu-tests no-GPU
for s in "${gpu_stages[@]}"; do expect_stage A "$tmp/out-a" "$s" no-GPU; done
grep -q 'pkg-config: carried pkgconf' "$tmp/out-a/summary.txt" || fail "A: the carried pkgconf was not used"
grep -q 'meson: carried 1\.' "$tmp/out-a/summary.txt" || fail "A: the carried meson was not used"
grep -q 'cmocka, OpenBLAS: carried' "$tmp/out-a/summary.txt" || fail "A: the carried cmocka and OpenBLAS were not used"
grep -q 'Tests: cmocka' "$tmp/out-a/summary.txt" || fail "A: the summary does not say the tests were built"
grep -q 'HALFLAB_REQUIRE_GPU=1 and the GPU could not be used' "$tmp/A-archive/gpu-check/logs/gpu-tests.log" ||
  fail "A: the GPU tests did not fail saying why the GPU could not be used"
grep -q 'no GPU (would rerun: ' "$tmp/out-a/summary.txt" || fail "A: the failed GPU tests were not listed for the sanitizer"
grep -q "^commit: *$(cd "$src" && git rev-parse HEAD) (.deps/source.txt" "$tmp/A-archive/gpu-check/machine.txt" ||
  fail "A: machine.txt does not name the commit from .deps/source.txt"
for v in gcc nvcc ninja meson pkg-config python3 torch nvidia-smi; do
  grep -q "^$v" "$tmp/A-archive/gpu-check/machine.txt" || fail "A: machine.txt does not record $v"
done
ls "$tmp/tree-a/build-gpu/bench/halflab-bench" "$tmp/tree-a/build-gpu/tests/format/test_gpu_half" >/dev/null ||
  fail "A: the programs or the tests were not built"

# ---- B: no cmocka among the carried files
copy_tree "$tmp/tree-b"
mkdir -p "$tmp/root-b"
tar -xJf "$tmp/tree-b/.deps/debian-root.tar.xz" -C "$tmp/root-b"
find "$tmp/root-b" -name '*cmocka*' -exec rm -rf {} +
tar -cf - -C "$tmp/root-b" . | xz -0 -T2 >"$tmp/tree-b/.deps/debian-root.tar.xz"
say "B: the same without cmocka"
node_run B "$tmp/tree-b" "$deadline" none --cuda-arch 90
for s in configure build; do expect_stage B "$tmp/out-b" $s ok; done
expect_stage B "$tmp/out-b" gpu-tests skipped
grep -q 'Tests: not built (cmocka not found' "$tmp/out-b/summary.txt" || fail "B: the summary does not say the tests were not built"
for s in numerics gemm-quick bandwidth-quick train-tiny; do expect_stage B "$tmp/out-b" "$s" no-GPU; done
[ ! -e "$tmp/tree-b/build-gpu/tests/format/test_gpu_half" ] || fail "B: tests were built without cmocka"

# ---- C: B's build kept, a deadline too short for everything
say "C: --keep-build --deadline 60"
node_run C "$tmp/tree-b" 60 none --keep-build --cuda-arch 90
expect_stage C "$tmp/out-c" configure kept
expect_stage C "$tmp/out-c" build ok
! grep -q -E 'Compiling|Linking' "$tmp/C-archive/gpu-check/logs/build.log" || fail "C: --keep-build rebuilt"
grep -q -E ' skipped +0s +needs ~[0-9]+ s, -?[0-9]+ s left before the deadline' "$tmp/out-c/summary.txt" ||
  fail "C: no stage was skipped for the deadline"

# ---- D: A's build kept, a GPU test and halflab-bench broken: the rest is built and runs
say "D: --keep-build, two targets that do not compile"
echo '#error broken on purpose by the rehearsal' >>"$tmp/tree-a/tests/stream/test_stream_gpu.c"
echo '#error broken on purpose by the rehearsal' >>"$tmp/tree-a/bench/bandwidth.c"
node_run D "$tmp/tree-a" "$deadline" build --keep-build
expect_stage D "$tmp/out-d" build FAILED
grep -q -E '^    build: [0-9]+ targets failed' "$tmp/out-d/summary.txt" || fail "D: the summary does not count the failed targets"
expect_stage D "$tmp/out-d" gpu-tests no-GPU
grep -q 'not built (the build failed for them): stream-gpu' "$tmp/D-archive/gpu-check/logs/gpu-tests.log" ||
  fail "D: gpu-tests does not name the GPU test that was not built"
grep -q 'gpu-half' "$tmp/D-archive/gpu-check/logs/gpu-tests.log" || fail "D: the GPU tests that were built did not run"
for s in numerics train-tiny; do expect_stage D "$tmp/out-d" "$s" no-GPU; done
for s in gemm-quick bandwidth-quick mlp-step footprint; do expect_stage D "$tmp/out-d" "$s" skipped; done

# ---- a bad argument: one line, exit 2, nothing written
set +e
msg=$("$src/scripts/gpu-check.sh" "$tmp/out-bad" --deadline 5 2>&1 >/dev/null)
rc=$?
set -e
[ $rc = 2 ] && [ "$(echo "$msg" | wc -l)" = 1 ] && [ ! -e "$tmp/out-bad" ] ||
  fail "--deadline 5: exit $rc, '$msg', $( [ -e "$tmp/out-bad" ] && echo 'folder created')"
set +e
msg=$("$src/scripts/gpu-check.sh" "$tmp/out-a" 2>&1 >/dev/null)
rc=$?
set -e
[ $rc = 2 ] && echo "$msg" | grep -q 'already holds' || fail "a second run into A's folder: exit $rc, '$msg'"

# ---- --import: what comes back, into results/<gpu>/ of a tree, never over what is there
set +e
msg=$(cd "$tmp/tree-b" && scripts/gpu-check.sh --import "$tmp/out-a" 2>&1)
rc=$?
set -e
[ $rc = 2 ] && echo "$msg" | grep -q 'measured nothing' || fail "--import of a run without a GPU: exit $rc, '$msg'"
mkdir -p "$tmp/fake/gpu-check/logs" "$tmp/fake/gpu-check/results/nvidia-test-gpu/peers" "$tmp/fake-out"
echo "result: 13 ok" >"$tmp/fake/gpu-check/summary.txt"
echo "GPU 0: NVIDIA Test GPU" >"$tmp/fake/gpu-check/machine.txt"
echo "gpu suite log" >"$tmp/fake/gpu-check/logs/gpu-testlog.txt"
echo "a,b" >"$tmp/fake/gpu-check/results/nvidia-test-gpu/gemm.csv"
echo "c,d" >"$tmp/fake/gpu-check/results/nvidia-test-gpu/peers/x.csv"
tar -czf "$tmp/fake-out/gpu-check.tar.gz" -C "$tmp/fake" gpu-check
(cd "$tmp/tree-b" && scripts/gpu-check.sh --import "$tmp/fake-out" 2>/dev/null) || fail "--import of a run with results failed"
for f in gemm.csv peers/x.csv gpu-check/summary.txt gpu-check/machine.txt gpu-check/gpu-testlog.txt; do
  [ -f "$tmp/tree-b/results/nvidia-test-gpu/$f" ] || fail "--import: results/nvidia-test-gpu/$f missing"
done
echo "changed" >"$tmp/tree-b/results/nvidia-test-gpu/gemm.csv"
set +e
msg=$(cd "$tmp/tree-b" && scripts/gpu-check.sh --import "$tmp/fake-out" 2>&1)
rc=$?
set -e
[ $rc = 2 ] && echo "$msg" | grep -q 'already holds' && [ "$(cat "$tmp/tree-b/results/nvidia-test-gpu/gemm.csv")" = changed ] ||
  fail "a second --import: exit $rc, '$msg', gemm.csv now '$(cat "$tmp/tree-b/results/nvidia-test-gpu/gemm.csv")'"

echo "summary.txt of A:"
sed 's/^/  | /' "$tmp/out-a/summary.txt"
echo "timeline (seconds per stage, on $(nproc) cores; A: the whole run, B: without cmocka, C: --keep-build, D: a broken build):"
for o in a b c d; do
  echo "  ${o^^}: $(grep -E '^\[t=' "$tmp/out-$o/summary.txt" | sed -E 's/^\[t= *([0-9]+)s\] ([a-z0-9-]+) +([A-Za-z-]+) +([0-9]+)s.*/\2 \3 \4/' |
    awk '{printf "%s%s %s%s", sep, $1, $3, ($2 == "ok" || $2 == "kept") ? "" : " (" $2 ")"; sep = ", "}')"
done
echo "gpu-check rehearsal: A, B, C and D held"
