//! Mamba's selective scan (a diagonal linear recurrence with its gate and output projection):
//! fused against the unfused three kernels and a float64 reference.
//!
//! `cargo run --release --example selective_scan` — on a GPU: checks awkward shapes and the
//! timed one (batch 8, 2048 channels, length 4096, 16 states), f32 and bf16, then times both
//! forms against the copy bandwidth. Without a GPU: checks small shapes on the interpreter.
//! `--quick`: checks only. `--sweep`: also times every configuration of the fused kernel
//! (chunk length; each is checked in every run).

use std::process::ExitCode;

use tile::prelude::*;
use tile_examples::common::{self, check_close, copy_bandwidth, report, time_ms, Row};
use tile_examples::selective_scan::host::{self, Storage};
use tile_examples::selective_scan::kernels::{fused, fused_with, unfused, Scratch, Shape, CONFIGS};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Relative L2 tolerance: f32 storage (the scan reassociated), bf16 storage (the output rounded).
fn tolerance(bf16_out: bool) -> f64 {
    if bf16_out {
        1e-2
    } else {
        1e-4
    }
}

fn check<T: Storage>(dev: &Device, s: Shape, name: &str) -> Res<bool> {
    let h = host::host::<T>(s, (s.batch * 131 + s.channels * 7 + s.len) as u64);
    let x = host::upload::<T>(dev, &h)?;
    let channels = host::checked_channels(s);
    let want = host::reference(s, &h, &channels);
    let label = format!("{}×{}×{} {name}", s.batch, s.channels, s.len);
    let tol = tolerance(name == "bf16");
    let mut ok = true;
    for c in CONFIGS {
        let mut y = dev.upload(&vec![T::from_f32(f32::NAN); s.seq()])?;
        fused_with(dev, s, &x, &mut y, c)?;
        let got = host::gather(s, &dev.download(&y)?, &channels);
        let what = format!("{label} fused, chunks of {}", c.bl);
        ok &= check_close(&what, &got, &want, tol);
    }
    let mut scratch = Scratch::new(dev, s)?;
    let mut y = dev.upload(&vec![T::from_f32(f32::NAN); s.seq()])?;
    unfused(dev, s, &x, &mut scratch, &mut y)?;
    let got = host::gather(s, &dev.download(&y)?, &channels);
    ok &= check_close(&format!("{label} unfused"), &got, &want, tol);
    Ok(ok)
}

fn bench<T: Storage>(dev: &Device, copy: f64, s: Shape, name: &str) -> Res<()> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let h = host::host::<T>(s, 1);
    let x = host::upload::<T>(dev, &h)?;
    let mut y = dev.zeros::<T>(s.seq())?;
    let mut scratch = Scratch::new(dev, s)?;
    if std::env::args().any(|a| a == "--sweep") {
        for c in CONFIGS {
            let t = time_ms(&stream, 3, 20, || fused_with(dev, s, &x, &mut y, c))?;
            println!("sweep {name} {c:?}: {t:.4} ms");
        }
    }
    let t_fused = time_ms(&stream, 3, 20, || fused(dev, s, &x, &mut y))?;
    let t_unfused = time_ms(&stream, 2, 10, || unfused(dev, s, &x, &mut scratch, &mut y))?;
    let e = std::mem::size_of::<T>() as f64;
    // Minimal traffic: u, delta, z read and y written once; B and C once; A, D, bias once.
    let bytes = 4.0 * s.seq() as f64 * e + 2.0 * s.bc() as f64 * e + s.channels as f64 * 18.0 * 4.0;
    report(
        &format!(
            "selective_scan, batch {} × {} channels × length {}, 16 states, {name}, median after warm-up",
            s.batch, s.channels, s.len
        ),
        copy,
        bytes,
        &[
            Row {
                name: "tile fused (1 kernel)".into(),
                ms: t_fused,
            },
            Row {
                name: "tile unfused (3 kernels, f32 states in memory)".into(),
                ms: t_unfused,
            },
        ],
        1,
    );
    Ok(())
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let shape = |batch, channels, len| Shape {
        batch,
        channels,
        len,
    };
    let small = [
        shape(1, 1, 1),
        shape(2, 5, 300),
        shape(1, 17, 129),
        shape(2, 16, 128),
    ];
    let mut ok = true;
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
            for s in small {
                ok &= check::<f32>(&dev, s, "f32")?;
                ok &= check::<bf16>(&dev, s, "bf16")?;
            }
        }
        None => {
            println!("Running on {}", dev.name());
            let big = shape(8, 2048, 4096);
            for s in small.into_iter().chain([shape(3, 100, 1000), big]) {
                ok &= check::<f32>(&dev, s, "f32")?;
                ok &= check::<bf16>(&dev, s, "bf16")?;
            }
            if !quick {
                let copy = copy_bandwidth(dev.stream().ok_or("no stream")?, 1 << 30)?;
                println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
                bench::<f32>(&dev, copy, big, "f32")?;
                bench::<bf16>(&dev, copy, big, "bf16")?;
            }
        }
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("selective_scan", run())
}
