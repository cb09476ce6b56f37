#!/usr/bin/env bash
# Runs on the GPU machine from the repo root (binaries from the commands in the header of
# scripts/gpu/atomics.sh, copied into $B): every GPU test (16-bit atomics and associative_scan
# among them), the cross_entropy example (checks on awkward shapes, then forward + backward of
# every form, the one-read `ce_row` included, against the copy bandwidth) and its PyTorch and
# Liger-style Triton baselines in the same call, ptxas's registers for ce_row, and
# compute-sanitizer memcheck and racecheck of the atomics and scans tests and of the example's
# checks. Logs under $OUT. Usage: B=.device-wg bash .device-wg/ce_row.sh
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$OUT/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$OUT/gpu_tests.log"
echo "== cross_entropy"; $B/cross_entropy > "$OUT/cross_entropy.log" 2>&1; echo "exit $?" >> "$OUT/cross_entropy.log"
grep -cE " ok$" "$OUT/cross_entropy.log"; grep -E "FAILED|^exit|copy bandwidth|^\| tile|^cross" "$OUT/cross_entropy.log"
echo "== baseline (PyTorch, Liger-style Triton)"
python3 bench/python/baseline.py --filter cross_entropy --out "$OUT/baseline_ce.json" > "$OUT/baseline_ce.log" 2>&1; echo "exit $?" >> "$OUT/baseline_ce.log"
grep -E "FAILED|Error" "$OUT/baseline_ce.log" | head; tail -14 "$OUT/baseline_ce.log"
echo "== cross_entropy again (clock drift check)"; $B/cross_entropy > "$OUT/cross_entropy2.log" 2>&1
grep -E "^\| tile" "$OUT/cross_entropy2.log"
for tool in memcheck racecheck; do
  timeout 240 compute-sanitizer --tool $tool $B/gpu_tests gpu_atomics gpu_scans --test-threads=1 > "$OUT/$tool-tests.log" 2>&1; echo "exit $?" >> "$OUT/$tool-tests.log"
  timeout 240 compute-sanitizer --tool $tool $B/cross_entropy --quick > "$OUT/$tool-ce.log" 2>&1; echo "exit $?" >> "$OUT/$tool-ce.log"
  echo "$tool: tests $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool-tests.log"), cross_entropy $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool-ce.log"), its checks failed: $(grep -c FAILED "$OUT/$tool-ce.log")"
done
(cd "$OUT" && tar czf logs.tgz *.log *.json device.txt 2>/dev/null)
