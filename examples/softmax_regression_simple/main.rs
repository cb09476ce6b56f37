//! Softmax regression (`probs = softmax(x @ w)`, the document's simple fused kernel): fused against
//! the unfused pair (matmul, then softmax) and an f64 reference.
//!
//! `cargo run --release --example softmax_regression_simple` — on a GPU: checks awkward shapes and
//! the document's sizes (batch × dim × classes) 64×128×10, 256×512×50 and 1024×1024×100, then times
//! fused and unfused on them (median of CUDA events after warm-up; these sizes are launch-bound,
//! so CUDA-graph replays of both forms are timed too), with GFLOP/s of the matmul. Without a GPU:
//! checks awkward shapes on the interpreter. `--quick`: checks only.
//!
//! The matmul is lowered without tensor cores for now (`dot` through shared memory), so the
//! interesting figure is the fused/unfused ratio, not the rate.

use std::process::ExitCode;
use tile_examples::{
    common,
    softmax_regression_simple::{kernels, reference},
};

use common::{check_close, check_forms, graph_form, graph_rows, print_table, time_ms, Rng, Row};
use kernels::{fused, unfused};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

type Shape = (i32, i32, i32);

struct Case {
    x: Buffer<f32>,
    w: Buffer<f32>,
    logits: Buffer<f32>,
    probs: Buffer<f32>,
    probs2: Buffer<f32>,
}

fn case(dev: &Device, (b, d, c): Shape) -> Res<(Case, Vec<f64>)> {
    let (bu, du, cu) = (b as usize, d as usize, c as usize);
    let mut r = Rng::new((bu * 131 + du * 7 + cu) as u64);
    let x = r.vec(bu * du, -1.0, 1.0);
    let w = r.vec(du * cu, -0.5, 0.5);
    let want = reference::softmax_regression(&x, &w, (bu, du, cu));
    let nan = vec![f32::NAN; bu * cu];
    let k = Case {
        x: dev.upload(&x)?,
        w: dev.upload(&w)?,
        logits: dev.upload(&nan)?,
        probs: dev.upload(&nan)?,
        probs2: dev.upload(&nan)?,
    };
    Ok((k, want))
}

fn check(dev: &Device, s: Shape) -> Res<bool> {
    let (mut k, want) = case(dev, s)?;
    fused(dev, &k.x, &k.w, &mut k.probs, s)?;
    unfused(dev, &k.x, &k.w, &mut k.logits, &mut k.probs2, s)?;
    Ok(check_forms(
        &format!("{}x{}x{}", s.0, s.1, s.2),
        &dev.download(&k.probs)?,
        &dev.download(&k.probs2)?,
        &want,
        1e-5,
    ))
}

fn bench(dev: &Device, s: Shape) -> Res<(Vec<Row>, bool)> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let (mut k, _) = case(dev, s)?;
    let t_fused = time_ms(&stream, 10, 50, || fused(dev, &k.x, &k.w, &mut k.probs, s))?;
    let t_unfused = time_ms(&stream, 10, 50, || {
        unfused(dev, &k.x, &k.w, &mut k.logits, &mut k.probs2, s)
    })?;
    let mut table = vec![
        Row {
            name: "tile fused (1 kernel)".into(),
            ms: t_fused,
        },
        Row {
            name: "tile unfused (matmul, softmax)".into(),
            ms: t_unfused,
        },
    ];
    let ok = graph_rows(
        dev,
        &mut table,
        |g| case(g, s),
        |g, (k, _), unf| match unf {
            false => fused(g, &k.x, &k.w, &mut k.probs, s),
            true => unfused(g, &k.x, &k.w, &mut k.logits, &mut k.probs2, s),
        },
        |g, (k, want), unf| {
            let got = g.download(if unf { &k.probs2 } else { &k.probs })?;
            let what = format!("{}x{}x{} {}, CUDA graph", s.0, s.1, s.2, graph_form(unf));
            Ok(check_close(&what, &got, want, 1e-5))
        },
    )?;
    Ok((table, ok))
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let mut shapes: Vec<Shape> = vec![
        (1, 1, 1),
        (17, 33, 10),
        (5, 100, 17),
        (33, 64, 64),
        (3, 70, 100),
    ];
    let sizes: [Shape; 3] = [(64, 128, 10), (256, 512, 50), (1024, 1024, 100)];
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
            shapes.push(sizes[0]);
        }
        None => {
            println!("Running on {}", dev.name());
            shapes.extend(sizes);
        }
    }
    let mut ok = true;
    for &s in &shapes {
        ok &= check(&dev, s)?;
    }
    if dev.is_cuda() && !quick {
        let mut rows = Vec::new();
        for s in sizes {
            let (table, good) = bench(&dev, s)?;
            ok &= good;
            let flop = 2.0 * s.0 as f64 * s.1 as f64 * s.2 as f64;
            let unfused_plain = table[1].ms;
            for r in &table {
                rows.push(vec![
                    format!("{}x{}x{}", s.0, s.1, s.2),
                    r.name.clone(),
                    format!("{:.4}", r.ms),
                    format!("{:.1}", flop / (r.ms * 1e-3) / 1e9),
                    format!("{:.2}x", unfused_plain / r.ms),
                ]);
            }
        }
        println!("\nsoftmax_regression_simple, f32, median of 50 after 10 warm-ups");
        print_table(
            &[
                "batch x dim x classes",
                "impl",
                "time (ms)",
                "GFLOP/s",
                "speedup vs unfused",
            ],
            &rows,
        );
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("softmax_regression_simple", run())
}
