//! vLLM's in-place fused add + RMS norm, bf16 and f16: one fused kernel against the unfused
//! three-kernel form (add, inverse RMS, scale) and an f64 reference.
//!
//! `cargo run --release --example fused_add_rmsnorm` — on a GPU: checks awkward shapes and the GPU
//! sizes 4096×4096 and 32768×4096, then times fused and unfused on the latter (median of CUDA
//! events after warm-up) against the copy bandwidth measured in the same run; where the fused
//! kernel takes under 75 µs (launch-bound: 4096×4096), also CUDA-graph replays of both forms, each
//! checked against the reference (after one replay) before it is timed. Without a GPU: checks
//! awkward shapes on the interpreter. `--quick`: checks only; `--graph-all`: CUDA graphs for every
//! size. Both outputs are checked: the residual (must equal the rounded sum) and the normalized
//! `x`. They are written in place, so they cannot start as NaN; the unfused form's f32 scratch
//! buffer does.

use std::process::ExitCode;
use tile_examples::{common, fused_add_rmsnorm::kernels};

use common::{check_close, copy_bandwidth, graph_form, graph_rows, report, time_ms, Rng, Row};
use kernels::AddRmsNorm;
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const EPS: f32 = 1e-6;

/// What the host side needs of an element type: conversions and a name.
trait Host: AddRmsNorm {
    const NAME: &'static str;
    fn of(x: f32) -> Self;
    fn f(self) -> f32;
}

impl Host for bf16 {
    const NAME: &'static str = "bf16";
    fn of(x: f32) -> bf16 {
        bf16::from_f32(x)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}

impl Host for f16 {
    const NAME: &'static str = "f16";
    fn of(x: f32) -> f16 {
        f16::from_f32(x)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}

struct Case<T> {
    x: Vec<T>,
    res: Vec<T>,
    w: Buffer<T>,
    rows: i32,
    n: i32,
}

fn case<T: Host>(dev: &Device, rows: usize, n: usize) -> Res<Case<T>> {
    let mut rng = Rng::new((rows * 31 + n) as u64);
    let mut gen = |len, lo, hi| -> Vec<T> { rng.vec(len, lo, hi).into_iter().map(T::of).collect() };
    let (x, res, w) = (
        gen(rows * n, -2.0, 2.0),
        gen(rows * n, -2.0, 2.0),
        gen(n, 0.5, 1.5),
    );
    Ok(Case {
        x,
        res,
        w: dev.upload(&w)?,
        rows: rows as i32,
        n: n as i32,
    })
}

/// The reference outputs `(x, residual)`: the sum rounded to `T` as the kernels store it, then
/// the RMS norm of that in f64.
fn reference<T: Host>(dev: &Device, c: &Case<T>) -> Res<(Vec<f64>, Vec<f64>)> {
    let w: Vec<f64> = dev
        .download(&c.w)?
        .into_iter()
        .map(|v| v.f() as f64)
        .collect();
    let res: Vec<f64> =
        c.x.iter()
            .zip(&c.res)
            .map(|(&a, &b)| T::of(a.f() + b.f()).f() as f64)
            .collect();
    let mut x = Vec::with_capacity(res.len());
    for row in res.chunks(c.n as usize) {
        let inv = 1.0 / (row.iter().map(|v| v * v).sum::<f64>() / c.n as f64 + EPS as f64).sqrt();
        x.extend(row.iter().zip(&w).map(|(v, w)| v * inv * w));
    }
    Ok((x, res))
}

/// Checks both outputs against the reference `(x, residual)`; `what` names the run.
fn compare<T: Host>(
    dev: &Device,
    what: &str,
    x: &Buffer<T>,
    res: &Buffer<T>,
    (want_x, want_res): &(Vec<f64>, Vec<f64>),
) -> Res<bool> {
    let f =
        |b: &Buffer<T>| -> Res<Vec<f32>> { Ok(dev.download(b)?.into_iter().map(T::f).collect()) };
    let a = check_close(&format!("{what} residual"), &f(res)?, want_res, 1e-6);
    let b = check_close(&format!("{what} x       "), &f(x)?, want_x, 1e-2);
    Ok(a && b)
}

fn check<T: Host>(dev: &Device, rows: usize, n: usize) -> Res<bool> {
    let c = case::<T>(dev, rows, n)?;
    let want = reference(dev, &c)?;
    let mut ok = true;
    for unfused in [false, true] {
        let (mut x, mut res) = (dev.upload(&c.x)?, dev.upload(&c.res)?);
        let mut inv = dev.upload(&vec![f32::NAN; rows])?;
        match unfused {
            false => T::fused(dev, &mut x, &mut res, &c.w, c.rows, c.n, EPS)?,
            true => T::unfused(dev, &mut x, &mut res, &c.w, &mut inv, c.rows, c.n, EPS)?,
        }
        let what = format!(
            "{} {rows}x{n} {}",
            T::NAME,
            if unfused { "unfused" } else { "fused  " }
        );
        ok &= compare(dev, &what, &x, &res, &want)?;
    }
    Ok(ok)
}

/// What a CUDA graph of one form works on: the case, its device buffers and the reference.
struct GraphState<T> {
    c: Case<T>,
    x: Buffer<T>,
    res: Buffer<T>,
    inv: Buffer<f32>,
    want: (Vec<f64>, Vec<f64>),
}

fn bench<T: Host>(dev: &Device, copy: f64, rows: usize, n: usize) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let c = case::<T>(dev, rows, n)?;
    let (mut x, mut res, mut inv) = (
        dev.upload(&c.x)?,
        dev.upload(&c.res)?,
        dev.zeros::<f32>(rows)?,
    );
    // In place: every launch updates the buffers again (values drift; the traffic does not).
    let t_fused = time_ms(&stream, 5, 30, || {
        T::fused(dev, &mut x, &mut res, &c.w, c.rows, c.n, EPS)
    })?;
    let t_unfused = time_ms(&stream, 5, 30, || {
        T::unfused(dev, &mut x, &mut res, &c.w, &mut inv, c.rows, c.n, EPS)
    })?;
    let mut table = vec![
        Row {
            name: "tile fused (1 kernel)".into(),
            ms: t_fused,
        },
        Row {
            name: "tile unfused (3 kernels)".into(),
            ms: t_unfused,
        },
    ];
    // The graph is checked after one replay from fresh inputs, so in place it checks like `check`.
    let ok = graph_rows(
        dev,
        &mut table,
        |g| {
            let c = case::<T>(g, rows, n)?;
            Ok(GraphState {
                x: g.upload(&c.x)?,
                res: g.upload(&c.res)?,
                inv: g.upload(&vec![f32::NAN; rows])?,
                want: reference(g, &c)?,
                c,
            })
        },
        |g, s, unf| {
            let (r, nn) = (s.c.rows, s.c.n);
            match unf {
                false => T::fused(g, &mut s.x, &mut s.res, &s.c.w, r, nn, EPS),
                true => T::unfused(g, &mut s.x, &mut s.res, &s.c.w, &mut s.inv, r, nn, EPS),
            }
        },
        |g, s, unf| {
            let what = format!("{} {rows}x{n} {}, CUDA graph", T::NAME, graph_form(unf));
            compare(g, &what, &s.x, &s.res, &s.want)
        },
    )?;
    // Minimal traffic: read x, residual and w once, write x and residual once.
    let bytes = ((4 * rows * n + n) * std::mem::size_of::<T>()) as f64;
    report(
        &format!(
            "fused_add_rms_norm {rows}x{n} {} ({} MB in + out), median of 30 after 5 warm-ups",
            T::NAME,
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
    let sizes = [(4096, 4096), (32768, 4096)];
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
        }
        None => {
            println!("Running on {}", dev.name());
            shapes.extend(sizes);
        }
    }
    let mut ok = true;
    for &(rows, n) in &shapes {
        ok &= check::<bf16>(&dev, rows, n)?;
        ok &= check::<f16>(&dev, rows, n)?;
    }
    if dev.is_cuda() && !quick {
        let copy = copy_bandwidth(dev.stream().ok_or("no stream")?, 1 << 30)?;
        println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
        for (rows, n) in sizes {
            ok &= bench::<bf16>(&dev, copy, rows, n)?;
            ok &= bench::<f16>(&dev, copy, rows, n)?;
        }
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("fused_add_rmsnorm", run())
}
