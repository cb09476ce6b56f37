//! The backward pass of softmax regression (`dlogits = P ∘ (dP − rowsum(dP ∘ P))`, `dx =
//! dlogits · Wᵀ`, `dW = xᵀ · dlogits`), single- and multi-head: the fused form (the softmax's
//! gradient written once in the input type, then two products that read `W` and `x` transposed)
//! against the unfused form (the f32 gradient, rounded by a second kernel, as autograd runs it)
//! and a float64 reference.
//!
//! `cargo run --release --example softmax_regression_backward` — on a GPU: awkward shapes
//! against the full reference, then the document's sizes (batch × dim × classes: 64×128×10,
//! 256×512×50, 1024×1024×100) and 8192×4096×1000 with 1 and 8 heads, timed; PyTorch's autograd
//! comes from `bench/python/baseline.py --filter softmax_regression_backward`. Without a GPU: the
//! awkward shapes on the interpreter. `--quick`: checks only.

use std::process::ExitCode;

use tile::prelude::*;
use tile_examples::common::{self, check_close, print_table, time_ms, Half};
use tile_examples::softmax_regression::backward::{self, Shape, Tensors};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Checks both forms of `s` against the full reference.
fn check<T: Half>(dev: &Device, s: Shape) -> Res<bool> {
    let pr = backward::problem::<T>(s, (s.b * 7 + s.d * 31 + s.c * 3 + s.h) as u64);
    let (dx, dw) = backward::reference(&pr, s);
    let mut ok = true;
    for fused in [true, false] {
        let mut t = Tensors::upload(dev, &pr, s)?;
        if fused {
            backward::fused(dev, &mut t, s)?;
        } else {
            backward::unfused(dev, &mut t, s)?;
        }
        let form = if fused { "fused  " } else { "unfused" };
        let label = format!("{}×{}×{} h {} {} {form}", s.b, s.d, s.c, s.h, T::NAME);
        let got = |b: &Buffer<T>| -> Res<Vec<f32>> {
            Ok(dev.download(b)?.iter().map(|v| v.to_f32()).collect())
        };
        ok &= check_close(&format!("{label} dx"), &got(&t.dx)?, &dx, T::TOL);
        ok &= check_close(&format!("{label} dW"), &got(&t.dw)?, &dw, T::TOL);
    }
    Ok(ok)
}

fn bench<T: Half>(dev: &Device, s: Shape, rows: &mut Vec<Vec<String>>) -> Res<()> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let pr = backward::problem::<T>(s, 9);
    let mut t = Tensors::upload(dev, &pr, s)?;
    let fused = time_ms(&stream, 3, 20, || backward::fused(dev, &mut t, s))?;
    let unfused = time_ms(&stream, 3, 20, || backward::unfused(dev, &mut t, s))?;
    rows.push(vec![
        T::NAME.into(),
        format!("{}×{}×{}", s.b, s.d, s.c),
        s.h.to_string(),
        format!("{fused:.4}"),
        format!("{:.0}", s.flops() / (fused * 1e-3) / 1e12),
        format!("{unfused:.4}"),
        format!("{:.2}x", unfused / fused),
    ]);
    println!(
        "bench {}",
        rows.last().map(|r| r.join(" | ")).unwrap_or_default()
    );
    Ok(())
}

fn run() -> Res<bool> {
    let dev = Device::best_available().0;
    let on_gpu = dev.is_cuda();
    let quick = std::env::args().any(|a| a == "--quick");
    let mut ok = true;
    for s in backward::CHECK_SHAPES {
        ok &= check::<f16>(&dev, s)?;
        ok &= check::<bf16>(&dev, s)?;
    }
    if on_gpu {
        ok &= check::<bf16>(
            &dev,
            Shape {
                b: 300,
                d: 512,
                c: 1000,
                h: 2,
            },
        )?;
    }
    if !on_gpu || quick {
        return Ok(ok);
    }
    let mut rows = Vec::new();
    for (b, d, c, h) in [
        (64, 128, 10, 1),
        (256, 512, 50, 1),
        (1024, 1024, 100, 1),
        (8192, 4096, 1000, 1),
        (8192, 4096, 1000, 8),
    ] {
        let s = Shape { b, d, c, h };
        bench::<bf16>(&dev, s, &mut rows)?;
        bench::<f16>(&dev, s, &mut rows)?;
    }
    print_table(
        &[
            "type",
            "b×d×c",
            "heads",
            "fused ms",
            "TFLOP/s",
            "unfused ms",
            "speedup",
        ],
        &rows,
    );
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("softmax_regression_backward", run())
}
