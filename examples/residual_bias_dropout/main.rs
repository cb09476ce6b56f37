//! `out = residual + dropout(x + bias[col], p)`: one fused kernel against the unfused three (add
//! the bias, dropout, add the residual) and an f64 reference, in f32 and bf16, with Triton's
//! dropout mask.
//!
//! `cargo run --release --example residual_bias_dropout` — on a GPU: checks awkward shapes and
//! 16384×4096, then times both forms on 16384×4096 at p = 0.1 against the copy bandwidth measured
//! in the same run. Without a GPU: checks awkward shapes on the interpreter. `--quick`: checks
//! only. Checks, per shape, type and form, at p = 0 and p = 0.1: every element against the f64
//! reference (rel. L2 error; the unfused reference rounds its intermediates to the storage type),
//! whose mask is the form's stream (`kernels::Stream`: Triton's `tl.rand(seed, i) > p`, its
//! dropout tutorial's mask, for the unfused form and the first fused kernel; word `i % 4` of
//! `tl.rand4x(seed, i / 4)` for the fused kernel that evaluates Philox once per four elements);
//! every dropped element equals its residual exactly; on large shapes the kept fraction is within
//! 4 standard deviations of 1 − p.

use std::process::ExitCode;
use tile_examples::{common, residual_bias_dropout::kernels};

use common::{check_close, copy_bandwidth, report, time_ms, Rng, Row};
use kernels::{Storage, Stream};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The seed of every run (an `i64`; any value works).
const SEED: i64 = 0x5EED_1234_ABCD;

/// The inputs of a `rows × cols` problem on the device, and as the kernels see them.
struct Case<T: Storage> {
    x: Buffer<T>,
    bias: Buffer<T>,
    residual: Buffer<T>,
    t1: Buffer<T>,
    t2: Buffer<T>,
    out: Buffer<T>,
    host: [Vec<f32>; 3],
    rows: i32,
    cols: i32,
}

fn case<T: Storage>(dev: &Device, rows: usize, cols: usize) -> Res<Case<T>> {
    let mut rng = Rng::new((rows * 7919 + cols) as u64);
    let mut make = |n: usize, lo: f32, hi: f32| -> Vec<T> {
        rng.vec(n, lo, hi).into_iter().map(T::from_f32).collect()
    };
    let (x, bias, residual) = (
        make(rows * cols, -4.0, 4.0),
        make(cols, -1.0, 1.0),
        make(rows * cols, -4.0, 4.0),
    );
    let nan = vec![T::from_f32(f32::NAN); rows * cols];
    let f = |v: &[T]| v.iter().map(|e| e.to_f32()).collect::<Vec<f32>>();
    Ok(Case {
        x: dev.upload(&x)?,
        bias: dev.upload(&bias)?,
        residual: dev.upload(&residual)?,
        t1: dev.upload(&nan)?,
        t2: dev.upload(&nan)?,
        out: dev.upload(&nan)?,
        host: [f(&x), f(&bias), f(&residual)],
        rows: i32::try_from(rows)?,
        cols: i32::try_from(cols)?,
    })
}

/// One of the forms compared.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    /// One kernel, with the mask of this stream.
    Fused(Stream),
    /// Three kernels (add the bias, dropout with Triton's `rand(seed, i)`, add the residual).
    Unfused,
}

impl Form {
    const ALL: [Form; 3] = [
        Form::Fused(Stream::Rand),
        Form::Fused(Stream::Words4),
        Form::Unfused,
    ];

    fn name(self) -> String {
        match self {
            Form::Fused(s) => format!("fused {}", s.name()),
            Form::Unfused => "unfused rand(i)".into(),
        }
    }

    fn stream(self) -> Stream {
        match self {
            Form::Fused(s) => s,
            Form::Unfused => Stream::Rand,
        }
    }
}

/// The f64 reference (the unfused form's intermediates rounded to `T`) and the mask.
fn want<T: Storage>(c: &Case<T>, form: Form, p: f32) -> (Vec<f64>, Vec<bool>) {
    let fused = form != Form::Unfused;
    let [x, bias, residual] = &c.host;
    let cols = c.cols as usize;
    let round = |v: f64| {
        if fused {
            v
        } else {
            T::from_f32(v as f32).to_f32() as f64
        }
    };
    let keep: Vec<bool> = (0..x.len())
        .map(|i| form.stream().keep(SEED, i / cols, i % cols, cols, p))
        .collect();
    let out = (0..x.len())
        .map(|i| {
            let v = round(x[i] as f64 + bias[i % cols] as f64);
            let d = if keep[i] {
                round(v / (1.0 - f64::from(p)))
            } else {
                0.0
            };
            residual[i] as f64 + d
        })
        .collect();
    (out, keep)
}

fn launch<T: Storage>(dev: &Device, c: &mut Case<T>, form: Form, p: f32) -> Result<(), Error> {
    let (rows, cols) = (c.rows, c.cols);
    match form {
        Form::Fused(s) => T::fused(
            dev,
            s,
            &c.x,
            &c.bias,
            &c.residual,
            &mut c.out,
            rows,
            cols,
            p,
            SEED,
        ),
        Form::Unfused => T::unfused(
            dev,
            &c.x,
            &c.bias,
            &c.residual,
            &mut c.t1,
            &mut c.t2,
            &mut c.out,
            rows,
            cols,
            p,
            SEED,
        ),
    }
}

fn run_form<T: Storage>(dev: &Device, c: &mut Case<T>, form: Form, p: f32) -> Res<Vec<f32>> {
    c.out = dev.upload(&vec![T::from_f32(f32::NAN); (c.rows * c.cols) as usize])?;
    launch(dev, c, form, p)?;
    Ok(dev.download(&c.out)?.into_iter().map(T::to_f32).collect())
}

fn check<T: Storage>(dev: &Device, rows: usize, cols: usize) -> Res<bool> {
    let mut c = case::<T>(dev, rows, cols)?;
    let tol = if T::NAME == "f32" { 1e-6 } else { 1e-2 };
    let mut ok = true;
    for form in Form::ALL {
        for p in [0.0f32, 0.1] {
            let got = run_form(dev, &mut c, form, p)?;
            let (want, keep) = want(&c, form, p);
            let what = format!(
                "{:>10} {:<4} {:<19} p = {p}",
                format!("{rows}x{cols}"),
                T::NAME,
                form.name()
            );
            ok &= check_close(&what, &got, &want, tol);
            let residual = &c.host[2];
            let wrong = (0..got.len())
                .filter(|&i| !keep[i] && got[i] != residual[i])
                .count();
            let kept = keep.iter().filter(|&&k| k).count();
            let n = keep.len() as f64;
            let sd = (n * f64::from(p) * (1.0 - f64::from(p))).sqrt();
            let frac_ok =
                n < 10_000.0 || (kept as f64 - n * (1.0 - f64::from(p))).abs() <= 4.0 * sd;
            println!(
                "check {what}: dropped elements equal the residual: {} of {}, kept {:.4} -> {}",
                keep.len() - kept - wrong,
                keep.len() - kept,
                kept as f64 / n,
                if wrong == 0 && frac_ok {
                    "ok"
                } else {
                    "FAILED"
                }
            );
            ok &= wrong == 0 && frac_ok;
        }
    }
    Ok(ok)
}

fn bench<T: Storage>(dev: &Device, copy: f64, rows: usize, cols: usize) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let mut c = case::<T>(dev, rows, cols)?;
    let p = 0.1f32;
    // Minimal traffic: x, the residual and the bias read once, the output written once.
    let bytes = (std::mem::size_of::<T>() * (3 * rows * cols + cols)) as f64;
    let mut table = Vec::new();
    for form in Form::ALL {
        let ms = time_ms(&stream, 5, 30, || launch(dev, &mut c, form, p))?;
        let name = match form {
            Form::Fused(s) => format!("tile fused (1 kernel, {})", s.name()),
            Form::Unfused => "tile unfused (add bias, dropout rand(i), add residual)".into(),
        };
        table.push(Row { name, ms });
    }
    report(
        &format!(
            "residual + dropout(x + bias) (p = {p}) on {rows}x{cols} {}, median of 30 after 5 warm-ups",
            T::NAME
        ),
        copy,
        bytes,
        &table,
        2,
    );
    Ok(true)
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let mut shapes = vec![(1, 1), (1, 17), (17, 1), (3, 1000), (5, 1023), (2, 4096)];
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
            shapes.push((40, 1000));
        }
        None => {
            println!("Running on {}", dev.name());
            shapes.extend([(1000, 1000), (16384, 4096)]);
        }
    }
    let mut ok = true;
    for (rows, cols) in shapes {
        ok &= check::<f32>(&dev, rows, cols)?;
        ok &= check::<bf16>(&dev, rows, cols)?;
    }
    if dev.is_cuda() && !quick {
        let copy = copy_bandwidth(dev.stream().ok_or("no stream")?, 1 << 30)?;
        println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
        ok &= bench::<f32>(&dev, copy, 16384, 4096)?;
        ok &= bench::<bf16>(&dev, copy, 16384, 4096)?;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("residual_bias_dropout", run())
}
