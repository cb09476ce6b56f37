//! Softmax over the rows of a matrix: one fused kernel (one program per row: load, max, exp, sum,
//! divide, store), and the unfused form (row max, exp(x − max), row sum, divide: four kernels and
//! three round trips through memory). One instance per tile width, chosen by the row length.

use tile::prelude::*;

macro_rules! softmax_kernels {
    ($($fused:ident, $max:ident, $exp:ident, $sum:ident, $div:ident, $block:literal, $warps:literal;)*) => {$(
        #[tile_kernel(num_warps = $warps)]
        /// Fused softmax of each row (`n` ≤ the tile width).
        pub fn $fused(x: Ptr<f32, { rows * n }>, out: Ptr<f32, { rows * n }>, rows: i32, n: i32, BLOCK: Const<$block>) {
            let cols = arange(0, BLOCK);
            let mask = cols < n;
            let offs = program_id(0) * n + cols;
            let v = load(x + offs, mask, f32::NEG_INFINITY);
            // exp(v − max) as 2^((v − max)·log2 e): one `ex2.approx` per element, as Triton does;
            // the arguments are ≤ 0, where this is accurate to a few ulp.
            let e = ((v - v.max()) * 1.4426950408889634).exp2();
            store(out + offs, e / e.sum(), mask);
        }

        #[tile_kernel(num_warps = $warps)]
        /// Unfused step 1: the maximum of each row.
        pub fn $max(x: Ptr<f32, { rows * n }>, m: Ptr<f32, rows>, rows: i32, n: i32, BLOCK: Const<$block>) {
            let cols = arange(0, BLOCK);
            let v = load(x + program_id(0) * n + cols, cols < n, f32::NEG_INFINITY);
            store(m + program_id(0), v.max());
        }

        #[tile_kernel(num_warps = $warps)]
        /// Unfused step 2: `exp(x − max)`.
        pub fn $exp(x: Ptr<f32, { rows * n }>, m: Ptr<f32, rows>, y: Ptr<f32, { rows * n }>, rows: i32, n: i32, BLOCK: Const<$block>) {
            let cols = arange(0, BLOCK);
            let mask = cols < n;
            let offs = program_id(0) * n + cols;
            store(y + offs, (load(x + offs, mask) - load(m + program_id(0))).exp(), mask);
        }

        #[tile_kernel(num_warps = $warps)]
        /// Unfused step 3: the sum of each row.
        pub fn $sum(y: Ptr<f32, { rows * n }>, s: Ptr<f32, rows>, rows: i32, n: i32, BLOCK: Const<$block>) {
            let cols = arange(0, BLOCK);
            store(s + program_id(0), load(y + program_id(0) * n + cols, cols < n).sum());
        }

        #[tile_kernel(num_warps = $warps)]
        /// Unfused step 4: divide by the row sum.
        pub fn $div(y: Ptr<f32, { rows * n }>, s: Ptr<f32, rows>, out: Ptr<f32, { rows * n }>, rows: i32, n: i32, BLOCK: Const<$block>) {
            let cols = arange(0, BLOCK);
            let mask = cols < n;
            let offs = program_id(0) * n + cols;
            store(out + offs, load(y + offs, mask) / load(s + program_id(0)), mask);
        }
    )*};
}

softmax_kernels! {
    softmax_512, row_max_512, exp_sub_512, row_sum_512, div_512, 512, 4;
    softmax_4096, row_max_4096, exp_sub_4096, row_sum_4096, div_4096, 4096, 8;
    softmax_32768, row_max_32768, exp_sub_32768, row_sum_32768, div_32768, 32768, 16;
}

/// Every kernel of this example.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![
        &softmax_512::KERNEL,
        &row_max_512::KERNEL,
        &exp_sub_512::KERNEL,
        &row_sum_512::KERNEL,
        &div_512::KERNEL,
        &softmax_4096::KERNEL,
        &row_max_4096::KERNEL,
        &exp_sub_4096::KERNEL,
        &row_sum_4096::KERNEL,
        &div_4096::KERNEL,
        &softmax_32768::KERNEL,
        &row_max_32768::KERNEL,
        &exp_sub_32768::KERNEL,
        &row_sum_32768::KERNEL,
        &div_32768::KERNEL,
    ]
}

/// The tile width (and so the kernel set) for rows of `n` elements, or `None` above 32768.
pub fn width_for(n: i32) -> Option<u32> {
    [512, 4096, 32768].into_iter().find(|&b| n <= b as i32)
}

/// Fused softmax of `rows` rows of `n`, choosing the kernel by `n`.
pub fn fused(
    dev: &Device,
    x: &Buffer<f32>,
    out: &mut Buffer<f32>,
    rows: i32,
    n: i32,
) -> Result<(), Error> {
    let g = Grid::x(rows.max(0) as u32);
    match width_for(n) {
        Some(512) => softmax_512::launch(dev, g, x, out, rows, n),
        Some(4096) => softmax_4096::launch(dev, g, x, out, rows, n),
        _ => softmax_32768::launch(dev, g, x, out, rows, n),
    }
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
    let g = Grid::x(rows.max(0) as u32);
    macro_rules! run {
        ($max:ident, $exp:ident, $sum:ident, $div:ident) => {{
            $max::launch(dev, g, x, &mut t.m, rows, n)?;
            $exp::launch(dev, g, x, &t.m, &mut t.y, rows, n)?;
            $sum::launch(dev, g, &t.y, &mut t.s, rows, n)?;
            $div::launch(dev, g, &t.y, &t.s, out, rows, n)
        }};
    }
    match width_for(n) {
        Some(512) => run!(row_max_512, exp_sub_512, row_sum_512, div_512),
        Some(4096) => run!(row_max_4096, exp_sub_4096, row_sum_4096, div_4096),
        _ => run!(row_max_32768, exp_sub_32768, row_sum_32768, div_32768),
    }
}
