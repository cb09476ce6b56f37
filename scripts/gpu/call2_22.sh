#!/usr/bin/env bash
# Twenty-second session, call 2: did sector pairs halve the L2 sectors the GEMM reads at
# 8192x4096x1000, and what does the code cost at x1024? ncu of softmax_regression's `gemm_wide`
# launch (f32 logits, the "gemm alone" row), old and new binaries, N = 1000 and 1024: time, L2
# sectors read, cp.async requests and sectors, instructions, warp states. `force`: new, built
# with every row's copies rotated (TILE_SECTOR_FORCE=1, a temporary switch), to test the
# lane-pair merging in this kernel.
# Usage: bash scripts/gpu/call2_22.sh (binaries in .device-wg, as call1_22.sh).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
(cd $B && tar xJf bins.tar.xz) || exit 1
M=gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
for n in 1000 1024; do
  for v in old new force; do
    bin=$B/softmax_regression; [ $v != new ] && bin=$B/$v/softmax_regression
    timeout 120 ncu --clock-control none -k regex:gemm_wide --launch-skip 2 --launch-count 1 --section WarpStateStats --metrics $M $bin --shape 8192x4096x$n > "$L/ncu$n.$v.log" 2>&1
    echo "== N=$n $v"
    grep -E "gpu__time|ldgsts|srcunit|throughput|inst_executed|bank_conflicts|Warp Cycles Per Issued" "$L/ncu$n.$v.log" | sed -E 's/ +/ /g'
  done
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
