#!/usr/bin/env bash
# Runs on the GPU machine from the repo root: softmax_regression's GEMM at 8192x4096xN for N =
# 992, 1000, 1008, 1016, 1024 (rows of w 64-, 16-, 32-, 16- and 128-byte aligned), cuBLAS at the
# same shapes (scripts/gpu/cublas_n.py), and ncu of one gemm_wide launch at N = 1000 and 1024
# (L2 sectors read, throughputs, warp stalls). Logs in $OUT/n.tgz.
B=.device-wg; L=/tmp/n; mkdir -p $L
[ -e .device-wg/softmax_regression ] || (cd .device-wg && tar xJf bins.tar.xz) || exit 1
for n in 992 1000 1008 1016 1024; do timeout 60 $B/softmax_regression --shape 8192x4096x$n > $L/t$n.log 2>&1; done
python3 scripts/gpu/cublas_n.py > $L/cublas.log 2>&1
M=gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
for n in 1000 1024; do ncu --clock-control none --cache-control none -k regex:gemm_wide --launch-count 1 --section WarpStateStats --metrics $M $B/softmax_regression --shape 8192x4096x$n > $L/ncu$n.log 2>&1; done
tar czf $OUT/n.tgz -C $L .
for n in 992 1000 1008 1016 1024; do grep -E "f16 .*(fused  |gemm alone)" $L/t$n.log | cut -c1-90; done
cat $L/cublas.log
for n in 1000 1024; do echo "-- ncu $n"; grep -E "gpu__time|ldgsts|wavefronts|srcunit|throughput|inst_executed|Stall|stall|Warp Cycles|Issued" $L/ncu$n.log | sed -E 's/ +/ /g'; done
