//! Linear + cross-entropy, forward and backward, without the `tokens × vocab` logits: `loss =
//! mean_t CE(x[t] · Wᵀ, labels[t])` over the tokens whose label is not `ignore` (with label
//! smoothing, as PyTorch's `F.cross_entropy`), and its gradients `dx = G · W` and `dW = Gᵀ · x`
//! with `G = (softmax(x Wᵀ) − onehot) / valid` (`x`: `t × h`, `W`: `v × h`, PyTorch's `Linear`
//! weight; `dx` and `dW` in the input type).
//!
//! The tokens go through in chunks of `cn` rows (the host picks `cn` so that one chunk's logits
//! fit a budget, 128 MiB: 512 tokens at a 128256-word vocabulary); per chunk:
//!
//! - the `gemm` example's [`gemm_nt`](crate::gemm::kernels::gemm_nt): the chunk's logits
//!   `x[r0 ..] · Wᵀ`, rounded to the input type as a framework's `Linear` rounds them (`W`'s rows
//!   are loaded as they lie and read transposed by the tensor cores);
//! - [`lce_ce`]: the `cross_entropy` example's fused loss and gradient over each row, the
//!   gradient written over the logits, the loss added to the mean;
//! - [`lce_dx`]: `dx[r0 ..] = G · W`, the `gemm` example's descriptor GEMM over the chunk's
//!   gradient;
//! - the `gemm` example's [`gemm_tn`](crate::gemm::kernels::gemm_tn): `dW (+)= Gᵀ · x[r0 ..]`,
//!   a product over the chunk's tokens whose left operand is the gradient transposed (read
//!   M-major from the `cp.async` ring); the first chunk writes `dW`, the others add to it
//!   (rounded to the input type after each chunk, as Liger's `addmm_` does).
//!
//! `ce_setup` (from the `cross_entropy` example) counts the valid labels and zeroes the mean
//! first. The unfused form is the same kernels with one chunk of every token: the whole logits
//! matrix materialized, as `F.linear` then `F.cross_entropy` compute it.

use tile::prelude::*;

use crate::cross_entropy::kernels::two_pass;
use crate::gemm::kernels::gemm_desc_acc;

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

/// Every kernel of this example, each instance (tests assemble them all).
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = lce_ce::KERNELS.to_vec();
    v.extend(lce_dx::KERNELS);
    v
}
