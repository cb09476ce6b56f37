#!/usr/bin/env bash
# Twenty-third session, call 5: cross_entropy new (second pass from the last tile back, its loads
# and the gradient's stores with `.L1::evict_first`) against two trials with an L2 cache policy
# as well (l2a: `createpolicy ... L2::evict_first` + `.L2::cache_hint` on those accesses; l2b:
# l2a + the first pass's loads `L2::evict_last`), alternated, two rounds; then the dropout
# examples (fused kernels over 4 rows per program in bf16, 1 in f32) once each.
# Usage: bash scripts/gpu/call5_23.sh (binaries in .device-wg/{,l2a,l2b}).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
for round in 1 2; do
  vs="new l2a l2b"; [ $round = 2 ] && vs="l2b l2a new"
  for v in $vs; do
    bin=$B/cross_entropy; [ $v != new ] && bin=$B/$v/cross_entropy
    timeout 100 $bin > "$L/ce.$v.$round.log" 2>&1; echo "exit $?" >> "$L/ce.$v.$round.log"
    echo "== $v $round: $(grep -c -- '-> ok' $L/ce.$v.$round.log) ok, $(grep -c FAILED $L/ce.$v.$round.log) failed, $(tail -1 $L/ce.$v.$round.log)"
    grep -E "^\| tile fused \(1 kernel, (8|32) warps\)|on [0-9]+x" "$L/ce.$v.$round.log" | sed 's/cross-entropy forward + backward on //; s/ (gradient in place).*//' | cut -d'|' -f1-5
  done
done
for ex in fused_bias_gelu_dropout residual_bias_dropout; do
  timeout 150 $B/$ex > "$L/$ex.new.log" 2>&1; echo "exit $?" >> "$L/$ex.new.log"
  echo "== $ex: $(grep -cE -- '-> ok' $L/$ex.new.log) ok, $(grep -c FAILED $L/$ex.new.log) failed, $(tail -1 $L/$ex.new.log)"
  grep -E "^\| tile fused|copy bandwidth|on [0-9]+x[0-9]+ " "$L/$ex.new.log" | cut -c1-110
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
