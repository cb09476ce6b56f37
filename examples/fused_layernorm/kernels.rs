//! Layer norm over the rows of a matrix, `y = (x − mean) / sqrt(var + eps) · w + b` (`w`, `b` per
//! column), in f32 and in f16 (f16 storage, f32 arithmetic): one fused kernel (one program per row:
//! load, mean, variance, normalize, scale and shift, store) and the unfused form PyTorch eager
//! would run: row mean, row variance (one program per row), then normalize and scale-and-shift as
//! element-wise broadcast kernels (one program per row and 1024 columns); the per-row statistics
//! and the normalized rows go through memory. Rows of up to 4096 elements are one tile (one instance
//! per tile width, chosen by the row length); wider rows loop over 8192-wide tiles (three passes
//! over the row: sum, squared deviations, normalize), so any row length works.
//!
//! Each kernel is written once: the element type is a `Type` parameter and the tile width a
//! `Const` with several values, so every (type, width) instance is compiled and the launch picks
//! the one of its buffers and the width the launcher passes. `num_warps = auto` gives the 1024-wide
//! instances 4 warps and the 4096-wide ones 8 (measured: 16 warps at 4096, `auto(8)`, ran f16 at
//! 76% of the copy rate instead of 88%).

use tile::prelude::*;

#[tile_kernel(num_warps = 4)]
/// Fused layer norm of each row (`n` ≤ the tile width). Two-pass statistics inside the tile;
/// masked lanes load 0 and are excluded from the variance by `select`. Four warps at both widths:
/// at 4096 columns f16 reached 91% of the copy rate with 4 and 88% with 8, f32 96% with either
/// (H100, docs/DECISIONS.md).
#[allow(clippy::too_many_arguments)]
pub fn ln(
    x: Ptr<T, { rows * n }>,
    w: Ptr<T, n>,
    b: Ptr<T, n>,
    y: Ptr<T, { rows * n }>,
    rows: i32,
    n: i32,
    eps: f32,
    T: Type<{ [f32, f16] }>,
    BLOCK: Const<{ [1024, 4096] }>,
) {
    let cols = arange(0, BLOCK);
    let mask = cols < n;
    let offs = program_id(0) * n + cols;
    let v = load(x + offs, mask) as f32;
    let mean = v.sum() / (n as f32);
    let d = select(mask, v - mean, 0.0);
    let rstd = 1.0 / sqrt((d * d).sum() / (n as f32) + eps);
    let out = d * rstd * (load(w + cols, mask) as f32) + load(b + cols, mask) as f32;
    store(y + offs, out as T, mask);
}

#[tile_kernel(num_warps = auto)]
/// Unfused step 1: the mean of each row (f32).
pub fn ln_mean(
    x: Ptr<T, { rows * n }>,
    mean: Ptr<f32, rows>,
    rows: i32,
    n: i32,
    T: Type<{ [f32, f16] }>,
    BLOCK: Const<{ [1024, 4096] }>,
) {
    let cols = arange(0, BLOCK);
    let v = load(x + program_id(0) * n + cols, cols < n) as f32;
    store(mean + program_id(0), v.sum() / (n as f32));
}

#[tile_kernel(num_warps = auto)]
/// Unfused step 2: the (biased) variance of each row, given its mean (f32).
pub fn ln_var(
    x: Ptr<T, { rows * n }>,
    mean: Ptr<f32, rows>,
    var: Ptr<f32, rows>,
    rows: i32,
    n: i32,
    T: Type<{ [f32, f16] }>,
    BLOCK: Const<{ [1024, 4096] }>,
) {
    let cols = arange(0, BLOCK);
    let mask = cols < n;
    let v = load(x + program_id(0) * n + cols, mask) as f32;
    let d = select(mask, v - load(mean + program_id(0)), 0.0);
    store(var + program_id(0), (d * d).sum() / (n as f32));
}

#[tile_kernel(num_warps = 16)]
/// Fused layer norm of each row, any length: three loops over `BLOCK`-wide slices of the row
/// (mean, variance about it, normalize); the second and third passes mostly hit L2.
#[allow(clippy::too_many_arguments)]
pub fn ln_wide(
    x: Ptr<T, { rows * n }>,
    w: Ptr<T, n>,
    b: Ptr<T, n>,
    y: Ptr<T, { rows * n }>,
    rows: i32,
    n: i32,
    eps: f32,
    T: Type<{ [f32, f16] }>,
    BLOCK: Const<8192>,
) {
    let row = program_id(0) * n;
    let cols = arange(0, BLOCK);
    let mut acc = zeros(BLOCK);
    for off in (0..n).step_by(BLOCK) {
        let c = off + cols;
        acc += load(x + row + c, c < n) as f32;
    }
    let mean = acc.sum() / (n as f32);
    let mut sq = zeros(BLOCK);
    for off in (0..n).step_by(BLOCK) {
        let c = off + cols;
        let d = select(c < n, (load(x + row + c, c < n) as f32) - mean, 0.0);
        sq += d * d;
    }
    let rstd = 1.0 / sqrt(sq.sum() / (n as f32) + eps);
    for off in (0..n).step_by(BLOCK) {
        let c = off + cols;
        let m = c < n;
        let d = (load(x + row + c, m) as f32) - mean;
        let out = d * rstd * (load(w + c, m) as f32) + load(b + c, m) as f32;
        store(y + row + c, out as T, m);
    }
}

#[tile_kernel(num_warps = 16)]
/// Unfused step 1 for any row length: the mean of each row (f32).
pub fn ln_mean_wide(
    x: Ptr<T, { rows * n }>,
    mean: Ptr<f32, rows>,
    rows: i32,
    n: i32,
    T: Type<{ [f32, f16] }>,
    BLOCK: Const<8192>,
) {
    let row = program_id(0) * n;
    let cols = arange(0, BLOCK);
    let mut acc = zeros(BLOCK);
    for off in (0..n).step_by(BLOCK) {
        let c = off + cols;
        acc += load(x + row + c, c < n) as f32;
    }
    store(mean + program_id(0), acc.sum() / (n as f32));
}

#[tile_kernel(num_warps = 16)]
/// Unfused step 2 for any row length: the variance of each row about its mean (f32).
pub fn ln_var_wide(
    x: Ptr<T, { rows * n }>,
    mean: Ptr<f32, rows>,
    var: Ptr<f32, rows>,
    rows: i32,
    n: i32,
    T: Type<{ [f32, f16] }>,
    BLOCK: Const<8192>,
) {
    let row = program_id(0) * n;
    let cols = arange(0, BLOCK);
    let m = load(mean + program_id(0));
    let mut sq = zeros(BLOCK);
    for off in (0..n).step_by(BLOCK) {
        let c = off + cols;
        let d = select(c < n, (load(x + row + c, c < n) as f32) - m, 0.0);
        sq += d * d;
    }
    store(var + program_id(0), sq.sum() / (n as f32));
}

#[tile_kernel(num_warps = 8)]
/// Split rows, step 1 (program (chunk, row)): the mean and the sum of squared deviations about it
/// of one `CHUNK`-wide slice of a row, into `stats[row][chunk]`.
pub fn ln_split_stats(
    x: Ptr<T, { rows * n }>,
    stats: Ptr<f32, { rows * splits * 2 }>,
    rows: i32,
    n: i32,
    splits: i32,
    T: Type<{ [f32, f16] }>,
    CHUNK: Const<4096>,
) {
    let chunk = program_id(0);
    let row = program_id(1);
    let cols = chunk * CHUNK + arange(0, CHUNK);
    let m = cols < n;
    let v = load(x + row * n + cols, m) as f32;
    let count = min(n - chunk * CHUNK, CHUNK) as f32;
    let mean = v.sum() / count;
    let d = select(m, v - mean, 0.0);
    let at = (row * splits + chunk) * 2;
    store(stats + at, mean);
    store(stats + at + 1, (d * d).sum());
}

#[tile_kernel(num_warps = 8)]
/// Split rows, step 2 (program (chunk, row)): combines the row's chunk statistics (Chan's
/// formula: `M2 = Σ M2_c + n_c · (mean_c − mean)²`) and normalizes its slice.
#[allow(clippy::too_many_arguments)]
pub fn ln_split_apply(
    x: Ptr<T, { rows * n }>,
    w: Ptr<T, n>,
    b: Ptr<T, n>,
    y: Ptr<T, { rows * n }>,
    stats: Ptr<f32, { rows * splits * 2 }>,
    rows: i32,
    n: i32,
    splits: i32,
    eps: f32,
    T: Type<{ [f32, f16] }>,
    CHUNK: Const<4096>,
    S: Const<64>,
) {
    let chunk = program_id(0);
    let row = program_id(1);
    let s = arange(0, S);
    let sm = s < splits;
    let at = (row * splits + s) * 2;
    let means = load(stats + at, sm);
    let m2s = load(stats + at + 1, sm);
    let counts = select(sm, min(n - s * CHUNK, CHUNK) as f32, 0.0);
    let mean = (means * counts).sum() / (n as f32);
    let dm = select(sm, means - mean, 0.0);
    let rstd = 1.0 / sqrt((m2s + counts * dm * dm).sum() / (n as f32) + eps);
    let cols = chunk * CHUNK + arange(0, CHUNK);
    let m = cols < n;
    let v = load(x + row * n + cols, m) as f32;
    let out = (v - mean) * rstd * (load(w + cols, m) as f32) + load(b + cols, m) as f32;
    store(y + row * n + cols, out as T, m);
}

#[tile_kernel]
/// Unfused step 3, element-wise (program (row, column block), as an eager broadcast kernel):
/// `xhat = (x − mean) / sqrt(var + eps)`, stored in the input's type.
#[allow(clippy::too_many_arguments)]
pub fn ln_norm(
    x: Ptr<T, { rows * n }>,
    mean: Ptr<f32, rows>,
    var: Ptr<f32, rows>,
    xhat: Ptr<T, { rows * n }>,
    rows: i32,
    n: i32,
    eps: f32,
    T: Type<{ [f32, f16] }>,
    BLOCK: Const<1024>,
) {
    let row = program_id(0);
    let cols = program_id(1) * BLOCK + arange(0, BLOCK);
    let mask = cols < n;
    let offs = row * n + cols;
    let d = (load(x + offs, mask) as f32) - load(mean + row);
    store(xhat + offs, (d / sqrt(load(var + row) + eps)) as T, mask);
}

#[tile_kernel]
/// Unfused step 4, element-wise (program (row, column block)): `y = xhat · w + b`.
#[allow(clippy::too_many_arguments)]
pub fn ln_affine(
    xhat: Ptr<T, { rows * n }>,
    w: Ptr<T, n>,
    b: Ptr<T, n>,
    y: Ptr<T, { rows * n }>,
    rows: i32,
    n: i32,
    T: Type<{ [f32, f16] }>,
    BLOCK: Const<1024>,
) {
    let cols = program_id(1) * BLOCK + arange(0, BLOCK);
    let mask = cols < n;
    let offs = program_id(0) * n + cols;
    let out = (load(xhat + offs, mask) as f32) * (load(w + cols, mask) as f32)
        + load(b + cols, mask) as f32;
    store(y + offs, out as T, mask);
}

/// Every kernel of this example (every instance).
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    [
        &ln::KERNELS[..],
        &ln_mean::KERNELS[..],
        &ln_var::KERNELS[..],
        &ln_wide::KERNELS[..],
        &ln_mean_wide::KERNELS[..],
        &ln_var_wide::KERNELS[..],
        &ln_split_stats::KERNELS[..],
        &ln_split_apply::KERNELS[..],
        &ln_norm::KERNELS[..],
        &ln_affine::KERNELS[..],
    ]
    .concat()
}

/// Intermediates of the unfused form.
pub struct Scratch<T> {
    /// Row means.
    pub mean: Buffer<f32>,
    /// Row variances.
    pub var: Buffer<f32>,
    /// The normalized rows, `(x − mean) / sqrt(var + eps)`.
    pub xhat: Buffer<T>,
}

/// The one-tile width for rows of `n`, or `None` when the looped kernels take them.
fn width(n: i32) -> Option<i32> {
    [1024, 4096].into_iter().find(|&w| n <= w)
}

/// The element types layer norm runs on (those its kernels declare), with the launchers of both
/// forms.
pub trait LayerNorm: tile::Element {
    /// Fused layer norm of `rows` rows of `n`, choosing the kernel by `n`.
    #[allow(clippy::too_many_arguments)]
    fn fused(
        dev: &Device,
        x: &Buffer<Self>,
        w: &Buffer<Self>,
        b: &Buffer<Self>,
        y: &mut Buffer<Self>,
        rows: i32,
        n: i32,
        eps: f32,
    ) -> Result<(), Error> {
        let g = Grid::x(rows.max(0) as u32);
        match width(n) {
            Some(block) => ln::launch(dev, g, x, w, b, y, rows, n, eps, block),
            None => ln_wide::launch(dev, g, x, w, b, y, rows, n, eps),
        }
    }

    /// Unfused layer norm: four kernels, intermediates in `s`.
    #[allow(clippy::too_many_arguments)]
    fn unfused(
        dev: &Device,
        x: &Buffer<Self>,
        w: &Buffer<Self>,
        b: &Buffer<Self>,
        s: &mut Scratch<Self>,
        y: &mut Buffer<Self>,
        rows: i32,
        n: i32,
        eps: f32,
    ) -> Result<(), Error> {
        let g = Grid::x(rows.max(0) as u32);
        match width(n) {
            Some(block) => {
                ln_mean::launch(dev, g, x, &mut s.mean, rows, n, block)?;
                ln_var::launch(dev, g, x, &s.mean, &mut s.var, rows, n, block)?;
            }
            None => {
                ln_mean_wide::launch(dev, g, x, &mut s.mean, rows, n)?;
                ln_var_wide::launch(dev, g, x, &s.mean, &mut s.var, rows, n)?;
            }
        }
        let ge = Grid::xy(rows.max(0) as u32, cdiv(n, 1024));
        ln_norm::launch(dev, ge, x, &s.mean, &s.var, &mut s.xhat, rows, n, eps)?;
        ln_affine::launch(dev, ge, &s.xhat, w, b, y, rows, n)
    }

    /// Layer norm with each row split over programs of [`SPLIT_CHUNK`] columns (two kernels:
    /// chunk statistics into `stats`, at least `rows · splits(n) · 2` floats, then combine and
    /// normalize), for few wide rows that one program per row would leave most SMs idle on. Rows of
    /// up to `64 · SPLIT_CHUNK` elements.
    #[allow(clippy::too_many_arguments)]
    fn split(
        dev: &Device,
        x: &Buffer<Self>,
        w: &Buffer<Self>,
        b: &Buffer<Self>,
        stats: &mut Buffer<f32>,
        y: &mut Buffer<Self>,
        rows: i32,
        n: i32,
        eps: f32,
    ) -> Result<(), Error> {
        let k = splits(n);
        if k > 64 {
            return Err(Error::Args(format!(
                "layer norm split rows: {n} columns are {k} chunks of {SPLIT_CHUNK}; at most 64"
            )));
        }
        let g = Grid::xy(k as u32, rows.max(0) as u32);
        ln_split_stats::launch(dev, g, x, stats, rows, n, k)?;
        ln_split_apply::launch(dev, g, x, w, b, y, stats, rows, n, k, eps)
    }
}

/// Columns per program in [`LayerNorm::split`].
pub const SPLIT_CHUNK: i32 = 4096;

/// Chunks of [`SPLIT_CHUNK`] a row of `n` splits into (at least 1).
pub fn splits(n: i32) -> i32 {
    ((n.max(1) + SPLIT_CHUNK - 1) / SPLIT_CHUNK).max(1)
}

impl LayerNorm for f32 {}
impl LayerNorm for f16 {}
