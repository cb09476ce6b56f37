#!/usr/bin/env bash
# Twenty-first session, call 7: tile-bench's issue-10 families (dropout, cross_entropy,
# moe_align) on the final code, baseline.py for the same families, bench/join.py's table.
# Usage: B=.device-wg bash scripts/gpu/call7_21.sh (tile-bench, baseline.py, join.py in $B)
set -uo pipefail
B=${B:-.device-wg}; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
for fam in dropout cross_entropy moe_align; do
  g=""; [ $fam = moe_align ] && g=--graph-all
  timeout 170 $B/tile-bench --filter $fam $g --no-plots --out "$L/$fam" > "$L/tb_$fam.log" 2>&1; echo "tile-bench $fam exit $?"
  grep -E "checks:" "$L/tb_$fam.log" | tail -1
  timeout 150 python3 $B/baseline.py --filter $fam $g --out "$L/$fam/baseline.json" > "$L/base_$fam.log" 2>&1; echo "baseline $fam exit $?"
  python3 $B/join.py "$L/$fam" > /dev/null 2>&1; grep -E "^\| (fused|resid|cross|moe)" "$L/$fam/joined.md" | cut -c1-400
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
