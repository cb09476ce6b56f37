#!/usr/bin/env bash
# Session 21 call 1: folded-scale / BLOCK experiment (example twice), tile-bench's new families, baseline for them, join.
set -uo pipefail
B=.device-wg; L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $L/gpu.txt
for r in 1 2; do
  timeout 200 $B/fused_bias_gelu_dropout > $L/ex.$r.log 2>&1; echo "exit $?" >> $L/ex.$r.log
  echo "== example run $r: $(grep -cE ' ok$' $L/ex.$r.log) ok, $(grep -c FAILED $L/ex.$r.log) failed"
  grep -E "copy bandwidth|^bias|^\| (tile|EXP)" $L/ex.$r.log
done
timeout 240 $B/tile-bench --filter dropout --out $L/tb > $L/tb.log 2>&1; echo "tile-bench dropout exit $?"
timeout 100 $B/tile-bench --filter moe_align --out $L/tbm > $L/tbm.log 2>&1; echo "tile-bench moe exit $?"
grep -E "checks:|FAIL" $L/tb.log $L/tbm.log | head
timeout 150 python3 $B/baseline.py --filter dropout --out $L/tb/baseline.json > $L/base.log 2>&1; echo "baseline exit $?"
timeout 60 python3 $B/baseline.py --filter moe_align --graph-all --out $L/tbm/baseline.json > $L/basem.log 2>&1; echo "baseline moe exit $?"
python3 $B/join.py $L/tb > /dev/null 2>&1; python3 $B/join.py $L/tbm > /dev/null 2>&1
cat $L/tb/joined.md $L/tbm/joined.md 2>/dev/null | grep -E "^\||^#" | head -60
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
