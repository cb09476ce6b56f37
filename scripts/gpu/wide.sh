#!/usr/bin/env bash
# Runs on the GPU machine from the repo root (after scripts/gpu/build.sh here): the wide fused
# kernels (gemm_bias_act_wide, softmax_regression_wide) against their unfused pairs and our
# gemm, cuBLAS / Triton baselines for the same families timed by bench/python/baseline.py, the
# GPU tests, sanitizers on the new kernels and their SASS (registers, spills).
#   B=.device-wg bash .device-wg/wide.sh            (everything but the gemm_bias_act baselines)
#   B=.device-wg PART=2 bash .device-wg/wide.sh     (gemm_bias_act again, with its baselines)
set -uo pipefail
PART=${PART:-1}
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
L=/tmp/wide-logs
mkdir -p "$OUT" "$L"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$L/device.txt"
if [ "$PART" = 2 ]; then
  echo "== gemm_bias_act"; timeout 240 $B/gemm_bias_act > "$L/gemm_bias_act.log" 2>&1; echo "exit $?" >> "$L/gemm_bias_act.log"
  PYTHONUNBUFFERED=1 timeout 330 python3 bench/python/baseline.py --filter gemm_bias_act --out "$L/baseline_gemm_bias_act.json" > "$L/baseline_gemm_bias_act.log" 2>&1; echo "exit $?" >> "$L/baseline_gemm_bias_act.log"
  tail -40 "$L/baseline_gemm_bias_act.log"
  grep -E "FAILED|exit|^\| [0-9]" "$L/gemm_bias_act.log"
  tar czf "$OUT/logs2.tgz" -C "$L" . && ls -la "$OUT"
  exit 0
fi
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$L/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$L/gpu_tests.log" | head -20
for ex in gemm gemm_bias_act softmax_regression; do
  echo "== $ex"; timeout 240 $B/$ex > "$L/$ex.log" 2>&1; echo "exit $?" >> "$L/$ex.log"; grep -E "FAILED|exit|refuses" "$L/$ex.log" | head -20
done
echo "== memcheck / racecheck (--quick: the awkward shapes, both tiles)"
for ex in gemm_bias_act softmax_regression; do
  compute-sanitizer --tool memcheck $B/$ex --quick > "$L/memcheck_$ex.log" 2>&1; echo "exit $?" >> "$L/memcheck_$ex.log"
  compute-sanitizer --tool racecheck $B/$ex --quick > "$L/racecheck_$ex.log" 2>&1; echo "exit $?" >> "$L/racecheck_$ex.log"
  echo "$ex: $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' $L/memcheck_$ex.log $L/racecheck_$ex.log | tr '\n' ' ')"
done
echo "== SASS (sm_90a, v0): registers, spills, HGMMA / LDGSTS"
for f in $B/ptx/gemm_bias_act_wide__ACT_1*T_f16.v0.sm_90a.ptx $B/ptx/softmax_regression_wide__SPLIT_1*T_f16.v0.sm_90a.ptx $B/ptx/gemm_wide__*T_f16__O_f16.v0.sm_90a.ptx; do
  [ -f "$f" ] || continue
  ptxas -arch=sm_90a -v "$f" -o /tmp/k.cubin 2>&1 | grep -E "registers|spill" | sed "s|^ptxas info *: |$(basename $f): |"
  cuobjdump --dump-sass /tmp/k.cubin | grep -oE "\b(HGMMA|LDGSTS|BAR|STL|LDL)[.A-Z0-9_]*" | sort | uniq -c
done 2>&1 | tee "$L/sass.log"
echo "== baselines (cuBLAS, Triton), bench/python/baseline.py"
for fam in softmax_regression; do
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/python/baseline.py --filter $fam --skip softmax_regression_simple --out "$L/baseline_$fam.json" > "$L/baseline_$fam.log" 2>&1; echo "exit $?" >> "$L/baseline_$fam.log"
  tail -30 "$L/baseline_$fam.log"
done
echo; echo "===== summary"
grep -E "test result" "$L/gpu_tests.log"
for l in gemm gemm_bias_act softmax_regression; do
  echo "$l: $(grep -cE '\-> ok|: ok' "$L/$l.log") ok, $(grep -c FAILED "$L/$l.log") failed, $(grep exit "$L/$l.log")"
done
echo "-- gemm"; grep -E "^\| [0-9]" "$L/gemm.log" | grep -E "4096x4096x4096|8192x8192x8192"
echo "-- gemm_bias_act"; grep -E "^\| [0-9]" "$L/gemm_bias_act.log"
echo "-- softmax_regression"; grep -E "^\| (8192|4096)" "$L/softmax_regression.log"
tar czf "$OUT/logs.tgz" -C "$L" . && ls -la "$OUT"
