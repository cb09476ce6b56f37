#!/usr/bin/env bash
# Twenty-first session, call 10: compute-sanitizer memcheck and racecheck of the final
# cross_entropy and dropout examples (--quick: their checks only, the atomics included).
# Usage: B=.device-wg bash scripts/gpu/call10_21.sh
set -uo pipefail
B=${B:-.device-wg}; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
for ex in cross_entropy fused_bias_gelu_dropout residual_bias_dropout; do
  for tool in memcheck racecheck; do
    timeout 90 compute-sanitizer --tool $tool $B/$ex --quick > "$L/$tool-$ex.log" 2>&1; echo "exit $?" >> "$L/$tool-$ex.log"
    echo "$ex $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/$tool-$ex.log" | head -1), ok: $(grep -cE ' ok$' "$L/$tool-$ex.log"), failed: $(grep -c FAILED "$L/$tool-$ex.log"), $(tail -1 "$L/$tool-$ex.log")"
  done
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
