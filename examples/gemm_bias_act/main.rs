//! GEMM + bias + activation, fused (`gemm_bias_act`: the epilogue runs on the accumulator) against
//! unfused (the `gemm` example's kernel writing `A @ B`, then `bias_act` reading it back), and both
//! against an f64 reference, for ReLU, GELU (erf) and GELU (tanh), f16 and bf16.
//!
//! `cargo run --release --example gemm_bias_act` — on a GPU: awkward shapes (`M`, `N`, `K` of 1,
//! 17, non-multiples of the tiles) against the full reference, then 4096³ and 8192³ against the
//! reference on 512 sampled elements, timed (median of CUDA events after warm-up): fused, unfused
//! (the two kernels), and the plain GEMM alone, each with both tiles — `128 × 128 × 32` on 4 warps
//! (`gemm_bias_act` and `gemm`) and `128 × 256 × 64` on 8 warps (`gemm_bias_act_wide` and
//! `gemm_wide`, the shape Hopper's `wgmma` wants). cuBLAS (`torch.addmm` + the
//! activation, and `torch._addmm_activation`) and Triton's tutorial matmul with the activation
//! fused come from `bench/python/baseline.py --filter gemm_bias`. Without a GPU: the awkward shapes
//! on the interpreter. `--quick`: the awkward shapes only (for compute-sanitizer).
//!
//! Tolerance: relative L2 error against f64 of one rounding to the output type (4e-3 f16, 2e-2
//! bf16), the sum in the tensor cores' order, and the GELUs' f32 `erf`/`tanh` (a few 1e-7).

use std::process::ExitCode;
use tile_examples::{common, gemm::kernels as gemm_kernels, gemm_bias_act::kernels};

use common::{check_forms, matmul_inputs, matmul_ref_at, print_table, time_ms, Half, Rng};
use gemm_kernels::{gemm, gemm_wide};
use half::{bf16, f16};
use kernels::{act_ref, bias_act, gemm_bias_act, gemm_bias_act_wide};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// `M × N × K`.
type Shape = (usize, usize, usize);

/// The activations, by their `ACT` value.
const ACTS: [(i32, &str); 3] = [(0, "relu"), (1, "gelu_erf"), (2, "gelu_tanh")];

/// The elements to compare ([`common::sampled_elements`]).
fn sample((m, n, _): Shape) -> Vec<(usize, usize)> {
    common::sampled_elements(m, n, 11)
}

/// Inputs of one shape on the device, and what the checks compare against.
struct Case<T: Half> {
    s: Shape,
    a: Buffer<T>,
    b: Buffer<T>,
    bias: Buffer<T>,
    /// `A @ B` in f64 at the sampled elements.
    prod: Vec<f64>,
    bias64: Vec<f64>,
    at: Vec<(usize, usize)>,
}

impl<T: Half> Case<T> {
    fn new(dev: &Device, s: Shape) -> Res<Case<T>> {
        let n = s.1;
        let (a, b, a64, b64) = matmul_inputs::<T>(s);
        let mut r = Rng::new(n as u64 + 5);
        let bias: Vec<T> = r.vec(n, -1.0, 1.0).into_iter().map(T::from_f32).collect();
        let bias64 = bias.iter().map(|x| f64::from(x.to_f32())).collect();
        let at = sample(s);
        let prod = matmul_ref_at(&a64, &b64, s, &at);
        Ok(Case {
            s,
            a: dev.upload(&a)?,
            b: dev.upload(&b)?,
            bias: dev.upload(&bias)?,
            prod,
            bias64,
            at,
        })
    }

    fn dims(&self) -> (i32, i32, i32) {
        (self.s.0 as i32, self.s.1 as i32, self.s.2 as i32)
    }

    /// Columns per block: 256 for the wide tile, else 128.
    fn bn(wide: bool) -> usize {
        if wide {
            256
        } else {
            128
        }
    }

    fn epilogue_grid(&self) -> Grid {
        Grid::x(cdiv(self.s.0 * self.s.1, 2048))
    }

    fn fused(
        &self,
        dev: &Device,
        out: &mut Buffer<T>,
        act: i32,
        wide: bool,
    ) -> Result<(), tile::Error> {
        let (m, n, k) = self.dims();
        let g = kernels::grid(self.s.0, self.s.1, Self::bn(wide));
        let (a, b, bias) = (&self.a, &self.b, &self.bias);
        if wide {
            gemm_bias_act_wide::launch(dev, g, a, b, bias, out, m, n, k, act)
        } else {
            gemm_bias_act::launch(dev, g, a, b, bias, out, m, n, k, act)
        }
    }

    /// The plain GEMM with the same tile, writing `A @ B` in the input type.
    fn gemm(&self, dev: &Device, out: &mut Buffer<T>, wide: bool) -> Result<(), tile::Error> {
        let (m, n, k) = self.dims();
        let bn = Self::bn(wide);
        let g = gemm_kernels::grid(self.s.0, self.s.1, bn as i32);
        if wide {
            gemm_wide::launch(dev, g, &self.a, &self.b, out, m, n, k)
        } else {
            gemm::launch(dev, g, &self.a, &self.b, out, m, n, k, 128)
        }
    }

    fn unfused(
        &self,
        dev: &Device,
        tmp: &mut Buffer<T>,
        out: &mut Buffer<T>,
        act: i32,
        wide: bool,
    ) -> Result<(), tile::Error> {
        let (m, n, _) = self.dims();
        self.gemm(dev, tmp, wide)?;
        bias_act::launch(dev, self.epilogue_grid(), tmp, &self.bias, out, m, n, act)
    }

    /// Runs both forms with activation `act` and the tile `wide` picks, checks them, and (when
    /// `reps > 0`) times them and the plain GEMM: `(ok, fused ms, unfused ms, gemm ms)`.
    fn run(
        &self,
        dev: &Device,
        act: i32,
        name: &str,
        wide: bool,
        reps: usize,
    ) -> Res<(bool, f64, f64, f64)> {
        let (m, n, _) = self.s;
        let nan = vec![T::from_f32(f32::NAN); m * n];
        let mut fused = dev.upload(&nan)?;
        let mut tmp = dev.upload(&nan)?;
        let mut unfused = dev.upload(&nan)?;
        self.fused(dev, &mut fused, act, wide)?;
        self.unfused(dev, &mut tmp, &mut unfused, act, wide)?;
        let (f, u) = (dev.download(&fused)?, dev.download(&unfused)?);
        let pick = |v: &[T]| -> Vec<f32> {
            self.at
                .iter()
                .map(|&(i, j)| v[i * n + j].to_f32())
                .collect()
        };
        let want: Vec<f64> = self
            .at
            .iter()
            .zip(&self.prod)
            .map(|(&(_, j), &p)| act_ref(act, p + self.bias64[j]))
            .collect();
        let (mm, nn, kk) = self.s;
        // The unfused form rounds `A @ B` to the input type before the bias: one more rounding.
        let ok = check_forms(
            &format!("{mm}x{nn}x{kk} {} {name} BN {}", T::NAME, Self::bn(wide)),
            &pick(&f),
            &pick(&u),
            &want,
            T::TOL,
        );
        if reps == 0 {
            return Ok((ok, 0.0, 0.0, 0.0));
        }
        let stream = dev.stream().ok_or("no stream")?.clone();
        let tf = time_ms(&stream, 5, reps, || self.fused(dev, &mut fused, act, wide))?;
        let tu = time_ms(&stream, 5, reps, || {
            self.unfused(dev, &mut tmp, &mut unfused, act, wide)
        })?;
        let tg = time_ms(&stream, 5, reps, || self.gemm(dev, &mut tmp, wide))?;
        Ok((ok, tf, tu, tg))
    }
}

/// Every activation on `s` for input type `T`: checks, and table rows when `reps > 0`.
fn run_shape<T: Half>(
    dev: &Device,
    s: Shape,
    reps: usize,
    rows: &mut Vec<Vec<String>>,
) -> Res<bool> {
    let case = Case::<T>::new(dev, s)?;
    let flop = 2.0 * s.0 as f64 * s.1 as f64 * s.2 as f64;
    let tflops = |ms: f64| flop / (ms * 1e-3) / 1e12;
    let mut ok = true;
    for wide in [false, true] {
        if wide && (s.1 % 8 != 0 || s.2 % 8 != 0) {
            // The wide kernel is compiled for aligned shapes only: this launch must be refused.
            let mut out = dev.upload(&vec![T::from_f32(0.0); s.0 * s.1])?;
            match case.fused(dev, &mut out, 0, true) {
                Err(e) => println!(
                    "{}x{}x{} {}: the wide kernel refuses it ({e})",
                    s.0,
                    s.1,
                    s.2,
                    T::NAME
                ),
                Ok(()) => {
                    println!("FAILED: the wide kernel accepted {}x{}x{}", s.0, s.1, s.2);
                    ok = false;
                }
            }
            continue;
        }
        for (act, name) in ACTS {
            let (good, tf, tu, tg) = case.run(dev, act, name, wide, reps)?;
            ok &= good;
            if reps == 0 {
                continue;
            }
            let tile = if wide { "128x256x64" } else { "128x128x32" };
            rows.push(vec![
                format!("{}x{}x{}", s.0, s.1, s.2),
                tile.to_string(),
                format!("{} {name}", T::NAME),
                format!("{tf:.4}"),
                format!("{:.1}", tflops(tf)),
                format!("{tu:.4}"),
                format!("{:.1}", tflops(tu)),
                format!("{:.2}x", tu / tf),
                format!("{:.1}%", 100.0 * tg / tf),
            ]);
        }
    }
    Ok(ok)
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    // The last two are aligned (`n`, `k` multiples of 8), so the wide kernel runs them too.
    let awkward: [Shape; 6] = [
        (1, 1, 1),
        (17, 17, 17),
        (100, 70, 129),
        (129, 257, 48),
        (130, 264, 72),
        (1, 520, 8),
    ];
    let mut ok = true;
    let mut rows = Vec::new();
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (checks only).");
        }
        None => println!("Running on {}", dev.name()),
    }
    for &s in &awkward {
        ok &= run_shape::<f16>(&dev, s, 0, &mut rows)?;
        ok &= run_shape::<bf16>(&dev, s, 0, &mut rows)?;
    }
    if no_gpu.is_some() || quick {
        return Ok(ok);
    }
    for s in [(4096, 4096, 4096), (8192, 8192, 8192)] {
        ok &= run_shape::<f16>(&dev, s, 20, &mut rows)?;
        ok &= run_shape::<bf16>(&dev, s, 20, &mut rows)?;
    }
    println!("\ngemm + bias + activation (tile), median of 20 after 5 warm-ups");
    print_table(
        &[
            "M x N x K",
            "tile",
            "type, act",
            "fused (ms)",
            "fused TFLOP/s",
            "unfused (ms)",
            "unfused TFLOP/s",
            "fused speedup",
            "gemm alone / fused",
        ],
        &rows,
    );
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("gemm_bias_act", run())
}
