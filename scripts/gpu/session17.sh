#!/usr/bin/env bash
# Runs on the GPU machine from the repo root, binaries in $B: release builds from this machine
# (`cargo build --release --example cross_entropy --example fused_softmax --example
# fused_add_rmsnorm --example residual_bias_dropout --example fused_layernorm`, the GPU test
# binary from `cargo test --release --test gpu --no-run`), and `NAME_old` copies of four
# examples built at 59ff316, before the back end shared compares across equal registers and
# gave masked loads side effects. Every GPU test; the cross_entropy example (bf16 rows through
# the one-read `ce_row` too; the label's logit read before the row's reductions) and its
# PyTorch and Liger baselines in the same call; old/new pairs of four memory-bound examples;
# compute-sanitizer memcheck and racecheck on the cross_entropy checks, whose results must
# all be ok. Logs under $OUT/l, tarred. Usage: B=.device-wg bash .device-wg/session17.sh
set -uo pipefail
B=${B:-.device-wg}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/l"
L="$OUT/l"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$L/device.txt"
echo "== GPU tests"; timeout 300 $B/gpu_tests --test-threads=4 > "$L/gpu_tests.log" 2>&1; echo "exit $?"; grep -E "test result|FAILED|panicked" "$L/gpu_tests.log"
echo "== cross_entropy"; timeout 120 $B/cross_entropy > "$L/cross_entropy.log" 2>&1; echo "exit $?"
grep -cE " ok$" "$L/cross_entropy.log"; grep -E "FAILED|copy bandwidth|^\| |^cross" "$L/cross_entropy.log"
echo "== baseline (PyTorch, Liger-style Triton)"
timeout 200 python3 bench/python/baseline.py --filter cross_entropy --out "$L/baseline_ce.json" > "$L/baseline_ce.log" 2>&1; echo "exit $?"
grep -E "FAILED|Error" "$L/baseline_ce.log" | head; grep -E "^\| cross|^NVIDIA" "$L/baseline_ce.log"
for e in fused_softmax fused_add_rmsnorm residual_bias_dropout fused_layernorm; do for v in "" _old; do
  timeout 60 $B/$e$v > "$L/$e$v.log" 2>&1; echo "== $e$v exit $?"; grep -E "FAILED|^\| tile fused|copy band" "$L/$e$v.log" | head -8
done; done
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool $B/cross_entropy --quick > "$L/$tool-ce.log" 2>&1; echo "$tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/$tool-ce.log"), checks failed: $(grep -c FAILED "$L/$tool-ce.log"), ok: $(grep -cE ' ok$' "$L/$tool-ce.log")"
done
(cd "$OUT" && tar czf logs.tgz l && rm -rf l)
