#!/usr/bin/env bash
# scripts/gpu/check.sh: runs THERE, on the GPU machine, from the repository root, after
# scripts/gpu/build.sh here (the call carries .device-bin). Correctness on a real GPU:
#   1. the GPU test binaries (gpu_tests, and streams_tests / tracing_tests where built);
#   2. every example's self-checks (`--quick`: the checks at every shape, short timings; `--full`:
#      the examples' whole runs) — each prints "-> ok" or "FAILED" per check;
#   3. compute-sanitizer memcheck, racecheck and synccheck on a sample of examples (`--quick`),
#      with the failed-check count beside each summary (a kernel can be wrong under a tool
#      without the tool reporting a hazard);
#   4. every kernel's PTX through this machine's ptxas (sm_90a): spills;
#   5. `randn` against Triton's `tl.randn` (bench/python/randn_vs_triton.py), where Triton is
#      installed.
#
# Usage: bash scripts/gpu/check.sh [--full] [--sanitize "fused_softmax gemm ..."] [--no-sanitize]
# Environment: B (binaries, default .device-bin), OUT (results, default bench-out/, git-ignored),
#   SAN_TIMEOUT (seconds per sanitizer run, default 300).
# Writes: $OUT/summary.txt and $OUT/check-logs.tgz. Exit status 0 when everything passed.
set -uo pipefail
# .device-bin travels packed (scripts/gpu/build.sh).
if [ ! -d .device-bin ] && [ -f .device-pack/device-bin.tar.xz ]; then
  tar -xJf .device-pack/device-bin.tar.xz
fi
B=${B:-.device-bin}
OUT=${OUT:-bench-out}
QUICK=--quick
SANITIZE="fused_softmax fused_layernorm gemm softmax_regression cross_entropy fused_bias_gelu_dropout moe_align conv_bn_relu rmsnorm_linear linear_cross_entropy softmax_regression_backward"
while [ $# -gt 0 ]; do
  case "$1" in
    --full) QUICK=""; shift ;;
    --sanitize) SANITIZE="$2"; shift 2 ;;
    --no-sanitize) SANITIZE=""; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
PY=$B/bench; [ -f "$PY/join.py" ] || PY=bench
L="$OUT/check-logs"
mkdir -p "$L"
S="$OUT/summary.txt"
: > "$S"
FAILED=0
say() { echo "$*" | tee -a "$S"; }
fail() { FAILED=1; say "FAIL: $*"; }
checks() { echo "$(grep -c -- '-> ok' "$1") checks ok, $(grep -c FAILED "$1") failed"; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$L/device.txt" | sed 's/^/device: /' | tee -a "$S"
[ -x "$B/gpu_tests" ] || fail "no $B/gpu_tests: run scripts/gpu/build.sh here and carry .device-bin"

for t in gpu streams tracing; do
  bin="$B/${t}_tests"
  [ -x "$bin" ] || continue
  timeout 600 "$bin" --test-threads=1 --nocapture > "$L/${t}_tests.log" 2>&1
  rc=$?
  say "${t}_tests: exit $rc, $(grep -E 'test result' "$L/${t}_tests.log" | tail -1)"
  [ $rc = 0 ] || fail "${t}_tests"
done

for f in "$B"/*; do
  ex=$(basename "$f")
  [ -x "$f" ] && [ -f "examples/$ex/main.rs" ] || continue
  timeout 600 "$f" $QUICK > "$L/$ex.log" 2>&1
  rc=$?
  say "$ex: exit $rc, $(checks "$L/$ex.log")"
  { [ $rc = 0 ] && ! grep -q FAILED "$L/$ex.log"; } || fail "$ex"
done

for ex in $SANITIZE; do
  [ -x "$B/$ex" ] || { say "sanitizers: no $B/$ex, skipped"; continue; }
  for tool in memcheck racecheck synccheck; do
    log="$L/$tool.$ex.log"
    timeout "${SAN_TIMEOUT:-300}" compute-sanitizer --tool $tool "$B/$ex" --quick > "$log" 2>&1
    rc=$?
    say "$tool $ex: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1 | sed 's/^=* *//'), $(checks "$log")"
    { [ $rc = 0 ] && ! grep -q FAILED "$log"; } || fail "$tool $ex"
  done
done

if command -v ptxas > /dev/null && ls "$B"/ptx/*.sm_90a.ptx > /dev/null 2>&1; then
  n=0; spills=0
  for f in "$B"/ptx/*.sm_90a.ptx; do
    r=$(ptxas -arch=sm_90a -v "$f" -o /dev/null 2>&1)
    n=$((n + 1))
    echo "$(basename "$f") $(echo "$r" | grep -oE 'Used [0-9]+ registers')" >> "$L/registers.log"
    if echo "$r" | grep -qE '[1-9][0-9]* bytes spill (stores|loads)'; then
      spills=$((spills + 1)); echo "SPILL $(basename "$f"): $(echo "$r" | grep -E 'spill' | tr '\n' ' ')" >> "$L/spills.log"
    fi
  done
  say "ptxas $(ptxas --version | tail -1 | sed 's/.*release //'): $n kernels for sm_90a, $spills with spills"
  [ $spills = 0 ] || fail "spills (check-logs/spills.log)"
fi

if [ -x "$B/gpu_tests" ] && python3 -c "import triton" 2> /dev/null; then
  TILE_RANDN_OUT=/tmp/tile_randn.bin "$B/gpu_tests" --test-threads=1 gpu_randn_matches_the_interpreter > /dev/null 2>&1
  python3 "$PY/python/randn_vs_triton.py" /tmp/tile_randn.bin > "$L/randn_vs_triton.log" 2>&1 || fail "randn_vs_triton"
  say "$(head -1 "$L/randn_vs_triton.log")"
  rm -f /tmp/tile_randn.bin
fi

tar -C "$OUT" -czf "$OUT/check-logs.tgz" check-logs && rm -rf "$L"
echo; [ $FAILED = 0 ] && echo "all passed" || echo "SOME CHECKS FAILED (logs in $OUT/check-logs.tgz)"
exit $FAILED
