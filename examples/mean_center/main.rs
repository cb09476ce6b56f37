//! Row mean centering, `y = x − mean(row)` in f32: one fused kernel against the unfused pair (row
//! mean, subtract) and an f64 reference.
//!
//! `cargo run --release --example mean_center` — on a GPU: checks awkward shapes and 16384×4096,
//! then times fused and unfused on the latter (median of CUDA events after warm-up) against the
//! copy bandwidth measured in the same run (with CUDA-graph replays of both forms where the fused
//! kernel takes under 75 µs, launch-bound: not at this size). Without a GPU: checks awkward
//! shapes on the interpreter. `--quick`: checks only; `--graph-all`: CUDA graphs for every size.

use std::process::ExitCode;
use tile_examples::{common, mean_center::kernels};

use common::{
    check_close, check_forms, copy_bandwidth, graph_form, graph_rows, report, time_ms, Rng, Row,
};
use kernels::{fused, unfused};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn reference(x: &[f32], n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        out.extend(row.iter().map(|&v| v as f64 - mean));
    }
    out
}

struct Case {
    x: Buffer<f32>,
    mean: Buffer<f32>,
    y: Buffer<f32>,
    y2: Buffer<f32>,
    rows: i32,
    n: i32,
}

fn case(dev: &Device, rows: usize, n: usize) -> Res<(Case, Vec<f64>)> {
    let x = Rng::new((rows * 31 + n) as u64).vec(rows * n, -1.0, 3.0);
    let want = reference(&x, n);
    let nan = vec![f32::NAN; rows * n];
    let c = Case {
        x: dev.upload(&x)?,
        mean: dev.upload(&vec![f32::NAN; rows])?,
        y: dev.upload(&nan)?,
        y2: dev.upload(&nan)?,
        rows: rows as i32,
        n: n as i32,
    };
    Ok((c, want))
}

fn check(dev: &Device, rows: usize, n: usize) -> Res<bool> {
    let (mut c, want) = case(dev, rows, n)?;
    fused(dev, &c.x, &mut c.y, c.rows, c.n)?;
    unfused(dev, &c.x, &mut c.mean, &mut c.y2, c.rows, c.n)?;
    Ok(check_forms(
        &format!("{rows}x{n}"),
        &dev.download(&c.y)?,
        &dev.download(&c.y2)?,
        &want,
        1e-5,
    ))
}

fn bench(dev: &Device, copy: f64, rows: usize, n: usize) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let (mut c, _) = case(dev, rows, n)?;
    let (r, nn) = (c.rows, c.n);
    let t_fused = time_ms(&stream, 5, 30, || fused(dev, &c.x, &mut c.y, r, nn))?;
    let t_unfused = time_ms(&stream, 5, 30, || {
        unfused(dev, &c.x, &mut c.mean, &mut c.y2, r, nn)
    })?;
    let mut table = vec![
        Row {
            name: "tile fused (1 kernel)".into(),
            ms: t_fused,
        },
        Row {
            name: "tile unfused (2 kernels)".into(),
            ms: t_unfused,
        },
    ];
    let ok = graph_rows(
        dev,
        &mut table,
        |g| case(g, rows, n),
        |g, (c, _), unf| match unf {
            false => fused(g, &c.x, &mut c.y, r, nn),
            true => unfused(g, &c.x, &mut c.mean, &mut c.y2, r, nn),
        },
        |g, (c, want), unf| {
            let got = g.download(if unf { &c.y2 } else { &c.y })?;
            let what = format!("{rows}x{n} {}, CUDA graph", graph_form(unf));
            Ok(check_close(&what, &got, want, 1e-5))
        },
    )?;
    // Minimal traffic: read x once, write y once.
    let bytes = 2.0 * 4.0 * (rows * n) as f64;
    report(
        &format!(
            "mean_center {rows}x{n} f32 ({} MB in + out), median of 30 after 5 warm-ups",
            bytes as usize >> 20
        ),
        copy,
        bytes,
        &table,
        1,
    );
    Ok(ok)
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let mut shapes = vec![(1, 1), (3, 17), (1, 1000), (2, 4096), (2, 5000), (1, 8192)];
    let size = (16384, 4096);
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
        }
        None => {
            println!("Running on {}", dev.name());
            shapes.push(size);
        }
    }
    let mut ok = true;
    for (rows, n) in shapes {
        ok &= check(&dev, rows, n)?;
    }
    if dev.is_cuda() && !quick {
        let copy = copy_bandwidth(dev.stream().ok_or("no stream")?, 1 << 30)?;
        println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
        ok &= bench(&dev, copy, size.0, size.1)?;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("mean_center", run())
}
