#!/usr/bin/env bash
# Runs on the GPU machine from the repo root: every GPU test, then tile's `rand`/`randint` against
# Triton 3.6's `tl.rand`/`tl.randint` on the same seeds and offsets (bench/python/rand_reference.py
# writes Triton's values, .device-bin/rand_stream runs tile's kernels and compares), memcheck of
# the Philox GPU test. Logs under $OUT. Usage: bash .device-bin/rand.sh
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/device.txt"
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$OUT/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$OUT/gpu_tests.log"
echo "== Triton's stream"; python3 bench/python/rand_reference.py generate "$OUT/triton_rand" --n 65536 2>&1 | tee "$OUT/triton_rand.log"
echo "== tile's stream"; $B/rand_stream "$OUT/triton_rand" "$OUT/tile_rand" > "$OUT/rand_stream.log" 2>&1; echo "exit $?" >> "$OUT/rand_stream.log"; tail -3 "$OUT/rand_stream.log"
echo "== compare (rand_reference.py)"; python3 bench/python/rand_reference.py compare "$OUT/triton_rand" "$OUT/tile_rand" 2>&1 | tee "$OUT/rand_compare.log"
rm -rf "$OUT/triton_rand" "$OUT/tile_rand"
echo "== memcheck, racecheck: gpu_philox_matches_the_reference"
for tool in memcheck racecheck; do
  timeout 300 compute-sanitizer --tool $tool $B/gpu_tests gpu_philox --test-threads=1 > "$OUT/$tool.log" 2>&1; echo "exit $?" >> "$OUT/$tool.log"; tail -2 "$OUT/$tool.log"
done
echo "== summary"
grep -E "test result" "$OUT/gpu_tests.log"
grep -E "values equal" "$OUT/rand_stream.log"
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT"/memcheck.log "$OUT"/racecheck.log
