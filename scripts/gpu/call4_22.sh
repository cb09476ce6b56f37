#!/usr/bin/env bash
# Twenty-second session, call 4: softmax_regression with `w` padded to 32-byte rows where its rows
# start 16 bytes into a sector (the pad copy timed with every call). Old and new binaries
# alternated at 8192x4096x1000 (two rounds); the new example at every size; memcheck and
# racecheck of the new binary at 1024x256x1000 (padded) and --quick; then
# `baseline.py --filter softmax_regression` (cuBLAS + softmax, Triton) in the same call.
# Usage: bash scripts/gpu/call4_22.sh (binaries in .device-wg, .device-wg/old).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
for round in 1 2; do
  for v in old new; do
    bin=$B/softmax_regression; [ $v = old ] && bin=$B/old/softmax_regression
    timeout 60 $bin --shape 8192x4096x1000 > "$L/sr1000.$v.$round.log" 2>&1
    echo "== $v $round: $(grep -c -- '-> ok' "$L/sr1000.$v.$round.log") ok, $(grep -c FAILED "$L/sr1000.$v.$round.log") failed"
    grep -E "^\|.*(tile fused  |gemm alone)" "$L/sr1000.$v.$round.log" | cut -d"|" -f3,4,5
  done
done
timeout 150 $B/softmax_regression > "$L/softmax_regression.log" 2>&1; echo "exit $?" >> "$L/softmax_regression.log"
echo "all sizes: $(grep -c -- '-> ok' $L/softmax_regression.log) ok, $(grep -c FAILED $L/softmax_regression.log) failed, $(tail -1 $L/softmax_regression.log)"
grep -E "^\|.*tile fused  " "$L/softmax_regression.log" | cut -d"|" -f2,3,5
for t in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $t $B/softmax_regression --shape 1024x256x1000 > "$L/$t.pad.log" 2>&1
  timeout 100 compute-sanitizer --tool $t $B/softmax_regression --quick > "$L/$t.quick.log" 2>&1
  echo "$t: padded $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/$t.pad.log | tail -1) $(grep -c FAILED $L/$t.pad.log) failed; quick $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/$t.quick.log | tail -1) $(grep -c FAILED $L/$t.quick.log) failed"
done
timeout 280 python3 bench/python/baseline.py --filter softmax_regression --skip softmax_regression_simple --out "$L/baseline_sr.json" > "$L/baseline_sr.log" 2>&1; echo "baseline exit $?"
grep -E "^\| softmax_regression .*8192x4096x1000" "$L/baseline_sr.log" | cut -c1-130
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
