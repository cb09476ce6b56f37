//! Host side of the `dequant_matmul` example: random 4-bit weights and their packing, the
//! float64 reference, and the fused and unfused forms with their launch plans.

use tile::prelude::*;

use super::kernels::{dequant_int4, w4a16, w4a16_gemv, GROUP};
use crate::common::{Half, Rng};
use crate::gemm::kernels::{matmul, splitk_sum, splitk_workspace};

/// Programs the fused kernel aims for: two per SM of an H100 (132), so that the weights stream
/// from every SM at once.
pub const PROGRAMS: usize = 264;

/// Columns of `y` (rows of `W`) per fused program.
pub const BN: usize = 64;

/// `y = x @ Wᵀ` with `x` `m × k` and `W` `n × k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Rows of `x` and `y` (tokens).
    pub m: usize,
    /// Rows of `W`, columns of `y`.
    pub n: usize,
    /// The shared dimension, a multiple of [`GROUP`].
    pub k: usize,
}

impl Shape {
    /// Bytes of the quantized weights: the packed words, scales and zero points.
    pub fn weight_bytes(self, elem: usize) -> usize {
        self.n * self.k / 2 + 2 * self.n * (self.k / GROUP) * elem
    }
}

/// Rows of `x` per fused program.
pub const BM: usize = 16;

/// Rows of `W` per program of the one-token kernel.
pub const GEMV_BN: usize = 32;

/// The fused kernel's plan for a shape: rows of `x` per program (0 for the one-token kernel),
/// slices of the groups (`split`) and groups per slice, so that about [`PROGRAMS`] programs run.
pub fn plan(s: Shape) -> (usize, usize, usize) {
    let groups = s.k / GROUP;
    let (bm, blocks) = if s.m == 1 {
        (0, s.n.div_ceil(GEMV_BN))
    } else {
        (BM, s.n.div_ceil(BN) * s.m.div_ceil(BM))
    };
    let split = PROGRAMS.div_ceil(blocks).clamp(1, groups.max(1));
    let gslice = groups.div_ceil(split).max(1);
    (bm, groups.div_ceil(gslice).max(1), gslice)
}

/// f32 elements the fused kernel's partial sums take for `s`.
pub fn workspace(s: Shape) -> usize {
    let (_, split, _) = plan(s);
    split * s.m * s.n
}

/// The quantized weights on the host: `q[r][k]` in `0..16`, per row and group a scale and a
/// zero point (values of `T`).
pub struct Weights<T> {
    /// `n × k` values, one per byte.
    pub q: Vec<u8>,
    /// `n × k/128`.
    pub scales: Vec<T>,
    /// `n × k/128`.
    pub zeros: Vec<T>,
}

/// Random weights for `s` (scales in `[0.002, 0.02)`, zero points integers in `4..12`), seeded.
pub fn weights<T: Half>(s: Shape, seed: u64) -> Weights<T> {
    let mut r = Rng::new(seed);
    let q = (0..s.n * s.k)
        .map(|_| (r.uniform(0.0, 16.0) as u8).min(15))
        .collect();
    let g = s.n * (s.k / GROUP);
    let scales = (0..g)
        .map(|_| T::from_f32(r.uniform(0.002, 0.02)))
        .collect();
    let zeros = (0..g)
        .map(|_| T::from_f32((r.uniform(4.0, 12.0) as i32) as f32))
        .collect();
    Weights { q, scales, zeros }
}

/// `q` (`n × k` values in `0..16`) packed eight to a word along `k`, the first in the low bits.
pub fn pack_int4(q: &[u8], n: usize, k: usize) -> Vec<u32> {
    (0..n * k / 8)
        .map(|w| (0..8).fold(0u32, |acc, j| acc | u32::from(q[8 * w + j] & 15) << (4 * j)))
        .collect()
}

/// `W[r][k]` as the kernels define it, in f64.
pub fn weight<T: Half>(w: &Weights<T>, s: Shape, r: usize, k: usize) -> f64 {
    let g = r * (s.k / GROUP) + k / GROUP;
    let scale = f64::from(w.scales[g].to_f32());
    let zero = f64::from(w.zeros[g].to_f32());
    (f64::from(w.q[r * s.k + k]) - zero) * scale
}

/// `y[i][j]` in f64 for each `(i, j)` of `at`.
pub fn reference<T: Half>(x: &[T], w: &Weights<T>, s: Shape, at: &[(usize, usize)]) -> Vec<f64> {
    at.iter()
        .map(|&(i, j)| {
            (0..s.k)
                .map(|k| f64::from(x[i * s.k + k].to_f32()) * weight(w, s, j, k))
                .sum()
        })
        .collect()
}

/// The quantized weights on a device.
pub struct DeviceWeights<T: tile::Element> {
    /// Packed words, `n × k/8`.
    pub qw: Buffer<u32>,
    /// `n × k/128`.
    pub scales: Buffer<T>,
    /// `n × k/128`.
    pub zeros: Buffer<T>,
}

/// Uploads `w`, packed.
pub fn upload<T: Half>(dev: &Device, w: &Weights<T>, s: Shape) -> Result<DeviceWeights<T>, Error> {
    Ok(DeviceWeights {
        qw: dev.upload(&pack_int4(&w.q, s.n, s.k))?,
        scales: dev.upload(&w.scales)?,
        zeros: dev.upload(&w.zeros)?,
    })
}

fn check_group(s: Shape) -> Result<(), Error> {
    if s.k % GROUP != 0 || s.k == 0 {
        return Err(Error::Args(format!(
            "k = {} is not a positive multiple of the group size {GROUP}",
            s.k
        )));
    }
    Ok(())
}

/// The fused form: [`w4a16`] (or, for one token, [`w4a16_gemv`]) over [`plan`]'s slices into
/// `part` (at least [`workspace`] long), then `splitk_sum` into `y` (`m × n`). `Err` for `k`
/// not a multiple of [`GROUP`].
pub fn fused<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    w: &DeviceWeights<T>,
    part: &mut Buffer<f32>,
    y: &mut Buffer<T>,
    s: Shape,
) -> Result<(), Error> {
    check_group(s)?;
    let (bm, split, gslice) = plan(s);
    let (n, k, sp, gs) = (s.n as i32, s.k as i32, split as i32, gslice as i32);
    if bm == 0 {
        let grid = Grid::xy(s.n.div_ceil(GEMV_BN) as u32, split as u32);
        w4a16_gemv::launch(dev, grid, x, &w.qw, &w.scales, &w.zeros, part, n, k, sp, gs)?;
        return splitk_sum::launch(dev, Grid::x(s.n.div_ceil(1024) as u32), part, y, n, sp);
    }
    let grid = Grid::xyz(
        s.m.div_ceil(bm) as u32,
        s.n.div_ceil(BN) as u32,
        split as u32,
    );
    w4a16::launch(
        dev, grid, x, &w.qw, &w.scales, &w.zeros, part, s.m as i32, n, k, sp, gs,
    )?;
    let mn = s.m * s.n;
    splitk_sum::launch(
        dev,
        Grid::x(mn.div_ceil(1024) as u32),
        part,
        y,
        mn as i32,
        sp,
    )
}

/// Buffers of the unfused form: `Wᵀ` dequantized and the GEMM's partial sums.
pub struct Unfused<T: tile::Element> {
    /// `k × n`.
    pub wt: Buffer<T>,
    /// The `gemm` example's split-K workspace.
    pub part: Buffer<f32>,
}

impl<T: Half> Unfused<T> {
    /// Buffers for `s`.
    pub fn new(dev: &Device, s: Shape) -> Result<Self, Error> {
        Ok(Unfused {
            wt: dev.zeros(s.k * s.n)?,
            part: dev.zeros(splitk_workspace(s.m, s.n, s.k).max(1))?,
        })
    }
}

/// The unfused form: [`dequant_int4`] writes `Wᵀ`, then the `gemm` example's `matmul`.
pub fn unfused<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    w: &DeviceWeights<T>,
    buf: &mut Unfused<T>,
    y: &mut Buffer<T>,
    s: Shape,
) -> Result<(), Error> {
    check_group(s)?;
    let grid = Grid::xy(s.n.div_ceil(64) as u32, (s.k / GROUP) as u32);
    let (n, k) = (s.n as i32, s.k as i32);
    dequant_int4::launch(dev, grid, &w.qw, &w.scales, &w.zeros, &mut buf.wt, n, k)?;
    matmul(dev, x, &buf.wt, y, &mut buf.part, (s.m, s.n, s.k))
}
