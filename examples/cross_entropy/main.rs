//! Cross-entropy forward and backward over the rows of a logits matrix (`tokens × vocab`), the
//! loss averaged over the rows whose label is not `ignore_index` (-100), optional label
//! smoothing, and the gradient written in place of the logits (as Liger's fused kernel does): one
//! fused kernel (one program per row, two passes over column tiles with an online logsumexp)
//! against the unfused forward + backward (two kernels, the logsumexp saved between them), and an
//! f64 reference.
//!
//! `cargo run --release --example cross_entropy` — on a GPU: checks awkward shapes (1 row, 1
//! column, 17, 1000, vocabulary 32000 with a label on the last column, ignored rows, smoothing 0
//! and 0.1), then times every form on 8192 × 32000 and 4096 × 128256, bf16 and f32, against the
//! copy bandwidth measured in the same run (traffic counted as one read of the logits and one
//! write of the gradient). PyTorch's `F.cross_entropy` forward + backward and a Liger-style Triton
//! kernel are timed by `bench/python/baseline.py --filter cross_entropy`. Without a GPU: checks
//! the awkward shapes on the interpreter. `--quick`: checks only.

use std::process::ExitCode;
use tile_examples::{common, cross_entropy::ce};

use ce::{case, check, inputs, launch, reference, Form, Logit, Res};
use common::{copy_bandwidth, report, time_ms, Row};
use tile::prelude::*;

fn check_all<T: Logit>(dev: &Device, rows: usize, v: usize) -> Res<bool> {
    let (logits, labels) = inputs::<T>(rows, v, (rows * 977 + v) as u64);
    let host: Vec<f32> = logits.iter().map(|&x| x.to_f32()).collect();
    let tol = ce::tolerance::<T>();
    let mut ok = true;
    for smoothing in [0.0f32, 0.1] {
        let want = reference(&host, &labels, v, f64::from(smoothing));
        for form in Form::ALL.into_iter().filter(|f| f.fits::<T>(v)) {
            let err = check(dev, &logits, &labels, v, smoothing, form, &want)?;
            let good = err <= tol;
            println!(
                "check {:>12} {:<4} smoothing {smoothing:<3} {:<30}: worst rel. error {err:.2e} (tol {tol:.0e}) -> {}",
                format!("{rows}x{v}"),
                T::NAME,
                form.name(),
                if good { "ok" } else { "FAILED" }
            );
            ok &= good;
        }
    }
    Ok(ok)
}

fn bench<T: Logit>(dev: &Device, copy: f64, rows: usize, v: usize) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let (logits, labels) = inputs::<T>(rows, v, 2026);
    let bytes = (2 * rows * v * std::mem::size_of::<T>()) as f64;
    let mut table = Vec::new();
    // The unfused form first: the table's speedups are against it.
    for form in std::iter::once(Form::Unfused).chain(ce::FUSED) {
        if !form.fits::<T>(v) {
            continue;
        }
        let mut c = case(dev, &logits, &labels, v, 0.0)?;
        let ms = time_ms(&stream, 5, 30, || launch(dev, &mut c, form))?;
        table.push(Row {
            name: format!("tile {}", form.name()),
            ms,
        });
    }
    report(
        &format!(
            "cross-entropy forward + backward on {rows}x{v} {} (gradient in place), median of 30 after 5 warm-ups",
            T::NAME
        ),
        copy,
        bytes,
        &table,
        0,
    );
    Ok(true)
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let mut shapes = vec![
        (1, 1),
        (1, 17),
        (17, 1),
        (9, 1000),
        (3, 1024),
        (8, 3000),
        (9, 32000),
    ];
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
        }
        None => {
            println!("Running on {}", dev.name());
            shapes.extend([(64, 128256), (1000, 32000)]);
        }
    }
    let mut ok = true;
    for &(rows, v) in &shapes {
        ok &= check_all::<f32>(&dev, rows, v)?;
        ok &= check_all::<bf16>(&dev, rows, v)?;
    }
    if dev.is_cuda() && !quick {
        let copy = copy_bandwidth(dev.stream().ok_or("no stream")?, 1 << 30)?;
        println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
        for (rows, v) in [(8192, 32000), (4096, 128256)] {
            ok &= bench::<bf16>(&dev, copy, rows, v)?;
            ok &= bench::<f32>(&dev, copy, rows, v)?;
        }
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("cross_entropy", run())
}
