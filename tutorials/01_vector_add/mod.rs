//! Triton's tutorial 01, vector addition: `output = x + y`, one program per `BLOCK_SIZE`
//! elements, the last block masked. The kernel is the tutorial's line for line.

use tile::prelude::*;

use crate::check::{compare, err, Rng};

#[tile_kernel]
/// `output_ptr[i] = x_ptr[i] + y_ptr[i]` for `i < n_elements`.
pub fn add_kernel(
    x_ptr: Ptr<f32, n_elements>,      // *Pointer* to first input vector.
    y_ptr: Ptr<f32, n_elements>,      // *Pointer* to second input vector.
    output_ptr: Ptr<f32, n_elements>, // *Pointer* to output vector.
    n_elements: i32,                  // Size of the vector.
    BLOCK_SIZE: Const<1024>,          // Number of elements each program should process.
) {
    let pid = program_id(0); // triton: tl.program_id(axis=0)
    let block_start = pid * BLOCK_SIZE;
    let offsets = block_start + arange(0, BLOCK_SIZE);
    let mask = offsets < n_elements;
    let x = load(x_ptr + offsets, mask = mask);
    let y = load(y_ptr + offsets, mask = mask);
    let output = x + y;
    store(output_ptr + offsets, output, mask = mask);
}

/// The tutorial's `add(x, y)`: allocates the output and launches one program per 1024
/// elements.
pub fn add(dev: &Device, x: &Buffer<f32>, y: &Buffer<f32>) -> Result<Buffer<f32>, Error> {
    let mut output = dev.zeros::<f32>(x.len())?;
    add_into(dev, x, y, &mut output)?;
    Ok(output)
}

/// [`add`] into a given `output` of `x.len()` elements: the launch alone (the tutorial's
/// `torch.empty_like` costs the device nothing; a zeroed allocation does, so a benchmark
/// allocates once and times this).
pub fn add_into(
    dev: &Device,
    x: &Buffer<f32>,
    y: &Buffer<f32>,
    output: &mut Buffer<f32>,
) -> Result<(), Error> {
    let n_elements = x.len();
    let grid = Grid::x(cdiv(n_elements, 1024));
    add_kernel::launch(dev, grid, x, y, output, n_elements as i32)
}

/// Runs [`add_kernel`] on `size` uniform random elements (the tutorial's `torch.rand`) and
/// compares with `x + y` computed on the host: the same single f32 addition, so the result
/// must be bit-identical (tolerance 0).
pub fn run_check(dev: &Device, size: usize, seed: u64) -> Result<(), String> {
    let mut r = Rng::new(seed);
    let x = r.vec(size, Rng::uniform);
    let y = r.vec(size, Rng::uniform);
    let (dx, dy) = (dev.upload(&x).map_err(err)?, dev.upload(&y).map_err(err)?);
    let out = dev
        .download(&add(dev, &dx, &dy).map_err(err)?)
        .map_err(err)?;
    let got: Vec<f64> = out.iter().map(|&v| f64::from(v)).collect();
    let want: Vec<f64> = x.iter().zip(&y).map(|(a, b)| f64::from(a + b)).collect();
    compare(&format!("vector add, {size}"), &got, &want, |_| 0.0)
}

/// Every kernel of this tutorial.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![&add_kernel::KERNEL]
}
