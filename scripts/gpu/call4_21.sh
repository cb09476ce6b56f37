#!/usr/bin/env bash
# Twenty-first session, call 4: GPU tests; old vs new binaries (new: scratch neighbours of which
# one is small get disjoint shared memory, so a row of reductions needs no barrier between them)
# of the examples built on cross-warp reductions, alternated (cross_entropy twice). Logs under $OUT.
# Usage: B=.device-wg bash scripts/gpu/call4_21.sh
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
      timeout 100 $bin > "$L/$ex.$v.$round.log" 2>&1; echo "exit $?" >> "$L/$ex.$v.$round.log"
      echo "== $ex $v $round: $(grep -cE ' ok$' "$L/$ex.$v.$round.log") ok, $(grep -c FAILED "$L/$ex.$v.$round.log") failed, $(tail -1 "$L/$ex.$v.$round.log")"
      grep -E "^\| tile|^cross|^softmax|^layer|^fused|^rms|^mean" "$L/$ex.$v.$round.log" | cut -c1-120
    done
  done
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
