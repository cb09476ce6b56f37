#!/usr/bin/env bash
# Twentieth session, call 3: GPU tests; old vs new binaries (old: before the cross-warp
# reduction read the partials one per lane; cross_entropy old: before ce_loop_full, the label
# fix-up and the multiply in place of the division) of the examples whose reductions span 8 or
# more warps, alternated (cross_entropy twice); the Liger-style and PyTorch cross-entropy baselines; memcheck and
# racecheck of the new cross_entropy's checks. Logs tarred under $OUT.
# Usage: B=.device-wg bash scripts/gpu/call3_20.sh
set -uo pipefail
B=${B:-.device-wg}; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$L/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$L/gpu_tests.log"
for round in 1 2; do
  exs="cross_entropy fused_softmax fused_add_rmsnorm fused_layernorm mean_center"
  [ $round = 2 ] && exs=cross_entropy
  for ex in $exs; do
    for v in old new; do
      bin=$B/$ex; [ $v = old ] && bin=$B/old/$ex
      timeout 120 $bin > "$L/$ex.$v.$round.log" 2>&1; echo "exit $?" >> "$L/$ex.$v.$round.log"
      echo "== $ex $v $round: $(grep -cE ' ok$' "$L/$ex.$v.$round.log") ok, $(grep -c FAILED "$L/$ex.$v.$round.log") failed, $(tail -1 "$L/$ex.$v.$round.log")"
      grep -E "^\| tile|^cross" "$L/$ex.$v.$round.log" | grep -v "persistent"
    done
  done
done
echo "== baseline cross_entropy"
timeout 200 python3 bench/python/baseline.py --filter cross_entropy --out "$L/baseline_ce.json" > "$L/baseline_ce.log" 2>&1; echo "exit $?" >> "$L/baseline_ce.log"
tail -12 "$L/baseline_ce.log"
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool $B/cross_entropy --quick > "$L/$tool-ce.log" 2>&1; echo "exit $?" >> "$L/$tool-ce.log"
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/$tool-ce.log"), checks failed: $(grep -c FAILED "$L/$tool-ce.log"), ok: $(grep -cE ' ok$' "$L/$tool-ce.log")"
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
