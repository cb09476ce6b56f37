//! Conv-BN-ReLU: a 2-D convolution (NHWC, stride and zero padding) as an implicit GEMM on the
//! tensor cores, with BatchNorm (inference) folded into its weights and bias and the ReLU in the
//! epilogue — the ONNX/TensorRT chapter's `y = ReLU(x * w' + b')`, `w' = γ·w/σ`,
//! `b' = γ·(b − μ)/σ + β`.
//!
//! The product is a GEMM of `M = N·P·Q` output pixels by `K = R·S·C` filter taps and channels by
//! `Cout` output channels. `A` is never formed: the tile of pixel rows for filter tap `(r, s)` and
//! channels `c0 .. c0 + BK` is read straight from `x` (NHWC, so the channels are contiguous),
//! the taps that fall in the padding masked to 0. `B` is the filter laid out `[R, S, C, Cout]`
//! (`K × Cout` row-major), the layout the host's folding writes. The loop runs over `R·S·⌈C/BK⌉`
//! steps; each step's address is a function of the step alone, so `pipeline-dot` gives both
//! operands its `cp.async` ring (and `wgmma` on sm_90a) as it does a plain GEMM's.
//!
//! The tile (`BM × BN`, 4 or 8 warps, 3 or 4 stages, split-K or not) is timed per layer at the
//! first launch: `host::TUNER` chooses among [`conv2d`]'s and [`conv2d_split`]'s
//! configurations (channel counts that are multiples of 8); other layers run [`conv2d_any`].
//!
//! - **Fused**: [`conv2d`] with the folded filter and bias and `relu = 1`.
//! - **Unfused** (the graph as exported, one kernel per node): [`conv2d`] with the filter and
//!   bias as trained and `relu = 0`, then [`batch_norm`], then [`relu`], each reading and
//!   writing the `N·P·Q × Cout` activations.

use tile::prelude::*;
use tile::stdlib::grouped_pid;

/// The accumulator of one `BM × BN` block (row block `pm`, column block `pn`) of the
/// convolution over loop steps `t_lo .. t_hi` (step `t` is filter tap `t / ⌈cin/BK⌉` and
/// channel block `t mod ⌈cin/BK⌉`): `Σ x[img, oh·stride − pad + r, ow·stride − pad + s, c] ·
/// wt[r, s, c, co]`, with the block's rows (output pixels), columns (output channels) and
/// their masks: `(acc, rows, cols, row_ok, col_ok)`.
#[tile_fn]
fn conv_acc(
    x: Tile,
    wt: Tile,
    h: i32,
    w: i32,
    cin: i32,
    cout: i32,
    fw: i32,
    stride: i32,
    pad: i32,
    m: i32,
    p: i32,
    q: i32,
    pm: Tile,
    pn: Tile,
    t_lo: Tile,
    t_hi: Tile,
    BM: Const,
    BN: Const,
    BK: Const,
) -> (Tile, Tile, Tile, Tile, Tile) {
    let rows = pm * BM + arange(0, BM);
    let cols = pn * BN + arange(0, BN);
    let row_ok = rows < m;
    let col_ok = cols < cout;
    let img = rows / (p * q);
    let pix = rows - img * (p * q);
    let oh = pix / q;
    let ih0 = oh * stride - pad;
    let iw0 = (pix - oh * q) * stride - pad;
    let base = img * (h * w * cin);
    let chans = arange(0, BK);
    let cblocks = cdiv(cin, BK);
    let mut acc = zeros([BM, BN]);
    for t in t_lo..t_hi {
        let tap = t / cblocks;
        let c0 = (t - tap * cblocks) * BK;
        let r = tap / fw;
        let ih = ih0 + r;
        let iw = iw0 + (tap - r * fw);
        let inside = row_ok & (ih >= 0) & (ih < h) & (iw >= 0) & (iw < w);
        let ch = c0 + chans;
        let ch_ok = ch < cin;
        let a = load(
            x + (base + (ih * w + iw) * cin).expand_dims(1) + ch.expand_dims(0),
            inside.expand_dims(1) & ch_ok.expand_dims(0),
            0.0,
        );
        let b = load(
            wt + (tap * cin + ch).expand_dims(1) * cout + cols.expand_dims(0),
            ch_ok.expand_dims(1) & col_ok.expand_dims(0),
            0.0,
        );
        acc = dot(a, b, acc);
    }
    (acc, rows, cols, row_ok, col_ok)
}

/// `v + bias[col]`, through ReLU where `relu` is not 0 (f32).
#[tile_fn]
fn bias_act(v: Tile, bias: Tile, idx: Tile, ok: Tile, relu: i32) -> Tile {
    let v = v + load(bias + idx, ok, 0.0);
    select(relu != 0, max(v, 0.0), v)
}

/// One program of [`conv2d`] and [`conv2d_any`]: its block (in grouped order) over every
/// loop step, the bias and the activation applied to the accumulator, written to `y`
/// (`[N, P, Q, Cout]`) as `T`.
#[tile_fn]
fn conv_block(
    x: Tile,
    wt: Tile,
    bias: Tile,
    y: Tile,
    h: i32,
    w: i32,
    cin: i32,
    cout: i32,
    fh: i32,
    fw: i32,
    stride: i32,
    pad: i32,
    m: i32,
    p: i32,
    q: i32,
    relu: i32,
    T: Type,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const,
) {
    let (pm, pn) = grouped_pid(program_id(0), m, cout, BM, BN, GM);
    let steps = fh * fw * cdiv(cin, BK);
    let (acc, rows, cols, row_ok, col_ok) = conv_acc(
        x, wt, h, w, cin, cout, fw, stride, pad, m, p, q, pm, pn, 0, steps, BM, BN, BK,
    );
    let v = bias_act(acc, bias, cols.expand_dims(0), col_ok.expand_dims(0), relu);
    store(
        y + rows.expand_dims(1) * cout + cols.expand_dims(0),
        v as T,
        row_ok.expand_dims(1) & col_ok.expand_dims(0),
    );
}

#[tile_kernel(
    specialize = aligned,
    autotune(
        configs = [
            { BM = 128, BN = 64, num_warps = 4 },
            { BM = 128, BN = 64, num_warps = 4, num_stages = 2 },
            { BM = 128, BN = 128, num_warps = 4 },
            { BM = 128, BN = 128, num_warps = 4, num_stages = 2 },
            { BM = 64, BN = 128, num_warps = 4 },
            { BM = 128, BN = 256, num_warps = 8 },
            { BM = 64, BN = 256, num_warps = 4 },
        ],
        key = [m, cin, cout],
    )
)]
/// `y = act(conv2d(x, wt) + bias)` over NHWC `x` (`n × h × w × cin`), the filter `wt` laid out
/// `[fh, fw, cin, cout]`, an f32 bias per output channel, stride `stride` and zero padding
/// `pad` on every side; `y` is `n × p × q × cout` with `p = (h + 2·pad − fh)/stride + 1` (and
/// `q` likewise), `m = n·p·q`. `act` is ReLU where `relu` is not 0, else the identity. A 1-D
/// grid of `⌈m/BM⌉·⌈cout/BN⌉` programs in grouped order, `BM × BN × 64` tiles. Only the
/// aligned specialization (`cin` and `cout` multiples of 8: rows of 16 bytes, every copy a
/// 16-byte `cp.async`), so that every tile fits one kernel's compile budget; [`conv2d_any`]
/// takes the other layers. The host's tuner (`host::TUNER`) times the configurations per layer.
#[allow(clippy::too_many_arguments)]
pub fn conv2d(
    x: Ptr<T, { n * h * w * cin }>,
    wt: Ptr<T, { fh * fw * cin * cout }>,
    bias: Ptr<f32, cout>,
    y: Ptr<T, { m * cout }>,
    n: i32,
    h: i32,
    w: i32,
    cin: i32,
    cout: i32,
    fh: i32,
    fw: i32,
    stride: i32,
    pad: i32,
    m: i32,
    p: i32,
    q: i32,
    relu: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const,
    BN: Const,
    BK: Const<64>,
    GM: Const<8>,
) {
    conv_block(
        x, wt, bias, y, h, w, cin, cout, fh, fw, stride, pad, m, p, q, relu, T, BM, BN, BK, GM,
    );
}

#[tile_kernel(num_warps = 4)]
/// [`conv2d`] for any channel counts (every specialization, down to element-wise copies):
/// `128 × 64 × 64` tiles on 4 warps, for layers whose `cin` or `cout` is not a multiple of 8
/// (an RGB input's 3 channels).
#[allow(clippy::too_many_arguments)]
pub fn conv2d_any(
    x: Ptr<T, { n * h * w * cin }>,
    wt: Ptr<T, { fh * fw * cin * cout }>,
    bias: Ptr<f32, cout>,
    y: Ptr<T, { m * cout }>,
    n: i32,
    h: i32,
    w: i32,
    cin: i32,
    cout: i32,
    fh: i32,
    fw: i32,
    stride: i32,
    pad: i32,
    m: i32,
    p: i32,
    q: i32,
    relu: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const<128>,
    BN: Const<64>,
    BK: Const<64>,
    GM: Const<8>,
) {
    conv_block(
        x, wt, bias, y, h, w, cin, cout, fh, fw, stride, pad, m, p, q, relu, T, BM, BN, BK, GM,
    );
}

#[tile_kernel(
    specialize = aligned,
    autotune(
        configs = [
            { BM = 128, BN = 128, num_warps = 4 },
            { BM = 64, BN = 128, num_warps = 4 },
        ],
        key = [m, cin, cout, splits],
    )
)]
/// Split-K [`conv2d`] for layers with too few blocks to fill the GPU (deep layers at small
/// batches): program `(i, j)` computes block `i` (grouped order) over the `j`-th of `splits`
/// equal runs of loop steps and writes its f32 accumulator to slice `j` of `part`
/// (`splits × m × cout`); [`conv_split_sum`] adds the slices, the bias and the activation.
#[allow(clippy::too_many_arguments)]
pub fn conv2d_split(
    x: Ptr<T, { n * h * w * cin }>,
    wt: Ptr<T, { fh * fw * cin * cout }>,
    part: Ptr<f32, { splits * m * cout }>,
    n: i32,
    h: i32,
    w: i32,
    cin: i32,
    cout: i32,
    fh: i32,
    fw: i32,
    stride: i32,
    pad: i32,
    m: i32,
    p: i32,
    q: i32,
    splits: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const,
    BN: Const,
    BK: Const<64>,
    GM: Const<8>,
) {
    let (pm, pn) = grouped_pid(program_id(0), m, cout, BM, BN, GM);
    let steps = fh * fw * cdiv(cin, BK);
    let per = cdiv(steps, splits);
    let lo = program_id(1) * per;
    let hi = min(steps, lo + per);
    let (acc, rows, cols, row_ok, col_ok) = conv_acc(
        x, wt, h, w, cin, cout, fw, stride, pad, m, p, q, pm, pn, lo, hi, BM, BN, BK,
    );
    store(
        part + (program_id(1) * m + rows).expand_dims(1) * cout + cols.expand_dims(0),
        acc,
        row_ok.expand_dims(1) & col_ok.expand_dims(0),
    );
}

#[tile_kernel(num_warps = 4)]
/// `y = act(Σ_s part[s] + bias)` over the `splits` slices [`conv2d_split`] wrote (`mc = m ·
/// cout` elements each, the bias indexed by the channel `i mod cout`), written as `T`.
#[allow(clippy::too_many_arguments)]
pub fn conv_split_sum(
    part: Ptr<f32, { splits * mc }>,
    bias: Ptr<f32, cout>,
    y: Ptr<T, mc>,
    mc: i32,
    cout: i32,
    splits: i32,
    relu: i32,
    T: Type<{ [f16, bf16] }>,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let ok = offs < mc;
    let mut acc = zeros([BLOCK]);
    for s in 0..splits {
        acc = acc + load(part + s * mc + offs, ok, 0.0);
    }
    store(
        y + offs,
        bias_act(acc, bias, offs % cout, ok, relu) as T,
        ok,
    );
}

#[tile_kernel(num_warps = 4)]
/// BatchNorm in inference, as the exported graph's separate node runs it: `z` (`m × c`, the
/// channels contiguous) becomes `(z − mean[ch]) / sqrt(var[ch] + eps) · gamma[ch] + beta[ch]`,
/// in place, in f32. A 2-D grid: `BR` rows by `BC` channels per program.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    z: Ptr<T, { m * c }>,
    mean: Ptr<f32, c>,
    var: Ptr<f32, c>,
    gamma: Ptr<f32, c>,
    beta: Ptr<f32, c>,
    m: i32,
    c: i32,
    eps: f32,
    T: Type<{ [f16, bf16] }>,
    BR: Const<32>,
    BC: Const<64>,
) {
    let rows = program_id(0) * BR + arange(0, BR);
    let ch = program_id(1) * BC + arange(0, BC);
    let ch_ok = ch < c;
    let scale = load(gamma + ch, ch_ok, 0.0) / sqrt(load(var + ch, ch_ok, 1.0) + eps);
    let shift = load(beta + ch, ch_ok, 0.0) - load(mean + ch, ch_ok, 0.0) * scale;
    let at = z + rows.expand_dims(1) * c + ch.expand_dims(0);
    let ok = (rows < m).expand_dims(1) & ch_ok.expand_dims(0);
    let v = load(at, ok, 0.0) as f32;
    store(
        at,
        (v * scale.expand_dims(0) + shift.expand_dims(0)) as T,
        ok,
    );
}

#[tile_kernel(num_warps = 4)]
/// ReLU, in place: `z = max(z, 0)` over `len` elements, `BLOCK` per program.
pub fn relu(z: Ptr<T, len>, len: i32, T: Type<{ [f16, bf16] }>, BLOCK: Const<2048>) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let ok = i < len;
    store(z + i, max(load(z + i, ok, 0.0) as f32, 0.0) as T, ok);
}

/// Every kernel of this example, each instance (tests assemble them all).
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = conv2d::KERNELS.to_vec();
    v.extend(conv2d_any::KERNELS);
    v.extend(conv2d_split::KERNELS);
    v.extend(conv_split_sum::KERNELS);
    v.extend(batch_norm::KERNELS);
    v.extend(relu::KERNELS);
    v
}
