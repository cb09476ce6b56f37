//! vLLM's `act_and_mul` (SwiGLU / GeGLU gating) on bf16: `out[r, j] = act(x[r, j]) * x[r, d + j]`,
//! one fused kernel against the unfused pair (activation into a temporary, then multiply) and an
//! f64 reference computed from the bf16 inputs, for act = SiLU and GELU (erf).
//!
//! `cargo run --release --example act_and_mul` — on a GPU: checks awkward shapes and
//! 8192 × (2×14336), then times both activations on 8192 × (2×14336) (median of CUDA events after
//! warm-up) against the copy bandwidth measured in the same run (with CUDA-graph replays of both
//! forms where the fused kernel takes under 75 µs, launch-bound: not at this size). Without a GPU:
//! checks awkward shapes on the interpreter. `--quick`: checks only; `--graph-all`: CUDA graphs
//! for every size. Tolerance: 1e-2 relative L2 (bf16 outputs).

use std::process::ExitCode;
use tile_examples::{act_and_mul::kernels, common};

use common::{check_close, copy_bandwidth, graph_form, graph_rows, report, time_ms, Rng, Row};
use kernels::{fused, unfused, Act};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// `act(a) * b` in f64.
fn reference(act: Act, a: f64, b: f64) -> f64 {
    let y = match act {
        Act::Silu => a / (1.0 + (-a).exp()),
        Act::Gelu => 0.5 * a * (1.0 + libm::erf(a / std::f64::consts::SQRT_2)),
    };
    y * b
}

struct Case {
    x: Buffer<bf16>,
    tmp: Buffer<bf16>,
    out: Buffer<bf16>,
    host: Vec<f32>,
    rows: i32,
    d: i32,
}

/// The input (`rows × 2d`, uniform in [-4, 4) rounded to bf16) and NaN-filled outputs.
fn case(dev: &Device, rows: usize, d: usize) -> Res<Case> {
    let x: Vec<bf16> = Rng::new((rows * 7919 + d) as u64)
        .vec(rows * 2 * d, -4.0, 4.0)
        .into_iter()
        .map(bf16::from_f32)
        .collect();
    let nan = vec![bf16::NAN; rows * d];
    Ok(Case {
        x: dev.upload(&x)?,
        tmp: dev.upload(&nan)?,
        out: dev.upload(&nan)?,
        host: x.iter().map(|v| v.to_f32()).collect(),
        rows: i32::try_from(rows)?,
        d: i32::try_from(d)?,
    })
}

/// The f64 reference of `act_and_mul` on the case's (bf16-rounded) input.
fn want(c: &Case, act: Act) -> Vec<f64> {
    let (rows, d) = (c.rows as usize, c.d as usize);
    (0..rows * d)
        .map(|i| {
            let (r, j) = (i / d, i % d);
            reference(
                act,
                c.host[r * 2 * d + j] as f64,
                c.host[r * 2 * d + d + j] as f64,
            )
        })
        .collect()
}

/// The label of a check line.
fn label(rows: usize, d: usize, act: Act, how: &str) -> String {
    format!("{:>14} {:<10} {how}", format!("{rows}x(2x{d})"), act.name())
}

fn check(dev: &Device, rows: usize, d: usize) -> Res<bool> {
    let mut c = case(dev, rows, d)?;
    let nan = vec![bf16::NAN; rows * d];
    let mut ok = true;
    for act in Act::ALL {
        let want = want(&c, act);
        for is_fused in [true, false] {
            c.out = dev.upload(&nan)?;
            if is_fused {
                fused(dev, act, &c.x, &mut c.out, c.rows, c.d)?;
            } else {
                unfused(dev, act, &c.x, &mut c.tmp, &mut c.out, c.rows, c.d)?;
            }
            let got: Vec<f32> = dev
                .download(&c.out)?
                .into_iter()
                .map(bf16::to_f32)
                .collect();
            let what = label(rows, d, act, if is_fused { "fused  " } else { "unfused" });
            ok &= check_close(&what, &got, &want, 1e-2);
        }
    }
    Ok(ok)
}

fn bench(dev: &Device, rows: usize, d: usize) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let copy = copy_bandwidth(&stream, 1 << 30)?;
    println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
    let mut c = case(dev, rows, d)?;
    let (r, dd) = (c.rows, c.d);
    // Minimal traffic: x (rows × 2d) read once, out (rows × d) written once, 2 bytes each.
    let bytes = 2.0 * (3 * rows * d) as f64;
    let mut ok = true;
    for act in Act::ALL {
        let t_fused = time_ms(&stream, 5, 30, || fused(dev, act, &c.x, &mut c.out, r, dd))?;
        let t_unfused = time_ms(&stream, 5, 30, || {
            unfused(dev, act, &c.x, &mut c.tmp, &mut c.out, r, dd)
        })?;
        let mut table = vec![
            Row {
                name: "tile fused (1 kernel)".into(),
                ms: t_fused,
            },
            Row {
                name: "tile unfused (act, mul)".into(),
                ms: t_unfused,
            },
        ];
        ok &= graph_rows(
            dev,
            &mut table,
            |g| case(g, rows, d),
            |g, c, unf| match unf {
                false => fused(g, act, &c.x, &mut c.out, r, dd),
                true => unfused(g, act, &c.x, &mut c.tmp, &mut c.out, r, dd),
            },
            |g, c, unf| {
                let got: Vec<f32> = g.download(&c.out)?.into_iter().map(bf16::to_f32).collect();
                let what = label(rows, d, act, &format!("{}, CUDA graph", graph_form(unf)));
                Ok(check_close(&what, &got, &want(c, act), 1e-2))
            },
        )?;
        report(
            &format!(
                "{}_and_mul on {rows}x(2x{d}) bf16, median of 30 after 5 warm-ups",
                act.name()
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
        (5, 1023),
        (2, 1025),
        (1, 2048),
    ];
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
        }
        None => {
            println!("Running on {}", dev.name());
            shapes.extend([(1000, 1000), (8192, 14336)]);
        }
    }
    let mut ok = true;
    for (rows, d) in shapes {
        ok &= check(&dev, rows, d)?;
    }
    if dev.is_cuda() && !quick {
        ok &= bench(&dev, 8192, 14336)?;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("act_and_mul", run())
}
