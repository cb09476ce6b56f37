#!/usr/bin/env python3
"""Reference random streams from Triton (tl.randint4x / randint / rand / randn / rand4x / randn4x),
to check that tile's `rand`/`randn`/`randint` reproduce Triton's stream bit for bit.

Usage (on a GPU machine with torch and Triton 3.6; no network needed):

    python3 rand_reference.py generate OUT_DIR [--n 16384]
    python3 rand_reference.py compare TRITON_DIR OURS_DIR

`generate` runs one Triton kernel per (seed, offset set) and writes OUT_DIR in the layout below.
`compare` reads two directories of that layout (the second one written by tile: its own kernels,
or tile-core's CPU reference `tile_core::random`) and prints, per function, how many values match
exactly and the largest difference in ulps.

Layout of a directory (all binary files raw little-endian, row-major, no header):

    manifest.json   {"triton": ..., "torch": ..., "device": ..., "n": N,
                     "cases": [{"name", "seed", "seed_u64", "offset_dtype", "offset_set"}, ...]}
    <case>.offsets.bin   N offsets, int32 or int64 (offset_dtype), what the kernel loaded
    <case>.randint4x.bin N x 4 uint32   tl.randint4x(seed, offsets) words 0..3
    <case>.randint.bin   N uint32       tl.randint(seed, offsets)
    <case>.rand.bin      N float32      tl.rand(seed, offsets)
    <case>.randn.bin     N float32      tl.randn(seed, offsets)
    <case>.rand4x.bin    N x 4 float32  tl.rand4x(seed, offsets)
    <case>.randn4x.bin   N x 4 float32  tl.randn4x(seed, offsets)

How the inputs map onto Philox (Triton 3.6 random.py), for the other side to reproduce:
- `seed` is passed as a Python int, so Triton types it i32 in [-2^31, 2^31), i64 up to 2^63, u64
  above; `seed.to(tl.uint64)` then sign-extends, so the key is always `seed_u64 = seed mod 2^64`:
  k0 = low 32 bits, k1 = high 32 bits.
- offsets are loaded from `<case>.offsets.bin`: c0 = low 32 bits; c1 = high 32 bits for int64
  offsets and 0 for int32 offsets (even negative ones); c2 = c3 = 0. Ten rounds.
"""
import argparse
import json
import os
import sys

import numpy as np

FUNCS = {  # name -> (numpy dtype, words per offset)
    "randint4x": (np.uint32, 4),
    "randint": (np.uint32, 1),
    "rand": (np.float32, 1),
    "randn": (np.float32, 1),
    "rand4x": (np.float32, 4),
    "randn4x": (np.float32, 4),
}

# Seeds: Python ints, so each takes the type Triton gives it (value 1 even becomes a constexpr).
SEEDS = [0, 1, 42, 2**31 - 1, -1, -2**31, 2**32 + 5, 2**63 + 3]


def offset_sets(n):
    """name -> (numpy dtype, offsets): small, negative, and near the 2^31 / 2^32 boundaries."""
    h = n // 2
    return {
        "i32_lo": (np.int32, np.arange(0, n)),
        "i32_neg": (np.int32, np.arange(-n, 0)),  # c1 stays 0: no sign extension
        "i32_near_2p31": (np.int32, np.arange(2**31 - n, 2**31)),
        "i64_lo": (np.int64, np.arange(0, n)),  # must equal i32_lo
        "i64_cross_2p31": (np.int64, np.arange(2**31 - h, 2**31 + h)),
        "i64_cross_2p32": (np.int64, np.arange(2**32 - h, 2**32 + h)),  # c1 goes 0 -> 1
        "i64_big": (np.int64, 2**40 + 12345 + np.arange(0, n)),
        "i64_neg": (np.int64, np.arange(-n, 0)),  # c1 = 0xFFFFFFFF
    }


_KERNEL = None


def rng_kernel():
    """The Triton kernel (built on first use, so that `compare` needs neither torch nor Triton)."""
    global _KERNEL
    if _KERNEL is None:
        import triton
        import triton.language as tl

        @triton.jit
        def kernel(off_ptr, seed, r4, ri, ru, rn, ru4, rn4, n, BLOCK: tl.constexpr):
            idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = idx < n
            offs = tl.load(off_ptr + idx, mask=m, other=0)  # int32 or int64, as the tensor is
            a, b, c, d = tl.randint4x(seed, offs)
            # uint32 results are stored through int32 pointers, bit for bit
            tl.store(r4 + idx * 4 + 0, a.to(tl.int32, bitcast=True), mask=m)
            tl.store(r4 + idx * 4 + 1, b.to(tl.int32, bitcast=True), mask=m)
            tl.store(r4 + idx * 4 + 2, c.to(tl.int32, bitcast=True), mask=m)
            tl.store(r4 + idx * 4 + 3, d.to(tl.int32, bitcast=True), mask=m)
            tl.store(ri + idx, tl.randint(seed, offs).to(tl.int32, bitcast=True), mask=m)
            tl.store(ru + idx, tl.rand(seed, offs), mask=m)
            tl.store(rn + idx, tl.randn(seed, offs), mask=m)
            u1, u2, u3, u4 = tl.rand4x(seed, offs)
            tl.store(ru4 + idx * 4 + 0, u1, mask=m)
            tl.store(ru4 + idx * 4 + 1, u2, mask=m)
            tl.store(ru4 + idx * 4 + 2, u3, mask=m)
            tl.store(ru4 + idx * 4 + 3, u4, mask=m)
            n1, n2, n3, n4 = tl.randn4x(seed, offs)
            tl.store(rn4 + idx * 4 + 0, n1, mask=m)
            tl.store(rn4 + idx * 4 + 1, n2, mask=m)
            tl.store(rn4 + idx * 4 + 2, n3, mask=m)
            tl.store(rn4 + idx * 4 + 3, n4, mask=m)

        _KERNEL = kernel
    return _KERNEL


def case_name(seed, set_name):
    return f"s{seed & (2**64 - 1):016x}_{set_name}"


def generate(out_dir, n, block):
    import torch
    import triton

    assert sys.byteorder == "little"
    os.makedirs(out_dir, exist_ok=True)
    dev = torch.device("cuda")
    cases = []
    for seed in SEEDS:
        for set_name, (odt, offs) in offset_sets(n).items():
            name = case_name(seed, set_name)
            off_np = offs.astype(odt)  # values chosen to fit, so no wrap here
            off = torch.from_numpy(off_np).to(dev)
            outs = {f: torch.empty(n * k, dtype=torch.int32 if dt == np.uint32 else torch.float32, device=dev)
                    for f, (dt, k) in FUNCS.items()}
            grid = (triton.cdiv(n, block), )
            rng_kernel()[grid](off, seed, *(outs[f] for f in FUNCS), n, BLOCK=block)
            off_np.tofile(os.path.join(out_dir, f"{name}.offsets.bin"))
            for f, (dt, _) in FUNCS.items():
                outs[f].cpu().numpy().view(dt).tofile(os.path.join(out_dir, f"{name}.{f}.bin"))
            cases.append({"name": name, "seed": seed, "seed_u64": seed & (2**64 - 1),
                          "offset_dtype": np.dtype(odt).name, "offset_set": set_name})
    manifest = {"triton": triton.__version__, "torch": torch.__version__,
                "device": torch.cuda.get_device_name(), "capability": list(torch.cuda.get_device_capability()),
                "n": n, "funcs": list(FUNCS), "cases": cases}
    with open(os.path.join(out_dir, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)

    # Summary: a few values and the moments of rand / randn over everything written.
    first = cases[0]["name"]
    print(f"triton {triton.__version__} on {manifest['device']}: {len(cases)} cases x {n} offsets -> {out_dir}")
    r4 = load(out_dir, first, "randint4x").reshape(-1, 4)
    print(f"{first}: randint4x[0] = {[hex(int(x)) for x in r4[0]]}, "
          f"rand[:3] = {load(out_dir, first, 'rand')[:3]}, randn[:3] = {load(out_dir, first, 'randn')[:3]}")
    u = np.concatenate([load(out_dir, c["name"], "rand") for c in cases])
    z = np.concatenate([load(out_dir, c["name"], "randn") for c in cases]).astype(np.float64)
    print(f"rand: min {u.min():.3g} max {u.max():.9g} mean {u.mean():.4f};  "
          f"randn: mean {z.mean():.4f} var {z.var():.4f}")
    same = all(np.array_equal(load(out_dir, c["name"], "randint4x"),
                              load(out_dir, c["name"].replace("i32_lo", "i64_lo"), "randint4x"))
               for c in cases if c["offset_set"] == "i32_lo")
    print(f"int32 and int64 offsets 0..n give the same words: {same}")


def load(d, case, func):
    dt, _ = FUNCS.get(func, (None, 0))
    return np.fromfile(os.path.join(d, f"{case}.{func}.bin"), dtype=dt)


def ulp_diff(a, b):
    """|a - b| in float32 ulps, via the usual monotone map of the bit patterns to integers."""
    def key(x):
        i = x.view(np.int32).astype(np.int64)
        return np.where(i < 0, np.int64(-2**31) - i, i)
    return np.abs(key(a) - key(b))


def compare(dir_a, dir_b):
    with open(os.path.join(dir_a, "manifest.json")) as fh:
        manifest = json.load(fh)
    print(f"A = {dir_a} ({manifest.get('triton')} on {manifest.get('device')}), B = {dir_b}")
    print(f"{'function':<10} {'values':>10} {'exact':>10} {'exact %':>8} {'max ulp':>8} {'max |diff|':>11}")
    ok = True
    for f, (dt, _) in FUNCS.items():
        first = manifest["cases"][0]["name"] if manifest["cases"] else None
        if first is None or not os.path.exists(os.path.join(dir_b, f"{first}.{f}.bin")):
            print(f"{f:<10} (not in B)")
            continue
        tot = exact = 0
        max_ulp, max_abs = 0, 0.0
        for c in manifest["cases"]:
            a, b = load(dir_a, c["name"], f), load(dir_b, c["name"], f)
            if a.shape != b.shape:
                print(f"  {c['name']}.{f}: shape {a.shape} vs {b.shape}")
                ok = False
                continue
            tot += a.size
            exact += int(np.count_nonzero(a.view(np.uint32) == b.view(np.uint32)))
            if dt == np.float32 and a.size:
                max_ulp = max(max_ulp, int(ulp_diff(a, b).max()))
                max_abs = max(max_abs, float(np.nanmax(np.abs(a.astype(np.float64) - b))))
        ok &= exact == tot
        ulp = f"{max_ulp:>8}" if dt == np.float32 else f"{'-':>8}"
        print(f"{f:<10} {tot:>10} {exact:>10} {100.0 * exact / max(tot, 1):>7.3f}% {ulp} {max_abs:>11.3g}")
    print("all bit-identical" if ok else "differences found (randn/randn4x: see tile_core::random docs on sqrt)")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="run Triton, write OUT_DIR")
    g.add_argument("out_dir")
    g.add_argument("--n", type=int, default=16384, help="offsets per case (even)")
    g.add_argument("--block", type=int, default=1024)
    c = sub.add_parser("compare", help="compare two directories of the same layout")
    c.add_argument("dir_a")
    c.add_argument("dir_b")
    args = p.parse_args()
    if args.cmd == "generate":
        generate(args.out_dir, args.n, args.block)
        return 0
    return compare(args.dir_a, args.dir_b)


if __name__ == "__main__":
    sys.exit(main())
