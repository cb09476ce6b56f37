#!/usr/bin/env bash
# Runs on the GPU machine from the repo root: an A/B comparison of the tensor-core examples,
# `.device-bin/<ex>` (`new`, this build) against `.device-bin/old/<ex>` (`old`, the build to
# compare with) and any other builds in `.device-bin/<side>/`, run in turn, twice, in the same
# call so drift between calls does not enter the ratios; the GPU tests, racecheck and memcheck of
# the new build's small shapes, one ncu profile per side of the 4096³ f16 GEMM, and cuBLAS
# through do_bench. Logs in $OUT/ab.tgz, the table last.
#   AB_SIDES="old new s4" AB_EXAMPLES="gemm gemm_bias_act" bash .device-bin/ab.sh
# AB_SANITIZE lists the new build's binaries racecheck and memcheck run (default: gemm
# gemm_bias_act; `gpu_tests` runs every GPU test under them), each run cut at AB_SAN_TIMEOUT
# seconds (300).
set -uo pipefail
B=${B:-.device-bin}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
EXAMPLES=${AB_EXAMPLES:-gemm gemm_bias_act}
SIDES=${AB_SIDES:-old new}
LOG=$(mktemp -d)
# The logs so far, packed after every phase (a call cut off by its time limit keeps them).
pack() { tar -czf "$OUT/ab.tgz" -C "$LOG" .; }
ROUNDS=${AB_ROUNDS:-2}
NCU_SIDES=${AB_NCU_SIDES:-$SIDES}
bin_of() { if [ "$1" = new ]; then echo "$B/$2"; else echo "$B/$1/$2"; fi; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$LOG/device.txt"
CHECKS=${AB_CHECKS:-1}
if [ "$CHECKS" = 1 ]; then
  echo "== GPU tests"; $B/gpu_tests --test-threads=1 > "$LOG/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$LOG/gpu_tests.log"
fi
for round in $(seq 1 "$ROUNDS"); do
  for ex in $EXAMPLES; do
    for side in $SIDES; do
      bin=$(bin_of $side $ex)
      [ -x "$bin" ] || continue
      SECONDS=0; $bin > "$LOG/$ex.$side.$round.log" 2>&1; echo "exit $? after $SECONDS s" >> "$LOG/$ex.$side.$round.log"
      pack
    done
  done
done
echo "== racecheck / memcheck (B, --quick shapes; gpu_tests: every GPU test)"
for ex in $([ "$CHECKS" = 1 ] && echo ${AB_SANITIZE:-gemm gemm_bias_act}); do
  if [ "$ex" = gpu_tests ]; then args="--test-threads=1"; else args="--quick"; fi
  timeout ${AB_SAN_TIMEOUT:-300} compute-sanitizer --tool racecheck $B/$ex $args > "$LOG/racecheck_$ex.log" 2>&1; echo "exit $?" >> "$LOG/racecheck_$ex.log"
  timeout ${AB_SAN_TIMEOUT:-300} compute-sanitizer --tool memcheck $B/$ex $args > "$LOG/memcheck_$ex.log" 2>&1; echo "exit $?" >> "$LOG/memcheck_$ex.log"
  pack
done
echo "== ncu, 41st gemm__ launch (4096^3 f16 BN=128)"
for side in $NCU_SIDES; do
  bin=$(bin_of $side gemm)
  ncu --clock-control none --launch-skip 40 --launch-count 1 -k regex:gemm__ \
    --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_mio_throttle.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_not_selected.ratio,smsp__average_warp_latency_issue_stalled_selected.ratio,smsp__average_warp_latency_issue_stalled_dispatch_stall.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,launch__registers_per_thread \
    $bin > "$LOG/ncu.$side.log" 2>&1
  # Shared-memory and L1 throughput, in a call of its own (an unknown metric fails only this one).
  ncu --clock-control none --launch-skip 40 --launch-count 1 -k regex:gemm__ \
    --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    $bin > "$LOG/ncu_smem.$side.log" 2>&1
  pack
done
PYTHONUNBUFFERED=1 python3 - > "$LOG/cublas.log" 2>&1 <<'PY'
import torch
from triton.testing import do_bench
for (m, n, k) in [(4096, 4096, 4096), (8192, 8192, 8192), (4000, 3000, 1000)]:
    for dt in (torch.float16, torch.bfloat16):
        a = torch.randn(m, k, device="cuda", dtype=dt); b = torch.randn(k, n, device="cuda", dtype=dt)
        ms = do_bench(lambda: torch.matmul(a, b), return_mode="median")
        print(f"cublas {m}x{n}x{k} {str(dt)[6:]}: {ms:.4f} ms {2*m*n*k/ms/1e9:.1f} TFLOP/s")
PY
echo; echo "===== summary"
grep -sE "test result" "$LOG/gpu_tests.log"
for f in "$LOG"/*.log; do
  case $f in *racecheck*|*memcheck*) echo "$(basename $f): $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tr '\n' ' ') $(tail -1 $f)";; esac
done
for ex in $EXAMPLES; do
  for f in "$LOG"/$ex.*.log; do echo "$(basename $f): $(grep -cE -- '-> ok' $f) ok, $(grep -c FAILED $f) failed, $(tail -1 $f)"; done
done
python3 - "$LOG" "$SIDES" $EXAMPLES <<'PY'
import re, sys, glob
out, sides, exs = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
for ex in exs:
    rows = {}
    for f in sorted(glob.glob(f"{out}/{ex}.*.log")):
        side = f.split(".")[-3]
        col = None
        for line in open(f):
            c = [x.strip() for x in line.strip().strip("|").split("|")]
            if any("TFLOP/s" in x for x in c) and not re.match(r"^\d", c[0]):
                col = next(i for i, x in enumerate(c) if "TFLOP/s" in x)
                continue
            if col is None or len(c) <= col or not re.match(r"^\d+x\d+x\d+$", c[0]):
                continue
            if c[0].startswith(("1x", "17x", "64x")):
                continue
            try: t = float(c[col])
            except ValueError: continue
            key = tuple(x for x in c if not re.match(r"^[\d.]+(x|%)?$", x))
            rows.setdefault(key, {}).setdefault(side, []).append(t)
    print(f"\n{ex}: TFLOP/s (first TFLOP/s column), best of the rounds; ratios to {sides[0]}")
    print(f"  {'case':56s} " + " ".join(f"{s:>8s}" for s in sides) + " " + " ".join(f"{s + '/' + sides[0]:>9s}" for s in sides[1:]))
    for k, v in rows.items():
        best = [max(v.get(s, [0])) for s in sides]
        ratios = [b / best[0] if best[0] else 0 for b in best[1:]]
        print(f"  {' | '.join(k):56s} " + " ".join(f"{b:8.1f}" for b in best) + " " + " ".join(f"{r:9.3f}" for r in ratios))
PY
for side in $NCU_SIDES; do
  echo "-- ncu $side"
  grep -hE "gpu__time|hmma|inst_executed|stalled_(barrier|long|short|math|wait|mio)|bank|registers|l1tex__|lts__|dram__|==ERROR|rror" "$LOG/ncu.$side.log" "$LOG/ncu_smem.$side.log" | sed -E 's/ +/ /g'
done
cat "$LOG/cublas.log"
tar -czf "$OUT/ab.tgz" -C "$LOG" .
