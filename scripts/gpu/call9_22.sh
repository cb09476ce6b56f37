#!/usr/bin/env bash
# Twenty-second session, calls 8 and 9: split-K for few rows (call 8: every shape of at most 32
# rows; call 9, the final rule: few rows with 66 or more column blocks of 64 take the 128 x 64
# tile). The gemm example (split-K rows beside the
# 128-row tiles on 1x4096x4096, 17x8192x1024, 17x1024x8192, same run), compute-sanitizer memcheck
# and racecheck of `gemm --quick` (split-K on the awkward shapes), then tile-bench's gemm family
# (its form is now `matmul`: split-K up to 32 rows) joined with baseline.py's cuBLAS and Triton.
# Usage: bash scripts/gpu/call9_22.sh (binaries in .device-wg).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L/bench"
(cd $B && tar xJf bins.tar.xz) || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
timeout 150 $B/gemm > "$L/gemm.log" 2>&1; echo "exit $?" >> "$L/gemm.log"
echo "gemm: $(grep -c -- '-> ok' $L/gemm.log) checks ok, $(grep -c FAILED $L/gemm.log) failed, $(tail -1 $L/gemm.log)"
grep -E "^\| (1x|17x)" "$L/gemm.log"
for t in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $t $B/gemm --quick > "$L/$t.gemm.log" 2>&1
  echo "$t gemm: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/$t.gemm.log | tail -1), $(grep -c -- '-> ok' $L/$t.gemm.log) ok, $(grep -c FAILED $L/$t.gemm.log) failed"
done
timeout 150 $B/tile-bench --filter gemm --out "$L/bench" > "$L/tile-bench.log" 2>&1; echo "tile-bench exit $?"; tail -1 "$L/tile-bench.log"
timeout 300 python3 bench/python/baseline.py --filter gemm --skip gemm_bias_act --out "$L/bench/baseline.json" > "$L/baseline.log" 2>&1; echo "baseline exit $?"; tail -1 "$L/baseline.log"
python3 bench/join.py "$L/bench" > "$L/join.log" 2>&1; echo "join exit $?"
grep -E "^\| gemm \|" "$L/bench/joined.md" | cut -c1-150 | head -24
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
