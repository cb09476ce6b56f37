#!/usr/bin/env bash
# Twenty-third session, call 7: fused_bias_gelu_dropout, the committed binary (`new`: bf16
# programs loop over 4 rows) against `pf` (each loop turn loads the next row before computing
# this one) and `pf8` (pf with 8 rows per program in bf16), alternated, two rounds.
# Usage: bash scripts/gpu/call7_23.sh (binaries in .device-wg/{,pf,pf8}).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
for round in 1 2; do
  vs="new pf pf8"; [ $round = 2 ] && vs="pf8 pf new"
  for v in $vs; do
    bin=$B/fused_bias_gelu_dropout; [ $v != new ] && bin=$B/$v/fused_bias_gelu_dropout
    timeout 120 $bin > "$L/gelu.$v.$round.log" 2>&1; echo "exit $?" >> "$L/gelu.$v.$round.log"
    echo "== $v $round: $(grep -c -- '-> ok' $L/gelu.$v.$round.log) ok, $(grep -c FAILED $L/gelu.$v.$round.log) failed, $(tail -1 $L/gelu.$v.$round.log)"
    grep -E "^\| tile fused|copy bandwidth" "$L/gelu.$v.$round.log" | cut -c1-100
  done
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
