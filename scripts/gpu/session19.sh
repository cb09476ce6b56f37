#!/usr/bin/env bash
# Runs on the GPU machine from the repo root (nineteenth session): the issue-9 table in one call.
# GPU tests; softmax_regression at 8192x4096x1000 with every tile and both rescale widths
# (`--tiles`); compute-sanitizer memcheck and racecheck of softmax_regression --quick; the
# examples gemm, gemm_bias_act and softmax_regression; cuBLAS, PyTorch and Triton through
# bench/python/baseline.py (gemm, softmax_regression). Binaries come packed in
# $B/bins.tar.xz (release builds from the development machine). Logs in $OUT/logs.tgz; a
# summary is printed last.
#   B=.device-wg bash scripts/gpu/session19.sh
set -uo pipefail
B=${B:-.device-wg}
OUT=${OUT:-/tmp/out}
L=${L:-/tmp/s19}; mkdir -p "$L" "$OUT"
pack() { tar -czf "$OUT/logs.tgz" -C "$L" .; }
[ -e "$B/gemm" ] || (cd "$B" && tar xJf bins.tar.xz) || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$L/device.txt"
# run NAME CMD...: CMD's output in $L/NAME.log, its exit status and seconds last.
run() {
  local name=$1; shift
  SECONDS=0; timeout "${T:-240}" "$@" > "$L/$name.log" 2>&1
  echo "exit $? after $SECONDS s" >> "$L/$name.log"; pack
}
checks() { echo "$(grep -cE -- '-> ok|: ok' "$1") ok, $(grep -c FAILED "$1") failed, $(tail -1 "$1")"; }
run gpu_tests "$B/gpu_tests" --test-threads=1
run sr_tiles "$B/softmax_regression" --shape 8192x4096x1000 --tiles
for tool in memcheck racecheck; do
  T=200 run "${tool}_softmax_regression" compute-sanitizer --tool $tool "$B/softmax_regression" --quick
done
for ex in softmax_regression gemm gemm_bias_act; do run "$ex" "$B/$ex"; done
export PYTHONUNBUFFERED=1
T=300 run baseline_gemm python3 bench/python/baseline.py --filter gemm --skip gemm_bias_act --out "$L/baseline_gemm.json"
T=200 run baseline_sr python3 bench/python/baseline.py --filter softmax_regression --skip softmax_regression_simple --out "$L/baseline_sr.json"
echo "===== summary ($(head -2 "$L/device.txt" | tail -1))"
grep -hE "test result" "$L/gpu_tests.log"
echo "-- sr_tiles: $(checks "$L/sr_tiles.log")"; grep -E "^\| 8192" "$L/sr_tiles.log"
for f in "$L"/memcheck_*.log "$L"/racecheck_*.log; do
  echo "$(basename "$f"): $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tr '\n' ' ') $(checks "$f")"
done
for ex in softmax_regression gemm gemm_bias_act; do echo "-- $ex: $(checks "$L/$ex.log")"; done
grep -E "^\| (64x128x10|256x512x50|1024x1024x100|8192x4096x1000|4096x4096x32000) " "$L/softmax_regression.log" | grep -E "fused|gemm alone|graph" | cut -c1-130
grep -E "^\| *(4096x4096x4096|8192x8192x8192|4000x3000x1000|17x8192x1024|1x4096x4096) " "$L/gemm.log" | cut -c1-170
grep -E "^\| (4096|8192)" "$L/gemm_bias_act.log" | cut -c1-170
grep -E "^\| *(gemm|softmax_regression) " "$L/baseline_gemm.log" "$L/baseline_sr.log" | grep -vE "graph" | cut -d'|' -f2-9 | head -60
tail -1 "$L/baseline_gemm.log" "$L/baseline_sr.log"
pack
