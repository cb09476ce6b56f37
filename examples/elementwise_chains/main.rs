//! Four chains of element-wise operations on a matrix with a bias per column (relu → scale → add
//! bias; add → relu; add → tanh → scale; add bias → relu → exp), each as one fused kernel against
//! the unfused chain (one kernel per operation, as PyTorch eager runs it) and an f64 reference.
//!
//! `cargo run --release --example elementwise_chains` — on a GPU: checks awkward shapes and
//! 16384×4096 f32, then times every chain fused and unfused on 16384×4096 (median of CUDA events
//! after warm-up) against the copy bandwidth measured in the same run (with CUDA-graph replays of
//! both forms where the fused kernel takes under 75 µs, launch-bound: not at this size). Without a
//! GPU: checks awkward shapes on the interpreter. `--quick`: checks only; `--graph-all`: CUDA
//! graphs for every size.

use std::process::ExitCode;
use tile_examples::{common, elementwise_chains::kernels};

use common::{check_close, copy_bandwidth, graph_form, graph_rows, report, time_ms, Rng, Row};
use kernels::{Bufs, Chain};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The chain on one element, in f64.
fn reference(c: Chain, x: f32, y: f32, bias: f32, s: f32) -> f64 {
    let (x, y, bias, s) = (x as f64, y as f64, bias as f64, s as f64);
    match c {
        Chain::ReluScaleBias => x.max(0.0) * s + bias,
        Chain::AddRelu => (x + y).max(0.0),
        Chain::AddTanhScale => (x + y).tanh() * s,
        Chain::BiasReluExp => (x + bias).max(0.0).exp(),
    }
}

/// Host inputs `(x, y, bias)` and the device buffers of a `rows × cols` problem; the output and
/// the temporaries start as NaN so that an element left unwritten fails the check.
fn setup(dev: &Device, rows: usize, cols: usize) -> Res<(Bufs, [Vec<f32>; 3])> {
    let mut rng = Rng::new((rows * 7919 + cols) as u64);
    let n = rows * cols;
    let host = [
        rng.vec(n, -3.0, 3.0),
        rng.vec(n, -3.0, 3.0),
        rng.vec(cols, -1.0, 1.0),
    ];
    let nan = vec![f32::NAN; n];
    let b = Bufs {
        x: dev.upload(&host[0])?,
        y: dev.upload(&host[1])?,
        bias: dev.upload(&host[2])?,
        out: dev.upload(&nan)?,
        t1: dev.upload(&nan)?,
        t2: dev.upload(&nan)?,
        rows: i32::try_from(rows)?,
        cols: i32::try_from(cols)?,
        s: 0.75,
    };
    Ok((b, host))
}

fn check(dev: &Device, rows: usize, cols: usize) -> Res<bool> {
    let (mut b, [x, y, bias]) = setup(dev, rows, cols)?;
    let nan = vec![f32::NAN; rows * cols];
    let mut ok = true;
    for c in Chain::ALL {
        let want: Vec<f64> = (0..rows * cols)
            .map(|i| reference(c, x[i], y[i], bias[i % cols], b.s))
            .collect();
        for fused in [true, false] {
            b.out = dev.upload(&nan)?;
            if fused {
                c.fused(dev, &mut b)?
            } else {
                c.unfused(dev, &mut b)?
            }
            let what = format!(
                "{:>10} {:<28} {}",
                format!("{rows}x{cols}"),
                c.name(),
                if fused { "fused  " } else { "unfused" }
            );
            ok &= check_close(&what, &dev.download(&b.out)?, &want, 1e-5);
        }
    }
    Ok(ok)
}

fn bench(dev: &Device, rows: usize, cols: usize) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let (mut b, _) = setup(dev, rows, cols)?;
    let copy = copy_bandwidth(&stream, 1 << 30)?;
    println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
    let mut ok = true;
    for c in Chain::ALL {
        let t_fused = time_ms(&stream, 5, 30, || c.fused(dev, &mut b))?;
        let t_unfused = time_ms(&stream, 5, 30, || c.unfused(dev, &mut b))?;
        let mut table = vec![
            Row {
                name: "tile fused (1 kernel)".into(),
                ms: t_fused,
            },
            Row {
                name: format!("tile unfused ({})", c.unfused_ops()),
                ms: t_unfused,
            },
        ];
        ok &= graph_rows(
            dev,
            &mut table,
            |g| setup(g, rows, cols),
            |g, (b, _), unf| match unf {
                false => c.fused(g, b),
                true => c.unfused(g, b),
            },
            |g, (b, [x, y, bias]), unf| {
                let want: Vec<f64> = (0..rows * cols)
                    .map(|i| reference(c, x[i], y[i], bias[i % cols], b.s))
                    .collect();
                let what = format!("{rows}x{cols} {} {}, CUDA graph", c.name(), graph_form(unf));
                Ok(check_close(&what, &g.download(&b.out)?, &want, 1e-5))
            },
        )?;
        // Minimal traffic: x (and y) read once, the bias once, the output written once.
        let matrices = if c.reads_y() { 3 } else { 2 };
        let bytes = 4.0 * (matrices * rows * cols + if c.reads_y() { 0 } else { cols }) as f64;
        report(
            &format!(
                "{} on {rows}x{cols} f32, median of 30 after 5 warm-ups",
                c.name()
            ),
            copy,
            bytes,
            &table,
            1,
        );
    }
    Ok(ok)
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let mut shapes = vec![
        (1, 1),
        (1, 17),
        (17, 1),
        (3, 1000),
        (17, 17),
        (5, 1023),
        (2, 4096),
    ];
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
        }
        None => {
            println!("Running on {}", dev.name());
            shapes.extend([(1000, 1000), (16384, 4096)]);
        }
    }
    let mut ok = true;
    for (rows, cols) in shapes {
        ok &= check(&dev, rows, cols)?;
    }
    if dev.is_cuda() && !quick {
        ok &= bench(&dev, 16384, 4096)?;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("elementwise_chains", run())
}
