#!/usr/bin/env bash
# Twenty-third session, call 1: old (session start) and new binaries alternated, two rounds:
# fused_bias_gelu_dropout (new: the fused kernels loop over 4 rows per program, bias and
# per-program constants once; r8: 8 rows), residual_bias_dropout (new: the same for the
# `rand(i)` kernel), cross_entropy (new: the second pass from the last tile back; a 16-warp
# one-read form); then memcheck of the new binaries' --quick runs.
# Usage: bash scripts/gpu/call1_23.sh (binaries in .device-wg, .device-wg/old, .device-wg/r8).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
for round in 1 2; do
  for ex in fused_bias_gelu_dropout residual_bias_dropout cross_entropy; do
    vs="old new"; [ $ex = fused_bias_gelu_dropout ] && vs="old new r8"
    [ $round = 2 ] && vs=$(echo $vs | tr ' ' '\n' | tac | tr '\n' ' ')
    for v in $vs; do
      bin=$B/$ex; [ $v != new ] && bin=$B/$v/$ex
      timeout 200 $bin > "$L/$ex.$v.$round.log" 2>&1; echo "exit $?" >> "$L/$ex.$v.$round.log"
      echo "== $ex $v round $round: $(grep -cE -- '-> ok|ok$' $L/$ex.$v.$round.log) ok, $(grep -c FAILED $L/$ex.$v.$round.log) failed, $(tail -1 $L/$ex.$v.$round.log)"
      grep -E "^\| tile fused|^\| tile|copy bandwidth|^[a-z].* on [0-9]+x[0-9]+ " "$L/$ex.$v.$round.log" | grep -v unfused | cut -c1-110
    done
  done
done
for ex in fused_bias_gelu_dropout residual_bias_dropout cross_entropy; do
  timeout 200 compute-sanitizer --tool memcheck $B/$ex --quick > "$L/memcheck.$ex.log" 2>&1
  echo "memcheck $ex: $(grep -E 'ERROR SUMMARY' $L/memcheck.$ex.log | tail -1) $(grep -c FAILED $L/memcheck.$ex.log) failed"
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
