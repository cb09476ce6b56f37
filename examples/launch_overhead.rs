//! Host-side cost of one launch through tile's generated wrapper, against cudarc's own launch of
//! the same PTX with the same arguments: mean over 10,000 launches of a one-program kernel.
//! First, the latency of a kernel's first launch (its module loaded on demand) against a launch
//! after `kernel::preload`, on two kernels of the same size that nothing has loaded yet.
//!
//! `cargo run --release --example launch_overhead` (needs a CUDA device).

use std::process::ExitCode;

use cudarc::driver::{LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use tile::prelude::*;
use tile_examples::common::launch_rounds;
use tile_examples::fused_add_mul::kernels::add_mul;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const LAUNCHES: usize = 10_000;
const ROUNDS: usize = 9;

fn run() -> Res<()> {
    let dev = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            println!("skipped: {e}");
            return Ok(());
        }
    };
    let stream = dev.stream().ok_or("no stream")?.clone();
    let n: i32 = 1024;
    let host: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let x = stream.clone_htod(&host)?;
    let y = stream.clone_htod(&host)?;
    let z = stream.clone_htod(&host)?;
    let mut out = stream.alloc_zeros::<f32>(n as usize)?;
    first_launch(&dev, &x, &y, &mut out, n)?;
    // A `Device` around a caller's stream per operation (as a candle custom op builds one).
    let t = std::time::Instant::now();
    for _ in 0..1000 {
        std::hint::black_box(Device::from_stream(stream.clone())?);
    }
    println!(
        "Device::from_stream: {:.2} us per call (mean of 1000)",
        t.elapsed().as_secs_f64() * 1e3
    );

    // cudarc directly: the same PTX the wrapper picks for this device (16-byte-aligned variant).
    let (major, minor) = dev.compute_capability().ok_or("no cc")?;
    let target = add_mul::KERNEL.variants[0]
        .targets
        .iter()
        .find(|t| t.runs_on(major, minor))
        .ok_or("no PTX for this device")?;
    let module = stream.context().load_module(Ptx::from_src(target.ptx))?;
    let func = module.load_function(target.entry)?;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32 * add_mul::KERNEL.variants[0].num_warps, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut raw = || -> Res<()> {
        let mut b = stream.launch_builder(&func);
        b.arg(&x).arg(&y).arg(&z).arg(&mut out).arg(&n);
        // SAFETY: the arguments match the PTX entry's parameters (four f32 buffers of n elements
        // and n), and the kernel masks every access at n.
        unsafe { b.launch(cfg) }?;
        Ok(())
    };
    let mut out2 = stream.alloc_zeros::<f32>(n as usize)?;
    let mut wrapper = || -> Res<()> {
        add_mul::launch(&dev, Grid::x(1), &x, &y, &z, &mut out2, n)?;
        Ok(())
    };
    let (mut raws, mut tiles) = (Vec::new(), Vec::new());
    for (round, (r, t)) in launch_rounds(&stream, LAUNCHES, ROUNDS, &mut raw, &mut wrapper)?
        .into_iter()
        .enumerate()
    {
        println!(
            "round {round}: cudarc launch {r:.2} us, tile wrapper {t:.2} us, difference {:+.2} us",
            t - r
        );
        raws.push(r);
        tiles.push(t);
    }
    let got = stream.clone_dtoh(&out2)?;
    let want: Vec<f32> = host.iter().map(|&v| (v + v) * v).collect();
    if got != want {
        return Err("wrapper launches computed a wrong result".into());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (r, t) = (median(&mut raws), median(&mut tiles));
    println!(
        "launch cost (mean of {LAUNCHES} launches, median of {ROUNDS} rounds): cudarc {r:.2} us, tile {t:.2} us, wrapper adds {:+.2} us",
        t - r
    );
    Ok(())
}

/// Host time (µs) of `f` followed by a synchronization.
fn host_us(dev: &Device, f: impl FnOnce() -> Result<(), tile::Error>) -> Res<f64> {
    let t = std::time::Instant::now();
    f()?;
    dev.synchronize()?;
    Ok(t.elapsed().as_secs_f64() * 1e6)
}

/// First-launch latency without and with `preload` (`add` and `mul`: the same size of PTX,
/// neither loaded yet), and a later launch of each for comparison; each timed launch is followed
/// by a synchronization, so the figures include the kernel (one program, ~µs).
fn first_launch(
    dev: &Device,
    x: &cudarc::driver::CudaSlice<f32>,
    y: &cudarc::driver::CudaSlice<f32>,
    out: &mut cudarc::driver::CudaSlice<f32>,
    n: i32,
) -> Res<()> {
    use tile_examples::fused_add_mul::kernels::{add, mul};
    dev.synchronize()?;
    let cold = host_us(dev, || add::launch(dev, Grid::x(1), x, y, out, n))?;
    let warm_add = host_us(dev, || add::launch(dev, Grid::x(1), x, y, out, n))?;
    let pre = host_us(dev, || mul::preload(dev))?;
    let preloaded = host_us(dev, || mul::launch(dev, Grid::x(1), x, y, out, n))?;
    let warm_mul = host_us(dev, || mul::launch(dev, Grid::x(1), x, y, out, n))?;
    println!(
        "first launch + sync: {cold:.0} us without preload (later launches {warm_add:.0} us); \
         preload {pre:.0} us, then first launch {preloaded:.0} us (later launches {warm_mul:.0} us)"
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("launch_overhead: {e}");
            ExitCode::FAILURE
        }
    }
}
