#!/usr/bin/env bash
# Runs on the GPU machine from the repo root (after scripts/gpu/build.sh here): the tensor-core
# examples' checks and timings (gemm, gemm_bias_act, softmax_regression; timed as
# bench/python/baseline.py times, see examples/common/mod.rs: sample_ms) and cuBLAS on the gemm
# sizes through triton.testing.do_bench in the same call; logs under $OUT, the tables last.
# gemm.sh adds the SASS, ncu and sanitizer checks and the Triton baseline.
#   bash .device-bin/tc.sh
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for ex in gemm gemm_bias_act softmax_regression; do
  SECONDS=0; $B/$ex > "$OUT/$ex.log" 2>&1; echo "exit $? after $SECONDS s" >> "$OUT/$ex.log"
done
PYTHONUNBUFFERED=1 python3 - > "$OUT/cublas.log" 2>&1 <<'PY'
import torch
from triton.testing import do_bench
for (m, n, k) in [(4096, 4096, 4096), (8192, 8192, 8192), (4000, 3000, 1000), (1, 4096, 4096), (17, 8192, 1024)]:
    for dt in (torch.float16, torch.bfloat16):
        a = torch.randn(m, k, device="cuda", dtype=dt); b = torch.randn(k, n, device="cuda", dtype=dt)
        ms = do_bench(lambda: torch.matmul(a, b), return_mode="median")
        print(f"cublas {m}x{n}x{k} {str(dt)[6:]}: {ms:.4f} ms {2*m*n*k/ms/1e9:.1f} TFLOP/s")
PY
echo "===== tensor-core examples"
for ex in gemm gemm_bias_act softmax_regression; do
  echo "-- $ex: $(grep -cE -- '-> ok' "$OUT/$ex.log") checks ok, $(grep -c FAILED "$OUT/$ex.log") failed, $(tail -1 "$OUT/$ex.log")"
  grep -E "^\| [0-9]" "$OUT/$ex.log" | grep -vE "^\| (1x|17x)" | head -40
done
cat "$OUT/cublas.log"
