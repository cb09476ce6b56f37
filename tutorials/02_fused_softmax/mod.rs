//! Triton's tutorial 02, fused softmax: a fixed number of persistent programs, each taking rows
//! `program_id, program_id + num_programs, …` of a row-major matrix (rows `input_row_stride`
//! apart), one row per iteration held whole in one block of `BLOCK_SIZE` columns.
//!
//! One construct changed: the tutorial's loop `for row_idx in tl.range(row_start, n_rows,
//! row_step)` steps by `row_step = tl.num_programs(0)`, a run-time value, and a `for` loop's
//! step is a compile-time constant. The port walks the same rows in the same order with a
//! `while` over `row_idx`, advanced by `row_step` at the end of the body.

use tile::prelude::*;

use crate::check::{compare, err, Rng};

// The tutorial picks `num_warps = 8`, and `num_stages = 4` for its row loop where a program may
// use more than 200 KB of shared memory (sm_80, sm_90): a kernel option here, which has the
// compiler load the next row at the top of the loop body, ahead of this row's reductions and
// store (`prefetch-rows`, in registers, while a thread holds at most 32 prefetched values:
// `BLOCK_SIZE` up to 8192). `math = fast`: Triton's `/` and `tl.exp`.
#[tile_kernel(num_warps = 8, num_stages = 4, math = fast)]
/// Row softmax of `n_rows × n_cols` (`n_cols ≤ BLOCK_SIZE`), rows strided by the program count.
#[allow(clippy::too_many_arguments)]
pub fn softmax_kernel(
    output_ptr: Ptr<f32>,
    input_ptr: Ptr<f32>,
    input_row_stride: i32,
    output_row_stride: i32,
    n_rows: i32,
    n_cols: i32,
    BLOCK_SIZE: Const<{ [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384] }>,
) {
    // starting row of the program
    let row_start = program_id(0);
    let row_step = num_programs(0);
    // triton: for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
    let mut row_idx = row_start;
    while row_idx < n_rows {
        // The stride represents how much we need to increase the pointer to advance 1 row
        let row_start_ptr = input_ptr + row_idx * input_row_stride;
        // The block size is the next power of two greater than n_cols, so we can fit each
        // row in a single block
        let col_offsets = arange(0, BLOCK_SIZE);
        let input_ptrs = row_start_ptr + col_offsets;
        // Load the row, using a mask since BLOCK_SIZE may be > than n_cols
        let mask = col_offsets < n_cols;
        let row = load(input_ptrs, mask = mask, other = f32::NEG_INFINITY);
        // Subtract maximum for numerical stability
        let row_minus_max = row - row.max(0); // triton: tl.max(row, axis=0)
        let numerator = exp(row_minus_max);
        let denominator = numerator.sum(0);
        let softmax_output = numerator / denominator;
        // Write back output to DRAM
        let output_row_start_ptr = output_ptr + row_idx * output_row_stride;
        let output_ptrs = output_row_start_ptr + col_offsets;
        store(output_ptrs, softmax_output, mask = mask);
        row_idx += row_step;
    }
}

/// The tutorial's `softmax(x)` for an `n_rows × n_cols` matrix whose rows are `x_row_stride`
/// apart (and so are the output's): `BLOCK_SIZE` the next power of two of `n_cols` (at least
/// 32, the smallest compiled), `num_programs` persistent programs (the tutorial derives it from
/// the SM count and the kernel's occupancy), at most one per row.
pub fn softmax(
    dev: &Device,
    x: &Buffer<f32>,
    x_row_stride: usize,
    (n_rows, n_cols): (usize, usize),
    num_programs: usize,
) -> Result<Buffer<f32>, Error> {
    let mut y = dev.zeros::<f32>(x.len())?;
    softmax_into(dev, x, x_row_stride, (n_rows, n_cols), num_programs, &mut y)?;
    Ok(y)
}

/// [`softmax`] into a given `y` laid out as `x`: the launch alone, for timing.
pub fn softmax_into(
    dev: &Device,
    x: &Buffer<f32>,
    x_row_stride: usize,
    (n_rows, n_cols): (usize, usize),
    num_programs: usize,
    y: &mut Buffer<f32>,
) -> Result<(), Error> {
    let block_size = n_cols.next_power_of_two().max(32) as i32;
    let num_programs = num_programs.min(n_rows);
    softmax_kernel::launch(
        dev,
        Grid::x(num_programs as u32),
        y,
        x,
        x_row_stride as i32,
        x_row_stride as i32,
        n_rows as i32,
        n_cols as i32,
        block_size,
    )
}

/// Softmax of each row in f64.
pub fn reference(x: &[f32], stride: usize, (n_rows, n_cols): (usize, usize)) -> Vec<f64> {
    let mut out = vec![0.0; n_rows * n_cols];
    for r in 0..n_rows {
        let row = &x[r * stride..r * stride + n_cols];
        let max = row
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let e: Vec<f64> = row.iter().map(|&v| (f64::from(v) - max).exp()).collect();
        let s: f64 = e.iter().sum();
        for (c, v) in e.iter().enumerate() {
            out[r * n_cols + c] = v / s;
        }
    }
    out
}

/// Runs [`softmax_kernel`] on an `n_rows × n_cols` standard normal matrix (the tutorial's
/// `torch.randn`) whose rows are `pad` elements longer than `n_cols`, with `num_programs`
/// programs, against [`reference()`]. Tolerance per element `(n_cols + 8) · 2⁻²⁴ · want + 1e-12`:
/// Triton's `exp` (`math = fast`) is within `2⁻²² + |x| · 2⁻²⁴` relative (below 1e-6 for the
/// arguments `x − max(x) > −20` of normal rows), the division within 2 ulp, and the f32 sum of
/// `n_cols` positive terms within `n_cols · 2⁻²⁴` relative in any order.
pub fn run_check(
    dev: &Device,
    (n_rows, n_cols): (usize, usize),
    pad: usize,
    num_programs: usize,
    seed: u64,
) -> Result<(), String> {
    let stride = n_cols + pad;
    let x = Rng::new(seed).vec(n_rows * stride, Rng::normal);
    let dx = dev.upload(&x).map_err(err)?;
    let y = softmax(dev, &dx, stride, (n_rows, n_cols), num_programs).map_err(err)?;
    let y = dev.download(&y).map_err(err)?;
    let mut got = Vec::with_capacity(n_rows * n_cols);
    for r in 0..n_rows {
        got.extend(
            y[r * stride..r * stride + n_cols]
                .iter()
                .map(|&v| f64::from(v)),
        );
    }
    let want = reference(&x, stride, (n_rows, n_cols));
    let rel = (n_cols + 8) as f64 * 2f64.powi(-24);
    compare(
        &format!("softmax, {n_rows} x {n_cols} (+{pad}), {num_programs} programs"),
        &got,
        &want,
        |i| rel * want[i] + 1e-12,
    )
}

/// Every kernel of this tutorial.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    softmax_kernel::KERNELS.to_vec()
}
