#!/usr/bin/env python3
"""PyTorch eager and Triton baselines for every kernel family of the `tile` examples.

For each (kernel, shape, dtype) that the Rust examples in `examples/*/` time at GPU sizes, this
measures, where they exist:

- `torch_unfused`: PyTorch eager written step by step after the example's unfused form (the same
  steps and intermediates; PyTorch may need a few extra small kernels for per-row scalars or for
  dtype promotion: the row's `ops` field lists the calls);
- `torch_native`: PyTorch's own op for the job (F.layer_norm, torch.softmax, F.rms_norm, F.gelu,
  F.silu/F.gelu * gate). For fused_bias_gelu and act_and_mul this is the same two kernels as
  `torch_unfused` (PyTorch has no single-kernel form), only with freshly allocated outputs;
- `triton`: a @triton.jit kernel written here, fused the way the Rust fused kernel is (one program
  per row, per block of elements, or per (head block, token)).

Method (as examples/common/mod.rs and the device METHOD.md): seeded random inputs in the examples'
ranges (never zeros); every impl is first checked against a float64 reference computed with torch
on the device, with outputs poisoned with NaN (in-place buffers restored from pristine copies),
by relative L2 error (pass/fail against the examples' tolerances; NaN never passes) and max
absolute error; then timed: warm-up runs, then the median over many runs, each bracketed by CUDA
events and synchronized (as the Rust `time_ms`, so launch gaps count the same way). Where the
Triton kernel takes under 75 us (launch-bound, as the Rust GRAPH_BELOW_MS), every impl of that case
is also timed as a CUDA-graph replay (median of 30 timings of 20 back-to-back replays, after the
graph's output was checked). Effective GB/s counts the minimal traffic as the Rust examples do
(each input read once, each output written once) and is also given as % of the device-to-device
copy bandwidth measured in the same run (a 1 GiB copy_, counting bytes read plus bytes written;
measured at the start and again at the end).

Run on the GPU machine (full run: about 30 s on an H100, Triton compiles included):

    python3 bench/python/baseline.py --out $OUT/baseline.json

Options: `--filter SUBSTR` (only kernels whose name contains it), `--quick` (the small awkward
shapes only, few repetitions), `--graph-all` (CUDA graphs for every case), `--device cpu` (smoke test
without a GPU: sets TRITON_INTERPRET=1, implies --quick; timings there are meaningless).

Output: JSON with one row per measurement {kernel, variant, shape, dtype, impl, graph, ms, gbps,
pct_copy, max_err, rel_err, ok, ...}, the check-only results of the small shapes, the device,
versions, copy bandwidth and date; a Markdown table at the end of stdout. Exit code 1 if any check
failed or any impl raised.

Plain (non-graph) rows include the host launch cost, as the Rust plain rows do: Triton's Python
launch path costs tens of microseconds, which dominates the small sizes; the graph rows are device
time. On the CPU the interpreter truncates f32 -> bf16 where the GPU rounds to nearest even, so the
smoke test patches the interpreter to round like the GPU (patch_interpreter_bf16_rounding).

Shapes: add_mul [n]; elementwise/gelu/layernorm/rmsnorm/softmax/mean_center [rows, cols];
act_and_mul [rows, 2*d] (the input); qk_norm_rope [tokens, q_heads, kv_heads, head_dim];
softmax_regression_simple [batch, dim, classes] (x @ w through cuBLAS, then softmax, against a
Triton kernel with `tl.dot` in IEEE f32).
"""

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="baseline.json", help="JSON output path")
    p.add_argument("--filter", default="", help="only kernels whose name contains this")
    p.add_argument("--quick", action="store_true", help="small shapes, few repetitions")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--graph-all", action="store_true", help="CUDA-graph timings for every case")
    p.add_argument("--warmup", type=int, default=None, help="untimed runs before timing")
    p.add_argument("--reps", type=int, default=None, help="timed runs (median taken)")
    a = p.parse_args(argv)
    if a.device == "cpu":
        a.quick = True
    if a.warmup is None:
        a.warmup = 1 if a.device == "cpu" else (2 if a.quick else 10)
    if a.reps is None:
        a.reps = 3 if a.device == "cpu" else (5 if a.quick else 50)
    return a


ARGS = parse_args()
if ARGS.device == "cpu":
    # Must be set before triton is imported: @triton.jit then builds interpreted functions.
    os.environ["TRITON_INTERPRET"] = "1"

import numpy  # noqa: E402  (imported for its version only; the brief allows it)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402

DEV = torch.device(ARGS.device)
ON_GPU = DEV.type == "cuda"
# libdevice calls do not run under the interpreter; there tanh falls back to an exp formula.
USE_LIBDEVICE = ON_GPU
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
F32 = torch.float32
NAN = float("nan")
GRAPH_BELOW_MS = 0.075  # as examples/common/mod.rs
GRAPH_REPLAYS = 20
BLOCK = 1024  # elements (or columns) per program of the element-wise kernels, as in Rust

ROWS = []  # timed measurements
CHECKS = []  # check-only results (small shapes in a full run)
FAILURES = []
COPY_GBPS = None


# ----------------------------------------------------------------------------------------------
# Infrastructure: inputs, checks, timing, reporting
# ----------------------------------------------------------------------------------------------


def patch_interpreter_bf16_rounding():
    """CPU smoke test only: Triton 3.6's interpreter truncates f32 -> bf16 where the GPU rounds
    to nearest even; make it round like the GPU so the bf16 checks mean the same thing."""
    from triton.runtime import interpreter as ti

    orig = ti.InterpreterBuilder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            f = numpy.ascontiguousarray(src.data, dtype=numpy.float32)
            u = f.view(numpy.uint32).astype(numpy.uint64)
            out = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(numpy.uint16)
            out[numpy.isnan(f)] = 0x7FC0
            return ti.TensorHandle(out, tl.bfloat16)
        return orig(self, src, dst_type)

    ti.InterpreterBuilder.cast_impl = cast_impl


def sync():
    if ON_GPU:
        torch.cuda.synchronize()


class Rand:
    """Seeded uniform inputs on the device (fresh per case: the seed comes from the shape)."""

    def __init__(self, seed):
        self.g = torch.Generator(device=DEV)
        self.g.manual_seed(seed)

    def uniform(self, shape, lo, hi, dtype=F32):
        t = torch.rand(shape, generator=self.g, device=DEV, dtype=F32)
        return (t * (hi - lo) + lo).to(dtype)

    def randint(self, hi, shape):
        return torch.randint(0, hi, shape, generator=self.g, device=DEV, dtype=torch.int32)


def compare(outs, refs, tols, names):
    """Per output: relative L2 error, max abs error, finite; returns (ok, rel, max_abs, detail)."""
    detail = []
    ok = True
    for o, r, tol, name in zip(outs, refs, tols, names):
        o64 = o.double()
        finite = bool(torch.isfinite(o64).all())
        d = o64 - r
        num = float(torch.linalg.vector_norm(d))
        den = float(torch.linalg.vector_norm(r))
        rel = num / den if den > 0 else num
        max_abs = float(d.abs().max()) if d.numel() else 0.0
        if not finite:
            rel, max_abs = math.inf, math.inf
        good = finite and rel <= tol
        ok &= good
        detail.append({"output": name, "rel_l2": rel, "max_abs": max_abs, "tol": tol, "ok": good})
        del o64, d
    rel = detail[0]["rel_l2"]
    max_abs = max(e["max_abs"] for e in detail)
    return ok, rel, max_abs, detail


def time_plain(fn):
    """Median ms of ARGS.reps runs, each bracketed by CUDA events and synchronized, after
    ARGS.warmup untimed runs (as `time_ms` of examples/common/mod.rs)."""
    for _ in range(ARGS.warmup):
        fn()
    sync()
    times = []
    if ON_GPU:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        for _ in range(ARGS.reps):
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(ARGS.reps):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def time_graph(fn, reset, refs, tols, names):
    """One CUDA-graph replay of `fn`: capture, check the graph's output from fresh inputs, then the
    median of 30 timings of GRAPH_REPLAYS back-to-back replays, divided by GRAPH_REPLAYS."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = fn()
    reset()
    g.replay()
    torch.cuda.synchronize()
    check = compare(outs, refs, tols, names)
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(30):
        start.record()
        for _ in range(GRAPH_REPLAYS):
            g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / GRAPH_REPLAYS)
    del g, outs
    return statistics.median(times), check


def shape_str(shape):
    return "x".join(str(s) for s in shape)


def run_case(kernel, variant, shape, dtype, nbytes, impls, reset, refs, tols, names, timed):
    """Checks every impl against `refs` (after `reset()`), then times it if `timed`.

    impls: list of (impl name, ops description, fn); fn() launches the impl and returns its output
    tensors in the order of `refs` (`tols` and `names` give each output's tolerance and name).
    """
    label = f"{kernel}{'/' + variant if variant else ''} {shape_str(shape)} {dtype}"
    plain = {}
    for impl, ops, fn in impls:
        base = {"kernel": kernel, "variant": variant, "shape": list(shape), "dtype": dtype,
                "impl": impl, "ops": ops, "bytes": nbytes}
        try:
            reset()
            outs = fn()
            sync()
            ok, rel, max_abs, detail = compare(outs, refs, tols, names)
            del outs
        except Exception as e:  # one broken impl must not hide the others
            traceback.print_exc()
            print(f"check {label} {impl}: raised {type(e).__name__}: {e} -> FAILED")
            FAILURES.append(f"{label} {impl}: {e}")
            row = dict(base, graph=False, ms=None, gbps=None, pct_copy=None, max_err=None,
                       rel_err=None, ok=False, error=f"{type(e).__name__}: {e}")
            (ROWS if timed else CHECKS).append(row)
            continue
        worst = ", ".join(f"{d['output']} rel {d['rel_l2']:.2e} max abs {d['max_abs']:.2e} "
                          f"(tol {d['tol']:.0e})" for d in detail)
        print(f"check {label:<44} {impl:<13}: {worst} -> {'ok' if ok else 'FAILED'}")
        if not ok:
            FAILURES.append(f"{label} {impl}: {worst}")
        check = dict(base, max_err=max_abs, rel_err=rel, ok=ok, errors=detail)
        if not timed:
            CHECKS.append(check)
            continue
        try:
            reset()
            ms = time_plain(fn)
        except Exception as e:
            traceback.print_exc()
            FAILURES.append(f"{label} {impl} timing: {e}")
            ROWS.append(dict(check, graph=False, ms=None, gbps=None, pct_copy=None, ok=False,
                             error=f"{type(e).__name__}: {e}"))
            continue
        plain[impl] = ms
        ROWS.append(dict(check, graph=False, **rate(ms, nbytes)))
    if not (timed and ON_GPU and plain):
        return
    gate = plain.get("triton", min(plain.values()))
    if not (ARGS.graph_all or gate < GRAPH_BELOW_MS):
        return
    for impl, ops, fn in impls:
        if impl not in plain:
            continue
        base = {"kernel": kernel, "variant": variant, "shape": list(shape), "dtype": dtype,
                "impl": impl, "ops": ops, "bytes": nbytes, "graph": True}
        try:
            ms, (ok, rel, max_abs, detail) = time_graph(fn, reset, refs, tols, names)
        except Exception as e:
            traceback.print_exc()
            FAILURES.append(f"{label} {impl} CUDA graph: {e}")
            ROWS.append(dict(base, ms=None, gbps=None, pct_copy=None, max_err=None, rel_err=None,
                             ok=False, error=f"{type(e).__name__}: {e}"))
            continue
        print(f"check {label:<44} {impl + ' graph':<13}: rel {rel:.2e} max abs {max_abs:.2e} "
              f"-> {'ok' if ok else 'FAILED'}")
        if not ok:
            FAILURES.append(f"{label} {impl} CUDA graph: rel {rel:.2e}")
        ROWS.append(dict(base, max_err=max_abs, rel_err=rel, ok=ok, errors=detail,
                         **rate(ms, nbytes)))


def rate(ms, nbytes):
    gbps = nbytes / (ms * 1e-3) / 1e9
    return {"ms": ms, "gbps": gbps, "pct_copy": 100.0 * gbps / COPY_GBPS}


def plan(small, big):
    """(shape, timed) pairs: a full run checks the small awkward shapes and checks + times the
    examples' GPU sizes; --quick checks and times the small shapes only."""
    if ARGS.quick:
        return [(s, True) for s in small]
    return [(s, False) for s in small] + [(s, True) for s in big]


def copy_bandwidth():
    """Device-to-device copy bandwidth in GB/s (bytes read + bytes written) of a large copy_."""
    nbytes = (1 << 30) if not ARGS.quick else (1 << 24)
    src = Rand(7).uniform(nbytes // 4, -1.0, 1.0)
    dst = torch.empty_like(src)
    ms = time_plain(lambda: dst.copy_(src))
    del src, dst
    return 2.0 * nbytes / (ms * 1e-3) / 1e9


def warps_for(block):
    """num_warps by tile width, as the Rust examples choose them (1024: 4, 4096: 8, 8192-32768: 16,
    65536: 32)."""
    if block <= 1024:
        return 4
    if block <= 4096:
        return 8
    if block <= 32768:
        return 16
    return 32


def row_block(n):
    return max(triton.next_power_of_2(n), 64)


def cdiv(a, b):
    return (a + b - 1) // b


# ----------------------------------------------------------------------------------------------
# Triton kernels
# ----------------------------------------------------------------------------------------------


@triton.jit
def _tanh(u, LIBDEVICE: tl.constexpr):
    if LIBDEVICE:
        t = libdevice.tanh(u)
    else:
        e = tl.exp(-2.0 * tl.abs(u))
        t = (1.0 - e) / (1.0 + e)
        t = tl.where(u < 0.0, -t, t)
    return t


@triton.jit
def _gelu(v, APPROX: tl.constexpr, LIBDEVICE: tl.constexpr):
    if APPROX:
        g = 0.5 * v * (1.0 + _tanh(0.7978845608028654 * (v + 0.044715 * v * v * v), LIBDEVICE))
    else:
        g = 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    return g


@triton.jit
def k_add_mul(x, y, z, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r = (tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m)) * tl.load(z + offs, mask=m)
    tl.store(out + offs, r, mask=m)


@triton.jit
def k_chain(x, y, bias, out, n, cols, s, CHAIN: tl.constexpr, LIBDEVICE: tl.constexpr,
            BLOCK: tl.constexpr):
    # 1-D tiles of the flattened matrix; the bias column is offs % cols (as the Rust kernels).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    if CHAIN == 0:  # max(x, 0) * s + bias[col]
        r = tl.maximum(v, 0.0) * s + tl.load(bias + offs % cols, mask=m)
    elif CHAIN == 1:  # max(x + y, 0)
        r = tl.maximum(v + tl.load(y + offs, mask=m), 0.0)
    elif CHAIN == 2:  # tanh(x + y) * s
        r = _tanh(v + tl.load(y + offs, mask=m), LIBDEVICE) * s
    else:  # exp(max(x + bias[col], 0))
        r = tl.exp(tl.maximum(v + tl.load(bias + offs % cols, mask=m), 0.0))
    tl.store(out + offs, r, mask=m)


@triton.jit
def k_bias_gelu(x, bias, out, cols, APPROX: tl.constexpr, LIBDEVICE: tl.constexpr,
                BLOCK: tl.constexpr):
    # Program (column block, row), as the Rust kernel's 2-D grid.
    col = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = col < cols
    offs = tl.program_id(1) * cols + col
    v = tl.load(x + offs, mask=m).to(tl.float32) + tl.load(bias + col, mask=m).to(tl.float32)
    tl.store(out + offs, _gelu(v, APPROX, LIBDEVICE).to(out.dtype.element_ty), mask=m)


@triton.jit
def k_act_and_mul(x, out, d, ACT: tl.constexpr, BLOCK: tl.constexpr):
    # out[r, j] = act(x[r, j]) * x[r, d + j]; program (column block, row).
    j = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = j < d
    row = tl.program_id(1)
    v = tl.load(x + row * (2 * d) + j, mask=m).to(tl.float32)
    gate = tl.load(x + row * (2 * d) + d + j, mask=m).to(tl.float32)
    if ACT == 0:
        a = v * tl.sigmoid(v)
    else:
        a = 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    tl.store(out + row * d + j, (a * gate).to(out.dtype.element_ty), mask=m)


@triton.jit
def k_layernorm(x, w, b, y, n, eps, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    m = cols < n
    offs = tl.program_id(0) * n + cols
    v = tl.load(x + offs, mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(v, axis=0) / n
    d = tl.where(m, v - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
    out = d * rstd * tl.load(w + cols, mask=m).to(tl.float32) + tl.load(b + cols, mask=m).to(
        tl.float32)
    tl.store(y + offs, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def k_add_rmsnorm(x, res, w, n, eps, BLOCK: tl.constexpr):
    # In place: residual = x + residual (rounded, stored); x = residual * rsqrt(mean(r^2) + eps) * w.
    cols = tl.arange(0, BLOCK)
    m = cols < n
    offs = tl.program_id(0) * n + cols
    s = tl.load(x + offs, mask=m, other=0.0).to(tl.float32) + tl.load(
        res + offs, mask=m, other=0.0).to(tl.float32)
    s = s.to(res.dtype.element_ty)
    tl.store(res + offs, s, mask=m)
    r = s.to(tl.float32)
    inv = tl.math.rsqrt(tl.sum(r * r, axis=0) / n + eps)
    tl.store(x + offs, (r * inv * tl.load(w + cols, mask=m).to(tl.float32)).to(x.dtype.element_ty),
             mask=m)


@triton.jit
def k_softmax(x, out, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    m = cols < n
    offs = tl.program_id(0) * n + cols
    v = tl.load(x + offs, mask=m, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out + offs, e / tl.sum(e, axis=0), mask=m)


@triton.jit
def k_mean_center(x, y, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    m = cols < n
    offs = tl.program_id(0) * n + cols
    v = tl.load(x + offs, mask=m, other=0.0)
    tl.store(y + offs, v - tl.sum(v, axis=0) / n, mask=m)


@triton.jit
def k_softmax_regression(x, w, out, b, c, D: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr,
                         BC: tl.constexpr):
    # `D` (dim) is a compile-time constant: the loop bound (one compile per size).
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cls = tl.arange(0, BC)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BC), dtype=tl.float32)
    for k0 in tl.range(0, D, BK):
        k = k0 + ks
        xt = tl.load(x + rows[:, None] * D + k[None, :],
                     mask=(rows[:, None] < b) & (k[None, :] < D), other=0.0)
        wt = tl.load(w + k[:, None] * c + cls[None, :],
                     mask=(k[:, None] < D) & (cls[None, :] < c), other=0.0)
        acc = tl.dot(xt, wt, acc, input_precision="ieee")
    z = tl.where(cls[None, :] < c, acc, -float("inf"))
    e = tl.exp(z - tl.max(z, axis=1)[:, None])
    p = e / tl.sum(e, axis=1)[:, None]
    tl.store(out + rows[:, None] * c + cls[None, :], p,
             mask=(rows[:, None] < b) & (cls[None, :] < c))


@triton.jit
def k_qk_norm_rope(qkv, positions, cos_sin, qw, kw, stride, q_heads, heads, eps,
                   HALF: tl.constexpr, BH: tl.constexpr):
    # Program (block of BH q/k heads, token): per-head RMSNorm (weight qw for q heads, kw for k
    # heads), the normalized head rounded to the storage type (as vLLM), then neox RoPE with
    # cos_sin[pos] = 64 cosines then 64 sines; in place; v heads untouched.
    tok = tl.program_id(1)
    h = tl.program_id(0) * BH + tl.arange(0, BH)
    hm = (h < heads)[:, None]
    i = tl.arange(0, HALF)[None, :]
    p1 = qkv + tok * stride + h[:, None] * (2 * HALF) + i
    x1 = tl.load(p1, mask=hm, other=0.0).to(tl.float32)
    x2 = tl.load(p1 + HALF, mask=hm, other=0.0).to(tl.float32)
    is_q = (h < q_heads)[:, None]
    w1 = tl.where(is_q, tl.load(qw + i).to(tl.float32), tl.load(kw + i).to(tl.float32))
    w2 = tl.where(is_q, tl.load(qw + HALF + i).to(tl.float32), tl.load(kw + HALF + i).to(tl.float32))
    r = tl.math.rsqrt((tl.sum(x1 * x1, axis=1) + tl.sum(x2 * x2, axis=1)) / (2 * HALF) + eps)
    r = r[:, None]
    y1 = (x1 * r * w1).to(qkv.dtype.element_ty).to(tl.float32)
    y2 = (x2 * r * w2).to(qkv.dtype.element_ty).to(tl.float32)
    p = tl.load(positions + tok) * (2 * HALF)
    c = tl.load(cos_sin + p + i).to(tl.float32)
    sn = tl.load(cos_sin + p + HALF + i).to(tl.float32)
    tl.store(p1, (y1 * c - y2 * sn).to(qkv.dtype.element_ty), mask=hm)
    tl.store(p1 + HALF, (y2 * c + y1 * sn).to(qkv.dtype.element_ty), mask=hm)


# ----------------------------------------------------------------------------------------------
# Kernel families (one function each; names and sizes as examples/<name>/main.rs)
# ----------------------------------------------------------------------------------------------


def bench_fused_add_mul():
    """out = (x + y) * z, f32; x, y in [-1, 1), z in [0.5, 2); GPU size n = 2^27."""
    for (n,), timed in plan([(1,), (17,), (5003,)], [(1 << 27,)]):
        r = Rand(n)
        x, y, z = r.uniform(n, -1, 1), r.uniform(n, -1, 1), r.uniform(n, 0.5, 2.0)
        out, tmp = torch.empty_like(x), torch.empty_like(x)
        ref = ((x.double() + y.double()) * z.double(),)

        def reset():
            out.fill_(NAN)
            tmp.fill_(NAN)

        def torch_unfused():
            torch.add(x, y, out=tmp)
            torch.mul(tmp, z, out=out)
            return (out,)

        def triton_fused():
            k_add_mul[(cdiv(n, BLOCK),)](x, y, z, out, n, BLOCK=BLOCK)
            return (out,)

        impls = [("torch_unfused", "add, mul (out= buffers)", torch_unfused),
                 ("triton", "1 kernel, 1024 elements per program", triton_fused)]
        run_case("fused_add_mul", None, [n], "f32", 16.0 * n, impls, reset, ref, (1e-6,),
                 ("out",), timed)


CHAINS = [  # (variant = Rust fused kernel name, reads y, unfused ops)
    ("relu_scale_bias", False, "relu (clamp_min), scale, add bias"),
    ("add_relu", True, "add, relu (clamp_min)"),
    ("add_tanh_scale", True, "add, tanh, scale"),
    ("bias_relu_exp", False, "add bias, relu (clamp_min), exp"),
]


def bench_elementwise_chains():
    """Four element-wise chains on rows x cols f32 with a per-column bias and s = 0.75."""
    s = 0.75
    for (rows, cols), timed in plan([(1, 1), (17, 17), (5, 1023)], [(16384, 4096)]):
        r = Rand(rows * 7919 + cols)
        x, y = r.uniform((rows, cols), -3, 3), r.uniform((rows, cols), -3, 3)
        bias = r.uniform(cols, -1, 1)
        out, t1, t2 = (torch.empty_like(x) for _ in range(3))
        xd, yd, bd = x.double(), y.double(), bias.double()
        n = rows * cols

        def reset():
            for t in (out, t1, t2):
                t.fill_(NAN)

        for ci, (variant, reads_y, ops) in enumerate(CHAINS):
            ref = [xd.clamp_min(0) * s + bd, (xd + yd).clamp_min(0), torch.tanh(xd + yd) * s,
                   torch.exp((xd + bd).clamp_min(0))][ci]

            def torch_unfused(ci=ci):
                if ci == 0:
                    torch.clamp_min(x, 0.0, out=t1)
                    torch.mul(t1, s, out=t2)
                    torch.add(t2, bias, out=out)
                elif ci == 1:
                    torch.add(x, y, out=t1)
                    torch.clamp_min(t1, 0.0, out=out)
                elif ci == 2:
                    torch.add(x, y, out=t1)
                    torch.tanh(t1, out=t2)
                    torch.mul(t2, s, out=out)
                else:
                    torch.add(x, bias, out=t1)
                    torch.clamp_min(t1, 0.0, out=t2)
                    torch.exp(t2, out=out)
                return (out,)

            def triton_fused(ci=ci):
                k_chain[(cdiv(n, BLOCK),)](x, y, bias, out, n, cols, s, CHAIN=ci,
                                           LIBDEVICE=USE_LIBDEVICE, BLOCK=BLOCK)
                return (out,)

            impls = [("torch_unfused", ops + " (out= buffers)", torch_unfused),
                     ("triton", "1 kernel, 1024 elements per program, bias at offs % cols",
                      triton_fused)]
            nbytes = 4.0 * ((3 if reads_y else 2) * n + (0 if reads_y else cols))
            run_case("elementwise_chains", variant, [rows, cols], "f32", nbytes, impls, reset,
                     (ref,), (1e-5,), ("out",), timed)


def gelu64(v, approx):
    if approx:
        return 0.5 * v * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)))
    return 0.5 * v * (1.0 + torch.erf(v / math.sqrt(2.0)))


def bench_fused_bias_gelu():
    """y = GELU(x + bias[col]), erf and tanh forms, f32 and bf16 (f32 arithmetic)."""
    for (rows, cols), timed in plan([(1, 1), (17, 1), (5, 1023)], [(16384, 4096)]):
        for dname in ("f32", "bf16"):
            dt = DTYPES[dname]
            r = Rand(rows * 7919 + cols)
            x, bias = r.uniform((rows, cols), -4, 4, dt), r.uniform(cols, -1, 1, dt)
            out, tmp = torch.empty_like(x), torch.empty_like(x)
            v64 = x.double() + bias.double()

            def reset():
                out.fill_(NAN)
                tmp.fill_(NAN)

            for variant, approx in (("erf", False), ("tanh", True)):
                a = "tanh" if approx else "none"
                ref = (gelu64(v64, approx),)
                # As the Rust check: f32 erf 1e-4 (cancellation in 1 + erf for v << 0), f32 tanh
                # 1e-5, bf16 1e-2 (the unfused form rounds x + bias to bf16; the reference is the
                # fused one).
                tol = 1e-2 if dname == "bf16" else (1e-5 if approx else 1e-4)

                def torch_unfused(a=a):
                    torch.add(x, bias, out=tmp)
                    torch.ops.aten.gelu.out(tmp, approximate=a, out=out)
                    return (out,)

                def torch_native(a=a):
                    return (F.gelu(x + bias, approximate=a),)

                def triton_fused(approx=approx):
                    k_bias_gelu[(cdiv(cols, BLOCK), rows)](x, bias, out, cols, APPROX=approx,
                                                          LIBDEVICE=USE_LIBDEVICE, BLOCK=BLOCK)
                    return (out,)

                impls = [("torch_unfused", f"add bias, gelu(approximate='{a}') (out= buffers)",
                          torch_unfused),
                         ("torch_native", f"F.gelu(x + bias, approximate='{a}') (2 kernels)",
                          torch_native),
                         ("triton", "1 kernel, program (1024 columns, row)", triton_fused)]
                nbytes = x.element_size() * (2.0 * rows * cols + cols)
                run_case("fused_bias_gelu", variant, [rows, cols], dname, nbytes, impls, reset,
                         ref, (tol,), ("out",), timed)


def bench_act_and_mul():
    """out[r, j] = act(x[r, j]) * x[r, d + j], bf16, act = SiLU or GELU (erf); x in [-4, 4)."""
    for (rows, d), timed in plan([(1, 1), (17, 1), (5, 1023), (2, 1025)], [(8192, 14336)]):
        r = Rand(rows * 7919 + d)
        x = r.uniform((rows, 2 * d), -4, 4, torch.bfloat16)
        out, tmp = (torch.empty((rows, d), device=DEV, dtype=torch.bfloat16) for _ in range(2))
        a64, b64 = x[:, :d].double(), x[:, d:].double()

        def reset():
            out.fill_(NAN)
            tmp.fill_(NAN)

        for variant, act in (("silu", 0), ("gelu", 1)):
            if act == 0:
                ref = (a64 / (1.0 + torch.exp(-a64)) * b64,)
            else:
                ref = (gelu64(a64, False) * b64,)

            def torch_unfused(act=act):
                if act == 0:
                    torch.ops.aten.silu.out(x[:, :d], out=tmp)
                else:
                    torch.ops.aten.gelu.out(x[:, :d], out=tmp)
                torch.mul(tmp, x[:, d:], out=out)
                return (out,)

            def torch_native(act=act):
                if act == 0:
                    return (F.silu(x[:, :d]) * x[:, d:],)
                return (F.gelu(x[:, :d]) * x[:, d:],)

            def triton_fused(act=act):
                k_act_and_mul[(cdiv(d, BLOCK), rows)](x, out, d, ACT=act, BLOCK=BLOCK)
                return (out,)

            name = "silu" if act == 0 else "gelu"
            impls = [("torch_unfused", f"{name} into a bf16 temporary, mul (out= buffers)",
                      torch_unfused),
                     ("torch_native", f"F.{name}(x[:, :d]) * x[:, d:] (2 kernels)", torch_native),
                     ("triton", "1 kernel, program (1024 columns, row)", triton_fused)]
            run_case("act_and_mul", variant, [rows, 2 * d], "bf16", 2.0 * 3 * rows * d, impls,
                     reset, ref, (1e-2,), ("out",), timed)


def bench_fused_layernorm():
    """Layer norm over rows, f32 and f16 (f32 arithmetic), eps = 1e-5."""
    eps = 1e-5
    small = [(1, 1), (3, 17), (2, 1024), (2, 5000)]
    big = [(4096, 1024), (16384, 4096), (64, 65536)]
    for (rows, n), timed in plan(small, big):
        for dname in ("f32", "f16"):
            dt = DTYPES[dname]
            r = Rand(rows * 31 + n)
            x = r.uniform((rows, n), -2, 4, dt)
            w, b = r.uniform(n, 0.5, 1.5, dt), r.uniform(n, -0.5, 0.5, dt)
            y = torch.empty_like(x)
            x64 = x.double()
            mean64 = x64.mean(-1, keepdim=True)
            var64 = ((x64 - mean64) ** 2).mean(-1, keepdim=True)
            ref = ((x64 - mean64) / torch.sqrt(var64 + eps) * w.double() + b.double(),)
            del x64, mean64, var64
            block = row_block(n)

            def reset():
                y.fill_(NAN)

            def torch_unfused():
                mean = torch.mean(x, dim=-1, keepdim=True, dtype=F32)
                var = torch.var(x, dim=-1, keepdim=True, correction=0)
                xhat = (x - mean) * torch.rsqrt(var.float() + eps)
                torch.addcmul(b, xhat, w, out=y)
                return (y,)

            def torch_native():
                return (F.layer_norm(x, (n,), w, b, eps),)

            def triton_fused():
                k_layernorm[(rows,)](x, w, b, y, n, eps, BLOCK=block, num_warps=warps_for(block))
                return (y,)

            impls = [("torch_unfused", "mean, var, (x - mean) * rsqrt(var + eps) (f32), "
                      "addcmul(b, xhat, w)", torch_unfused),
                     ("torch_native", "F.layer_norm", torch_native),
                     ("triton", f"1 kernel, 1 program per row, tile {block}", triton_fused)]
            nbytes = x.element_size() * (2.0 * rows * n + 2 * n)
            run_case("fused_layernorm", None, [rows, n], dname, nbytes, impls, reset, ref,
                     (1e-5 if dname == "f32" else 1e-2,), ("y",), timed)


def bench_fused_add_rmsnorm():
    """vLLM's in-place fused_add_rms_norm, bf16 and f16, eps = 1e-6: residual = x + residual
    (rounded, written back), x = residual * rsqrt(mean(residual^2) + eps) * w (written back)."""
    eps = 1e-6
    small = [(1, 1), (3, 17), (2, 4096), (2, 5000)]
    big = [(4096, 4096), (32768, 4096)]
    for (rows, n), timed in plan(small, big):
        for dname in ("bf16", "f16"):
            dt = DTYPES[dname]
            r = Rand(rows * 31 + n)
            x0, r0 = r.uniform((rows, n), -2, 2, dt), r.uniform((rows, n), -2, 2, dt)
            w = r.uniform(n, 0.5, 1.5, dt)
            x, res = x0.clone(), r0.clone()
            res64 = (x0.float() + r0.float()).to(dt).double()  # the sum as stored
            inv64 = 1.0 / torch.sqrt((res64 ** 2).mean(-1, keepdim=True) + eps)
            ref = (res64 * inv64 * w.double(), res64)
            del inv64
            block = row_block(n)

            def reset():
                x.copy_(x0)
                res.copy_(r0)

            def torch_unfused():
                res.add_(x)
                rf = res.float()
                inv = torch.rsqrt(rf.pow(2).mean(dim=-1, keepdim=True) + eps)
                torch.mul(rf * inv, w, out=x)
                return (x, res)

            def torch_native():
                res.add_(x)
                return (F.rms_norm(res, (n,), w, eps), res)

            def triton_fused():
                k_add_rmsnorm[(rows,)](x, res, w, n, eps, BLOCK=block, num_warps=warps_for(block))
                return (x, res)

            impls = [("torch_unfused", "residual.add_(x), float, pow, mean, rsqrt, mul, mul into x",
                      torch_unfused),
                     ("torch_native", "residual.add_(x), F.rms_norm (new output tensor)",
                      torch_native),
                     ("triton", f"1 kernel, 1 program per row, tile {block}, in place",
                      triton_fused)]
            nbytes = x.element_size() * (4.0 * rows * n + n)
            run_case("fused_add_rmsnorm", None, [rows, n], dname, nbytes, impls, reset, ref,
                     (1e-2, 1e-6), ("x", "residual"), timed)


def bench_fused_softmax():
    """Softmax over rows, f32; x in [-4, 4)."""
    small = [(1, 1), (3, 17), (4, 1000), (2, 5000)]
    big = [(1024, 512), (16384, 4096), (4096, 32768)]
    for (rows, n), timed in plan(small, big):
        r = Rand(rows * 31 + n)
        x = r.uniform((rows, n), -4, 4)
        out, e = torch.empty_like(x), torch.empty_like(x)
        ref = (torch.softmax(x.double(), dim=-1),)
        block = row_block(n)

        def reset():
            out.fill_(NAN)
            e.fill_(NAN)

        def torch_unfused():
            m = torch.amax(x, dim=-1, keepdim=True)
            torch.sub(x, m, out=e)
            e.exp_()
            s = e.sum(dim=-1, keepdim=True)
            torch.div(e, s, out=out)
            return (out,)

        def torch_native():
            return (torch.softmax(x, dim=-1),)

        def triton_fused():
            k_softmax[(rows,)](x, out, n, BLOCK=block, num_warps=warps_for(block))
            return (out,)

        impls = [("torch_unfused", "amax, sub, exp_, sum, div (out= buffers)", torch_unfused),
                 ("torch_native", "torch.softmax", torch_native),
                 ("triton", f"1 kernel, 1 program per row, tile {block}", triton_fused)]
        run_case("fused_softmax", None, [rows, n], "f32", 8.0 * rows * n, impls, reset, ref,
                 (1e-5,), ("out",), timed)


def bench_softmax_regression_simple():
    """probs = softmax(x @ w) over the classes, f32 (the document's simple fused kernel); x in
    [-1, 1), w in [-0.5, 0.5); shapes (batch, dim, classes). Bytes: x, w read once, probs written
    once. The Triton kernel is the document's tiled fused kernel: a block of rows per program,
    `tl.dot` over slices of dim (on the tensor cores, in tf32 unless `allow_tf32`/input_precision
    says otherwise: here "ieee", so it computes in f32 as tile does), softmax in registers."""
    small = [(1, 1, 1), (17, 33, 10), (5, 100, 17), (33, 64, 64)]
    big = [(64, 128, 10), (256, 512, 50), (1024, 1024, 100)]
    for (b, d, c), timed in plan(small, big):
        r = Rand(b * 131 + d * 7 + c)
        x = r.uniform((b, d), -1, 1)
        w = r.uniform((d, c), -0.5, 0.5)
        out = torch.empty((b, c), device=x.device, dtype=torch.float32)
        ref = (torch.softmax(x.double() @ w.double(), dim=-1),)
        bc = max(16, triton.next_power_of_2(c))

        def reset():
            out.fill_(NAN)

        def torch_unfused():
            logits = x @ w
            torch.softmax(logits, dim=-1, out=out)
            return (out,)

        def triton_fused():
            k_softmax_regression[(cdiv(b, 16),)](x, w, out, b, c, D=d, BM=16, BK=32, BC=bc,
                                                 num_warps=4)
            return (out,)

        impls = [("torch_unfused", "matmul (cuBLAS), softmax", torch_unfused),
                 ("triton", f"1 kernel, 16 rows per program, tl.dot over 32-wide slices, "
                            f"{bc} classes", triton_fused)]
        run_case("softmax_regression_simple", None, [b, d, c], "f32",
                 4.0 * (b * d + d * c + b * c), impls, reset, ref, (1e-5,), ("probs",), timed)


def bench_mean_center():
    """y = x - mean(row), f32; x in [-1, 3)."""
    for (rows, n), timed in plan([(1, 1), (3, 17), (2, 4096), (2, 5000)], [(16384, 4096)]):
        r = Rand(rows * 31 + n)
        x = r.uniform((rows, n), -1, 3)
        y = torch.empty_like(x)
        x64 = x.double()
        ref = (x64 - x64.mean(-1, keepdim=True),)
        del x64
        block = row_block(n)

        def reset():
            y.fill_(NAN)

        def torch_unfused():
            torch.sub(x, x.mean(dim=-1, keepdim=True), out=y)
            return (y,)

        def triton_fused():
            k_mean_center[(rows,)](x, y, n, BLOCK=block, num_warps=warps_for(block))
            return (y,)

        impls = [("torch_unfused", "mean, sub (out= buffer)", torch_unfused),
                 ("triton", f"1 kernel, 1 program per row, tile {block}", triton_fused)]
        run_case("mean_center", None, [rows, n], "f32", 8.0 * rows * n, impls, reset, ref,
                 (1e-5,), ("y",), timed)


def rope_eager(qk, cos_sin, positions):
    """Neox RoPE in place on qk [tokens, heads, 128] (f32 arithmetic, one rounding on store)."""
    cs = cos_sin[positions]  # [tokens, 128]: 64 cosines then 64 sines
    c = cs[:, None, :64].float()
    s = cs[:, None, 64:].float()
    y = qk.float()
    y1, y2 = y[..., :64], y[..., 64:]
    qk[..., :64] = y1 * c - y2 * s
    qk[..., 64:] = y2 * c + y1 * s


def bench_qk_norm_rope():
    """Per-head RMSNorm of q and k (weights qw, kw of 128) then neox RoPE, in place in a packed
    bf16 qkv [tokens, (q_heads + 2 kv_heads) * 128]; v untouched; eps = 1e-6."""
    eps, hd = 1e-6, 128
    small = [(1, 1, 1, 1), (3, 4, 2, 17), (17, 8, 1, 100)]
    big = [(8192, 32, 8, 8192)]
    for (tokens, hq, hkv, max_pos), timed in plan(small, big):
        heads, total = hq + hkv, hq + 2 * hkv
        stride = total * hd
        r = Rand(tokens * 7 + hq)
        qkv0 = r.uniform((tokens, stride), -2, 2, torch.bfloat16)
        positions = r.randint(max_pos, (tokens,))
        i = torch.arange(64, device=DEV, dtype=torch.float64)
        freqs = torch.arange(max_pos, device=DEV, dtype=torch.float64)[:, None] / (
            10000.0 ** (2.0 * i / hd))[None, :]
        cos_sin = torch.cat([freqs.cos(), freqs.sin()], dim=1).to(torch.bfloat16).contiguous()
        qw, kw = r.uniform(hd, 0.5, 1.5, torch.bfloat16), r.uniform(hd, 0.5, 1.5, torch.bfloat16)
        # The per-head weights expanded once (set-up, not timed) for the eager norm.
        wqk = torch.cat([qw.float().expand(hq, hd), kw.float().expand(hkv, hd)])
        qkv = qkv0.clone()
        # Reference: norm in f64, rounded to bf16 (as vLLM and the Rust kernels), rope in f64.
        x64 = qkv0.double().view(tokens, total, hd)[:, :heads]
        inv = 1.0 / torch.sqrt((x64 ** 2).mean(-1, keepdim=True) + eps)
        y = (x64 * inv * wqk.double()).to(torch.bfloat16).double()
        cs = cos_sin.double()[positions.long()]
        c, s = cs[:, None, :64], cs[:, None, 64:]
        ref_qk = torch.cat([y[..., :64] * c - y[..., 64:] * s, y[..., 64:] * c + y[..., :64] * s],
                           dim=-1)
        ref_v = qkv0.double().view(tokens, total, hd)[:, heads:]
        refs = (ref_qk, ref_v)
        del x64, inv, y, cs, c, s
        bh = 8

        def views():
            v3 = qkv.view(tokens, total, hd)
            return v3[:, :heads], v3[:, heads:]

        def reset():
            qkv.copy_(qkv0)

        def torch_unfused():
            qk, v = views()
            xf = qk.float()  # step 1: RMSNorm per head, written back (bf16)
            inv = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
            qk.copy_(xf * inv * wqk)
            rope_eager(qk, cos_sin, positions)  # step 2: RoPE, in place
            return (qk, v)

        def torch_native():
            qk, v = views()
            v3 = qkv.view(tokens, total, hd)
            v3[:, :hq] = F.rms_norm(v3[:, :hq], (hd,), qw, eps)
            v3[:, hq:heads] = F.rms_norm(v3[:, hq:heads], (hd,), kw, eps)
            rope_eager(qk, cos_sin, positions)
            return (qk, v)

        def triton_fused():
            k_qk_norm_rope[(cdiv(heads, bh), tokens)](qkv, positions, cos_sin, qw, kw, stride, hq,
                                                      heads, eps, HALF=64, BH=bh, num_warps=4)
            return views()

        impls = [("torch_unfused", "norm: float, pow, mean, rsqrt, mul, mul, copy_; rope: gather "
                  "cos_sin[pos], float, 6 mul/add, 2 slice copies", torch_unfused),
                 ("torch_native", "F.rms_norm on q and k head views (copied back), eager rope",
                  torch_native),
                 ("triton", f"1 kernel, program ({bh} heads, token), in place", triton_fused)]
        elems = tokens * heads * hd
        nbytes = 2.0 * 2.0 * elems + tokens * (4.0 + 2.0 * hd) + 2.0 * 2.0 * hd
        run_case("qk_norm_rope", None, [tokens, hq, hkv, hd], "bf16", nbytes, impls, reset, refs,
                 (1e-2, 0.0), ("qk", "v (must be untouched)"), timed)


FAMILIES = [
    ("fused_add_mul", bench_fused_add_mul),
    ("elementwise_chains", bench_elementwise_chains),
    ("fused_bias_gelu", bench_fused_bias_gelu),
    ("act_and_mul", bench_act_and_mul),
    ("fused_layernorm", bench_fused_layernorm),
    ("fused_add_rmsnorm", bench_fused_add_rmsnorm),
    ("fused_softmax", bench_fused_softmax),
    ("mean_center", bench_mean_center),
    ("qk_norm_rope", bench_qk_norm_rope),
    ("softmax_regression_simple", bench_softmax_regression_simple),
]


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------


def markdown_table(rows):
    """One line per measurement; speedup is against torch_unfused of the same case."""
    base = {}
    for r in rows:
        if r["impl"] == "torch_unfused" and not r["graph"] and r["ms"]:
            base[(r["kernel"], r["variant"], tuple(r["shape"]), r["dtype"])] = r["ms"]
    head = ["kernel", "variant", "shape", "dtype", "impl", "ms", "GB/s", "% copy",
            "vs torch_unfused", "rel err", "ok"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        key = (r["kernel"], r["variant"], tuple(r["shape"]), r["dtype"])
        ms = r["ms"]
        sp = f"{base[key] / ms:.2f}x" if ms and key in base else "-"
        cells = [r["kernel"], r["variant"] or "-", shape_str(r["shape"]), r["dtype"],
                 r["impl"] + (" (graph)" if r["graph"] else ""),
                 f"{ms:.4f}" if ms else "-",
                 f"{r['gbps']:.0f}" if ms else "-",
                 f"{r['pct_copy']:.1f}%" if ms else "-",
                 sp,
                 f"{r['rel_err']:.1e}" if r.get("rel_err") is not None else "-",
                 "ok" if r["ok"] else "FAIL"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    global COPY_GBPS
    t_start = time.time()
    if ON_GPU and not torch.cuda.is_available():
        sys.exit("no CUDA device visible to torch; use --device cpu for a smoke test")
    name = torch.cuda.get_device_name() if ON_GPU else (platform.processor() or "cpu")
    print(f"device: {name}; torch {torch.__version__}, triton {triton.__version__}, "
          f"numpy {numpy.__version__}, python {platform.python_version()}")
    if not ON_GPU:
        patch_interpreter_bf16_rounding()
        print("CPU smoke test (TRITON_INTERPRET=1): TIMINGS ARE MEANINGLESS, only the checks count.")
    print(f"timing: median of {ARGS.reps} runs after {ARGS.warmup} warm-ups"
          f"{' (quick: small shapes only)' if ARGS.quick else ''}")
    COPY_GBPS = copy_bandwidth()
    print(f"device-to-device copy bandwidth (read + write): {COPY_GBPS:.0f} GB/s")
    for fam, fn in FAMILIES:
        if ARGS.filter and ARGS.filter not in fam:
            continue
        print(f"== {fam}")
        t0 = time.time()
        try:
            fn()
        except Exception as e:  # a set-up failure of one family must not lose the others
            traceback.print_exc()
            FAILURES.append(f"{fam}: {type(e).__name__}: {e}")
        if ON_GPU:
            torch.cuda.empty_cache()
        print(f"   ({time.time() - t0:.1f} s)")
    copy_end = copy_bandwidth()
    print(f"device-to-device copy bandwidth at the end: {copy_end:.0f} GB/s")
    doc = {
        "device": name,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "copy_gbps": COPY_GBPS,
        "copy_gbps_end": copy_end,
        "quick": ARGS.quick,
        "meaningful_timings": ON_GPU,
        "method": (f"median of {ARGS.reps} runs after {ARGS.warmup} warm-ups, each run between "
                   "CUDA events and synchronized; graph rows: median of 30 timings of "
                   f"{GRAPH_REPLAYS} replays / {GRAPH_REPLAYS}; bytes = each input read once + "
                   "each output written once"),
        "filter": ARGS.filter,
        "wall_s": time.time() - t_start,
        "rows": ROWS,
        "checks": CHECKS,
        "failures": FAILURES,
    }
    out_dir = os.path.dirname(os.path.abspath(ARGS.out))
    os.makedirs(out_dir, exist_ok=True)
    with open(ARGS.out, "w") as f:
        json.dump(doc, f, indent=1)
    print()
    if not ON_GPU:
        print("(CPU / Triton interpreter: the times below are meaningless)")
    print(f"{name}, copy {COPY_GBPS:.0f} GB/s (end {copy_end:.0f}); {len(ROWS)} timed rows, "
          f"{len(CHECKS)} check-only results, {len(FAILURES)} failures; "
          f"{time.time() - t_start:.0f} s; JSON: {ARGS.out}")
    print(markdown_table(ROWS))
    if FAILURES:
        print("FAILURES:\n  " + "\n  ".join(FAILURES))
    n_ok = sum(r["ok"] for r in ROWS + CHECKS)
    print(f"checks: {n_ok} passed, {len(ROWS) + len(CHECKS) - n_ok} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
