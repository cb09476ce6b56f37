#!/usr/bin/env bash
# Issue 12 on the GPU machine: streams, events, graphs, preload, several GPUs, cudarc interop,
# the `tracing` events, the coexistence crate's device half, the whole GPU test suite (the runtime
# now takes cudarc's newest bindings where no nvcc is found at build time), compute-sanitizer on
# the new tests, and two examples whose graph rows now go through `Device::capture`.
# Binaries from scripts/gpu/build.sh plus streams_tests, tracing_tests and coexist_tests.
#   B=.device-bin bash .device-bin/interop.sh      (logs under $OUT)
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/logs"
L="$OUT/logs"
status() { printf '%-28s %s\n' "$1" "$2" >> "$OUT/summary.txt"; }
run() {
  local name=$1; shift
  "$@" > "$L/$name.log" 2>&1
  local rc=$?
  status "$name" "exit $rc"
  tail -4 "$L/$name.log" | sed "s/^/  [$name] /"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$L/device.txt"
run streams_tests "$B/streams_tests" --test-threads=1 --nocapture
run tracing_tests "$B/tracing_tests" --nocapture
run coexist_tests "$B/coexist_tests" --nocapture
run gpu_tests "$B/gpu_tests" --test-threads=1
run launch_overhead "$B/launch_overhead"
run multi_gpu "$B/multi_gpu"
run cudarc_interop "$B/cudarc_interop"
run memcheck_streams compute-sanitizer --tool memcheck "$B/streams_tests" --test-threads=1
run racecheck_streams compute-sanitizer --tool racecheck "$B/streams_tests" --test-threads=1
run fused_layernorm "$B/fused_layernorm"
run fused_softmax "$B/fused_softmax"
grep -h "first launch\|launch cost" "$L/launch_overhead.log" >> "$OUT/summary.txt"
grep -h "CUDA graph" "$L/fused_layernorm.log" "$L/fused_softmax.log" | grep -v "^check" | head -20 >> "$OUT/summary.txt"
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$L"/memcheck_streams.log "$L"/racecheck_streams.log >> "$OUT/summary.txt"
grep -h "test result" "$L"/*_tests.log >> "$OUT/summary.txt"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
cat "$OUT/summary.txt"
