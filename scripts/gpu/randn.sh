#!/usr/bin/env bash
# `randn`, `sin`, `cos` and the new `log` on the GPU: the GPU suite (randn against the
# interpreter, sin/cos against f64), then tile's randn of seed 42 at offsets 0 … 2^20 − 1 against
# Triton's `tl.randn` of the same seed and offsets.
set -uo pipefail
B=${B:-.device-wg}; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/logs"; L=$OUT/logs
TILE_RANDN_OUT="$OUT/tile_randn.bin" "$B/gpu_tests" --test-threads=1 --nocapture > "$L/gpu_tests.log" 2>&1
echo "gpu_tests exit $?" >> "$OUT/summary.txt"
grep -h "randn: largest\|sin/cos on\|test result" "$L/gpu_tests.log" >> "$OUT/summary.txt"
python3 "$B/randn_triton.py" "$OUT/tile_randn.bin" >> "$OUT/summary.txt" 2>&1
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs && rm -f tile_randn.bin)
cat "$OUT/summary.txt"
