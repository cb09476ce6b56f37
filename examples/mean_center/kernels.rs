//! Mean centering of the rows of a matrix, `y = x − mean(row)`, in f32: one fused kernel (one
//! program per row: load, mean, subtract, store) and the unfused pair (row mean to memory, then an
//! element-wise broadcast subtraction). The row kernels hold a row in one tile, one instance per
//! tile width (`BLOCK: Const<…>`), chosen by the row length.

use tile::prelude::*;

#[tile_kernel(num_warps = auto)]
/// Fused: each row minus its mean (`n` ≤ the tile width; masked lanes load 0).
pub fn mean_center(
    x: Ptr<f32, { rows * n }>,
    y: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    BLOCK: Const<{ [1024, 4096, 8192] }>,
) {
    let cols = arange(0, BLOCK);
    let mask = cols < n;
    let offs = program_id(0) * n + cols;
    let v = load(x + offs, mask);
    store(y + offs, v - v.sum() / (n as f32), mask);
}

#[tile_kernel(num_warps = auto)]
/// Unfused step 1: the mean of each row.
pub fn row_mean(
    x: Ptr<f32, { rows * n }>,
    mean: Ptr<f32, rows>,
    rows: i32,
    n: i32,
    BLOCK: Const<{ [1024, 4096, 8192] }>,
) {
    let cols = arange(0, BLOCK);
    let v = load(x + program_id(0) * n + cols, cols < n);
    store(mean + program_id(0), v.sum() / (n as f32));
}

#[tile_kernel]
/// Unfused step 2, element-wise (program (row, column block), as an eager broadcast kernel):
/// subtract the row's mean.
pub fn sub_mean(
    x: Ptr<f32, { rows * n }>,
    mean: Ptr<f32, rows>,
    y: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    BLOCK: Const<1024>,
) {
    let cols = program_id(1) * BLOCK + arange(0, BLOCK);
    let mask = cols < n;
    let offs = program_id(0) * n + cols;
    store(
        y + offs,
        load(x + offs, mask) - load(mean + program_id(0)),
        mask,
    );
}

/// Every kernel of this example (every instance).
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    [
        &mean_center::KERNELS[..],
        &row_mean::KERNELS[..],
        &sub_mean::KERNELS[..],
    ]
    .concat()
}

/// The tile width for rows of `n` elements, or `None` above 8192.
pub fn width_for(n: i32) -> Option<i32> {
    [1024, 4096, 8192].into_iter().find(|&b| n <= b)
}

fn too_wide(n: i32) -> Error {
    Error::Args(format!(
        "mean_center: rows of {n} elements exceed the widest tile (8192)"
    ))
}

/// Fused mean centering of `rows` rows of `n`, choosing the instance by `n`.
pub fn fused(
    dev: &Device,
    x: &Buffer<f32>,
    y: &mut Buffer<f32>,
    rows: i32,
    n: i32,
) -> Result<(), Error> {
    let block = width_for(n).ok_or_else(|| too_wide(n))?;
    mean_center::launch(dev, Grid::x(rows.max(0) as u32), x, y, rows, n, block)
}

/// Unfused mean centering: row means into `mean` (`rows` f32), then the subtraction.
pub fn unfused(
    dev: &Device,
    x: &Buffer<f32>,
    mean: &mut Buffer<f32>,
    y: &mut Buffer<f32>,
    rows: i32,
    n: i32,
) -> Result<(), Error> {
    let block = width_for(n).ok_or_else(|| too_wide(n))?;
    row_mean::launch(dev, Grid::x(rows.max(0) as u32), x, mean, rows, n, block)?;
    sub_mean::launch(
        dev,
        Grid::xy(rows.max(0) as u32, cdiv(n, 1024)),
        x,
        &*mean,
        y,
        rows,
        n,
    )
}
