//! tile in a program that already holds cudarc (directly, or through candle-core or cubecl):
//! a kernel launched on the caller's stream and on the caller's device memory, with no copy.
//!
//! This crate exists to be built with other crates' cudarc features (see its Cargo.toml): tile
//! must not fix cudarc's link mode or CUDA version, or a build with candle-core's `cuda` feature
//! fails in cudarc's build script. What a candle user writes is the same code: candle's CUDA
//! storage hands out its `CudaSlice` (`CudaStorage::as_cuda_slice::<f32>()`) and its device
//! hands out its `Arc<CudaStream>` (`CudaDevice::cuda_stream()`); [`axpy_on`] takes those.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use tile::prelude::*;

#[tile_kernel]
/// `out = a · x + y`.
pub fn axpy(x: Ptr<f32, n>, y: Ptr<f32, n>, out: Ptr<f32, n>, a: f32, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(
        out + offs,
        a * load(x + offs, mask) + load(y + offs, mask),
        mask,
    );
}

/// `out = a · x + y` on device memory the caller owns, queued on the caller's stream (nothing is
/// copied, nothing synchronized). `Err` when the lengths differ, a slice belongs to another
/// context, or the driver refuses the launch.
pub fn axpy_on(
    stream: &Arc<CudaStream>,
    a: f32,
    x: &CudaSlice<f32>,
    y: &CudaSlice<f32>,
    out: &mut CudaSlice<f32>,
) -> Result<(), tile::Error> {
    let n = out.len();
    if x.len() != n || y.len() != n {
        return Err(tile::Error::Args(format!(
            "axpy: x has {}, y {} and out {n} elements",
            x.len(),
            y.len()
        )));
    }
    let n = i32::try_from(n).map_err(|_| tile::Error::Args("axpy: over 2^31 elements".into()))?;
    let dev = Device::from_stream(stream.clone())?;
    axpy::launch(&dev, cdiv(n, 1024), x, y, out, a, n)
}

/// The same kernel on any tile device (the interpreter where there is no GPU).
pub fn axpy_host(a: f32, x: &[f32], y: &[f32]) -> Result<Vec<f32>, tile::Error> {
    let dev = Device::interpreter();
    let mut out = vec![0.0f32; x.len()];
    let n = x.len() as i32;
    axpy::launch(&dev, cdiv(n, 1024), x, y, &mut out, a, n)?;
    Ok(out)
}
