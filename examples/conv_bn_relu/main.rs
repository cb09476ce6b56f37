//! Conv-BN-ReLU (inference): the fused kernel (an implicit-GEMM convolution with BatchNorm folded
//! into its filter and bias and the ReLU in its epilogue) against the unfused graph (convolution,
//! BatchNorm, ReLU: three kernels) and a float64 reference of the trained layer.
//!
//! `cargo run --release --example conv_bn_relu` — on a GPU: checks awkward layers, then times
//! both forms on ResNet-50's layers at 32, 128 and 256 images, f16 and bf16. Without a GPU:
//! checks small layers on the interpreter. `--quick`: checks only. `--layer I`: no checks, and
//! times only `LAYERS[I]` (for a profiler).

use std::process::ExitCode;

use tile::prelude::*;
use tile_examples::common::{self, check_close, copy_bandwidth, print_table, time_ms, Half, Rng};
use tile_examples::conv_bn_relu::host::{self, Shape};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// `len` activations in `[-1, 1)`, rounded to `T`.
fn activations<T: Half>(len: usize, seed: u64) -> Vec<T> {
    Rng::new(seed)
        .vec(len, -1.0, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect()
}

/// Both forms against the float64 reference at sampled outputs (all of a small layer).
fn check<T: Half>(dev: &Device, s: Shape) -> Res<bool> {
    let seed = (s.cin * 31 + s.cout * 7 + s.h) as u64;
    let xh = activations::<T>(s.x_len(), seed);
    let l = host::layer(s, seed + 1);
    let at = common::sampled_elements(s.m(), s.cout, seed + 2);
    let want = host::reference(&xh, &l, s, &at);
    let x = dev.upload(&xh)?;
    let dl = host::upload::<T>(dev, &l, s)?;
    let nan = vec![T::from_f32(f32::NAN); s.y_len()];
    let mut ws = dev.zeros::<f32>(host::workspace_len(s))?;
    let mut ok = true;
    for fused in [true, false] {
        let mut y = dev.upload(&nan)?;
        if fused {
            host::fused(dev, &x, &dl, &mut y, &mut ws, s)?;
        } else {
            host::unfused(dev, &x, &dl, &mut y, &mut ws, s)?;
        }
        let got = dev.download(&y)?;
        let picked: Vec<f32> = at
            .iter()
            .map(|&(i, j)| got[i * s.cout + j].to_f32())
            .collect();
        let form = if fused { "fused  " } else { "unfused" };
        ok &= check_close(
            &format!("{} {} {form}", s.label(), T::NAME),
            &picked,
            &want,
            T::TOL,
        );
    }
    Ok(ok)
}

/// ResNet-50's convolution layers that the timed runs cover, at one image: 56² 64→64 3×3,
/// 56² 256→64 1×1, 28² 128→128 3×3, 56² 128→128 3×3 stride 2, 14² 256→256 3×3, 7² 512→512 3×3.
pub const LAYERS: [Shape; 6] = [
    Shape::square(1, 56, 64, 64, 3, 1),
    Shape::square(1, 56, 256, 64, 1, 1),
    Shape::square(1, 28, 128, 128, 3, 1),
    Shape::square(1, 56, 128, 128, 3, 2),
    Shape::square(1, 14, 256, 256, 3, 1),
    Shape::square(1, 7, 512, 512, 3, 1),
];

/// Images per timed run.
const BATCHES: [usize; 3] = [32, 128, 256];

fn bench<T: Half>(
    dev: &Device,
    copy: f64,
    only: Option<usize>,
    rows: &mut Vec<Vec<String>>,
) -> Res<()> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let most = BATCHES[BATCHES.len() - 1];
    for (i, &layer) in LAYERS.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        // The largest batch's input once; the smaller batches are its first images (NHWC).
        let xh = activations::<T>(Shape { n: most, ..layer }.x_len(), 5);
        let x = dev.upload(&xh)?;
        let l = host::layer(layer, 6);
        let dl = host::upload::<T>(dev, &l, layer)?;
        for n in BATCHES {
            let s = Shape { n, ..layer };
            let mut y = dev.zeros::<T>(s.y_len())?;
            let mut ws = dev.zeros::<f32>(host::workspace_len(s))?;
            let fused = time_ms(&stream, 3, 20, || {
                host::fused(dev, &x, &dl, &mut y, &mut ws, s)
            })?;
            let unfused = time_ms(&stream, 3, 20, || {
                host::unfused(dev, &x, &dl, &mut y, &mut ws, s)
            })?;
            let bytes = ((s.x_len() + s.y_len() + s.w_len()) * std::mem::size_of::<T>()) as f64;
            let gbs = bytes / (fused * 1e-3) / 1e9;
            rows.push(vec![
                T::NAME.into(),
                s.label(),
                host::chosen_tile::<T>(s).unwrap_or("?").into(),
                format!("{fused:.4}"),
                format!("{:.1}", s.flops() / (fused * 1e-3) / 1e12),
                format!("{gbs:.0}"),
                format!("{:.1}%", 100.0 * gbs / copy),
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
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--layer I`: time only LAYERS[I], after no checks (for profilers).
    let only = match args.iter().position(|a| a == "--layer") {
        Some(i) => Some(
            args.get(i + 1)
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|&v| v < LAYERS.len())
                .ok_or("--layer takes an index into the layer list, 0 to 5")?,
        ),
        None => None,
    };
    let mut ok = true;
    let small = [
        Shape::square(2, 7, 17, 10, 3, 1),
        Shape::square(1, 9, 64, 100, 1, 1),
        Shape::square(1, 11, 3, 64, 3, 2),
        Shape {
            n: 1,
            h: 6,
            w: 13,
            cin: 70,
            cout: 65,
            fh: 5,
            fw: 3,
            stride: 1,
            pad: 2,
        },
        Shape::square(3, 5, 128, 130, 3, 2),
    ];
    for s in small.into_iter().filter(|_| only.is_none()) {
        ok &= check::<f16>(&dev, s)?;
        ok &= check::<bf16>(&dev, s)?;
    }
    if on_gpu && only.is_none() {
        for s in LAYERS {
            let s = Shape { n: 3, ..s };
            ok &= check::<f16>(&dev, s)?;
            ok &= check::<bf16>(&dev, s)?;
        }
        ok &= check::<f16>(&dev, Shape::square(5, 33, 96, 200, 3, 2))?;
    }
    if !on_gpu || quick {
        return Ok(ok);
    }
    let stream = dev.stream().ok_or("no stream")?.clone();
    let copy = copy_bandwidth(&stream, 1 << 30)?;
    println!("copy bandwidth: {copy:.0} GB/s");
    let mut rows = Vec::new();
    bench::<f16>(&dev, copy, only, &mut rows)?;
    bench::<bf16>(&dev, copy, only, &mut rows)?;
    for d in host::TUNER.decisions() {
        let times: Vec<String> = d
            .times
            .iter()
            .enumerate()
            .map(|(i, t)| match t {
                tile::autotune::Timing::Ms(ms) => format!("{i}: {ms:.4}"),
                tile::autotune::Timing::NotTimed => format!("{i}: -"),
                tile::autotune::Timing::Failed(e) => format!("{i}: failed ({e})"),
            })
            .collect();
        println!("tuned {:?} -> {} [{}]", d.key, d.label, times.join(", "));
    }
    print_table(
        &[
            "type",
            "layer",
            "tile",
            "fused ms",
            "TFLOP/s",
            "GB/s",
            "% of copy",
            "unfused ms",
            "speedup",
        ],
        &rows,
    );
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("conv_bn_relu", run())
}
