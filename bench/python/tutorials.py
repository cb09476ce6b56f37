"""Triton's official tutorials, their kernels as the tutorials write them, timed against the tile
ports (`tutorials/` of this repository, timed by tile-bench's `tutorials` family) on the same keys.

Not a script: `baseline.py` imports it for its family `tutorials` (so `baseline.py --filter
tutorials` runs it with baseline.py's timing, L2 flush, checks, CLI and JSON) and calls
`bench(baseline_module)`. Written here from reading triton-lang/triton `python/tutorials/`:

| variant (row key) | tutorial | Triton side |
|---|---|---|
| `01_add_kernel` | 01-vector-add | `add_kernel`, BLOCK_SIZE 1024 |
| `02_softmax_kernel` | 02-fused-softmax | baseline.py's `k_softmax_tutorial` / `tutorial_softmax`: persistent programs, SMs x occupancy from the compiled kernel's registers and shared memory, 8 warps, num_stages 4 where shared memory > 200 KB |
| `03_matmul_kernel` | 03-matrix-multiplication | baseline.py's `k_matmul_tutorial`, autotuned over the tutorial's 16 CUDA configs (key M, N, K; the activation added, "" here) |
| `04_dropout`, `04_seeded_dropout` | 04-low-memory-dropout | `_dropout` (int32 keep mask), `_seeded_dropout` (`tl.rand`), BLOCK_SIZE 1024, p = 0.5, seed 123 |
| `05_layer_norm_fwd_fused` | 05-layer-norm | baseline.py's `k_layer_norm_fwd_tutorial` with the tutorial's BLOCK_SIZE and num_warps |
| `05_layer_norm_bwd` | 05-layer-norm | `LayerNorm.backward`: locks and partial sums zeroed, `_layer_norm_bwd_dx_fused` (spin lock per partial-sum row), `_layer_norm_bwd_dwdb` |
| `06_attn_fwd`, `06_attn_fwd_causal` | 06-fused-attention | attention.py's `tut_attn_fwd` (`_attention.forward` on Hopper: host descriptors, autotuned over the tutorial's configs); key [Z, H, N_CTX, HEAD_DIM], sm_scale 0.5 |
| `08_grouped_matmul_kernel` | 08-grouped-gemm | `grouped_matmul_kernel`, autotuned over the tutorial's 4 configs (key group_size, tuned afresh at each size), on tables of the matrices' addresses built outside the timed call (as the tutorial's benchmark does); shape `[group_size, N]`: that many N x N x N products |
| `09_matmul_kernel_persistent` | 09-persistent-matmul | `matmul_kernel_persistent`, autotuned over the tutorial's `matmul_get_configs()` (16 configs, key M, N, K), NUM_SMS = the SM count |

Each host function takes its outputs (poisoned with NaN before each check) instead of allocating
them with `torch.empty`, as baseline.py's other host functions do; the tile side launches into
outputs allocated once too. Reference impls where PyTorch has a natural one: `torch_native`
(torch.add, torch.softmax, F.layer_norm, aten's layer-norm backward) and `cublas`
(torch.matmul). Inputs are drawn as the tutorials draw them (`torch.rand`, `torch.randn`,
`-2.3 + 0.5 * randn` for layer norm); every output is checked against float64.

Shapes (the same lists as tile-bench/src/families/tutorials.rs): the small ones are checked (and
timed by --quick and on the CPU), the large ones timed: sizes of each tutorial's own benchmark,
far above L2 where the tutorial's are.
"""

import os
import traceback

import torch
import triton
import triton.language as tl

ON_GPU = os.environ.get("TRITON_INTERPRET") != "1"

# Shapes: (small, big), as tile-bench/src/families/tutorials.rs.
ADD = ([1025, 98432], [1 << 24, 1 << 26, 1 << 27])
SOFTMAX = ([(7, 100), (18, 781)], [(4096, 1024), (4096, 4096), (4096, 8192), (4096, 12288)])
MATMUL = ([(64, 64, 64), (130, 70, 33)], [(4096, 4096, 4096), (8192, 8192, 8192)])
DROPOUT = ([1000, 4099], [1 << 24, 1 << 26])
LAYER_NORM = ([(40, 128), (151, 300)], [(4096, 1024), (4096, 2048), (4096, 4096), (4096, 8192)])
LAYER_NORM_BWD_MAX_N = 4096  # the tile port's backward is compiled for rows up to this
# (group_size, N): group_size products of N x N x N, the tutorial's benchmark sizes and one far
# above L2.
GROUPED = ([(2, 128)], [(4, 128), (4, 256), (4, 512), (4, 1024), (4, 4096)])
PERSISTENT = ([(200, 152, 72), (300, 264, 64)],  # the tile port takes 16-byte rows only
              [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024)])

DROP_P, DROP_SEED = 0.5, 123
LN_EPS = 1e-5
NAME = "tutorials"


# ----------------------------------------------------------------------------------------------
# 01 vector add
# ----------------------------------------------------------------------------------------------


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # One program per BLOCK_SIZE elements; the last block masked.
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def add(x, y, output):
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]), )  # noqa: E731
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


# ----------------------------------------------------------------------------------------------
# 04 low-memory dropout
# ----------------------------------------------------------------------------------------------


@triton.jit
def _dropout(x_ptr, x_keep_ptr, output_ptr, n_elements, p, BLOCK_SIZE: tl.constexpr):
    # Dropout with a stored keep mask of 0s and 1s.
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x_keep = tl.load(x_keep_ptr + offsets, mask=mask)
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def dropout(x, x_keep, p, output):
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]), )  # noqa: E731
    _dropout[grid](x, x_keep, output, n_elements, p, BLOCK_SIZE=1024)
    return output


@triton.jit
def _seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    # Dropout whose keep mask is drawn from (seed, offset): nothing stored.
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def seeded_dropout(x, p, seed, output):
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]), )  # noqa: E731
    _seeded_dropout[grid](x, output, n_elements, p, seed, BLOCK_SIZE=1024)
    return output


# ----------------------------------------------------------------------------------------------
# 05 layer norm backward (the forward is baseline.py's k_layer_norm_fwd_tutorial)
# ----------------------------------------------------------------------------------------------


@triton.jit
def _layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    # dx of one row; the row's dy * xhat and dy added into partial-sum row `row % GROUP_SIZE_M`
    # of DW and DB under a spin lock (a counter beside the locks marks the first writer).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr,
                         BLOCK_SIZE_N: tl.constexpr):
    # Sums the M partial-sum rows of DW and DB for BLOCK_SIZE_N columns.
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


def group_size_m(n):
    """The tutorial's GROUP_SIZE_M heuristic (partial-sum rows for dw and db)."""
    g = 64
    if n <= 8192:
        g = 96
    if n <= 4096:
        g = 128
    if n <= 1024:
        g = 256
    return g


def layer_norm_backward(dy, x, w, mean, rstd, dx, dw, db, block, warps):
    """The tutorial's LayerNorm.backward with the forward's BLOCK_SIZE and num_warps, outputs
    given; the locks and partial sums are zeroed here on every call, as the tutorial allocates
    them with torch.zeros."""
    M, N = x.shape
    GROUP_SIZE_M = group_size_m(N)
    locks = torch.zeros(2 * GROUP_SIZE_M, dtype=torch.int32, device=w.device)
    _dw = torch.zeros((GROUP_SIZE_M, N), dtype=x.dtype, device=w.device)
    _db = torch.zeros((GROUP_SIZE_M, N), dtype=x.dtype, device=w.device)
    _layer_norm_bwd_dx_fused[(M, )](dx, dy, _dw, _db, x, w, mean, rstd, locks, x.stride(0), N,
                                    BLOCK_SIZE_N=block, GROUP_SIZE_M=GROUP_SIZE_M,
                                    num_warps=warps)
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_SIZE_N"]), )  # noqa: E731
    _layer_norm_bwd_dwdb[grid](_dw, _db, dw, db, min(GROUP_SIZE_M, M), N, BLOCK_SIZE_M=32,
                               BLOCK_SIZE_N=128)
    return dx, dw, db


# ----------------------------------------------------------------------------------------------
# 08 grouped GEMM
# ----------------------------------------------------------------------------------------------


def _grouped_configs():
    """The tutorial's four configs (Triton's default 4 warps, 3 stages); on the CPU the first."""
    cfgs = [triton.Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bm, "BLOCK_SIZE_K": 32,
                           "NUM_SM": sm}) for bm in (128, 64) for sm in (84, 128)]
    return cfgs if ON_GPU else cfgs[:1]


@triton.autotune(configs=_grouped_configs(), key=["group_size"],
                 **({} if ON_GPU else {"do_bench": _interpreter_bench}))
@triton.jit
def grouped_matmul_kernel(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_gemm_sizes, g_lds,
                          group_size, NUM_SM: tl.constexpr, BLOCK_SIZE_M: tl.constexpr,
                          BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    # NUM_SM programs walk the tiles of every problem in turn; each problem's matrices are
    # reached through the address tables, whole tiles only.
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tl.load(group_gemm_sizes + g * 3)
        gn = tl.load(group_gemm_sizes + g * 3 + 1)
        gk = tl.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tl.cdiv(gm, BLOCK_SIZE_M)
        num_n_tiles = tl.cdiv(gn, BLOCK_SIZE_N)
        num_tiles = num_m_tiles * num_n_tiles
        while (tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles):
            k = gk
            lda = tl.load(g_lds + g * 3)
            ldb = tl.load(g_lds + g * 3 + 1)
            ldc = tl.load(g_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            tile_idx_in_gemm = tile_idx - last_problem_end
            tile_m_idx = tile_idx_in_gemm // num_n_tiles
            tile_n_idx = tile_idx_in_gemm % num_n_tiles
            offs_am = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            offs_k = tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, BLOCK_SIZE_K)):
                tl.multiple_of(a_ptrs, [16, 16])
                tl.multiple_of(b_ptrs, [16, 16])
                a = tl.load(a_ptrs)
                b = tl.load(b_ptrs)
                accumulator += tl.dot(a, b)
                a_ptrs += BLOCK_SIZE_K
                b_ptrs += BLOCK_SIZE_K * ldb
            c = accumulator.to(tl.float16)
            offs_cm = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_cn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + ldc * offs_cm[:, None] + offs_cn[None, :]
            tl.store(c_ptrs, c)
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


def bench_grouped(B):
    small, big = GROUPED
    for (groups, n), timed in B.plan(small, big):
        # The key, group_size, is the same at every N: without this the decision timed at the
        # first size (4 x 128^3, launch-bound) would serve 4 x 4096^3, where it can run 3x
        # slower than the best. Both sides tune each size afresh (tile-bench forgets its
        # tuner's decision the same way), so each row compares the two tuners' best there.
        grouped_matmul_kernel.cache.clear()
        g = _seeded(B, groups * 7919 + n)
        As = [torch.rand((n, n), device=B.DEV, dtype=torch.float16, generator=g)
              for _ in range(groups)]
        Bs = [torch.rand((n, n), device=B.DEV, dtype=torch.float16, generator=g)
              for _ in range(groups)]
        Cs = [torch.empty((n, n), device=B.DEV, dtype=torch.float16) for _ in range(groups)]
        tables = [torch.tensor([t.data_ptr() for t in ts], device=B.DEV)
                  for ts in (As, Bs, Cs)]
        sizes = torch.tensor([n, n, n] * groups, dtype=torch.int32, device=B.DEV)
        lds = torch.tensor([n, n, n] * groups, dtype=torch.int32, device=B.DEV)
        refs = tuple(a.double() @ b.double() for a, b in zip(As, Bs))

        def triton_fn():
            grid = lambda META: (META["NUM_SM"], )  # noqa: E731
            grouped_matmul_kernel[grid](*tables, sizes, lds, groups)
            return tuple(Cs)

        def reset():
            for c in Cs:
                c.fill_(B.NAN)

        def cublas():
            for a, b, c in zip(As, Bs, Cs):
                torch.matmul(a, b, out=c)
            return tuple(Cs)

        impls = [("cublas", "torch.matmul per problem (the tutorial's cuBLAS line)", cublas),
                 ("triton", "tutorial grouped_matmul_kernel, autotuned over its 4 configs",
                  triton_fn, dict(B.TUTORIAL, config=B.best_config(grouped_matmul_kernel)))]
        nbytes = 2.0 * 3 * n * n * groups
        B.run_case(NAME, "08_grouped_matmul_kernel", [groups, n], "f16", nbytes, impls, reset,
                   refs, (4e-3,) * groups, tuple(f"c{i}" for i in range(groups)), timed,
                   flops=2.0 * n * n * n * groups)
        del As, Bs, Cs, tables, refs
        if ON_GPU:
            torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------------
# 09 persistent matmul
# ----------------------------------------------------------------------------------------------


def matmul_get_configs():
    """The tutorial's configs: 128 x {128, 256} x {64, 128}, 3 or 4 stages, 4 or 8 warps,
    GROUP_SIZE_M 8. On the CPU (interpreter): two small tiles."""
    if not ON_GPU:
        return [triton.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32,
                               "GROUP_SIZE_M": 8}, num_stages=2, num_warps=4),
                triton.Config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32,
                               "GROUP_SIZE_M": 8}, num_stages=2, num_warps=4)]
    return [triton.Config({"BLOCK_SIZE_M": BM, "BLOCK_SIZE_N": BN, "BLOCK_SIZE_K": BK,
                           "GROUP_SIZE_M": 8}, num_stages=s, num_warps=w)
            for BM in [128] for BN in [128, 256] for BK in [64, 128] for s in [3, 4]
            for w in [4, 8]]


_FAKE_TIMES = [0]


def _interpreter_bench(kernel_call, quantiles):
    """The autotuner's benchmark on the CPU: one run per config and a made-up time (the
    interpreter has no CUDA events). On a GPU the autotuner keeps Triton's own."""
    kernel_call()
    _FAKE_TIMES[0] += 1
    t = float(_FAKE_TIMES[0] % 3)
    return [t, t, t]


@triton.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.autotune(configs=matmul_get_configs(), key=["M", "N", "K"],
                 **({} if ON_GPU else {"do_bench": _interpreter_bench}))
@triton.jit
def matmul_kernel_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                             stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                             BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                             GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    # NUM_SMS programs, each taking output tiles start_pid, start_pid + NUM_SMS, ... in grouped
    # order, a K loop per tile with pointers built from the loop counter; a second tile counter
    # for the epilogue, as the tutorial keeps one.
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS
    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        start_m = pid_m * BLOCK_SIZE_M
        start_n = pid_n * BLOCK_SIZE_N
        offs_am = start_m + tl.arange(0, BLOCK_SIZE_M)
        offs_bn = start_n + tl.arange(0, BLOCK_SIZE_N)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
            b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
            a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        c = accumulator.to(tl.float16)
        tl.store(c_ptrs, c, mask=c_mask)


def num_sms():
    """The tutorial's NUM_SMS: the device's SM count (4 on the CPU, as the tile port's tests)."""
    if not ON_GPU:
        return 4
    return torch.cuda.get_device_properties("cuda").multi_processor_count


def _persistent_args(a, b, c):
    M, K = a.shape
    K, N = b.shape
    return (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
            c.stride(1))


def matmul_persistent(a, b, c):
    """The tutorial's matmul_persistent(a, b) with the output given."""
    M, K = a.shape
    K, N = b.shape
    NUM_SMS = num_sms()
    grid = lambda META: (min(NUM_SMS, triton.cdiv(M, META["BLOCK_SIZE_M"])  # noqa: E731
                             * triton.cdiv(N, META["BLOCK_SIZE_N"])), )
    matmul_kernel_persistent[grid](*_persistent_args(a, b, c), NUM_SMS=NUM_SMS)
    return c


# ----------------------------------------------------------------------------------------------
# The cases
# ----------------------------------------------------------------------------------------------


def bench(B):
    """Every tutorial case, through baseline.py's `run_case` (B is the baseline module). A
    tutorial whose set-up raises is reported as a failure and the others still run."""
    for name, fn in (("01", bench_vector_add), ("02", bench_softmax),
                     ("03", lambda B: bench_matmul(B, persistent=False)), ("04", bench_dropout),
                     ("05", bench_layer_norm), ("06", bench_attention), ("08", bench_grouped),
                     ("09", lambda B: bench_matmul(B, persistent=True))):
        try:
            fn(B)
        except Exception as e:
            traceback.print_exc()
            B.FAILURES.append(f"{NAME} {name}: {type(e).__name__}: {e}")
        if ON_GPU:
            torch.cuda.empty_cache()


# (Z, H, N_CTX, HEAD_DIM), causal: as tile-bench's list.
ATTENTION = ([((1, 2, 256, 64), True), ((1, 1, 128, 128), False)],
             [((4, 32, 4096, 64), False), ((4, 32, 4096, 64), True),
              ((4, 32, 4096, 128), False), ((4, 32, 4096, 128), True)])


def bench_attention(B):
    """Tutorial 06's forward (attention.py's copy of the Hopper path), on Hopper only (host
    tensor descriptors); the reference is attention.py's float64 `ref_head` on every head."""
    import attention
    attention._B = B
    if not ON_GPU or not attention._on_hopper():
        print("tutorials 06: skipped (the tutorial's forward needs Hopper's tensor descriptors)")
        return
    small, big = ATTENTION
    for (shape, causal), timed in B.plan(small, big):
        z, h, n, d = shape
        g = _seeded(B, z * 1000003 + h * 1009 + n * 17 + d + int(causal))
        q, k, v = (torch.empty(shape, device=B.DEV, dtype=torch.float16).normal_(
            0.0, 0.5, generator=g) for _ in range(3))
        ref_o = torch.stack([torch.stack([attention.ref_head(q[i, j], k[i, j], v[i, j], 0.5, causal)
                                          for j in range(h)]) for i in range(z)])
        attention.precompile_tutorial_fwd(q, k, v, causal, 0.5)

        def triton_fn():
            o, _m = attention.tutorial_forward(q, k, v, causal, 0.5)
            return (o,)

        variant = "06_attn_fwd_causal" if causal else "06_attn_fwd"
        impls = [("triton", f"tutorial _attn_fwd (Hopper, host descriptors), autotuned, "
                  f"STAGE {3 if causal else 1}", triton_fn,
                  dict(B.TUTORIAL, config=B.best_config(attention.tut_attn_fwd)))]
        flops = 4.0 * z * h * n * n * d * (0.5 if causal else 1.0)
        B.run_case(NAME, variant, [z, h, n, d], "f16", 8.0 * q.numel() + 4.0 * z * h * n,
                   impls, lambda: None, (ref_o,), (4e-3,), ("o",), timed, flops=flops)
        del q, k, v, ref_o
        torch.cuda.empty_cache()


def _seeded(B, seed):
    g = torch.Generator(device=B.DEV)
    g.manual_seed(seed)
    return g


def bench_vector_add(B):
    small, big = ADD
    for n, timed in B.plan(small, big):
        g = _seeded(B, n)
        x = torch.rand(n, device=B.DEV, generator=g)
        y = torch.rand(n, device=B.DEV, generator=g)
        out = torch.empty_like(x)
        ref = ((x + y).double(),)  # one f32 addition: bit-identical

        def reset():
            out.fill_(B.NAN)

        impls = [("torch_native", "torch.add(x, y, out=out)",
                  lambda: (torch.add(x, y, out=out),)),
                 ("triton", "tutorial add_kernel: 1 program per 1024 elements",
                  lambda: (add(x, y, out),), B.TUTORIAL)]
        B.run_case(NAME, "01_add_kernel", [n], "f32", 12.0 * n, impls, reset, ref, (0.0,),
                   ("output",), timed)
        del x, y, out, ref


def bench_softmax(B):
    small, big = SOFTMAX
    for (rows, cols), timed in B.plan(small, big):
        x = torch.randn(rows, cols, device=B.DEV, generator=_seeded(B, rows * 31 + cols))
        y = torch.empty_like(x)
        ref = (torch.softmax(x.double(), dim=-1),)

        def reset():
            y.fill_(B.NAN)

        impls = [("torch_native", "torch.softmax", lambda: (torch.softmax(x, dim=-1),)),
                 ("triton", "tutorial softmax_kernel", lambda: (B.tutorial_softmax(x, y),),
                  dict(B.TUTORIAL, config=lambda: B.tutorial_softmax_desc(x, y)))]
        B.run_case(NAME, "02_softmax_kernel", [rows, cols], "f32", 8.0 * rows * cols, impls,
                   reset, ref, (1e-5,), ("y",), timed)
        del x, y, ref


def bench_matmul(B, persistent):
    small, big = PERSISTENT if persistent else MATMUL
    variant = "09_matmul_kernel_persistent" if persistent else "03_matmul_kernel"
    for (m, n, k), timed in B.plan(small, big):
        g = _seeded(B, m * 7919 + n * 131 + k)
        a = torch.randn((m, k), device=B.DEV, dtype=torch.float16, generator=g)
        b = torch.randn((k, n), device=B.DEV, dtype=torch.float16, generator=g)
        c = torch.empty((m, n), device=B.DEV, dtype=torch.float16)
        ref = (a.double() @ b.double(),)
        if persistent:
            if ON_GPU:
                B.precompile(matmul_kernel_persistent, *_persistent_args(a, b, c),
                             NUM_SMS=num_sms())
            triton_fn = lambda: (matmul_persistent(a, b, c),)  # noqa: E731
            ops = (f"tutorial matmul_kernel_persistent, {num_sms()} programs at most, "
                   "autotuned over its 16 configs")
            kernel = matmul_kernel_persistent
        else:
            B.precompile_matmul(a, b, c)
            triton_fn = lambda: (B.tutorial_matmul(a, b, c),)  # noqa: E731
            ops = "tutorial matmul_kernel, autotuned over its 16 CUDA configs"
            kernel = B.k_matmul_tutorial

        def reset():
            c.fill_(B.NAN)

        def cublas():
            torch.matmul(a, b, out=c)
            return (c,)

        impls = [("cublas", "torch.matmul(a, b, out=c)", cublas),
                 ("triton", ops, triton_fn, dict(B.TUTORIAL, config=B.best_config(kernel)))]
        nbytes = 2.0 * (m * k + k * n + m * n)
        B.run_case(NAME, variant, [m, n, k], "f16", nbytes, impls, reset, ref, (4e-3,), ("c",),
                   timed, flops=2.0 * m * n * k, gemm_key=(m, n, k, "f16", NAME + "/" + variant))
        del a, b, c, ref
        if ON_GPU:
            torch.cuda.empty_cache()


def bench_dropout(B):
    small, big = DROPOUT
    p = DROP_P
    for n, timed in B.plan(small, big):
        g = _seeded(B, n + 4)
        x = torch.randn(n, device=B.DEV, generator=g)
        x_keep = (torch.rand(n, device=B.DEV, generator=g) > p).to(torch.int32)
        out = torch.empty_like(x)
        ref = (torch.where(x_keep != 0, x / (1 - p), torch.zeros_like(x)).double(),)

        def reset():
            out.fill_(B.NAN)

        # Kept values: one f32 division on both sides; dropped ones exactly 0.
        impls = [("triton", "tutorial _dropout: int32 keep mask read, 1 program per 1024 "
                  "elements", lambda: (dropout(x, x_keep, p, out),), B.TUTORIAL)]
        B.run_case(NAME, "04_dropout", [n], "f32", 12.0 * n, impls, reset, ref, (1e-6,),
                   ("output",), timed)

        keep = torch.empty(n, dtype=torch.bool, device=B.DEV)
        B.k_rand_keep[(B.cdiv(n, B.BLOCK),)](keep, n, p, DROP_SEED, BLOCK=B.BLOCK)
        ref = (torch.where(keep, x / (1 - p), torch.zeros_like(x)).double(),)
        impls = [("triton", f"tutorial _seeded_dropout: tl.rand(seed {DROP_SEED}, offsets), 1 "
                  "program per 1024 elements", lambda: (seeded_dropout(x, p, DROP_SEED, out),),
                  B.TUTORIAL)]
        B.run_case(NAME, "04_seeded_dropout", [n], "f32", 8.0 * n, impls, reset, ref, (1e-6,),
                   ("output",), timed)
        del x, x_keep, keep, out, ref


def bench_layer_norm(B):
    small, big = LAYER_NORM
    eps = LN_EPS
    for (rows, n), timed in B.plan(small, big):
        g = _seeded(B, rows * 31 + n + 5)
        dt = torch.float16
        w = torch.rand(n, dtype=dt, device=B.DEV, generator=g)
        b = torch.rand(n, dtype=dt, device=B.DEV, generator=g)
        x = -2.3 + 0.5 * torch.randn((rows, n), dtype=dt, device=B.DEV, generator=g)
        dy = 0.1 * torch.randn((rows, n), dtype=dt, device=B.DEV, generator=g)
        x64, w64, dy64 = x.double(), w.double(), dy.double()
        mean64 = x64.mean(-1, keepdim=True)
        rstd64 = 1.0 / torch.sqrt(((x64 - mean64) ** 2).mean(-1, keepdim=True) + eps)
        xhat = (x64 - mean64) * rstd64
        y_ref = xhat * w64 + b.double()
        wdy = w64 * dy64
        c1 = (xhat * wdy).mean(-1, keepdim=True)
        c2 = wdy.mean(-1, keepdim=True)
        dx_ref = (wdy - (xhat * c1 + c2)) * rstd64
        dw_ref, db_ref = (dy64 * xhat).sum(0), dy64.sum(0)
        del x64, w64, dy64, xhat, wdy
        block, warps = B.tutorial_layer_norm_settings(n, x.element_size())
        y = torch.empty_like(x)
        mean = torch.empty(rows, dtype=torch.float32, device=B.DEV)
        rstd = torch.empty(rows, dtype=torch.float32, device=B.DEV)

        def reset():
            for t in (y, mean, rstd):
                t.fill_(B.NAN)

        def triton_fwd():
            B.k_layer_norm_fwd_tutorial[(rows, )](x, y, w, b, mean, rstd, x.stride(0), n, eps,
                                                  BLOCK_SIZE=block, num_warps=warps)
            return (y, mean, rstd)

        refs = (y_ref, mean64.flatten(), rstd64.flatten())
        impls = [("torch_native", "F.layer_norm", lambda: (_f_layer_norm(x, w, b, eps),),
                  {"refs": refs[:1], "tols": (4e-3,), "names": ("y",)}),
                 ("triton", f"tutorial _layer_norm_fwd_fused: 1 program per row, BLOCK_SIZE "
                  f"{block}, {warps} warps", triton_fwd, B.TUTORIAL)]
        nbytes = 2.0 * (2.0 * rows * n + 2.0 * n) + 8.0 * rows
        B.run_case(NAME, "05_layer_norm_fwd_fused", [rows, n], "f16", nbytes, impls, reset, refs,
                   (4e-3, 1e-5, 1e-4), ("y", "mean", "rstd"), timed)

        if n <= LAYER_NORM_BWD_MAX_N:
            triton_fwd()  # the backward reads the forward's mean and rstd, as the tutorial's
            B.sync()
            dx = torch.empty_like(x)
            dw = torch.empty(n, dtype=dt, device=B.DEV)
            db = torch.empty(n, dtype=dt, device=B.DEV)

            def reset_bwd():
                for t in (dx, dw, db):
                    t.fill_(B.NAN)

            # PyTorch's backward reads the mean and rstd its own forward saved.
            _, t_mean, t_rstd = torch.ops.aten.native_layer_norm(x, (n, ), w, b, eps)

            def torch_bwd():
                outs = torch.ops.aten.native_layer_norm_backward(
                    dy, x, (n, ), t_mean, t_rstd, w, b, [True, True, True])
                return tuple(outs)

            impls = [("torch_native", "aten native_layer_norm_backward (what autograd runs "
                      "for F.layer_norm)", torch_bwd),
                     ("triton", f"tutorial LayerNorm.backward: locks and partial sums zeroed, "
                      f"_layer_norm_bwd_dx_fused (GROUP_SIZE_M {group_size_m(n)}, BLOCK_SIZE_N "
                      f"{block}, {warps} warps, spin lock), _layer_norm_bwd_dwdb",
                      lambda: layer_norm_backward(dy, x, w, mean, rstd, dx, dw, db, block, warps),
                      B.TUTORIAL)]
            nbytes = 2.0 * (3.0 * rows * n + 3.0 * n) + 8.0 * rows
            B.run_case(NAME, "05_layer_norm_bwd", [rows, n], "f16", nbytes, impls, reset_bwd,
                       (dx_ref, dw_ref, db_ref), (1e-2, 2e-2, 2e-2), ("dx", "dw", "db"), timed)
            del dx, dw, db, t_mean, t_rstd
        del x, w, b, dy, y, mean, rstd
        if B.ON_GPU:
            torch.cuda.empty_cache()


def _f_layer_norm(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1], ), w, b, eps)
