//! tile inside a program that owns its CUDA state through cudarc (as candle and other Rust GPU
//! stacks do): the program's context, stream and device memory are used as they are — no copy
//! into tile buffers, no second context — and the results stay in the program's `CudaSlice`s.
//!
//! - `Device::from_stream(stream)` runs tile launches on the caller's stream (so they are ordered
//!   with the caller's own work on it);
//! - a `&CudaSlice<T>` / `&CudaView<T>` is a read-only argument, a `&mut CudaSlice<T>` /
//!   `&mut CudaViewMut<T>` a written one, checked against the kernel's extents at launch;
//! - a candle user gets the same two things from a tensor's CUDA storage
//!   (`storage.as_cuda_slice::<f32>()?`) and its device (`device.cuda_stream()`), and wraps an
//!   output slice back into a tensor (`CudaStorage::wrap_cuda_slice`); see docs/guide/interop.md.
//!
//! `cargo run --release --example cudarc_interop` (needs a CUDA device; says so without one).

use std::process::ExitCode;

use cudarc::driver::CudaContext;
use tile::prelude::*;
use tile_examples::fused_add_mul::kernels::add_mul;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn run() -> Res<()> {
    if Device::count() == 0 {
        println!("skipped: no CUDA device");
        return Ok(());
    }
    // The program's own CUDA state.
    let ctx = CudaContext::new(0)?;
    let stream = ctx.new_stream()?;
    let n = 1_000_003usize;
    let host: Vec<f32> = (0..n).map(|i| (i % 977) as f32 / 100.0).collect();
    let x = stream.clone_htod(&host)?;
    let y = stream.clone_htod(&host)?;
    let z = stream.clone_htod(&host)?;
    let mut out = stream.alloc_zeros::<f32>(n)?;

    // tile on that stream and that memory.
    let dev = Device::from_stream(stream.clone())?;
    add_mul::launch(&dev, cdiv(n, 1024), &x, &y, &z, &mut out, n as i32)?;
    // A view: the second half of the buffers, written in place of the first result's half.
    let h = n / 2;
    {
        let (xv, yv, zv) = (x.slice(h..), y.slice(h..), z.slice(h..));
        let mut ov = out.slice_mut(h..);
        let rest = (n - h) as i32;
        add_mul::launch(&dev, cdiv(rest, 1024), &xv, &yv, &zv, &mut ov, rest)?;
    }

    // The result read back with cudarc, on the program's stream.
    let got = stream.clone_dtoh(&out)?;
    let bad = (0..n)
        .filter(|&i| got[i] != (host[i] + host[i]) * host[i])
        .count();
    println!(
        "add_mul on cudarc-owned memory ({n} elements, {}): {}",
        dev.name(),
        if bad == 0 {
            "ok".into()
        } else {
            format!("{bad} wrong")
        }
    );
    if bad > 0 {
        return Err("wrong results".into());
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cudarc_interop: {e}");
            ExitCode::FAILURE
        }
    }
}
