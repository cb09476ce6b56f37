#!/usr/bin/env bash
# Runs on the GPU machine from the repo root: the dropout examples (checks on awkward shapes and
# 16384x4096, then timings against the copy bandwidth), the PyTorch and Triton baselines of the
# same two families (bench/python/baseline.py: torch eager, Triton with tl.rand per element as
# its tutorial, Triton with tl.rand4x per four elements), compute-sanitizer memcheck and
# racecheck of both examples' small shapes. Logs under $OUT. Usage: bash .device-bin/dropout.sh
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/device.txt"
for ex in fused_bias_gelu_dropout residual_bias_dropout; do
  echo "== $ex"; $B/$ex > "$OUT/$ex.log" 2>&1; echo "exit $?" >> "$OUT/$ex.log"
  grep -cE " ok$" "$OUT/$ex.log"; grep -E "FAILED|^exit|copy bandwidth|^\| tile|^[a-z].*median" "$OUT/$ex.log"
done
echo "== baseline (PyTorch, Triton)"
python3 bench/python/baseline.py --filter dropout --out "$OUT/baseline_dropout.json" > "$OUT/baseline_dropout.log" 2>&1; echo "exit $?" >> "$OUT/baseline_dropout.log"
grep -E "FAILED" "$OUT/baseline_dropout.log" | head; tail -22 "$OUT/baseline_dropout.log"
for tool in memcheck racecheck; do
  for ex in fused_bias_gelu_dropout residual_bias_dropout; do
    timeout 200 compute-sanitizer --tool $tool $B/$ex --quick > "$OUT/$tool-$ex.log" 2>&1; echo "exit $?" >> "$OUT/$tool-$ex.log"
    echo "$tool $ex: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool-$ex.log")"
  done
done
