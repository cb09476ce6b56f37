#!/usr/bin/env bash
# Runs on the GPU machine from the repo root: the eighteenth session's closing call. GPU tests,
# gemm / softmax_regression old and new (old: the build before this session's loop changes),
# gemm_bias_act new, compute-sanitizer on the new gemm and softmax_regression (--quick shapes),
# cuBLAS and Triton's tutorial matmul through bench/python/baseline.py; logs in $OUT/final.tgz.
#   B=.device-wg bash scripts/gpu/final18.sh
set -uo pipefail
B=${B:-.device-wg}
OUT=${OUT:-/tmp/out}
L=${L:-/tmp/final}; mkdir -p "$L" "$OUT"
pack() { tar -czf "$OUT/final.tgz" -C "$L" .; }
[ -e "$B/gemm" ] || (cd "$B" && tar xJf bins.tar.xz) || exit 1
AB_SIDES="old new" AB_EXAMPLES="gemm softmax_regression" AB_ROUNDS=1 NCU=0 BASELINE=0 L=$L OUT=$L/ab bash scripts/gpu/session18.sh > "$L/ab.txt" 2>&1; pack
SECONDS=0; timeout 240 $B/gemm_bias_act > "$L/gemm_bias_act.log" 2>&1; echo "exit $? after $SECONDS s" >> "$L/gemm_bias_act.log"; pack
for ex in gemm softmax_regression; do
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool $B/$ex --quick > "$L/${tool}_$ex.log" 2>&1; echo "exit $?" >> "$L/${tool}_$ex.log"
  done
  pack
done
PYTHONUNBUFFERED=1 timeout 200 python3 bench/python/baseline.py --filter gemm --skip gemm_bias_act --out "$L/baseline.json" > "$L/baseline.log" 2>&1; echo "exit $?" >> "$L/baseline.log"; pack
echo "===== summary"
grep -E "test result|round" "$L/ab.txt"
sed -n '/^gemm: first/,$p' "$L/ab.txt" | grep -E "gemm:|softmax_regression:|4096x4096x4096|8192x8192x8192|4000x3000x1000|17x8192|1x4096|8192x4096x1000|4096x4096x32000" | cut -c1-170
echo "-- gemm_bias_act: $(grep -cE -- '-> ok|: ok' $L/gemm_bias_act.log) ok, $(grep -c FAILED $L/gemm_bias_act.log) failed, $(tail -1 $L/gemm_bias_act.log)"
grep -E "^\| (4096|8192)" "$L/gemm_bias_act.log"
for f in "$L"/memcheck_*.log "$L"/racecheck_*.log; do echo "$(basename $f): $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tr '\n' ' ') $(grep -cE -- '-> ok|: ok' $f) ok, $(grep -c FAILED $f) failed, $(tail -1 $f)"; done
grep -E "^\| *gemm" "$L/baseline.log" | grep -E "cublas|triton" | grep -v graph | head -24; tail -2 "$L/baseline.log"
pack
