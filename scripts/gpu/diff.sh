#!/usr/bin/env bash
# scripts/gpu/diff.sh: runs THERE, on the GPU machine, from the repository root, after
# `scripts/gpu/build.sh --diff-only` (or `--diff`) here; the call carries .device-pack.
# Differential testing: the saved findings (tile-fuzz/regressions/), then N generated kernels,
# each compiled there, run on the interpreter and on the GPU with the same inputs, the outputs
# compared (tile-fuzz/src/diff/mod.rs). Prints the counts per outcome and the cases to replay; a
# sample also runs under compute-sanitizer.
#
# Usage: bash scripts/gpu/diff.sh [--count N] [--seed S] [--first I] [--target sm_80]
#                                 [--jobs J] [--sanitize K] [--sanitize-tools "memcheck racecheck"]
#   --count N       cases (default 2000), case numbers I .. I+N of seed S (default 1, I 0)
#   --target T      run the PTX of target T (TILE_TARGET), e.g. sm_80 on a Hopper GPU
#   --sanitize K    also run the first K cases under each compute-sanitizer tool, in one process
#   --replay "I J"  also replay these cases of seed S one by one, verbose, each mismatch shrunk;
#                   with REPLAY_MEMCHECK=1 under memcheck (which names a fault's instruction
#                   and address)
# Environment: OUT (results, default bench-out/, git-ignored).
# Writes: $OUT/regressions.txt, $OUT/diff.txt (the report), $OUT/diff-findings.tgz (each failed case's kernel, its
# minimized form and its replay command), $OUT/sanitize-*.txt, $OUT/replays.txt.
set -uo pipefail
COUNT=2000; SEED=1; FIRST=0; JOBS=$(nproc); SAN=0; TOOLS="memcheck racecheck synccheck"; REPLAY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --count) COUNT="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --first) FIRST="$2"; shift 2 ;;
    --target) export TILE_TARGET="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --sanitize) SAN="$2"; shift 2 ;;
    --sanitize-tools) TOOLS="$2"; shift 2 ;;
    --replay) REPLAY="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "diff.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
X=/tmp/tile-diff
if [ ! -x "$X/tile-fuzz" ]; then
  mkdir -p "$X" && tar -C "$X" -xJf .device-pack/diff.tar.xz || { echo "diff.sh: no .device-pack/diff.tar.xz (scripts/gpu/build.sh --diff-only)"; exit 2; }
fi
export LD_LIBRARY_PATH="$X/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/device: /'
echo "tester: $(cat "$X/MANIFEST"), target ${TILE_TARGET:-newest}"
# The saved findings first (tile-fuzz/regressions/: each kernel with its launch): each must agree.
for f in tile-fuzz/regressions/*.rs; do
  "$X/tile-fuzz" diff --text "$f" 2>&1 | tail -1 | cut -c1-200
done | tee "$OUT/regressions.txt"
grep -qE ': (mismatch|launch-error|interpreter-error|compile-bug|crash)' "$OUT/regressions.txt" && echo "REGRESSION: a saved finding fails again"
"$X/tile-fuzz" diff --seed "$SEED" --first "$FIRST" --count "$COUNT" --jobs "$JOBS" --out /tmp/diff-findings 2>"$OUT/diff-progress.txt" | tee "$OUT/diff.txt"
RC=${PIPESTATUS[0]}
[ -d /tmp/diff-findings ] && tar -C /tmp -czf "$OUT/diff-findings.tgz" diff-findings
for tool in $([ "$SAN" -gt 0 ] && echo $TOOLS); do
  timeout 500 compute-sanitizer --tool "$tool" --print-limit 20 "$X/tile-fuzz" diff --in-process --seed "$SEED" --first "$FIRST" --count "$SAN" --out /tmp/diff-san > "$OUT/sanitize-$tool.txt" 2>&1
  echo "$tool, cases $FIRST..$((FIRST + SAN)): exit $?, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$tool.txt" | tail -1 | sed 's/^=* *//')"
done
for i in $REPLAY; do
  echo "===== case $i" >> "$OUT/replays.txt"
  WRAP=(); [ "${REPLAY_MEMCHECK:-0}" = 1 ] && WRAP=(compute-sanitizer --tool memcheck --print-limit 5)
  timeout 300 "${WRAP[@]}" "$X/tile-fuzz" diff --seed "$SEED" --case "$i" > /tmp/replay.txt 2>&1
  cat /tmp/replay.txt >> "$OUT/replays.txt"
  echo "replay $i: $(grep -E '^// (equal|within|mismatch|launch|interp|compile|rejected)' /tmp/replay.txt | head -1 | cut -c1-200)"
done
exit "$RC"
