//! vLLM's `fused_add_rms_norm`, in place, in bf16 and f16 (f32 arithmetic):
//! `residual = x + residual` (rounded to the storage type and written back), then
//! `x = residual / sqrt(mean(residual²) + eps) · w` (written back). One fused kernel (one program
//! per row) against the unfused form: an element-wise add kernel that writes the residual, a
//! per-row kernel that writes the inverse RMS to an f32 scratch buffer, and an element-wise
//! broadcast scale kernel (one program per row and 1024 columns). Each kernel is written once for
//! both element types (`T: Type<…>`); the row kernels hold a row in one tile, one instance per
//! tile width, chosen by the row length.

use tile::prelude::*;

#[tile_kernel(num_warps = auto)]
/// Fused add + RMS norm of each row (`n` ≤ the tile width), both buffers in place. The statistics
/// use the residual as stored (rounded), as vLLM's kernel does.
#[allow(clippy::too_many_arguments)]
pub fn add_rms(
    x: Ptr<T, { rows * n }>,
    residual: Ptr<T, { rows * n }>,
    w: Ptr<T, n>,
    rows: i32,
    n: i32,
    eps: f32,
    T: Type<{ [bf16, f16] }>,
    BLOCK: Const<{ [1024, 4096, 8192] }>,
) {
    let cols = arange(0, BLOCK);
    let mask = cols < n;
    let offs = program_id(0) * n + cols;
    let s = ((load(x + offs, mask) as f32) + load(residual + offs, mask) as f32) as T;
    store(residual + offs, s, mask);
    let r = s as f32;
    let inv = rsqrt((r * r).sum() / (n as f32) + eps);
    store(
        x + offs,
        (r * inv * (load(w + cols, mask) as f32)) as T,
        mask,
    );
}

#[tile_kernel(num_warps = auto)]
/// Unfused step 2: the inverse RMS of each row of the residual, `1 / sqrt(mean(r²) + eps)`.
pub fn rms(
    residual: Ptr<T, { rows * n }>,
    inv: Ptr<f32, rows>,
    rows: i32,
    n: i32,
    eps: f32,
    T: Type<{ [bf16, f16] }>,
    BLOCK: Const<{ [1024, 4096, 8192] }>,
) {
    let cols = arange(0, BLOCK);
    let r = load(residual + program_id(0) * n + cols, cols < n) as f32;
    store(inv + program_id(0), rsqrt((r * r).sum() / (n as f32) + eps));
}

#[tile_kernel]
/// Unfused step 1, element-wise over all `len` elements: `residual = x + residual`.
pub fn residual_add(
    x: Ptr<T, len>,
    residual: Ptr<T, len>,
    len: i32,
    T: Type<{ [bf16, f16] }>,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < len;
    let s = (load(x + offs, mask) as f32) + load(residual + offs, mask) as f32;
    store(residual + offs, s as T, mask);
}

#[tile_kernel]
/// Unfused step 3, element-wise (program (row, column block), as an eager broadcast kernel):
/// `x = residual · inv · w`.
#[allow(clippy::too_many_arguments)]
pub fn rms_scale(
    x: Ptr<T, { rows * n }>,
    residual: Ptr<T, { rows * n }>,
    inv: Ptr<f32, rows>,
    w: Ptr<T, n>,
    rows: i32,
    n: i32,
    T: Type<{ [bf16, f16] }>,
    BLOCK: Const<1024>,
) {
    let cols = program_id(1) * BLOCK + arange(0, BLOCK);
    let mask = cols < n;
    let offs = program_id(0) * n + cols;
    let r = load(residual + offs, mask) as f32;
    store(
        x + offs,
        (r * load(inv + program_id(0)) * (load(w + cols, mask) as f32)) as T,
        mask,
    );
}

/// The tile widths, narrowest first; a row of `n` uses the first that holds it.
pub const WIDTHS: [i32; 3] = [1024, 4096, 8192];

/// Every kernel of this example (every instance).
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    [
        &add_rms::KERNELS[..],
        &rms::KERNELS[..],
        &residual_add::KERNELS[..],
        &rms_scale::KERNELS[..],
    ]
    .concat()
}

/// The one-tile width for rows of `n`.
fn width(n: i32) -> Result<i32, Error> {
    WIDTHS.into_iter().find(|&w| n <= w).ok_or_else(|| {
        Error::Args(format!(
            "add + RMS norm: rows of {n} elements exceed the widest tile ({})",
            WIDTHS[2]
        ))
    })
}

/// The element types the example runs on (those its kernels declare), with the launchers of both
/// forms.
pub trait AddRmsNorm: tile::Element {
    /// Fused add + RMS norm of `rows` rows of `n` (`n` ≤ 8192), in place on `x` and `residual`.
    #[allow(clippy::too_many_arguments)]
    fn fused(
        dev: &Device,
        x: &mut Buffer<Self>,
        residual: &mut Buffer<Self>,
        w: &Buffer<Self>,
        rows: i32,
        n: i32,
        eps: f32,
    ) -> Result<(), Error> {
        let g = Grid::x(rows.max(0) as u32);
        add_rms::launch(dev, g, x, residual, w, rows, n, eps, width(n)?)
    }

    /// Unfused: add, per-row inverse RMS into `inv` (`rows` f32), scale.
    #[allow(clippy::too_many_arguments)]
    fn unfused(
        dev: &Device,
        x: &mut Buffer<Self>,
        residual: &mut Buffer<Self>,
        w: &Buffer<Self>,
        inv: &mut Buffer<f32>,
        rows: i32,
        n: i32,
        eps: f32,
    ) -> Result<(), Error> {
        let block = width(n)?;
        let len = rows
            .checked_mul(n)
            .ok_or_else(|| Error::Args("rows × n overflows i32".into()))?;
        residual_add::launch(dev, Grid::x(cdiv(len, 1024)), &*x, residual, len)?;
        rms::launch(
            dev,
            Grid::x(rows.max(0) as u32),
            &*residual,
            inv,
            rows,
            n,
            eps,
            block,
        )?;
        let g = Grid::xy(rows.max(0) as u32, cdiv(n, 1024));
        rms_scale::launch(dev, g, x, &*residual, &*inv, w, rows, n)
    }
}

impl AddRmsNorm for bf16 {}
impl AddRmsNorm for f16 {}
