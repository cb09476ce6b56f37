//! `(x + y) * z`: one fused kernel against the unfused pair (add, then mul) and a CPU reference.
//!
//! `cargo run --release --example fused_add_mul` — on a GPU: checks both on n = 1, 17, 1000003 and
//! 2^27 and times them on 2^27 f32 elements (median of CUDA events after warm-up), against the
//! device-to-device copy bandwidth measured in the same run. Without a GPU: checks both on the
//! interpreter. `--quick` skips the timing (used under compute-sanitizer).

use std::process::ExitCode;
use tile_examples::{common, fused_add_mul::kernels};

use common::{copy_bandwidth, print_table, rel_l2, time_ms, Rng};
use kernels::{add, add_mul, mul};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

struct Inputs {
    x: Buffer<f32>,
    y: Buffer<f32>,
    z: Buffer<f32>,
    reference: Vec<f64>,
}

fn inputs(dev: &Device, n: usize, seed: u64) -> Res<Inputs> {
    let mut rng = Rng::new(seed);
    let (x, y, z) = (
        rng.vec(n, -1.0, 1.0),
        rng.vec(n, -1.0, 1.0),
        rng.vec(n, 0.5, 2.0),
    );
    let reference = (0..n)
        .map(|i| (x[i] as f64 + y[i] as f64) * z[i] as f64)
        .collect();
    Ok(Inputs {
        x: dev.upload(&x)?,
        y: dev.upload(&y)?,
        z: dev.upload(&z)?,
        reference,
    })
}

fn fused(dev: &Device, i: &Inputs, out: &mut Buffer<f32>, n: i32) -> Result<(), Error> {
    add_mul::launch(dev, Grid::x(cdiv(n, 1024)), &i.x, &i.y, &i.z, out, n)
}

fn unfused(
    dev: &Device,
    i: &Inputs,
    tmp: &mut Buffer<f32>,
    out: &mut Buffer<f32>,
    n: i32,
) -> Result<(), Error> {
    add::launch(dev, Grid::x(cdiv(n, 1024)), &i.x, &i.y, tmp, n)?;
    mul::launch(dev, Grid::x(cdiv(n, 1024)), tmp, &i.z, out, n)
}

/// Checks fused and unfused against the reference on `n` elements; outputs start as NaN so an
/// unwritten element fails the check.
fn check(dev: &Device, n: usize) -> Res<bool> {
    let i = inputs(dev, n, n as u64)?;
    let nn = i32::try_from(n)?;
    let mut out = dev.upload(&vec![f32::NAN; n])?;
    fused(dev, &i, &mut out, nn)?;
    let e_fused = rel_l2(&dev.download(&out)?, &i.reference);
    let mut tmp = dev.upload(&vec![f32::NAN; n])?;
    let mut out2 = dev.upload(&vec![f32::NAN; n])?;
    unfused(dev, &i, &mut tmp, &mut out2, nn)?;
    let e_unfused = rel_l2(&dev.download(&out2)?, &i.reference);
    let ok = e_fused < 1e-6 && e_unfused < 1e-6;
    println!(
        "check n = {n:>9}: fused rel. L2 error {e_fused:.2e}, unfused {e_unfused:.2e} -> {}",
        if ok { "ok" } else { "FAILED" }
    );
    Ok(ok)
}

fn bench(dev: &Device) -> Res<()> {
    let stream = dev.stream().ok_or("bench needs a CUDA device")?.clone();
    let n: usize = 1 << 27;
    let nn = n as i32;
    let i = inputs(dev, n, 42)?;
    let mut out = dev.zeros::<f32>(n)?;
    let mut tmp = dev.zeros::<f32>(n)?;
    let copy = copy_bandwidth(&stream, n * 4)?;
    let t_fused = time_ms(&stream, 10, 50, || fused(dev, &i, &mut out, nn))?;
    let t_unfused = time_ms(&stream, 10, 50, || unfused(dev, &i, &mut tmp, &mut out, nn))?;
    // Effective bandwidth counts the minimal traffic: read x, y, z once, write out once.
    let bytes = 16.0 * n as f64;
    let gbs = |ms: f64| bytes / (ms * 1e-3) / 1e9;
    println!();
    println!(
        "{} — n = 2^27 f32, median of 50 timed launches after 10 warm-ups",
        dev.name()
    );
    println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
    print_table(
        &[
            "impl",
            "time (ms)",
            "effective GB/s",
            "% of copy BW",
            "speedup vs unfused",
        ],
        &[
            vec![
                "tile fused (1 kernel)".into(),
                format!("{t_fused:.3}"),
                format!("{:.0}", gbs(t_fused)),
                format!("{:.1}%", 100.0 * gbs(t_fused) / copy),
                format!("{:.2}x", t_unfused / t_fused),
            ],
            vec![
                "tile unfused (add, mul)".into(),
                format!("{t_unfused:.3}"),
                format!("{:.0}", gbs(t_unfused)),
                format!("{:.1}%", 100.0 * gbs(t_unfused) / copy),
                "1.00x".into(),
            ],
        ],
    );
    Ok(())
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let sizes: Vec<usize> = match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
            vec![1, 17, 1023, 1024, 1025, 1_000_003]
        }
        None => {
            println!("Running on {}", dev.name());
            if quick {
                vec![1, 17, 1_000_003]
            } else {
                vec![1, 17, 1_000_003, 1 << 27]
            }
        }
    };
    let mut ok = true;
    for n in sizes {
        ok &= check(&dev, n)?;
    }
    if dev.is_cuda() && !quick {
        bench(&dev)?;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("fused_add_mul", run())
}
