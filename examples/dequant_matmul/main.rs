//! `y = x @ dequant(W)ᵀ` with 4-bit weights (group size 128, a scale and a zero point per
//! group): the fused kernel (unpack, dequantize and multiply in one pass over the packed
//! weights) against the unfused form (dequantize `W`, then a GEMM) and a float64 reference.
//! And W8A8 (`w8a8`): activations quantized per token and weights per channel to `i8`, the
//! `i32` product with both scales in its epilogue against the unfused form (the `i32` product,
//! then a scaling pass); and FP8 W8A8, the same with `f8e4m3` operands on the tensor cores' FP8
//! path (`torch._scaled_mm`'s operation), per-tensor or per-row scales.
//!
//! `cargo run --release --example dequant_matmul` — on a GPU: checks awkward shapes, then times
//! both forms for 1 to 4096 tokens on three weight shapes, f16 and bf16 (W8A8: bf16), against
//! the copy bandwidth (the weights' bytes are the traffic that counts). Without a GPU: checks
//! small shapes on the interpreter. `--quick`: checks only.

use std::process::ExitCode;

use tile::prelude::*;
use tile_examples::common::{self, check_close, copy_bandwidth, print_table, time_ms, Half, Rng};
use tile_examples::dequant_matmul::host::{self, Shape, Unfused};
use tile_examples::dequant_matmul::w8a8::{self, Quantized};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Activations of `s` in `[-1, 1)`, rounded to `T`.
fn activations<T: Half>(s: Shape, seed: u64) -> Vec<T> {
    Rng::new(seed)
        .vec(s.m * s.k, -1.0, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect()
}

/// Relative L2 tolerance: the dequantized weights are rounded to `T` before the product, and
/// the result rounded again.
fn tolerance<T: Half>() -> f64 {
    T::TOL
}

fn check<T: Half>(dev: &Device, s: Shape) -> Res<bool> {
    let seed = (s.m * 7 + s.n * 131 + s.k) as u64;
    let xh = activations::<T>(s, seed);
    let wh = host::weights::<T>(s, seed + 1);
    let at = common::sampled_elements(s.m, s.n, seed + 2);
    let want = host::reference(&xh, &wh, s, &at);
    let x = dev.upload(&xh)?;
    let w = host::upload(dev, &wh, s)?;
    let mut part = dev.zeros::<f32>(host::workspace(s).max(1))?;
    let nan = vec![T::from_f32(f32::NAN); s.m * s.n];
    let mut y = dev.upload(&nan)?;
    host::fused(dev, &x, &w, &mut part, &mut y, s)?;
    let got = dev.download(&y)?;
    let pick = |v: &[T]| -> Vec<f32> { at.iter().map(|&(i, j)| v[i * s.n + j].to_f32()).collect() };
    let label = format!("{}×{}×{} {}", s.m, s.n, s.k, T::NAME);
    let mut ok = check_close(
        &format!("{label} fused  "),
        &pick(&got),
        &want,
        tolerance::<T>(),
    );
    let mut buf = Unfused::<T>::new(dev, s)?;
    let mut y = dev.upload(&nan)?;
    host::unfused(dev, &x, &w, &mut buf, &mut y, s)?;
    let got = dev.download(&y)?;
    ok &= check_close(
        &format!("{label} unfused"),
        &pick(&got),
        &want,
        tolerance::<T>(),
    );
    Ok(ok)
}

/// A `k` that is not a multiple of the group size is an `Err`, not a wrong result.
fn check_bad_group(dev: &Device) -> Res<bool> {
    let s = Shape {
        m: 1,
        n: 64,
        k: 200,
    };
    let x = dev.zeros::<f16>(s.m * s.k)?;
    let w = host::DeviceWeights {
        qw: dev.zeros::<u32>(s.n * s.k / 8)?,
        scales: dev.zeros::<f16>(s.n * 2)?,
        zeros: dev.zeros::<f16>(s.n * 2)?,
    };
    let mut part = dev.zeros::<f32>(s.m * s.n)?;
    let mut y = dev.zeros::<f16>(s.m * s.n)?;
    let r = host::fused(dev, &x, &w, &mut part, &mut y, s);
    let ok = matches!(r, Err(Error::Args(_)));
    println!(
        "check k = 200 (group 128): {} -> {}",
        match &r {
            Err(e) => format!("Err({e})"),
            Ok(()) => "Ok".into(),
        },
        if ok { "ok" } else { "FAILED" }
    );
    Ok(ok)
}

/// `rows × k` of `q` and `scale` from a device checked against `x` (see
/// `w8a8::quantization_error`); prints the worst error.
fn check_rows<T: Half, Q: Quantized>(
    label: &str,
    x: &[T],
    q: &[Q],
    scale: &[f32],
    k: usize,
) -> bool {
    let mut worst = 0.0f64;
    for (r, &sc) in scale.iter().enumerate() {
        let row: Vec<f32> = x[r * k..(r + 1) * k].iter().map(|v| v.to_f32()).collect();
        worst = worst.max(w8a8::quantization_error(&row, &q[r * k..(r + 1) * k], sc));
    }
    let ok = worst <= 1.0;
    println!(
        "check {label}: worst error {worst:.3} of the rounding bound -> {}",
        if ok { "ok" } else { "FAILED" }
    );
    ok
}

/// W8A8 on `s`: `x` quantized per token and `W` per output channel (both by `quantize_rows`,
/// `i8`; `x` also to `f8e4m3`), each quantization checked, then both product forms against
/// float64 from the quantized values.
fn check_w8a8<T: Half>(dev: &Device, s: Shape) -> Res<bool> {
    let seed = (s.m * 5 + s.n * 31 + s.k) as u64;
    let xh = activations::<T>(s, seed);
    let wh = activations::<T>(Shape { m: s.n, ..s }, seed + 1);
    let (x, w) = (dev.upload(&xh)?, dev.upload(&wh)?);
    let (mut xq, mut sx) = (dev.zeros::<i8>(s.m * s.k)?, dev.zeros::<f32>(s.m)?);
    let (mut wq, mut sw) = (dev.zeros::<i8>(s.n * s.k)?, dev.zeros::<f32>(s.n)?);
    w8a8::quantize(dev, &x, &mut xq, &mut sx, s.m, s.k)?;
    w8a8::quantize(dev, &w, &mut wq, &mut sw, s.n, s.k)?;
    let mut x8 = dev.zeros::<f8e4m3>(s.m * s.k)?;
    let mut s8 = dev.zeros::<f32>(s.m)?;
    w8a8::quantize(dev, &x, &mut x8, &mut s8, s.m, s.k)?;
    let label = format!("w8a8 {}×{}×{} {}", s.m, s.n, s.k, T::NAME);
    let (xqh, sxh) = (dev.download(&xq)?, dev.download(&sx)?);
    let (wqh, swh) = (dev.download(&wq)?, dev.download(&sw)?);
    let mut ok = check_rows(&format!("{label} x as i8"), &xh, &xqh, &sxh, s.k);
    ok &= check_rows(&format!("{label} W as i8"), &wh, &wqh, &swh, s.k);
    ok &= check_rows(
        &format!("{label} x as f8e4m3"),
        &xh,
        &dev.download(&x8)?,
        &dev.download(&s8)?,
        s.k,
    );
    let at = common::sampled_elements(s.m, s.n, seed + 2);
    let want: Vec<f64> = at
        .iter()
        .map(|&(i, j)| {
            let dot: i64 = (0..s.k)
                .map(|p| i64::from(xqh[i * s.k + p]) * i64::from(wqh[j * s.k + p]))
                .sum();
            dot as f64 * f64::from(sxh[i]) * f64::from(swh[j])
        })
        .collect();
    let nan = vec![T::from_f32(f32::NAN); s.m * s.n];
    let pick = |v: &[T]| -> Vec<f32> { at.iter().map(|&(i, j)| v[i * s.n + j].to_f32()).collect() };
    let mut c = dev.zeros::<i32>(s.m * s.n)?;
    // Twice: the split form must leave its workspace zero for the next call.
    for _ in 0..2 {
        let mut y = dev.upload(&nan)?;
        w8a8::fused(dev, &xq, &sx, &wq, &sw, &mut c, &mut y, s)?;
        let label = format!("{label} fused (split {})", w8a8::split(s));
        ok &= check_close(&label, &pick(&dev.download(&y)?), &want, T::TOL);
    }
    let mut y = dev.upload(&nan)?;
    w8a8::unfused(dev, &xq, &sx, &wq, &sw, &mut c, &mut y, s)?;
    ok &= check_close(
        &format!("{label} unfused"),
        &pick(&dev.download(&y)?),
        &want,
        T::TOL,
    );
    Ok(ok)
}

/// FP8 W8A8 on `s`: `x` and `W` quantized per row to `f8e4m3` (`quantize_rows`), then
/// `w8a8::fp8_fused` with per-row and per-tensor scales (the per-tensor scales: each vector's
/// first value) and `w8a8::fp8_unfused`, against float64 from the quantized values.
fn check_fp8<T: Half>(dev: &Device, s: Shape) -> Res<bool> {
    let seed = (s.m * 3 + s.n * 37 + s.k) as u64;
    let xh = activations::<T>(s, seed);
    let wh = activations::<T>(Shape { m: s.n, ..s }, seed + 1);
    let (x, w) = (dev.upload(&xh)?, dev.upload(&wh)?);
    let (mut xq, mut sx) = (dev.zeros::<f8e4m3>(s.m * s.k)?, dev.zeros::<f32>(s.m)?);
    let (mut wq, mut sw) = (dev.zeros::<f8e4m3>(s.n * s.k)?, dev.zeros::<f32>(s.n)?);
    w8a8::quantize(dev, &x, &mut xq, &mut sx, s.m, s.k)?;
    w8a8::quantize(dev, &w, &mut wq, &mut sw, s.n, s.k)?;
    let (xqh, sxh) = (dev.download(&xq)?, dev.download(&sx)?);
    let (wqh, swh) = (dev.download(&wq)?, dev.download(&sw)?);
    let label = format!("fp8 {}×{}×{} {}", s.m, s.n, s.k, T::NAME);
    let mut ok = check_rows(&format!("{label} W as f8e4m3"), &wh, &wqh, &swh, s.k);
    let at = common::sampled_elements(s.m, s.n, seed + 2);
    let dots: Vec<f64> = at
        .iter()
        .map(|&(i, j)| {
            (0..s.k)
                .map(|p| {
                    f64::from(xqh[i * s.k + p].to_f32()) * f64::from(wqh[j * s.k + p].to_f32())
                })
                .sum()
        })
        .collect();
    let nan = vec![T::from_f32(f32::NAN); s.m * s.n];
    let pick = |v: &[T]| -> Vec<f32> { at.iter().map(|&(i, j)| v[i * s.n + j].to_f32()).collect() };
    for scaling in w8a8::Scaling::ALL {
        let want: Vec<f64> = at
            .iter()
            .zip(&dots)
            .map(|(&(i, j), d)| match scaling {
                w8a8::Scaling::Row => d * f64::from(sxh[i]) * f64::from(swh[j]),
                w8a8::Scaling::Tensor => d * f64::from(sxh[0]) * f64::from(swh[0]),
            })
            .collect();
        let mut y = dev.upload(&nan)?;
        w8a8::fp8_fused(dev, &xq, &sx, &wq, &sw, &mut y, s, scaling)?;
        let what = format!("{label} fused, per {} scales", scaling.name());
        ok &= check_close(&what, &pick(&dev.download(&y)?), &want, T::TOL);
        if scaling == w8a8::Scaling::Row {
            let mut c = dev.zeros::<f32>(s.m * s.n)?;
            let mut y = dev.upload(&nan)?;
            w8a8::fp8_unfused(dev, &xq, &sx, &wq, &sw, &mut c, &mut y, s)?;
            let what = format!("{label} unfused, per row scales");
            ok &= check_close(&what, &pick(&dev.download(&y)?), &want, T::TOL);
        }
    }
    Ok(ok)
}

/// FP8 W8A8 timings on square and Llama-style shapes: the fused product with per-tensor and
/// per-row scales, and the unfused one (`f32` product, then the scaling pass), in TFLOP/s.
fn bench_fp8<T: Half>(dev: &Device, rows: &mut Vec<Vec<String>>) -> Res<()> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    for (m, n, k) in FP8_SHAPES {
        let s = Shape { m, n, k };
        let mut g = Rng::new(9);
        let bytes = |g: &mut Rng, len: usize| -> Vec<f8e4m3> {
            g.vec(len, -1.0, 1.0)
                .into_iter()
                .map(|v| f8e4m3::from_f32(v * 448.0))
                .collect()
        };
        let xq = dev.upload(&bytes(&mut g, m * k))?;
        let wq = dev.upload(&bytes(&mut g, n * k))?;
        let sx = dev.upload(&g.vec(m, 1e-3, 2e-3))?;
        let sw = dev.upload(&g.vec(n, 1e-3, 2e-3))?;
        let mut y = dev.zeros::<T>(m * n)?;
        let mut c = dev.zeros::<f32>(m * n)?;
        let mut times = Vec::new();
        for scaling in w8a8::Scaling::ALL {
            times.push(time_ms(&stream, 3, 20, || {
                w8a8::fp8_fused(dev, &xq, &sx, &wq, &sw, &mut y, s, scaling)
            })?);
        }
        let unfused = time_ms(&stream, 3, 20, || {
            w8a8::fp8_unfused(dev, &xq, &sx, &wq, &sw, &mut c, &mut y, s)
        })?;
        let tflops = |ms: f64| 2.0 * (m * n * k) as f64 / (ms * 1e-3) / 1e12;
        rows.push(vec![
            T::NAME.into(),
            format!("{m}×{n}×{k}"),
            format!("{:.4}", times[0]),
            format!("{:.0}", tflops(times[0])),
            format!("{:.4}", times[1]),
            format!("{:.0}", tflops(times[1])),
            format!("{unfused:.4}"),
            format!("{:.2}x", unfused / times[1]),
        ]);
        println!(
            "bench fp8 {}",
            rows.last().map(|r| r.join(" | ")).unwrap_or_default()
        );
    }
    Ok(())
}

/// `(m, n, k)` the FP8 timings cover: square products and Llama-style projections at 4096
/// tokens.
const FP8_SHAPES: [(usize, usize, usize); 4] = [
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 14336, 4096),
    (4096, 4096, 14336),
];

/// W8A8 timings: the per-token quantization of `x`, the fused product (scales in the
/// epilogue) and the unfused one (`i32` product, then the scaling pass).
fn bench_w8a8<T: Half>(dev: &Device, copy: f64, rows: &mut Vec<Vec<String>>) -> Res<()> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    for (n, k) in WEIGHTS {
        let wq = dev.upload(&vec![1i8; n * k])?;
        let sw = dev.upload(&vec![1e-3f32; n])?;
        for m in TOKENS {
            let s = Shape { m, n, k };
            let x = dev.upload(&activations::<T>(s, 4))?;
            let (mut xq, mut sx) = (dev.zeros::<i8>(m * k)?, dev.zeros::<f32>(m)?);
            let quant = time_ms(&stream, 3, 20, || {
                w8a8::quantize(dev, &x, &mut xq, &mut sx, m, k)
            })?;
            let mut y = dev.zeros::<T>(m * n)?;
            let mut c = dev.zeros::<i32>(m * n)?;
            let fused = time_ms(&stream, 3, 20, || {
                w8a8::fused(dev, &xq, &sx, &wq, &sw, &mut c, &mut y, s)
            })?;
            let unfused = time_ms(&stream, 3, 20, || {
                w8a8::unfused(dev, &xq, &sx, &wq, &sw, &mut c, &mut y, s)
            })?;
            let gbs = (n * k) as f64 / (fused * 1e-3) / 1e9;
            let tops = 2.0 * (m * n * k) as f64 / (fused * 1e-3) / 1e12;
            rows.push(vec![
                T::NAME.into(),
                format!("{m}×{n}×{k}"),
                format!("{}", w8a8::split(s)),
                format!("{quant:.4}"),
                format!("{fused:.4}"),
                format!("{gbs:.0}"),
                format!("{:.1}%", 100.0 * gbs / copy),
                format!("{tops:.1}"),
                format!("{unfused:.4}"),
                format!("{:.2}x", unfused / fused),
            ]);
            println!(
                "bench w8a8 {}",
                rows.last().map(|r| r.join(" | ")).unwrap_or_default()
            );
        }
    }
    Ok(())
}

/// `(m, n, k)` the timed runs cover: 1 to 4096 tokens on Llama-style projections.
const TOKENS: [usize; 5] = [1, 16, 64, 256, 4096];
const WEIGHTS: [(usize, usize); 3] = [(4096, 4096), (14336, 4096), (28672, 8192)];

fn bench<T: Half>(dev: &Device, copy: f64, rows: &mut Vec<Vec<String>>) -> Res<()> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    for (n, k) in WEIGHTS {
        let wh = host::weights::<T>(Shape { m: 1, n, k }, 3);
        let w = host::upload(dev, &wh, Shape { m: 1, n, k })?;
        for m in TOKENS {
            let s = Shape { m, n, k };
            let x = dev.upload(&activations::<T>(s, 4))?;
            let mut y = dev.zeros::<T>(m * n)?;
            let mut part = dev.zeros::<f32>(host::workspace(s).max(1))?;
            let fused = time_ms(&stream, 3, 20, || {
                host::fused(dev, &x, &w, &mut part, &mut y, s)
            })?;
            let mut buf = Unfused::<T>::new(dev, s)?;
            let unfused = time_ms(&stream, 3, 20, || {
                host::unfused(dev, &x, &w, &mut buf, &mut y, s)
            })?;
            let bytes = s.weight_bytes(std::mem::size_of::<T>());
            let gbs = bytes as f64 / (fused * 1e-3) / 1e9;
            let tflops = 2.0 * (m * n * k) as f64 / (fused * 1e-3) / 1e12;
            let (bm, split, _) = host::plan(s);
            rows.push(vec![
                T::NAME.into(),
                format!("{m}×{n}×{k}"),
                if bm == 0 {
                    format!("FMA/{split}")
                } else {
                    format!("{bm}/{split}")
                },
                format!("{fused:.4}"),
                format!("{gbs:.0}"),
                format!("{:.1}%", 100.0 * gbs / copy),
                format!("{tflops:.1}"),
                format!("{unfused:.4}"),
                format!("{:.2}x", unfused / fused),
            ]);
            println!(
                "bench {}",
                rows.last().map(|r| r.join(" | ")).unwrap_or_default()
            );
        }
    }
    Ok(())
}

fn run() -> Res<bool> {
    let dev = Device::best_available().0;
    let on_gpu = dev.is_cuda();
    let quick = std::env::args().any(|a| a == "--quick");
    let mut ok = check_bad_group(&dev)?;
    let small = [
        Shape {
            m: 1,
            n: 64,
            k: 128,
        },
        Shape {
            m: 3,
            n: 100,
            k: 256,
        },
        Shape {
            m: 17,
            n: 130,
            k: 384,
        },
        Shape {
            m: 65,
            n: 72,
            k: 128,
        },
    ];
    for s in small {
        ok &= check::<f16>(&dev, s)?;
        ok &= check::<bf16>(&dev, s)?;
        ok &= check_w8a8::<f16>(&dev, s)?;
        ok &= check_fp8::<bf16>(&dev, s)?;
    }
    ok &= check_w8a8::<bf16>(&dev, small[2])?;
    ok &= check_fp8::<f16>(&dev, small[2])?;
    if on_gpu {
        for s in [
            Shape {
                m: 1,
                n: 4096,
                k: 4096,
            },
            Shape {
                m: 16,
                n: 14336,
                k: 4096,
            },
            Shape {
                m: 64,
                n: 4096,
                k: 4096,
            },
            Shape {
                m: 300,
                n: 1000,
                k: 1024,
            },
        ] {
            ok &= check::<f16>(&dev, s)?;
            ok &= check::<bf16>(&dev, s)?;
            ok &= check_w8a8::<bf16>(&dev, s)?;
            ok &= check_fp8::<bf16>(&dev, s)?;
        }
        ok &= check_fp8::<bf16>(
            &dev,
            Shape {
                m: 1000,
                n: 2000,
                k: 4096,
            },
        )?;
    }
    if !on_gpu || quick {
        return Ok(ok);
    }
    let stream = dev.stream().ok_or("no stream")?.clone();
    let copy = copy_bandwidth(&stream, 1 << 30)?;
    println!("copy bandwidth: {copy:.0} GB/s");
    let mut rows = Vec::new();
    bench::<f16>(&dev, copy, &mut rows)?;
    bench::<bf16>(&dev, copy, &mut rows)?;
    let mut w8 = Vec::new();
    bench_w8a8::<bf16>(&dev, copy, &mut w8)?;
    let mut f8 = Vec::new();
    bench_fp8::<bf16>(&dev, &mut f8)?;
    print_table(
        &[
            "type",
            "m×n×k",
            "BM/split",
            "fused ms",
            "weight GB/s",
            "% of copy",
            "TFLOP/s",
            "unfused ms",
            "speedup",
        ],
        &rows,
    );
    println!("W8A8 (i8 activations per token, i8 weights per channel; ms):");
    print_table(
        &[
            "out",
            "m×n×k",
            "split",
            "quantize x",
            "fused",
            "weight GB/s",
            "% of copy",
            "TOP/s",
            "unfused",
            "speedup",
        ],
        &w8,
    );
    println!("FP8 W8A8 (f8e4m3 x and W, f32 accumulation, bf16 y; ms and TFLOP/s):");
    print_table(
        &[
            "out",
            "m×n×k",
            "per tensor",
            "TFLOP/s",
            "per row",
            "TFLOP/s",
            "unfused",
            "speedup",
        ],
        &f8,
    );
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("dequant_matmul", run())
}
