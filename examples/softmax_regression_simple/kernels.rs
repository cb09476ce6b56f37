//! Softmax regression, `probs = softmax(x @ w)` over the classes (`x`: `batch × dim`, `w`:
//! `dim × classes`, f32), as the document's simple fused kernel: one program per block of 16 rows
//! computes its logits with `dot` over 32-wide slices of `dim` (a loop), keeps them in registers
//! and applies the row softmax before the only store. Unfused: the same matmul writing the logits,
//! then a row softmax kernel reading them back.
//!
//! The class dimension is one tile, declared as a specialization (`BC` of 16, 64 or 128): the
//! launcher picks the narrowest that holds the classes.

use tile::prelude::*;
use tile::stdlib::matmul_acc;

#[tile_kernel(num_warps = 4)]
/// Fused: logits of `BM` rows by `dot` over `dim` in `BK` slices, then softmax over the classes.
#[allow(clippy::too_many_arguments)]
pub fn softmax_regression(
    x: Ptr<f32, { batch * dim }>,
    w: Ptr<f32, { dim * classes }>,
    probs: Ptr<f32, { batch * classes }>,
    batch: i32,
    dim: i32,
    classes: i32,
    BM: Const<16>,
    BK: Const<32>,
    BC: Const<{ [16, 64, 128] }>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cls = arange(0, BC);
    let row_ok = (rows < batch).expand_dims(1);
    let cls_ok = (cls < classes).expand_dims(0);
    let zero = zeros([BM, BC]);
    let logits = matmul_acc(
        zero, x, dim, w, classes, rows, cls, row_ok, cls_ok, 0, dim, BK, 0,
    );
    let z = select(cls_ok, logits, f32::NEG_INFINITY);
    let e = (z - z.max(1).expand_dims(1)).exp();
    let p = e / e.sum(1).expand_dims(1);
    store(
        probs + rows.expand_dims(1) * classes + cls.expand_dims(0),
        p,
        row_ok & cls_ok,
    );
}

#[tile_kernel(num_warps = 4)]
/// Unfused step 1: `logits = x @ w`, the same blocking as the fused kernel.
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    x: Ptr<f32, { batch * dim }>,
    w: Ptr<f32, { dim * classes }>,
    logits: Ptr<f32, { batch * classes }>,
    batch: i32,
    dim: i32,
    classes: i32,
    BM: Const<16>,
    BK: Const<32>,
    BC: Const<{ [16, 64, 128] }>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cls = arange(0, BC);
    let row_ok = (rows < batch).expand_dims(1);
    let cls_ok = (cls < classes).expand_dims(0);
    let zero = zeros([BM, BC]);
    let acc = matmul_acc(
        zero, x, dim, w, classes, rows, cls, row_ok, cls_ok, 0, dim, BK, 0,
    );
    store(
        logits + rows.expand_dims(1) * classes + cls.expand_dims(0),
        acc,
        row_ok & cls_ok,
    );
}

#[tile_kernel(num_warps = 4)]
/// Unfused step 2: softmax over each row of the logits, `BM` rows per program.
pub fn softmax_rows(
    logits: Ptr<f32, { batch * classes }>,
    probs: Ptr<f32, { batch * classes }>,
    batch: i32,
    classes: i32,
    BM: Const<16>,
    BC: Const<{ [16, 64, 128] }>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cls = arange(0, BC);
    let ok = (rows < batch).expand_dims(1) & (cls < classes).expand_dims(0);
    let offs = rows.expand_dims(1) * classes + cls.expand_dims(0);
    let z = load(logits + offs, ok, f32::NEG_INFINITY);
    let e = (z - z.max(1).expand_dims(1)).exp();
    store(probs + offs, e / e.sum(1).expand_dims(1), ok);
}

/// Every kernel of this example.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    [
        &softmax_regression::KERNELS[..],
        &matmul::KERNELS[..],
        &softmax_rows::KERNELS[..],
    ]
    .concat()
}

/// Rows per program.
const BM: u32 = 16;

/// The class tile for `classes` (≤ 128): the narrowest declared width that holds them.
fn class_tile(classes: i32) -> Result<i32, Error> {
    [16, 64, 128]
        .into_iter()
        .find(|&w| classes <= w)
        .ok_or_else(|| Error::Args(format!("{classes} classes; at most 128 fit one tile")))
}

fn grid(batch: i32) -> Grid {
    Grid::x((batch.max(0) as u32).div_ceil(BM))
}

/// Fused: one kernel.
pub fn fused(
    dev: &Device,
    x: &Buffer<f32>,
    w: &Buffer<f32>,
    probs: &mut Buffer<f32>,
    (batch, dim, classes): (i32, i32, i32),
) -> Result<(), Error> {
    let bc = class_tile(classes)?;
    softmax_regression::launch(dev, grid(batch), x, w, probs, batch, dim, classes, bc)
}

/// Unfused: matmul to `logits`, then softmax.
pub fn unfused(
    dev: &Device,
    x: &Buffer<f32>,
    w: &Buffer<f32>,
    logits: &mut Buffer<f32>,
    probs: &mut Buffer<f32>,
    (batch, dim, classes): (i32, i32, i32),
) -> Result<(), Error> {
    let bc = class_tile(classes)?;
    matmul::launch(dev, grid(batch), x, w, logits, batch, dim, classes, bc)?;
    softmax_rows::launch(dev, grid(batch), logits, probs, batch, classes, bc)
}
