#!/usr/bin/env bash
# Session 21 call 2: ncu of the bf16 four-words GELU dropout kernels (old 1024, folded 1024/2048/4096).
set -uo pipefail
B=.device-wg; L=$OUT/logs; mkdir -p $L
M=smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fmaheavy.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fmalite.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active
for k in bias_gelu_dropout4__BLOCK_1024__T_bf16 bgd4x__BLOCK_1024__T_bf16 bgd4x__BLOCK_2048__T_bf16 bgd4x__BLOCK_4096__T_bf16; do
  EXP_BENCH_ONLY=1 timeout 120 ncu --clock-control none --kernel-name $k --launch-skip 3 --launch-count 1 \
    --section WarpStateStats --section Occupancy --metrics $M $B/fused_bias_gelu_dropout > $L/ncu.$k.log 2>&1
  echo "== $k"; grep -E "issue_active|cycles_elapsed.avg.per_second|pipe_|inst_executed.sum|dram__throughput|time_duration|warps_active|Achieved Occupancy|Stall|Registers Per|Theoretical Occ" $L/ncu.$k.log | sed 's/  */ /g' | head -40
done
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
