#!/usr/bin/env bash
# scripts/gpu/profile.sh: runs THERE, on the GPU machine, from the repository root, after
# scripts/gpu/build.sh here (the call carries .device-bin). Profiles one kernel:
#   1. ncu (`--clock-control none`, so the clocks are the ones a user gets) on one launch of the
#      kernel, with the full section set and warp-stall samples per SASS instruction: the report
#      (KERNEL.ncu-rep), its details page (KERNEL.details.txt) and source page (KERNEL.sass.csv);
#   2. the kernel's SASS from its dumped PTX (.device-bin/ptx/KERNEL*.TARGET.ptx) through this
#      machine's ptxas and `cuobjdump --dump-sass`: registers, spills, and per-opcode counts.
#
# Usage: bash scripts/gpu/profile.sh KERNEL [--example EX] [--args "ARGS"] [--skip N]
#                                          [--target sm_90a] [--cmd "COMMAND"] [--no-ncu]
#   KERNEL        a regex of the kernel's name as ncu shows it, and the prefix of its PTX files
#                 (the kernel function's name: `gemm_wide`, `ln_wide`, `add_mul`)
#   --example EX  the example binary that launches it (default: KERNEL, if such an example exists)
#   --args ARGS   arguments for the example (e.g. "--quick", "--shape 8192x4096x1000")
#   --skip N      launches of the kernel to skip before the profiled one (default 5: past the
#                 checks' small shapes you may need more)
#   --cmd COMMAND profile another program instead (e.g. Triton's tutorial matmul:
#                 "python3 bench/python/triton_matmul.py --size 4096"), with -k regex:KERNEL
#   --no-ncu      only the SASS
# Environment: B (binaries, default .device-bin), OUT (results, default bench-out/, git-ignored).
# Writes: $OUT/summary.txt (ncu's headline numbers and the SASS counts) and $OUT/profile.tgz.
set -uo pipefail
# .device-bin travels packed (scripts/gpu/build.sh).
if [ ! -d .device-bin ] && [ -f .device-pack/device-bin.tar.xz ]; then
  tar -xJf .device-pack/device-bin.tar.xz
fi
B=${B:-.device-bin}
OUT=${OUT:-bench-out}
[ $# -ge 1 ] && [ "${1:0:1}" != - ] || { sed -n '2,25p' "$0"; exit 2; }
KERNEL=$1; shift
EX=""; ARGS=""; SKIP=5; TARGET=sm_90a; CMD=""; NCU=1
while [ $# -gt 0 ]; do
  case "$1" in
    --example) EX="$2"; shift 2 ;;
    --args) ARGS="$2"; shift 2 ;;
    --skip) SKIP="$2"; shift 2 ;;
    --target) TARGET="$2"; shift 2 ;;
    --cmd) CMD="$2"; shift 2 ;;
    --no-ncu) NCU=0; shift ;;
    *) echo "profile.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$CMD" ]; then
  EX=${EX:-$KERNEL}
  [ -x "$B/$EX" ] || { echo "profile.sh: no example $B/$EX; name it with --example" >&2; exit 2; }
  CMD="$B/$EX $ARGS"
fi
L="$OUT/profile"
mkdir -p "$L"
S="$OUT/summary.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/device: /' | tee "$S"

if [ $NCU = 1 ]; then
  echo "== ncu: $CMD, kernel ~ $KERNEL, after $SKIP launches" | tee -a "$S"
  # shellcheck disable=SC2086
  ncu --clock-control none --launch-skip "$SKIP" --launch-count 1 -k "regex:$KERNEL" --set full \
    --import-source no --metrics smsp__pcsamp_sample_count -o "$L/$KERNEL" -f $CMD > "$L/ncu.log" 2>&1
  if [ -f "$L/$KERNEL.ncu-rep" ]; then
    ncu -i "$L/$KERNEL.ncu-rep" --page details > "$L/$KERNEL.details.txt" 2>&1
    ncu -i "$L/$KERNEL.ncu-rep" --page source --csv --print-source sass > "$L/$KERNEL.sass.csv" 2>&1
    grep -E '^  [^ ]|Duration|Registers Per Thread|Achieved Occupancy|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Hit Rate|Issue Slots Busy|No Eligible' \
      "$L/$KERNEL.details.txt" | head -40 | tee -a "$S"
  else
    echo "ncu wrote no report (see ncu.log):" | tee -a "$S"; tail -5 "$L/ncu.log" | tee -a "$S"
  fi
fi

echo "== SASS ($TARGET) of $B/ptx/$KERNEL*.$TARGET.ptx" | tee -a "$S"
found=0
for f in "$B"/ptx/"$KERNEL"*."$TARGET".ptx; do
  [ -f "$f" ] || continue
  found=1
  k=$(basename "$f" ".$TARGET.ptx")
  ptxas -arch="$TARGET" -v "$f" -o "$L/$k.cubin" > "$L/$k.ptxas.log" 2>&1
  cuobjdump --dump-sass "$L/$k.cubin" > "$L/$k.sass" 2>&1
  echo "-- $k: $(grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill (stores|loads)' "$L/$k.ptxas.log" | tr '\n' ' ')" | tee -a "$S"
  grep -oE '^ +/\*[0-9a-f]+\*/ +(@!?U?P[0-9T] +)?[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)*' "$L/$k.sass" \
    | awk '{print $NF}' | sort | uniq -c | sort -rn | head -25 | tee -a "$S"
  rm -f "$L/$k.cubin"
done
[ $found = 1 ] || echo "no PTX matches $B/ptx/$KERNEL*.$TARGET.ptx (ls $B/ptx for the names)" | tee -a "$S"

tar -C "$OUT" -czf "$OUT/profile.tgz" profile && rm -rf "$L"
