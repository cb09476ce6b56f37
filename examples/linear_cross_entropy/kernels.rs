//! Linear + cross-entropy, forward and backward, without the `tokens × vocab` logits: `loss =
//! mean_t CE(x[t] · Wᵀ, labels[t])` over the tokens whose label is not `ignore` (with label
//! smoothing, as PyTorch's `F.cross_entropy`), and its gradients `dx = G · W` and `dW = Gᵀ · x`
//! with `G = (softmax(x Wᵀ) − onehot) / valid` (`x`: `t × h`, `W`: `v × h`, PyTorch's `Linear`
//! weight; `dx` and `dW` in the input type).
//!
//! The tokens go through in chunks of `cn` rows (the host picks `cn` so that one chunk's logits
//! fit a memory budget: 512 tokens at a 128256-word vocabulary, 64 MiB... 128 MiB); per chunk:
//!
//! - [`lce_logits`]: the chunk's logits `x[r0 ..] · Wᵀ`, rounded to the input type as a
//!   framework's `Linear` rounds them (`W`'s rows are loaded as they lie and read transposed by
//!   the tensor cores);
//! - [`lce_ce`]: the `cross_entropy` example's fused loss and gradient over each row, the
//!   gradient written over the logits, the loss added to the mean;
//! - [`lce_dx`]: `dx[r0 ..] = G · W`, the `gemm` example's descriptor GEMM over the chunk's
//!   gradient;
//! - [`lce_dw`]: `dW (+)= Gᵀ · x[r0 ..]`, a product over the chunk's tokens whose left operand is
//!   the gradient transposed (on Hopper `wgmma` reads it M-major from the `cp.async` ring); the
//!   first chunk writes `dW`, the others add to it (rounded to the input type after each chunk,
//!   as Liger's `addmm_` does).
//!
//! `ce_setup` (from the `cross_entropy` example) counts the valid labels and zeroes the mean
//! first. The unfused form is the same kernels with one chunk of every token: the whole logits
//! matrix materialized, as `F.linear` then `F.cross_entropy` compute it.

use tile::prelude::*;
use tile::stdlib::grouped_pid;

use crate::cross_entropy::kernels::two_pass;
use crate::gemm::kernels::gemm_desc_acc;

#[tile_kernel(autotune(
    configs = [
        { BM = 128, BN = 256, BK = 64, num_warps = 8 },
        { BM = 128, BN = 128, BK = 64, num_warps = 8 },
        { BM = 128, BN = 128, BK = 64, num_warps = 4 },
    ],
    key = [cn, v, h],
))]
/// `logits = x[r0 .. r0 + cn] · Wᵀ` (`cn × v`, the input type, f32 accumulation), one `BM × BN`
/// block per program in grouped order; both operands through tensor descriptors, `W`'s block
/// loaded `BN × BK` as it lies and transposed for the product.
#[allow(clippy::too_many_arguments)]
pub fn lce_logits(
    x: Ptr<T, { t * h }>,
    w: Ptr<T, { v * h }>,
    logits: Ptr<T, { cn * v }>,
    r0: i32,
    cn: i32,
    t: i32,
    v: i32,
    h: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const<8>,
) {
    let (pm, pn) = grouped_pid(program_id(0), cn, v, BM, BN, GM);
    let x_desc = make_tensor_descriptor(x, [t, h], [h, 1], [BM, BK]);
    let w_desc = make_tensor_descriptor(w, [v, h], [h, 1], [BN, BK]);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..h).step_by(BK) {
        acc = dot(
            x_desc.load([r0 + pm * BM, k0]),
            w_desc.load([pn * BN, k0]).trans(),
            acc,
        );
    }
    let rows = pm * BM + arange(0, BM);
    let cols = pn * BN + arange(0, BN);
    store(
        logits + rows.expand_dims(1) * v + cols.expand_dims(0),
        acc as T,
        (rows < cn).expand_dims(1) & (cols < v).expand_dims(0),
    );
}

#[tile_kernel(num_warps = 16)]
/// The loss and gradient of the chunk's rows (one program each), in place of their logits: the
/// `cross_entropy` example's two passes over 8192-wide tiles (`ce_loop_wide`), with the labels
/// and losses of tokens `r0 …`.
#[allow(clippy::too_many_arguments)]
pub fn lce_ce(
    logits: Ptr<T, { cn * v }>,
    labels: Ptr<i32, t>,
    valid: Ptr<i32, 1>,
    loss: Ptr<f32, t>,
    mean: Ptr<f32, 1>,
    r0: i32,
    cn: i32,
    t: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    T: Type<{ [f16, bf16] }>,
    BLOCK: Const<8192>,
) {
    two_pass(
        logits,
        labels + r0,
        valid,
        loss + r0,
        mean,
        v,
        ignore,
        smoothing,
        BLOCK,
        T,
        0,
    );
}

#[tile_kernel(autotune(
    configs = [
        { BM = 128, BN = 128, BK = 64, num_warps = 8 },
        { BM = 128, BN = 256, BK = 64, num_warps = 8 },
        { BM = 64, BN = 256, BK = 64, num_warps = 4 },
    ],
    key = [cn, v, h],
))]
/// `dx[r0 .. r0 + cn] = G · W` (`G` the chunk's gradient, `cn × v`; `W` `v × h`), the `gemm`
/// example's descriptor GEMM in grouped order, written in the input type.
#[allow(clippy::too_many_arguments)]
pub fn lce_dx(
    g: Ptr<T, { cn * v }>,
    w: Ptr<T, { v * h }>,
    dx: Ptr<T, { t * h }>,
    r0: i32,
    cn: i32,
    t: i32,
    v: i32,
    h: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const<8>,
) {
    let (acc, rows, cols, row_ok, col_ok) = gemm_desc_acc(g, w, cn, h, v, BM, BN, BK, GM);
    store(
        dx + (r0 + rows).expand_dims(1) * h + cols.expand_dims(0),
        acc as T,
        row_ok & col_ok,
    );
}

#[tile_kernel(autotune(
    configs = [
        { BM = 128, BN = 128, BK = 64, PRE = 0, num_warps = 8, num_stages = 2 },
        { BM = 128, BN = 128, BK = 64, PRE = 1, num_warps = 8, num_stages = 2 },
    ],
    key = [cn, v, h],
))]
/// `dW = Gᵀ · x[r0 .. r0 + cn]` (`v × h`), plus `dW`'s current value where `accumulate` is not
/// 0, in the input type: a product over the chunk's tokens whose `A` block is `G`'s `BK × BM`
/// block transposed, in grouped order.
#[allow(clippy::too_many_arguments)]
pub fn lce_dw(
    g: Ptr<T, { cn * v }>,
    x: Ptr<T, { t * h }>,
    dw: Ptr<T, { v * h }>,
    r0: i32,
    cn: i32,
    t: i32,
    v: i32,
    h: i32,
    accumulate: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const,
    BN: Const,
    BK: Const,
    PRE: Const,
    GM: Const<8>,
) {
    let (pm, pn) = grouped_pid(program_id(0), v, h, BM, BN, GM);
    let rows = pm * BM + arange(0, BM);
    let cols = pn * BN + arange(0, BN);
    let ok = (rows < v).expand_dims(1) & (cols < h).expand_dims(0);
    let at = dw + rows.expand_dims(1) * h + cols.expand_dims(0);
    // `dW`'s block read before the product where `PRE` is 1 (its latency hidden under it, at
    // the price of its registers through the loop), else after it.
    let mut old = zeros([BM, BN]) as T;
    if PRE == 1 {
        old = load(at, ok & (accumulate != 0), 0.0);
    }
    let g_desc = make_tensor_descriptor(g, [cn, v], [v, 1], [BK, BM]);
    let x_desc = make_tensor_descriptor(x, [t, h], [h, 1], [BK, BN]);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..cn).step_by(BK) {
        acc = dot(
            g_desc.load([k0, pm * BM]).trans(),
            x_desc.load([r0 + k0, pn * BN]),
            acc,
        );
    }
    if PRE == 0 {
        old = load(at, ok & (accumulate != 0), 0.0);
    }
    store(at, (acc + old as f32) as T, ok);
}

/// Every kernel of this example, each instance (tests assemble them all).
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = lce_logits::KERNELS.to_vec();
    v.extend(lce_ce::KERNELS);
    v.extend(lce_dx::KERNELS);
    v.extend(lce_dw::KERNELS);
    v
}
