#!/usr/bin/env bash
# Runs on the GPU machine from the repo root: why the GEMM of softmax regression at
# 8192x4096x1000 runs slower per program than at 4096^3. Times softmax_regression's fused
# kernel and its GEMM alone (gemm_wide, f32 logits) at several shapes (--shape), then ncu of the
# first fused-kernel and gemm_wide launches (the checks') at 8192x4096x1000 and 4096x4096x4096,
# caches not flushed. Logs in $OUT/logs.tgz, a summary last.
#   B=.device-wg bash scripts/gpu/sr_shape.sh
set -uo pipefail
B=${B:-.device-wg}
OUT=${OUT:-/tmp/out}
L=${L:-/tmp/srs}; mkdir -p "$L" "$OUT"
pack() { tar -czf "$OUT/logs.tgz" -C "$L" .; }
[ -e "$B/softmax_regression" ] || (cd "$B" && tar xJf bins.tar.xz) || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$L/device.txt"
SHAPES=${SHAPES:-8192x4096x1000 8192x4096x1024 16384x4096x1000 4096x4096x4096}
for s in $SHAPES; do
  timeout 120 "$B/softmax_regression" --shape "$s" > "$L/time_$s.log" 2>&1; echo "exit $?" >> "$L/time_$s.log"; pack
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,launch__grid_size,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
for s in ${NCU_SHAPES:-8192x4096x1000 4096x4096x4096}; do
  ncu --clock-control none --cache-control none -k regex:'gemm_wide|softmax_regression_wide' --launch-count 2 \
    --metrics $M "$B/softmax_regression" --shape "$s" > "$L/ncu_$s.log" 2>&1; pack
done
echo "===== summary ($(cat "$L/device.txt"))"
for s in $SHAPES; do grep -E "^\| $s" "$L/time_$s.log" | cut -c1-110; done
for s in ${NCU_SHAPES:-8192x4096x1000 4096x4096x4096}; do
  echo "-- ncu $s"
  grep -E "^  [a-z_]+.*\(|gpu__time|dram__bytes|hit_rate|grid_size|registers|sm__throughput|gmma|inst_executed|global_op_st" "$L/ncu_$s.log" | sed -E 's/ +/ /g' | head -80
done
pack
