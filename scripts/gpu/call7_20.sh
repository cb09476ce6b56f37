#!/usr/bin/env bash
# Twentieth session, call 7: tile-bench's new cross_entropy family on the GPU (checks of every
# shape against float64, timings), baseline.py's cross_entropy rows, and bench/join.py's joined
# table. Output under $OUT. Usage: B=.device-wg bash scripts/gpu/call7_20.sh
set -uo pipefail
B=${B:-.device-wg}; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/device.txt"
$B/tile-bench --filter cross_entropy --no-plots --out "$OUT" > "$OUT/tile-bench.log" 2>&1; echo "exit $?" >> "$OUT/tile-bench.log"
grep -E "FAILED|^checks|^exit" "$OUT/tile-bench.log"
timeout 200 python3 bench/python/baseline.py --filter cross_entropy --out "$OUT/baseline.json" > "$OUT/baseline.log" 2>&1; echo "exit $?" >> "$OUT/baseline.log"
tail -2 "$OUT/baseline.log"
python3 bench/join.py "$OUT" > "$OUT/join.log" 2>&1; echo "exit $?" >> "$OUT/join.log"
cat "$OUT/joined.md" | head -40
