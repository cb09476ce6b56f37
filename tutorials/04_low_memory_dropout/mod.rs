//! Triton's tutorial 04, low-memory dropout: the baseline kernel that reads a keep mask from
//! memory, and the seeded kernel that draws the mask from `rand(seed, offsets)` (Philox, Triton's
//! stream bit for bit), so that no mask is stored and the same seed gives the same mask.
//!
//! Names: the tutorial's `_dropout` and `_seeded_dropout` lose their leading underscore (each
//! kernel is a Rust module of that name).

use tile::prelude::*;

use crate::check::{compare, err, Rng};

// `math = fast`: Triton's `/` (here and in `seeded_dropout`).
#[tile_kernel(math = fast)]
/// Dropout with a given mask: `output = x_keep ? x / (1 − p) : 0`.
pub fn dropout(
    x_ptr: Ptr<f32, n_elements>,      // pointer to the input
    x_keep_ptr: Ptr<i32, n_elements>, // pointer to a mask of 0s and 1s
    output_ptr: Ptr<f32, n_elements>, // pointer to the output
    n_elements: i32,                  // number of elements in the `x` tensor
    p: f32,                           // probability that an element of `x` is changed to zero
    BLOCK_SIZE: Const<1024>,
) {
    let pid = program_id(0);
    let block_start = pid * BLOCK_SIZE;
    let offsets = block_start + arange(0, BLOCK_SIZE);
    let mask = offsets < n_elements;
    // Load data
    let x = load(x_ptr + offsets, mask = mask);
    let x_keep = load(x_keep_ptr + offsets, mask = mask);
    // The line below is the crucial part.
    // triton: tl.where(x_keep, x / (1 - p), 0.0): `select` takes a bool mask, not an integer tile
    let output = select(x_keep != 0, x / (1.0 - p), 0.0);
    // Write-back output
    store(output_ptr + offsets, output, mask = mask);
}

#[tile_kernel(math = fast)]
/// Seeded dropout: element `i` is kept where `rand(seed, i) > p`.
pub fn seeded_dropout(
    x_ptr: Ptr<f32, n_elements>,
    output_ptr: Ptr<f32, n_elements>,
    n_elements: i32,
    p: f32,
    seed: i32,
    BLOCK_SIZE: Const<1024>,
) {
    // compute memory offsets of elements handled by this instance
    let pid = program_id(0);
    let block_start = pid * BLOCK_SIZE;
    let offsets = block_start + arange(0, BLOCK_SIZE);
    // load data from x
    let mask = offsets < n_elements;
    let x = load(x_ptr + offsets, mask = mask);
    // randomly prune it
    let random = rand(seed, offsets);
    let x_keep = random > p;
    // write-back
    let output = select(x_keep, x / (1.0 - p), 0.0);
    store(output_ptr + offsets, output, mask = mask);
}

/// The tutorial's `dropout(x, x_keep, p)`.
pub fn run_dropout(
    dev: &Device,
    x: &Buffer<f32>,
    x_keep: &Buffer<i32>,
    p: f32,
) -> Result<Buffer<f32>, Error> {
    let mut output = dev.zeros::<f32>(x.len())?;
    run_dropout_into(dev, x, x_keep, p, &mut output)?;
    Ok(output)
}

/// [`run_dropout`] into a given `output` of `x.len()` elements: the launch alone, for timing.
pub fn run_dropout_into(
    dev: &Device,
    x: &Buffer<f32>,
    x_keep: &Buffer<i32>,
    p: f32,
    output: &mut Buffer<f32>,
) -> Result<(), Error> {
    let n_elements = x.len();
    let grid = Grid::x(cdiv(n_elements, 1024));
    dropout::launch(dev, grid, x, x_keep, output, n_elements as i32, p)
}

/// The tutorial's `seeded_dropout(x, p, seed)`.
pub fn run_seeded_dropout(
    dev: &Device,
    x: &Buffer<f32>,
    p: f32,
    seed: i32,
) -> Result<Buffer<f32>, Error> {
    let mut output = dev.zeros::<f32>(x.len())?;
    run_seeded_dropout_into(dev, x, p, seed, &mut output)?;
    Ok(output)
}

/// [`run_seeded_dropout`] into a given `output` of `x.len()` elements: the launch alone, for
/// timing.
pub fn run_seeded_dropout_into(
    dev: &Device,
    x: &Buffer<f32>,
    p: f32,
    seed: i32,
    output: &mut Buffer<f32>,
) -> Result<(), Error> {
    let n_elements = x.len();
    let grid = Grid::x(cdiv(n_elements, 1024));
    seeded_dropout::launch(dev, grid, x, output, n_elements as i32, p, seed)
}

/// `x / (1 − p)` where `keep`, else 0, in f32 as the kernels compute it.
pub fn reference(x: &[f32], keep: impl Fn(usize) -> bool, p: f32) -> Vec<f64> {
    let kept: Vec<f64> = (0..x.len())
        .map(|i| {
            if keep(i) {
                f64::from(x[i] / (1.0 - p))
            } else {
                0.0
            }
        })
        .collect();
    kept
}

/// Runs both kernels on `size` standard normal values with drop probability `p`: the baseline
/// with a random keep mask, the seeded one with `seed` (the mask Triton's `tl.rand` gives,
/// [`tile::random::rand`]), twice with `seed` (the outputs must be identical) and once with
/// `seed + 1` (the mask must differ, for sizes where a collision is negligible). Kept values
/// within `2⁻²²` relative of the host's f32 `x / (1 − p)` (a division rounded once on the host;
/// the GPU may take 2 ulp); dropped values exactly 0.
pub fn run_check(dev: &Device, size: usize, p: f32, seed: i32) -> Result<(), String> {
    let mut r = Rng::new(seed as u64);
    let x = r.vec(size, Rng::normal);
    let keep = r.vec(size, |r| i32::from(r.uniform() > p));
    let tol = |want: &[f64]| {
        let w = want.to_vec();
        move |i: usize| 2f64.powi(-22) * w[i].abs()
    };
    let as_f64 = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();

    let dx = dev.upload(&x).map_err(err)?;
    let dkeep = dev.upload(&keep).map_err(err)?;
    let out = dev.download(&run_dropout(dev, &dx, &dkeep, p).map_err(err)?);
    let want = reference(&x, |i| keep[i] != 0, p);
    compare(
        &format!("dropout, {size}, p = {p}"),
        &as_f64(out.map_err(err)?),
        &want,
        tol(&want),
    )?;

    let seeded = |s: i32| -> Result<Vec<f32>, String> {
        let out = run_seeded_dropout(dev, &dx, p, s).map_err(err)?;
        dev.download(&out).map_err(err)
    };
    let (out1, out2, out3) = (seeded(seed)?, seeded(seed)?, seeded(seed.wrapping_add(1))?);
    let mask =
        |s: i32| move |i: usize| tile::random::rand(s as i64 as u64, u64::from(i as u32)) > p;
    let want = reference(&x, mask(seed), p);
    let what = format!("seeded dropout, {size}, p = {p}, seed {seed}");
    compare(&what, &as_f64(out1.clone()), &want, tol(&want))?;
    if out1
        .iter()
        .zip(&out2)
        .any(|(a, b)| a.to_bits() != b.to_bits())
    {
        return Err(format!("{what}: a second run with the same seed differs"));
    }
    let want3 = reference(&x, mask(seed.wrapping_add(1)), p);
    compare(
        &format!("{what} + 1"),
        &as_f64(out3.clone()),
        &want3,
        tol(&want3),
    )?;
    if size >= 64 && out1 == out3 {
        return Err(format!("{what}: seed + 1 gives the same mask"));
    }
    Ok(())
}

/// Every kernel of this tutorial.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![&dropout::KERNEL, &seeded_dropout::KERNEL]
}
