#!/usr/bin/env bash
# Cubins embedded at build time: first-launch latency with them and with TILE_CUBIN=0 (PTX
# compiled by the driver), the GPU suite, the tracing test (module loads say cubin=true), and the
# GEMM example's checks from cubins.
set -uo pipefail
B=${B:-.device-wg}; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/logs"; L=$OUT/logs
run() { local n=$1; shift; "$@" > "$L/$n.log" 2>&1; echo "$n exit $?" >> "$OUT/summary.txt"; }
for i in 1 2 3; do
  run launch_cubin_$i env "$B/launch_overhead"
  run launch_ptx_$i env TILE_CUBIN=0 "$B/launch_overhead"
done
run gpu_tests "$B/gpu_tests" --test-threads=1
run gpu_tests_ptx env TILE_CUBIN=0 "$B/gpu_tests" --test-threads=1
run streams_tests "$B/streams_tests" --test-threads=1
run tracing_tests "$B/tracing_tests" --nocapture
run gemm_quick "$B/gemm" --quick
run gemm_first env "$B/gemm" --quick
run fused_softmax "$B/fused_softmax"
for f in "$L"/launch_*.log; do echo "$(basename $f): $(grep 'first launch' $f)"; done >> "$OUT/summary.txt"
grep -h "test result" "$L"/*tests*.log >> "$OUT/summary.txt"
grep -h "ok\b\|FAILED" "$L/gemm_quick.log" | tail -3 >> "$OUT/summary.txt"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
cat "$OUT/summary.txt"
