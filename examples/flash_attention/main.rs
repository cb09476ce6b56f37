//! FlashAttention forward against a float64 reference.
//!
//! `cargo run --release --example flash_attention` — on a GPU: awkward shapes (sequence lengths
//! 1, 17, 1000, 4097; causal and not; grouped-query heads 4:1 and 32:1) checked on every or 64
//! sampled rows, then the forward shapes timed (median of CUDA events after warm-up) in
//! TFLOP/s (Triton's tutorial's count: `4·B·H·S²·D`, halved with the causal mask). PyTorch's
//! `scaled_dot_product_attention` backends, FlexAttention and Triton's fused-attention tutorial
//! on the same shapes come from `bench/python/baseline.py`. Without a GPU: small shapes on the
//! interpreter. `--quick`: the awkward shapes only.
//!
//! Tolerance: relative L2 error of the output against float64 within 4e-3 (f16) / 2e-2 (bf16),
//! one rounding of `P` to the input type and one of the output; the log-sum-exp within 1e-5.

use std::process::ExitCode;

use half::{bf16, f16};
use tile::prelude::*;
use tile_examples::common::{self, print_table, time_ms, Half};
use tile_examples::flash_attention::attn::{errors, forward, Inputs, Shape};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Relative L2 tolerance of the log-sum-exp.
const LSE_TOL: f64 = 1e-5;

fn shape(batch: usize, hq: usize, hkv: usize, n_ctx: usize, d: usize, causal: bool) -> Shape {
    Shape {
        batch,
        hq,
        hkv,
        n_ctx,
        d,
        causal,
    }
}

/// Runs `s` once, checks it, and (when `reps > 0`) times it: `(ok, ms)`.
fn run_case<T: Half>(dev: &Device, s: &Shape, reps: usize) -> Res<(bool, f64)> {
    let x = Inputs::<T>::new(s, 1);
    let (q, k, v) = (dev.upload(&x.q)?, dev.upload(&x.k)?, dev.upload(&x.v)?);
    let mut o = dev.upload(&vec![T::from_f32(f32::NAN); s.q_len()])?;
    let mut lse = dev.upload(&vec![f32::NAN; s.batch * s.hq * s.n_ctx])?;
    forward(dev, s, &q, &k, &v, &mut o, &mut lse)?;
    let (got, got_lse) = (dev.download(&o)?, dev.download(&lse)?);
    let (e, el) = errors(s, &x, &got, &got_lse);
    let ok = e <= T::TOL && el <= LSE_TOL;
    println!(
        "check {} {}: output rel. L2 {e:.2e} (tolerance {:.0e}), lse {el:.2e} (tolerance {LSE_TOL:.0e}) -> {}",
        s.label(),
        T::NAME,
        T::TOL,
        if ok { "ok" } else { "FAILED" }
    );
    if reps == 0 {
        return Ok((ok, 0.0));
    }
    let stream = dev.stream().ok_or("no stream")?.clone();
    let t = time_ms(&stream, 5, reps, || {
        forward(dev, s, &q, &k, &v, &mut o, &mut lse)
    })?;
    Ok((ok, t))
}

/// Shapes whose edges the kernels must mask: lengths that are not multiples of the blocks, one
/// token, grouped-query heads.
fn awkward(gpu: bool) -> Vec<Shape> {
    let mut v = Vec::new();
    for d in [64, 128] {
        for causal in [false, true] {
            v.push(shape(1, 2, 2, 1, d, causal));
            v.push(shape(2, 2, 1, 17, d, causal));
            v.push(shape(1, 4, 1, 130, d, causal));
            if gpu {
                v.push(shape(2, 8, 2, 1000, d, causal));
                v.push(shape(1, 32, 1, 4097, d, causal));
            }
        }
    }
    v
}

/// The forward shapes: `B·H·S = 4·32·{1024, 4096, 16384}`, `D ∈ {64, 128}`, causal and
/// not.
fn timed() -> Vec<Shape> {
    let mut v = Vec::new();
    for d in [64, 128] {
        for causal in [false, true] {
            for n in [1024, 4096, 16384] {
                v.push(shape(4, 32, 32, n, d, causal));
            }
        }
    }
    v.push(shape(4, 32, 8, 4096, 128, false));
    v.push(shape(4, 32, 1, 4096, 128, false));
    v
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    if let Some(why) = &no_gpu {
        println!("No GPU ({why}). Running on the CPU interpreter instead (checks only).");
    }
    let gpu = no_gpu.is_none();
    let mut ok = true;
    for s in awkward(gpu) {
        ok &= run_case::<f16>(&dev, &s, 0)?.0;
        ok &= run_case::<bf16>(&dev, &s, 0)?.0;
    }
    if !gpu || quick {
        return Ok(ok);
    }
    let mut rows = Vec::new();
    for s in timed() {
        for dtype in ["f16", "bf16"] {
            let (good, ms) = match dtype {
                "f16" => run_case::<f16>(&dev, &s, 20)?,
                _ => run_case::<bf16>(&dev, &s, 20)?,
            };
            ok &= good;
            rows.push(vec![
                s.label(),
                dtype.to_string(),
                format!("{ms:.3}"),
                format!("{:.1}", s.flops() / ms / 1e9),
            ]);
        }
    }
    print_table(&["B x H x S x D", "dtype", "ms", "TFLOP/s"], &rows);
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("flash_attention", run())
}
