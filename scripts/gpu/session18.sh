#!/usr/bin/env bash
# Runs on the GPU machine from the repo root: the Hopper GEMM main loop, old build against new,
# in one call. Binaries come packed (`.device-wg/bins.tar.xz`, made by the developer from release
# builds: `new` at the top, `old/` beside). Phases: GPU tests (new), gemm and softmax_regression
# old/new in alternation (AB_ROUNDS rounds), ncu of one 4096^3 gemm_wide launch per side,
# cuBLAS and Triton's tutorial matmul through bench/python/baseline.py, the table last.
#   B=.device-wg bash scripts/gpu/session18.sh
set -uo pipefail
B=${B:-.device-wg}
OUT=${OUT:-/tmp/out}
L=${L:-$(mktemp -d)}; mkdir -p "$L"
mkdir -p "$OUT"
pack() { tar -czf "$OUT/logs.tgz" -C "$L" .; }
[ -e "$B/gemm" ] || (cd "$B" && tar xJf bins.tar.xz) || exit 1
bin_of() { if [ "$1" = new ]; then echo "$B/$2"; else echo "$B/$1/$2"; fi; }
SIDES=${AB_SIDES:-old new}
EXAMPLES=${AB_EXAMPLES:-gemm softmax_regression}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$L/device.txt"
if [ "${CHECKS:-1}" = 1 ]; then
  echo "== GPU tests (new)"; timeout 240 $B/gpu_tests --test-threads=1 > "$L/gpu_tests.log" 2>&1; grep -E "test result|FAILED|panicked" "$L/gpu_tests.log"; pack
fi
for round in $(seq 1 "${AB_ROUNDS:-2}"); do
  for ex in $EXAMPLES; do
    for side in $SIDES; do
      bin=$(bin_of $side $ex); [ -x "$bin" ] || continue
      SECONDS=0; timeout 200 $bin > "$L/$ex.$side.$round.log" 2>&1; echo "exit $? after $SECONDS s" >> "$L/$ex.$side.$round.log"
      echo "$ex $side round $round: $(grep -cE -- '-> ok|: ok' "$L/$ex.$side.$round.log") ok, $(grep -c FAILED "$L/$ex.$side.$round.log") failed, $(tail -1 "$L/$ex.$side.$round.log")"
      pack
    done
  done
done
if [ "${NCU:-1}" = 1 ]; then
  for side in $SIDES; do
    ncu --clock-control none --launch-skip ${NCU_SKIP:-60} --launch-count 1 -k regex:${NCU_KERNEL:-gemm_wide} \
      --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --metrics gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,smsp__inst_executed.sum,launch__registers_per_thread,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed \
      $(bin_of $side gemm) > "$L/ncu.$side.log" 2>&1
    pack
  done
fi
if [ "${BASELINE:-1}" = 1 ]; then
  echo "== baseline.py --filter gemm --skip gemm_bias_act"
  PYTHONUNBUFFERED=1 timeout ${BASELINE_TIMEOUT:-300} python3 bench/python/baseline.py --filter ${BASELINE_FILTER:-gemm} --skip gemm_bias_act --out "$L/baseline.json" > "$L/baseline.log" 2>&1; echo "exit $?" >> "$L/baseline.log"
  pack
fi
echo; echo "===== summary"
grep -sE "test result" "$L/gpu_tests.log"
python3 - "$L" "$SIDES" $EXAMPLES <<'PY'
import re, sys, glob
out, sides, exs = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
for ex in exs:
    rows = {}
    for f in sorted(glob.glob(f"{out}/{ex}.*.log")):
        side = f.split(".")[-3]
        col = None
        for line in open(f):
            c = [x.strip() for x in line.strip().strip("|").split("|")]
            hdr = [i for i, x in enumerate(c) if "TFLOP/s" in x or x.startswith("time") or x.startswith("ms") or "fused" in x]
            if hdr and not re.match(r"^\d", c[0]):
                col = hdr[0]
                continue
            if col is None or len(c) <= col or not re.match(r"^\d+x\d+x\d+$", c[0]):
                continue
            try: t = float(c[col])
            except ValueError: continue
            key = tuple(x for x in c if not re.match(r"^[\d.]+(x|%)?$", x))
            rows.setdefault((c[0],) + key, {}).setdefault(side, []).append(t)
    print(f"\n{ex}: first timing column, each side's rounds; ratio new/old of the medians")
    for k, v in rows.items():
        med = {s: sorted(v.get(s, [0]))[len(v.get(s, [0])) // 2] for s in sides}
        r = med[sides[-1]] / med[sides[0]] if med[sides[0]] else 0
        print(f"  {' | '.join(k):70s} " + " ".join(f"{s}={','.join(f'{x:.4g}' for x in v.get(s, []))}" for s in sides) + f"  {r:.3f}")
PY
for side in $SIDES; do
  echo "-- ncu $side"
  grep -hE "gpu__time|gmma|Duration|Compute \(SM\) Throughput|Memory Throughput|registers|Issued Warp|No Eligible|Warp Cycles Per Issued|bank|hit_rate|dram__" "$L/ncu.$side.log" | sed -E 's/ +/ /g' | head -20
done
grep -E "^\| *gemm" "$L/baseline.log" | head -40; tail -2 "$L/baseline.log"
pack; ls -la "$OUT"
