#!/usr/bin/env python3
"""Sets tile's register-pressure estimate beside what ptxas does with each module.

    cargo build --release -p tile-fuzz
    TILE_DUMP=ptx,gpu-ir TILE_DUMP_DIR=/tmp/dump target/release/tile-fuzz corpus
    python3 scripts/register_calibration.py /tmp/dump [more dump folders...] > table.tsv

For every `NAME.gpu-ir` with its `NAME.ptx` beside it (the dumps `TILE_DUMP=ptx,gpu-ir` writes;
`tile-fuzz --emit` and `replay` give fuzzed ones), it prints, tab-separated: the file, the
estimate (`tile-fuzz pressure`), the warps and the register limit at those warps, then the
registers and spilled bytes ptxas reports for the PTX as built. A last column says whether the
PTX asked for one program per SM (`.minnctapersm 1`). A summary on stderr counts the modules
that spill and those whose estimate is below what ptxas used.
"""
import concurrent.futures as cf
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PTXAS = os.environ.get("TILE_PTXAS") or str(ROOT / ".tools/nvcc/nvidia/cuda_nvcc/bin/ptxas")
FUZZ = str(ROOT / "target/release/tile-fuzz")


def assemble(ptx, arch):
    r = subprocess.run([PTXAS, "-v", "--gpu-name", arch, "-o", os.devnull, ptx],
                       capture_output=True, text=True)
    s = r.stdout + r.stderr
    if r.returncode != 0:
        return None, None
    regs = max([int(x) for x in re.findall(r"Used (\d+) registers", s)] or [0])
    spill = sum(int(x) for x in re.findall(r"(\d+) bytes spill stores", s))
    return regs, spill


def main():
    irs = sorted(p for d in sys.argv[1:] for p in pathlib.Path(d).rglob("*.gpu-ir")
                 if p.with_suffix(".ptx").exists())
    est = {}
    for i in range(0, len(irs), 200):
        out = subprocess.run([FUZZ, "pressure", *map(str, irs[i:i + 200])],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            f, regs, warps, limit, at = line.split("\t")
            est[f] = (int(regs), int(warps), int(limit), at)

    def one(p):
        arch = p.name.split(".")[-2]
        ptx = p.with_suffix(".ptx")
        regs, spill = assemble(str(ptx), arch)
        one_per_sm = ".minnctapersm 1" in ptx.read_text()
        return p, regs, spill, one_per_sm

    spills = under = total = 0
    with cf.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        for p, regs, spill, one_per_sm in ex.map(one, irs):
            if str(p) not in est or regs is None:
                continue
            e, warps, limit, at = est[str(p)]
            total += 1
            spills += spill > 0
            under += e < regs
            print(f"{p}\t{e}\t{warps}\t{limit}\t{regs}\t{spill}\t{int(one_per_sm)}\t{at}")
    print(f"{total} modules: {spills} spill; the estimate is below ptxas's registers for {under}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
