//! Softmax over rows: one fused kernel against the unfused four-kernel form and an f64 reference.
//!
//! `cargo run --release --example fused_softmax` — on a GPU: checks and times 1024×512,
//! 16384×4096 and 4096×32768 f32 (median of CUDA events after warm-up) against the copy bandwidth
//! measured in the same run; where the fused kernel takes under 75 µs (launch-bound: 1024×512),
//! also CUDA-graph replays of both forms, each checked against the reference before it is timed.
//! Without a GPU: checks awkward shapes on the interpreter. `--quick`: checks only;
//! `--graph-all`: CUDA graphs for every size.

use std::process::ExitCode;
use tile_examples::{common, fused_softmax::kernels};

use common::{
    check_close, check_forms, copy_bandwidth, graph_form, graph_rows, report, time_ms, Rng, Row,
};
use kernels::{fused, unfused, Scratch};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn reference(x: &[f32], rows: usize, n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(rows * n);
    for r in 0..rows {
        let row = &x[r * n..(r + 1) * n];
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        out.extend(row.iter().map(|&v| (v as f64 - m).exp() / s));
    }
    out
}

struct Case {
    x: Buffer<f32>,
    out: Buffer<f32>,
    out2: Buffer<f32>,
    scratch: Scratch,
    rows: i32,
    n: i32,
}

fn case(dev: &Device, rows: usize, n: usize) -> Res<(Case, Vec<f64>)> {
    let x = Rng::new((rows * 31 + n) as u64).vec(rows * n, -4.0, 4.0);
    let reference = reference(&x, rows, n);
    let nan = vec![f32::NAN; rows * n];
    Ok((
        Case {
            x: dev.upload(&x)?,
            out: dev.upload(&nan)?,
            out2: dev.upload(&nan)?,
            scratch: Scratch {
                m: dev.zeros(rows)?,
                y: dev.zeros(rows * n)?,
                s: dev.zeros(rows)?,
            },
            rows: rows as i32,
            n: n as i32,
        },
        reference,
    ))
}

fn check(dev: &Device, rows: usize, n: usize) -> Res<bool> {
    let (mut c, want) = case(dev, rows, n)?;
    fused(dev, &c.x, &mut c.out, c.rows, c.n)?;
    unfused(dev, &c.x, &mut c.scratch, &mut c.out2, c.rows, c.n)?;
    Ok(check_forms(
        &format!("{rows}x{n}"),
        &dev.download(&c.out)?,
        &dev.download(&c.out2)?,
        &want,
        1e-5,
    ))
}

fn bench(dev: &Device, copy: f64, rows: usize, n: usize) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let (mut c, _) = case(dev, rows, n)?;
    let (r, nn) = (c.rows, c.n);
    let t_fused = time_ms(&stream, 5, 30, || fused(dev, &c.x, &mut c.out, r, nn))?;
    let t_unfused = time_ms(&stream, 5, 30, || {
        unfused(dev, &c.x, &mut c.scratch, &mut c.out2, r, nn)
    })?;
    let mut table = vec![
        Row {
            name: "tile fused (1 kernel)".into(),
            ms: t_fused,
        },
        Row {
            name: "tile unfused (4 kernels)".into(),
            ms: t_unfused,
        },
    ];
    let ok = graph_rows(
        dev,
        &mut table,
        |g| case(g, rows, n),
        |g, (c, _), unf| match unf {
            false => fused(g, &c.x, &mut c.out, r, nn),
            true => unfused(g, &c.x, &mut c.scratch, &mut c.out2, r, nn),
        },
        |g, (c, want), unf| {
            let got = g.download(if unf { &c.out2 } else { &c.out })?;
            let what = format!("{rows}x{n} {}, CUDA graph", graph_form(unf));
            Ok(check_close(&what, &got, want, 1e-5))
        },
    )?;
    let bytes = 2.0 * 4.0 * (rows * n) as f64;
    report(
        &format!(
            "softmax {rows}x{n} f32 ({} MB in + out), median of 30 after 5 warm-ups",
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
    let mut ok = true;
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
            for (rows, n) in [(1, 1), (3, 17), (2, 512), (4, 1000), (1, 4096), (2, 5000)] {
                ok &= check(&dev, rows, n)?;
            }
        }
        None => {
            println!("Running on {}", dev.name());
            let sizes = [(1024, 512), (16384, 4096), (4096, 32768)];
            for (rows, n) in [(1, 1), (3, 17), (4, 1000), (2, 5000)]
                .into_iter()
                .chain(sizes)
            {
                ok &= check(&dev, rows, n)?;
            }
            if !quick {
                let copy = copy_bandwidth(dev.stream().ok_or("no stream")?, 1 << 30)?;
                println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
                for (rows, n) in sizes {
                    ok &= bench(&dev, copy, rows, n)?;
                }
            }
        }
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("fused_softmax", run())
}
