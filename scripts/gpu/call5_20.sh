#!/usr/bin/env bash
# Twentieth session, call 5: cross_entropy before (old: the row sum in every tile) and after the
# 8- and 16-warp two-pass kernels skip it where the smoothing is 0, alternated twice; checks
# and timings of every form (the skip was not kept: docs/perf/2026-11-26c-h100/call5/
# skip_rowsum_trial.patch). Logs tarred under $OUT. Usage: B=.device-wg bash scripts/gpu/call5_20.sh
set -uo pipefail
B=${B:-.device-wg}; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
for round in 1 2; do
  for v in old new; do
    bin=$B/cross_entropy; [ $v = old ] && bin=$B/old/cross_entropy
    $bin > "$L/cross_entropy.$v.$round.log" 2>&1; echo "exit $?" >> "$L/cross_entropy.$v.$round.log"
    echo "== $v $round: $(grep -cE ' ok$' "$L/cross_entropy.$v.$round.log") ok, $(grep -c FAILED "$L/cross_entropy.$v.$round.log") failed"
    grep -E "^\| tile fused|^cross" "$L/cross_entropy.$v.$round.log"
  done
done
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool $B/cross_entropy --quick > "$L/$tool-ce.log" 2>&1; echo "exit $?" >> "$L/$tool-ce.log"
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/$tool-ce.log"), checks failed: $(grep -c FAILED "$L/$tool-ce.log"), ok: $(grep -cE ' ok$' "$L/$tool-ce.log")"
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
