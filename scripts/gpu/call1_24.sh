#!/usr/bin/env bash
# Twenty-fourth session, call 1: fused_bias_gelu_dropout, old (session start: GELU by the erf
# formula) and new (the language's `gelu`) binaries alternated, two rounds; the GPU tests
# (gpu_gelu new); ncu of the new bf16 four-words kernel (the 16384x4096 launch is the longest of
# the 8 profiled).
# Usage: bash scripts/gpu/call1_24.sh (binaries in .device-wg and .device-wg/old).
set -uo pipefail
[ -f .device-wg/bins.tar.xz ] && tar xJf .device-wg/bins.tar.xz -C .device-wg
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
ex=fused_bias_gelu_dropout
for round in 1 2; do
  vs="old new"; [ $round = 2 ] && vs="new old"
  for v in $vs; do
    bin=$B/$ex; [ $v = old ] && bin=$B/old/$ex
    timeout 200 $bin > "$L/$ex.$v.$round.log" 2>&1; echo "exit $?" >> "$L/$ex.$v.$round.log"
    echo "== $ex $v round $round: $(grep -c FAILED $L/$ex.$v.$round.log) failed, $(tail -1 $L/$ex.$v.$round.log)"
    grep -E "^\| tile|copy bandwidth|^[a-z].* on [0-9]+x[0-9]+ " "$L/$ex.$v.$round.log" | grep -v unfused | cut -c1-120
  done
done
timeout 150 $B/gpu_tests --test-threads=1 --nocapture > "$L/gpu_tests.log" 2>&1; echo "exit $?" >> "$L/gpu_tests.log"
grep -E "^test result|gelu on|FAILED|panicked" "$L/gpu_tests.log"
timeout 150 ncu --clock-control none -k regex:'bias_gelu_dropout4.*bf16' --launch-count 8 \
  --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy \
  --section LaunchStats --section ComputeWorkloadAnalysis --section InstructionStats \
  $B/$ex --quick > "$L/ncu.log" 2>&1
echo "ncu exit $?"
python3 - "$L/ncu.log" <<'PY'
import re,sys
t=open(sys.argv[1]).read()
blocks=re.split(r'\n  (?=bias_gelu_dropout4)', t)
best=None
for b in blocks:
    m=re.search(r'Duration\s+(\S+)\s+([\d.,]+)', b)
    if not m: continue
    d=float(m.group(2).replace(',',''))*(1000 if m.group(1)=='ms' else 1)
    if best is None or d>best[0]: best=(d,b)
if best:
    for l in best[1].splitlines():
        if re.search(r'Duration|Throughput|Issue Slots|Issued Ipc|Eligible|Active Warps|Warp Cycles|Registers|Achieved Occupancy|Theoretical Occupancy|No Eligible|Executed Ipc|Block Limit', l): print(l.strip())
PY
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
