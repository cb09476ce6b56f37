#!/usr/bin/env bash
# Runs on the GPU machine from the repo root (after scripts/gpu/build.sh here): the Hopper
# `wgmma` path against the `mma.sync` path of the same binaries (TILE_TARGET=sm_80) in one call,
# with the GPU tests, the tensor-core examples, SASS facts, sanitizers and cuBLAS / Triton.
#   bash .device-bin/wgmma.sh
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
# Logs here, packed into $OUT/logs.tgz at the end (few files come back from $OUT).
L=/tmp/wgmma-logs
mkdir -p "$OUT" "$L"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$L/device.txt"
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$L/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$L/gpu_tests.log" | head -20
echo "== gemm example, default target (sm_90a: wgmma)"; timeout 240 $B/gemm > "$L/gemm.log" 2>&1; echo "exit $?" >> "$L/gemm.log"; grep -E "FAILED|exit|^\|" "$L/gemm.log" | head -60
echo "== gemm example, TILE_TARGET=sm_80 (mma.sync)"; TILE_TARGET=sm_80 timeout 240 $B/gemm > "$L/gemm_sm80.log" 2>&1; echo "exit $?" >> "$L/gemm_sm80.log"; grep -E "FAILED|exit|^\|" "$L/gemm_sm80.log" | head -60
for ex in gemm_bias_act softmax_regression; do
  echo "== $ex (default target)"; timeout 200 $B/$ex > "$L/$ex.log" 2>&1; echo "exit $?" >> "$L/$ex.log"; grep -E "FAILED|exit|^\|" "$L/$ex.log" | head -40
done
echo "== SASS (sm_90a): registers, spills, HGMMA / LDGSTS / BAR / WARPSYNC"
for f in $B/ptx/gemm__BM_128__BN_128__BK_32__GM_8__T_f16__O_f16.v0.sm_90a.ptx $B/ptx/gemm_wide__*T_f16__O_f16.v0.sm_90a.ptx $B/ptx/gemm_wide__*T_f16__O_f16.v1.sm_90a.ptx; do
  [ -f "$f" ] || continue
  ptxas -arch=sm_90a -v "$f" -o /tmp/k.cubin 2>&1 | grep -E "registers|spill|warn|Performance" | sed "s|^ptxas info *: |$(basename $f): |"
  cuobjdump --dump-sass /tmp/k.cubin | grep -oE "\b(HGMMA|HMMA|LDSM|LDGSTS|BAR|WARPGROUP|LDG|STG)[.A-Z0-9_]*" | sort | uniq -c
done 2>&1 | tee "$L/sass.log"
echo "== ncu: gemm_wide f16 -> f16 at 4096^3 (one launch)"
ncu --clock-control none --launch-skip 60 --launch-count 1 -k regex:gemm_wide \
  --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__warps_active.avg.per_cycle_active,launch__registers_per_thread,launch__occupancy_limit_shared_mem \
  $B/gemm > "$L/ncu.log" 2>&1; grep -vE "^==PROF==|^check|^Running|^  [0-9]" "$L/ncu.log" | tail -16
echo "== memcheck / racecheck on small gemm shapes"
compute-sanitizer --tool memcheck $B/gemm --quick > "$L/memcheck.log" 2>&1; echo "exit $?" >> "$L/memcheck.log"; grep -E "ERROR SUMMARY|exit" "$L/memcheck.log"
compute-sanitizer --tool racecheck $B/gemm --quick > "$L/racecheck.log" 2>&1; echo "exit $?" >> "$L/racecheck.log"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|exit" "$L/racecheck.log"
echo "== cuBLAS through torch.matmul (do_bench median, L2 flushed)"
PYTHONUNBUFFERED=1 timeout 120 python3 - <<'PY' 2>&1 | tee "$L/cublas.log"
import torch
from triton.testing import do_bench
for (m, n, k) in [(4096, 4096, 4096), (8192, 8192, 8192), (4000, 3000, 1000), (1, 4096, 4096), (17, 8192, 1024)]:
    for dt in (torch.float16, torch.bfloat16):
        a = torch.randn(m, k, device="cuda", dtype=dt); b = torch.randn(k, n, device="cuda", dtype=dt)
        ms = do_bench(lambda: torch.matmul(a, b), return_mode="median")
        print(f"cublas {m}x{n}x{k} {str(dt)[6:]}: {ms:.4f} ms {2*m*n*k/ms/1e9:.1f} TFLOP/s")
PY
echo; echo "===== summary"
grep -E "test result" "$L/gpu_tests.log"
for l in gemm gemm_sm80 gemm_bias_act softmax_regression; do
  echo "$l: $(grep -cE '\-> ok|: ok' "$L/$l.log") ok, $(grep -c FAILED "$L/$l.log") failed, $(grep exit "$L/$l.log")"
done
echo "-- gemm (wgmma)"; grep -E "^\| [0-9]" "$L/gemm.log"
echo "-- gemm (TILE_TARGET=sm_80)"; grep -E "^\| [0-9]" "$L/gemm_sm80.log"
grep cublas "$L/cublas.log"
tar czf "$OUT/logs.tgz" -C "$L" . && ls -la "$OUT"
