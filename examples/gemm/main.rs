//! GEMM on tensor cores, `C = A @ B` (row-major, f16 and bf16 in, f32 accumulation, output in the
//! input type or in f32), against an f64 reference.
//!
//! `cargo run --release --example gemm` — on a GPU: checks awkward shapes (`M`, `N`, `K` of 1, 17,
//! 1000, non-multiples of the 128 × 128 × 32 tile) against the full f64 reference, then the
//! issue's sizes (`M × N × K`: 4096³, 8192³, 4000 × 3000 × 1000, 1 × 4096 × 4096, 17 × 8192 × 1024,
//! 17 × 1024 × 8192)
//! against the reference on 512 sampled elements, then times them (median of CUDA events after
//! warm-up) in TFLOP/s. cuBLAS and Triton on the same sizes come from `bench/python/baseline.py`
//! (`--filter gemm`). Without a GPU: the awkward shapes on the interpreter. `--quick`: the awkward shapes only (for compute-sanitizer).
//!
//! `gemm` runs its programs in grouped order (a 1-D grid, 8 row blocks visited column by column),
//! as Triton's tutorial matmul does; `gemm_grouped`, its earlier grouped copy, is gone (docs/
//! DECISIONS.md has the grouped against the row-major order).
//!
//! Up to 32 rows and fewer than 66 blocks of 64 columns, `kernels::matmul` splits `k` instead
//! (`gemm_splitk`, then `splitk_sum` adds the f32 slices): the rows labelled `split-K` here.
//!
//! `gemm_tf32` (f32 in and out, `precision = tf32`) runs the awkward shapes and the first three
//! sizes, checked against f64 on the tf32-rounded inputs; its error against the f32 inputs is
//! printed.
//!
//! Tolerance: the tensor cores sum in their own order, so results agree with the f64 reference
//! within a relative L2 error of 1e-3 for f32 output (f32 accumulation of exact f16/bf16
//! products) and 4e-3 / 2e-2 for f16 / bf16 output (one rounding to the output type).

use std::process::ExitCode;
use tile_examples::{common, gemm::kernels};

use common::{check_close, matmul_inputs as inputs, matmul_ref_at, print_table, time_ms, Half};
use half::{bf16, f16};
use kernels::{gemm, gemm_tf32, gemm_tma, gemm_wide, splitk_plan};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// `M × N × K`.
type Shape = (usize, usize, usize);

/// f32 output: f32 accumulation of exact products, summed in the tensor cores' order.
const TOL_F32: f64 = 1e-3;

/// The elements to compare ([`common::sampled_elements`]).
fn sample((m, n, _): Shape) -> Vec<(usize, usize)> {
    common::sampled_elements(m, n, 7)
}

fn grid(s: Shape, bn: i32) -> Grid {
    kernels::grid(s.0, s.1, bn)
}

/// `BN` standing for [`kernels::matmul`]'s split-K (the shapes it takes: [`splitk_plan`]).
const SPLIT_K: i32 = 0;

/// `BN` standing for [`gemm_tma`] (the 128 × 256 × 64 tile written with tensor descriptors).
const TMA: i32 = -256;

/// One launch of the kernel with `BN = bn` on `s`, writing `c` as `O`: 256 is [`gemm_wide`],
/// [`TMA`] is [`gemm_tma`], [`SPLIT_K`] is [`kernels::matmul`]'s split-K (through `part`), else
/// [`gemm`].
fn launch<T: Half, O: tile::Element>(
    dev: &Device,
    s: Shape,
    bn: i32,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    part: &mut Buffer<f32>,
) -> Result<(), tile::Error> {
    let (mi, ni, ki) = (s.0 as i32, s.1 as i32, s.2 as i32);
    match bn {
        SPLIT_K => kernels::matmul(dev, a, b, c, part, s),
        TMA => match (c as &mut dyn std::any::Any).downcast_mut::<Buffer<T>>() {
            Some(c) => gemm_tma::launch(dev, grid(s, 256), a, b, c, mi, ni, ki),
            None => Err(tile::Error::Args(
                "gemm_tma writes the input type only".into(),
            )),
        },
        256 => gemm_wide::launch(dev, grid(s, bn), a, b, c, mi, ni, ki),
        _ => gemm::launch(dev, grid(s, bn), a, b, c, mi, ni, ki, bn),
    }
}

/// Runs the kernel with `BN = bn` on `s` ([`SPLIT_K`]: split-K), writing the input type and f32
/// ([`TMA`]: the input type only, the f32 time then 0), checks both, and (when `reps > 0`) times
/// them: `(ok, ms writing the input type, ms writing f32)`.
fn run_case<T: Half>(dev: &Device, s: Shape, reps: usize, bn: i32) -> Res<(bool, f64, f64)> {
    let (m, n, k) = s;
    let (a, b, a64, b64) = inputs::<T>(s);
    let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
    let mut c = dev.upload(&vec![T::from_f32(f32::NAN); m * n])?;
    let mut c32 = dev.upload(&vec![f32::NAN; m * n])?;
    let mut part = dev.upload(&vec![f32::NAN; kernels::splitk_workspace(m, n, k).max(1)])?;
    let f32_out = bn != TMA;
    launch(dev, s, bn, &da, &db, &mut c, &mut part)?;
    if f32_out {
        launch(dev, s, bn, &da, &db, &mut c32, &mut part)?;
    }
    let (got, got32) = (dev.download(&c)?, dev.download(&c32)?);
    let at = sample(s);
    let want = matmul_ref_at(&a64, &b64, s, &at);
    let pick =
        |v: &dyn Fn(usize) -> f32| -> Vec<f32> { at.iter().map(|&(i, j)| v(i * n + j)).collect() };
    let what = match bn {
        SPLIT_K => format!("{m}x{n}x{k} split-K {}", T::NAME),
        TMA => format!("{m}x{n}x{k} descriptors {}", T::NAME),
        _ => format!("{m}x{n}x{k} BN {bn} {}", T::NAME),
    };
    let mut ok = check_close(
        &format!("{what} -> {}", T::NAME),
        &pick(&|x| got[x].to_f32()),
        &want,
        T::TOL,
    );
    if f32_out {
        ok &= check_close(
            &format!("{what} -> f32"),
            &pick(&|x| got32[x]),
            &want,
            TOL_F32,
        );
    }
    if reps == 0 {
        return Ok((ok, 0.0, 0.0));
    }
    let stream = dev.stream().ok_or("no stream")?.clone();
    let t = time_ms(&stream, 5, reps, || {
        launch(dev, s, bn, &da, &db, &mut c, &mut part)
    })?;
    let t32 = if f32_out {
        time_ms(&stream, 5, reps, || {
            launch(dev, s, bn, &da, &db, &mut c32, &mut part)
        })?
    } else {
        0.0
    };
    Ok((ok, t, t32))
}

/// The tf32 kernel on `s`: checked against f64 on the tf32-rounded inputs (the semantics of
/// `precision = tf32`) within [`TOL_F32`], and its relative L2 error against the f32 inputs
/// printed; `(ok, ms)`, timed when `reps > 0`.
fn run_tf32(dev: &Device, s: Shape, reps: usize) -> Res<(bool, f64)> {
    let (m, n, k) = s;
    let (a, b, _, _) = inputs::<f16>(s);
    let (a, b): (Vec<f32>, Vec<f32>) = (
        a.iter().map(|x| x.to_f32() * 1.37).collect(),
        b.iter().map(|x| x.to_f32() * 0.61).collect(),
    );
    let rounded = |v: &[f32]| -> Vec<f64> {
        v.iter()
            .map(|&x| f64::from(tile::ir::round_tf32(x)))
            .collect()
    };
    let exact = |v: &[f32]| -> Vec<f64> { v.iter().map(|&x| f64::from(x)).collect() };
    let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
    let mut c = dev.upload(&vec![f32::NAN; m * n])?;
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let g = Grid::xy(cdiv(m, 128), cdiv(n, 128));
    gemm_tf32::launch(dev, g, &da, &db, &mut c, mi, ni, ki)?;
    let got = dev.download(&c)?;
    let at = sample(s);
    let got: Vec<f32> = at.iter().map(|&(i, j)| got[i * n + j]).collect();
    let (ra, rb, ea, eb) = (rounded(&a), rounded(&b), exact(&a), exact(&b));
    let want = matmul_ref_at(&ra, &rb, s, &at);
    let f32_ref = matmul_ref_at(&ea, &eb, s, &at);
    let what = format!("{m}x{n}x{k} f32 (tf32)");
    let ok = check_close(&what, &got, &want, TOL_F32);
    let (num, den) = got
        .iter()
        .zip(&f32_ref)
        .fold((0.0, 0.0), |(n2, d2), (&g, &w)| {
            (n2 + (f64::from(g) - w).powi(2), d2 + w * w)
        });
    println!(
        "  {what}: relative L2 error {:.2e} against the f32 inputs (tf32 rounding)",
        (num / den.max(f64::MIN_POSITIVE)).sqrt()
    );
    if reps == 0 {
        return Ok((ok, 0.0));
    }
    let stream = dev.stream().ok_or("no stream")?.clone();
    let t = time_ms(&stream, 5, reps, || {
        gemm_tf32::launch(dev, g, &da, &db, &mut c, mi, ni, ki)
    })?;
    Ok((ok, t))
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let awkward: Vec<Shape> = vec![
        (1, 1, 1),
        (17, 17, 17),
        (1, 130, 1000),
        (100, 70, 129),
        (129, 257, 48),
        (20, 300, 2000),
        (32, 64, 4100),
    ];
    let sizes: [Shape; 6] = [
        (4096, 4096, 4096),
        (8192, 8192, 8192),
        (4000, 3000, 1000),
        (1, 4096, 4096),
        (17, 8192, 1024),
        (17, 1024, 8192),
    ];
    // Each tile, and split-K where it takes the shape.
    let tiles = |s: Shape| {
        let mut v = vec![64, 128, 256, TMA];
        if splitk_plan(s.0, s.1, s.2).is_some() {
            v.push(SPLIT_K);
        }
        v
    };
    let mut ok = true;
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (checks only).");
            for &s in &awkward {
                for bn in tiles(s) {
                    ok &= run_case::<f16>(&dev, s, 0, bn)?.0;
                    ok &= run_case::<bf16>(&dev, s, 0, bn)?.0;
                }
                ok &= run_tf32(&dev, s, 0)?.0;
            }
            return Ok(ok);
        }
        None => println!("Running on {}", dev.name()),
    }
    for &s in &awkward {
        for bn in tiles(s) {
            ok &= run_case::<f16>(&dev, s, 0, bn)?.0;
            ok &= run_case::<bf16>(&dev, s, 0, bn)?.0;
        }
        ok &= run_tf32(&dev, s, 0)?.0;
    }
    if quick {
        return Ok(ok);
    }
    let mut rows = Vec::new();
    for &s in &sizes {
        let reps = 20;
        let flop = 2.0 * s.0 as f64 * s.1 as f64 * s.2 as f64;
        let mut cases = Vec::new();
        for bn in tiles(s).into_iter().rev() {
            cases.push(("f16", bn, run_case::<f16>(&dev, s, reps, bn)?));
            cases.push(("bf16", bn, run_case::<bf16>(&dev, s, reps, bn)?));
        }
        for (name, bn, r) in cases {
            ok &= r.0;
            let tile = match (bn, splitk_plan(s.0, s.1, s.2)) {
                (SPLIT_K, Some((bm, split, _))) => format!("split-K {bm}x64x64, {split} slices"),
                (256, _) => "128x256x64".to_string(),
                (TMA, _) => "128x256x64 descriptors".to_string(),
                _ => format!("128x{bn}x32"),
            };
            for (out, ms) in [(name, r.1), ("f32", r.2)] {
                if ms == 0.0 {
                    continue;
                }
                rows.push(vec![
                    format!("{}x{}x{}", s.0, s.1, s.2),
                    tile.clone(),
                    format!("{name} -> {out}"),
                    format!("{ms:.4}"),
                    format!("{:.1}", flop / (ms * 1e-3) / 1e12),
                ]);
            }
        }
    }
    for &s in &sizes[..3] {
        let flop = 2.0 * s.0 as f64 * s.1 as f64 * s.2 as f64;
        let (good, ms) = run_tf32(&dev, s, 20)?;
        ok &= good;
        rows.push(vec![
            format!("{}x{}x{}", s.0, s.1, s.2),
            "128x128x16".into(),
            "f32 (tf32) -> f32".into(),
            format!("{ms:.4}"),
            format!("{:.1}", flop / (ms * 1e-3) / 1e12),
        ]);
    }
    println!(
        "\ngemm (tile, {}), median of 20 after 5 warm-ups",
        match (dev.is_cuda(), dev.target()) {
            (true, Some(t)) => t.arch(),
            (true, None) => "the device's newest target",
            (false, _) => "interpreter",
        }
    );
    print_table(
        &["M x N x K", "tile", "types", "time (ms)", "TFLOP/s"],
        &rows,
    );
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("gemm", run())
}
