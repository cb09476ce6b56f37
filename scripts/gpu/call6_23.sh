#!/usr/bin/env bash
# Twenty-third session, call 6: the final build. GPU tests; tile-bench's dropout and
# cross_entropy families with bench/python/baseline.py's (PyTorch, Triton, the Liger-style
# kernel) and bench/join.py's tables; compute-sanitizer memcheck and racecheck of the three
# examples' --quick runs.
# Usage: bash scripts/gpu/call6_23.sh (.device-wg/bins.tar.xz: tile-bench, the three examples,
# gpu_tests, stripped).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
(cd $B && tar xJf bins.tar.xz) || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
timeout 120 $B/gpu_tests --test-threads=1 > "$L/gpu_tests.log" 2>&1; echo "gpu tests exit $?: $(grep -E 'test result' $L/gpu_tests.log)"
for fam in cross_entropy dropout; do
  timeout 170 $B/tile-bench --filter $fam --no-plots --out "$L/$fam" > "$L/tb_$fam.log" 2>&1; echo "tile-bench $fam exit $?"
  grep -E "checks" "$L/tb_$fam.log" | tail -1
  timeout 170 python3 bench/python/baseline.py --filter $fam --out "$L/$fam/baseline.json" > "$L/base_$fam.log" 2>&1; echo "baseline $fam exit $?"
  python3 bench/join.py "$L/$fam" > "$L/join_$fam.log" 2>&1; grep -E "^\| (fused|resid|cross)" "$L/$fam/joined.md" | cut -c1-300
done
for ex in cross_entropy fused_bias_gelu_dropout residual_bias_dropout; do
  for t in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $t $B/$ex --quick > "$L/$t.$ex.log" 2>&1
    echo "$t $ex: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/$t.$ex.log | tail -1) $(grep -c -- '-> ok' $L/$t.$ex.log) ok $(grep -c FAILED $L/$t.$ex.log) failed"
  done
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
