//! Mean centering of the rows of a matrix, `y = x − mean(row)`, in f32: one fused kernel (one
//! program per row: load, mean, subtract, store) and the unfused pair (row mean to memory, then an
//! element-wise broadcast subtraction). The reductions take one instance per tile width, chosen by
//! the row length (the language has no loops yet).

use tile::prelude::*;

macro_rules! mean_center_kernels {
    ($($fused:ident, $mean:ident, $block:literal, $warps:literal;)*) => {$(
        #[tile_kernel(num_warps = $warps)]
        /// Fused: each row minus its mean (`n` ≤ the tile width; masked lanes load 0).
        pub fn $fused(x: Ptr<f32, { rows * n }>, y: Ptr<f32, { rows * n }>, rows: i32, n: i32, BLOCK: Const<$block>) {
            let cols = arange(0, BLOCK);
            let mask = cols < n;
            let offs = program_id(0) * n + cols;
            let v = load(x + offs, mask);
            store(y + offs, v - v.sum() / (n as f32), mask);
        }

        #[tile_kernel(num_warps = $warps)]
        /// Unfused step 1: the mean of each row.
        pub fn $mean(x: Ptr<f32, { rows * n }>, mean: Ptr<f32, rows>, rows: i32, n: i32, BLOCK: Const<$block>) {
            let cols = arange(0, BLOCK);
            let v = load(x + program_id(0) * n + cols, cols < n);
            store(mean + program_id(0), v.sum() / (n as f32));
        }
    )*};
}

mean_center_kernels! {
    mean_center_1024, row_mean_1024, 1024, 4;
    mean_center_4096, row_mean_4096, 4096, 8;
    mean_center_8192, row_mean_8192, 8192, 16;
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

/// Every kernel of this example.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![
        &mean_center_1024::KERNEL,
        &row_mean_1024::KERNEL,
        &mean_center_4096::KERNEL,
        &row_mean_4096::KERNEL,
        &mean_center_8192::KERNEL,
        &row_mean_8192::KERNEL,
        &sub_mean::KERNEL,
    ]
}

/// The tile width (and so the kernel set) for rows of `n` elements, or `None` above 8192.
pub fn width_for(n: i32) -> Option<i32> {
    [1024, 4096, 8192].into_iter().find(|&b| n <= b)
}

fn too_wide(n: i32) -> Error {
    Error::Args(format!(
        "mean_center: rows of {n} elements exceed the widest tile (8192)"
    ))
}

/// Fused mean centering of `rows` rows of `n`, choosing the kernel by `n`.
pub fn fused(
    dev: &Device,
    x: &Buffer<f32>,
    y: &mut Buffer<f32>,
    rows: i32,
    n: i32,
) -> Result<(), Error> {
    let g = Grid::x(rows.max(0) as u32);
    match width_for(n) {
        Some(1024) => mean_center_1024::launch(dev, g, x, y, rows, n),
        Some(4096) => mean_center_4096::launch(dev, g, x, y, rows, n),
        Some(_) => mean_center_8192::launch(dev, g, x, y, rows, n),
        None => Err(too_wide(n)),
    }
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
    let g = Grid::x(rows.max(0) as u32);
    match width_for(n) {
        Some(1024) => row_mean_1024::launch(dev, g, x, mean, rows, n)?,
        Some(4096) => row_mean_4096::launch(dev, g, x, mean, rows, n)?,
        Some(_) => row_mean_8192::launch(dev, g, x, mean, rows, n)?,
        None => return Err(too_wide(n)),
    }
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
