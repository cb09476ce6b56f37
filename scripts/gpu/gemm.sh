#!/usr/bin/env bash
# Runs on the GPU machine from the repo root (after scripts/gpu/build.sh here): the tensor-core
# checks and GEMM numbers in one call, logs under $OUT, a short summary last.
#   bash .device-bin/gemm.sh
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$OUT/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$OUT/gpu_tests.log"
echo "== gemm example"; $B/gemm > "$OUT/gemm.log" 2>&1; echo "exit $?" >> "$OUT/gemm.log"; cat "$OUT/gemm.log" | tail -40
echo "== gemm_bias_act example"; $B/gemm_bias_act > "$OUT/gemm_bias_act.log" 2>&1; echo "exit $?" >> "$OUT/gemm_bias_act.log"; grep -E "FAILED|exit|^\|" "$OUT/gemm_bias_act.log"
echo "== SASS of the gemm kernels (sm_90a): registers, spills, HMMA / LDSM / LDGSTS / LDS / STS / BAR"
for f in $B/ptx/gemm__*T_f16__O_f16.v*.sm_90a.ptx $B/ptx/gemm__*T_f16__O_f32.v0.sm_90a.ptx $B/ptx/gemm_bias_act__ACT_1*T_f16.v0.sm_90a.ptx $B/ptx/gemm_tf32.v*.sm_90a.ptx; do
  [ -f "$f" ] || continue
  ptxas -arch=sm_90a -v "$f" -o /tmp/k.cubin 2>&1 | grep -E "registers|spill" | sed "s|^ptxas info *: |$(basename $f): |"
  cuobjdump --dump-sass /tmp/k.cubin | grep -oE "\b(HMMA|LDSM|LDGSTS|LDS|STS|BAR|LDG|STG)[.A-Z0-9]*" | sort | uniq -c
done 2>&1 | tee "$OUT/sass.log"
echo "== ncu: gemm BN=128 f16 -> f16 4096^3 (the 41st gemm__ launch): bank conflicts, ldmatrix, throughput, stalls"
ncu --clock-control none --launch-skip 40 --launch-count 1 -k regex:gemm__ \
  --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_op_ldsm.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_mio_throttle.ratio,smsp__warps_active.avg.per_cycle_active \
  $B/gemm > "$OUT/ncu.log" 2>&1; grep -vE "^==PROF==|^check|^Running" "$OUT/ncu.log" | tail -25
echo "== ncu: gemm_tf32 4096^3 (its 2nd timed launch): bank conflicts of the per-register ld.shared reads, tensor pipe, stalls"
ncu --clock-control none --launch-skip 7 --launch-count 1 -k regex:gemm_tf32 \
  --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_mio_throttle.ratio \
  $B/gemm > "$OUT/ncu_tf32.log" 2>&1; grep -vE "^==PROF==|^check|^Running|^  [0-9]" "$OUT/ncu_tf32.log" | tail -16
echo "== cuBLAS through torch.matmul, same sizes (do_bench-style: median, L2 flushed)"
PYTHONUNBUFFERED=1 python3 - <<'PY' 2>&1 | tee "$OUT/cublas.log"
import torch, triton
from triton.testing import do_bench
for (m, n, k) in [(4096, 4096, 4096), (8192, 8192, 8192), (4000, 3000, 1000), (1, 4096, 4096), (17, 8192, 1024)]:
    for dt in (torch.float16, torch.bfloat16):
        a = torch.randn(m, k, device="cuda", dtype=dt); b = torch.randn(k, n, device="cuda", dtype=dt)
        ms = do_bench(lambda: torch.matmul(a, b), return_mode="median")
        print(f"cublas {m}x{n}x{k} {str(dt)[6:]}: {ms:.4f} ms {2*m*n*k/ms/1e9:.1f} TFLOP/s")
# f32 inputs on tf32 tensor cores (what `precision = tf32` is compared with), and plain f32.
for (m, n, k) in [(4096, 4096, 4096), (8192, 8192, 8192), (4000, 3000, 1000)]:
    a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
    for tf32 in (True, False):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        ms = do_bench(lambda: torch.matmul(a, b), return_mode="median")
        print(f"cublas {m}x{n}x{k} f32 ({'tf32' if tf32 else 'ieee'}): {ms:.4f} ms {2*m*n*k/ms/1e9:.1f} TFLOP/s")
    torch.backends.cuda.matmul.allow_tf32 = False
PY
echo "== memcheck / racecheck on small gemm shapes"
compute-sanitizer --tool memcheck $B/gemm --quick > "$OUT/memcheck.log" 2>&1; echo "exit $?" >> "$OUT/memcheck.log"; grep -E "ERROR SUMMARY|exit" "$OUT/memcheck.log"
compute-sanitizer --tool racecheck $B/gemm --quick > "$OUT/racecheck.log" 2>&1; echo "exit $?" >> "$OUT/racecheck.log"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|exit" "$OUT/racecheck.log"
compute-sanitizer --tool memcheck $B/gemm_bias_act --quick > "$OUT/memcheck_bias_act.log" 2>&1; echo "exit $?" >> "$OUT/memcheck_bias_act.log"; grep -E "ERROR SUMMARY|exit" "$OUT/memcheck_bias_act.log"
compute-sanitizer --tool racecheck $B/gemm_bias_act --quick > "$OUT/racecheck_bias_act.log" 2>&1; echo "exit $?" >> "$OUT/racecheck_bias_act.log"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|exit" "$OUT/racecheck_bias_act.log"
echo; echo "===== summary"
grep -E "test result" "$OUT/gpu_tests.log"
grep -cE "\-> ok" "$OUT/gemm.log" | sed 's/^/gemm checks ok: /'; grep -c FAILED "$OUT/gemm.log" | sed 's/^/gemm checks failed: /'
grep -E "^\| [0-9]" "$OUT/gemm.log"
grep -cE "\-> ok" "$OUT/gemm_bias_act.log" | sed 's/^/gemm_bias_act checks ok: /'; grep -c FAILED "$OUT/gemm_bias_act.log" | sed 's/^/gemm_bias_act checks failed: /'
grep -E "^\| [0-9]" "$OUT/gemm_bias_act.log"
grep cublas "$OUT/cublas.log"
if [ "${GEMM_BASELINE:-1}" = 1 ]; then
  echo "== bench/python/baseline.py --filter gemm (cuBLAS, Triton's tutorial matmul autotuned)"
  PYTHONUNBUFFERED=1 timeout 360 python3 bench/python/baseline.py --filter gemm --out "$OUT/baseline_gemm.json" > "$OUT/baseline_gemm.log" 2>&1; echo "exit $?" >> "$OUT/baseline_gemm.log"
  grep -E "^\|" "$OUT/baseline_gemm.log" | head -60; tail -3 "$OUT/baseline_gemm.log"
fi
