#!/usr/bin/env bash
# Twenty-first session, call 5: ncu of tile's ce_loop_full and the Liger-style kernel on
# 4096 x 128256 f32. The cross_entropy binary had an experiment-only switch (EXP_ONLY_BENCH: no
# checks, only that shape's f32 timings, not committed); .device-wg holds it, baseline.py and
# liger_drive_21.py (as liger_drive.py).
set -uo pipefail
B=.device-wg; L=$OUT/logs; mkdir -p $L
M=smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct,smsp__warp_issue_stalled_membar_per_warp_active.pct,launch__registers_per_thread,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio
EXP_ONLY_BENCH=1 timeout 200 ncu --clock-control none --kernel-name regex:ce_loop_full --launch-skip 3 --launch-count 1 --section WarpStateStats --section MemoryWorkloadAnalysis --metrics $M $B/cross_entropy > $L/ncu.tile.log 2>&1
timeout 200 ncu --clock-control none --kernel-name regex:liger --launch-skip 2 --launch-count 1 --section WarpStateStats --section MemoryWorkloadAnalysis --metrics $M python3 $B/liger_drive.py > $L/ncu.liger.log 2>&1
for k in tile liger; do echo "== $k"; grep -E "dram__|lts__|smsp__|sm__|gpu__time|launch__reg|L2 Hit|Mem Busy|Max Bandwidth|DRAM Throughput|Stall|Warp Cycles Per Issued" $L/ncu.$k.log | sed 's/  */ /g' | head -40; done
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
