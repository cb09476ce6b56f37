#!/usr/bin/env bash
# Twenty-third session, call 4: cross_entropy, four binaries alternated, two rounds: old (session
# start), rev (second pass from the last tile back), new (rev + the second pass's loads and the
# gradient's stores `evict = first`), e1 (new + the first pass's loads `evict = last`).
# Usage: bash scripts/gpu/call4_23.sh (binaries in .device-wg/{,old,rev,e1}).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
for round in 1 2; do
  vs="old rev new e1"; [ $round = 2 ] && vs="e1 new rev old"
  for v in $vs; do
    bin=$B/cross_entropy; [ $v != new ] && bin=$B/$v/cross_entropy
    timeout 100 $bin > "$L/ce.$v.$round.log" 2>&1; echo "exit $?" >> "$L/ce.$v.$round.log"
    echo "== $v $round: $(grep -c -- '-> ok' $L/ce.$v.$round.log) ok, $(grep -c FAILED $L/ce.$v.$round.log) failed, $(tail -1 $L/ce.$v.$round.log)"
    grep -E "^\| tile fused|on [0-9]+x" "$L/ce.$v.$round.log" | sed 's/cross-entropy forward + backward on //; s/ (gradient in place).*//' | cut -d'|' -f1-5
  done
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
