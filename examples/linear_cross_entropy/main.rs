//! Linear + cross-entropy forward and backward (`loss = CE(x · Wᵀ, labels)`, `dx`, `dW`): the
//! fused form (tokens in chunks whose logits fit 128 MiB, each chunk's logits turned into their
//! gradient in place and consumed by the two gradient products) against the unfused form (every
//! token's logits at once) and a float64 reference.
//!
//! `cargo run --release --example linear_cross_entropy` — on a GPU: checks awkward shapes
//! against the full reference, then times both forms at 8192 tokens, hidden 4096, vocabularies
//! 32000 and 128256 (bf16), checking two tokens' loss and `dx` row against float64 and the fused
//! `dW` against the unfused one. Without a GPU: the small checks on the interpreter. `--quick`:
//! checks only. `--chunk N`: the fused form's tokens per chunk. `--parts V`: only the timing of
//! each launch of one chunk at vocabulary `V` (for profilers).

use std::process::ExitCode;

use tile::prelude::*;
use tile_examples::common::{self, check_close, print_table, time_ms, Half};
use tile_examples::linear_cross_entropy::host::{self, Scratch, Shape, Tensors, CHUNK_BYTES};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Relative error allowed for the mean loss (its terms are exact up to the rounding of the
/// logits to `T`).
fn loss_tol<T: Half>() -> f64 {
    T::TOL / 4.0
}

/// Checks both forms of `s` (fused in chunks of `chunk` tokens) against the full reference.
fn check<T: Half>(dev: &Device, s: Shape, chunk: usize, smoothing: f32) -> Res<bool> {
    let p = host::problem::<T>(s, (s.t * 31 + s.h * 7 + s.v) as u64);
    let (want_loss, want_dx, want_dw) = host::reference(&p, s, f64::from(smoothing));
    let mut ok = true;
    for (form, c) in [("fused  ", chunk), ("unfused", s.t)] {
        let mut d = Tensors::upload(dev, &p, s)?;
        let mut sc = Scratch::<T>::new(dev, s, c)?;
        host::run(dev, &mut d, &mut sc, s, smoothing)?;
        let loss = f64::from(dev.download(&sc.mean)?[0]);
        let dx: Vec<f32> = dev.download(&d.dx)?.iter().map(|v| v.to_f32()).collect();
        let dw: Vec<f32> = dev.download(&d.dw)?.iter().map(|v| v.to_f32()).collect();
        let label = format!(
            "{}×{}×{} {} chunk {c} smoothing {smoothing} {form}",
            s.t,
            s.h,
            s.v,
            T::NAME
        );
        let e = (loss - want_loss).abs() / want_loss.abs().max(1e-30);
        let lok = e <= loss_tol::<T>();
        println!(
            "check {label} loss: {loss:.6} against {want_loss:.6}, rel. error {e:.1e} -> {}",
            if lok { "ok" } else { "FAILED" }
        );
        ok &= lok;
        ok &= check_close(&format!("{label} dx"), &dx, &want_dx, T::TOL);
        ok &= check_close(&format!("{label} dW"), &dw, &want_dw, T::TOL);
    }
    Ok(ok)
}

/// Times both forms at `s` and checks two tokens against float64 and the fused `dW` against
/// the unfused one.
fn bench<T: Half>(dev: &Device, s: Shape, chunk: usize, rows: &mut Vec<Vec<String>>) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let p = host::problem::<T>(s, 5);
    let mut d = Tensors::upload(dev, &p, s)?;
    let mut ok = true;
    let mut times = Vec::new();
    let mut dws = Vec::new();
    for c in [chunk, s.t] {
        let mut sc = Scratch::<T>::new(dev, s, c)?;
        host::run(dev, &mut d, &mut sc, s, 0.0)?;
        let loss = dev.download(&sc.mean)?[0];
        let dx = dev.download(&d.dx)?;
        let form = if c == s.t { "unfused" } else { "fused" };
        for i in [1, s.t - 2] {
            let (_, g) = host::token_ref(&p, s, i, 0.0);
            let want = host::dx_row(&p, s, &g);
            let got: Vec<f32> = dx[i * s.h..(i + 1) * s.h]
                .iter()
                .map(|v| v.to_f32())
                .collect();
            let label = format!("{}×{}×{} {} {form} dx row {i}", s.t, s.h, s.v, T::NAME);
            ok &= check_close(&label, &got, &want, T::TOL);
        }
        dws.push(dev.download(&d.dw)?);
        let ms = time_ms(&stream, 2, 10, || host::run(dev, &mut d, &mut sc, s, 0.0))?;
        let extra = sc.bytes() + (s.t + s.v) * s.h * std::mem::size_of::<T>();
        println!(
            "bench {} {}×{}×{} {form} chunk {c}: {ms:.3} ms, {:.0} TFLOP/s, loss {loss:.5}, extra memory {:.3} GiB",
            T::NAME,
            s.t,
            s.h,
            s.v,
            s.flops() / (ms * 1e-3) / 1e12,
            extra as f64 / (1u64 << 30) as f64
        );
        if c != s.t {
            // Each launch of one chunk alone, and the chunks' count times it.
            let chunks = s.t.div_ceil(c) as f64;
            let parts: Vec<String> = PARTS
                .iter()
                .zip(part_times(dev, &mut d, &mut sc, s)?)
                .map(|(name, p_ms)| {
                    format!("{name} {p_ms:.3} ms (x{chunks} = {:.2})", p_ms * chunks)
                })
                .collect();
            println!(
                "parts {} {}×{}×{} chunk {c}: {}",
                T::NAME,
                s.t,
                s.h,
                s.v,
                parts.join(", ")
            );
        }
        times.push((ms, extra));
    }
    let fused: Vec<f32> = dws[0].iter().map(|v| v.to_f32()).collect();
    let unfused: Vec<f64> = dws[1].iter().map(|v| f64::from(v.to_f32())).collect();
    ok &= check_close(
        &format!(
            "{}×{}×{} {} fused dW against unfused",
            s.t,
            s.h,
            s.v,
            T::NAME
        ),
        &fused,
        &unfused,
        T::TOL,
    );
    let ((f_ms, f_mem), (u_ms, u_mem)) = (times[0], times[1]);
    let gib = |b: usize| format!("{:.2}", b as f64 / (1u64 << 30) as f64);
    rows.push(vec![
        T::NAME.into(),
        format!("{}×{}×{}", s.t, s.h, s.v),
        chunk.to_string(),
        format!("{f_ms:.2}"),
        format!("{:.0}", s.flops() / (f_ms * 1e-3) / 1e12),
        gib(f_mem),
        format!("{u_ms:.2}"),
        gib(u_mem),
        format!("{:.2}x", u_ms / f_ms),
    ]);
    Ok(ok)
}

/// The launches of one chunk, in [`host::run_part`]'s order.
const PARTS: [&str; 4] = ["logits", "loss+grad", "dx", "dW"];

/// Each launch of the first chunk timed alone (ms), in [`PARTS`]' order.
fn part_times<T: Half>(
    dev: &Device,
    d: &mut Tensors<T>,
    sc: &mut Scratch<T>,
    s: Shape,
) -> Res<Vec<f64>> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    (0..PARTS.len())
        .map(|part| time_ms(&stream, 2, 10, || host::run_part(dev, d, sc, s, part)))
        .collect()
}

/// The number after `flag` on the command line, if the flag is there.
fn number_after(args: &[String], flag: &str) -> Res<Option<usize>> {
    Ok(args
        .iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse::<usize>())
        .transpose()?)
}

fn run() -> Res<bool> {
    let dev = Device::best_available().0;
    let on_gpu = dev.is_cuda();
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let chunk_arg = number_after(&args, "--chunk")?;
    let parts_only = number_after(&args, "--parts")?;
    if let (Some(v), true) = (parts_only, on_gpu) {
        // Only the timing of each launch at 8192 × 4096 × v (for profilers).
        let s = Shape {
            t: 8192,
            h: 4096,
            v,
        };
        let chunk = chunk_arg.unwrap_or_else(|| s.chunk(CHUNK_BYTES));
        let p = host::problem::<bf16>(s, 5);
        let mut d = Tensors::upload(&dev, &p, s)?;
        let mut sc = Scratch::<bf16>::new(&dev, s, chunk)?;
        host::run(&dev, &mut d, &mut sc, s, 0.0)?;
        for (name, ms) in PARTS.iter().zip(part_times(&dev, &mut d, &mut sc, s)?) {
            println!("part {name}: {ms:.3} ms");
        }
        return Ok(true);
    }
    let mut ok = true;
    let small = [
        (
            Shape {
                t: 1,
                h: 64,
                v: 100,
            },
            1,
            0.0,
        ),
        (
            Shape {
                t: 37,
                h: 40,
                v: 75,
            },
            16,
            0.0,
        ),
        (
            Shape {
                t: 70,
                h: 96,
                v: 257,
            },
            32,
            0.1,
        ),
    ];
    for (s, chunk, smoothing) in small {
        ok &= check::<f16>(&dev, s, chunk, smoothing)?;
        ok &= check::<bf16>(&dev, s, chunk, smoothing)?;
    }
    if on_gpu {
        let s = Shape {
            t: 600,
            h: 256,
            v: 3001,
        };
        ok &= check::<bf16>(&dev, s, 256, 0.0)?;
        ok &= check::<f16>(&dev, s, 128, 0.0)?;
    }
    if !on_gpu || quick {
        return Ok(ok);
    }
    let mut rows = Vec::new();
    for v in [32000, 128256] {
        let s = Shape {
            t: 8192,
            h: 4096,
            v,
        };
        let chunk = chunk_arg.unwrap_or_else(|| s.chunk(CHUNK_BYTES));
        ok &= bench::<bf16>(&dev, s, chunk, &mut rows)?;
    }
    print_table(
        &[
            "type",
            "t×h×v",
            "chunk",
            "fused ms",
            "TFLOP/s",
            "fused GiB",
            "unfused ms",
            "unfused GiB",
            "speedup",
        ],
        &rows,
    );
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("linear_cross_entropy", run())
}
