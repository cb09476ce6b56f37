#!/usr/bin/env bash
# Twentieth session, call 1 (runs on the GPU machine from the repo root; binaries stripped into
# $B: gpu_tests, cross_entropy, the two dropout examples, and in $B/old the dropout examples built
# before Philox's multiplies became `mul.wide.u32`). Answers in one call:
#  1. Is the GPU still bit-identical to the interpreter (gpu_tests: the Philox tests among them)?
#  2. Dropout: old vs new binaries of both examples, alternated, with Triton's kernels
#     (baseline.py --filter dropout) in the same call.
#  3. cross_entropy: every form, the persistent prefetching forms swept over program counts
#     (`--programs` and `ce_stream`/`ce_stream8` exist only with the trial patch kept in
#     docs/perf/2026-11-26c-h100/call1/ce_stream_trial.patch; the forms were not kept),
#     against PyTorch and the Liger-style Triton kernel (baseline.py --filter cross_entropy).
#  4. compute-sanitizer memcheck and racecheck of the cross_entropy checks (the new forms).
# Logs under $OUT. Usage: B=.device-wg bash scripts/gpu/session20.sh
set -uo pipefail
B=${B:-.device-wg}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$OUT/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$OUT/gpu_tests.log"
for round in 1 2; do
  for ex in fused_bias_gelu_dropout residual_bias_dropout; do
    for v in old new; do
      bin=$B/$ex; [ $v = old ] && bin=$B/old/$ex
      $bin > "$OUT/$ex.$v.$round.log" 2>&1; echo "exit $?" >> "$OUT/$ex.$v.$round.log"
      echo "== $ex $v round $round: $(grep -cE ' ok$' "$OUT/$ex.$v.$round.log") ok, $(grep -c FAILED "$OUT/$ex.$v.$round.log") failed"
      grep -E "^\| tile" "$OUT/$ex.$v.$round.log"
    done
  done
done
echo "== baseline dropout"
python3 bench/python/baseline.py --filter dropout --out "$OUT/baseline_dropout.json" > "$OUT/baseline_dropout.log" 2>&1; echo "exit $?" >> "$OUT/baseline_dropout.log"
tail -22 "$OUT/baseline_dropout.log"
echo "== cross_entropy (sweep)"
$B/cross_entropy --programs 66,99,132,198,264,396 > "$OUT/cross_entropy.log" 2>&1; echo "exit $?" >> "$OUT/cross_entropy.log"
echo "checks: $(grep -cE ' ok$' "$OUT/cross_entropy.log") ok, $(grep -c FAILED "$OUT/cross_entropy.log") failed"
grep -E "^exit|copy bandwidth|^\| tile|^cross" "$OUT/cross_entropy.log"
echo "== baseline cross_entropy"
python3 bench/python/baseline.py --filter cross_entropy --out "$OUT/baseline_ce.json" > "$OUT/baseline_ce.log" 2>&1; echo "exit $?" >> "$OUT/baseline_ce.log"
tail -14 "$OUT/baseline_ce.log"
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool $B/cross_entropy --quick > "$OUT/$tool-ce.log" 2>&1; echo "exit $?" >> "$OUT/$tool-ce.log"
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool-ce.log"), checks failed: $(grep -c FAILED "$OUT/$tool-ce.log"), ok: $(grep -cE ' ok$' "$OUT/$tool-ce.log")"
done
