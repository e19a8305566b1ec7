#!/usr/bin/env bash
# setup_numerics_only.sh — suite e2e: `scripts/setup.sh --numerics-only` on a
# machine that has only a C compiler, meson, ninja, gnuplot and poppler-utils
# (dpkg-query answers for exactly those; apt-get records its call and fails)
# installs nothing, configures build/ with -Dnumerics-only=true without
# looking up OpenBLAS, oneDNN, MPI or cmocka, and a second run changes
# nothing; the full setup.sh, on the same machine, asks for OpenBLAS and
# cmocka. --numerics-only with --peers is refused (exit 2). setup.sh runs in a
# scratch tree (links to the sources, a copy of scripts/), so nothing of the
# real tree is touched, and without nvcc on PATH (as on a lecturer's laptop;
# meson may still find a toolkit in /usr/local/cuda, which changes nothing here).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/halflab-setup-numerics.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "setup-numerics-only: $*" >&2; exit 1; }

mkdir -p "$tmp/tree" "$tmp/bin"
for entry in "$src"/*; do
  case "$(basename "$entry")" in
    build | build-* | builddir | scripts | results) ;;
    *) ln -s "$entry" "$tmp/tree/$(basename "$entry")" ;;
  esac
done
cp -r "$src/scripts" "$tmp/tree/scripts"

installed="gcc libc6-dev meson ninja-build gnuplot-nox poppler-utils"
cat >"$tmp/bin/dpkg-query" <<EOF
#!/bin/sh
# the last argument is the package; "installed" only for the numerics tool set
for last; do :; done
for p in $installed; do [ "\$p" = "\$last" ] && { printf 'install ok installed'; exit 0; }; done
exit 1
EOF
cat >"$tmp/bin/apt-get" <<EOF
#!/bin/sh
echo "apt-get \$*" >>"$tmp/apt-get.log"
exit 1
EOF
chmod +x "$tmp/bin/dpkg-query" "$tmp/bin/apt-get"
# PATH without nvcc: setup.sh's NCCL step does not apply
path=$tmp/bin
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do [ -x "$d/nvcc" ] || path=$path:$d; done

run_setup() { (cd "$tmp/tree" && PATH=$path scripts/setup.sh "$@"); }

# --- the numerics set is enough: nothing installed, build/ configured alone
run_setup --numerics-only >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "setup.sh --numerics-only failed"; }
[ ! -e "$tmp/apt-get.log" ] || fail "setup.sh --numerics-only installed: $(cat "$tmp/apt-get.log")"
[ -f "$tmp/tree/build/build.ninja" ] || fail "build/ not configured"
python3 -c 'import json, sys
o = [o for o in json.load(open(sys.argv[1])) if o["name"] == "numerics-only"]
sys.exit(0 if o and o[0]["value"] is True else 1)' "$tmp/tree/build/meson-info/intro-buildoptions.json" ||
  fail "build/ is not configured with -Dnumerics-only=true"
log=$tmp/tree/build/meson-logs/meson-log.txt
if looked=$(grep -iE "dependency '?(openblas|cmocka|dnnl|mpi)\b|oneapi/dnnl" "$log"); then
  fail "a numerics-only configure looked up: $looked"
fi
grep -q 'halflab-numerics alone' "$tmp/err" || fail "the configure summary does not say halflab-numerics is built alone"

# --- a second run changes nothing
cp "$tmp/tree/build/build.ninja" "$tmp/build.ninja.before"
run_setup --numerics-only >/dev/null 2>"$tmp/err2" || { cat "$tmp/err2" >&2; fail "a second run failed"; }
cmp -s "$tmp/tree/build/build.ninja" "$tmp/build.ninja.before" || fail "a second run changed build/"
[ ! -e "$tmp/apt-get.log" ] || fail "a second run installed: $(cat "$tmp/apt-get.log")"

# --- the full set-up on the same machine wants the libraries (so the fake dpkg-query is read)
set +e
run_setup >/dev/null 2>"$tmp/err3"
rc=$?
set -e
[ $rc != 0 ] || fail "the full setup.sh passed with only the numerics packages installed"
wanted=$(cat "$tmp/err3" "$tmp/apt-get.log" 2>/dev/null)
for p in libopenblas-dev libcmocka-dev; do
  grep -q "$p" <<<"$wanted" || fail "the full setup.sh does not ask for $p: $wanted"
done

# --- --peers needs the full build
set +e
run_setup --numerics-only --peers >/dev/null 2>"$tmp/err4"
rc=$?
set -e
[ $rc = 2 ] && [ "$(wc -l <"$tmp/err4")" = 1 ] || { cat "$tmp/err4" >&2; fail "--numerics-only --peers: exit $rc, not 2 with one line"; }
echo "setup-numerics-only: the numerics tool set suffices, build/ configured alone, nothing looked up beyond it"
