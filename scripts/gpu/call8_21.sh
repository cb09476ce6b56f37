#!/usr/bin/env bash
# Session 21 call 8: persistent 32-warp cross-entropy kernel, programs swept (experiment), twice.
set -uo pipefail
B=.device-wg; L=$OUT/logs; mkdir -p $L
for r in 1 2; do
  timeout 200 $B/cross_entropy > $L/ce.$r.log 2>&1; echo "exit $?" >> $L/ce.$r.log
  echo "== run $r: $(grep -cE ' ok$' $L/ce.$r.log) ok, $(grep -c FAILED $L/ce.$r.log) failed, $(tail -1 $L/ce.$r.log)"
  grep -E "^cross|^\| (tile fused|EXP)" $L/ce.$r.log | cut -c1-100
done
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
