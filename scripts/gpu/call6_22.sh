#!/usr/bin/env bash
# Twenty-second session, calls 6 and 7: the joined tables of issue 9's families on the final
# build: tile-bench and bench/python/baseline.py (cuBLAS through PyTorch, Triton's tutorial
# matmul autotuned, Triton softmax-regression kernels), timed alike, joined by bench/join.py.
# Usage: FAMILY=gemm bash scripts/gpu/call6_22.sh (gemm and gemm_bias_act), then
#        FAMILY=softmax_regression bash scripts/gpu/call6_22.sh.
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L/bench"
F=${FAMILY:-gemm}
(cd $B && tar xJf bins.tar.xz) || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
timeout 200 $B/tile-bench --filter "$F" --out "$L/bench" > "$L/tile-bench.log" 2>&1; echo "tile-bench exit $?"; tail -2 "$L/tile-bench.log"
skip=""; [ "$F" = softmax_regression ] && skip="--skip softmax_regression_simple"
timeout 330 python3 bench/python/baseline.py --filter "$F" $skip --out "$L/bench/baseline.json" > "$L/baseline.log" 2>&1; echo "baseline exit $?"; tail -2 "$L/baseline.log"
python3 bench/join.py "$L/bench" > "$L/join.log" 2>&1; echo "join exit $?"
grep -E "^\|" "$L/bench/joined.md" | cut -c1-160 | head -60
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
