#!/usr/bin/env bash
# Runs on the GPU machine from the repo root: where the warps of tile's gemm_wide (4096^3 f16)
# and of Triton's tutorial matmul (same tile, 8 warps, 3 stages) wait, instruction by instruction
# (ncu's source page: SASS with warp-stall samples), plus each kernel's summary sections.
#   B=.device-wg bash scripts/gpu/stalls.sh
set -uo pipefail
B=${B:-.device-wg}
OUT=${OUT:-/tmp/out}
L=${L:-$(mktemp -d)}; mkdir -p "$L"
mkdir -p "$OUT"
[ -e "$B/gemm" ] || (cd "$B" && tar xJf bins.tar.xz) || exit 1
SIDES=${SIDES:-new}
prof() { # name, kernel regex, launch-skip, command...
  local name=$1 k=$2 skip=$3; shift 3
  ncu --clock-control none --launch-skip $skip --launch-count 1 -k regex:$k --set full --import-source no \
    --metrics smsp__pcsamp_sample_count -o "$L/$name" -f "$@" > "$L/$name.run.log" 2>&1
  ncu -i "$L/$name.ncu-rep" --page details > "$L/$name.details.txt" 2>&1
  ncu -i "$L/$name.ncu-rep" --page source --csv --print-source sass > "$L/$name.source.csv" 2>&1
  ncu -i "$L/$name.ncu-rep" --page raw --csv > "$L/$name.raw.csv" 2>&1
}
for side in $SIDES; do
  bin=$B/gemm; [ "$side" = new ] || bin=$B/$side/gemm
  prof "tile_$side" gemm_wide ${SKIP:-60} $bin
done
PYTHONUNBUFFERED=1 python3 scripts/gpu/triton_matmul.py --reps 0 > "$L/triton_run.log" 2>&1
prof triton matmul_kernel 3 python3 scripts/gpu/triton_matmul.py --reps 3
cat "$L/triton_run.log"
python3 - "$L" <<'PY'
import csv, sys, glob, os, re
L = sys.argv[1]
for f in sorted(glob.glob(f"{L}/*.source.csv")):
    name = os.path.basename(f).split(".")[0]
    rows = list(csv.reader(open(f)))
    hdr_i = next((i for i, r in enumerate(rows) if "Source" in r), None)
    if hdr_i is None:
        print(name, "no source table:", open(f).read()[:500]); continue
    hdr = rows[hdr_i]
    src = hdr.index("Source")
    samp = next((i for i, h in enumerate(hdr) if h.startswith("Warp Stall Sampling (All")), None)
    if samp is None:
        print(name, "columns:", hdr); continue
    body = []
    for r in rows[hdr_i + 1:]:
        if len(r) <= max(src, samp): continue
        try: v = float(r[samp].replace(",", ""))
        except ValueError: continue
        body.append((v, r[src].strip(), r))
    tot = sum(v for v, _, _ in body) or 1
    print(f"\n== {name}: {len(body)} instructions, {tot:.0f} stall samples; top 25")
    reasons = [i for i, h in enumerate(hdr) if h.startswith("stall_") or "Stall" in h and i != samp]
    for v, s, r in sorted(body, key=lambda x: -x[0])[:25]:
        print(f"  {100 * v / tot:5.1f}%  {s[:90]}")
    # by opcode
    by = {}
    for v, s, _ in body:
        op = re.sub(r"^@!?U?P\w+\s+", "", s).split(" ")[0]
        by[op] = by.get(op, 0) + v
    print("  by opcode: " + ", ".join(f"{k} {100 * v / tot:.1f}%" for k, v in sorted(by.items(), key=lambda x: -x[1])[:12]))
for f in sorted(glob.glob(f"{L}/*.details.txt")):
    print("\n== " + os.path.basename(f))
    for line in open(f):
        if re.search(r"Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Hit Rate|Registers Per|Issued Warp|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Shared Memory Configuration Size|Dynamic Shared|L1/TEX Hit|DRAM Throughput|Executed Ipc A", line):
            print("  " + re.sub(r"\s+", " ", line.strip()))
PY
tar -czf "$OUT/stalls.tgz" -C "$L" --exclude='*.ncu-rep' . ; cp "$L"/*.ncu-rep "$OUT/" 2>/dev/null; ls -la "$OUT"
