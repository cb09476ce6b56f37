#!/usr/bin/env bash
# Runs on the GPU machine from the repo root: every GPU test (atomics and scans among them), the
# moe_align example (checks on awkward shapes and both document sizes, then µs plain and as CUDA
# graphs) and the cross_entropy example (checks, then forward + backward against the copy
# bandwidth), their PyTorch and Triton baselines (bench/python/baseline.py), compute-sanitizer
# memcheck and racecheck of the atomics and scans GPU tests and of both examples' checks. Logs
# under $OUT. Usage: bash .device-bin/atomics.sh
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/device.txt"
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$OUT/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$OUT/gpu_tests.log"
echo "== moe_align"; $B/moe_align > "$OUT/moe_align.log" 2>&1; echo "exit $?" >> "$OUT/moe_align.log"
grep -cE ": ok$" "$OUT/moe_align.log"; grep -E "FAILED|^exit|^\||^moe_align" "$OUT/moe_align.log"
echo "== cross_entropy"; $B/cross_entropy > "$OUT/cross_entropy.log" 2>&1; echo "exit $?" >> "$OUT/cross_entropy.log"
grep -cE " ok$" "$OUT/cross_entropy.log"; grep -E "FAILED|^exit|copy bandwidth|^\| tile|^cross" "$OUT/cross_entropy.log"
echo "== baseline (PyTorch, Triton)"
python3 bench/python/baseline.py --filter cross_entropy --out "$OUT/baseline_ce.json" > "$OUT/baseline_ce.log" 2>&1; echo "exit $?" >> "$OUT/baseline_ce.log"
grep -E "FAILED|Error" "$OUT/baseline_ce.log" | head; tail -12 "$OUT/baseline_ce.log"
python3 bench/python/baseline.py --filter moe_align --graph-all --out "$OUT/baseline_moe.json" > "$OUT/baseline_moe.log" 2>&1; echo "exit $?" >> "$OUT/baseline_moe.log"
grep -E "FAILED|Error" "$OUT/baseline_moe.log" | head; tail -12 "$OUT/baseline_moe.log"
for tool in memcheck racecheck; do
  timeout 240 compute-sanitizer --tool $tool $B/gpu_tests gpu_atomics gpu_scans --test-threads=1 > "$OUT/$tool-tests.log" 2>&1; echo "exit $?" >> "$OUT/$tool-tests.log"
  timeout 240 compute-sanitizer --tool $tool $B/moe_align --quick > "$OUT/$tool-moe.log" 2>&1; echo "exit $?" >> "$OUT/$tool-moe.log"
  timeout 240 compute-sanitizer --tool $tool $B/cross_entropy --quick > "$OUT/$tool-ce.log" 2>&1; echo "exit $?" >> "$OUT/$tool-ce.log"
  echo "$tool: tests $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool-tests.log"), moe_align $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool-moe.log"), cross_entropy $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool-ce.log"), its checks failed: $(grep -c FAILED "$OUT/$tool-ce.log")"
done
