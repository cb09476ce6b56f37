//! `y = RMSNorm(x) @ Wᵀ`: the fused form (RMSNorm's weight folded into `W`, the row statistic
//! from one pass over `x` applied in the GEMM's epilogue) against the unfused form (RMSNorm
//! writes the normalized `x`, then a GEMM) and a float64 reference.
//!
//! `cargo run --release --example rmsnorm_linear` — on a GPU: checks awkward shapes, then times
//! both forms at 16 and 4096 tokens, hidden 4096 → 14336, bf16 and f16. Without a GPU: checks
//! small shapes on the interpreter. `--quick`: checks only. `--sweep`: also times the few-token
//! product with 64 or 128 columns per program and `k` cut in 1 to 8 slices.

use std::process::ExitCode;

use tile::prelude::*;
use tile_examples::common::{self, check_close, print_table, time_ms, Half, Rng};
use tile_examples::rmsnorm_linear::host::{self, Scratch, Shape};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Activations of `s` in `[-1, 1)`, rounded to `T`.
fn activations<T: Half>(s: Shape, seed: u64) -> Vec<T> {
    Rng::new(seed)
        .vec(s.m * s.k, -1.0, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect()
}

fn check<T: Half>(dev: &Device, s: Shape) -> Res<bool> {
    let seed = (s.m * 7 + s.n * 131 + s.k) as u64;
    let xh = activations::<T>(s, seed);
    let wh = host::weights::<T>(s, seed + 1);
    let at = common::sampled_elements(s.m, s.n, seed + 2);
    let want = host::reference(&xh, &wh, s, &at);
    let x = dev.upload(&xh)?;
    let w = host::upload(dev, &wh, s)?;
    let mut sc = Scratch::<T>::new(dev, s)?;
    let nan = vec![T::from_f32(f32::NAN); s.m * s.n];
    let mut ok = true;
    for fused in [true, false] {
        let mut y = dev.upload(&nan)?;
        if fused {
            host::fused(dev, &x, &w, &mut sc, &mut y, s)?;
        } else {
            host::unfused(dev, &x, &w, &mut sc, &mut y, s)?;
        }
        let got = dev.download(&y)?;
        let picked: Vec<f32> = at.iter().map(|&(i, j)| got[i * s.n + j].to_f32()).collect();
        let form = if fused { "fused  " } else { "unfused" };
        let label = format!("{}×{}×{} {} {form}", s.m, s.n, s.k, T::NAME);
        ok &= check_close(&label, &picked, &want, T::TOL);
    }
    Ok(ok)
}

/// Tokens of the timed runs, on hidden 4096 → 14336.
const TOKENS: [usize; 2] = [16, 4096];

fn bench<T: Half>(dev: &Device, rows: &mut Vec<Vec<String>>) -> Res<()> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let (n, k) = (14336, 4096);
    let w = host::upload(
        dev,
        &host::weights::<T>(Shape { m: 1, n, k }, 3),
        Shape { m: 1, n, k },
    )?;
    for m in TOKENS {
        let s = Shape { m, n, k };
        let x = dev.upload(&activations::<T>(s, 4))?;
        let mut y = dev.zeros::<T>(m * n)?;
        let mut sc = Scratch::<T>::new(dev, s)?;
        let fused = time_ms(&stream, 3, 20, || {
            host::fused(dev, &x, &w, &mut sc, &mut y, s)
        })?;
        let unfused = time_ms(&stream, 3, 20, || {
            host::unfused(dev, &x, &w, &mut sc, &mut y, s)
        })?;
        if std::env::args().any(|a| a == "--sweep") {
            for plan in host::split_plans(s) {
                let t = time_ms(&stream, 3, 20, || {
                    host::fused_with(dev, &x, &w, &mut sc, &mut y, s, Some(plan))
                })?;
                println!(
                    "sweep {} {m}×{n}×{k} (split, kslice) {plan:?}: {t:.4} ms",
                    T::NAME
                );
            }
        }
        let tflops = 2.0 * (m * n * k) as f64 / (fused * 1e-3) / 1e12;
        let bytes = ((m * k + k * n + m * n) * std::mem::size_of::<T>()) as f64;
        rows.push(vec![
            T::NAME.into(),
            format!("{m}×{n}×{k}"),
            format!("{fused:.4}"),
            format!("{tflops:.1}"),
            format!("{:.0}", bytes / (fused * 1e-3) / 1e9),
            format!("{unfused:.4}"),
            format!("{:.2}x", unfused / fused),
        ]);
        println!(
            "bench {}",
            rows.last().map(|r| r.join(" | ")).unwrap_or_default()
        );
    }
    Ok(())
}

fn run() -> Res<bool> {
    let dev = Device::best_available().0;
    let on_gpu = dev.is_cuda();
    let quick = std::env::args().any(|a| a == "--quick");
    let mut ok = true;
    let small = [
        Shape { m: 1, n: 64, k: 64 },
        Shape {
            m: 3,
            n: 100,
            k: 200,
        },
        Shape {
            m: 17,
            n: 130,
            k: 1500,
        },
        Shape {
            m: 70,
            n: 72,
            k: 96,
        },
    ];
    for s in small {
        ok &= check::<f16>(&dev, s)?;
        ok &= check::<bf16>(&dev, s)?;
    }
    if on_gpu {
        for s in [
            Shape {
                m: 16,
                n: 14336,
                k: 4096,
            },
            Shape {
                m: 300,
                n: 1000,
                k: 4096,
            },
            Shape {
                m: 4096,
                n: 14336,
                k: 4096,
            },
        ] {
            ok &= check::<bf16>(&dev, s)?;
            ok &= check::<f16>(&dev, s)?;
        }
    }
    if !on_gpu || quick {
        return Ok(ok);
    }
    let mut rows = Vec::new();
    bench::<bf16>(&dev, &mut rows)?;
    bench::<f16>(&dev, &mut rows)?;
    print_table(
        &[
            "type",
            "m×n×k",
            "fused ms",
            "TFLOP/s",
            "GB/s",
            "unfused ms",
            "speedup",
        ],
        &rows,
    );
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("rmsnorm_linear", run())
}
