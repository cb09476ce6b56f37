//! `y = GELU(x + bias[col])`: one fused kernel against the unfused pair (add the bias, then GELU)
//! and an f64 reference, for the exact (erf) and the tanh form of GELU, in f32 and bf16.
//!
//! `cargo run --release --example fused_bias_gelu` — on a GPU: checks awkward shapes and
//! 16384×4096, then times every variant on 16384×4096 (median of CUDA events after warm-up) against
//! the copy bandwidth measured in the same run (with CUDA-graph replays of both forms where the
//! fused kernel takes under 75 µs, launch-bound: not at this size). Without a GPU: checks awkward
//! shapes on the interpreter. `--quick`: checks only; `--graph-all`: CUDA graphs for every size.
//! The reference is computed in f64 from the inputs as stored (rounded to bf16) and, for the
//! unfused form, from its intermediate as stored; the tolerance on the relative L2 error is 1e-5
//! for f32 outputs (1e-4 for the erf form, see `tolerance`) and 1e-2 for bf16.

use std::process::ExitCode;
use tile_examples::{common, fused_bias_gelu::kernels};

use common::{check_close, copy_bandwidth, graph_form, graph_rows, report, time_ms, Rng, Row};
use kernels::{Gelu, Storage};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// GELU in f64.
fn gelu(form: Gelu, v: f64) -> f64 {
    match form {
        Gelu::Erf => 0.5 * v * (1.0 + libm::erf(v / std::f64::consts::SQRT_2)),
        Gelu::Tanh => {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * v * (1.0 + (k * (v + 0.044715 * v * v * v)).tanh())
        }
    }
}

/// The inputs of a `rows × cols` problem: device buffers, and the inputs as the kernels see them
/// (after rounding to `T`).
struct Case<T: Storage> {
    x: Buffer<T>,
    bias: Buffer<T>,
    tmp: Buffer<T>,
    out: Buffer<T>,
    host: (Vec<f32>, Vec<f32>),
    rows: i32,
    cols: i32,
}

fn case<T: Storage>(dev: &Device, rows: usize, cols: usize) -> Res<Case<T>> {
    let mut rng = Rng::new((rows * 7919 + cols) as u64);
    let x: Vec<T> = rng
        .vec(rows * cols, -4.0, 4.0)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let bias: Vec<T> = rng
        .vec(cols, -1.0, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let nan = vec![T::from_f32(f32::NAN); rows * cols];
    Ok(Case {
        x: dev.upload(&x)?,
        bias: dev.upload(&bias)?,
        tmp: dev.upload(&nan)?,
        out: dev.upload(&nan)?,
        host: (
            x.iter().map(|v| v.to_f32()).collect(),
            bias.iter().map(|v| v.to_f32()).collect(),
        ),
        rows: i32::try_from(rows)?,
        cols: i32::try_from(cols)?,
    })
}

/// The check's tolerance on the relative L2 error.
fn tolerance(name: &str, form: Gelu) -> f64 {
    // f32 erf is accurate to ~3e-7 in absolute terms; where 1 + erf(v/√2) cancels (v ≪ 0) that
    // becomes a larger relative error of GELU, which decides a check on a few elements (seen on
    // GPUs: 1.5e-5 to 2.3e-5 on the 1×1 case).
    match (name, form) {
        ("f32", Gelu::Erf) => 1e-4,
        ("f32", Gelu::Tanh) => 1e-5,
        _ => 1e-2,
    }
}

/// The f64 reference of one form, fused or not, from the inputs as stored.
fn want<T: Storage>(c: &Case<T>, form: Gelu, fused: bool) -> Vec<f64> {
    let (x, bias) = &c.host;
    let cols = c.cols as usize;
    // The unfused form stores `x + bias` in `T` (as PyTorch eager does), so its reference rounds
    // that intermediate too: in bf16 the rounding alone moves GELU's far negative tail by a few
    // percent, more than the tolerance on a single element.
    let v = |i: usize| {
        let v = x[i] as f64 + bias[i % cols] as f64;
        if fused {
            v
        } else {
            T::from_f32(v as f32).to_f32() as f64
        }
    };
    (0..x.len()).map(|i| gelu(form, v(i))).collect()
}

/// The label of a check line.
fn label<T: Storage>(rows: usize, cols: usize, form: Gelu, how: &str) -> String {
    format!(
        "{:>10} {:<4} {:<19} {how}",
        format!("{rows}x{cols}"),
        T::NAME,
        form.name()
    )
}

fn check<T: Storage>(dev: &Device, rows: usize, cols: usize) -> Res<bool> {
    let mut c = case::<T>(dev, rows, cols)?;
    let nan = vec![T::from_f32(f32::NAN); rows * cols];
    let mut ok = true;
    for form in Gelu::ALL {
        for fused in [true, false] {
            let want = want(&c, form, fused);
            c.out = dev.upload(&nan)?;
            if fused {
                T::fused(dev, form, &c.x, &c.bias, &mut c.out, c.rows, c.cols)?;
            } else {
                T::unfused(
                    dev, form, &c.x, &c.bias, &mut c.tmp, &mut c.out, c.rows, c.cols,
                )?;
            }
            let got: Vec<f32> = dev.download(&c.out)?.into_iter().map(T::to_f32).collect();
            let what = label::<T>(rows, cols, form, if fused { "fused  " } else { "unfused" });
            ok &= check_close(&what, &got, &want, tolerance(T::NAME, form));
        }
    }
    Ok(ok)
}

fn bench<T: Storage>(dev: &Device, copy: f64, rows: usize, cols: usize) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let mut c = case::<T>(dev, rows, cols)?;
    let (r, n) = (c.rows, c.cols);
    // Minimal traffic: x and the bias read once, the output written once.
    let bytes = (std::mem::size_of::<T>() * (2 * rows * cols + cols)) as f64;
    let mut ok = true;
    for form in Gelu::ALL {
        let t_fused = time_ms(&stream, 5, 30, || {
            T::fused(dev, form, &c.x, &c.bias, &mut c.out, r, n)
        })?;
        let t_unfused = time_ms(&stream, 5, 30, || {
            T::unfused(dev, form, &c.x, &c.bias, &mut c.tmp, &mut c.out, r, n)
        })?;
        let mut table = vec![
            Row {
                name: "tile fused (1 kernel)".into(),
                ms: t_fused,
            },
            Row {
                name: "tile unfused (add bias, GELU)".into(),
                ms: t_unfused,
            },
        ];
        ok &= graph_rows(
            dev,
            &mut table,
            |g| case::<T>(g, rows, cols),
            |g, c, unf| match unf {
                false => T::fused(g, form, &c.x, &c.bias, &mut c.out, r, n),
                true => T::unfused(g, form, &c.x, &c.bias, &mut c.tmp, &mut c.out, r, n),
            },
            |g, c, unf| {
                let got: Vec<f32> = g.download(&c.out)?.into_iter().map(T::to_f32).collect();
                let what = label::<T>(
                    rows,
                    cols,
                    form,
                    &format!("{}, CUDA graph", graph_form(unf)),
                );
                Ok(check_close(
                    &what,
                    &got,
                    &want(c, form, !unf),
                    tolerance(T::NAME, form),
                ))
            },
        )?;
        report(
            &format!(
                "bias + {} on {rows}x{cols} {}, median of 30 after 5 warm-ups",
                form.name(),
                T::NAME
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
    let mut shapes = vec![(1, 1), (1, 17), (17, 1), (3, 1000), (5, 1023), (2, 4096)];
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
    common::exit("fused_bias_gelu", run())
}
