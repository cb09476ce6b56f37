#!/usr/bin/env bash
# Twentieth session, call 4 (the README's cross-entropy table): GPU tests, the cross_entropy
# example twice (every form, checks and timings against the copy rate), its PyTorch and
# Liger-style Triton baselines in the same call, memcheck and racecheck of its checks. Logs
# tarred under $OUT. Usage: B=.device-wg bash scripts/gpu/call4_20.sh
set -uo pipefail
B=${B:-.device-wg}; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$L/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$L/gpu_tests.log"
for round in 1 2; do
  $B/cross_entropy > "$L/cross_entropy.$round.log" 2>&1; echo "exit $?" >> "$L/cross_entropy.$round.log"
  echo "== cross_entropy $round: $(grep -cE ' ok$' "$L/cross_entropy.$round.log") ok, $(grep -c FAILED "$L/cross_entropy.$round.log") failed"
  grep -E "^\| tile|^cross|copy bandwidth" "$L/cross_entropy.$round.log"
  [ $round = 1 ] && { timeout 200 python3 bench/python/baseline.py --filter cross_entropy --out "$L/baseline_ce.json" > "$L/baseline_ce.log" 2>&1; echo "exit $?" >> "$L/baseline_ce.log"; tail -12 "$L/baseline_ce.log"; }
done
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool $B/cross_entropy --quick > "$L/$tool-ce.log" 2>&1; echo "exit $?" >> "$L/$tool-ce.log"
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/$tool-ce.log"), checks failed: $(grep -c FAILED "$L/$tool-ce.log"), ok: $(grep -cE ' ok$' "$L/$tool-ce.log")"
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
