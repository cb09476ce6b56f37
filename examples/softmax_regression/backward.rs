//! The backward pass of softmax regression, single- and multi-head: given `x` (`b × d`), `W`
//! (`d × h·c`: `h` heads of `c` classes side by side), the probabilities `P = softmax(x W)` per
//! head (`b × h × c`, f32) and the upstream gradient `dP` (the loss's gradient with respect to
//! `P`, same shape), it computes `dlogits = P ∘ (dP − rowsum(dP ∘ P))` per head and row,
//! `dx = dlogits · Wᵀ` and `dW = xᵀ · dlogits` (in the input type, f32 accumulation).
//!
//! - **Fused**: [`softmax_bwd_rows`] reads `P` and `dP` once and writes `dlogits` in the input
//!   type (the row sum, the product and the rounding in one pass: 2 bytes written per element
//!   where autograd writes the f32 gradient, then reads it back to round it); then the `gemm`
//!   example's [`gemm_nt`] (`dlogits · Wᵀ`, `W` read transposed from the ring) and [`gemm_tn`]
//!   (`xᵀ · dlogits`, `x` read transposed). The heads need nothing else: `b × h × c` is `b·h`
//!   rows of `c` for the softmax, and `b × h·c` for the products.
//! - **Unfused** (what autograd runs): [`softmax_bwd_rows`] writing f32, [`round_to`] rounding
//!   it to the input type, then the same products.
//!
//! Fusing `dlogits` into the products' loads instead would read `P` and `dP` (8 bytes per
//! element) once per column block of `dx` (32 at `d` = 4096) rather than 2 bytes of `dlogits`.

use tile::prelude::*;

use crate::common::{Half, Rng};
use crate::gemm::kernels::{gemm_nt, gemm_tn};

#[tile_kernel(num_warps = 4)]
/// `dl[r, :] = p[r, :] ∘ (dp[r, :] − Σ_j dp[r, j]·p[r, j])` as `O`, one program per row of `c`
/// elements, `BLOCK` at a time (the sum in a first pass, then the product).
pub fn softmax_bwd_rows(
    p: Ptr<f32, { rows * c }>,
    dp: Ptr<f32, { rows * c }>,
    dl: Ptr<O, { rows * c }>,
    rows: i32,
    c: i32,
    O: Type<{ [f32, f16, bf16] }>,
    BLOCK: Const<1024>,
) {
    let base = program_id(0) * c;
    let cols = arange(0, BLOCK);
    let mut acc = zeros([BLOCK]);
    for c0 in (0..c).step_by(BLOCK) {
        let j = c0 + cols;
        let ok = j < c;
        acc = acc + load(p + base + j, ok, 0.0) * load(dp + base + j, ok, 0.0);
    }
    let s = acc.sum();
    for c0 in (0..c).step_by(BLOCK) {
        let j = c0 + cols;
        let ok = j < c;
        let g = load(p + base + j, ok, 0.0) * (load(dp + base + j, ok, 0.0) - s);
        store(dl + base + j, g as O, ok);
    }
}

#[tile_kernel(num_warps = 4)]
/// `y = x` rounded to `T`, `BLOCK` elements per program (the unfused form's cast).
pub fn round_to(
    x: Ptr<f32, n>,
    y: Ptr<T, n>,
    n: i32,
    T: Type<{ [f16, bf16] }>,
    BLOCK: Const<4096>,
) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    store(y + i, load(x + i, i < n, 0.0) as T, i < n);
}

/// Every kernel of the backward pass (tests assemble them all).
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = softmax_bwd_rows::KERNELS.to_vec();
    v.extend(round_to::KERNELS);
    v
}

/// `b` rows of `x` (`d` wide), `h` heads of `c` classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Batch (rows of `x`).
    pub b: usize,
    /// Input features.
    pub d: usize,
    /// Classes per head.
    pub c: usize,
    /// Heads.
    pub h: usize,
}

/// The awkward shapes the example and its interpreter test check: one row, sizes not a multiple
/// of any block, several heads, more classes than one tile holds.
pub const CHECK_SHAPES: [Shape; 4] = [
    Shape {
        b: 1,
        d: 8,
        c: 10,
        h: 1,
    },
    Shape {
        b: 17,
        d: 40,
        c: 75,
        h: 1,
    },
    Shape {
        b: 70,
        d: 96,
        c: 33,
        h: 3,
    },
    Shape {
        b: 33,
        d: 130,
        c: 1100,
        h: 2,
    },
];

impl Shape {
    /// Columns of `W` and of the logits: `h · c`.
    pub fn hc(self) -> usize {
        self.h * self.c
    }

    /// `Err` unless every size is positive and every index fits `i32`.
    pub fn validate(self) -> Result<(), Error> {
        if self.b == 0 || self.d == 0 || self.c == 0 || self.h == 0 {
            return Err(Error::Args(format!(
                "{self:?}: every size must be positive"
            )));
        }
        if [self.b * self.d, self.d * self.hc(), self.b * self.hc()]
            .iter()
            .any(|&n| n > i32::MAX as usize)
        {
            return Err(Error::Args(format!("{self:?}: an index does not fit i32")));
        }
        Ok(())
    }

    /// Floating-point operations of the two products (`2 · 2·b·d·h·c`).
    pub fn flops(self) -> f64 {
        4.0 * (self.b * self.d * self.hc()) as f64
    }
}

/// One problem on the host.
pub struct Problem<T> {
    /// `b × d` in `[-1, 1)`.
    pub x: Vec<T>,
    /// `d × h·c` in `±1/√d`.
    pub w: Vec<T>,
    /// `b × h × c`: each head's softmax of random logits in `[-4, 4)` (the backward does not
    /// need them to be `x W`'s).
    pub p: Vec<f32>,
    /// `b × h × c` in `[-1, 1)`.
    pub dp: Vec<f32>,
}

/// A random problem of shape `s`, seeded.
pub fn problem<T: Half>(s: Shape, seed: u64) -> Problem<T> {
    let mut r = Rng::new(seed);
    let bound = 1.0 / (s.d as f32).sqrt();
    let x = r
        .vec(s.b * s.d, -1.0, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let w = r
        .vec(s.d * s.hc(), -bound, bound)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let z = r.vec(s.b * s.hc(), -4.0, 4.0);
    let mut p = vec![0f32; z.len()];
    for (zr, pr) in z.chunks(s.c).zip(p.chunks_mut(s.c)) {
        let m = zr.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f64> = zr.iter().map(|v| f64::from(v - m).exp()).collect();
        let t: f64 = e.iter().sum();
        for (o, v) in pr.iter_mut().zip(e) {
            *o = (v / t) as f32;
        }
    }
    let dp = r.vec(s.b * s.hc(), -1.0, 1.0);
    Problem { x, w, p, dp }
}

/// The device buffers of one problem, the gradients and the scratch.
pub struct Tensors<T: tile::Element> {
    /// `b × d`.
    pub x: Buffer<T>,
    /// `d × h·c`.
    pub w: Buffer<T>,
    /// `b × h·c`.
    pub p: Buffer<f32>,
    /// `b × h·c`.
    pub dp: Buffer<f32>,
    /// `dlogits` in the input type (`b × h·c`).
    pub dl: Buffer<T>,
    /// The unfused form's f32 `dlogits`.
    pub dl32: Buffer<f32>,
    /// `b × d`, written.
    pub dx: Buffer<T>,
    /// `d × h·c`, written.
    pub dw: Buffer<T>,
}

impl<T: Half> Tensors<T> {
    /// `pr` uploaded, the rest zeroed.
    pub fn upload(dev: &Device, pr: &Problem<T>, s: Shape) -> Result<Self, Error> {
        Ok(Tensors {
            x: dev.upload(&pr.x)?,
            w: dev.upload(&pr.w)?,
            p: dev.upload(&pr.p)?,
            dp: dev.upload(&pr.dp)?,
            dl: dev.zeros(s.b * s.hc())?,
            dl32: dev.zeros(s.b * s.hc())?,
            dx: dev.zeros(s.b * s.d)?,
            dw: dev.zeros(s.d * s.hc())?,
        })
    }
}

/// The two products from `t.dl`: `dx = dl · Wᵀ`, `dW = xᵀ · dl`.
fn products<T: Half>(dev: &Device, t: &mut Tensors<T>, s: Shape) -> Result<(), Error> {
    let (b, d, hc) = (s.b as i32, s.d as i32, s.hc() as i32);
    let blocks = |bm: i32, m: usize, bn: i32, n: usize| {
        Grid::x((m.div_ceil(bm as usize) * n.div_ceil(bn as usize)) as u32)
    };
    gemm_nt::launch(
        dev,
        |c: &gemm_nt::Config| blocks(c.BM, s.b, c.BN, s.d),
        &t.dl,
        &t.w,
        &mut t.dx,
        0,
        b,
        b,
        d,
        hc,
    )?;
    gemm_tn::launch(
        dev,
        |c: &gemm_tn::Config| blocks(c.BM, s.d, c.BN, s.hc()),
        &t.x,
        &t.dl,
        &mut t.dw,
        0,
        d,
        hc,
        b,
        b,
        0,
    )
}

/// The fused form (see the module documentation).
pub fn fused<T: Half>(dev: &Device, t: &mut Tensors<T>, s: Shape) -> Result<(), Error> {
    s.validate()?;
    let rows = s.b * s.h;
    let g = Grid::x(rows as u32);
    softmax_bwd_rows::launch(dev, g, &t.p, &t.dp, &mut t.dl, rows as i32, s.c as i32)?;
    products(dev, t, s)
}

/// The unfused form: the f32 gradient, rounded by a second kernel, then the products.
pub fn unfused<T: Half>(dev: &Device, t: &mut Tensors<T>, s: Shape) -> Result<(), Error> {
    s.validate()?;
    let rows = s.b * s.h;
    let g = Grid::x(rows as u32);
    softmax_bwd_rows::launch(dev, g, &t.p, &t.dp, &mut t.dl32, rows as i32, s.c as i32)?;
    let n = s.b * s.hc();
    round_to::launch(
        dev,
        Grid::x(n.div_ceil(4096) as u32),
        &t.dl32,
        &mut t.dl,
        n as i32,
    )?;
    products(dev, t, s)
}

/// `dlogits` in f64.
fn dlogits<T: Half>(pr: &Problem<T>, s: Shape) -> Vec<f64> {
    let mut out = Vec::with_capacity(pr.p.len());
    for (p, dp) in pr.p.chunks(s.c).zip(pr.dp.chunks(s.c)) {
        let sum: f64 = p
            .iter()
            .zip(dp)
            .map(|(a, b)| f64::from(*a) * f64::from(*b))
            .sum();
        out.extend(
            p.iter()
                .zip(dp)
                .map(|(a, b)| f64::from(*a) * (f64::from(*b) - sum)),
        );
    }
    out
}

/// `dx` (`b × d`) and `dW` (`d × h·c`) in f64 from the exact inputs.
pub fn reference<T: Half>(pr: &Problem<T>, s: Shape) -> (Vec<f64>, Vec<f64>) {
    let dl = dlogits(pr, s);
    let hc = s.hc();
    let x: Vec<f64> = pr.x.iter().map(|v| f64::from(v.to_f32())).collect();
    let w: Vec<f64> = pr.w.iter().map(|v| f64::from(v.to_f32())).collect();
    let mut dx = vec![0f64; s.b * s.d];
    let mut dw = vec![0f64; s.d * hc];
    for i in 0..s.b {
        let g = &dl[i * hc..(i + 1) * hc];
        for k in 0..s.d {
            let wr = &w[k * hc..(k + 1) * hc];
            dx[i * s.d + k] = g.iter().zip(wr).map(|(a, b)| a * b).sum();
            let xv = x[i * s.d + k];
            for (o, gv) in dw[k * hc..(k + 1) * hc].iter_mut().zip(g) {
                *o += xv * gv;
            }
        }
    }
    (dx, dw)
}
