#!/usr/bin/env python3
"""PyTorch eager, cuBLAS and Triton baselines for every kernel family of the `tile` examples.

For each (kernel, shape, dtype) that the Rust examples in `examples/*/` time at GPU sizes, and for
the GEMM families (gemm, fp8_gemm, gemm_bias_act, softmax_regression), this measures, where they exist:

- `torch_unfused`: PyTorch eager written step by step after the example's unfused form (the same
  steps and intermediates; PyTorch may need a few extra small kernels for per-row scalars or for
  dtype promotion: the row's `ops` field lists the calls), or, for the GEMM families, what a
  PyTorch user writes (`torch.addmm` then `F.relu` / `F.gelu`; `torch.matmul` then
  `torch.softmax(dtype=float32)`);
- `torch_native`: PyTorch's own op for the job (F.layer_norm, torch.softmax, F.rms_norm, F.gelu,
  F.silu/F.gelu * gate, `torch._addmm_activation` = cuBLASLt's fused bias + ReLU/GELU-tanh
  epilogue). For fused_bias_gelu and act_and_mul this is the same two kernels as `torch_unfused`
  (PyTorch has no single-kernel form), only with freshly allocated outputs;
- `cublas`: `torch.matmul` (gemm; `torch.mm(out_dtype=float32)` for the f32-output variant), and
  `cublas_gemm_only` in softmax_regression: the matmul alone, a ceiling, not the whole job;
- `triton`, `triton_unfused`, `triton_fused`, `triton_fused_split`: @triton.jit kernels. Where a
  public Triton kernel exists for the job it is used, written out here in our own code structure
  and marked in the row's `source` field:
    - "triton-tutorial": Triton's official tutorials: 02-fused-softmax (fused_softmax and the
      softmax of softmax_regression's triton_unfused: rows strided over an occupancy-sized
      persistent grid, 8 warps, num_stages by shared memory size), 05-layer-norm
      (`_layer_norm_fwd_fused`: BLOCK_SIZE = min(65536 // elem_size, next_pow2(N)), num_warps =
      min(max(BLOCK_SIZE // 256, 1), 8)), 03-matrix-multiplication (`matmul_kernel`: GROUP_SIZE_M
      swizzle, masked K loop, autotuned over the tutorial's `get_cuda_autotune_config()` keyed on
      M, N, K; gemm_bias_act adds the bias and the activation in its epilogue, where the tutorial
      fuses leaky_relu, and also keys the tuning on the activation);
    - "liger": Liger-Kernel's fused_add_rms_norm forward (fused_add_rmsnorm; casting mode "llama",
      its default; BLOCK_SIZE and num_warps by its `calculate_settings`), launched in place;
    - "ours": written here where no public kernel exists (element-wise chains, bias + GELU,
      act_and_mul, mean_center, qk_norm_rope, softmax_regression_simple's document kernel, and the
      two fused softmax_regression kernels).
  Torch and cuBLAS rows have `source` "pytorch".

Method (as examples/common/mod.rs and the device METHOD.md): seeded random inputs in the examples'
ranges (never zeros); every impl is first checked against a float64 reference computed with torch
on the device, with outputs poisoned with NaN (in-place buffers restored from pristine copies),
by relative L2 error (pass/fail against the examples' tolerances; NaN never passes) and max
absolute error. Then timed, like `triton.testing.do_bench`: after warm-up, each timing sample is
a batch of back-to-back launches (as many as make ~0.2 ms of device work, 1 to 50) timed with a
pair of CUDA events and divided by the batch; before every sample the L2 is flushed (a 256 MB
buffer zeroed) and the GPU is held busy (`torch.cuda._sleep`) for longer than the host takes to
enqueue the batch, so that no Python launch cost lands between the events: the rows are device
time. No synchronization between samples; the row's `ms` is the median over `--reps` samples
(`batch` and `samples` are in the row). Where the case's Triton kernel takes under 75 us
(launch-bound, as the Rust GRAPH_BELOW_MS), every impl of that case is also timed as a CUDA-graph
replay (the graph's output checked first, then the same sampling with at least 20 replays per
sample). Effective GB/s counts the minimal traffic as the Rust examples do (each input read once,
each output written once) and is also given as % of the device-to-device copy bandwidth measured
in the same run (a 1 GiB copy_, counting bytes read plus bytes written; measured at the start and
again at the end). GEMM rows also carry `flops` (2 M N K), `tflops` and `pct_cublas` (100 x
cuBLAS's time / this row's time, cuBLAS's plain GEMM of the same M, N, K and dtype in this run).

Autotuning: the autotuned kernels (the tutorial matmul and the fused softmax_regression kernels)
are tuned by Triton's autotuner at their first launch (the check), each config benchmarked for 40
ms (Triton's default is 100 ms; shortened to keep the run short). Before that, every config of
the case is compiled in a thread pool (`triton.AsyncCompileMode`), since the autotuner compiles
its configs one after the other.

Run on the GPU machine (full run: a few minutes on an H100, Triton compiles and autotuning
included; the GEMM families are most of it):

    python3 bench/python/baseline.py --out $OUT/baseline.json

Options: `--filter SUBSTR` (only kernels whose name contains it), `--skip A,B` (leave out the
kernels named exactly A and B), `--quick` (the small awkward
shapes only, few repetitions), `--graph-all` (CUDA graphs for every case), `--device cpu` (smoke test
without a GPU: sets TRITON_INTERPRET=1, implies --quick; timings there are meaningless).

Output: JSON with one row per measurement {kernel, variant, shape, dtype, impl, source, graph, ms,
gbps, pct_copy, max_err, rel_err, ok, ...; GEMM rows also flops, tflops, pct_cublas; autotuned
rows config}, the check-only results of the small shapes, the device, versions, copy bandwidth and
date; a Markdown table at the end of stdout. Exit code 1 if any check failed or any impl raised.

On the CPU the Triton 3.6 interpreter needs a few patches to behave like the GPU
(patch_interpreter): it truncates f32 -> bf16 where the GPU rounds to nearest even, does bf16
arithmetic and tl.dot on the raw 16-bit integers, and (with NumPy >= 2.4) cannot turn a program
id into a Python int for a loop bound.

Family `tutorials`: Triton's official tutorials 01, 02, 03, 04, 05 (forward and backward) and 09
with their kernels as the tutorials write them, on the keys of tile-bench's `tutorials` family
(which times the line-by-line tile ports of `tutorials/`): bench/python/tutorials.py, imported by
bench_tutorials; its docstring lists the rows.

Family `flash_attention`: attention forward, backward, GQA, variable length, score modifiers and
paged decode, through PyTorch's scaled_dot_product_attention with each backend pinned (cuDNN,
flash, efficient), FlexAttention (torch.compile) and Triton's fused-attention tutorial:
bench/python/attention.py, imported by bench_flash_attention; its docstring gives the row keys,
the implementations, the tolerances and the options `--attn-parts`, `--attn-impls`,
`--attn-dtypes`, `--attn-row-timeout` and `--attn-deadline`. A backend that cannot run a case gives a row with
`refused: true` and the reason in `error` (not a failure; counted as skipped).

Shapes: add_mul [n]; elementwise/gelu/layernorm/rmsnorm/softmax/mean_center [rows, cols];
act_and_mul [rows, 2*d] (the input); qk_norm_rope [tokens, q_heads, kv_heads, head_dim];
softmax_regression_simple (f32) and softmax_regression (f16/bf16 inputs, f32 probabilities)
[batch, dim, classes]; gemm and gemm_bias_act [M, N, K] (A row-major M x K, B row-major K x N, C
M x N in the input dtype; gemm's variant "out_f32": C in f32; gemm_bias_act's variant is the
activation: relu, gelu (erf), gelu_tanh); selective_scan [batch, channels, len, 16] (the
last the state size; torch_unfused: Mamba's selective_scan_ref loop, torch_native: a parallel
scan in whole-tensor ops, mamba_ssm: its CUDA kernel where installed); dequant_matmul [M, N, K]
(x M x K, 4-bit W N x K with a scale and zero point per 128 along K; torch_unfused dequantizes
then multiplies, cublas multiplies W dequantized beforehand, torch_int4pack is
`_weight_int4pack_mm`, bf16); w8a8 [M, N, K] (int8 x per token, int8 W per channel, bf16 y;
torch_unfused quantizes x then torch._int_mm and the scaling, int_mm the product and scaling
alone, cublas the bf16 product unquantized); conv_bn_relu [N, H, W, Cin, Cout, F, stride] (NHWC, padding F // 2;
torch_unfused conv2d -> batch_norm -> relu, cudnn_folded the folded conv2d + relu_, cudnn_conv
the folded conv2d alone); rmsnorm_linear [M, N, K] (x M x K, W N x K; torch_unfused F.rms_norm then
x_n @ W.T, cublas_gemm_only the product alone); linear_cross_entropy [t, h, v] (x t x h, W v x h,
loss and gradients; torch_unfused F.linear + F.cross_entropy + backward, liger_style Liger's
chunked form with its Triton kernel, liger the package where installed; extra memory printed);
softmax_regression_backward [b, d, c] variant h<heads> (dx, dW from P and dP; torch_unfused autograd).
"""

import argparse
import datetime
import itertools
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
    p.add_argument("--skip", default="", help="comma-separated kernel names to leave out "
                   "(e.g. gemm,gemm_bias_act,softmax_regression: the memory-bound families only)")
    p.add_argument("--quick", action="store_true", help="small shapes, few repetitions")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--graph-all", action="store_true", help="CUDA-graph timings for every case")
    p.add_argument("--warmup", type=int, default=None, help="untimed runs before timing")
    p.add_argument("--reps", type=int, default=None, help="timing samples (median taken)")
    p.add_argument("--impls", default="", help="comma-separated implementations to run in the "
                   "families other than flash_attention (e.g. cublas; default all)")
    p.add_argument("--attn-parts", default="", help="flash_attention family: comma-separated "
                   "parts to run (fwd,bwd,gqa,varlen,mods,decode; default all)")
    p.add_argument("--attn-impls", default="", help="flash_attention family: comma-separated "
                   "implementations to run (e.g. sdpa_cudnn,triton; default all)")
    p.add_argument("--attn-dtypes", default="", help="flash_attention family: dtypes of the "
                   "fwd and bwd grids (f16,bf16; default both)")
    p.add_argument("--attn-row-timeout", type=float, default=150.0, help="flash_attention "
                   "family: seconds per implementation of a case (check and timing)")
    p.add_argument("--attn-deadline", type=float, default=None, help="flash_attention family: "
                   "seconds after the start past which no new work starts (default: "
                   "BASELINE_TIMEOUT - 60 if that is set)")
    a = p.parse_args(argv)
    if a.device == "cpu":
        a.quick = True
    if a.warmup is None:
        a.warmup = 1 if a.device == "cpu" else (2 if a.quick else 10)
    if a.reps is None:
        a.reps = 3 if a.device == "cpu" else (5 if a.quick else 50)
    return a


ARGS = parse_args()
T_START_MONO = time.monotonic()  # the run's start, for the flash_attention family's deadline
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
GRAPH_REPLAYS = 20  # at least this many replays per timing sample of a CUDA graph
BLOCK = 1024  # elements (or columns) per program of the element-wise kernels, as in Rust
L2_FLUSH_BYTES = 256 << 20  # zeroed before every timing sample, as triton.testing.do_bench
SAMPLE_MS = 0.2  # device time aimed at per timing sample (a batch of launches)
MAX_BATCH = 50  # launches per timing sample at most
AUTOTUNE_WARMUP_MS, AUTOTUNE_REP_MS = 10, 40  # per config (Triton's defaults: 25 and 100)

ROWS = []  # timed measurements
CHECKS = []  # check-only results (small shapes in a full run)
FAILURES = []
MEMORY = {}  # (shape..., dtype, impl) -> GiB above the inputs (linear_cross_entropy)
COPY_GBPS = None
CUBLAS_MS = {}  # (gemm key, graph) -> cuBLAS's time in this run, for pct_cublas


# ----------------------------------------------------------------------------------------------
# Infrastructure: interpreter patches, inputs, checks, timing, reporting
# ----------------------------------------------------------------------------------------------


def _bf16_bits_to_f32(u16):
    u = numpy.ascontiguousarray(u16, dtype=numpy.uint16).astype(numpy.uint32) << 16
    return u.view(numpy.float32)


def _f32_to_bf16_bits(f):
    """Round to nearest even, as the GPU (NaN stays NaN)."""
    f = numpy.ascontiguousarray(f, dtype=numpy.float32)
    u = f.view(numpy.uint32).astype(numpy.uint64)
    out = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(numpy.uint16)
    out[numpy.isnan(f)] = 0x7FC0
    return out


def patch_interpreter():
    """CPU smoke test only: make Triton 3.6's interpreter compute like the GPU where it does not.

    - f32 -> bf16 casts truncate; the GPU rounds to nearest even;
    - bf16 tensors are held as uint16 and +, -, *, / and tl.dot act on those integers; here they
      are done in f32 and rounded to bf16 (one rounding, as the GPU's bf16 instructions);
    - `int()` of a program id (a 1-element array) fails with NumPy >= 2.4, so a loop bounded by
      one (the tutorial softmax's `tl.range(pid, n_rows, num_programs)`) cannot run."""
    from triton.runtime import interpreter as ti

    orig_cast = ti.InterpreterBuilder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return ti.TensorHandle(_f32_to_bf16_bits(src.data), tl.bfloat16)
        return orig_cast(self, src, dst_type)

    ti.InterpreterBuilder.cast_impl = cast_impl

    for name, op in (("create_fadd", numpy.add), ("create_fsub", numpy.subtract),
                     ("create_fmul", numpy.multiply), ("create_fdiv", numpy.divide)):
        orig = getattr(ti.InterpreterBuilder, name)

        def binary(self, lhs, rhs, orig=orig, op=op):
            if lhs.dtype.scalar == tl.bfloat16 and rhs.dtype.scalar == tl.bfloat16:
                out = op(_bf16_bits_to_f32(lhs.data), _bf16_bits_to_f32(rhs.data))
                return ti.TensorHandle(_f32_to_bf16_bits(out), tl.bfloat16)
            return orig(self, lhs, rhs)

        setattr(ti.InterpreterBuilder, name, binary)

    orig_dot = ti.InterpreterBuilder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        def f32(h):
            if h.dtype.scalar == tl.bfloat16:
                return ti.TensorHandle(_bf16_bits_to_f32(h.data), tl.float32)
            return h

        return orig_dot(self, f32(a), f32(b), d, input_precision, max_num_imprecise_acc)

    ti.InterpreterBuilder.create_dot = create_dot

    orig_patch_tensor = ti._patch_lang_tensor

    def patch_lang_tensor(tensor, scope):
        orig_patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__",
                       lambda self: int(numpy.asarray(self.handle.data).reshape(-1)[0]))

    ti._patch_lang_tensor = patch_lang_tensor


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


def rel_l2(o, r):
    d = float(torch.linalg.vector_norm(o.double() - r))
    n = float(torch.linalg.vector_norm(r))
    return d / n if n > 0 else d


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


class Timer:
    """Device time of a launch function, sampled as triton.testing.do_bench does (L2 flushed
    before every sample, no synchronization between samples), with a batch of back-to-back
    launches per sample and the GPU held busy while the host enqueues the batch."""

    def __init__(self):
        self.flush = None
        self.cycles_per_ms = None
        if ON_GPU:
            self.flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=DEV)
            # Clock cycles per ms of torch.cuda._sleep: the largest of three ~10 ms sleeps (the
            # highest clock seen; a hold computed from it is long enough at any lower clock).
            self.cycles_per_ms = 0.0
            cycles = 20_000_000
            for _ in range(3):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                torch.cuda._sleep(cycles)
                e.record()
                e.synchronize()
                self.cycles_per_ms = max(self.cycles_per_ms, cycles / max(s.elapsed_time(e), 1e-3))

    def _samples(self, launch, batch, host_ms, n):
        """n samples of `batch` launches each: ms per launch."""
        hold_ms = 2.0 * host_ms * batch + 0.05
        cycles = int(hold_ms * self.cycles_per_ms)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        for i in range(n):
            self.flush.zero_()
            torch.cuda._sleep(cycles)  # the host enqueues the batch meanwhile
            starts[i].record()
            for _ in range(batch):
                launch()
            ends[i].record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) / batch for s, e in zip(starts, ends)]

    def time(self, launch, min_batch=1, samples=None):
        """(median ms per launch, batch, samples)."""
        samples = samples or ARGS.reps
        for _ in range(ARGS.warmup):
            launch()
        if not ON_GPU:
            times = []
            for _ in range(samples):
                t0 = time.perf_counter()
                launch()
                times.append((time.perf_counter() - t0) * 1e3)
            return statistics.median(times), 1, samples
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(5):
            launch()
        host_ms = (time.perf_counter() - t0) * 1e3 / 5  # enqueue cost, device still running
        torch.cuda.synchronize()
        est = min(self._samples(launch, 5, host_ms, 3))
        batch = max(min_batch, min(MAX_BATCH, math.ceil(SAMPLE_MS / max(est, 1e-4))))
        times = self._samples(launch, batch, host_ms, samples)
        return statistics.median(times), batch, samples


TIMER = None


def time_graph(fn, reset, refs, tols, names, view=None):
    """One CUDA-graph replay of `fn`: capture, check the graph's output (through `view`, as the
    plain launch's check) from fresh inputs, then time the replays as TIMER does (at least
    GRAPH_REPLAYS back-to-back replays per sample)."""
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
    check = compare(view(outs) if view else outs, refs, tols, names)
    ms, batch, samples = TIMER.time(g.replay, min_batch=GRAPH_REPLAYS)
    del g, outs
    return ms, batch, samples, check


def shape_str(shape):
    return "x".join(str(s) for s in shape)


def impl_wanted(impl):
    """Whether `--impls` (empty: all) lets implementation `impl` run."""
    only = [x for x in ARGS.impls.split(",") if x]
    return not only or impl in only


def run_case(kernel, variant, shape, dtype, nbytes, impls, reset, refs, tols, names, timed,
             flops=None, gemm_key=None, gate_impl="triton"):
    """Checks every impl against `refs` (after `reset()`), then times it if `timed`.

    impls: list of (impl name, ops description, fn) or (impl, ops, fn, meta); fn() launches the
    impl and returns its output tensors in the order of `refs` (`tols` and `names` give each
    output's tolerance and name). meta (optional dict): `source` (provenance, default "pytorch"),
    `no_graph` (never replayed as a CUDA graph), `refs`/`tols`/`names` (this impl's own outputs
    and references), `config` (a function giving the autotuned config after the check, for the
    row). flops: work of one launch (GEMM rows);
    gemm_key: the (M, N, K, dtype, variant) of the cuBLAS GEMM that `pct_cublas` compares with
    (set by this case's `cublas` impl, or looked up from the gemm family's rows of this run).
    """
    label = f"{kernel}{'/' + variant if variant else ''} {shape_str(shape)} {dtype}"
    impls = [spec for spec in impls if impl_wanted(spec[0])]
    plain = {}
    case_rows = []
    for spec in impls:
        impl, ops, fn = spec[:3]
        meta = spec[3] if len(spec) > 3 else {}
        c_refs = meta.get("refs", refs)
        c_tols = meta.get("tols", tols)
        c_names = meta.get("names", names)
        base = {"kernel": kernel, "variant": variant, "shape": list(shape), "dtype": dtype,
                "impl": impl, "source": meta.get("source", "pytorch"), "ops": ops, "bytes": nbytes}
        if flops:
            base["flops"] = flops
        try:
            reset()
            outs = fn()
            sync()
            if meta.get("view"):  # what of the outputs the check compares (random masks)
                outs = meta["view"](outs)
            ok, rel, max_abs, detail = compare(outs, c_refs, c_tols, c_names)
            del outs
            if meta.get("config"):
                base["config"] = meta["config"]()
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
        print(f"check {label:<44} {impl:<18}: {worst} -> {'ok' if ok else 'FAILED'}")
        if not ok:
            FAILURES.append(f"{label} {impl}: {worst}")
        check = dict(base, max_err=max_abs, rel_err=rel, ok=ok, errors=detail)
        if not timed:
            CHECKS.append(check)
            continue
        try:
            reset()
            ms, batch, samples = TIMER.time(fn)
        except Exception as e:
            traceback.print_exc()
            FAILURES.append(f"{label} {impl} timing: {e}")
            ROWS.append(dict(check, graph=False, ms=None, gbps=None, pct_copy=None, ok=False,
                             error=f"{type(e).__name__}: {e}"))
            continue
        plain[impl] = ms
        row = dict(check, graph=False, batch=batch, samples=samples, **rate(ms, nbytes, flops))
        ROWS.append(row)
        case_rows.append(row)
    set_pct_cublas(case_rows, plain, gemm_key, False)
    if not (timed and ON_GPU and plain):
        return
    gate = plain.get(gate_impl, min(plain.values()))
    if not (ARGS.graph_all or gate < GRAPH_BELOW_MS):
        return
    graph = {}
    case_rows = []
    for spec in impls:
        impl, ops, fn = spec[:3]
        meta = spec[3] if len(spec) > 3 else {}
        if impl not in plain or meta.get("no_graph"):
            continue
        base = {"kernel": kernel, "variant": variant, "shape": list(shape), "dtype": dtype,
                "impl": impl, "source": meta.get("source", "pytorch"), "ops": ops, "bytes": nbytes,
                "graph": True}
        if flops:
            base["flops"] = flops
        try:
            ms, batch, samples, (ok, rel, max_abs, detail) = time_graph(
                fn, reset, meta.get("refs", refs), meta.get("tols", tols),
                meta.get("names", names), meta.get("view"))
        except Exception as e:
            traceback.print_exc()
            FAILURES.append(f"{label} {impl} CUDA graph: {e}")
            ROWS.append(dict(base, ms=None, gbps=None, pct_copy=None, max_err=None, rel_err=None,
                             ok=False, error=f"{type(e).__name__}: {e}"))
            continue
        print(f"check {label:<44} {impl + ' graph':<18}: rel {rel:.2e} max abs {max_abs:.2e} "
              f"-> {'ok' if ok else 'FAILED'}")
        if not ok:
            FAILURES.append(f"{label} {impl} CUDA graph: rel {rel:.2e}")
        graph[impl] = ms
        row = dict(base, max_err=max_abs, rel_err=rel, ok=ok, errors=detail, batch=batch,
                   samples=samples, **rate(ms, nbytes, flops))
        ROWS.append(row)
        case_rows.append(row)
    set_pct_cublas(case_rows, graph, gemm_key, True)


def set_pct_cublas(rows, times, gemm_key, graph):
    """pct_cublas = 100 x cuBLAS's GEMM time / the row's time, for rows with flops."""
    if gemm_key is None:
        return
    if "cublas" in times:
        CUBLAS_MS[(gemm_key, graph)] = times["cublas"]
    ref = times.get("cublas_gemm_only") or CUBLAS_MS.get((gemm_key, graph))
    for r in rows:
        if ref and r.get("ms"):
            r["pct_cublas"] = 100.0 * ref / r["ms"]


def rate(ms, nbytes, flops=None):
    gbps = nbytes / (ms * 1e-3) / 1e9
    out = {"ms": ms, "gbps": gbps, "pct_copy": 100.0 * gbps / COPY_GBPS}
    if flops:
        out["tflops"] = flops / (ms * 1e-3) / 1e12
    return out


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
    ms, _, _ = TIMER.time(lambda: dst.copy_(src))
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


_EXECUTOR = None


def precompile(kernel, *args, **kwargs):
    """GPU only: compile every autotune config of `kernel` for these arguments at once in a thread
    pool (Triton's AsyncCompileMode; the compiles release the GIL), so that the autotuner, which
    compiles its configs one after the other at the first launch, finds them all compiled."""
    global _EXECUTOR
    if not ON_GPU or not hasattr(triton, "AsyncCompileMode"):
        return
    from concurrent.futures import ThreadPoolExecutor
    if _EXECUTOR is None:
        _EXECUTOR = ThreadPoolExecutor(max_workers=min(32, max(2, os.cpu_count() or 8)))
    try:
        with triton.AsyncCompileMode(_EXECUTOR, ignore_errors=True):
            kernel.warmup(*args, grid=(1,), **kwargs)
    except Exception as e:  # the autotuner compiles them itself then
        print(f"(parallel precompile skipped: {type(e).__name__}: {e})")


_FAKE_TIMES = itertools.count()


def autotune_bench(kernel_call, quantiles):
    """The autotuner's benchmark: triton.testing.do_bench, shortened. On the CPU (interpreter)
    every config runs once and gets a made-up time, so that different cases pick different
    configs."""
    if not ON_GPU:
        kernel_call()
        t = float(next(_FAKE_TIMES) % 3)
        return [t, t, t]
    return triton.testing.do_bench(kernel_call, warmup=AUTOTUNE_WARMUP_MS, rep=AUTOTUNE_REP_MS,
                                   quantiles=quantiles)


_PROPS = None


def device_props():
    global _PROPS
    if _PROPS is None:
        _PROPS = triton.runtime.driver.active.utils.get_device_properties(
            torch.cuda.current_device())
    return _PROPS


# Provenance of a Triton impl (the row's `source`); torch / cuBLAS rows default to "pytorch".
TUTORIAL = {"source": "triton-tutorial"}
LIGER = {"source": "liger"}
OURS = {"source": "ours"}


# ----------------------------------------------------------------------------------------------
# Triton kernels written here ("ours": no public kernel for the job)
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
def k_bias_gelu_dropout(x, bias, out, cols, p, seed, BLOCK: tl.constexpr):
    # Program (column block, row), as the Rust kernel's 2-D grid; dropout as tutorial 04's
    # _seeded_dropout: keep where tl.rand(seed, offsets) > p, scaled by 1 / (1 - p).
    col = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = col < cols
    offs = tl.program_id(1) * cols + col
    v = tl.load(x + offs, mask=m).to(tl.float32) + tl.load(bias + col, mask=m).to(tl.float32)
    g = _gelu(v, False, False)
    keep = tl.rand(seed, offs) > p
    tl.store(out + offs, tl.where(keep, g / (1 - p), 0.0).to(out.dtype.element_ty), mask=m)


@triton.jit
def k_residual_bias_dropout(x, bias, residual, out, cols, p, seed, BLOCK: tl.constexpr):
    # out = residual + dropout(x + bias[col]), program (column block, row); tutorial 04's dropout.
    col = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = col < cols
    offs = tl.program_id(1) * cols + col
    v = tl.load(x + offs, mask=m).to(tl.float32) + tl.load(bias + col, mask=m).to(tl.float32)
    d = tl.where(tl.rand(seed, offs) > p, v / (1 - p), 0.0)
    r = tl.load(residual + offs, mask=m).to(tl.float32)
    tl.store(out + offs, (r + d).to(out.dtype.element_ty), mask=m)


@triton.jit
def _keep_words4(seed, row, g, cols, p):
    # Element (row, 4 g + j) is kept where word j of tl.rand4x(seed, row * cdiv(cols, 4) + g)
    # is above p: one Philox evaluation per four elements (tile's Stream::Words4).
    r0, r1, r2, r3 = tl.rand4x(seed, row * ((cols + 3) // 4) + g)
    j = tl.arange(0, 4)[None, :]
    u = tl.where(j == 0, r0[:, None],
                 tl.where(j == 1, r1[:, None], tl.where(j == 2, r2[:, None], r3[:, None])))
    return u > p


@triton.jit
def k_bias_gelu_dropout4(x, bias, out, cols, p, seed, BLOCK: tl.constexpr):
    g = tl.program_id(0) * (BLOCK // 4) + tl.arange(0, BLOCK // 4)
    col = (g * 4)[:, None] + tl.arange(0, 4)[None, :]
    m = col < cols
    row = tl.program_id(1)
    offs = row * cols + col
    v = tl.load(x + offs, mask=m).to(tl.float32) + tl.load(bias + col, mask=m).to(tl.float32)
    g2 = _gelu(v, False, False)
    keep = _keep_words4(seed, row, g, cols, p)
    tl.store(out + offs, tl.where(keep, g2 / (1 - p), 0.0).to(out.dtype.element_ty), mask=m)


@triton.jit
def k_residual_bias_dropout4(x, bias, residual, out, cols, p, seed, BLOCK: tl.constexpr):
    g = tl.program_id(0) * (BLOCK // 4) + tl.arange(0, BLOCK // 4)
    col = (g * 4)[:, None] + tl.arange(0, 4)[None, :]
    m = col < cols
    row = tl.program_id(1)
    offs = row * cols + col
    v = tl.load(x + offs, mask=m).to(tl.float32) + tl.load(bias + col, mask=m).to(tl.float32)
    d = tl.where(_keep_words4(seed, row, g, cols, p), v / (1 - p), 0.0)
    r = tl.load(residual + offs, mask=m).to(tl.float32)
    tl.store(out + offs, (r + d).to(out.dtype.element_ty), mask=m)


@triton.jit
def k_liger_cross_entropy(X, stride, Y, loss, n_cols, n_valid, ignore_index, label_smoothing,
                          BLOCK_SIZE: tl.constexpr):
    """Liger-Kernel's fused cross-entropy forward + backward (its liger_cross_entropy_kernel,
    reduction "mean"), written out in our own structure: one program per row, an online
    logsumexp over BLOCK_SIZE-wide column tiles, then the gradient written over the logits. The
    count of non-ignored rows is read from device memory (Liger's host code takes it with
    .item())."""
    row = tl.program_id(0).to(tl.int64)
    X += row * stride
    y = tl.load(Y + row)
    if y == ignore_index:
        for off in range(0, n_cols, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            tl.store(X + cols, 0.0, mask=cols < n_cols)
        tl.store(loss + row, 0.0)
        return
    n = tl.load(n_valid).to(tl.float32)
    eps = label_smoothing / n_cols
    x_y = tl.load(X + y).to(tl.float32)
    m = float("-inf")
    d = 0.0
    scaled_x_sum = 0.0
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        if label_smoothing > 0:
            scaled_x_sum += tl.sum(tl.where(cols < n_cols, -eps * x, 0.0))
        m_new = tl.maximum(m, tl.max(x))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new))
        m = m_new
    lse = m + tl.log(d)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        g = tl.exp(x - m) / d - eps
        g = tl.where(cols == y, g - (1.0 - label_smoothing), g) / n
        tl.store(X + cols, g, mask=cols < n_cols)
    l = lse - x_y
    if label_smoothing > 0:
        l = l * (1.0 - label_smoothing) + scaled_x_sum + label_smoothing * lse
    tl.store(loss + row, l / n)


@triton.jit
def k_keep_words4(keep, cols, p, seed, BLOCK: tl.constexpr):
    """keep[row, col] of the words-of-four mask (reference for the *4 kernels)."""
    g = tl.program_id(0) * (BLOCK // 4) + tl.arange(0, BLOCK // 4)
    col = (g * 4)[:, None] + tl.arange(0, 4)[None, :]
    row = tl.program_id(1)
    tl.store(keep + row * cols + col, _keep_words4(seed, row, g, cols, p), mask=col < cols)


@triton.jit
def k_rand_keep(keep, n, p, seed, BLOCK: tl.constexpr):
    """keep[i] = tl.rand(seed, i) > p: the mask every dropout kernel here uses (tile's and
    Triton's streams are the same bits)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(keep + offs, tl.rand(seed, offs) > p, mask=offs < n)


@triton.jit
def k_act_and_mul(x, out, d, ACT: tl.constexpr, BLOCK: tl.constexpr):
    # out[r, j] = act(x[r, j]) * x[r, d + j]; program (column block, row). (Liger-Kernel's
    # swiglu/geglu kernels take the two halves as separate tensors sharing one row stride, and its
    # geglu is the tanh form only, so they do not fit this packed layout.)
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
# Public Triton kernels, in our own code structure: Triton's tutorials and Liger-Kernel
# ----------------------------------------------------------------------------------------------


@triton.jit
def k_softmax_tutorial(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                       BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # Mirrors `softmax_kernel` of Triton's tutorial 02-fused-softmax.py: a persistent grid, each
    # program taking the rows pid, pid + num_programs, ... (software-pipelined over num_stages),
    # a whole row per iteration. One change: the row is converted to f32 after the load (a no-op
    # for the f32 rows of fused_softmax; softmax_regression feeds it f16/bf16 logits).
    first = tl.program_id(0)
    step = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_SIZE)
    in_row = cols < n_cols
    for row in tl.range(first, n_rows, step, num_stages=num_stages):
        v = tl.load(input_ptr + row * input_row_stride + cols, mask=in_row,
                    other=-float("inf")).to(tl.float32)
        num = tl.exp(v - tl.max(v, axis=0))
        tl.store(output_ptr + row * output_row_stride + cols, num / tl.sum(num, axis=0),
                 mask=in_row)


_SOFTMAX_LAUNCH = {}  # (shape, strides, dtypes) -> (compiled kernel, programs, block, stages)


def tutorial_softmax(x, y):
    """y = softmax(x) over rows, launched as tutorial 02-fused-softmax's `softmax(x)` does:
    BLOCK_SIZE = next_pow2(n_cols), num_warps = 8, num_stages = 4 if the device has more than
    200 KB of shared memory else 2 (halved while the kernel does not fit in shared memory: 32768
    f32 columns need 1), the kernel compiled first (warmup) to read its registers and
    shared memory, then NUM_SM * occupancy persistent programs (at most n_rows). Cached per shape
    (the tutorial recompiles-or-looks-up on every call: host cost only). On the CPU: 4 programs."""
    n_rows, n_cols = x.shape
    key = (n_rows, n_cols, x.stride(0), y.stride(0), x.dtype, y.dtype)
    hit = _SOFTMAX_LAUNCH.get(key)
    if hit is None:
        block = triton.next_power_of_2(n_cols)
        warps = 8
        if ON_GPU:
            props = device_props()
            from triton.runtime.errors import OutOfResources
            stages = 4 if props["max_shared_mem"] > 200000 else 2
            while True:
                kernel = k_softmax_tutorial.warmup(y, x, x.stride(0), y.stride(0), n_rows,
                                                   n_cols, BLOCK_SIZE=block, num_stages=stages,
                                                   num_warps=warps, grid=(1,))
                try:
                    kernel._init_handles()
                    break
                except OutOfResources:
                    # Wide rows (32768 f32) need more shared memory than the device has with the
                    # tutorial's stages; fewer stages, as Triton's message advises.
                    if stages == 1:
                        raise
                    stages //= 2
            occupancy = props["max_num_regs"] // (kernel.n_regs * props["warpSize"] * warps)
            if kernel.metadata.shared:  # (the tutorial divides unguarded)
                occupancy = min(occupancy, props["max_shared_mem"] // kernel.metadata.shared)
            programs = max(1, min(props["multiprocessor_count"] * occupancy, n_rows))
        else:
            kernel, stages, programs = None, 2, min(n_rows, 4)
        hit = (kernel, programs, block, stages, warps)
        _SOFTMAX_LAUNCH[key] = hit
    kernel, programs, block, stages, warps = hit
    if kernel is None:
        k_softmax_tutorial[(programs,)](y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                        BLOCK_SIZE=block, num_stages=stages, num_warps=warps)
    else:
        kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, block, stages)
    return y


def tutorial_softmax_desc(x, y):
    kernel, programs, block, stages, warps = _SOFTMAX_LAUNCH[
        (x.shape[0], x.shape[1], x.stride(0), y.stride(0), x.dtype, y.dtype)]
    regs = f", {kernel.n_regs} registers" if kernel is not None else ""
    return (f"{programs} persistent programs, tile {block}, {warps} warps, {stages} stages"
            f"{regs}")


@triton.jit
def k_layer_norm_fwd_tutorial(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    # Mirrors `_layer_norm_fwd_fused` of Triton's tutorial 05-layer-norm.py: one program per row,
    # three passes over the row in BLOCK_SIZE chunks (sum for the mean, sum of squared deviations,
    # normalize and write), f32 arithmetic; it also writes the row's mean and 1/std.
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    part = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        part += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(part, axis=0) / N
    part = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        v = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        v = tl.where(cols < N, v - mean, 0.0)
        part += v * v
    rstd = 1 / tl.sqrt(tl.sum(part, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        m = cols < N
        w = tl.load(W + cols, mask=m)
        b = tl.load(B + cols, mask=m)
        v = tl.load(X + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(Y + cols, (v - mean) * rstd * w + b, mask=m)


def tutorial_layer_norm_settings(n, elem_size):
    """The tutorial's LayerNorm.forward: (BLOCK_SIZE, num_warps). (The tutorial refuses rows over
    64 KB, N > BLOCK_SIZE; the kernel loops over the row, so they are run here anyway.)"""
    block = min(65536 // elem_size, triton.next_power_of_2(n))
    return block, min(max(block // 256, 1), 8)


@triton.jit
def k_liger_fused_add_rms_norm_fwd(Y_ptr, Y_row_stride, S_ptr, S_row_stride, X_ptr, X_row_stride,
                                   R_ptr, R_row_stride, W_ptr, RSTD_ptr, RSTD_row_stride, n_cols,
                                   eps, offset, BLOCK_SIZE: tl.constexpr,
                                   LIBDEVICE: tl.constexpr):
    # Mirrors `_fused_add_rms_norm_forward_kernel` of Liger-Kernel
    # (src/liger_kernel/ops/fused_add_rms_norm.py) in its default casting mode "llama": S = X + R
    # in the storage type, stored; 1/rms of S in f32 (rsqrt of libdevice), stored per row;
    # Y = (S * rstd) rounded to the storage type, times (offset + W). Liger's `.to(tl.float32)` on
    # eps and offset (against fp64 scalars under torch.compile) is a no-op for an eager launch and
    # is left out (the interpreter passes Python floats). Launched in place: Y = x, S = residual.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    Y_ptr += row * Y_row_stride
    S_ptr += row * S_row_stride
    X_ptr += row * X_row_stride
    R_ptr += row * R_row_stride
    RSTD_ptr += row * RSTD_row_stride
    X_row = tl.load(X_ptr + cols, mask=mask, other=0)
    R_row = tl.load(R_ptr + cols, mask=mask, other=0)
    S_row = X_row + R_row
    tl.store(S_ptr + cols, S_row, mask=mask)
    S_row_dtype = S_row.dtype
    W_row = tl.load(W_ptr + cols, mask=mask, other=0)
    S_row = S_row.to(tl.float32)
    mean_square = tl.sum(S_row * S_row, axis=0) / n_cols
    if LIBDEVICE:
        rstd = libdevice.rsqrt(mean_square + eps)
    else:
        rstd = tl.math.rsqrt(mean_square + eps)
    tl.store(RSTD_ptr, rstd)
    S_row = (S_row * rstd).to(S_row_dtype)
    tl.store(Y_ptr + cols, S_row * (offset + W_row), mask=mask)


def liger_calculate_settings(n):
    """Liger-Kernel's `calculate_settings` (src/liger_kernel/ops/utils.py): (BLOCK_SIZE,
    num_warps) for a row of n."""
    block = triton.next_power_of_2(n)
    if block > 65536:
        raise RuntimeError(f"n = {n} exceeds Liger's largest block (65536)")
    warps = 4
    if block >= 32768:
        warps = 32
    elif block >= 8192:
        warps = 16
    elif block >= 2048:
        warps = 8
    return block, warps


def tutorial_matmul_configs():
    """`get_cuda_autotune_config()` of Triton's tutorial 03-matrix-multiplication.py (all 16, the
    tutorial's "good config for fp8 inputs" included, since it tunes over all of them):
    (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_stages, num_warps), GROUP_SIZE_M = 8. On the
    CPU (interpreter): two small tiles."""
    table = [
        (128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
        (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 5, 2), (32, 64, 32, 5, 2),
        (128, 256, 128, 3, 8), (256, 128, 128, 3, 8), (256, 64, 128, 4, 4), (64, 256, 128, 4, 4),
        (128, 128, 128, 4, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (128, 32, 64, 4, 4),
    ]
    if not ON_GPU:
        table = [(32, 32, 32, 2, 4), (16, 32, 32, 2, 4)]
    return [triton.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k,
                           "GROUP_SIZE_M": 8}, num_stages=s, num_warps=w)
            for m, n, k, s, w in table]


@triton.jit
def _epilogue_act(acc, ACTIVATION: tl.constexpr, LIBDEVICE: tl.constexpr):
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "gelu":
        acc = _gelu(acc, False, LIBDEVICE)
    elif ACTIVATION == "gelu_tanh":
        acc = _gelu(acc, True, LIBDEVICE)
    elif ACTIVATION == "leaky_relu":  # the tutorial's own example
        acc = tl.where(acc >= 0, acc, 0.01 * acc)
    return acc


@triton.jit
def grouped_tile(pid, tiles_m, tiles_n, GROUP_SIZE_M: tl.constexpr):
    # The (row tile, column tile) of program `pid` in the tutorial's grouped order: GROUP_SIZE_M
    # row tiles are swept column by column before the next group (its "L2 cache optimization").
    per_group = GROUP_SIZE_M * tiles_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    group_rows = min(tiles_m - first_m, GROUP_SIZE_M)
    return first_m + ((pid % per_group) % group_rows), (pid % per_group) // group_rows


@triton.autotune(configs=tutorial_matmul_configs(), key=["M", "N", "K", "ACTIVATION"],
                 do_bench=autotune_bench)
@triton.jit
def k_matmul_tutorial(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                      stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                      BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr,
                      HAS_BIAS: tl.constexpr, LIBDEVICE: tl.constexpr):
    # Mirrors `matmul_kernel` of Triton's tutorial 03-matrix-multiplication.py, with its configs
    # and its key (M, N, K; the activation added, so that each fused epilogue is tuned for
    # itself). C = act(A @ B + bias), f32 accumulation, written in C's dtype (the tutorial writes
    # f16).
    # 1. Tile order: GROUP_SIZE_M row tiles are swept column by column before the next group
    #    (the tutorial's "L2 cache optimization").
    pid_m, pid_n = grouped_tile(tl.program_id(axis=0), tl.cdiv(M, BLOCK_SIZE_M),
                                tl.cdiv(N, BLOCK_SIZE_N), GROUP_SIZE_M)
    # 2. Row and column indices wrap (% M, % N): every load is in bounds without a mask; only the
    #    K tail is masked (zeros), and the store masks the edges.
    rows = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    cols = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    ks = tl.arange(0, BLOCK_SIZE_K)
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        left = K - kb * BLOCK_SIZE_K
        a = tl.load(a_tile, mask=ks[None, :] < left, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_SIZE_K * stride_ak
        b_tile += BLOCK_SIZE_K * stride_bk
    # 3. Epilogue in f32 (where the tutorial fuses leaky_relu), then the store.
    out_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    out_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + out_n, mask=out_n < N, other=0.0).to(tl.float32)[None, :]
    acc = _epilogue_act(acc, ACTIVATION, LIBDEVICE)
    tl.store(c_ptr + out_m[:, None] * stride_cm + out_n[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=(out_m[:, None] < M) & (out_n[None, :] < N))


def _matmul_args(a, b, c, bias, activation):
    m, k = a.shape
    n = b.shape[1]
    args = (a, b, c, bias, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            c.stride(0), c.stride(1))
    kwargs = {"ACTIVATION": activation, "HAS_BIAS": bias is not None, "LIBDEVICE": USE_LIBDEVICE}
    return args, kwargs


def tutorial_matmul(a, b, c, bias=None, activation=""):
    """c = act(a @ b + bias) with the tutorial's kernel (its `matmul(a, b, activation)`, with the
    output given)."""
    args, kwargs = _matmul_args(a, b, c, bias, activation)
    m, n = c.shape

    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)

    k_matmul_tutorial[grid](*args, **kwargs)
    return c


def precompile_matmul(a, b, c, bias=None, activation=""):
    args, kwargs = _matmul_args(a, b, c, bias, activation)
    precompile(k_matmul_tutorial, *args, **kwargs)


def best_config(kernel):
    return lambda: str(kernel.best_config)


# ----------------------------------------------------------------------------------------------
# softmax_regression, fused (ours): probs = softmax(x @ w) without the logits in memory
# ----------------------------------------------------------------------------------------------


@triton.jit
def _logits_tile(x, w, rows, cols, D, sx, sw, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
    # x[rows, :] @ w[:, cols] in f32 (tl.dot over D in BK slices; rows and cols in bounds).
    ks = tl.arange(0, BK)
    xp = x + rows[:, None] * sx + ks[None, :]
    wp = w + ks[:, None] * sw + cols[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kb in range(0, tl.cdiv(D, BK)):
        left = D - kb * BK
        acc = tl.dot(tl.load(xp, mask=ks[None, :] < left, other=0.0),
                     tl.load(wp, mask=ks[:, None] < left, other=0.0), acc)
        xp += BK
        wp += BK * sw
    return acc


def smr_fused_configs():
    """(BM, BN, BK, num_warps, num_stages) x RESCALE in {0, 1}; on the CPU two small ones."""
    table = [(16, 16, 64, 4, 3), (16, 64, 64, 4, 3), (32, 128, 64, 4, 3), (64, 128, 64, 4, 3),
             (64, 256, 64, 8, 3), (128, 128, 64, 8, 3), (128, 64, 64, 4, 4)]
    if not ON_GPU:
        return [triton.Config({"BM": 16, "BN": 32, "BK": 32, "RESCALE": r}, num_warps=4)
                for r in (0, 1)]
    return [triton.Config({"BM": bm, "BN": bn, "BK": bk, "RESCALE": r}, num_warps=nw,
                          num_stages=ns)
            for bm, bn, bk, nw, ns in table for r in (0, 1)]


def _smr_prune(configs, nargs, **kwargs):
    """RESCALE is moot when one class tile holds every class: keep RESCALE = 0 there."""
    c = nargs["C"]
    keep = [cfg for cfg in configs if not (cfg.kwargs["RESCALE"] and c <= cfg.kwargs["BN"])]
    return keep or configs


@triton.autotune(configs=smr_fused_configs(), key=["B", "D", "C"], do_bench=autotune_bench,
                 prune_configs_by={"early_config_prune": _smr_prune})
@triton.heuristics({"ONE_TILE": lambda a: a["C"] <= a["BN"]})
@triton.jit
def k_smr_fused(x, w, out, B, D, C, sx, sw, so, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr, RESCALE: tl.constexpr, ONE_TILE: tl.constexpr):
    # One program per BM rows; the logits of a (BM, BN) class tile come from tl.dot over D.
    # ONE_TILE (C <= BN): softmax of the one tile in registers. Otherwise an online softmax over
    # the class tiles (running max m and sum l, rescaled as the max grows), then a second pass
    # that writes exp(z - m) / l: RESCALE = 0 recomputes each tile's logits, RESCALE = 1 stored
    # the raw logits in `out` in the first pass and reads them back.
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    row_ok = rows < B
    rr = rows % B
    if ONE_TILE:
        cols = tl.arange(0, BN)
        z = _logits_tile(x, w, rr, cols % C, D, sx, sw, BM, BN, BK)
        z = tl.where(cols[None, :] < C, z, -float("inf"))
        e = tl.exp(z - tl.max(z, axis=1)[:, None])
        tl.store(out + rows[:, None] * so + cols[None, :], e / tl.sum(e, axis=1)[:, None],
                 mask=row_ok[:, None] & (cols[None, :] < C))
    else:
        m = tl.full((BM,), -float("inf"), tl.float32)
        s = tl.zeros((BM,), dtype=tl.float32)
        for n0 in range(0, C, BN):
            cols = n0 + tl.arange(0, BN)
            z = _logits_tile(x, w, rr, cols % C, D, sx, sw, BM, BN, BK)
            z = tl.where(cols[None, :] < C, z, -float("inf"))
            m_new = tl.maximum(m, tl.max(z, axis=1))
            s = s * tl.exp(m - m_new) + tl.sum(tl.exp(z - m_new[:, None]), axis=1)
            m = m_new
            if RESCALE:
                tl.store(out + rows[:, None] * so + cols[None, :], z,
                         mask=row_ok[:, None] & (cols[None, :] < C))
        inv = 1.0 / s
        if RESCALE:
            tl.debug_barrier()  # the second pass reads what other threads of the block stored
        for n0 in range(0, C, BN):
            cols = n0 + tl.arange(0, BN)
            ok = row_ok[:, None] & (cols[None, :] < C)
            if RESCALE:
                z = tl.load(out + rows[:, None] * so + cols[None, :], mask=ok, other=0.0)
            else:
                z = _logits_tile(x, w, rr, cols % C, D, sx, sw, BM, BN, BK)
            tl.store(out + rows[:, None] * so + cols[None, :],
                     tl.exp(z - m[:, None]) * inv[:, None], mask=ok)


def _smr_fused_args(x, w, out):
    b, d = x.shape
    return (x, w, out, b, d, w.shape[1], x.stride(0), w.stride(0), out.stride(0))


def smr_fused(x, w, out):
    args = _smr_fused_args(x, w, out)
    k_smr_fused[lambda meta: (triton.cdiv(x.shape[0], meta["BM"]),)](*args)
    return out


def smr_split_configs():
    """The first eight of the tutorial matmul's configs (its f16 ones); on the CPU one small."""
    return tutorial_matmul_configs()[:8] if ON_GPU else tutorial_matmul_configs()[:1]


@triton.autotune(configs=smr_split_configs(), key=["B", "D", "C"], do_bench=autotune_bench)
@triton.jit
def k_smr_tile_softmax(x, w, out, tile_max, tile_sum, B, D, C, sx, sw, so, st,
                       BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                       BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    # Split form, kernel 1: GEMM tiles over (rows, classes) in the tutorial's grouped order; each
    # writes exp(z - m_t) for its tile and the tile's row max m_t and row sum of the
    # exponentials (tile_max / tile_sum [B, tiles]).
    pid_m, pid_n = grouped_tile(tl.program_id(axis=0), tl.cdiv(B, BLOCK_SIZE_M),
                                tl.cdiv(C, BLOCK_SIZE_N), GROUP_SIZE_M)
    rows = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    cols = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    z = _logits_tile(x, w, rows % B, cols % C, D, sx, sw, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    z = tl.where(cols[None, :] < C, z, -float("inf"))
    mt = tl.max(z, axis=1)
    e = tl.exp(z - mt[:, None])
    row_ok = rows < B
    tl.store(out + rows[:, None] * so + cols[None, :], e,
             mask=row_ok[:, None] & (cols[None, :] < C))
    tl.store(tile_max + rows * st + pid_n, mt, mask=row_ok)
    tl.store(tile_sum + rows * st + pid_n, tl.sum(e, axis=1), mask=row_ok)


@triton.jit
def k_smr_rescale(out, tile_max, tile_sum, C, so, st, tiles, tile_n, BLOCK_T: tl.constexpr,
                  BLOCK_C: tl.constexpr):
    # Split form, kernel 2: program (row, column block): the row's max M and sum S from its
    # tiles' (m_t, s_t), then out *= exp(m_t - M) / S in place. Rows on the grid's first axis,
    # which takes 2^31 - 1 programs (the second takes 65535: 65536 rows did not launch).
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK_T)
    mts = tl.load(tile_max + row * st + t, mask=t < tiles, other=-float("inf"))
    sts = tl.load(tile_sum + row * st + t, mask=t < tiles, other=0.0)
    mx = tl.max(mts, axis=0)
    total = tl.sum(sts * tl.exp(mts - mx), axis=0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    ok = cols < C
    scale = tl.exp(tl.load(tile_max + row * st + cols // tile_n, mask=ok, other=0.0) - mx) / total
    p = out + row * so + cols
    tl.store(p, tl.load(p, mask=ok, other=0.0) * scale, mask=ok)


def smr_split(x, w, out, tile_max, tile_sum):
    """Two launches: k_smr_tile_softmax (autotuned), then k_smr_rescale with the tile width the
    autotuner chose. tile_max / tile_sum hold [B, cdiv(C, 32)] (the narrowest tile)."""
    b, d = x.shape
    c = w.shape[1]
    st = tile_max.stride(0)

    def grid(meta):
        return (triton.cdiv(b, meta["BLOCK_SIZE_M"]) * triton.cdiv(c, meta["BLOCK_SIZE_N"]),)

    k_smr_tile_softmax[grid](x, w, out, tile_max, tile_sum, b, d, c, x.stride(0), w.stride(0),
                             out.stride(0), st)
    tile_n = k_smr_tile_softmax.best_config.kwargs["BLOCK_SIZE_N"]
    tiles = triton.cdiv(c, tile_n)
    block_c = min(4096, triton.next_power_of_2(c))
    k_smr_rescale[(b, triton.cdiv(c, block_c))](out, tile_max, tile_sum, c, out.stride(0), st,
                                                tiles, tile_n,
                                                BLOCK_T=max(2, triton.next_power_of_2(tiles)),
                                                BLOCK_C=block_c,
                                                num_warps=8 if block_c >= 2048 else 4)
    return out


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
                 ("triton", "1 kernel, 1024 elements per program", triton_fused, OURS)]
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
                      triton_fused, OURS)]
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
                         ("triton", "1 kernel, program (1024 columns, row)", triton_fused,
                          OURS)]
                nbytes = x.element_size() * (2.0 * rows * cols + cols)
                run_case("fused_bias_gelu", variant, [rows, cols], dname, nbytes, impls, reset,
                         ref, (tol,), ("out",), timed)


DROPOUT_SEED = 0x5EED_1234_ABCD  # as examples/fused_bias_gelu_dropout


def bench_fused_bias_gelu_dropout():
    """y = dropout(GELU_erf(x + bias[col]), p = 0.1), f32 and bf16 (f32 arithmetic). tile's and
    the Triton kernel's mask is tl.rand(seed, i) > p; PyTorch's dropout draws its own, so its rows
    are checked on their kept elements (dropped ones must be exactly 0) and their kept fraction."""
    p = 0.1
    for (rows, cols), timed in plan([(1, 1), (17, 1), (5, 1023)], [(16384, 4096)]):
        for dname in ("f32", "bf16"):
            dt = DTYPES[dname]
            r = Rand(rows * 7919 + cols)
            x, bias = r.uniform((rows, cols), -4, 4, dt), r.uniform(cols, -1, 1, dt)
            out, t1, t2 = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
            keep = torch.empty((rows, cols), dtype=torch.bool, device=DEV)
            k_rand_keep[(cdiv(rows * cols, BLOCK),)](keep, rows * cols, p, DROPOUT_SEED,
                                                     BLOCK=BLOCK)
            keep4 = torch.empty((rows, cols), dtype=torch.bool, device=DEV)
            k_keep_words4[(cdiv(cols, BLOCK), rows)](keep4, cols, p, DROPOUT_SEED, BLOCK=BLOCK)
            g64 = gelu64(x.double() + bias.double(), False)
            ref = (torch.where(keep, g64 / (1 - p), torch.zeros_like(g64)),)
            ref4 = (torch.where(keep4, g64 / (1 - p), torch.zeros_like(g64)),)
            full = g64 / (1 - p)
            tol = 1e-2 if dname == "bf16" else 1e-4

            def reset():
                out.fill_(NAN)
                t1.fill_(NAN)
                t2.fill_(NAN)

            def own_mask(outs):
                # Dropped elements exactly 0, kept ones compared; the fraction kept near 1 - p.
                o = outs[0]
                kept = float((o != 0).double().mean())
                n = o.numel()
                sd = math.sqrt(p * (1 - p) / n)
                # (+1e-3: elements whose kept value is 0 itself, as GELU(0), count as dropped.)
                if n >= 10_000 and abs(kept - (1 - p)) > 4 * sd + 1e-3:
                    raise RuntimeError(f"kept fraction {kept:.4f}, expected {1 - p} +- {4 * sd:.4f}")
                return (torch.where(o == 0, full.to(o.dtype), o),)

            def torch_unfused():
                torch.add(x, bias, out=t1)
                torch.ops.aten.gelu.out(t1, out=t2)
                return (F.dropout(t2, p, training=True),)

            def torch_native():
                return (F.dropout(F.gelu(x + bias), p, training=True),)

            def triton_fused():
                k_bias_gelu_dropout[(cdiv(cols, BLOCK), rows)](x, bias, out, cols, p, DROPOUT_SEED,
                                                              BLOCK=BLOCK)
                return (out,)

            def triton_words4():
                k_bias_gelu_dropout4[(cdiv(cols, BLOCK), rows)](x, bias, out, cols, p,
                                                               DROPOUT_SEED, BLOCK=BLOCK)
                return (out,)

            torch_meta = {"view": own_mask, "refs": (full,)}
            impls = [("torch_unfused", "add bias, gelu, F.dropout (3 kernels)", torch_unfused,
                      torch_meta),
                     ("torch_native", "F.dropout(F.gelu(x + bias)) (3 kernels)", torch_native,
                      torch_meta),
                     ("triton", "1 kernel, program (1024 columns, row), tl.rand > p",
                      triton_fused, OURS),
                     ("triton_words4", "1 kernel, one tl.rand4x per 4 elements (tile's Words4)",
                      triton_words4, dict(OURS, refs=ref4))]
            nbytes = x.element_size() * (2.0 * rows * cols + cols)
            run_case("fused_bias_gelu_dropout", None, [rows, cols], dname, nbytes, impls, reset,
                     ref, (tol,), ("out",), timed)
            del x, bias, out, t1, t2, keep, keep4, g64, ref, ref4, full


def bench_residual_bias_dropout():
    """out = residual + dropout(x + bias[col], p = 0.1), f32 and bf16 (f32 arithmetic). Masks as in
    bench_fused_bias_gelu_dropout: tile's and Triton's are tl.rand(seed, i) > p; PyTorch's own
    rows are checked where they kept elements (a dropped one must equal the residual)."""
    p = 0.1
    for (rows, cols), timed in plan([(1, 1), (17, 1), (5, 1023)], [(16384, 4096)]):
        for dname in ("f32", "bf16"):
            dt = DTYPES[dname]
            r = Rand(rows * 7919 + cols)
            x, bias = r.uniform((rows, cols), -4, 4, dt), r.uniform(cols, -1, 1, dt)
            residual = r.uniform((rows, cols), -4, 4, dt)
            out, t1, t2 = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
            keep = torch.empty((rows, cols), dtype=torch.bool, device=DEV)
            k_rand_keep[(cdiv(rows * cols, BLOCK),)](keep, rows * cols, p, DROPOUT_SEED,
                                                     BLOCK=BLOCK)
            keep4 = torch.empty((rows, cols), dtype=torch.bool, device=DEV)
            k_keep_words4[(cdiv(cols, BLOCK), rows)](keep4, cols, p, DROPOUT_SEED, BLOCK=BLOCK)
            v64 = x.double() + bias.double()
            full = residual.double() + v64 / (1 - p)
            ref = (torch.where(keep, full, residual.double()),)
            ref4 = (torch.where(keep4, full, residual.double()),)
            tol = 1e-2 if dname == "bf16" else 1e-6

            def reset():
                out.fill_(NAN)
                t1.fill_(NAN)
                t2.fill_(NAN)

            def own_mask(outs):
                # Where PyTorch's dropout dropped, out equals the residual: compare the rest.
                o = outs[0]
                dropped = o == residual
                kept = 1.0 - float(dropped.double().mean())
                n = o.numel()
                sd = math.sqrt(p * (1 - p) / n)
                if n >= 10_000 and abs(kept - (1 - p)) > 4 * sd + 1e-3:
                    raise RuntimeError(f"kept fraction {kept:.4f}, expected {1 - p} +- {4 * sd:.4f}")
                return (torch.where(dropped, full.to(o.dtype), o),)

            def torch_unfused():
                torch.add(x, bias, out=t1)
                torch.add(residual, F.dropout(t1, p, training=True), out=out)
                return (out,)

            def torch_native():
                return (residual + F.dropout(x + bias, p, training=True),)

            def triton_fused():
                k_residual_bias_dropout[(cdiv(cols, BLOCK), rows)](x, bias, residual, out, cols, p,
                                                                  DROPOUT_SEED, BLOCK=BLOCK)
                return (out,)

            def triton_words4():
                k_residual_bias_dropout4[(cdiv(cols, BLOCK), rows)](x, bias, residual, out, cols,
                                                                   p, DROPOUT_SEED, BLOCK=BLOCK)
                return (out,)

            torch_meta = {"view": own_mask, "refs": (full,)}
            impls = [("torch_unfused", "add bias, F.dropout, add residual (3 kernels)",
                      torch_unfused, torch_meta),
                     ("torch_native", "residual + F.dropout(x + bias) (3 kernels)", torch_native,
                      torch_meta),
                     ("triton", "1 kernel, program (1024 columns, row), tl.rand > p",
                      triton_fused, OURS),
                     ("triton_words4", "1 kernel, one tl.rand4x per 4 elements (tile's Words4)",
                      triton_words4, dict(OURS, refs=ref4))]
            nbytes = x.element_size() * (3.0 * rows * cols + cols)
            run_case("residual_bias_dropout", None, [rows, cols], dname, nbytes, impls, reset,
                     ref, (tol,), ("out",), timed)
            del x, bias, residual, out, t1, t2, keep, keep4, v64, ref, ref4, full


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
                     ("triton", "1 kernel, program (1024 columns, row)", triton_fused, OURS)]
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
            block, warps = tutorial_layer_norm_settings(n, x.element_size())
            mean_buf = torch.empty(rows, device=DEV, dtype=F32)  # the tutorial kernel's extra
            rstd_buf = torch.empty(rows, device=DEV, dtype=F32)  # outputs (8 bytes a row)

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
                k_layer_norm_fwd_tutorial[(rows,)](x, y, w, b, mean_buf, rstd_buf, x.stride(0), n,
                                                   eps, BLOCK_SIZE=block, num_warps=warps)
                return (y,)

            impls = [("torch_unfused", "mean, var, (x - mean) * rsqrt(var + eps) (f32), "
                      "addcmul(b, xhat, w)", torch_unfused),
                     ("torch_native", "F.layer_norm", torch_native),
                     ("triton", f"tutorial _layer_norm_fwd_fused: 1 program per row, 3 passes in "
                      f"chunks of {block}, {warps} warps; also writes mean and rstd",
                      triton_fused, TUTORIAL)]
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
            block, warps = liger_calculate_settings(n)
            rstd_buf = torch.empty(rows, device=DEV, dtype=F32)  # Liger's cached 1/rms per row

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
                k_liger_fused_add_rms_norm_fwd[(rows,)](
                    x, x.stride(0), res, res.stride(0), x, x.stride(0), res, res.stride(0), w,
                    rstd_buf, rstd_buf.stride(0), n, eps, 0.0, BLOCK_SIZE=block,
                    LIBDEVICE=USE_LIBDEVICE, num_warps=warps, num_stages=2)
                return (x, res)

            impls = [("torch_unfused", "residual.add_(x), float, pow, mean, rsqrt, mul, mul into x",
                      torch_unfused),
                     ("torch_native", "residual.add_(x), F.rms_norm (new output tensor)",
                      torch_native),
                     ("triton", f"Liger fused_add_rms_norm forward (casting 'llama'): 1 program "
                      f"per row, tile {block}, {warps} warps, in place; also writes rstd",
                      triton_fused, LIGER)]
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
            return (tutorial_softmax(x, out),)

        impls = [("torch_unfused", "amax, sub, exp_, sum, div (out= buffers)", torch_unfused),
                 ("torch_native", "torch.softmax", torch_native),
                 ("triton", "tutorial fused softmax", triton_fused,
                  dict(TUTORIAL, config=lambda: tutorial_softmax_desc(x, out)))]
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
                            f"{bc} classes", triton_fused, OURS)]
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
                 ("triton", f"1 kernel, 1 program per row, tile {block}", triton_fused, OURS)]
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
                 ("triton", f"1 kernel, program ({bh} heads, token), in place", triton_fused,
                  OURS)]
        elems = tokens * heads * hd
        nbytes = 2.0 * 2.0 * elems + tokens * (4.0 + 2.0 * hd) + 2.0 * 2.0 * hd
        run_case("qk_norm_rope", None, [tokens, hq, hkv, hd], "bf16", nbytes, impls, reset, refs,
                 (1e-2, 0.0), ("qk", "v (must be untouched)"), timed)


# ----------------------------------------------------------------------------------------------
# GEMM families: shapes [M, N, K]; A row-major M x K, B row-major K x N
# ----------------------------------------------------------------------------------------------

# Tolerances (relative L2 error against the float64 product of the rounded inputs): f16/bf16
# inputs multiply exactly on the tensor cores and accumulate in f32; what is left is the rounding
# of C to f16 (~3e-4) or bf16 (~2e-3) and cuBLAS's split-K reductions. 1e-2 for both; any
# indexing or masking bug is O(1). f32 output (no output rounding): 1e-3.
GEMM_TOL, GEMM_TOL_F32 = 1e-2, 1e-3
GEMM_SMALL = [(1, 1, 1), (17, 33, 65), (64, 48, 100)]
# (17, 1024, 8192) is the skinny "17 x 8192 x 1024" read as M x K x N; examples/gemm reads it as
# M x N x K, (17, 8192, 1024): both are timed, so that either joins.
GEMM_BIG = [(4096, 4096, 4096), (8192, 8192, 8192), (4000, 3000, 1000), (1, 4096, 4096),
            (17, 1024, 8192), (17, 8192, 1024), (6144, 5120, 3072), (2048, 2048, 8192),
            (256, 8192, 4096)]
GEMM_OUT_F32 = [(4096, 4096, 4096), (8192, 8192, 8192)] + GEMM_SMALL  # the "out_f32" variant


def gemm_inputs(m, n, k, dt):
    r = Rand(m * 7919 + n * 131 + k)
    return r.uniform((m, k), -1, 1, dt), r.uniform((k, n), -1, 1, dt), r


def mm_out_f32(a, b):
    """cuBLAS with f16/bf16 inputs and an f32 output (torch.mm's out_dtype, CUDA only; on the CPU
    the inputs are widened first, the same values)."""
    if ON_GPU:
        return torch.mm(a, b, out_dtype=F32)
    return torch.mm(a.float(), b.float())


def bench_gemm():
    """C = A @ B, f16 and bf16 inputs, C in the input dtype (and, variant "out_f32", in f32);
    inputs in [-1, 1). Impls: cuBLAS (torch.matmul) and the Triton tutorial's matmul."""
    for (m, n, k), timed in plan(GEMM_SMALL, GEMM_BIG):
        for dname in ("f16", "bf16"):
            dt = DTYPES[dname]
            a, b, _ = gemm_inputs(m, n, k, dt)
            ref = (a.double() @ b.double(),)
            variants = [(None, dt)] + ([("out_f32", F32)] if (m, n, k) in GEMM_OUT_F32 else [])
            for variant, out_dt in variants:
                c = torch.empty((m, n), device=DEV, dtype=out_dt)
                if impl_wanted("triton"):
                    precompile_matmul(a, b, c)

                def reset(c=c):
                    c.fill_(NAN)

                if out_dt == dt:
                    def cublas(c=c):
                        torch.matmul(a, b, out=c)
                        return (c,)
                    cublas_ops = "torch.matmul(a, b, out=c)"
                else:
                    def cublas():
                        return (mm_out_f32(a, b),)
                    cublas_ops = "torch.mm(a, b, out_dtype=torch.float32)"

                def triton_mm(c=c):
                    return (tutorial_matmul(a, b, c),)

                impls = [("cublas", cublas_ops, cublas),
                         ("triton", "tutorial matmul_kernel, autotuned over its 16 CUDA configs",
                          triton_mm, dict(TUTORIAL, config=best_config(k_matmul_tutorial)))]
                nbytes = a.element_size() * (m * k + k * n) + c.element_size() * m * n
                tol = GEMM_TOL if out_dt == dt else GEMM_TOL_F32
                run_case("gemm", variant, [m, n, k], dname, float(nbytes), impls, reset, ref,
                         (tol,), ("c",), timed, flops=2.0 * m * n * k,
                         gemm_key=(m, n, k, dname, variant))
                del c
            del a, b, ref
        if ON_GPU:
            torch.cuda.empty_cache()


GEMM_ACTS = [("relu", "F.relu"), ("gelu", "F.gelu(approximate='none')"),
             ("gelu_tanh", "F.gelu(approximate='tanh')")]


def bench_gemm_bias_act():
    """C = act(A @ B + bias), act in {relu, gelu (erf), gelu_tanh}, f16 and bf16, C in the input
    dtype; bias[N] in [-1, 1). Impls: addmm then the activation (what a PyTorch user writes),
    torch._addmm_activation (cuBLASLt's fused epilogue; ReLU and tanh-GELU only), and the Triton
    tutorial's matmul with the bias and the activation in its epilogue."""
    small = [(17, 33, 65), (64, 48, 100)]
    big = [(4096, 4096, 4096), (8192, 8192, 8192)]
    for (m, n, k), timed in plan(small, big):
        for dname in ("f16", "bf16"):
            dt = DTYPES[dname]
            a, b, r = gemm_inputs(m, n, k, dt)
            bias = r.uniform(n, -1, 1, dt)
            z64 = a.double() @ b.double() + bias.double()
            c = torch.empty((m, n), device=DEV, dtype=dt)

            def reset():
                c.fill_(NAN)

            for variant, act_ops in GEMM_ACTS:
                if variant == "relu":
                    ref = (z64.clamp_min(0),)
                else:
                    ref = (gelu64(z64, variant == "gelu_tanh"),)
                precompile_matmul(a, b, c, bias, variant)

                def torch_unfused(variant=variant):
                    t = torch.addmm(bias, a, b)
                    if variant == "relu":
                        return (F.relu(t),)
                    return (F.gelu(t, approximate="tanh" if variant == "gelu_tanh" else "none"),)

                def torch_native(variant=variant):
                    return (torch._addmm_activation(bias, a, b, use_gelu=variant == "gelu_tanh"),)

                def triton_mm(variant=variant):
                    return (tutorial_matmul(a, b, c, bias, variant),)

                impls = [("torch_unfused", f"torch.addmm(bias, a, b), {act_ops}", torch_unfused)]
                if variant != "gelu" and hasattr(torch, "_addmm_activation"):
                    impls.append(("torch_native", "torch._addmm_activation(bias, a, b, use_gelu="
                                  f"{variant == 'gelu_tanh'}) (cuBLASLt epilogue)", torch_native))
                impls.append(("triton", f"tutorial matmul_kernel, bias + {variant} in its "
                              "epilogue, autotuned over its 16 CUDA configs", triton_mm,
                              dict(TUTORIAL, config=best_config(k_matmul_tutorial))))
                nbytes = a.element_size() * (m * k + k * n + n + m * n)
                run_case("gemm_bias_act", variant, [m, n, k], dname, float(nbytes), impls, reset,
                         ref, (GEMM_TOL,), ("c",), timed, flops=2.0 * m * n * k,
                         gemm_key=(m, n, k, dname, None))
            del a, b, bias, z64, c
        if ON_GPU:
            torch.cuda.empty_cache()


def bench_softmax_regression():
    """probs = softmax(x @ w) over the classes: x [batch, dim], w [dim, classes] in f16 or bf16
    (x in [-1, 1), w in [-0.5, 0.5), as the f32 example), logits accumulated in f32, softmax in
    f32, probs f32. Shapes [batch, dim, classes]: the document's three sizes, 8192x4096x1000 and
    4096x4096x32000.

    Tolerances (relative L2 of probs against the float64 softmax of the float64 logits): the
    impls that keep the logits in f32 (triton_fused, triton_fused_split) 1e-3; those that round
    the logits to the input dtype first (torch_unfused, triton_unfused: the logits are a bf16/f16
    tensor) max(1e-3, 3 x the error that rounding the exact logits causes), computed per case
    (bf16 at dim 4096: ~2.5e-2; the logits are large there, |z| up to ~50)."""
    small = [(1, 1, 1), (17, 33, 10), (5, 100, 17), (33, 64, 300)]
    big = [(64, 128, 10), (256, 512, 50), (1024, 1024, 100), (8192, 4096, 1000),
           (4096, 4096, 32000), (65536, 4096, 10), (2048, 1024, 5000), (16384, 512, 128)]
    for (bt, d, c), timed in plan(small, big):
        for dname in ("f16", "bf16"):
            dt = DTYPES[dname]
            r = Rand(bt * 131 + d * 7 + c)
            x = r.uniform((bt, d), -1, 1, dt)
            w = r.uniform((d, c), -0.5, 0.5, dt)
            z64 = x.double() @ w.double()
            ref = (torch.softmax(z64, dim=-1),)
            rounded = torch.softmax(z64.to(dt).double(), dim=-1)
            tol_rounded = max(1e-3, 3.0 * rel_l2(rounded, ref[0]))
            del rounded
            out = torch.empty((bt, c), device=DEV, dtype=F32)
            logits = torch.empty((bt, c), device=DEV, dtype=dt)
            tiles = cdiv(c, 32)  # the narrowest class tile of the split form's configs
            tile_max = torch.empty((bt, tiles), device=DEV, dtype=F32)
            tile_sum = torch.empty((bt, tiles), device=DEV, dtype=F32)
            precompile_matmul(x, w, logits)
            precompile(k_smr_fused, *_smr_fused_args(x, w, out))
            precompile(k_smr_tile_softmax, x, w, out, tile_max, tile_sum, bt, d, c, x.stride(0),
                       w.stride(0), out.stride(0), tile_max.stride(0))

            def reset():
                for t in (out, logits, tile_max, tile_sum):
                    t.fill_(NAN)

            def torch_unfused():
                return (torch.softmax(torch.matmul(x, w), dim=-1, dtype=F32),)

            def cublas_gemm_only():
                torch.matmul(x, w, out=logits)
                return (logits,)

            def triton_unfused():
                tutorial_matmul(x, w, logits)
                return (tutorial_softmax(logits, out),)

            def triton_fused():
                return (smr_fused(x, w, out),)

            def triton_fused_split():
                return (smr_split(x, w, out, tile_max, tile_sum),)

            rounded_tols = {"tols": (tol_rounded,)}
            impls = [
                ("torch_unfused", f"torch.matmul (cuBLAS, {dname} logits), "
                 "torch.softmax(dim=-1, dtype=float32)", torch_unfused, rounded_tols),
                ("cublas_gemm_only", f"ceiling, not the job: torch.matmul alone ({dname} "
                 "logits, checked against the float64 logits)", cublas_gemm_only,
                 {"refs": (z64,), "tols": (GEMM_TOL,), "names": ("logits",)}),
                ("triton_unfused", f"tutorial matmul ({dname} logits), then tutorial fused "
                 "softmax (f32)", triton_unfused,
                 dict(TUTORIAL, config=best_config(k_matmul_tutorial), **rounded_tols)),
                ("triton_fused", "1 kernel: BM rows per program, tl.dot over dim, online softmax "
                 "over class tiles, then a pass that writes the probabilities (logits recomputed "
                 "or stored raw and reread; autotuned)", triton_fused,
                 dict(OURS, config=best_config(k_smr_fused))),
                ("triton_fused_split", "2 kernels: GEMM tiles (tutorial order) writing "
                 "exp(z - tile max) and per-tile max/sum, then an in-place rescale per row",
                 triton_fused_split, dict(OURS, config=best_config(k_smr_tile_softmax))),
            ]
            es = x.element_size()
            nbytes = float(es * (bt * d + d * c) + 4 * bt * c)
            run_case("softmax_regression", None, [bt, d, c], dname, nbytes, impls, reset, ref,
                     (1e-3,), ("probs",), timed, flops=2.0 * bt * d * c,
                     gemm_key=(bt, c, d, dname, None), gate_impl="triton_fused")
            del x, w, z64, ref, out, logits, tile_max, tile_sum
        if ON_GPU:
            torch.cuda.empty_cache()


def bench_moe_align():
    """vLLM's moe_align_block_size, as examples/moe_align computes it: sorted_token_ids (the flat
    indices of the top-k expert ids grouped by expert, each group padded to a multiple of
    block_size = 64 with the value numel), the expert of every block (-1 past the total) and the
    padded total. PyTorch as a user writes it: counts by scatter_add_ (torch.bincount would
    synchronize with the host, which also breaks CUDA graphs), the padded counts' cumsum, a
    stable argsort of the ids, each id's rank within its expert, the scatter, and searchsorted
    for the blocks. The check is exact; each expert's slots are sorted first (tile's atomics
    place them in any order, as vLLM's kernel does). Ids: per token k distinct experts, the
    top-k of random scores weighted toward low expert ids."""
    bs = 64
    for (tokens, k, E), timed in plan([(1, 1, 1), (17, 2, 64), (1000, 8, 256)],
                                      [(8192, 2, 64), (65536, 8, 256)]):
        n = tokens * k
        padded = n + E * (bs - 1)
        blocks = cdiv(padded, bs)
        g = torch.Generator(device=DEV).manual_seed(tokens * 31 + E)
        scores = torch.rand((tokens, E), device=DEV, generator=g)
        scores = scores * torch.linspace(1.5, 0.5, E, device=DEV)
        ids = scores.topk(k, dim=1).indices.to(torch.int32).contiguous()
        # Reference on the host, exact.
        flat64 = ids.view(-1).long().cpu()
        counts = torch.bincount(flat64, minlength=E)
        padc = (counts + bs - 1) // bs * bs
        ends = torch.cumsum(padc, 0)
        starts = ends - padc
        total = int(ends[-1])
        order = torch.argsort(flat64, stable=True)
        e_sorted = flat64[order]
        rank = torch.arange(n) - (torch.cumsum(counts, 0) - counts)[e_sorted]
        ref_sorted = torch.full((padded,), n, dtype=torch.long)
        ref_sorted[starts[e_sorted] + rank] = order
        first = torch.arange(blocks) * bs
        ref_eids = torch.where(first < total, torch.searchsorted(ends, first, right=True), -1)
        seg = torch.full((padded,), E, dtype=torch.long)
        seg[:total] = torch.repeat_interleave(torch.arange(E), padc)
        seg_dev = seg.to(DEV)
        ref = tuple(t.double().to(DEV) for t in (ref_sorted, ref_eids, torch.tensor([total])))

        flat = ids.view(-1)
        sorted_ids = torch.empty(padded, dtype=torch.int32, device=DEV)
        expert_ids = torch.empty(blocks, dtype=torch.int32, device=DEV)
        total_out = torch.empty(1, dtype=torch.int32, device=DEV)
        ones = torch.ones(n, dtype=torch.int32, device=DEV)
        arange_n = torch.arange(n, device=DEV)
        block_first = torch.arange(blocks, device=DEV) * bs

        def reset():
            sorted_ids.fill_(-7)
            expert_ids.fill_(-7)
            total_out.fill_(-7)

        def canonical(outs):
            # Each expert's slots in ascending order (pads, the value n, sort last).
            key = seg_dev * (n + 1) + outs[0].long()
            return (torch.sort(key).values % (n + 1), outs[1], outs[2])

        def torch_impl():
            cnt = torch.zeros(E, dtype=torch.int32, device=DEV).scatter_add_(0, flat.long(), ones)
            pc = (cnt + bs - 1) // bs * bs
            end = torch.cumsum(pc, 0)
            start = end - pc
            o = torch.argsort(flat, stable=True)
            es = flat[o].long()
            r = arange_n - (torch.cumsum(cnt, 0) - cnt)[es]
            sorted_ids.fill_(n)
            sorted_ids[start[es] + r] = o.to(torch.int32)
            eid = torch.searchsorted(end, block_first, right=True)
            expert_ids.copy_(torch.where(block_first < end[-1], eid, -1))
            total_out.copy_(end[-1:])
            return (sorted_ids, expert_ids, total_out)

        impls = [("torch_unfused", "scatter_add_, cumsum, argsort(stable), gathers, index_put_, "
                  "searchsorted (about 15 kernels)", torch_impl, {"view": canonical})]
        nbytes = 4.0 * (n + padded + blocks + 1)
        run_case("moe_align", f"block{bs}", [tokens, k, E], "i32", nbytes, impls, reset, ref,
                 (0.0, 0.0, 0.0), ("sorted_token_ids", "expert_ids", "total"), timed)
        del ids, scores, sorted_ids, expert_ids, total_out, ones, arange_n, ref


def bench_cross_entropy():
    """Cross-entropy forward + backward, mean over rows whose label is not -100, no label
    smoothing, bf16 and f32 logits (examples/cross_entropy): PyTorch's F.cross_entropy and its
    gradient (torch.autograd.grad: log_softmax, nll_loss and their backwards; the gradient a new
    tensor), and a Liger-style Triton kernel (k_liger_cross_entropy: BLOCK_SIZE = min(32768,
    next_pow2(V)), num_warps = 32 as Liger launches it, the gradient in place of the logits, the
    loss summed by torch). Checked against float64 PyTorch; traffic counted as one read of the
    logits and one write of the gradient. Labels: uniform, every 7th row ignored."""
    s = 0.0
    for (rows, v), timed in plan([(1, 1), (17, 1000), (9, 32000)],
                                 [(8192, 32000), (4096, 128256), (16384, 50257),
                                  (1024, 256000), (65536, 1024)]):
        for dname in ("bf16", "f32"):
            dt = DTYPES[dname]
            r = Rand(rows * 977 + v)
            x0 = r.uniform((rows, v), -8, 8, dt)
            g = torch.Generator(device=DEV).manual_seed(rows + v)
            y = torch.randint(0, v, (rows,), device=DEV, generator=g)
            y[3::7] = -100
            x64 = x0.double().requires_grad_()
            l64 = F.cross_entropy(x64, y, ignore_index=-100, label_smoothing=s)
            (g64,) = torch.autograd.grad(l64, x64)
            ref = (l64.detach().reshape(1), g64)
            del x64
            x = x0.clone()
            xt = x0.clone().requires_grad_()
            loss_rows = torch.empty(rows, device=DEV, dtype=F32)
            n_valid = (y != -100).sum().to(torch.int32).reshape(1)
            tol = 1e-2 if dname == "bf16" else 1e-5
            block = min(32768, triton.next_power_of_2(v))

            def reset():
                x.copy_(x0)
                loss_rows.fill_(NAN)

            def torch_fwd_bwd():
                loss = F.cross_entropy(xt, y, ignore_index=-100, label_smoothing=s)
                (grad,) = torch.autograd.grad(loss, xt)
                return (loss.reshape(1), grad)

            def liger():
                k_liger_cross_entropy[(rows,)](x, x.stride(0), y, loss_rows, v, n_valid, -100, s,
                                               BLOCK_SIZE=block, num_warps=32)
                return (loss_rows.sum().reshape(1), x)

            impls = [("torch_native", "F.cross_entropy + autograd.grad (4 kernels, new gradient)",
                      torch_fwd_bwd),
                     ("triton", "Liger-style fused kernel, gradient in place, + sum", liger,
                      {"source": "liger"})]
            nbytes = 2.0 * x.element_size() * rows * v
            run_case("cross_entropy", None, [rows, v], dname, nbytes, impls, reset, ref,
                     (tol, tol), ("loss", "grad"), timed)
            del x0, x, xt, g64, l64, ref, loss_rows
        if ON_GPU:
            torch.cuda.empty_cache()


def bench_flash_attention():
    """Attention baselines (bench/python/attention.py, beside this file): SDPA's backends,
    FlexAttention and Triton's fused-attention tutorial on the keys of tile-bench's
    `flash_attention` rows."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import attention
    attention.bench(sys.modules[__name__])


def selective_scan_loop(u, delta, A, B, C, D, z, delta_bias, dtype=None):
    """Mamba's `selective_scan_ref` (mamba_ssm/ops/selective_scan_interface.py), forward, with
    D, z, delta_bias and delta_softplus=True: Δ·A and Δ·B·u materialized as [B, D, L, N], then
    a Python loop over the sequence (one state update and one contraction with C per step). In
    `dtype` (float32 as the original, float64 for the reference)."""
    dtype = dtype or torch.float32
    u, z = u.to(dtype), z.to(dtype)
    delta = F.softplus(delta.to(dtype) + delta_bias.to(dtype)[:, None])
    A, B, C, D = A.to(dtype), B.to(dtype), C.to(dtype), D.to(dtype)
    dA = torch.exp(torch.einsum("bdl,dn->bdln", delta, A))
    dBu = torch.einsum("bdl,bnl,bdl->bdln", delta, B, u)
    x = u.new_zeros((u.shape[0], u.shape[1], A.shape[1]))
    ys = []
    for i in range(u.shape[2]):
        x = dA[:, :, i] * x + dBu[:, :, i]
        ys.append(torch.einsum("bdn,bn->bd", x, C[:, :, i]))
    y = torch.stack(ys, dim=2) + u * D[:, None]
    return y * F.silu(z)


def selective_scan_parallel(u, delta, A, B, C, D, z, delta_bias):
    """The same in float32 without a loop over the sequence: Δ·A and Δ·B·u materialized as
    [B, D, N, L], the recurrence h = a·h + b by a Hillis–Steele scan in log2(L) steps of
    whole-tensor ops (each step composes every pair 2^k apart), then the contraction with C."""
    f = torch.float32
    u, z = u.to(f), z.to(f)
    delta = F.softplus(delta.to(f) + delta_bias[:, None])
    a = torch.exp(delta[:, :, None, :] * A[None, :, :, None])
    b = (delta * u)[:, :, None, :] * B.to(f)[:, None, :, :]
    k = 1
    while k < u.shape[2]:
        b[..., k:] = a[..., k:] * b[..., :-k] + b[..., k:]
        a[..., k:] = a[..., k:] * a[..., :-k]
        k *= 2
    y = torch.einsum("bdnl,bnl->bdl", b, C.to(f)) + u * D[:, None]
    return y * F.silu(z)


def bench_selective_scan():
    """Mamba's selective scan forward (`selective_scan_fn` with D, z, delta_bias,
    delta_softplus=True): u, delta, z [batch, channels, len] in the dtype, A [channels, 16],
    B, C [batch, 16, len] in the dtype, D and delta_bias [channels] f32; y in the dtype.
    Inputs as examples/selective_scan draws them (different numbers, the same ranges)."""
    small = [(1, 1, 1), (2, 5, 300), (1, 17, 129), (2, 16, 128), (3, 100, 1000)]
    big = [(8, 2048, 4096)]
    try:
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
    except Exception as e:  # not installed where the baselines run: say so once
        selective_scan_fn = None
        print(f"selective_scan: mamba_ssm not available ({type(e).__name__}); its row is skipped")
    for (nb, nc, nl), timed in plan(small, big):
        for dt_name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
            r = Rand(nb * 131 + nc * 7 + nl)
            u = r.uniform((nb, nc, nl), -1, 1, dtype)
            delta = r.uniform((nb, nc, nl), -1, 1, dtype)
            z = r.uniform((nb, nc, nl), -1, 1, dtype)
            B = r.uniform((nb, 16, nl), -1, 1, dtype)
            C = r.uniform((nb, 16, nl), -1, 1, dtype)
            A = -(torch.arange(16, device=DEV, dtype=F32) + 1) * r.uniform((nc, 16), 0.5, 1.5)
            D = r.uniform(nc, 0.5, 1.5)
            dt0 = r.uniform(nc, 0.001, 0.1)
            delta_bias = torch.log(torch.expm1(dt0))
            args = (u, delta, A, B, C, D, z, delta_bias)
            # Reference: the loop in float64 on sampled channels (all of a small shape).
            if nb * nc > 256:
                g = torch.Generator(device="cpu")
                g.manual_seed(nb * 31 + nc)
                pick = torch.randint(0, nb * nc, (48,), generator=g).to(DEV)
                bi, ci = pick // nc, pick % nc
            else:
                bi = torch.arange(nb, device=DEV).repeat_interleave(nc)
                ci = torch.arange(nc, device=DEV).repeat(nb)
            # Every sampled channel at once, as rows of one loop over the sequence.
            d64 = torch.float64
            dt = F.softplus(delta[bi, ci].to(d64) + delta_bias[ci].to(d64)[:, None])  # [S, L]
            dA = torch.exp(dt[:, :, None] * A[ci].to(d64)[:, None, :])  # [S, L, 16]
            dBu = (dt * u[bi, ci].to(d64))[:, :, None] * B[bi].to(d64).transpose(1, 2)
            Cs = C[bi].to(d64).transpose(1, 2)  # [S, L, 16]
            h = torch.zeros((len(bi), 16), device=DEV, dtype=d64)
            ys = []
            for i in range(nl):
                h = dA[:, i] * h + dBu[:, i]
                ys.append((h * Cs[:, i]).sum(-1))
            y64 = torch.stack(ys, dim=1) + u[bi, ci].to(d64) * D[ci].to(d64)[:, None]
            zs = z[bi, ci].to(d64)
            ref = [y64 * zs * torch.sigmoid(zs)]
            del dt, dA, dBu, Cs
            refs = (ref[0],)

            def view(outs):
                return (outs[0][bi, ci],)

            tol = 1e-4 if dtype == torch.float32 else 1e-2
            impls = [("torch_unfused", "Mamba's selective_scan_ref: dA, dBu materialized "
                      "[B, D, L, 16] f32, a Python loop of L steps (update, contraction)",
                      lambda: (selective_scan_loop(*args).to(dtype),), {"view": view}),
                     ("torch_native", "parallel scan in f32: dA, dBu [B, D, 16, L], log2(L) "
                      "Hillis-Steele steps of whole-tensor ops, einsum with C",
                      lambda: (selective_scan_parallel(*args).to(dtype),), {"view": view})]
            if selective_scan_fn is not None:
                impls.append(("mamba_ssm", "mamba_ssm.selective_scan_fn (CUDA)",
                              lambda: (selective_scan_fn(u, delta, A, B, C, D, z, delta_bias,
                                                         delta_softplus=True),),
                              {"view": view, "source": "mamba_ssm"}))
            e = 4 if dtype == torch.float32 else 2
            nbytes = 4.0 * nb * nc * nl * e + 2.0 * nb * 16 * nl * e + nc * 18 * 4
            run_case("selective_scan", None, [nb, nc, nl, 16], dt_name, nbytes, impls,
                     lambda: None, refs, (tol,), ("y",), timed)


def bench_dequant_matmul():
    """`y = x @ dequant(W).T` with 4-bit weights as examples/dequant_matmul defines them: W `n x k`
    values in 0..16 (packed eight to a u32 along k for tile), per row and group of 128 a scale
    and a zero point in the activations' type, `W = (q - zero) * scale`. The baselines a user
    has: the dequantization in PyTorch ops then cuBLAS (`torch_unfused`), cuBLAS on weights
    dequantized beforehand (`cublas`: what a model without int4 kernels runs), and PyTorch's
    int4 kernel (`_weight_int4pack_mm`, bf16; its `(q - 8) * scale + zero'` form with
    `zero' = (8 - zero) * scale` is the same weight)."""
    small = [(1, 64, 128), (3, 100, 256), (17, 130, 384)]
    big = [(m, n, k) for (n, k) in ((4096, 4096), (14336, 4096), (28672, 8192))
           for m in (1, 16, 64, 256, 4096)]
    for (m, n, k), timed in plan(small, big):
        for dt_name, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
            r = Rand(m * 7 + n * 131 + k)
            x = r.uniform((m, k), -1, 1, dtype)
            q = r.randint(16, (n, k))
            scale = r.uniform((n, k // 128), 0.002, 0.02, dtype)
            zero = torch.floor(r.uniform((n, k // 128), 4, 12)).to(dtype)
            w64 = ((q.view(n, k // 128, 128).double() - zero.double()[:, :, None])
                   * scale.double()[:, :, None]).view(n, k)
            ref = (x.double() @ w64.t(),)
            del w64
            w = ((q.view(n, k // 128, 128).to(dtype) - zero[:, :, None])
                 * scale[:, :, None]).view(n, k)

            def unfused():
                wd = ((q.view(n, k // 128, 128).to(dtype) - zero[:, :, None])
                      * scale[:, :, None]).view(n, k)
                return (x @ wd.t(),)

            impls = [("torch_unfused", "dequantize W in PyTorch ops, then x @ W.T (cuBLAS)",
                      unfused),
                     ("cublas", "x @ W.T on W dequantized beforehand (cuBLAS)",
                      lambda: (x @ w.t(),))]
            if dtype == torch.bfloat16 and ON_GPU and k % 1024 == 0:
                try:
                    packed = torch._convert_weight_to_int4pack(
                        ((q[:, 0::2] << 4) | q[:, 1::2]).to(torch.uint8), 8)
                    zp = ((8.0 - zero.float()) * scale.float()).to(dtype)
                    sz = torch.stack([scale.t(), zp.t()], dim=-1).contiguous()
                    impls.append(("torch_int4pack", "torch._weight_int4pack_mm (group 128)",
                                  lambda: (torch._weight_int4pack_mm(x, packed, 128, sz),),
                                  {"source": "pytorch int4"}))
                except Exception as e:  # not built for this GPU or this PyTorch: say so
                    print(f"dequant_matmul: _weight_int4pack_mm unavailable ({e})")
            nbytes = n * k / 2 + 2 * n * (k // 128) * 2 + (m * k + m * n) * 2
            tol = 5e-3 if dtype == torch.float16 else 2e-2
            run_case("dequant_matmul", None, [m, n, k], dt_name, float(nbytes), impls,
                     lambda: None, ref, (tol,), ("y",), timed, flops=2.0 * m * n * k)
            del x, q, w


def bench_w8a8():
    """W8A8 as examples/dequant_matmul/w8a8.rs defines it: `x` (`m x k`, bf16) quantized per token
    to int8 (scale = max|x| / 127, round half away from zero), `W` (`n x k`) per output channel,
    `y = (xq @ wq.T) * sx * sw` in bf16. The baselines a user has: PyTorch's int8 GEMM
    (`torch._int_mm`, cuBLASLt; it takes more than 16 rows) with the per-token quantization and
    the scaling in PyTorch ops (`torch_unfused`), the same product on `x` quantized beforehand
    (`int_mm`: the GEMM and the scaling alone, what tile's `fused` row times), and cuBLAS on the
    bf16 operands (`cublas`, the unquantized product). Checked against the float64 product of
    the unquantized operands (quantization error about 1%)."""
    small = [(17, 100, 256), (32, 130, 96)]
    big = [(m, n, k) for (n, k) in ((4096, 4096), (14336, 4096), (28672, 8192))
           for m in (1, 16, 64, 256, 4096)]
    for (m, n, k), timed in plan(small, big):
        dtype = torch.bfloat16
        r = Rand(m * 5 + n * 31 + k)
        x = r.uniform((m, k), -1, 1, dtype)
        w = r.uniform((n, k), -1, 1, dtype)
        ref = ((x.double() @ w.double().t()),)

        def quant(t):
            amax = t.float().abs().amax(dim=1, keepdim=True)
            sc = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax))
            v = t.float() * torch.where(amax > 0, 127.0 / amax, torch.ones_like(amax))
            return torch.trunc(v + torch.where(v < 0, -0.5, 0.5)).to(torch.int8), sc

        wq, sw = quant(w)
        xq, sx = quant(x)
        impls = [("cublas", "x @ W.T in bf16 (cuBLAS, unquantized)", lambda: (x @ w.t(),))]
        if m > 16 and k % 8 == 0 and n % 8 == 0:
            def unfused():
                q, sc = quant(x)
                return ((torch._int_mm(q, wq.t()).float() * sc * sw.t()).to(dtype),)

            impls.append(("torch_unfused", "per-token quantization, torch._int_mm, scaling",
                          unfused))
            impls.append(("int_mm", "torch._int_mm on x quantized beforehand, then the scaling",
                          lambda: ((torch._int_mm(xq, wq.t()).float() * sx * sw.t()).to(dtype),)))
        else:
            print(f"w8a8 {m}x{n}x{k}: torch._int_mm takes more than 16 rows, multiples of 8")
        nbytes = n * k + m * k + m * n * 2
        run_case("w8a8", None, [m, n, k], "bf16", float(nbytes), impls, lambda: None, ref,
                 (5e-2,), ("y",), timed, flops=2.0 * m * n * k)
        del x, w, wq, xq


def bench_fp8_gemm():
    """FP8 GEMM with scales as tile-bench's fp8_gemm family defines it: `x` (`m x k`) and `W`
    (`n x k`) in float8_e4m3fn, uniform in [-448, 448) rounded to the format, `y = (x @ W.T) *
    sx * sw` in bf16; variant `tensor` (one scale each) or `row` (`sx` per row of x, `sw` per row
    of W), scales uniform in [1e-3, 2e-3). The baseline is `torch._scaled_mm` (cuBLASLt's FP8
    GEMM; W passed column-major as it requires). Checked against float64 of the same values."""
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        print("fp8_gemm: this PyTorch has no float8_e4m3fn or _scaled_mm")
        return
    small = [(16, 32, 64), (64, 48, 128)]
    big = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096)]
    for (m, n, k), timed in plan(small, big):
        r = Rand(m * 7 + n * 131 + k)
        x = (r.uniform((m, k), -448.0, 448.0)).to(torch.float8_e4m3fn)
        w = (r.uniform((n, k), -448.0, 448.0)).to(torch.float8_e4m3fn)
        prod = x.double() @ w.double().t()
        for variant in ("tensor", "row"):
            if variant == "tensor":
                sx = r.uniform((), 1e-3, 2e-3)
                sw = r.uniform((), 1e-3, 2e-3)
            else:
                sx = r.uniform((m, 1), 1e-3, 2e-3)
                sw = r.uniform((1, n), 1e-3, 2e-3)
            ref = (prod * sx.double() * sw.double(),)
            impls = [("scaled_mm", f"torch._scaled_mm (cuBLASLt FP8), per-{variant} scales",
                      lambda sx=sx, sw=sw: (torch._scaled_mm(x, w.t(), scale_a=sx, scale_b=sw,
                                                             out_dtype=torch.bfloat16),))]
            nbytes = m * k + n * k + 2 * m * n
            run_case("fp8_gemm", variant, [m, n, k], "f8e4m3", float(nbytes), impls,
                     lambda: None, ref, (1e-2,), ("y",), timed, flops=2.0 * m * n * k)
        del x, w, prod


def bench_conv_bn_relu():
    """Conv-BN-ReLU inference as examples/conv_bn_relu defines it: x NHWC (channels_last) in
    [-1, 1), filters uniform in +-1/sqrt(cin*f*f), conv bias +-0.1, BatchNorm gamma [0.5, 1.5),
    beta +-0.5, running mean +-0.2, running var [0.5, 2), eps 1e-5; padding f // 2. cuDNN with
    `torch.backends.cudnn.benchmark = True` (the algorithm search PyTorch users turn on for fixed
    shapes). `torch_unfused`: conv2d (with bias) -> F.batch_norm (eval) -> F.relu, the exported
    graph run eagerly; `cudnn_folded`: conv2d with BatchNorm folded into the filter and bias,
    then relu_ in place (the unfused path a user has); `cudnn_conv`: the folded conv2d alone
    (checked against the reference before the ReLU). Shape [N, H, W, Cin, Cout, F, stride];
    checked on the first two images against a float64 conv2d of the trained layer."""
    torch.backends.cudnn.benchmark = True
    layers = [(56, 64, 64, 3, 1), (56, 256, 64, 1, 1), (28, 128, 128, 3, 1),
              (56, 128, 128, 3, 2), (14, 256, 256, 3, 1), (7, 512, 512, 3, 1)]
    small = [(2, 7, 7, 17, 10, 3, 1), (1, 11, 11, 3, 64, 3, 2), (3, 5, 5, 128, 130, 3, 2)]
    big = [(n, hw, hw, ci, co, f, st) for n in (256, 128, 32) for (hw, ci, co, f, st) in layers]
    cl = torch.channels_last
    for (n, h, w_, ci, co, f, st), timed in plan(small, big):
        for dt_name, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
            r = Rand(n * 7 + h * 131 + ci * 17 + co)
            bound = 1.0 / math.sqrt(ci * f * f)
            x = r.uniform((n, ci, h, w_), -1, 1, dtype).contiguous(memory_format=cl)
            weight = r.uniform((co, ci, f, f), -bound, bound)
            bias = r.uniform(co, -0.1, 0.1)
            gamma, beta = r.uniform(co, 0.5, 1.5), r.uniform(co, -0.5, 0.5)
            mean, var = r.uniform(co, -0.2, 0.2), r.uniform(co, 0.5, 2.0)
            eps, pad = 1e-5, f // 2
            sc = gamma.double() / torch.sqrt(var.double() + eps)
            wf = (weight.double() * sc[:, None, None, None]).to(dtype).contiguous(memory_format=cl)
            bf = (sc * (bias.double() - mean.double()) + beta.double()).to(dtype)
            wt, bt = weight.to(dtype).contiguous(memory_format=cl), bias.to(dtype)
            g, b_, mu, vr = (t.to(dtype) for t in (gamma, beta, mean, var))
            k = min(n, 2)
            z64 = F.conv2d(x[:k].double(), weight.double(), bias.double(), st, pad)
            pre64 = (z64 - mean.double()[:, None, None]) * sc[:, None, None] \
                + beta.double()[:, None, None]
            ref = (torch.relu(pre64),)
            del z64

            def view(outs):
                return (outs[0][:k],)

            impls = [("torch_unfused", "conv2d (cuDNN, channels_last) -> F.batch_norm (eval) -> "
                      "F.relu", lambda: (F.relu(F.batch_norm(
                          F.conv2d(x, wt, bt, st, pad), mu, vr, g, b_, False, 0.0, eps)),),
                      {"view": view}),
                     ("cudnn_folded", "conv2d with BN folded into filter and bias, then relu_",
                      lambda: (F.conv2d(x, wf, bf, st, pad).relu_(),), {"view": view}),
                     ("cudnn_conv", "conv2d with the folded filter and bias alone (no ReLU)",
                      lambda: (F.conv2d(x, wf, bf, st, pad),),
                      {"view": view, "refs": (pre64,)})]
            p, q = (h + 2 * pad - f) // st + 1, (w_ + 2 * pad - f) // st + 1
            esz = x.element_size()
            nbytes = (n * h * w_ * ci + n * p * q * co + co * ci * f * f) * esz
            tol = 5e-3 if dtype == torch.float16 else 2e-2
            run_case("conv_bn_relu", None, [n, h, w_, ci, co, f, st], dt_name, float(nbytes),
                     impls, lambda: None, ref, (tol,), ("y",), timed,
                     flops=2.0 * n * p * q * co * ci * f * f)
            del x, wf, wt, pre64, ref
        if ON_GPU:
            torch.cuda.empty_cache()


def bench_rmsnorm_linear():
    """`y = RMSNorm(x) @ W.T` as examples/rmsnorm_linear defines it: x `m x k` in [-1, 1), W `n x k`
    uniform in +-1/sqrt(k), RMSNorm's weight in [0.5, 1.5), eps 1e-6, y in the input dtype.
    `torch_unfused`: F.rms_norm then x_n @ W.T (cuBLAS), the pair a PyTorch user runs;
    `cublas_gemm_only`: x @ W.T alone, the GEMM without the norm (a ceiling, not the job)."""
    small = [(1, 64, 64), (3, 100, 200), (45, 100, 300)]
    big = [(16, 14336, 4096), (4096, 14336, 4096)]
    for (m, n, k), timed in plan(small, big):
        for dt_name, dtype in (("bf16", torch.bfloat16), ("f16", torch.float16)):
            r = Rand(m * 7 + n * 131 + k)
            x = r.uniform((m, k), -1, 1, dtype)
            b = 1.0 / math.sqrt(k)
            w = r.uniform((n, k), -b, b, dtype)
            g = r.uniform(k, 0.5, 1.5, dtype)
            eps = 1e-6
            x64 = x.double()
            xn64 = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * g.double()
            ref = (xn64 @ w.double().t(),)
            del x64, xn64
            impls = [("torch_unfused", "F.rms_norm (weight) then x_n @ W.T (cuBLAS)",
                      lambda: (F.rms_norm(x, (k,), g, eps) @ w.t(),)),
                     ("cublas_gemm_only", "x @ W.T alone (cuBLAS; no norm: a ceiling)",
                      lambda: (x @ w.t(),), {"refs": (x.double() @ w.double().t(),)})]
            nbytes = (m * k + n * k + m * n + k) * x.element_size()
            tol = 5e-3 if dtype == torch.float16 else 2e-2
            run_case("rmsnorm_linear", None, [m, n, k], dt_name, float(nbytes), impls,
                     lambda: None, ref, (tol,), ("y",), timed, flops=2.0 * m * n * k)
            del x, w, ref


def bench_linear_cross_entropy():
    """`loss = CE(x @ W.T, labels)` forward and backward as examples/linear_cross_entropy defines
    it: x `t x h` in [-1, 1), W `v x h` in +-6/sqrt(h), every 7th label -100 (ignored), mean over
    the others; outputs the loss, dx and dW in the input dtype. `torch_unfused`: the logits of
    `F.linear` upcast to f32 (as Hugging Face's causal-LM loss does), `F.cross_entropy`,
    `backward()`; `liger_style`: Liger's fused linear cross-entropy as its code runs it (tokens in
    chunks of next_pow2(t / ceil(v / h)), each chunk's logits by cuBLAS, Liger's cross-entropy
    kernel writing the gradient over them, then `dx` by cuBLAS and `dW.addmm_`); `liger`: the
    package itself where installed. Each impl's extra memory (the peak above the inputs,
    gradients included) is printed as `memory ...` and kept in the rows as `extra_gib`."""
    small = [(1, 64, 100), (37, 40, 75), (70, 96, 257)]
    big = [(8192, 4096, 32000), (8192, 4096, 128256)]
    try:
        from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss
    except ImportError:
        LigerFusedLinearCrossEntropyLoss = None
    for (t, h, v), timed in plan(small, big):
        for dt_name, dtype in (("bf16", torch.bfloat16),):
            r = Rand(t * 31 + h * 7 + v)
            x = r.uniform((t, h), -1, 1, dtype)
            b = 6.0 / math.sqrt(h)
            w = r.uniform((v, h), -b, b, dtype)
            y = r.randint(v, (t,)).long()
            y[3::7] = -100
            if t > 1:
                y[1] = v - 1
            # The reference: float64 on the device (the logits' 8 bytes a word: 8.4 GB at
            # 8192 x 128256), freed before the impls run.
            x64 = x.double().requires_grad_()
            w64 = w.double().requires_grad_()
            l64 = F.cross_entropy(x64 @ w64.t(), y, ignore_index=-100)
            l64.backward()
            ref = (l64.detach().reshape(1), x64.grad, w64.grad)
            del x64, w64, l64
            torch.cuda.empty_cache() if ON_GPU else None
            n_valid = (y != -100).sum().to(torch.int32).reshape(1)
            block = min(32768, triton.next_power_of_2(v))

            def torch_fb():
                xg = x.detach().requires_grad_()
                wg = w.detach().requires_grad_()
                loss = F.cross_entropy(F.linear(xg, wg).float(), y, ignore_index=-100)
                loss.backward()
                return (loss.detach().reshape(1), xg.grad, wg.grad)

            def liger_style():
                chunk = triton.next_power_of_2(cdiv(t, cdiv(v, h)))
                gx = torch.empty_like(x)
                gw = torch.zeros_like(w)
                loss_rows = torch.empty(t, device=DEV, dtype=F32)
                for s0 in range(0, t, chunk):
                    xc = x[s0:s0 + chunk]
                    logits = xc @ w.t()
                    k_liger_cross_entropy[(xc.shape[0],)](
                        logits, logits.stride(0), y[s0:s0 + chunk], loss_rows[s0:s0 + chunk], v,
                        n_valid, -100, 0.0, BLOCK_SIZE=block, num_warps=32)
                    torch.mm(logits, w, out=gx[s0:s0 + chunk])
                    gw.addmm_(logits.t(), xc)
                return (loss_rows.sum().reshape(1), gx, gw)

            impls = [("torch_unfused", "F.linear, .float(), F.cross_entropy, backward()", torch_fb),
                     ("liger_style", "chunks: cuBLAS logits, Liger's CE kernel in place, "
                      "cuBLAS dx, dW.addmm_", liger_style, {"source": "triton"})]
            if LigerFusedLinearCrossEntropyLoss is not None:
                lf = LigerFusedLinearCrossEntropyLoss(ignore_index=-100)

                def liger_pkg():
                    xg = x.detach().requires_grad_()
                    wg = w.detach().requires_grad_()
                    loss = lf(wg, xg, y)
                    loss.backward()
                    return (loss.detach().reshape(1), xg.grad, wg.grad)
                impls.append(("liger", "liger_kernel's LigerFusedLinearCrossEntropyLoss",
                              liger_pkg, {"source": "liger"}))
            if ON_GPU and timed:
                for impl, _, fn, *_ in impls:
                    torch.cuda.synchronize()
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                    before = torch.cuda.memory_allocated()
                    out = fn()
                    torch.cuda.synchronize()
                    extra = (torch.cuda.max_memory_allocated() - before) / 2**30
                    del out
                    MEMORY[(t, h, v, dt_name, impl)] = extra
                    print(f"memory linear_cross_entropy {t}x{h}x{v} {dt_name} {impl}: "
                          f"{extra:.3f} GiB above the inputs")
            tol = 2e-2
            run_case("linear_cross_entropy", None, [t, h, v], dt_name,
                     float((t * h + v * h) * 2 * 2), impls, lambda: None, ref,
                     (1e-2, tol, tol), ("loss", "dx", "dW"), timed, flops=6.0 * t * h * v)
            for row in ROWS:
                key = (t, h, v, dt_name, row["impl"])
                if row["kernel"] == "linear_cross_entropy" and key in MEMORY:
                    row["extra_gib"] = MEMORY[key]
            del x, w, y, ref
            torch.cuda.empty_cache() if ON_GPU else None


def bench_softmax_regression_backward():
    """The backward of `P = softmax(x @ W)` per head, as examples/softmax_regression_backward
    defines it: x `b x d` in [-1, 1), W `d x h*c` in +-1/sqrt(d), P each head's softmax of random
    logits in [-4, 4) in tile's example, here autograd's own softmax of x @ W (f32), dP in [-1, 1)
    (f32); outputs dx and dW in the input dtype.
    `torch_unfused`: autograd's backward of `softmax((x @ W).float().view(b, h, c), -1)` given
    dP (`torch.autograd.grad` with the graph kept, so that only the backward is timed: the
    softmax's backward, the cast's, and cuBLAS's two products)."""
    small = [(1, 8, 10, 1), (17, 40, 75, 1), (70, 96, 33, 3)]
    big = [(64, 128, 10, 1), (256, 512, 50, 1), (1024, 1024, 100, 1), (8192, 4096, 1000, 1),
           (8192, 4096, 1000, 8)]
    for (b, d, c, h), timed in plan(small, big):
        for dt_name, dtype in (("bf16", torch.bfloat16), ("f16", torch.float16)):
            r = Rand(b * 7 + d * 31 + c * 3 + h)
            x = r.uniform((b, d), -1, 1, dtype).requires_grad_()
            bound = 1.0 / math.sqrt(d)
            w = r.uniform((d, h * c), -bound, bound, dtype).requires_grad_()
            dp = r.uniform((b, h, c), -1, 1)
            probs = torch.softmax((x @ w).float().view(b, h, c), -1)
            # The reference from autograd's own probabilities (tile's example takes random
            # ones: the backward does not depend on where they came from).
            p = probs.detach().double()
            d64 = p * (dp.double() - (dp.double() * p).sum(-1, keepdim=True))
            d64 = d64.reshape(b, h * c)
            ref = (d64 @ w.detach().double().t(), x.detach().double().t() @ d64)

            def autograd_bwd():
                return torch.autograd.grad(probs, (x, w), dp, retain_graph=True)

            # Not replayed as a CUDA graph: the first capture of autograd's backward in the
            # process was invalidated (cudaErrorStreamCaptureInvalidated), even after a warm-up.
            impls = [("torch_unfused", "autograd: softmax backward, cast, two cuBLAS products",
                      autograd_bwd, {"no_graph": True})]
            tol = 5e-3 if dtype == torch.float16 else 2e-2
            nbytes = (2 * b * h * c * 4 + (b * d + d * h * c) * 2 * 2)
            run_case("softmax_regression_backward", f"h{h}", [b, d, c], dt_name, float(nbytes),
                     impls, lambda: None, ref, (tol, tol), ("dx", "dW"), timed,
                     flops=4.0 * b * d * h * c)
            del x, w, p, dp, probs, ref, d64


def bench_tutorials():
    """Triton's tutorials as written (bench/python/tutorials.py, beside this file), on the keys
    of tile-bench's `tutorials` family."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import tutorials
    tutorials.bench(sys.modules[__name__])


FAMILIES = [
    ("fused_add_mul", bench_fused_add_mul),
    ("elementwise_chains", bench_elementwise_chains),
    ("fused_bias_gelu", bench_fused_bias_gelu),
    ("fused_bias_gelu_dropout", bench_fused_bias_gelu_dropout),
    ("residual_bias_dropout", bench_residual_bias_dropout),
    ("act_and_mul", bench_act_and_mul),
    ("fused_layernorm", bench_fused_layernorm),
    ("fused_add_rmsnorm", bench_fused_add_rmsnorm),
    ("fused_softmax", bench_fused_softmax),
    ("mean_center", bench_mean_center),
    ("qk_norm_rope", bench_qk_norm_rope),
    ("softmax_regression_simple", bench_softmax_regression_simple),
    ("gemm", bench_gemm),
    ("fp8_gemm", bench_fp8_gemm),
    ("gemm_bias_act", bench_gemm_bias_act),
    ("softmax_regression", bench_softmax_regression),
    ("moe_align", bench_moe_align),
    ("cross_entropy", bench_cross_entropy),
    ("tutorials", bench_tutorials),
    ("flash_attention", bench_flash_attention),
    ("selective_scan", bench_selective_scan),
    ("dequant_matmul", bench_dequant_matmul),
    ("w8a8", bench_w8a8),
    ("conv_bn_relu", bench_conv_bn_relu),
    ("rmsnorm_linear", bench_rmsnorm_linear),
    ("linear_cross_entropy", bench_linear_cross_entropy),
    ("softmax_regression_backward", bench_softmax_regression_backward),
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
    head = ["kernel", "variant", "shape", "dtype", "impl", "source", "ms", "GB/s", "% copy",
            "TFLOP/s", "% cuBLAS", "vs torch_unfused", "rel err", "ok"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        key = (r["kernel"], r["variant"], tuple(r["shape"]), r["dtype"])
        ms = r["ms"]
        sp = f"{base[key] / ms:.2f}x" if ms and key in base else "-"
        cells = [r["kernel"], r["variant"] or "-", shape_str(r["shape"]), r["dtype"],
                 r["impl"] + (" (graph)" if r["graph"] else ""),
                 r.get("source", "-"),
                 f"{ms:.4f}" if ms else "-",
                 f"{r['gbps']:.0f}" if ms else "-",
                 f"{r['pct_copy']:.1f}%" if ms else "-",
                 f"{r['tflops']:.1f}" if ms and r.get("tflops") else "-",
                 f"{r['pct_cublas']:.1f}%" if ms and r.get("pct_cublas") else "-",
                 sp,
                 f"{r['rel_err']:.1e}" if r.get("rel_err") is not None else "-",
                 "refused" if r.get("refused") else ("ok" if r["ok"] else "FAIL")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    global COPY_GBPS, TIMER
    t_start = time.time()
    if ON_GPU and not torch.cuda.is_available():
        sys.exit("no CUDA device visible to torch; use --device cpu for a smoke test")
    name = torch.cuda.get_device_name() if ON_GPU else (platform.processor() or "cpu")
    print(f"device: {name}; torch {torch.__version__}, triton {triton.__version__}, "
          f"numpy {numpy.__version__}, python {platform.python_version()}")
    if not ON_GPU:
        patch_interpreter()
        print("CPU smoke test (TRITON_INTERPRET=1): TIMINGS ARE MEANINGLESS, only the checks count.")
    TIMER = Timer()
    print(f"timing: median of {ARGS.reps} samples after {ARGS.warmup} warm-ups, each sample a "
          f"batch of back-to-back launches (~{SAMPLE_MS} ms of device work, at most {MAX_BATCH}) "
          f"after an L2 flush{' (quick: small shapes only)' if ARGS.quick else ''}")
    COPY_GBPS = copy_bandwidth()
    print(f"device-to-device copy bandwidth (read + write): {COPY_GBPS:.0f} GB/s")
    for fam, fn in FAMILIES:
        if ARGS.filter and ARGS.filter not in fam:
            continue
        if fam in ARGS.skip.split(","):
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
        "method": (f"device time: median of {ARGS.reps} samples after {ARGS.warmup} warm-ups; "
                   f"each sample = a batch of back-to-back launches (~{SAMPLE_MS} ms of device "
                   f"work, 1 to {MAX_BATCH}; the row's `batch`) between two CUDA events, divided "
                   f"by the batch; before each sample a {L2_FLUSH_BYTES >> 20} MB buffer is zeroed "
                   "(L2 flush, as triton.testing.do_bench) and the GPU is held busy "
                   "(torch.cuda._sleep) while the host enqueues the batch, so host launch cost is "
                   "not timed; no synchronization between samples. Graph rows: the same, with at "
                   f"least {GRAPH_REPLAYS} replays per sample. bytes = each input read once + "
                   "each output written once; GEMM rows: tflops = 2 M N K / time, pct_cublas = "
                   "100 x cuBLAS GEMM time / time. Autotuning: Triton's autotuner at the first "
                   f"launch, do_bench(warmup={AUTOTUNE_WARMUP_MS}, rep={AUTOTUNE_REP_MS}) per "
                   "config"),
        "timing": {"l2_flush_bytes": L2_FLUSH_BYTES, "sample_ms": SAMPLE_MS,
                   "max_batch": MAX_BATCH, "samples": ARGS.reps, "warmup": ARGS.warmup,
                   "graph_min_replays": GRAPH_REPLAYS,
                   "autotune_warmup_ms": AUTOTUNE_WARMUP_MS, "autotune_rep_ms": AUTOTUNE_REP_MS},
        "filter": ARGS.filter,
        "skip": ARGS.skip,
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
    judged = [r for r in ROWS + CHECKS if not r.get("refused")]  # refusals are not checks
    n_ok = sum(r["ok"] for r in judged)
    n_refused = len(ROWS) + len(CHECKS) - len(judged)
    print(f"checks: {n_ok} passed, {len(judged) - n_ok} failed"
          + (f", {n_refused} skipped" if n_refused else ""))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
