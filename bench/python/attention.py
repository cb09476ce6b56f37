"""Attention baselines (family `flash_attention`): what tile's FlashAttention example is measured
against, on the keys of tile-bench's `flash_attention` rows.

Not a script: `baseline.py` imports it for its family `flash_attention` (so `baseline.py --filter
flash_attention` runs it with baseline.py's timing, L2 flush, CLI and JSON) and calls
`bench(baseline_module)`.

Row keys (kernel `flash_attention`; what bench/join.py joins on: kernel, variant, shape, dtype)
----------------------------------------------------------------------------------------------

dtype is "f16" or "bf16". Q, K, V, O and dO are [batch, heads, seq, head_dim] (BHSD), contiguous,
unless a variant says otherwise. The scale is 1 / sqrt(head_dim). "Causal" masks key j > query i
(queries and keys have the same length).

| variant | shape | what |
|---|---|---|
| `fwd`, `fwd_causal` | `[B, H, S, D]` | O = softmax(Q K^T * scale) V |
| `bwd`, `bwd_causal` | `[B, H, S, D]` | dQ, dK, dV from dO (the forward run once, untimed, before) |
| `gqa_fwd` | `[B, Hq, Hkv, S, D]` | query head h reads key/value head h // (Hq / Hkv) |
| `varlen_fwd`, `varlen_fwd_causal` | `[n_seqs, H, total_tokens, D]` | packed sequences: Q, K, V are [total_tokens, H, D], sequence i is rows cu_seqlens[i] .. cu_seqlens[i+1] |
| `mod_window_l{L}_r{R}` | `[B, H, S, D]` | key j is seen by query i when i - L <= j <= i + R |
| `mod_alibi` | `[B, H, S, D]` | score + slope[h] * (j - i), slope[h] = 2^(-8 (h + 1) / H), not causal |
| `mod_softcap{C}` | `[B, H, S, D]` | score -> C * tanh(score / C) |
| `mod_bias` | `[B, H, S, D]` | score + bias[i, j], bias [S, S] in the input dtype, the same for every batch and head (drawn uniform in [-1, 1)) |
| `decode_paged{P}` | `[B, Hq, Hkv, ctx, D]` | one query token per sequence ([B, Hq, 1, D]) against ctx cached tokens in pages of P tokens |

"score" is the scaled score Q K^T * scale (modifiers act after the scale, as FlexAttention's
score_mod). The variable-length lengths come from splitmix64 so that the Rust side can draw the
same ones: state = VARLEN_SEED; per sequence state += 0x9E3779B97F4A7C15 (mod 2^64), z = state,
z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9, z = (z ^ (z >> 27)) * 0x94D049BB133111EB, z ^= z >> 31
(all mod 2^64), length = 1 + z % max_len (`varlen_lengths`). The paged cache is laid out as vLLM's
flash-attention backend lays it: K and V each [n_pages, P, Hkv, D], a block table [B, ctx / P]
(int32) of page numbers, every page in use, pages handed out in a seeded random order (so that no
sequence is contiguous in memory); n_pages = B * ctx / P.

Rows (`--attn-parts`, default all of them; the full run's cases in the order they run):

- fwd: B 4, H 32, S in {4096, 16384, 1024, 1000, 4097}, D in {128, 64}, causal and not, bf16 and
  f16 (40 cases); bwd: the same 40;
- gqa: `[4, 32, 8, 4096, 128]` and `[4, 32, 1, 4096, 128]` bf16;
- varlen: 64 sequences of lengths 1..4096 (VARLEN_SEED), H 32, D 128, bf16, causal and not;
- mods: `[4, 32, 4096, 128]` bf16: window (L 1024, R 0), ALiBi, softcap 20, bias;
- decode: batch 64, Hq 32, Hkv 8, D 128, ctx in {1024, 4096, 8192, 16384, 32768}, pages of 16,
  bf16.
- dropout: `[4, 32, 4096, D]` bf16, D in {128, 64}, causal and not, dropout_p 0.1: forward
  (`fwd_dropout`, `fwd_causal_dropout`) and forward + backward through autograd
  (`bwd_dropout`, `bwd_causal_dropout`), SDPA's three backends (`dropout_p=0.1`). Checked without
  the library's random mask (which no reference can draw): Q = K = 0, so that every probability of
  row i is 1 / (keys it sees), and V the identity on the first D keys (zero after), so that
  O[i, c] (1 - p) keys_i is 1 where key c was kept and 0 where it was dropped: it must be within
  0.25 of an integer (the scale is 1 / (1 - p) and nothing else), and the kept share of those keys
  over the case must be 1 - p within six standard deviations plus 1/256 (FlashAttention-2
  compares 8-bit random numbers: it keeps 230/256, 0.17% fewer than 1 - p). The backward's dQ
  and dK must be 0 (K = Q = 0; within 1e-6), and its dV of the first D keys must equal O^T dO
  computed from the same call's O in float64 (relative L2 within the backward's tolerance): the
  backward dropped what the forward dropped, with the same scale. Timed on those inputs (the
  kernels' work does not depend on the values).

Before any of them (and, with --quick, instead of them) small shapes are checked, so that every
implementation is checked on a small shape before it is timed: fwd/bwd `[1, 4, 256, 64]` f16,
`[1, 4, 256, 128]` bf16 causal and `[1, 4, 1000, 128]` bf16 causal; gqa `[1, 32, 8, 256, 128]`; varlen 8 sequences of 1..256, H 4;
mods `[1, 4, 256, 128]`; decode batch 4, ctx 1024; dropout `[1, 4, 256, 128]` bf16.

Implementations (`impl`; every one is tried on every case; one that cannot run a case is reported
in a row with `refused: true` and the reason in `error`, untimed, never silently left out):

- `sdpa_cudnn`, `sdpa_flash`, `sdpa_efficient`: `F.scaled_dot_product_attention` with the backend
  pinned by `torch.nn.attention.sdpa_kernel` (CUDNN_ATTENTION, FLASH_ATTENTION,
  EFFICIENT_ATTENTION). A backend that refuses the inputs ("No available kernel") is reported as
  refused with PyTorch's warnings as the reason. GQA through `enable_gqa=True`; varlen through
  nested (jagged) tensors; window, ALiBi and bias through `attn_mask` (a bool [S, S] mask; an
  additive [1, H, S, S] mask in the input dtype, so that its reference is the float64 attention
  with that rounded bias; the bias tile expanded over batch and head); SDPA cannot express the
  softcap (refused). Backward: `torch.autograd.grad(o, (q, k, v), do, retain_graph=True)` after
  one forward.
- `varlen_attn` (varlen and window rows): `torch.nn.attention.varlen.varlen_attn`, PyTorch's
  FlashAttention-2 varlen entry point (window rows: the batch packed as B sequences of S).
- `flex`: `torch.nn.attention.flex_attention.flex_attention` compiled with
  `torch.compile(flex_attention, dynamic=False)` as its documentation does (default kernel options,
  no max-autotune); causal, window and varlen through a block mask
  (`create_block_mask(..., _compile=True)`), ALiBi / softcap / bias as `score_mod`, GQA through
  `enable_gqa=True`. The first call of a case compiles (inside the check, never timed). Decode:
  `flex` on a contiguous cache, and `flex_paged` on the page pool itself: a BlockMask built from
  the block table (`BlockMask.from_kv_blocks`, KV block size = the page size, every page a full
  block), K/V the pool viewed as [1, Hkv, n_pages * P, D], the layout PyTorch's experimental
  PagedAttention builds for flex. On the CPU (smoke test) flex runs eagerly and `flex_paged` is
  refused (the eager path ignores block indices).
- decode also: `sdpa_*` on a contiguous cache (K/V already [B, Hkv, ctx, D]: what a cache that is
  not paged costs, a bound) and `sdpa_*_gather`: the pages gathered into a contiguous cache and
  then SDPA, both timed (the cost of serving a paged cache through SDPA).
- `triton` (source "triton-tutorial"): Triton's official fused-attention tutorial
  (python/tutorials/06-fused-attention.py, the Triton 3.6 era version: host TensorDescriptors on
  Hopper, `_attn_fwd` autotuned over the tutorial's configs — BLOCK_M {64, 128} x BLOCK_N
  {32, 64, 128} x num_stages {2, 3, 4} x num_warps {4, 8}, less 8 warps for tiles under 128 x 128
  on Hopper, pruned to BLOCK_M <= N_CTX and, causal, BLOCK_M >= BLOCK_N — and the backward with
  its fixed blocks 32 / 128 / 128 / 32, BLK_SLICE_FACTOR 2, 4 warps, 5 stages, K pre-scaled by
  sm_scale / ln 2, the preprocessing kernel for delta), written out below in our own structure.
  What differs from the tutorial, and why: (1) its casts of P, dS and the output are to float16;
  here they go to the input dtype, so that bf16 runs at all (the tutorial is f16 only); (2) the
  autotuner's key adds STAGE (causal) and the dtype to the tutorial's (N_CTX, HEAD_DIM,
  FP8_OUTPUT, warp_specialize), so that every case is tuned for itself instead of inheriting the
  config tuned for another case; (3) only the Hopper path with warp_specialize off, the one the
  tutorial benchmarks on an H100, is written out (no FP8, no Blackwell branches, no on-device
  descriptors); (4) the autotuner benchmarks each config with baseline.py's shortened do_bench
  (10 / 40 ms). The tutorial handles whole blocks only (N_CTX % 128 == 0; its backward asserts
  it) and has no GQA, varlen, score modifiers or decode: those cases report it refused.

Method. Inputs: randn (std 1) Q, K, V and dO in the case's dtype, seeded from the case. Every
implementation is checked before it is timed, against float64 attention computed on the device
(`ref_head`, in chunks of query rows): small shapes on every (batch, head); the timed shapes on
the slices (batch 0, head 0) and (batch B-1, head H-1) (varlen: heads 0 and H-1 of every
sequence; decode: every head of sequences 0 and B-1). Relative L2 error tolerances: forward
f16 2e-3, bf16 1e-2; backward (each of dQ, dK, dV) f16 5e-3, bf16 2e-2. An implementation whose
check fails is not timed (its row has ok false and the errors). Before the check, the output's
size is filled with NaN and freed, so that a kernel that leaves part of a fresh output unwritten
is likely to show NaN (best effort: the outputs are allocated by the implementations). Timing is
baseline.py's (TIMER: L2 flush and a held GPU before each sample, a batch of launches per sample,
median of --reps samples; CUDA-graph replays too where the best plain time is under 75 us or with
--graph-all). FLOPs as the tutorial counts them: forward 4 B H S^2 D, x 0.5 causal, backward 2.5 x
the forward; varlen the sum over sequences; the window counts the (query, key) pairs it keeps;
decode rows have no FLOPs (memory-bound: `bytes` = the K and V bytes read plus Q and O). `bytes`:
forward Q, K, V, O (+ the bias tile); backward Q, K, V, O, dO read and dQ, dK, dV written.

Budget guards: each implementation of each case has `--attn-row-timeout` seconds (default 150)
for its check (compiles and autotuning included) and its timing, enforced with SIGALRM between
Python steps (a single long CUDA call is not interrupted, but compiles and the timing loop are);
past it the row is reported with error "timeout". The imports and a first FlexAttention compile
run before any limit starts (`warm_up`): an alarm inside a first import would leave a
half-imported module behind. An alarm inside a later compile may still leave that backend
unusable for the rest of the run (its later rows then fail with the error it raises). The family stops starting new work at
`--attn-deadline` seconds after the run began (default: BASELINE_TIMEOUT - 60 when that
environment variable is set, as scripts/gpu/bench.sh sets it, else none): the implementations of a
started case that did not run get rows with error "deadline", the cases not started are listed in
`failures`, and the JSON is written before an outer `timeout` would kill the process.
`--attn-impls A,B` runs only those implementations; `--attn-dtypes bf16` only those dtypes of the
fwd and bwd grids (the other parts are bf16 only). CUDA-graph timings follow baseline.py's rule
(where the best plain time is under 75 us), except that --quick takes none unless --graph-all.
"""

import math
import os
import signal
import time
import traceback
import warnings

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

ON_GPU = os.environ.get("TRITON_INTERPRET") != "1"
NAME = "flash_attention"

# The full run's cases (see the docstring).
FWD_BATCH, FWD_HEADS = 4, 32
FWD_SEQS = [4096, 16384, 1024, 1000, 4097]
HEAD_DIMS = [128, 64]
DTYPE_ORDER = ["bf16", "f16"]
GQA_CASES = [(4, 32, 8, 4096, 128), (4, 32, 1, 4096, 128)]
VARLEN_SEQS, VARLEN_MAX, VARLEN_HEADS, VARLEN_DIM = 64, 4096, 32, 128
VARLEN_SEED = 12345
MOD_SHAPE = (4, 32, 4096, 128)
WINDOW = (1024, 0)
SOFTCAP = 20.0
DECODE_BATCH, DECODE_HQ, DECODE_HKV, DECODE_DIM, PAGE = 64, 32, 8, 128, 16
DECODE_CTX = [1024, 4096, 8192, 16384, 32768]

# Small shapes: checked before the full run's cases, and the only ones of --quick.
SMALL_FWD = [(1, 4, 256, 64, "f16", False), (1, 4, 256, 128, "bf16", True),
             (1, 4, 1000, 128, "bf16", True)]
SMALL_GQA = [(1, 32, 8, 256, 128)]
SMALL_VARLEN = (8, 256, 4, 128)  # sequences, max length, heads, head_dim
SMALL_MOD = (1, 4, 256, 128)
SMALL_DECODE = (4, 1024)  # batch, ctx

PARTS = ["fwd", "bwd", "gqa", "varlen", "mods", "decode", "dropout"]
DROP_P = 0.1
DROP_SHAPE = (4, 32, 4096)  # batch, heads, length; head_dim in HEAD_DIMS
SMALL_DROP = (1, 4, 256, 128)
TOL_FWD = {"f16": 2e-3, "bf16": 1e-2}
TOL_BWD = {"f16": 5e-3, "bf16": 2e-2}
TORCH_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
SDPA_BACKENDS = [("sdpa_cudnn", "CUDNN_ATTENTION"), ("sdpa_flash", "FLASH_ATTENTION"),
                 ("sdpa_efficient", "EFFICIENT_ATTENTION")]
TUTORIAL_WHOLE_BLOCK = 128  # the tutorial's N_CTX must be a multiple of this

_B = None  # the baseline module, set by bench()


# ----------------------------------------------------------------------------------------------
# Triton's fused-attention tutorial (06-fused-attention.py), forward and backward
# ----------------------------------------------------------------------------------------------


def _autotune_bench(kernel_call, quantiles):
    """The tutorial kernel's autotuner benchmark: baseline.py's (shortened do_bench)."""
    return _B.autotune_bench(kernel_call, quantiles)


def _on_hopper():
    return ON_GPU and torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


def _set_block_shapes(nargs):
    # Config pre-hook: the host descriptors get the block shapes of the config being run.
    bm, bn, d = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["HEAD_DIM"]
    nargs["desc_q"].block_shape = [bm, d]
    nargs["desc_k"].block_shape = [bn, d]
    nargs["desc_v"].block_shape = [bn, d]
    nargs["desc_o"].block_shape = [bm, d]


def tutorial_fwd_configs():
    """The tutorial's forward configs (CUDA, host descriptors) with its `keep` filter applied."""
    configs = []
    for bm in (64, 128):
        for bn in (32, 64, 128):
            for stages in (2, 3, 4):
                for warps in (4, 8):
                    # keep(): on Hopper, no 8 warps for tiles under 128 x 128.
                    if _on_hopper() and bm * bn < 128 * 128 and warps == 8:
                        continue
                    configs.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn},
                                                 num_stages=stages, num_warps=warps,
                                                 pre_hook=_set_block_shapes))
    if not ON_GPU:  # the interpreter: two configs keep the smoke test short
        configs = [c for c in configs if c.kwargs["BLOCK_N"] == 32 and c.num_stages == 2
                   and c.num_warps == 4]
    return configs


def _tutorial_prune(configs, named_args, **kwargs):
    # prune_invalid_configs(): BLOCK_M no longer than the sequence; causal needs BLOCK_M >= BLOCK_N.
    n_ctx, stage = kwargs["N_CTX"], kwargs["STAGE"]
    return [c for c in configs if c.kwargs["BLOCK_M"] <= n_ctx
            and (c.kwargs["BLOCK_M"] >= c.kwargs["BLOCK_N"] or stage == 1)]


@triton.jit
def _tut_fwd_pass(acc, l_i, m_i, q, desc_k, desc_v, row0, dtype: tl.constexpr, start_m, qk_scale,
                  BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                  STAGE: tl.constexpr, offs_m: tl.constexpr, offs_n: tl.constexpr,
                  N_CTX: tl.constexpr):
    # One pass of the online softmax over a range of key blocks. STAGE 1: the blocks left of the
    # diagonal block (causal, unmasked); 2: the diagonal block (causal, masked); 3: every block.
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    k_row = row0 + lo
    v_row = row0 + lo
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([k_row, 0]).T
        qk = tl.dot(q, k)
        if STAGE == 2:
            visible = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(visible, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        # Rescale what was accumulated under the old row maximum.
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([v_row, 0])
        p = p.to(dtype)
        acc = tl.dot(p, v, acc)
        # The row sum and maximum last, as the tutorial orders them (register pressure).
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        k_row += BLOCK_N
        v_row += BLOCK_N
    return acc, l_i, m_i


@triton.autotune(configs=tutorial_fwd_configs(),
                 key=["N_CTX", "HEAD_DIM", "FP8_OUTPUT", "warp_specialize", "STAGE", "IN_BF16"],
                 prune_configs_by={"early_config_prune": _tutorial_prune},
                 do_bench=_autotune_bench)
@triton.jit
def tut_attn_fwd(sm_scale, M, Z, H, desc_q, desc_k, desc_v, desc_o, N_CTX,
                 HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 FP8_OUTPUT: tl.constexpr, STAGE: tl.constexpr, warp_specialize: tl.constexpr,
                 IN_BF16: tl.constexpr):
    # Program (query block, batch * head). Q, K, V, O are seen through 2-D descriptors over
    # [Z * H * N_CTX, HEAD_DIM]; M gets the base-2 log-sum-exp of every query row.
    dtype = tl.bfloat16 if IN_BF16 else tl.float16
    tl.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    row0 = off_z * (N_CTX * H) + off_h * N_CTX
    q_row = row0 + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504  # exp2 instead of exp: scores times log2(e)
    q = desc_q.load([q_row, 0])
    # STAGE is 3 when causal (pass 1 off the diagonal, then pass 2 on it), 1 when not (pass 3).
    if STAGE & 1:
        acc, l_i, m_i = _tut_fwd_pass(acc, l_i, m_i, q, desc_k, desc_v, row0, dtype, start_m,
                                      qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N, 4 - STAGE, offs_m,
                                      offs_n, N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = _tut_fwd_pass(acc, l_i, m_i, q, desc_k, desc_v, row0, dtype, start_m,
                                      qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N, 2, offs_m, offs_n,
                                      N_CTX)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    desc_o.store([q_row, 0], acc.to(dtype))


def _descriptors(q, k, v, o, block_m=1, block_n=1):
    """The tutorial's host descriptors: each tensor as [Z * H * N_CTX, HEAD_DIM] (block shapes
    are set per config by the pre-hook; given here only for precompiling)."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    rows = q.shape[0] * q.shape[1] * q.shape[2]
    d = q.shape[-1]

    def desc(t, b):
        return TensorDescriptor(t, shape=[rows, d], strides=[d, 1], block_shape=[b, d])

    return desc(q, block_m), desc(k, block_n), desc(v, block_n), desc(o, block_m)


def _tutorial_fwd_args(q, k, v, o, M, sm_scale, causal, descs):
    args = (sm_scale, M, q.shape[0], q.shape[1], *descs)
    kwargs = dict(N_CTX=q.shape[2], HEAD_DIM=q.shape[-1], FP8_OUTPUT=False,
                  STAGE=3 if causal else 1,
                  warp_specialize=False, IN_BF16=q.dtype == torch.bfloat16)
    return args, kwargs


def tutorial_forward(q, k, v, causal, sm_scale):
    """The tutorial's `_attention.forward` on the Hopper path: returns (o, M)."""
    assert q.shape[-1] == k.shape[-1] == v.shape[-1] and q.shape[-1] in {16, 32, 64, 128, 256}
    o = torch.empty_like(q)
    M = torch.empty((q.shape[0], q.shape[1], q.shape[2]), device=q.device, dtype=torch.float32)
    args, kwargs = _tutorial_fwd_args(q, k, v, o, M, sm_scale, causal, _descriptors(q, k, v, o))

    def grid(meta):
        return (triton.cdiv(q.shape[2], meta["BLOCK_M"]), q.shape[0] * q.shape[1], 1)

    tut_attn_fwd[grid](*args, **kwargs)
    return o, M


def precompile_tutorial_fwd(q, k, v, causal, sm_scale):
    """GPU only: compile every config the autotuner will try for this case at once in a thread
    pool (as baseline.py's `precompile`), each with descriptors of that config's block shapes
    (the kernel is specialized on them), so that the autotuner finds them compiled."""
    if not ON_GPU or not hasattr(triton, "AsyncCompileMode"):
        return
    from concurrent.futures import ThreadPoolExecutor
    if _B._EXECUTOR is None:
        _B._EXECUTOR = ThreadPoolExecutor(max_workers=min(32, max(2, os.cpu_count() or 8)))
    o = torch.empty_like(q)
    M = torch.empty((q.shape[0], q.shape[1], q.shape[2]), device=q.device, dtype=torch.float32)
    probe = dict(N_CTX=q.shape[2], STAGE=3 if causal else 1)
    try:
        with triton.AsyncCompileMode(_B._EXECUTOR, ignore_errors=True):
            for cfg in _tutorial_prune(tut_attn_fwd.configs, None, **probe):
                descs = _descriptors(q, k, v, o, cfg.kwargs["BLOCK_M"], cfg.kwargs["BLOCK_N"])
                args, kwargs = _tutorial_fwd_args(q, k, v, o, M, sm_scale, causal, descs)
                tut_attn_fwd.fn.warmup(*args, grid=(1,), **kwargs, **cfg.all_kwargs())
    except Exception as e:  # the autotuner compiles them itself then
        print(f"(parallel precompile skipped: {type(e).__name__}: {e})")


@triton.jit
def tut_attn_bwd_preprocess(O, DO, Delta, Z, H, N_CTX, BLOCK_M: tl.constexpr,
                            HEAD_DIM: tl.constexpr):
    # delta = rowsum(O * dO), per (batch * head, query row).
    off_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    off_hz = tl.program_id(1)
    off_n = tl.arange(0, HEAD_DIM)
    o = tl.load(O + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :])
    do = tl.load(DO + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM
                 + off_n[None, :]).to(tl.float32)
    delta = tl.sum(o * do, axis=1)
    tl.store(Delta + off_hz * N_CTX + off_m, delta)


@triton.jit
def _tut_bwd_dkdv(dk, dv, Q, k, v, sm_scale, DO, M, D, stride_tok, stride_d, H, N_CTX,
                  BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr, HEAD_DIM: tl.constexpr,
                  start_n, start_m, num_steps, MASK: tl.constexpr):
    # dK and dV of one key block, accumulated over num_steps query blocks from start_m. Works on
    # the transposed scores (keys along rows), so that P^T and dS^T come out directly.
    offs_m = start_m + tl.arange(0, BLOCK_M1)
    offs_n = start_n + tl.arange(0, BLOCK_N1)
    offs_k = tl.arange(0, HEAD_DIM)
    qT_ptrs = Q + offs_m[None, :] * stride_tok + offs_k[:, None] * stride_d
    do_ptrs = DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    tl.static_assert(BLOCK_N1 % BLOCK_M1 == 0)
    curr_m = start_m
    step_m = BLOCK_M1
    for _ in range(num_steps):
        qT = tl.load(qT_ptrs)
        # The row statistics first, ahead of the product that needs them.
        offs_m = curr_m + tl.arange(0, BLOCK_M1)
        m = tl.load(M + offs_m)
        qkT = tl.dot(k, qT)  # k was pre-scaled by sm_scale / ln 2 on the host
        pT = tl.math.exp2(qkT - m[None, :])
        if MASK:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        do = tl.load(do_ptrs)
        dv += tl.dot(pT.to(do.dtype), do)
        Di = tl.load(D + offs_m)
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = pT * (dpT - Di[None, :])
        dk += tl.dot(dsT.to(qT.dtype), tl.trans(qT))
        curr_m += step_m
        qT_ptrs += step_m * stride_tok
        do_ptrs += step_m * stride_tok
    return dk, dv


@triton.jit
def _tut_bwd_dq(dq, q, K, V, do, m, D, stride_tok, stride_d, H, N_CTX, BLOCK_M2: tl.constexpr,
                BLOCK_N2: tl.constexpr, HEAD_DIM: tl.constexpr, start_m, start_n, num_steps,
                MASK: tl.constexpr):
    # dQ of one query block, accumulated over num_steps key blocks from start_n.
    offs_m = start_m + tl.arange(0, BLOCK_M2)
    offs_n = start_n + tl.arange(0, BLOCK_N2)
    offs_k = tl.arange(0, HEAD_DIM)
    kT_ptrs = K + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    vT_ptrs = V + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    Di = tl.load(D + offs_m)
    tl.static_assert(BLOCK_M2 % BLOCK_N2 == 0)
    curr_n = start_n
    step_n = BLOCK_N2
    for _ in range(num_steps):
        kT = tl.load(kT_ptrs)
        vT = tl.load(vT_ptrs)
        qk = tl.dot(q, kT)
        p = tl.math.exp2(qk - m)
        if MASK:
            offs_n = curr_n + tl.arange(0, BLOCK_N2)
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        dp = tl.dot(do, vT).to(tl.float32)
        ds = p * (dp - Di[:, None])
        # kT carries sm_scale / ln 2: dQ is multiplied by ln 2 at the end.
        dq += tl.dot(ds.to(kT.dtype), tl.trans(kT))
        curr_n += step_n
        kT_ptrs += step_n * stride_tok
        vT_ptrs += step_n * stride_tok
    return dq


@triton.jit
def tut_attn_bwd(Q, K, V, sm_scale, DO, DQ, DK, DV, M, D, stride_z, stride_h, stride_tok,
                 stride_d, H, N_CTX, BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr,
                 BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr,
                 BLK_SLICE_FACTOR: tl.constexpr, HEAD_DIM: tl.constexpr,
                 CAUSAL: tl.constexpr):
    # Program (block, 1, batch * head): dK and dV of key block `pid` (BLOCK_N1 keys), then dQ of
    # query block `pid` (BLOCK_M2 queries). Causal: the diagonal blocks are done first in slices
    # of BLOCK / BLK_SLICE_FACTOR with the mask, the rest without.
    LN2: tl.constexpr = 0.6931471824645996
    bhid = tl.program_id(2)
    off_chz = (bhid * N_CTX).to(tl.int64)
    adj = (stride_h * (bhid % H) + stride_z * (bhid // H)).to(tl.int64)
    pid = tl.program_id(0)
    Q += adj
    K += adj
    V += adj
    DO += adj
    DQ += adj
    DK += adj
    DV += adj
    M += off_chz
    D += off_chz
    offs_k = tl.arange(0, HEAD_DIM)

    start_n = pid * BLOCK_N1
    start_m = 0
    MASK_BLOCK_M1: tl.constexpr = BLOCK_M1 // BLK_SLICE_FACTOR
    offs_n = start_n + tl.arange(0, BLOCK_N1)
    dv = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    dk = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    k = tl.load(K + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    v = tl.load(V + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    if CAUSAL:
        start_m = start_n
        num_steps = BLOCK_N1 // MASK_BLOCK_M1
        dk, dv = _tut_bwd_dkdv(dk, dv, Q, k, v, sm_scale, DO, M, D, stride_tok, stride_d, H,
                               N_CTX, MASK_BLOCK_M1, BLOCK_N1, HEAD_DIM, start_n, start_m,
                               num_steps, MASK=True)
        start_m += num_steps * MASK_BLOCK_M1
    num_steps = (N_CTX - start_m) // BLOCK_M1
    dk, dv = _tut_bwd_dkdv(dk, dv, Q, k, v, sm_scale, DO, M, D, stride_tok, stride_d, H, N_CTX,
                           BLOCK_M1, BLOCK_N1, HEAD_DIM, start_n, start_m, num_steps,
                           MASK=False)
    tl.store(DV + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d, dv)
    dk *= sm_scale
    tl.store(DK + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d, dk)

    start_m = pid * BLOCK_M2
    start_n = 0
    num_steps = N_CTX // BLOCK_N2
    MASK_BLOCK_N2: tl.constexpr = BLOCK_N2 // BLK_SLICE_FACTOR
    offs_m = start_m + tl.arange(0, BLOCK_M2)
    q = tl.load(Q + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)
    dq = tl.zeros([BLOCK_M2, HEAD_DIM], dtype=tl.float32)
    do = tl.load(DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)
    m = tl.load(M + offs_m)
    m = m[:, None]
    if CAUSAL:
        # The diagonal block, right to left in masked slices, then everything left of it.
        end_n = start_m + BLOCK_M2
        num_steps = BLOCK_M2 // MASK_BLOCK_N2
        dq = _tut_bwd_dq(dq, q, K, V, do, m, D, stride_tok, stride_d, H, N_CTX, BLOCK_M2,
                         MASK_BLOCK_N2, HEAD_DIM, start_m, end_n - num_steps * MASK_BLOCK_N2,
                         num_steps, MASK=True)
        end_n -= num_steps * MASK_BLOCK_N2
        num_steps = end_n // BLOCK_N2
        start_n = end_n - num_steps * BLOCK_N2
    dq = _tut_bwd_dq(dq, q, K, V, do, m, D, stride_tok, stride_d, H, N_CTX, BLOCK_M2, BLOCK_N2,
                     HEAD_DIM, start_m, start_n, num_steps, MASK=False)
    dq *= LN2
    tl.store(DQ + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d, dq)


def tutorial_backward(q, k, v, o, M, do, causal, sm_scale):
    """The tutorial's `_attention.backward`: returns (dq, dk, dv)."""
    assert do.is_contiguous()
    assert q.stride() == k.stride() == v.stride() == o.stride() == do.stride()
    dq = torch.empty_like(q)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    batch, n_head, n_ctx = q.shape[:3]
    pre_block = 128
    num_warps, num_stages = 4, 5
    block_m1, block_n1, block_m2, block_n2 = 32, 128, 128, 32
    blk_slice_factor = 2
    rcp_ln2 = 1.4426950408889634
    arg_k = k * (sm_scale * rcp_ln2)
    assert n_ctx % pre_block == 0
    delta = torch.empty_like(M)
    tut_attn_bwd_preprocess[(n_ctx // pre_block, batch * n_head)](
        o, do, delta, batch, n_head, n_ctx, BLOCK_M=pre_block, HEAD_DIM=q.shape[-1])
    tut_attn_bwd[(n_ctx // block_n1, 1, batch * n_head)](
        q, arg_k, v, sm_scale, do, dq, dk, dv, M, delta, q.stride(0), q.stride(1), q.stride(2),
        q.stride(3), n_head, n_ctx, BLOCK_M1=block_m1, BLOCK_N1=block_n1, BLOCK_M2=block_m2,
        BLOCK_N2=block_n2, BLK_SLICE_FACTOR=blk_slice_factor, HEAD_DIM=q.shape[-1],
        num_warps=num_warps, num_stages=num_stages, CAUSAL=causal)
    return dq, dk, dv


def tutorial_refusal(s):
    if s % TUTORIAL_WHOLE_BLOCK:
        return (f"the tutorial handles whole blocks only: N_CTX {s} is not a multiple of "
                f"{TUTORIAL_WHOLE_BLOCK} (its backward asserts it; its forward would read the "
                "next head's rows)")
    return None


# ----------------------------------------------------------------------------------------------
# float64 reference
# ----------------------------------------------------------------------------------------------


def ref_head(q, k, v, scale, causal=False, window=None, score=None, do=None, chunk=1024):
    """float64 attention of one head, q [Sq, D], k and v [Sk, D]; query i sees key j when
    (not causal or j <= i) and (no window or i - L <= j <= i + R); `score(s, rows, cols)`
    modifies the scaled scores (float64 [rows, cols]). Returns o, or (o, dq, dk, dv) when the
    output gradient `do` is given. Chunks of `chunk` query rows bound the memory."""
    q, k, v = q.double(), k.double(), v.double()
    sq, sk = q.shape[0], k.shape[0]
    cols = torch.arange(sk, device=q.device)
    o = torch.empty_like(q)
    if do is not None:
        do = do.double()
        dq = torch.empty_like(q)
        dk = torch.zeros_like(k)
        dv = torch.zeros_like(v)
    for r0 in range(0, sq, chunk):
        r1 = min(sq, r0 + chunk)
        rows = torch.arange(r0, r1, device=q.device)
        s = (q[r0:r1] @ k.T) * scale
        if score is not None:
            s = score(s, rows, cols)
        hide = torch.zeros_like(s, dtype=torch.bool)
        if causal:
            hide |= cols[None, :] > rows[:, None]
        if window is not None:
            left, right = window
            hide |= (cols[None, :] < rows[:, None] - left) | (cols[None, :] > rows[:, None] + right)
        s = s.masked_fill(hide, -math.inf)
        p = torch.softmax(s, dim=-1)
        o[r0:r1] = p @ v
        if do is not None:
            dp = do[r0:r1] @ v.T
            delta = (p * dp).sum(-1, keepdim=True)
            ds = p * (dp - delta)
            dq[r0:r1] = (ds @ k) * scale
            dk += (ds.T @ q[r0:r1]) * scale
            dv += p.T @ do[r0:r1]
        del s, p, hide
    if do is None:
        return o
    return o, dq, dk, dv


# ----------------------------------------------------------------------------------------------
# Running a case: checks, refusals, timeouts, timing
# ----------------------------------------------------------------------------------------------


class Refused(Exception):
    """An implementation that cannot run the case (a backend's refusal, or a documented limit)."""


class RowTimeout(Exception):
    pass


class Impl:
    """One implementation of a case. fn() launches it and returns its raw outputs; view(outs)
    gives the tensors compared with the case's references (defaults to outs); refuse: a reason
    it cannot run the case (reported, never run); refs/tols: its own references."""

    def __init__(self, name, ops, fn=None, view=None, source="pytorch", refuse=None, refs=None,
                 config=None, setup=None):
        self.name, self.ops, self.fn, self.view = name, ops, fn, view
        self.source, self.refuse, self.refs, self.config = source, refuse, refs, config
        self.setup = setup  # run once before the check (inside the timeout): compiles, forwards


class Guard:
    """Per-implementation time limit (SIGALRM between Python steps) and the family deadline."""

    def __init__(self, row_timeout, deadline):
        self.row_timeout = row_timeout
        self.deadline = deadline  # time.monotonic() value or None
        self.t0 = None
        self.use_signal = hasattr(signal, "setitimer")

    def start(self):
        self.t0 = time.monotonic()

    def left(self):
        ends = [self.t0 + self.row_timeout]
        if self.deadline is not None:
            ends.append(self.deadline)
        return min(ends) - time.monotonic()

    def why(self):
        if self.deadline is not None and self.deadline < self.t0 + self.row_timeout:
            return "timeout: past the family's --attn-deadline"
        return f"timeout: over {self.row_timeout:g} s for this implementation (--attn-row-timeout)"

    def call(self, fn):
        left = self.left()
        if left <= 0:
            raise RowTimeout(self.why())
        if not self.use_signal:
            return fn()

        def alarm(signum, frame):
            raise RowTimeout(self.why() + " (interrupted)")

        old = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, left)
        try:
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def _refusal_text(e, caught):
    reasons = [str(w.message).strip().replace("\n", " ") for w in caught]
    reasons = [r for r in reasons if r]
    text = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    if reasons:
        text += " | " + " | ".join(dict.fromkeys(reasons))
    return text[:1500]


def _is_backend_refusal(e):
    msg = str(e)
    return isinstance(e, RuntimeError) and ("No available kernel" in msg
                                            or "No viable backend" in msg)


def _poison(out_bytes):
    """Fill, then free, blocks of the outputs' byte sizes with all-ones bytes (NaN in f16, bf16
    and f32), so that fresh outputs likely start as NaN (best effort, see the docstring)."""
    if not ON_GPU:
        return
    for n in out_bytes:
        t = torch.full((int(n),), 255, dtype=torch.uint8, device=_B.DEV)
        del t


def _time_graph(fn, view, refs, tols, names, guard):
    """fn captured in a CUDA graph: the graph's outputs checked, then the replays timed."""
    B = _B
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
    g.replay()
    torch.cuda.synchronize()
    check = B.compare(view(outs), refs, tols, names)
    ms, batch, samples = B.TIMER.time(lambda: guard.call(g.replay), min_batch=B.GRAPH_REPLAYS)
    del g, outs
    return ms, batch, samples, check


def run_case(variant, shape, dtype, nbytes, flops, impls, refs, tols, names, timed, out_bytes):
    """Checks each implementation against `refs` (its own `refs` if it has them), then times it if
    `timed` and the check passed; refusals, timeouts and errors become rows saying so. out_bytes:
    the byte sizes of the outputs (for the NaN poisoning)."""
    B = _B
    label = f"{NAME}/{variant} {B.shape_str(shape)} {dtype}"
    only = [s for s in B.ARGS.attn_impls.split(",") if s]
    plain = {}
    kept = []
    for im in impls:
        if only and im.name not in only:
            continue
        base = {"kernel": NAME, "variant": variant, "shape": list(shape), "dtype": dtype,
                "impl": im.name, "source": im.source, "ops": im.ops, "bytes": nbytes,
                "graph": False}
        if flops:
            base["flops"] = flops
        out_list = B.ROWS if timed else B.CHECKS
        empty = dict(ms=None, gbps=None, pct_copy=None, max_err=None, rel_err=None, ok=False)
        if im.refuse:
            print(f"check {label:<52} {im.name:<22}: refused ({im.refuse[:160]})")
            out_list.append(dict(base, **empty, refused=True, error=f"refused: {im.refuse}"))
            continue
        if _past_deadline():
            msg = "deadline: the family's --attn-deadline passed before this ran"
            print(f"check {label:<52} {im.name:<22}: not run ({msg})")
            B.FAILURES.append(f"{label} {im.name}: {msg}")
            out_list.append(dict(base, **empty, error=msg))
            continue
        guard = Guard(B.ARGS.attn_row_timeout, DEADLINE)
        guard.start()
        c_refs = im.refs if im.refs is not None else refs
        view = im.view or (lambda outs: outs)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    if im.setup:
                        guard.call(im.setup)
                    _poison(out_bytes)
                    outs = guard.call(im.fn)
                    B.sync()
                except RuntimeError as e:
                    if _is_backend_refusal(e):
                        raise Refused(_refusal_text(e, caught)) from None
                    raise
            ok, rel, max_abs, detail = B.compare(view(outs), c_refs, tols, names)
            del outs
            if im.config:
                base["config"] = im.config()
        except Refused as e:
            print(f"check {label:<52} {im.name:<22}: refused ({str(e)[:200]})")
            out_list.append(dict(base, **empty, refused=True, error=f"refused: {e}"))
            continue
        except Exception as e:  # one broken implementation must not hide the others
            if not isinstance(e, RowTimeout):
                traceback.print_exc()
            print(f"check {label:<52} {im.name:<22}: raised {type(e).__name__}: {e} -> FAILED")
            B.FAILURES.append(f"{label} {im.name}: {type(e).__name__}: {e}")
            out_list.append(dict(base, **empty, error=f"{type(e).__name__}: {e}"))
            B.sync()
            continue
        worst = ", ".join(f"{d['output']} rel {d['rel_l2']:.2e} (tol {d['tol']:.0e})"
                          for d in detail)
        print(f"check {label:<52} {im.name:<22}: {worst}, max abs {max_abs:.2e} -> "
              f"{'ok' if ok else 'FAILED (not timed)'}")
        check = dict(base, max_err=max_abs, rel_err=rel, ok=ok, errors=detail)
        if not ok:
            B.FAILURES.append(f"{label} {im.name}: {worst}")
            out_list.append(dict(check, ms=None, gbps=None, pct_copy=None))
            continue
        if not timed:
            out_list.append(check)
            continue
        try:
            ms, batch, samples = B.TIMER.time(lambda: guard.call(im.fn))
        except Exception as e:
            if not isinstance(e, RowTimeout):
                traceback.print_exc()
            B.FAILURES.append(f"{label} {im.name} timing: {type(e).__name__}: {e}")
            B.ROWS.append(dict(check, ms=None, gbps=None, pct_copy=None, ok=False,
                               error=f"{type(e).__name__}: {e}"))
            B.sync()
            continue
        plain[im.name] = ms
        kept.append(im)
        row = dict(check, batch=batch, samples=samples, **B.rate(ms, nbytes, flops))
        tf = f", {row['tflops']:.1f} TFLOP/s" if flops else ""
        print(f"time  {label:<52} {im.name:<22}: {ms:.4f} ms, {row['gbps']:.0f} GB/s{tf}")
        B.ROWS.append(row)
    if not (timed and ON_GPU and plain):
        return
    # CUDA graphs where launch-bound, as baseline.py; not in --quick (its small shapes are all
    # launch-bound, and a smoke test need not capture every implementation) unless --graph-all.
    if not (B.ARGS.graph_all or (min(plain.values()) < B.GRAPH_BELOW_MS and not B.ARGS.quick)):
        return
    for im in kept:
        base = {"kernel": NAME, "variant": variant, "shape": list(shape), "dtype": dtype,
                "impl": im.name, "source": im.source, "ops": im.ops, "bytes": nbytes,
                "graph": True}
        if flops:
            base["flops"] = flops
        guard = Guard(B.ARGS.attn_row_timeout, DEADLINE)
        guard.start()
        try:
            ms, batch, samples, (ok, rel, max_abs, detail) = _time_graph(
                im.fn, im.view or (lambda outs: outs), im.refs if im.refs is not None else refs,
                tols, names, guard)
        except Exception as e:
            traceback.print_exc()
            B.FAILURES.append(f"{label} {im.name} CUDA graph: {type(e).__name__}: {e}")
            B.ROWS.append(dict(base, ms=None, gbps=None, pct_copy=None, max_err=None,
                               rel_err=None, ok=False, error=f"{type(e).__name__}: {e}"))
            B.sync()
            continue
        print(f"time  {label:<52} {im.name + ' graph':<22}: {ms:.4f} ms, rel {rel:.2e} -> "
              f"{'ok' if ok else 'FAILED'}")
        if not ok:
            B.FAILURES.append(f"{label} {im.name} CUDA graph: rel {rel:.2e}")
        B.ROWS.append(dict(base, max_err=max_abs, rel_err=rel, ok=ok, errors=detail, batch=batch,
                           samples=samples, **B.rate(ms, nbytes, flops)))


DEADLINE = None


def _past_deadline():
    return DEADLINE is not None and time.monotonic() > DEADLINE


# ----------------------------------------------------------------------------------------------
# Implementations
# ----------------------------------------------------------------------------------------------


_FLEX = None


def flex():
    """flex_attention compiled as its documentation says (eager on the CPU smoke test)."""
    global _FLEX
    if _FLEX is None:
        from torch.nn.attention.flex_attention import flex_attention
        if ON_GPU:
            import torch._dynamo.config as dcfg
            # Every case is a new shape: recompiles are expected, never a fallback to eager.
            dcfg.recompile_limit = max(dcfg.recompile_limit, 4096)
            dcfg.accumulated_recompile_limit = max(dcfg.accumulated_recompile_limit, 1 << 16)
            _FLEX = torch.compile(flex_attention, dynamic=False)
        else:
            _FLEX = flex_attention
    return _FLEX


def block_mask(mask_mod, b, h, q_len, kv_len):
    from torch.nn.attention.flex_attention import create_block_mask
    return create_block_mask(mask_mod, b, h, q_len, kv_len, device=_B.DEV, _compile=ON_GPU)


def causal_mod(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sdpa_impls(call, what):
    """(name, ops, fn, refuse) per SDPA backend; fn() runs call() under the pinned backend and
    returns its outputs. On the CPU smoke test only FLASH_ATTENTION (PyTorch's CPU flash kernel)
    exists; the CUDA-only backends are reported refused without trying them."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = []
    for name, backend in SDPA_BACKENDS:
        def fn(backend=getattr(SDPBackend, backend)):
            with sdpa_kernel(backend):
                return call()
        refuse = None
        if not ON_GPU and backend != "FLASH_ATTENTION":
            refuse = f"CPU smoke test: {backend} is a CUDA-only backend"
        out.append((name, f"F.scaled_dot_product_attention ({what}) under "
                          f"sdpa_kernel({backend})", fn, refuse))
    return out


def _slices(b, h):
    """The (batch, head) slices a case checks: all of them on small shapes, else two."""
    if b * h <= 8:
        return [(i, j) for i in range(b) for j in range(h)]
    return [(0, 0), (b - 1, h - 1)]


def _bhsd_view(slices):
    def view(outs):
        return tuple(torch.stack([o[i, j] for i, j in slices]) for o in outs)
    return view


def _rand(seed):
    g = torch.Generator(device=_B.DEV)
    g.manual_seed(seed)
    return g


def _randn(shape, dtype, g):
    return torch.randn(shape, generator=g, device=_B.DEV, dtype=torch.float32).to(dtype)


def _case_seed(*parts):
    """A seed from a case's numbers (deterministic across runs, unlike hash())."""
    seed = 17
    for p in parts:
        seed = (seed * 1000003 + int(p)) % (1 << 31)
    return seed


def _fwd_flops(b, h, s, d, causal):
    f = 4.0 * b * h * s * s * d
    return f * 0.5 if causal else f


# ---------------------------------------------------------------------------------------------
# fwd / bwd / gqa
# ---------------------------------------------------------------------------------------------


def case_dense(b, hq, hkv, s, d, dtype, causal, backward, timed):
    """fwd, bwd (hq == hkv) and gqa_fwd cases."""
    B = _B
    dt = TORCH_DTYPES[dtype]
    scale = 1.0 / math.sqrt(d)
    gqa = hq != hkv
    g = _rand(_case_seed(b, hq, hkv, s, d, dtype == "bf16", causal, backward))
    q = _randn((b, hq, s, d), dt, g)
    k = _randn((b, hkv, s, d), dt, g)
    v = _randn((b, hkv, s, d), dt, g)
    do = _randn((b, hq, s, d), dt, g) if backward else None
    slices = _slices(b, hq)
    group = hq // hkv
    refs = [[], [], [], []]
    for i, j in slices:
        r = ref_head(q[i, j], k[i, j // group], v[i, j // group], scale, causal=causal,
                     do=None if do is None else do[i, j])
        if backward:
            for n in range(4):
                refs[n].append(r[n])
        else:
            refs[0].append(r)
    if backward:
        refs = tuple(torch.stack(r) for r in refs[1:])
        names, tols = ("dq", "dk", "dv"), (TOL_BWD[dtype],) * 3
        variant = "bwd_causal" if causal else "bwd"
        shape = [b, hq, s, d]
        nbytes = 8.0 * b * hq * s * d * q.element_size()
        flops = 2.5 * _fwd_flops(b, hq, s, d, causal)
    else:
        refs = (torch.stack(refs[0]),)
        names, tols = ("o",), (TOL_FWD[dtype],)
        variant = ("gqa_fwd" if gqa else "fwd") + ("_causal" if causal else "")
        shape = [b, hq, hkv, s, d] if gqa else [b, hq, s, d]
        nbytes = (2.0 * b * hq * s * d + 2.0 * b * hkv * s * d) * q.element_size()
        flops = _fwd_flops(b, hq, s, d, causal)
    view = _bhsd_view(slices)
    impls = []
    extra = {"enable_gqa": True} if gqa else {}

    # SDPA backends.
    if backward:
        state = {}
        for name, ops, fn, refuse in sdpa_impls(
                lambda: F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, scale=scale,
                                                       **extra),
                "backward: autograd.grad of one forward, retain_graph"):
            def setup(fn=fn, name=name):
                state[name] = fn()

            def run(name=name):
                return torch.autograd.grad(state[name], (qg, kg, vg), do, retain_graph=True)
            impls.append(Impl(name, ops, run, view, setup=setup, refuse=refuse))
    else:
        for name, ops, fn, refuse in sdpa_impls(
                lambda: (F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                                        **extra),),
                "enable_gqa" if gqa else "forward"):
            impls.append(Impl(name, ops, fn, view, refuse=refuse))

    # FlexAttention.
    bm_holder = {}

    def flex_setup():
        if causal:
            bm_holder["bm"] = block_mask(causal_mod, None, None, s, s)

    def flex_fwd(qq, kk, vv):
        return flex()(qq, kk, vv, block_mask=bm_holder.get("bm"), scale=scale, enable_gqa=gqa)

    flex_ops = ("torch.compile(flex_attention)" + (", causal block mask" if causal else "")
                + (", enable_gqa" if gqa else ""))
    if backward:
        fstate = {}

        def fsetup():
            flex_setup()
            fstate["o"] = flex_fwd(qg, kg, vg)

        impls.append(Impl("flex", flex_ops + "; backward: autograd.grad, retain_graph",
                          lambda: torch.autograd.grad(fstate["o"], (qg, kg, vg), do,
                                                      retain_graph=True),
                          view, setup=fsetup,
                          refuse=None if ON_GPU else "CPU smoke test: FlexAttention has no "
                          "backward on the CPU"))
    else:
        impls.append(Impl("flex", flex_ops, lambda: (flex_fwd(q, k, v),), view,
                          setup=flex_setup))

    # Triton's tutorial.
    refuse = tutorial_refusal(s)
    if gqa:
        refuse = "the tutorial has no grouped-query attention (Hq must equal Hkv)"
    if backward:
        tstate = {}

        def tsetup():
            precompile_tutorial_fwd(q, k, v, causal, scale)
            tstate["o"], tstate["M"] = tutorial_forward(q, k, v, causal, scale)

        impls.append(Impl(
            "triton", "tutorial backward: _attn_bwd_preprocess + _attn_bwd (BLOCK_M1 32, "
            "BLOCK_N1 128, BLOCK_M2 128, BLOCK_N2 32, 4 warps, 5 stages) after its forward",
            lambda: tutorial_backward(q, k, v, tstate["o"], tstate["M"], do, causal, scale),
            view, source="triton-tutorial", refuse=refuse, setup=tsetup))
    else:
        impls.append(Impl(
            "triton", "tutorial _attn_fwd (host TensorDescriptors), autotuned over its configs",
            lambda: (tutorial_forward(q, k, v, causal, scale)[0],), view,
            source="triton-tutorial", refuse=refuse,
            setup=lambda: precompile_tutorial_fwd(q, k, v, causal, scale),
            config=B.best_config(tut_attn_fwd)))

    if backward:
        qg = q.detach().requires_grad_()
        kg = k.detach().requires_grad_()
        vg = v.detach().requires_grad_()
    out_bytes = [t.numel() * t.element_size() for t in ((q, k, v) if backward else (q,))]
    run_case(variant, shape, dtype, nbytes, flops, impls, refs, tols, names, timed, out_bytes)
    if backward:
        state.clear()
        fstate.clear()
        tstate.clear()
        del qg, kg, vg
    del q, k, v, do, refs
    _free()


def case_dropout(b, h, s, d, dtype, causal, backward, timed):
    """The dropout part's cases (see the module's docstring): SDPA with dropout_p = DROP_P on
    Q = K = 0 and V = the identity on the first D keys (zero after), checked through what those
    inputs make of any mask."""
    B = _B
    dt = TORCH_DTYPES[dtype]
    p = DROP_P
    scale = 1.0 / math.sqrt(d)
    q = torch.zeros((b, h, s, d), device=B.DEV, dtype=dt)
    k = torch.zeros((b, h, s, d), device=B.DEV, dtype=dt)
    v = torch.zeros((b, h, s, d), device=B.DEV, dtype=dt)
    v[:, :, :d] = torch.eye(d, device=B.DEV, dtype=dt)
    g = _rand(_case_seed(b, h, s, d, dtype == "bf16", causal, backward, 7))
    do = _randn((b, h, s, d), dt, g) if backward else None
    rows = torch.arange(s, device=B.DEV, dtype=torch.float64)
    keys = rows + 1.0 if causal else torch.full_like(rows, float(s))  # keys row i sees
    observed = torch.clamp(keys, max=float(d))  # of them, those with a one-hot value
    total = float(observed.sum()) * b * h
    # The kept share's tolerance: six standard deviations of a binomial share over the case,
    # plus 1/256 (FlashAttention-2 compares 8-bit random numbers with p rounded to 1/256).
    share_tol = (6.0 * math.sqrt(p * (1.0 - p) / total) + 1.0 / 256.0) / (1.0 - p)

    def forward_checks(o):
        # O[i, c] (1 - p) keys_i is 1 where key c < D was kept, 0 where it was dropped.
        kept = o.double() * (keys * (1.0 - p)).view(1, 1, s, 1)
        frac = (kept - kept.round()).abs().max()
        share = kept.round().sum() / total
        return frac.reshape(1), share.reshape(1)

    variant = ("fwd_causal" if causal else "fwd") + "_dropout"
    flops = _fwd_flops(b, h, s, d, causal)
    nbytes = 4.0 * b * h * s * d * q.element_size()
    names, tols = ("frac", "kept"), (0.25, share_tol)
    refs = (torch.zeros(1, dtype=torch.float64, device=B.DEV),
            torch.full((1,), 1.0 - p, dtype=torch.float64, device=B.DEV))
    impls = []
    what = f"dropout_p={p}"
    call = lambda: F.scaled_dot_product_attention(q_in, k_in, v_in, dropout_p=p,  # noqa: E731
                                                   is_causal=causal, scale=scale)
    if backward:
        variant = ("bwd_causal" if causal else "bwd") + "_dropout"
        flops = 2.5 * flops
        nbytes = 8.0 * b * h * s * d * q.element_size()
        state = {}
        q_in = q.detach().requires_grad_()
        k_in = k.detach().requires_grad_()
        v_in = v.detach().requires_grad_()

        def bwd_view(name):
            def view(outs):
                dq, dk, dv = outs
                o = state[name].detach().double()
                frac, share = forward_checks(state[name].detach())
                # dV of key c < D is sum_i P_ic z_ic dO_i / (1 - p) = sum_i O_ic dO_i.
                want = torch.einsum("bhic,bhie->bhce", o, do.double())
                got = dv[:, :, :d].double()
                rel = torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)
                return (frac, share, dq.double().abs().max().reshape(1),
                        dk.double().abs().max().reshape(1), rel.reshape(1))
            return view

        names = names + ("dq", "dk", "dv")
        tols = tols + (1e-6, 1e-6, TOL_BWD[dtype])
        zero = torch.zeros(1, dtype=torch.float64, device=B.DEV)
        refs = refs + (zero, zero, zero)
        for name, ops, fn, refuse in sdpa_impls(call, f"{what}; backward: autograd.grad of one "
                                                      "forward, retain_graph"):
            def setup(fn=fn, name=name):
                state[name] = fn()

            def run(name=name):
                return torch.autograd.grad(state[name], (q_in, k_in, v_in), do,
                                           retain_graph=True)
            impls.append(Impl(name, ops, run, bwd_view(name), setup=setup, refuse=refuse))
    else:
        q_in, k_in, v_in = q, k, v
        for name, ops, fn, refuse in sdpa_impls(call, what):
            impls.append(Impl(name, ops, lambda fn=fn: (fn(),), lambda outs: forward_checks(outs[0]),
                              refuse=refuse))
    out_bytes = [t.numel() * t.element_size() for t in ((q, k, v) if backward else (q,))]
    run_case(variant, [b, h, s, d], dtype, nbytes, flops, impls, refs, tols, names, timed,
             out_bytes)
    if backward:
        state.clear()
    del q, k, v, do
    _free()


def _free():
    if ON_GPU:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------
# varlen
# ---------------------------------------------------------------------------------------------


def varlen_lengths(n, max_len, seed):
    """Sequence lengths 1..max_len from splitmix64 (the key format in the docstring)."""
    mask = (1 << 64) - 1
    state = seed & mask
    out = []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out.append(1 + z % max_len)
    return out


def case_varlen(n, max_len, h, d, dtype, causal, timed):
    B = _B
    dt = TORCH_DTYPES[dtype]
    scale = 1.0 / math.sqrt(d)
    lengths = varlen_lengths(n, max_len, VARLEN_SEED)
    total = sum(lengths)
    cu = [0]
    for L in lengths:
        cu.append(cu[-1] + L)
    cu_seqlens = torch.tensor(cu, dtype=torch.int32, device=B.DEV)
    g = _rand(_case_seed(n, max_len, h, d, causal, 7))
    q = _randn((total, h, d), dt, g)
    k = _randn((total, h, d), dt, g)
    v = _randn((total, h, d), dt, g)
    heads = sorted({0, h - 1})
    ref = torch.empty((total, len(heads), d), dtype=torch.float64, device=B.DEV)
    for i in range(n):
        a, e = cu[i], cu[i + 1]
        for jj, j in enumerate(heads):
            ref[a:e, jj] = ref_head(q[a:e, j], k[a:e, j], v[a:e, j], scale, causal=causal)
    refs, names, tols = (ref,), ("o",), (TOL_FWD[dtype],)
    variant = "varlen_fwd_causal" if causal else "varlen_fwd"
    shape = [n, h, total, d]
    nbytes = 4.0 * total * h * d * q.element_size()
    flops = sum(_fwd_flops(1, h, L, d, causal) for L in lengths)

    def packed_view(outs):
        return (outs[0][:, heads],)

    impls = []
    # SDPA on nested (jagged) tensors: [n, j, H, D] transposed to [n, H, j, D].
    offsets = cu_seqlens.to(torch.int64)

    def njt(t):
        nt = torch.nested.nested_tensor_from_jagged(t, offsets=offsets, min_seqlen=min(lengths),
                                                    max_seqlen=max(lengths))
        return nt.transpose(1, 2)

    nq, nk, nv = njt(q), njt(k), njt(v)
    for name, ops, fn, refuse in sdpa_impls(
            lambda: (F.scaled_dot_product_attention(nq, nk, nv, is_causal=causal, scale=scale),),
            "nested jagged tensors"):
        impls.append(Impl(name, ops, fn,
                          lambda outs: (outs[0].transpose(1, 2).values()[:, heads],),
                          refuse=refuse))
    # varlen_attn: FlashAttention-2's varlen kernel.
    try:
        from torch.nn.attention.varlen import varlen_attn
        vrefuse = None if ON_GPU else "varlen_attn runs on CUDA only"
    except ImportError:
        varlen_attn, vrefuse = None, "torch.nn.attention.varlen is not in this PyTorch"
    impls.append(Impl(
        "varlen_attn", "torch.nn.attention.varlen.varlen_attn (FlashAttention-2 varlen)"
        + (", window (-1, 0)" if causal else ""),
        lambda: (varlen_attn(q, k, v, cu_seqlens, cu_seqlens, max(lengths), max(lengths),
                             scale=scale, window_size=(-1, 0) if causal else (-1, -1)),),
        packed_view, refuse=vrefuse))
    # FlexAttention: document mask over the packed tokens, [1, H, total, D].
    doc = torch.repeat_interleave(torch.arange(n, device=B.DEV),
                                  torch.tensor(lengths, device=B.DEV))
    fq, fk, fv = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
    holder = {}

    def doc_mod(b, hh, q_idx, kv_idx):
        same = doc[q_idx] == doc[kv_idx]
        return (same & (q_idx >= kv_idx)) if causal else same

    def fsetup():
        holder["bm"] = block_mask(doc_mod, None, None, total, total)

    impls.append(Impl("flex", "torch.compile(flex_attention), document block mask over the "
                      "packed tokens" + (" and causal" if causal else ""),
                      lambda: (flex()(fq, fk, fv, block_mask=holder["bm"], scale=scale),),
                      lambda outs: (outs[0][0, heads].transpose(0, 1),), setup=fsetup))
    impls.append(Impl("triton", "tutorial", source="triton-tutorial",
                      refuse="the tutorial has no variable-length (cu_seqlens) form"))
    run_case(variant, shape, dtype, nbytes, flops, impls, refs, tols, names, timed,
             [q.numel() * q.element_size()])
    holder.clear()
    del q, k, v, nq, nk, nv, fq, fk, fv, ref, refs
    _free()


# ---------------------------------------------------------------------------------------------
# score modifiers
# ---------------------------------------------------------------------------------------------


def alibi_slopes(h):
    return [2.0 ** (-8.0 * (i + 1) / h) for i in range(h)]


def window_pairs(s, left, right):
    """(query, key) pairs a window keeps over a sequence of s."""
    return sum(min(s - 1, i + right) - max(0, i - left) + 1 for i in range(s))


def case_mod(mod, b, h, s, d, dtype, timed):
    B = _B
    dt = TORCH_DTYPES[dtype]
    scale = 1.0 / math.sqrt(d)
    g = _rand(_case_seed(b, h, s, d, len(mod), 11))
    q = _randn((b, h, s, d), dt, g)
    k = _randn((b, h, s, d), dt, g)
    v = _randn((b, h, s, d), dt, g)
    slices = _slices(b, h)
    view = _bhsd_view(slices)
    nbytes = 4.0 * b * h * s * d * q.element_size()
    flops = _fwd_flops(b, h, s, d, False)
    dev = B.DEV
    ar = torch.arange(s, device=dev)
    sdpa_mask, sdpa_refs, score64, window, score_mod, mask_mod = None, None, None, None, None, None
    if mod == "window":
        left, right = WINDOW
        variant = f"mod_window_l{left}_r{right}"
        window = WINDOW
        flops = 4.0 * b * h * d * window_pairs(s, left, right)

        def mask_mod(bb, hh, q_idx, kv_idx):
            return (q_idx - kv_idx <= left) & (kv_idx - q_idx <= right)

        sdpa_mask = ((ar[None, :] >= ar[:, None] - left)
                     & (ar[None, :] <= ar[:, None] + right))  # bool [S, S], True = attend
    elif mod == "alibi":
        variant = "mod_alibi"
        slopes = torch.tensor(alibi_slopes(h), dtype=torch.float32, device=dev)

        def score_mod(score, bb, hh, q_idx, kv_idx):
            return score + slopes[hh] * (kv_idx - q_idx)

        rel = (ar[None, :] - ar[:, None]).double()  # j - i
        sdpa_mask = (slopes.double()[:, None, None] * rel[None]).to(dt)[None]  # [1, H, S, S]

        def score64_for(j, rounded):
            if rounded:
                return lambda sc, rows, cols: sc + sdpa_mask[0, j][rows][:, cols].double()
            return lambda sc, rows, cols: sc + slopes[j].double() * (cols[None, :] - rows[:, None])
    elif mod == "softcap":
        variant = f"mod_softcap{SOFTCAP:g}"
        cap = SOFTCAP

        def score_mod(score, bb, hh, q_idx, kv_idx):
            return cap * torch.tanh(score / cap)

        def score64(sc, rows, cols):
            return cap * torch.tanh(sc / cap)
    elif mod == "bias":
        variant = "mod_bias"
        bias = (torch.rand((s, s), generator=g, device=dev) * 2.0 - 1.0).to(dt)
        nbytes += bias.numel() * bias.element_size()

        def score_mod(score, bb, hh, q_idx, kv_idx):
            return score + bias[q_idx, kv_idx]

        def score64(sc, rows, cols):
            return sc + bias[rows][:, cols].double()

        sdpa_mask = bias[None, None].expand(b, h, s, s)
    else:
        raise ValueError(mod)

    def reference(rounded=False):
        out = []
        for i, j in slices:
            sc = score64_for(j, rounded) if mod == "alibi" else score64
            out.append(ref_head(q[i, j], k[i, j], v[i, j], scale, window=window, score=sc))
        return (torch.stack(out),)

    refs = reference()
    if mod == "alibi":
        sdpa_refs = reference(rounded=True)
    names, tols = ("o",), (TOL_FWD[dtype],)
    impls = []
    if sdpa_mask is None:
        for name, _ in SDPA_BACKENDS:
            impls.append(Impl(name, "F.scaled_dot_product_attention",
                              refuse=f"SDPA cannot express the {variant} modifier "
                                     "(no score function; the cap is not an additive mask)"))
    else:
        what = {"window": "bool attn_mask [S, S]",
                "alibi": "additive attn_mask [1, H, S, S] in the input dtype",
                "bias": "additive attn_mask: the bias tile expanded to [B, H, S, S]"}[mod]
        for name, ops, fn, refuse in sdpa_impls(
                lambda: (F.scaled_dot_product_attention(q, k, v, attn_mask=sdpa_mask,
                                                        scale=scale),), what):
            impls.append(Impl(name, ops, fn, view, refs=sdpa_refs, refuse=refuse))
    if mod == "window":
        # FlashAttention-2's sliding window through varlen_attn: the batch as B packed sequences.
        try:
            from torch.nn.attention.varlen import varlen_attn
            vrefuse = None if ON_GPU else "varlen_attn runs on CUDA only"
        except ImportError:
            varlen_attn, vrefuse = None, "torch.nn.attention.varlen is not in this PyTorch"
        pq, pk, pv = (t.transpose(1, 2).reshape(b * s, h, d).contiguous() for t in (q, k, v))
        cu = torch.arange(0, (b + 1) * s, s, dtype=torch.int32, device=dev)

        def pview(outs):
            o = outs[0].view(b, s, h, d)
            return (torch.stack([o[i, :, j] for i, j in slices]),)

        impls.append(Impl("varlen_attn", f"torch.nn.attention.varlen.varlen_attn, window_size "
                          f"{WINDOW} (FlashAttention-2), inputs packed [B*S, H, D] beforehand",
                          lambda: (varlen_attn(pq, pk, pv, cu, cu, s, s, scale=scale,
                                               window_size=WINDOW),),
                          pview, refuse=vrefuse))
    holder = {}

    def fsetup():
        if mask_mod is not None:
            holder["bm"] = block_mask(mask_mod, None, None, s, s)

    impls.append(Impl("flex", "torch.compile(flex_attention), "
                      + ("block mask" if mask_mod is not None else "score_mod"),
                      lambda: (flex()(q, k, v, score_mod=score_mod, block_mask=holder.get("bm"),
                                      scale=scale),), view, setup=fsetup))
    impls.append(Impl("triton", "tutorial", source="triton-tutorial",
                      refuse="the tutorial has no score modifiers"))
    run_case(variant, [b, h, s, d], dtype, nbytes, flops, impls, refs, tols, names, timed,
             [q.numel() * q.element_size()])
    holder.clear()
    del q, k, v, refs, sdpa_mask, sdpa_refs
    _free()


# ---------------------------------------------------------------------------------------------
# decode
# ---------------------------------------------------------------------------------------------


def case_decode(batch, hq, hkv, ctx, d, dtype, timed):
    B = _B
    dt = TORCH_DTYPES[dtype]
    scale = 1.0 / math.sqrt(d)
    dev = B.DEV
    nblk = ctx // PAGE
    n_pages = batch * nblk
    g = _rand(_case_seed(batch, hq, hkv, ctx, d, 13))
    q = _randn((batch, hq, 1, d), dt, g)
    k_cache = _randn((n_pages, PAGE, hkv, d), dt, g)
    v_cache = _randn((n_pages, PAGE, hkv, d), dt, g)
    table = torch.randperm(n_pages, generator=g, device=dev).to(torch.int32).view(batch, nblk)
    table64 = table.to(torch.int64)

    def gather(cache):  # [B, Hkv, ctx, D] (a strided view of the gathered copy)
        return cache[table64].view(batch, ctx, hkv, d).transpose(1, 2)

    kc, vc = gather(k_cache).contiguous(), gather(v_cache).contiguous()
    group = hq // hkv
    seqs = sorted({0, batch - 1})
    ref = torch.stack([torch.stack([ref_head(q[i, j], kc[i, j // group], vc[i, j // group], scale)
                                    for j in range(hq)]) for i in seqs])  # [2, Hq, 1, D]
    refs, names, tols = (ref,), ("o",), (TOL_FWD[dtype],)
    variant = f"decode_paged{PAGE}"
    shape = [batch, hq, hkv, ctx, d]
    nbytes = (2.0 * batch * hkv * ctx * d + 2.0 * batch * hq * d) * q.element_size()

    def view(outs):
        return (outs[0][seqs],)

    impls = []
    for name, ops, fn, refuse in sdpa_impls(
            lambda: (F.scaled_dot_product_attention(q, kc, vc, scale=scale, enable_gqa=True),),
            "contiguous [B, Hkv, ctx, D] cache, no pages: a bound, enable_gqa"):
        impls.append(Impl(name, ops, fn, view, refuse=refuse))
    for name, ops, fn, refuse in sdpa_impls(
            lambda: (F.scaled_dot_product_attention(q, gather(k_cache), gather(v_cache),
                                                    scale=scale, enable_gqa=True),),
            "pages gathered by the block table into a contiguous cache first (timed), "
            "enable_gqa"):
        impls.append(Impl(name + "_gather", ops, fn, view, refuse=refuse))
    impls.append(Impl("flex", "torch.compile(flex_attention), contiguous cache, enable_gqa",
                      lambda: (flex()(q, kc, vc, scale=scale, enable_gqa=True),), view))
    # flex on the page pool: the block table is the BlockMask's (full) KV block list.
    holder = {}

    def paged_setup():
        from torch.nn.attention.flex_attention import BlockMask
        full_idx = table.view(batch, 1, 1, nblk).contiguous()
        holder["bm"] = BlockMask.from_kv_blocks(
            torch.zeros((batch, 1, 1), dtype=torch.int32, device=dev), torch.zeros_like(full_idx),
            torch.full((batch, 1, 1), nblk, dtype=torch.int32, device=dev), full_idx,
            BLOCK_SIZE=(128, PAGE), seq_lengths=(1, n_pages * PAGE), compute_q_blocks=False)
        holder["k"] = k_cache.view(1, n_pages * PAGE, hkv, d).transpose(1, 2)
        holder["v"] = v_cache.view(1, n_pages * PAGE, hkv, d).transpose(1, 2)

    impls.append(Impl(
        "flex_paged", f"torch.compile(flex_attention) on the page pool [1, Hkv, pages*{PAGE}, "
        "D] (vLLM layout viewed), BlockMask.from_kv_blocks(block table), enable_gqa",
        lambda: (flex()(q, holder["k"], holder["v"], block_mask=holder["bm"], scale=scale,
                        enable_gqa=True),), view, setup=paged_setup,
        refuse=None if ON_GPU else "CPU smoke test: eager flex_attention ignores the block "
        "indices (the paged layout needs the compiled kernel)"))
    impls.append(Impl("triton", "tutorial", source="triton-tutorial",
                      refuse="the tutorial has no decode form (one query against a cache; "
                             "its queries and keys have the same length)"))
    run_case(variant, shape, dtype, nbytes, None, impls, refs, tols, names, timed,
             [q.numel() * q.element_size()])
    holder.clear()
    del q, k_cache, v_cache, kc, vc, ref, refs, table, table64
    _free()


# ----------------------------------------------------------------------------------------------
# The family
# ----------------------------------------------------------------------------------------------


def warm_up():
    """Imports and a first FlexAttention call on a tiny input, outside any time limit: an alarm
    that lands inside a first import leaves a half-imported module behind and breaks every later
    call, so the per-implementation limits only start once these are done."""
    import torch._dynamo  # noqa: F401
    import torch._inductor  # noqa: F401
    import sympy  # noqa: F401
    from torch.nn.attention import sdpa_kernel  # noqa: F401
    from torch.nn.attention.flex_attention import create_block_mask  # noqa: F401
    t0 = time.time()
    x = torch.randn((1, 1, 128, 64), device=_B.DEV, dtype=torch.float16 if ON_GPU else torch.float32)
    try:
        flex()(x, x, x)
        block_mask(causal_mod, None, None, 128, 128)
        _B.sync()
    except Exception as e:  # reported by the cases themselves
        print(f"({NAME}: FlexAttention warm-up raised {type(e).__name__}: {e})")
    print(f"({NAME}: warm-up (imports, first FlexAttention compile) {time.time() - t0:.1f} s)")


def _guarded_case(what, fn, *args):
    """A case whose set-up raises is reported as a failure and the others still run."""
    if _past_deadline():
        _B.FAILURES.append(f"{NAME} {what}: not run, the family's --attn-deadline passed")
        print(f"({NAME} {what}: not run, past the deadline)")
        return
    try:
        fn(*args)
    except Exception as e:
        traceback.print_exc()
        _B.FAILURES.append(f"{NAME} {what}: {type(e).__name__}: {e}")
        _free()


def bench(B):
    """Every case of the parts asked for (`--attn-parts`), through `run_case`."""
    global _B, DEADLINE
    _B = B
    parts = [p for p in B.ARGS.attn_parts.split(",") if p] or PARTS
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        B.FAILURES.append(f"{NAME}: unknown --attn-parts {unknown}; known: {PARTS}")
        parts = [p for p in parts if p in PARTS]
    limit = B.ARGS.attn_deadline
    if limit is None and os.environ.get("BASELINE_TIMEOUT"):
        limit = float(os.environ["BASELINE_TIMEOUT"]) - 60.0
    if limit is not None:
        DEADLINE = B.T_START_MONO + limit
        print(f"({NAME}: deadline {limit:.0f} s after the run began; "
              f"{B.ARGS.attn_row_timeout:.0f} s per implementation)")
    only = [x for x in B.ARGS.attn_impls.split(",") if x]
    if not only or "flex" in only or "flex_paged" in only:
        warm_up()
    quick = B.ARGS.quick
    dtypes = [d for d in B.ARGS.attn_dtypes.split(",") if d] or DTYPE_ORDER
    for part in parts:
        if part in ("fwd", "bwd"):
            backward = part == "bwd"
            for b, h, s, d, dtype, causal in SMALL_FWD:
                _guarded_case(f"{part} small", case_dense, b, h, h, s, d, dtype, causal,
                              backward, quick)
            if quick:
                continue
            for dtype in [d for d in DTYPE_ORDER if d in dtypes]:
                for d in HEAD_DIMS:
                    for causal in (False, True):
                        for s in FWD_SEQS:
                            _guarded_case(f"{part} {s} {d} {dtype} {causal}", case_dense,
                                          FWD_BATCH, FWD_HEADS, FWD_HEADS, s, d, dtype, causal,
                                          backward, True)
        elif part == "gqa":
            for b, hq, hkv, s, d in SMALL_GQA:
                _guarded_case("gqa small", case_dense, b, hq, hkv, s, d, "bf16", False, False,
                              quick)
            if not quick:
                for b, hq, hkv, s, d in GQA_CASES:
                    _guarded_case(f"gqa {hkv}", case_dense, b, hq, hkv, s, d, "bf16", False,
                                  False, True)
        elif part == "varlen":
            n, mx, h, d = SMALL_VARLEN
            _guarded_case("varlen small", case_varlen, n, mx, h, d, "bf16", True, quick)
            if not quick:
                for causal in (False, True):
                    _guarded_case(f"varlen {causal}", case_varlen, VARLEN_SEQS, VARLEN_MAX,
                                  VARLEN_HEADS, VARLEN_DIM, "bf16", causal, True)
        elif part == "mods":
            for mod in ("window", "alibi", "softcap", "bias"):
                _guarded_case(f"mod {mod} small", case_mod, mod, *SMALL_MOD, "bf16", quick)
            if not quick:
                for mod in ("window", "alibi", "softcap", "bias"):
                    _guarded_case(f"mod {mod}", case_mod, mod, *MOD_SHAPE, "bf16", True)
        elif part == "dropout":
            b, h, s, d = SMALL_DROP
            for backward in (False, True):
                for causal in (False, True):
                    _guarded_case("dropout small", case_dropout, b, h, s, d, "bf16", causal,
                                  backward, quick)
            if not quick:
                for d in HEAD_DIMS:
                    for causal in (False, True):
                        for backward in (False, True):
                            _guarded_case(f"dropout {d} {causal} {backward}", case_dropout,
                                          *DROP_SHAPE, d, "bf16", causal, backward, True)
        elif part == "decode":
            batch, ctx = SMALL_DECODE
            _guarded_case("decode small", case_decode, batch, DECODE_HQ, DECODE_HKV, ctx,
                          DECODE_DIM, "bf16", quick)
            if not quick:
                for ctx in DECODE_CTX:
                    _guarded_case(f"decode {ctx}", case_decode, DECODE_BATCH, DECODE_HQ,
                                  DECODE_HKV, ctx, DECODE_DIM, "bf16", True)
        _free()
