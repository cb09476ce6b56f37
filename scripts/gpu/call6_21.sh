#!/usr/bin/env bash
# Twenty-first session, call 6: cross_entropy old vs new (new: an ignored row's loads masked
# off, so it is not read), alternated, two rounds; then the Liger-style and PyTorch baselines.
# Usage: B=.device-wg bash scripts/gpu/call6_21.sh
set -uo pipefail
B=${B:-.device-wg}; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
for round in 1 2; do
  for v in old new; do
    bin=$B/cross_entropy; [ $v = old ] && bin=$B/old/cross_entropy
    timeout 110 $bin > "$L/ce.$v.$round.log" 2>&1; echo "exit $?" >> "$L/ce.$v.$round.log"
    echo "== $v $round: $(grep -cE ' ok$' "$L/ce.$v.$round.log") ok, $(grep -c FAILED "$L/ce.$v.$round.log") failed, $(tail -1 "$L/ce.$v.$round.log")"
    grep -E "^\| tile fused|^cross" "$L/ce.$v.$round.log" | cut -c1-110
  done
done
timeout 150 python3 $B/baseline.py --filter cross_entropy --out "$L/baseline_ce.json" > "$L/baseline_ce.log" 2>&1; echo "baseline exit $?"
grep -E "^\|.*(8192|4096)" "$L/baseline_ce.log" | cut -c1-140 | head -12
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
