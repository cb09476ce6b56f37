#!/usr/bin/env bash
# Session 21 call 9: old vs new dropout examples (new: rand > p as an integer compare), alternated, round 2 the GELU example only, + GPU tests.
set -uo pipefail
B=.device-wg; L=$OUT/logs; mkdir -p $L
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > $L/gpu_tests.log 2>&1; grep -E "test result|FAILED|panicked" $L/gpu_tests.log
for round in 1 2; do
  exs="fused_bias_gelu_dropout residual_bias_dropout"; [ $round = 2 ] && exs=fused_bias_gelu_dropout
  for ex in $exs; do
    for v in old new; do
      bin=$B/$ex; [ $v = old ] && bin=$B/old/$ex
      timeout 120 $bin > $L/$ex.$v.$round.log 2>&1; echo "exit $?" >> $L/$ex.$v.$round.log
      echo "== $ex $v round $round: $(grep -cE ' ok$' $L/$ex.$v.$round.log) ok, $(grep -c FAILED $L/$ex.$v.$round.log) failed"
      grep -E "^\| tile fused|copy bandwidth" $L/$ex.$v.$round.log
    done
  done
done
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
