//! Host side of the `rmsnorm_linear` example: random weights, the folding of RMSNorm's weight
//! into the linear layer's, the float64 reference, and the fused and unfused forms.

use tile::prelude::*;

use super::kernels::{linear_few, linear_rstd, rms_rstd, rmsnorm};
use crate::common::{Half, Rng};
use crate::gemm::kernels::{matmul, splitk_workspace};

/// RMSNorm's `eps` (Llama's).
pub const EPS: f32 = 1e-6;

/// `y = RMSNorm(x) @ Wᵀ` with `x` `m × k` and `W` `n × k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Tokens (rows of `x` and `y`).
    pub m: usize,
    /// Output features (rows of `W`).
    pub n: usize,
    /// Hidden size (the normalized dimension).
    pub k: usize,
}

impl Shape {
    /// `Err` unless every size is positive and every index fits `i32` (the kernels' offsets).
    pub fn validate(self) -> Result<(), Error> {
        if self.m == 0 || self.n == 0 || self.k == 0 {
            return Err(Error::Args(format!(
                "{self:?}: every size must be positive"
            )));
        }
        let big = [self.m * self.k, self.n * self.k, self.m * self.n];
        if big.iter().any(|&v| v > i32::MAX as usize) {
            return Err(Error::Args(format!("{self:?}: an index does not fit i32")));
        }
        Ok(())
    }
}

/// The layer on the host: `W` (`n × k`, PyTorch's `Linear` weight) and RMSNorm's `γ` (`k`).
pub struct Weights<T> {
    /// `n × k`.
    pub w: Vec<T>,
    /// `k`.
    pub gamma: Vec<T>,
}

/// Random weights for `s`, seeded: `W` uniform in `±1/√k`, `γ` in `[0.5, 1.5)`.
pub fn weights<T: Half>(s: Shape, seed: u64) -> Weights<T> {
    let mut r = Rng::new(seed);
    let b = 1.0 / (s.k as f32).sqrt();
    Weights {
        w: r.vec(s.n * s.k, -b, b)
            .into_iter()
            .map(T::from_f32)
            .collect(),
        gamma: r.vec(s.k, 0.5, 1.5).into_iter().map(T::from_f32).collect(),
    }
}

/// `Wᵀ` (`k × n`), each column `c` scaled by `mult(c)` in f64 and rounded once to `T`.
fn transposed<T: Half>(w: &Weights<T>, s: Shape, mult: impl Fn(usize) -> f64) -> Vec<T> {
    let mut out = Vec::with_capacity(s.k * s.n);
    for c in 0..s.k {
        let g = mult(c);
        out.extend(
            (0..s.n).map(|j| T::from_f32((f64::from(w.w[j * s.k + c].to_f32()) * g) as f32)),
        );
    }
    out
}

/// `γ` folded into the weight: `(γ ⊙ W)ᵀ`, `k × n`, `γ[c] · W[j, c]` rounded once to `T`.
pub fn fold<T: Half>(w: &Weights<T>, s: Shape) -> Vec<T> {
    transposed(w, s, |c| f64::from(w.gamma[c].to_f32()))
}

/// `y[i][j]` in f64 for each `(i, j)` of `at`, from `x`, `W` and `γ` as given (not folded).
pub fn reference<T: Half>(x: &[T], w: &Weights<T>, s: Shape, at: &[(usize, usize)]) -> Vec<f64> {
    let rstd: Vec<f64> = (0..s.m)
        .map(|i| {
            let ss: f64 = x[i * s.k..(i + 1) * s.k]
                .iter()
                .map(|v| f64::from(v.to_f32()).powi(2))
                .sum();
            1.0 / (ss / s.k as f64 + f64::from(EPS)).sqrt()
        })
        .collect();
    at.iter()
        .map(|&(i, j)| {
            let dot: f64 = (0..s.k)
                .map(|c| {
                    f64::from(x[i * s.k + c].to_f32())
                        * f64::from(w.gamma[c].to_f32())
                        * f64::from(w.w[j * s.k + c].to_f32())
                })
                .sum();
            dot * rstd[i]
        })
        .collect()
}

/// The layer on a device: the folded weight for the fused form; `Wᵀ` and `γ` for the unfused.
pub struct DeviceWeights<T: tile::Element> {
    /// `(γ ⊙ W)ᵀ`, `k × n`.
    pub folded: Buffer<T>,
    /// `Wᵀ`, `k × n`.
    pub wt: Buffer<T>,
    /// `γ`.
    pub gamma: Buffer<T>,
}

/// Folds and uploads `w`.
pub fn upload<T: Half>(dev: &Device, w: &Weights<T>, s: Shape) -> Result<DeviceWeights<T>, Error> {
    Ok(DeviceWeights {
        folded: dev.upload(&fold(w, s))?,
        wt: dev.upload(&transposed(w, s, |_| 1.0))?,
        gamma: dev.upload(&w.gamma)?,
    })
}

/// Programs [`linear_few`] aims for at least: half the SMs of an H100 (132).
const PROGRAMS: usize = 66;

/// Scratch buffers of both forms for a shape.
pub struct Scratch<T: tile::Element> {
    /// `rstd` per row (more than [`FEW_TOKENS`] tokens).
    pub rstd: Buffer<f32>,
    /// Split-K's partial products (few tokens).
    pub part: Buffer<f32>,
    /// [`linear_few`]'s partial sums of squares (64 per column block and slice).
    pub sq: Buffer<f32>,
    /// [`linear_few`]'s count of finished slices per column block: zero between launches.
    pub count: Buffer<i32>,
    /// The unfused form's normalized `x`.
    pub xn: Buffer<T>,
}

impl<T: Half> Scratch<T> {
    /// Buffers for `s`.
    pub fn new(dev: &Device, s: Shape) -> Result<Self, Error> {
        let plans: Vec<_> = split_plans(s)
            .into_iter()
            .chain(few_tokens_plan(s))
            .collect();
        Ok(Scratch {
            rstd: dev.zeros(s.m.max(1))?,
            // The unfused form's split-K, and every plan `fused_with` may be given.
            part: dev.zeros(
                plans
                    .iter()
                    .map(|&(split, _)| split * s.m * s.n)
                    .fold(splitk_workspace(s.m, s.n, s.k), usize::max)
                    .max(1),
            )?,
            sq: dev.zeros(
                plans
                    .iter()
                    .map(|&(split, _)| s.n.div_ceil(FEW_BN) * split * 64)
                    .fold(1, usize::max),
            )?,
            count: dev.zeros(s.n.div_ceil(FEW_BN))?,
            xn: dev.zeros((s.m * s.k).max(1))?,
        })
    }
}

/// The fused form: [`rms_rstd`], then [`linear_rstd`] (its tile timed per shape), or for at
/// most [`FEW_TOKENS`] tokens [`linear_few`] alone ([`few_tokens_plan`]), one launch.
pub fn fused<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    w: &DeviceWeights<T>,
    sc: &mut Scratch<T>,
    y: &mut Buffer<T>,
    s: Shape,
) -> Result<(), Error> {
    fused_with(dev, x, w, sc, y, s, few_tokens_plan(s))
}

/// Tokens up to which the fused form takes [`linear_few`] (its 64-row tile).
pub const FEW_TOKENS: usize = 64;

/// Columns of `y` per [`linear_few`] program.
const FEW_BN: usize = 128;

/// The fused form's plan `(split, kslice)` for at most [`FEW_TOKENS`] tokens: [`linear_few`]
/// with `k` cut in `split` slices of `kslice` (a multiple of 128, the widest `k` step it is
/// compiled for), as few as give at least 66 programs (half an H100's SMs), each slice at
/// least 256 long; `None` for more tokens. With one program per column block the tuner can
/// give each the deepest ring, where two programs would share an SM's shared memory.
/// (At 16 × 14336 × 4096 on an H200, `linear_few` alone in the tuner: 1 slice, 112 programs,
/// 0.0382–0.0387 ms with a ring of 4 `BK = 128` or 8 `BK = 64` buffers; 2 slices 0.0384–0.0409
/// with 4 buffers, their best; 4 and 8 slices 0.043–0.050.)
pub fn few_tokens_plan(s: Shape) -> Option<(usize, usize)> {
    if s.m > FEW_TOKENS {
        return None;
    }
    let want = PROGRAMS.div_ceil(s.n.div_ceil(FEW_BN).max(1));
    let most = s.k.div_ceil(256).max(1);
    Some(slices(s.k, want.min(most)))
}

/// `k` cut in about `split` slices: `(split, kslice)` with `kslice` a multiple of 128 (the
/// widest `k` step [`linear_few`] is compiled for), at least one slice.
fn slices(k: usize, split: usize) -> (usize, usize) {
    let kslice = k.div_ceil(split).next_multiple_of(128).max(128);
    (k.div_ceil(kslice).max(1), kslice)
}

/// Plans `(split, kslice)` for `s` that [`fused_with`] can run: [`linear_few`] with `k` cut in
/// 1 to 8 slices (for `--sweep`; each plan's ring timed by the tuner at its first launch).
pub fn split_plans(s: Shape) -> Vec<(usize, usize)> {
    if few_tokens_plan(s).is_none() {
        return Vec::new();
    }
    [1, 2, 4, 8]
        .into_iter()
        .map(|split| slices(s.k, split))
        .collect()
}

/// [`fused`] with plan `plan` for [`linear_few`] (`None`: [`linear_rstd`]).
pub fn fused_with<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    w: &DeviceWeights<T>,
    sc: &mut Scratch<T>,
    y: &mut Buffer<T>,
    s: Shape,
    plan: Option<(usize, usize)>,
) -> Result<(), Error> {
    s.validate()?;
    let (m, n, k) = (s.m as i32, s.n as i32, s.k as i32);
    match plan {
        Some((split, kslice)) => {
            let blocks = s.n.div_ceil(FEW_BN);
            let g = |_: &linear_few::Config| Grid::xy(blocks as u32, split as u32);
            let (b, sp, ks) = (blocks as i32, split as i32, kslice as i32);
            let (part, sq, count) = (&mut sc.part, &mut sc.sq, &mut sc.count);
            linear_few::launch(
                dev, g, x, &w.folded, part, sq, count, y, m, n, k, b, sp, ks, EPS,
            )
        }
        None => {
            rms_rstd::launch(dev, Grid::x(s.m as u32), x, &mut sc.rstd, m, k, EPS)?;
            let grid = |c: &linear_rstd::Config| {
                Grid::x((s.m.div_ceil(c.BM as usize) * s.n.div_ceil(c.BN as usize)) as u32)
            };
            linear_rstd::launch(dev, grid, x, &w.folded, &sc.rstd, y, m, n, k)
        }
    }
}

/// The unfused form: [`rmsnorm`] writes the normalized `x`, then the `gemm` example's `matmul`
/// with `Wᵀ`.
pub fn unfused<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    w: &DeviceWeights<T>,
    sc: &mut Scratch<T>,
    y: &mut Buffer<T>,
    s: Shape,
) -> Result<(), Error> {
    s.validate()?;
    let (m, k) = (s.m as i32, s.k as i32);
    rmsnorm::launch(dev, Grid::x(s.m as u32), x, &w.gamma, &mut sc.xn, m, k, EPS)?;
    matmul(dev, &sc.xn, &w.wt, y, &mut sc.part, (s.m, s.n, s.k))
}
