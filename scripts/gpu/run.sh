#!/usr/bin/env bash
# Runs on the GPU machine from the repo root: every GPU check and benchmark, logs under $OUT,
# a short summary last. Usage: bash .device-bin/run.sh
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
echo "== GPU tests"; $B/gpu_tests --test-threads=1 2>&1 | tee "$OUT/gpu_tests.log"
echo "== fused_add_mul"; $B/fused_add_mul 2>&1 | tee "$OUT/fused_add_mul.log"
for ex in fused_softmax elementwise_chains fused_bias_gelu act_and_mul fused_layernorm fused_add_rmsnorm mean_center qk_norm_rope softmax_regression_simple gemm; do
  if [ -x "$B/$ex" ]; then
    echo "== $ex"; $B/$ex > "$OUT/$ex.log" 2>&1; echo "exit $?" >> "$OUT/$ex.log"; grep -E "FAILED|exit|^\| tile|^[a-z].*median" "$OUT/$ex.log" | head -40
  fi
done
echo "== launch_overhead"; $B/launch_overhead 2>&1 | tee "$OUT/launch_overhead.log"
echo "== memcheck"; compute-sanitizer --tool memcheck $B/fused_add_mul --quick > "$OUT/memcheck.log" 2>&1; echo "exit $?" >> "$OUT/memcheck.log"
tail -3 "$OUT/memcheck.log"
echo "== SASS (sm_90a) of some kernels: registers, spills, global memory instructions"
for k in add_mul.v0 qk_norm_rope.v0 ln_wide__BLOCK_8192__T_f32.v0 softmax_regression__BM_16__BK_32__BC_128.v0; do
  f=$B/ptx/$k.sm_90a.ptx
  [ -f "$f" ] || { echo "$k: no PTX at $f"; continue; }
  echo "-- $k"
  ptxas -arch=sm_90a -v "$f" -o /tmp/k.cubin 2>&1 | grep -E "registers|spill" | sed 's/^ptxas info *: //'
  cuobjdump --dump-sass /tmp/k.cubin | grep -oE "(LDG|STG|LDS|STS)[.A-Z0-9]*" | sort | uniq -c
done 2>&1 | tee "$OUT/sass.log"
echo "== every kernel's PTX through this machine's ptxas (the CUDA version the driver JIT matches), sm_90a: spills"
for f in $B/ptx/*.sm_90a.ptx; do
  r=$(ptxas -arch=sm_90a -v "$f" -o /dev/null 2>&1)
  if echo "$r" | grep -qE "[1-9][0-9]* bytes spill (stores|loads)"; then echo "SPILL $(basename "$f"): $(echo "$r" | grep -E 'spill|Used' | tr '\n' ' ')"; fi
  echo "$(basename "$f") $(echo "$r" | grep -oE 'Used [0-9]+ registers')" >> "$OUT/registers.log"
done 2>&1 | tee "$OUT/spills.log"
echo "ptxas $(ptxas --version | tail -1): $(ls $B/ptx/*.sm_90a.ptx | wc -l) kernels for sm_90a, $(grep -c SPILL "$OUT/spills.log") with spills" | tee -a "$OUT/spills.log"
echo "== tile-bench, then the PyTorch/Triton baseline, then the joined table (under $OUT/bench)"
mkdir -p "$OUT/bench"
$B/tile-bench --out "$OUT/bench" > "$OUT/tile-bench.log" 2>&1; echo "exit $?" >> "$OUT/tile-bench.log"
tail -3 "$OUT/tile-bench.log"
python3 bench/python/baseline.py --out "$OUT/bench/baseline.json" > "$OUT/baseline.log" 2>&1; echo "exit $?" >> "$OUT/baseline.log"
tail -3 "$OUT/baseline.log"
python3 bench/join.py "$OUT/bench" > "$OUT/join.log" 2>&1; echo "exit $?" >> "$OUT/join.log"
tail -3 "$OUT/join.log"
echo; echo "===== summary"
grep -E "test result" "$OUT/gpu_tests.log"
grep -E "check n|tile (un)?fused|copy bandwidth" "$OUT/fused_add_mul.log"
grep -E "launch cost" "$OUT/launch_overhead.log"
grep -E "ERROR SUMMARY" "$OUT/memcheck.log"
tail -1 "$OUT/spills.log"
for ex in fused_softmax elementwise_chains fused_bias_gelu act_and_mul fused_layernorm fused_add_rmsnorm mean_center qk_norm_rope softmax_regression_simple gemm; do
  [ -f "$OUT/$ex.log" ] && echo "$ex: $(grep -c -- '-> ok' "$OUT/$ex.log") checks ok, $(grep -c FAILED "$OUT/$ex.log") failed, $(tail -1 "$OUT/$ex.log")"
done
echo "tile-bench: $(grep -E '^checks:' "$OUT/tile-bench.log" | tail -1), $(tail -1 "$OUT/tile-bench.log"); baseline: $(grep -E '^checks:' "$OUT/baseline.log" | tail -1), $(tail -1 "$OUT/baseline.log")"
echo "joined table: $OUT/bench/joined.md ($(tail -1 "$OUT/join.log")); tile tables: $OUT/bench/tile.md; plots: $OUT/bench/plots, $OUT/bench/joined_plots"
