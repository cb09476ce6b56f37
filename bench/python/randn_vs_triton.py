"""Triton's tl.randn of seed 42 at offsets 0 .. 2^20 - 1 against tile's `randn` (a raw f32 file
written by the GPU test `gpu_randn_matches_the_interpreter` when TILE_RANDN_OUT names it): the
largest absolute and relative difference and the share of bit-identical values. Run by
scripts/gpu/check.sh on the GPU machine:

    TILE_RANDN_OUT=/tmp/randn.bin .device-bin/gpu_tests gpu_randn_matches_the_interpreter
    python3 bench/python/randn_vs_triton.py /tmp/randn.bin
"""
import sys

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def normals(out, seed, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.randn(seed, i), mask=i < n)


n = 1 << 20
out = torch.empty(n, device="cuda", dtype=torch.float32)
normals[(n // 1024,)](out, 42, n, BLOCK=1024)
t = out.cpu().numpy().astype(np.float64)
z = np.fromfile(sys.argv[1], dtype=np.float32).astype(np.float64)
d = np.abs(z - t)
rel = d / np.maximum(1.0, np.abs(t))
w = int(np.argmax(d))
print(
    f"randn vs Triton tl.randn (seed 42, offsets 0..2^20): max |diff| {d.max():.3e}, "
    f"max relative to max(1,|z|) {rel.max():.3e}, bit-identical {np.mean(z == t) * 100:.2f}%, "
    f"worst at offset {w} (tile {z[w]:.9g}, Triton {t[w]:.9g})"
)
print(f"tile mean {z.mean():.5f} var {z.var():.5f}; Triton mean {t.mean():.5f} var {t.var():.5f}")
