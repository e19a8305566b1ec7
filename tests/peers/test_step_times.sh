#!/usr/bin/env bash
# test_step_times.sh — suite unit: bench/peers/step_times.py on made-up runs
# of three rounds: each row's median is the median of the rounds' medians
# (not of the pooled steps), min and max are over every timed step, and
# peer_expectations.csv holds every expectation per policy with the right
# ratio, bounds, reason and status (MISS past either bound), SKIP where a side
# did not run or bf16 did not run on bf16 units;
# both files as their column tables say, and --columns-md prints every table.
# Needs the peer's Python (numpy); skipped (77) without it, failed where
# HALFLAB_REQUIRE_PEER=1.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! python=$("$src/scripts/peer-python.sh" 2>/dev/null); then
  [ "${HALFLAB_REQUIRE_PEER:-0}" = 1 ] && { echo "test_step_times: the peer's Python is required" >&2; exit 1; }
  echo "skipped: the peer's Python is not installed (scripts/setup.sh --peers)"
  exit 77
fi
tmp=$(mktemp -d /tmp/halflab-step-times.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/runs"

# IMPL NAME MODE POLICY STEP_MS... : one run's steps and summary (the first step a warm-up)
run() {
  local impl=$1 name=$2 mode=$3 policy=$4
  shift 4
  local prefix=train onednn="# onednn: oneDNN 2.6.3: bf16 GEMMs on its matmul primitive"
  [ "$impl" = pytorch ] && prefix=peer onednn="# attention: sdpa: F.scaled_dot_product_attention"
  [ "${UNITS:-yes}" = no ] && [ "$impl" = halflab ] && onednn="# onednn: oneDNN 2.6.3 built in, not used (HALFLAB_CPU_UNITS=portable)"
  local f=$tmp/runs/${prefix}_${name}_${mode}
  { echo "# device: cpu"; echo "$onednn"; echo "step,step_time_ms"
    local i=1; for ms in "$@"; do echo "$i,$ms"; i=$((i + 1)); done; } >"${f}_steps.csv"
  { echo "# device: cpu"; echo "device,mode,omp_wait_policy,threads,batch,accum,seq,steps_done,timed_steps,final_loss,eval_loss,load_start,load_end"
    echo "cpu,$mode,$policy,2,16,1,128,$#,$(($# - 1)),3.1,3.2,1.0,1.1"; } >"${f}_summary.csv"
}
# halflab fp32 rounds: medians 100, 130, 110 -> 110 (the pooled median would be 105)
run halflab peers-passive-r1 fp32 passive 999 99 100 101
run halflab peers-passive-r2 fp32 passive 999 129 130 131
run halflab peers-passive-r3 fp32 passive 999 60 110 111
for r in 1 2 3; do
  run halflab peers-passive-r$r amp-bf16 passive 999 50 50 50  # 0.4545x fp32: MISS, below 0.5 (fp32 disturbed)
  run pytorch peers-passive-r$r amp-bf16 passive 999 40 40 40  # halflab 1.25x: MISS <= 1.0
  run pytorch peers-passive-r$r fp32 passive 999 121 121 121   # 110 / 121: PASS
  run halflab peers-passive-r$r amp-fp16 passive 999 121 121 121 # 1.1x fp32: PASS (at the limit)
  run halflab peers-default-r$r fp32 default 999 100 100 100
  run halflab peers-default-r$r amp-bf16 default 999 55 55 55   # 0.55x: PASS between 0.5 and 0.6
  run halflab peers-default-r$r amp-fp16 default 999 85 85 85   # 0.85x: MISS, below 0.9 (fp32 disturbed)
done
"$python" "$src/bench/peers/step_times.py" --runs "$tmp/runs" --out "$tmp/times.csv" --expectations "$tmp/expect.csv" \
  --preset small >"$tmp/log"
SRC=$src "$python" - "$tmp" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["SRC"], "bench", "peers"))
import hlfiles
tmp = sys.argv[1]
_, _, rows = hlfiles.read_csv(os.path.join(tmp, "times.csv"))
row = {(r["impl"], r["mode"]): r for r in rows if r["omp_wait_policy"] == "passive"}
f32 = row[("halflab", "fp32")]
assert float(f32["step_time_ms_median"]) == 110.0, f32
assert f32["rounds"] == "3" and f32["run_medians_ms"] == "100.0;130.0;110.0", f32
assert float(f32["step_time_ms_min"]) == 60.0 and float(f32["step_time_ms_max"]) == 131.0, f32  # the warm-up left out
assert f32["timed_steps"] == "9" and f32["run"] == "peers-passive", f32
assert row[("pytorch", "fp32")]["attention"] == "sdpa"
_, _, expectations = hlfiles.read_csv(os.path.join(tmp, "expect.csv"))
t = {r["expectation"]: r for r in expectations}
assert len(t) == 10, list(t)
def check(name, policy, value, status, low, high):
    r = t["%s (%s)" % (name, policy)]
    assert r["status"] == status, r
    assert r["low"] == low and r["high"] == high, r
    assert len(r["reason"]) > 40, r
    if value is None:
        assert r["value"] == "", r
    else:
        assert abs(float(r["value"]) - value) < 1e-4, r
check("amp-bf16 step at most 0.6x halflab's fp32 step", "passive", 50 / 110, "MISS", "0.5", "0.6")
check("amp-bf16 step at most 0.6x halflab's fp32 step", "default", 0.55, "PASS", "0.5", "0.6")
check("amp-bf16 step at most 1.0x PyTorch's amp-bf16 step", "passive", 1.25, "MISS", "", "1")
check("fp32 step at most 1.0x PyTorch's fp32 step", "passive", 110 / 121, "PASS", "", "1")
check("amp-fp16 step 0.9x to 1.1x halflab's fp32 step", "passive", 1.1, "PASS", "0.9", "1.1")
check("amp-fp16 step 0.9x to 1.1x halflab's fp32 step", "default", 0.85, "MISS", "0.9", "1.1")
check("amp-fp16 step at most 1.0x PyTorch's amp-fp16 step", "passive", None, "SKIP", "", "1")  # PyTorch's amp-fp16 did not run
# each file as its column table says: units line, header, one cell per column, integers exact
import re, step_times
for name, schema in (("times.csv", step_times.STEP_TIMES), ("expect.csv", step_times.EXPECTATIONS_SCHEMA)):
    lines = open(os.path.join(tmp, name)).read().splitlines()
    assert "# units: " + schema.units() in lines, (name, lines)
    body = [l for l in lines if not l.startswith("#")]
    assert body[0] == schema.header(), (name, body[0])
    for line in body[1:]:
        cells = line.split(",")
        assert len(cells) == len(schema.columns), (name, line)
        for c, v in zip(schema.columns, cells):
            assert c.kind != hlfiles.INT or v == "" or re.match(r"^-?[0-9]+$", v), (name, c.name, v)
# a row that misses a column, or adds one, is refused
full = {c.name: "" for c in step_times.EXPECTATIONS_SCHEMA.columns}
for bad in ({k: v for k, v in full.items() if k != "detail"}, dict(full, extra="x")):
    try:
        step_times.EXPECTATIONS_SCHEMA.row(bad)
        raise AssertionError("a row with the wrong columns was written")
    except ValueError:
        pass
PY
# --columns-md: every file's section, in the format of halflab-bench --columns-md
"$python" "$src/bench/peers/step_times.py" --columns-md >"$tmp/columns.md"
for f in peer_step_times.csv peer_expectations.csv peer_skipped.csv; do
  grep -qx "## $f" "$tmp/columns.md" || { echo "test_step_times: --columns-md has no section for $f" >&2; exit 1; }
done
grep -qx '| column | unit | type | meaning | computed in |' "$tmp/columns.md" ||
  { echo "test_step_times: --columns-md has no column table" >&2; exit 1; }
grep -qx '| `step_time_ms_median` | ms | real `%.4f` | .* | `bench/peers/step_times.py: summarise` |' "$tmp/columns.md" ||
  { echo "test_step_times: --columns-md: step_time_ms_median's row is not as hl_schema_markdown writes it" >&2; exit 1; }
# bf16 not on bf16 units: both bf16 targets SKIP, naming why
rm -rf "$tmp/runs"/*
UNITS=no run halflab peers-passive-r1 fp32 passive 999 100
UNITS=no run halflab peers-passive-r1 amp-bf16 passive 999 90
run pytorch peers-passive-r1 amp-bf16 passive 999 40
"$python" "$src/bench/peers/step_times.py" --runs "$tmp/runs" --out "$tmp/times.csv" --expectations "$tmp/expect.csv" \
  --preset small >"$tmp/log"
n=$(grep -c '^amp-bf16 .*,SKIP,bf16 products did not run on the CPU.s bf16 units (oneDNN 2.6.3 built in; not used' "$tmp/expect.csv")
[ "$n" = 2 ] || { cat "$tmp/expect.csv" >&2; echo "test_step_times: expected both bf16 expectations SKIP" >&2; exit 1; }
echo "test_step_times: rounds aggregated, expectations right"
