#!/usr/bin/env bash
# Twenty-fourth session, call 3: the probe examples/dropout_probe, second set of variants (of the fused
# four-words bias + GELU + dropout kernel: rows per program, block, warps, next-row prefetch),
# twice: 8 and 16 warps, blocks of 1024, next-row prefetch; ncu of 8 warps prefetch R8 bf16.
# Usage: bash scripts/gpu/call3_24.sh (the probe in .device-wg/bins.tar.xz).
set -uo pipefail
[ -f .device-wg/bins.tar.xz ] && tar xJf .device-wg/bins.tar.xz -C .device-wg
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
for round in 1 2; do
  timeout 200 $B/dropout_probe > "$L/probe.$round.log" 2>&1; echo "exit $?" >> "$L/probe.$round.log"
  cat "$L/probe.$round.log"
done
for k in 'pf_w8__BLOCK_2048__ROWS_8__T_bf16'; do
  timeout 150 ncu --clock-control none -k regex:"$k" --launch-count 1 \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis \
    --metrics smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_not_selected,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_drain,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active \
    $B/dropout_probe > "$L/ncu.$k.log" 2>&1
  echo "== ncu $k (exit $?)"
  grep -E "Duration|DRAM Throughput|Issue Slots Busy|Issued Ipc|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit Reg|per_issue_active|pipe_" "$L/ncu.$k.log" | sed 's/  */ /g'
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
