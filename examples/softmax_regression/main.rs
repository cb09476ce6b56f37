//! Softmax regression on tensor cores, `probs = softmax(x @ w)` (f16 or bf16 `x` and `w`, f32
//! logits and softmax, f32 `probs`): the fused kernel (kernels.rs, its tile autotuned at each
//! shape's first call) against the unfused form (the
//! `gemm` example's kernel writing f32 logits, then the `fused_softmax` example's row softmax
//! reading them back) and an f64 reference.
//!
//! `cargo run --release --example softmax_regression` — on a GPU: awkward shapes (batch, dim or
//! classes of 1, 17, 1000, non-multiples of the 128-class tile, several class tiles) against the
//! full reference; then the document's sizes (batch × dim × classes: 64×128×10, 256×512×50,
//! 1024×1024×100) and 8192×4096×1000, 4096×4096×32000 against the reference on sampled rows,
//! timed (median of CUDA events after warm-up): fused, unfused, and the unfused form's GEMM alone;
//! the launch-bound sizes also as CUDA-graph replays. cuBLAS + torch.softmax and Triton (tutorial
//! matmul + tutorial softmax, and fused kernels) come from `bench/python/baseline.py --filter
//! softmax_regression`. Without a GPU: the awkward shapes on the interpreter. `--quick`: the
//! awkward shapes only (for compute-sanitizer). `--shape BxDxC` times that shape instead of the
//! list; `--tiles` adds every tile of the fused kernel and each one's second launch alone.
//!
//! Tolerance: relative L2 error of the probabilities against the softmax of the f64 logits, 1e-3
//! (f32 accumulation of exact products in the tensor cores' order, `ex2.approx`).

use std::process::ExitCode;
use tile_examples::{common, softmax_regression::kernels};

use common::{check_close, check_forms, graph_time_ms, print_table, time_ms, Half, Rng};
use half::{bf16, f16};
use kernels::{fused, fused_with, logits_gemm, rescale_with, unfused, Tile, Workspace};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// `batch × dim × classes`.
type Shape = (usize, usize, usize);

/// Relative L2 error allowed against the f64 softmax.
const TOL: f64 = 1e-3;

/// The device buffers of one shape.
struct Bufs<T: Half> {
    x: Buffer<T>,
    w: Buffer<T>,
    probs: Buffer<f32>,
    ws: Workspace<T>,
    logits: Buffer<f32>,
    probs2: Buffer<f32>,
}

impl<T: Half> Bufs<T> {
    fn new(dev: &Device, x: &[T], w: &[T], s: Shape) -> Res<Bufs<T>> {
        let (b, _, c) = s;
        let nan = vec![f32::NAN; b * c];
        Ok(Bufs {
            x: dev.upload(x)?,
            w: dev.upload(w)?,
            probs: dev.upload(&nan)?,
            ws: Workspace::new(dev, s)?,
            logits: dev.upload(&nan)?,
            probs2: dev.upload(&nan)?,
        })
    }

    fn fused(&mut self, dev: &Device, s: Shape) -> Result<(), tile::Error> {
        fused(dev, &self.x, &self.w, &mut self.probs, &mut self.ws, s)
    }

    /// [`fused`] with a given tile.
    fn fused_with(&mut self, dev: &Device, s: Shape, t: Tile) -> Result<(), tile::Error> {
        fused_with(dev, &self.x, &self.w, &mut self.probs, &mut self.ws, s, t)
    }

    /// The GEMM alone: f32 logits.
    fn gemm(&mut self, dev: &Device, s: Shape) -> Result<(), tile::Error> {
        logits_gemm(dev, &self.x, &self.w, &mut self.logits, s)
    }

    /// Unfused: f32 logits, then the row softmax.
    fn unfused(&mut self, dev: &Device, s: Shape) -> Result<(), tile::Error> {
        unfused(dev, &self.x, &self.w, &mut self.logits, &mut self.probs2, s)
    }
}

/// Inputs of one shape and what the checks compare against.
struct Case<T: Half> {
    s: Shape,
    x: Vec<T>,
    w: Vec<T>,
    rows: Vec<usize>,
    /// The f64 softmax of the sampled rows, row after row.
    want: Vec<f64>,
}

impl<T: Half> Case<T> {
    /// Random `x` in [-1, 1) and `w` in [-0.5, 0.5) rounded to `T` (seeded by the shape), as
    /// `softmax_regression_simple` and `bench/python/baseline.py`.
    fn new(s: Shape) -> Case<T> {
        let (b, d, c) = s;
        let mut r = Rng::new((b * 131 + d * 7 + c) as u64);
        let x: Vec<T> = r
            .vec(b * d, -1.0, 1.0)
            .into_iter()
            .map(T::from_f32)
            .collect();
        let w: Vec<T> = r
            .vec(d * c, -0.5, 0.5)
            .into_iter()
            .map(T::from_f32)
            .collect();
        let rows = common::sampled_rows(s.0, s.2);
        let want = common::softmax_rows_ref(&x, &w, s, &rows);
        Case {
            s,
            x,
            w,
            rows,
            want,
        }
    }

    fn name(&self) -> String {
        format!("{}x{}x{} {}", self.s.0, self.s.1, self.s.2, T::NAME)
    }

    /// The sampled rows of `probs`.
    fn pick(&self, probs: &[f32]) -> Vec<f32> {
        let c = self.s.2;
        self.rows
            .iter()
            .flat_map(|&i| probs[i * c..(i + 1) * c].iter().copied())
            .collect()
    }

    /// Both forms on fresh buffers, checked.
    fn check(&self, dev: &Device) -> Res<(bool, Bufs<T>)> {
        let mut k = Bufs::new(dev, &self.x, &self.w, self.s)?;
        k.fused(dev, self.s)?;
        k.unfused(dev, self.s)?;
        let (f, u) = (dev.download(&k.probs)?, dev.download(&k.probs2)?);
        let ok = check_forms(
            &self.name(),
            &self.pick(&f),
            &self.pick(&u),
            &self.want,
            TOL,
        );
        Ok((ok, k))
    }
}

/// The checks of `s` for `T`, and when `timed`, its table rows.
fn run_shape<T: Half>(
    dev: &Device,
    s: Shape,
    timed: bool,
    every_tile: bool,
    rows: &mut Vec<Vec<String>>,
) -> Res<bool> {
    let case = Case::<T>::new(s);
    let (mut ok, mut k) = case.check(dev)?;
    if !timed {
        return Ok(ok);
    }
    let stream = dev.stream().ok_or("no stream")?.clone();
    let tf = time_ms(&stream, 5, 20, || k.fused(dev, s))?;
    let tu = time_ms(&stream, 5, 20, || k.unfused(dev, s))?;
    let tg = time_ms(&stream, 5, 20, || k.gemm(dev, s))?;
    let mut times = vec![
        ("tile fused".to_string(), tf),
        ("tile unfused (gemm, softmax)".to_string(), tu),
        ("tile gemm alone (f32 logits)".to_string(), tg),
    ];
    if every_tile {
        // Each tile the launcher could take, and its second launch alone (on the statistics
        // the fused run left behind), to see what each step costs; tiles that would need more
        // class tiles per row than `rescale` combines are left out.
        for t in Tile::ALL.into_iter().filter(|t| t.runs(s.2)) {
            let (bm, bn) = t.block();
            let ms = time_ms(&stream, 5, 20, || k.fused_with(dev, s, t))?;
            times.push((format!("tile fused, {bm} x {bn} tile"), ms));
            if s.2 > bn {
                for bc in [1024, 4096] {
                    let ms = time_ms(&stream, 5, 20, || {
                        rescale_with(dev, &mut k.probs, &k.ws.stats, (s.0, s.2), t, bc)
                    })?;
                    times.push((format!("  its rescale alone, {bc}-wide programs"), ms));
                }
            }
        }
    }
    if common::wants_graph(tf) {
        for unfused in [false, true] {
            let (ms, good) = graph_time_ms(
                dev,
                |g| Bufs::new(g, &case.x, &case.w, s),
                |g, b| {
                    if unfused {
                        b.unfused(g, s)
                    } else {
                        b.fused(g, s)
                    }
                },
                |g, b| {
                    let got = g.download(if unfused { &b.probs2 } else { &b.probs })?;
                    let what = format!(
                        "{} {}, CUDA graph",
                        case.name(),
                        common::graph_form(unfused)
                    );
                    Ok(check_close(&what, &case.pick(&got), &case.want, TOL))
                },
            )?;
            ok &= good;
            let name = if unfused {
                "tile unfused, CUDA graph"
            } else {
                "tile fused, CUDA graph"
            };
            times.push((name.to_string(), ms));
        }
    }
    let flop = 2.0 * s.0 as f64 * s.1 as f64 * s.2 as f64;
    for (name, ms) in times {
        rows.push(vec![
            format!("{}x{}x{}", s.0, s.1, s.2),
            T::NAME.into(),
            name,
            format!("{ms:.4}"),
            format!("{:.1}", flop / (ms * 1e-3) / 1e12),
            format!("{:.2}x", tu / ms),
        ]);
    }
    Ok(ok)
}

/// The value of `--shape BxDxC`, if given.
fn shape_arg() -> Res<Option<Shape>> {
    let args: Vec<String> = std::env::args().collect();
    let Some(i) = args.iter().position(|a| a == "--shape") else {
        return Ok(None);
    };
    let v = args.get(i + 1).ok_or("--shape needs BATCHxDIMxCLASSES")?;
    let n: Vec<usize> = v
        .split('x')
        .map(|d| d.parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--shape {v}: {e}"))?;
    match n[..] {
        [b, d, c] if b > 0 && d > 0 && c > 0 => Ok(Some((b, d, c))),
        _ => Err(format!("--shape {v}: want three positive sizes, BATCHxDIMxCLASSES").into()),
    }
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    // `--shape BxDxC`: time that shape instead of the list below; `--tiles`: also time every
    // tile of the fused kernel and each one's rescale launch alone.
    let only = shape_arg()?;
    let every_tile = std::env::args().any(|a| a == "--tiles");
    let (dev, no_gpu) = Device::best_available();
    let awkward: [Shape; 6] = [
        (1, 1, 1),
        (17, 33, 10),
        (5, 100, 17),
        (33, 64, 300),
        (130, 40, 129),
        (3, 17, 1000),
    ];
    let sizes: [Shape; 5] = [
        (64, 128, 10),
        (256, 512, 50),
        (1024, 1024, 100),
        (8192, 4096, 1000),
        (4096, 4096, 32000),
    ];
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (checks only).");
        }
        None => println!("Running on {}", dev.name()),
    }
    let mut ok = true;
    let mut rows = Vec::new();
    for &s in &awkward {
        ok &= run_shape::<f16>(&dev, s, false, false, &mut rows)?;
        ok &= run_shape::<bf16>(&dev, s, false, false, &mut rows)?;
    }
    if no_gpu.is_some() || quick {
        return Ok(ok);
    }
    let sizes: Vec<Shape> = only.map_or(sizes.to_vec(), |s| vec![s]);
    for &s in &sizes {
        ok &= run_shape::<f16>(&dev, s, true, every_tile, &mut rows)?;
        ok &= run_shape::<bf16>(&dev, s, true, every_tile, &mut rows)?;
    }
    println!("\nsoftmax_regression (tile), f32 probabilities, median of 20 after 5 warm-ups");
    print_table(
        &[
            "batch x dim x classes",
            "input",
            "impl",
            "time (ms)",
            "TFLOP/s",
            "speedup vs unfused",
        ],
        &rows,
    );
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("softmax_regression", run())
}
