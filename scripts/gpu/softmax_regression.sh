#!/usr/bin/env bash
# Runs on the GPU machine from the repo root (after scripts/gpu/build.sh here): the
# softmax_regression example with its sanitizers and SASS facts, the GPU tests, the gemm example
# on the sm_80 PTX (TILE_TARGET), and the Python baselines of softmax_regression; logs under
# $OUT, a short summary last.
#   bash .device-bin/softmax_regression.sh        (SMR_BASELINE=0 skips baseline.py)
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$OUT/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$OUT/gpu_tests.log"
echo "== softmax_regression example"; $B/softmax_regression > "$OUT/smr.log" 2>&1; echo "exit $?" >> "$OUT/smr.log"; grep -E "FAILED|exit|^\|" "$OUT/smr.log"
echo "== SASS of the softmax_regression kernels (sm_90a)"
for f in $B/ptx/softmax_regression__SPLIT_*T_f16.v0.sm_90a.ptx $B/ptx/rescale.v0.sm_90a.ptx; do
  [ -f "$f" ] || continue
  ptxas -arch=sm_90a -v "$f" -o /tmp/k.cubin 2>&1 | grep -E "registers|spill" | sed "s|^ptxas info *: |$(basename $f): |"
  cuobjdump --dump-sass /tmp/k.cubin | grep -oE "\b(HMMA|LDSM|LDGSTS|LDS|STS|BAR|LDG|STG|MUFU)[.A-Z0-9]*" | sort | uniq -c
done 2>&1 | tee "$OUT/sass.log"
echo "== memcheck / racecheck (softmax_regression --quick)"
compute-sanitizer --tool memcheck $B/softmax_regression --quick > "$OUT/memcheck.log" 2>&1; echo "exit $?" >> "$OUT/memcheck.log"; grep -E "ERROR SUMMARY|exit" "$OUT/memcheck.log"
compute-sanitizer --tool racecheck $B/softmax_regression --quick > "$OUT/racecheck.log" 2>&1; echo "exit $?" >> "$OUT/racecheck.log"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|exit" "$OUT/racecheck.log"
echo "== gemm example on the sm_80 PTX (TILE_TARGET=sm_80)"
TILE_TARGET=sm_80 $B/gemm > "$OUT/gemm_sm80.log" 2>&1; echo "exit $?" >> "$OUT/gemm_sm80.log"; grep -E "Running|FAILED|exit|^\|" "$OUT/gemm_sm80.log"
if [ "${SMR_BASELINE:-1}" = 1 ]; then
  echo "== bench/python/baseline.py --filter softmax_regression"
  PYTHONUNBUFFERED=1 timeout 420 python3 bench/python/baseline.py --filter softmax_regression --out "$OUT/baseline_smr.json" > "$OUT/baseline_smr.log" 2>&1; echo "exit $?" >> "$OUT/baseline_smr.log"
fi
echo; echo "===== summary"
grep -E "test result" "$OUT/gpu_tests.log"
grep -cE "\-> ok" "$OUT/smr.log" | sed 's/^/softmax_regression checks ok: /'; grep -c FAILED "$OUT/smr.log" | sed 's/^/softmax_regression checks failed: /'
grep -E "^\| [0-9]" "$OUT/smr.log"
grep -E "^\| [0-9]" "$OUT/gemm_sm80.log" | head -12
[ -f "$OUT/baseline_smr.log" ] && { grep -E "^\|" "$OUT/baseline_smr.log" | grep -v simple | head -60; tail -2 "$OUT/baseline_smr.log"; }
