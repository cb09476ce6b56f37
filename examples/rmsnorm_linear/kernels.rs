//! `y = RMSNorm(x) @ Wᵀ` (the LLM chapter's "Normalization + Linear"): `x` is `m × k` (tokens ×
//! hidden), `W` is `n × k` (PyTorch's `Linear` weight), RMSNorm's weight `γ` has `k` elements and
//! `RMSNorm(x)[i, c] = x[i, c] · rstd[i] · γ[c]` with `rstd[i] = 1 / sqrt(mean_c(x[i, c]²) + eps)`.
//!
//! Since `rstd[i]` is a factor of row `i` and `γ[c]` of column `c` of `x`,
//! `y[i, j] = rstd[i] · Σ_c x[i, c] · (γ[c] · W[j, c])`: `γ` folds into the weight once (as
//! inference folds a norm's weight into the next linear layer; the host lays the folded weight
//! out `k × n`, the GEMM's `B`), and the row statistic becomes a scale in the GEMM's epilogue.
//! The normalized activations are never written.
//!
//! - **Fused**: [`rms_rstd`] (one pass over `x`, `m` floats out), then [`linear_rstd`] (the
//!   `gemm` example's tensor-descriptor GEMM, its accumulator scaled by `rstd` per row before it
//!   is rounded); for at most 64 tokens one launch of [`linear_few`] instead (one 64-row tile,
//!   `k` split into slices so that the weight streams from every SM, the row statistic from the
//!   same `x` tiles on the tensor cores, and the slices summed and scaled by the program that
//!   finishes a column block last).
//! - **Unfused** (what `F.rms_norm` then a matmul computes): [`rmsnorm`] writes the normalized
//!   `x` in the input type, then the `gemm` example's `matmul` with `Wᵀ`.

// `linear_few`'s 7-stage configuration needs more shared memory than sm_80 has: the build leaves
// it out there with a (deprecation) warning, and the tuner times the others.
#![allow(deprecated)]

use tile::prelude::*;

use crate::gemm::kernels::gemm_desc_acc;

/// `1 / sqrt(mean(row[0 .. k]²) + eps)` in f32, `BLOCK` elements at a time: the statistic of
/// both [`rms_rstd`] and [`rmsnorm`].
#[tile_fn]
fn row_rstd(row: Tile, k: i32, eps: f32, BLOCK: Const) -> Tile {
    let cols = arange(0, BLOCK);
    let mut ss = zeros([BLOCK]);
    for c0 in (0..k).step_by(BLOCK) {
        let c = c0 + cols;
        let v = load(row + c, c < k, 0.0) as f32;
        ss = ss + v * v;
    }
    rsqrt(ss.sum() / (k as f32) + eps)
}

#[tile_kernel(num_warps = 4)]
/// `rstd[i] = 1 / sqrt(mean(x[i, :]²) + eps)` in f32, one program per row, `BLOCK` columns at
/// a time.
pub fn rms_rstd(
    x: Ptr<T, { m * k }>,
    rstd: Ptr<f32, m>,
    m: i32,
    k: i32,
    eps: f32,
    T: Type<{ [f16, bf16] }>,
    BLOCK: Const<1024>,
) {
    let row = program_id(0);
    store(rstd + row, row_rstd(x + row * k, k, eps, BLOCK));
}

#[tile_kernel(num_warps = 4)]
/// The unfused normalization: `xn[i, c] = x[i, c] · rstd[i] · γ[c]`, rounded to `T`, one
/// program per row (the statistic first, then the scaled row, `BLOCK` columns at a time).
#[allow(clippy::too_many_arguments)]
pub fn rmsnorm(
    x: Ptr<T, { m * k }>,
    gamma: Ptr<T, k>,
    xn: Ptr<T, { m * k }>,
    m: i32,
    k: i32,
    eps: f32,
    T: Type<{ [f16, bf16] }>,
    BLOCK: Const<1024>,
) {
    let row = program_id(0);
    let cols = arange(0, BLOCK);
    let r = row_rstd(x + row * k, k, eps, BLOCK);
    for c0 in (0..k).step_by(BLOCK) {
        let c = c0 + cols;
        let ok = c < k;
        let v = load(x + row * k + c, ok, 0.0) as f32;
        let g = load(gamma + c, ok, 0.0) as f32;
        store(xn + row * k + c, (v * r * g) as T, ok);
    }
}

#[tile_kernel(autotune(
    configs = [
        { BM = 128, BN = 256, BK = 64, num_warps = 8 },
        { BM = 128, BN = 128, BK = 64, num_warps = 8 },
        { BM = 128, BN = 128, BK = 64, num_warps = 4 },
    ],
    key = [m, n, k],
))]
/// `y = rstd ⊙ (x @ wt)` (`wt` the folded weight, `k × n`; `rstd` scales the rows) in the input
/// type: the `gemm` example's descriptor GEMM (the tensor memory accelerator fills the `wgmma`
/// ring on Hopper) in grouped order, the scale applied to the f32 accumulator. The tile is
/// timed per shape at the first launch.
#[allow(clippy::too_many_arguments)]
pub fn linear_rstd(
    x: Ptr<T, { m * k }>,
    wt: Ptr<T, { k * n }>,
    rstd: Ptr<f32, m>,
    y: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const<8>,
) {
    let (acc, rows, cols, row_ok, col_ok) = gemm_desc_acc(x, wt, m, n, k, BM, BN, BK, GM);
    let r = load(rstd + rows, rows < m, 0.0).expand_dims(1);
    store(
        y + rows.expand_dims(1) * n + cols.expand_dims(0),
        (acc * r) as T,
        row_ok & col_ok,
    );
}

#[tile_kernel(autotune(
    configs = [
        { BK = 64, num_warps = 4, num_stages = 3 },
        { BK = 64, num_warps = 4, num_stages = 5 },
        { BK = 64, num_warps = 4, num_stages = 7 },
        { BK = 128, num_warps = 4, num_stages = 3 },
    ],
    key = [m, n, k, split],
))]
/// The whole fused form for few tokens (`m ≤ BM`) in one launch, `k` split over the programs:
/// program `(j, s)` computes columns `j·BN …` of every token over slice `s` of `k` (`kslice`
/// long, a multiple of 128) and, from the same `x` tiles, the slice's sum of squares of every
/// row (the diagonal of `x xᵀ`: a second `dot` on tensor cores that the weight's bytes leave
/// idle, reading the same ring stage transposed). It writes both to the workspace (`part`:
/// `split × m × n`, `sq`: `blocks × split × BM`) and counts itself in `count[j]`; the program
/// that arrives last at column block `j` adds the slices, takes `rstd` from the sums of
/// squares, writes `y`'s columns in `T` and sets `count[j]` back to 0 for the next launch. Both
/// operands through tensor descriptors: on Hopper one `wgmma.m64` per 16 columns of `k` (the
/// rows past `m` read as 0 and cost no memory traffic). The product is bound by the weight's
/// bytes: the configurations differ in how many of them each program has in flight (the
/// ring's depth and width; a deep ring leaves one program per SM instead of two), timed per
/// shape and split.
#[allow(clippy::too_many_arguments)]
pub fn linear_few(
    x: Ptr<T, { m * k }>,
    wt: Ptr<T, { k * n }>,
    part: Ptr<f32, { split * m * n }>,
    sq: Ptr<f32, { blocks * split * 64 }>,
    count: Ptr<i32, blocks>,
    y: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    blocks: i32,
    split: i32,
    kslice: i32,
    eps: f32,
    T: Type<{ [f16, bf16] }>,
    BM: Const<64>,
    BN: Const<128>,
    BK: Const,
) {
    let j = program_id(0);
    let s = program_id(1);
    let x_desc = make_tensor_descriptor(x, [m, k], [k, 1], [BM, BK]);
    let w_desc = make_tensor_descriptor(wt, [k, n], [n, 1], [BK, BN]);
    let lo = s * kslice;
    let hi = min(lo + kslice, k);
    let mut acc = zeros([BM, BN]);
    let mut gram = zeros([BM, BM]);
    for k0 in (lo..hi).step_by(BK) {
        let xt = x_desc.load([0, k0]);
        acc = dot(xt, w_desc.load([k0, j * BN]), acc);
        gram = dot(xt, xt.trans(), gram);
    }
    let rows = arange(0, BM);
    let cols = j * BN + arange(0, BN);
    let ok = (rows < m).expand_dims(1) & (cols < n).expand_dims(0);
    let at = rows.expand_dims(1) * n + cols.expand_dims(0);
    let diag = rows.expand_dims(1) == arange(0, BM).expand_dims(0);
    let ss = select(diag, gram, 0.0).sum(1);
    store(part + s * m * n + at, acc, ok);
    store(sq + (j * split + s) * BM + rows, ss);
    // Every thread's partial is written before one thread counts the program (a release at GPU
    // scope); the last to count sees every other program's (an acquire).
    debug_barrier();
    if atomic_add(count + j, 1) == split - 1 {
        let mut total = acc;
        let mut sum_sq = ss;
        for t in 0..split {
            total = total + load(part + t * m * n + at, ok & (t != s), 0.0);
            sum_sq = sum_sq + load(sq + (j * split + t) * BM + rows, t != s, 0.0);
        }
        let rstd = rsqrt(sum_sq / (k as f32) + eps);
        store(y + at, (total * rstd.expand_dims(1)) as T, ok);
        store(count + j, 0);
    }
}

/// Every kernel of this example, each instance (tests assemble them all).
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = rms_rstd::KERNELS.to_vec();
    v.extend(rmsnorm::KERNELS);
    v.extend(linear_rstd::KERNELS);
    v.extend(linear_few::KERNELS);
    v
}
