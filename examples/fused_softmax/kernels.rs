//! Softmax over the rows of a matrix: one fused kernel (one program per row: load, max, exp, sum,
//! divide, store), and the unfused form (row max, exp(x − max), row sum, divide: four kernels and
//! three round trips through memory).
//!
//! Each kernel is specialized for three tile widths (`BLOCK: Const<{[512, 4096, 32768]}>`, warps
//! chosen by `num_warps = auto`: 4, 8, 16); the host functions pick the width from the row length.

use tile::prelude::*;

#[tile_kernel(num_warps = auto)]
/// Fused softmax of each row (`n` ≤ the tile width).
pub fn softmax(
    x: Ptr<f32, { rows * n }>,
    out: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    BLOCK: Const<{ [512, 4096, 32768] }>,
) {
    let cols = arange(0, BLOCK);
    let mask = cols < n;
    let offs = program_id(0) * n + cols;
    let v = load(x + offs, mask, f32::NEG_INFINITY);
    // exp(v − max) as 2^((v − max)·log2 e): one `ex2.approx` per element, as Triton does; the
    // arguments are ≤ 0, where this is accurate to a few ulp.
    let e = ((v - v.max()) * 1.4426950408889634).exp2();
    store(out + offs, e / e.sum(), mask);
}

#[tile_kernel(num_warps = auto)]
/// Unfused step 1: the maximum of each row.
pub fn row_max(
    x: Ptr<f32, { rows * n }>,
    m: Ptr<f32, rows>,
    rows: i32,
    n: i32,
    BLOCK: Const<{ [512, 4096, 32768] }>,
) {
    let cols = arange(0, BLOCK);
    let v = load(x + program_id(0) * n + cols, cols < n, f32::NEG_INFINITY);
    store(m + program_id(0), v.max());
}

#[tile_kernel(num_warps = auto)]
/// Unfused step 2: `exp(x − max)`.
pub fn exp_sub(
    x: Ptr<f32, { rows * n }>,
    m: Ptr<f32, rows>,
    y: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    BLOCK: Const<{ [512, 4096, 32768] }>,
) {
    let cols = arange(0, BLOCK);
    let mask = cols < n;
    let offs = program_id(0) * n + cols;
    store(
        y + offs,
        (load(x + offs, mask) - load(m + program_id(0))).exp(),
        mask,
    );
}

#[tile_kernel(num_warps = auto)]
/// Unfused step 3: the sum of each row.
pub fn row_sum(
    y: Ptr<f32, { rows * n }>,
    s: Ptr<f32, rows>,
    rows: i32,
    n: i32,
    BLOCK: Const<{ [512, 4096, 32768] }>,
) {
    let cols = arange(0, BLOCK);
    store(
        s + program_id(0),
        load(y + program_id(0) * n + cols, cols < n).sum(),
    );
}

#[tile_kernel(num_warps = auto)]
/// Unfused step 4: divide by the row sum.
pub fn div(
    y: Ptr<f32, { rows * n }>,
    s: Ptr<f32, rows>,
    out: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    BLOCK: Const<{ [512, 4096, 32768] }>,
) {
    let cols = arange(0, BLOCK);
    let mask = cols < n;
    let offs = program_id(0) * n + cols;
    store(
        out + offs,
        load(y + offs, mask) / load(s + program_id(0)),
        mask,
    );
}

/// Every kernel of this example (every specialization).
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    [
        &softmax::KERNELS,
        &row_max::KERNELS,
        &exp_sub::KERNELS,
        &row_sum::KERNELS,
        &div::KERNELS,
    ]
    .into_iter()
    .flat_map(|ks| ks.iter().copied())
    .collect()
}

/// The tile width for rows of `n` elements: the smallest declared one that holds the row (the
/// largest if none does, which the kernels' masks then cut short — callers check `n` first).
pub fn width_for(n: i32) -> i32 {
    softmax::values::BLOCK
        .iter()
        .copied()
        .find(|&b| n <= b)
        .unwrap_or(32768)
}

/// Fused softmax of `rows` rows of `n`.
pub fn fused(
    dev: &Device,
    x: &Buffer<f32>,
    out: &mut Buffer<f32>,
    rows: i32,
    n: i32,
) -> Result<(), Error> {
    softmax::launch(
        dev,
        Grid::x(rows.max(0) as u32),
        x,
        out,
        rows,
        n,
        width_for(n),
    )
}

/// Scratch buffers of the unfused form.
pub struct Scratch {
    /// Row maxima.
    pub m: Buffer<f32>,
    /// `exp(x − max)`.
    pub y: Buffer<f32>,
    /// Row sums.
    pub s: Buffer<f32>,
}

/// Unfused softmax: four kernels, three intermediates in memory.
pub fn unfused(
    dev: &Device,
    x: &Buffer<f32>,
    t: &mut Scratch,
    out: &mut Buffer<f32>,
    rows: i32,
    n: i32,
) -> Result<(), Error> {
    let (g, b) = (Grid::x(rows.max(0) as u32), width_for(n));
    row_max::launch(dev, g, x, &mut t.m, rows, n, b)?;
    exp_sub::launch(dev, g, x, &t.m, &mut t.y, rows, n, b)?;
    row_sum::launch(dev, g, &t.y, &mut t.s, rows, n, b)?;
    div::launch(dev, g, &t.y, &t.s, out, rows, n, b)
}
