#!/usr/bin/env bash
# Twenty-second session, call 5: issue 9's examples on the final build, in one call. GPU tests;
# gemm, gemm_bias_act and softmax_regression at every size (wgmma on sm_90a), gemm on the sm_80
# PTX (mma.sync, TILE_TARGET=sm_80); compute-sanitizer memcheck and racecheck of the three
# `--quick`; SASS facts of the main kernels (registers, spills, the main loop's HGMMA / HMMA /
# LDSM / LDGSTS / BAR); ncu shared-memory bank conflicts of the mma.sync and wgmma GEMMs.
# Usage: bash scripts/gpu/call5_22.sh (binaries in .device-wg/bins.tar.xz, PTX in ptx.tar.xz).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
(cd $B && tar xJf bins.tar.xz && tar xJf ptx.tar.xz) || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
timeout 120 $B/gpu_tests --test-threads=1 > "$L/gpu_tests.log" 2>&1; grep "test result" "$L/gpu_tests.log"
for e in gemm gemm_bias_act softmax_regression; do
  timeout 150 $B/$e > "$L/$e.log" 2>&1; echo "exit $?" >> "$L/$e.log"
  echo "$e: $(grep -c -- '-> ok' $L/$e.log) checks ok, $(grep -c FAILED $L/$e.log) failed, $(tail -1 $L/$e.log)"
done
TILE_TARGET=sm_80 timeout 150 $B/gemm > "$L/gemm_sm80.log" 2>&1; echo "exit $?" >> "$L/gemm_sm80.log"
echo "gemm sm_80: $(grep -c -- '-> ok' $L/gemm_sm80.log) checks ok, $(grep -c FAILED $L/gemm_sm80.log) failed, $(tail -1 $L/gemm_sm80.log)"
for e in gemm gemm_bias_act softmax_regression; do
  for t in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $t $B/$e --quick > "$L/$t.$e.log" 2>&1
    echo "$t $e: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/$t.$e.log | tail -1), $(grep -c -- '-> ok' $L/$t.$e.log) ok, $(grep -c FAILED $L/$t.$e.log) failed"
  done
done
{
for k in gemm_wide__BM_128__BN_256__BK_64__GM_8__T_f16__O_f16.v0.sm_90a gemm__BM_128__BN_128__BK_32__GM_8__T_f16__O_f16.v0.sm_80 gemm__BM_128__BN_128__BK_32__GM_8__T_f16__O_f16.v0.sm_90a softmax_regression_wide__SPLIT_0__BM_128__BN_256__BK_64__GM_8__T_f16.v0.sm_90a; do
  f=$B/ptx/$k.ptx; arch=${k##*.}
  [ -f "$f" ] || { echo "$k: no PTX"; continue; }
  echo "-- $k ($arch)"
  ptxas -arch=$arch -v "$f" -o /tmp/k.cubin 2>&1 | grep -E "registers|spill" | sed 's/^ptxas info *: //'
  cuobjdump --dump-sass /tmp/k.cubin > /tmp/k.sass
  python3 - /tmp/k.sass <<'PY'
import re, sys, collections
ins = []
for l in open(sys.argv[1]):
    m = re.search(r'/\*([0-9a-f]{4,})\*/\s+(.*?);', l)
    if m: ins.append((int(m.group(1), 16), m.group(2)))
for a, i in ins:
    m = re.search(r'BRA.*0x([0-9a-f]+)', i)
    if m and int(m.group(1), 16) < a:
        t = int(m.group(1), 16)
        body = [x for b, x in ins if t <= b <= a]
        ops = collections.Counter(re.sub(r'^@!?U?P\w+\s+', '', x).split()[0] for x in body)
        keep = {k: v for k, v in ops.items() if re.match(r'(HGMMA|HMMA|LDSM|LDGSTS|BAR|WARPGROUP|STL|LDL)', k)}
        print(f"loop {t:#x}-{a:#x}: {len(body)} instructions; {dict(sorted(keep.items()))}")
PY
done
} > "$L/sass.log" 2>&1; cat "$L/sass.log"
M=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_op_ldsm.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,gpu__time_duration.sum
TILE_TARGET=sm_80 timeout 120 ncu --clock-control none -k regex:"gemm__BM_128__BN_128" --launch-skip 30 --launch-count 1 --metrics $M $B/gemm > "$L/ncu_sm80.log" 2>&1
timeout 120 ncu --clock-control none -k regex:"gemm_wide" --launch-skip 30 --launch-count 1 --metrics $M $B/gemm > "$L/ncu_sm90.log" 2>&1
for f in ncu_sm80 ncu_sm90; do echo "-- $f"; grep -E "gemm|Grid Size|bank_conflicts|ldsm|wavefronts|gpu__time" "$L/$f.log" | grep -v "^==PROF" | sed -E 's/ +/ /g' | head -8; done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
