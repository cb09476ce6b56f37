#!/usr/bin/env bash
# Twenty-second session, call 1: sector pairs (16-byte cp.async of rows 16 bytes into a sector,
# lanes rotated by one chunk). GPU tests; softmax_regression at 8192x4096x1000 and x1024, old and
# new alternated, two rounds; the gemm example old and new (4096³, 8192³, 4000x3000x1000 …);
# gemm_bias_act and softmax_regression (every size) new; memcheck and racecheck of gemm and
# softmax_regression --quick. Usage: bash scripts/gpu/call1_22.sh (binaries in .device-wg).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
(cd $B && tar xJf bins.tar.xz) || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
timeout 150 $B/gpu_tests --test-threads=1 > "$L/gpu_tests.log" 2>&1; grep "test result" "$L/gpu_tests.log"
for round in 1 2; do
  for v in old new; do
    bin=$B/softmax_regression; [ $v = old ] && bin=$B/old/softmax_regression
    for n in 1000 1024; do
      timeout 60 $bin --shape 8192x4096x$n > "$L/sr$n.$v.$round.log" 2>&1
      echo "== sr $n $v $round: $(grep -c -- '-> ok' "$L/sr$n.$v.$round.log") ok, $(grep -c FAILED "$L/sr$n.$v.$round.log") failed"
      grep -E "^\|.*(tile fused  |gemm alone)" "$L/sr$n.$v.$round.log" | cut -d"|" -f3,4,5
    done
  done
done
for v in old new; do
  bin=$B/gemm; [ $v = old ] && bin=$B/old/gemm
  timeout 90 $bin > "$L/gemm.$v.log" 2>&1; echo "exit $?" >> "$L/gemm.$v.log"
done
echo "== gemm old | new (ms)"
paste -d'|' <(grep -E "^\| [0-9]" "$L/gemm.old.log" | cut -d'|' -f2-5) <(grep -E "^\| [0-9]" "$L/gemm.new.log" | cut -d'|' -f5) | head -48
echo "gemm checks: old $(grep -c -- '-> ok' $L/gemm.old.log) ok $(grep -c FAILED $L/gemm.old.log) failed; new $(grep -c -- '-> ok' $L/gemm.new.log) ok $(grep -c FAILED $L/gemm.new.log) failed"
timeout 120 $B/softmax_regression > "$L/sr_all.new.log" 2>&1; echo "exit $?" >> "$L/sr_all.new.log"
echo "softmax_regression all: $(grep -c -- '-> ok' $L/sr_all.new.log) ok, $(grep -c FAILED $L/sr_all.new.log) failed, $(tail -1 $L/sr_all.new.log)"
timeout 120 $B/gemm_bias_act > "$L/gba.new.log" 2>&1; echo "exit $?" >> "$L/gba.new.log"
echo "gemm_bias_act: $(grep -c -- '-> ok' $L/gba.new.log) ok, $(grep -c FAILED $L/gba.new.log) failed, $(tail -1 $L/gba.new.log)"
for e in gemm softmax_regression; do
  for t in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $t $B/$e --quick > "$L/$t.$e.log" 2>&1
    echo "$t $e: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/$t.$e.log | tail -1), $(grep -c FAILED $L/$t.$e.log) failed"
  done
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
