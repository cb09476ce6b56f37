#!/usr/bin/env bash
# scripts/gpu/bench.sh: runs THERE, on the GPU machine, from the repository root, after
# scripts/gpu/build.sh here (the call carries .device-bin). Times tile against PyTorch and Triton
# the same way (docs/perf/RESULTS.md, "How to reproduce"):
#   1. tile-bench: every example family, fused and unfused, and the ported Triton tutorials
#      (family `tutorials`), checked against float64, timed;
#   2. bench/python/baseline.py: PyTorch, cuBLAS and the public Triton kernels on the same cases
#      (for `tutorials`, the tutorials' own kernels: bench/python/tutorials.py);
#   3. bench/join.py: one joined table (joined.md) with ratios, % of copy, TFLOP/s, and plots.
#
# Usage: bash scripts/gpu/bench.sh [--filter SUBSTR] [--graph-all] [--quick]
#                                  [--attn-parts A,B] [--attn-dtypes A,B]
#   --filter SUBSTR  only the families whose name contains SUBSTR (both sides)
#   --graph-all      CUDA-graph timings for every case (default: only launch-bound ones)
#   --quick          small shapes, few repetitions (a smoke test of the whole path)
#   --attn-parts A,B / --attn-dtypes A,B   the flash_attention family in parts (both sides): its
#                    baselines do not fit one call (scripts/gpu/README.md, "Attention in parts")
# Environment: B (binaries, default .device-bin), OUT (results, default bench-out/, git-ignored),
#   TILE_BENCH_TIMEOUT / BASELINE_TIMEOUT (seconds per side, default 400; the two run one after
#   the other, so keep their sum under a call's limit), BASELINE_ARGS (more arguments for
#   baseline.py alone, split on spaces, e.g. "--attn-impls sdpa_cudnn,triton").
# Writes: $OUT/joined.md, $OUT/summary.txt, and $OUT/bench.tgz (tile.json, tile.md,
#   baseline.json, joined.md, logs, plots/ and joined_plots/): the device tool brings back only a
#   few files, so the folder is packed.
set -uo pipefail
# .device-bin travels packed (scripts/gpu/build.sh).
if [ ! -d .device-bin ] && [ -f .device-pack/device-bin.tar.xz ]; then
  tar -xJf .device-pack/device-bin.tar.xz
fi
B=${B:-.device-bin}
OUT=${OUT:-bench-out}
FILTER=""; EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --filter) FILTER="$2"; shift 2 ;;
    --graph-all|--quick) EXTRA+=("$1"); shift ;;
    --attn-parts|--attn-dtypes) EXTRA+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
read -r -a BASE_EXTRA <<< "${BASELINE_ARGS:-}"
PY=$B/bench; [ -f "$PY/join.py" ] || PY=bench
L="$OUT/bench"
mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$L/device.txt"

echo "== tile-bench ${FILTER:+--filter $FILTER} ${EXTRA[*]+${EXTRA[*]}}"
SECONDS=0
timeout "${TILE_BENCH_TIMEOUT:-400}" "$B/tile-bench" ${FILTER:+--filter "$FILTER"} ${EXTRA[@]+"${EXTRA[@]}"} \
  --out "$L" > "$L/tile-bench.log" 2>&1
rc_tile=$?; echo "exit $rc_tile after $SECONDS s" >> "$L/tile-bench.log"

echo "== bench/python/baseline.py ${FILTER:+--filter $FILTER} ${EXTRA[*]+${EXTRA[*]}} ${BASELINE_ARGS:-}"
SECONDS=0
PYTHONUNBUFFERED=1 BASELINE_TIMEOUT="${BASELINE_TIMEOUT:-400}" timeout "${BASELINE_TIMEOUT:-400}" python3 "$PY/python/baseline.py" \
  ${FILTER:+--filter "$FILTER"} ${EXTRA[@]+"${EXTRA[@]}"} ${BASE_EXTRA[@]+"${BASE_EXTRA[@]}"} \
  --out "$L/baseline.json" > "$L/baseline.log" 2>&1
rc_base=$?; echo "exit $rc_base after $SECONDS s" >> "$L/baseline.log"

python3 "$PY/join.py" "$L" > "$L/join.log" 2>&1; echo "exit $?" >> "$L/join.log"

# Autotuning's first-launch cost (with the gemm family): a cold cache, a second process reading
# it, and the chosen config launched without a tuner, each its own process.
if [ -z "$FILTER" ] || [[ gemm == *"$FILTER"* ]]; then
  A="$L/autotune_cost.txt"; : > "$A"
  for shape in "4096 4096 4096" "6144 5120 3072"; do
    cache=$(mktemp -d)
    TILE_CACHE_DIR="$cache" "$B/autotune_cost" tune $shape >> "$A" 2>&1
    TILE_CACHE_DIR="$cache" "$B/autotune_cost" cached $shape >> "$A" 2>&1
    idx=$(grep -o 'decision: config [0-9]*' "$A" | tail -1 | grep -o '[0-9]*$')
    "$B/autotune_cost" untuned $shape "${idx:-0}" >> "$A" 2>&1
    rm -rf "$cache"
  done
fi

{
  echo "device: $(tail -1 "$L/device.txt")"
  echo "tile-bench: $(grep -E '^checks:' "$L/tile-bench.log" | tail -1); $(tail -1 "$L/tile-bench.log")"
  echo "baseline:   $(grep -E '^checks:' "$L/baseline.log" | tail -1); $(tail -1 "$L/baseline.log")"
  echo "join:       $(tail -1 "$L/join.log")"
  [ -f "$L/autotune_cost.txt" ] && grep -E "phase|decision" "$L/autotune_cost.txt"
} > "$OUT/summary.txt"
[ -f "$L/joined.md" ] && cp "$L/joined.md" "$OUT/joined.md"
tar -C "$OUT" -czf "$OUT/bench.tgz" bench && rm -rf "$L"
cat "$OUT/summary.txt"
echo
[ -f "$OUT/joined.md" ] && cat "$OUT/joined.md"
# Exit status: 0 when both sides ran and every check passed.
[ "$rc_tile" = 0 ] && [ "$rc_base" = 0 ]
