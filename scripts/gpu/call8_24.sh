#!/usr/bin/env bash
# Twenty-fourth session, call 8: the final build (eight contiguous columns a thread in the four-words kernel). GPU tests; the example fused_bias_gelu_dropout
# (checks, then its table); tile-bench's dropout families with bench/python/baseline.py's
# (PyTorch, Triton) and bench/join.py's tables; compute-sanitizer memcheck and racecheck of the
# example's --quick run.
# Usage: bash scripts/gpu/call8_24.sh (.device-wg/bins.tar.xz: tile-bench, the two dropout
# examples, gpu_tests, stripped).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
(cd $B && tar xJf bins.tar.xz) || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
timeout 120 $B/gpu_tests --test-threads=1 --nocapture > "$L/gpu_tests.log" 2>&1; echo "gpu tests exit $?: $(grep -E 'test result' $L/gpu_tests.log)"; grep "gelu on" "$L/gpu_tests.log"
ex=fused_bias_gelu_dropout
timeout 200 $B/$ex > "$L/$ex.log" 2>&1; echo "$ex exit $?: $(grep -c -- '-> ok' $L/$ex.log) ok, $(grep -c FAILED $L/$ex.log) failed"
grep -E "^\| tile|copy bandwidth|^[a-z].* on [0-9]+x[0-9]+ " "$L/$ex.log" | cut -c1-120
fam=dropout
timeout 200 $B/tile-bench --filter $fam --no-plots --out "$L/$fam" > "$L/tb_$fam.log" 2>&1; echo "tile-bench $fam exit $?"
grep -E "checks" "$L/tb_$fam.log" | tail -1
timeout 170 python3 bench/python/baseline.py --filter $fam --out "$L/$fam/baseline.json" > "$L/base_$fam.log" 2>&1; echo "baseline $fam exit $?"
python3 bench/join.py "$L/$fam" > "$L/join_$fam.log" 2>&1; grep -E "^\| (fused|resid)" "$L/$fam/joined.md" | cut -c1-300
for t in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $t $B/$ex --quick > "$L/$t.$ex.log" 2>&1
  echo "$t $ex: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/$t.$ex.log | tail -1) $(grep -c -- '-> ok' $L/$t.$ex.log) ok $(grep -c FAILED $L/$t.$ex.log) failed"
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
