#!/usr/bin/env bash
# Runs on the GPU machine from the repo root (after scripts/gpu/build.sh here): the memory-bound
# comparison in one call: tile-bench (every example family, fused and unfused) and
# bench/python/baseline.py (PyTorch, and the public Triton/Liger kernels), both timed the same way
# (batches of back-to-back launches, L2 flushed before each sample; CUDA graphs where launch-bound),
# then bench/join.py. Everything under $OUT/bench is packed into $OUT/bench.tgz (the device tool
# brings back only a few files); a short summary last.
#   bash .device-bin/bench.sh
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/bench"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/bench/device.txt"
echo "== tile-bench"
SECONDS=0
timeout "${TILE_BENCH_TIMEOUT:-300}" $B/tile-bench --out "$OUT/bench" ${TILE_BENCH_ARGS:-} > "$OUT/bench/tile-bench.log" 2>&1
echo "exit $? after $SECONDS s" >> "$OUT/bench/tile-bench.log"; tail -3 "$OUT/bench/tile-bench.log"
echo "== bench/python/baseline.py"
SECONDS=0
PYTHONUNBUFFERED=1 timeout "${BASELINE_TIMEOUT:-300}" python3 bench/python/baseline.py --out "$OUT/bench/baseline.json" ${BASELINE_ARGS:-} > "$OUT/bench/baseline.log" 2>&1
echo "exit $? after $SECONDS s" >> "$OUT/bench/baseline.log"; tail -3 "$OUT/bench/baseline.log"
python3 bench/join.py "$OUT/bench" > "$OUT/bench/join.log" 2>&1; echo "exit $?" >> "$OUT/bench/join.log"
tail -3 "$OUT/bench/join.log"
tar -C "$OUT" -czf "$OUT/bench.tgz" bench && rm -rf "$OUT/bench"
echo; echo "===== summary"
tar -xzf "$OUT/bench.tgz" -C /tmp bench/joined.md bench/tile-bench.log bench/baseline.log 2>/dev/null
grep -E "^checks:" /tmp/bench/tile-bench.log | tail -1; tail -1 /tmp/bench/tile-bench.log
grep -E "^checks:" /tmp/bench/baseline.log | tail -1; tail -1 /tmp/bench/baseline.log
cat /tmp/bench/joined.md 2>/dev/null | head -120
