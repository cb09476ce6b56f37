//! Host side of the `linear_cross_entropy` example: random problems, the chunk size, the launches
//! of the fused (chunked) and unfused (one chunk) forms, and the float64 reference.

use tile::prelude::*;

use super::kernels::{lce_ce, lce_dx};
use crate::common::{Half, Rng};
use crate::cross_entropy::kernels::ce_setup;
use crate::gemm::kernels::{gemm_nt, gemm_tn};

/// The label of tokens left out of the loss (PyTorch's default `ignore_index`).
pub const IGNORE: i32 = -100;

/// The fused form's default budget for one chunk's logits (bytes): 512 tokens of a 128256-word
/// vocabulary in 16-bit logits (131 MB), 2048 of a 32000-word one.
pub const CHUNK_BYTES: usize = 128 << 20;

/// `loss = CE(x · Wᵀ, labels)` with `x` `t × h` and `W` `v × h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Tokens (rows of `x`).
    pub t: usize,
    /// Hidden size.
    pub h: usize,
    /// Vocabulary (classes, rows of `W`).
    pub v: usize,
}

impl Shape {
    /// `Err` unless every size is positive, `chunk` is in `1 ..= t`, and every index of the
    /// kernels fits `i32`.
    pub fn validate(self, chunk: usize) -> Result<(), Error> {
        if self.t == 0 || self.h == 0 || self.v == 0 {
            return Err(Error::Args(format!(
                "{self:?}: every size must be positive"
            )));
        }
        if chunk == 0 || chunk > self.t {
            return Err(Error::Args(format!(
                "{self:?}: a chunk of {chunk} tokens (1 to {} expected)",
                self.t
            )));
        }
        let big = [self.t * self.h, self.v * self.h, chunk * self.v];
        if big.iter().any(|&n| n > i32::MAX as usize) {
            return Err(Error::Args(format!(
                "{self:?}: an index does not fit i32 (chunk {chunk})"
            )));
        }
        Ok(())
    }

    /// The fused form's chunk: as many tokens as fit `bytes` of 16-bit logits, a multiple of
    /// 128 where that is at least 128 (whole row blocks of the products), at most `t`.
    pub fn chunk(self, bytes: usize) -> usize {
        let fit = (bytes / (2 * self.v.max(1))).max(1);
        let rows = if fit >= 128 { fit / 128 * 128 } else { fit };
        rows.min(self.t).max(1)
    }

    /// Floating-point operations of the forward and backward products (`3 · 2·t·h·v`).
    pub fn flops(self) -> f64 {
        6.0 * (self.t * self.h * self.v) as f64
    }
}

/// One problem on the host.
pub struct Problem<T> {
    /// `t × h`, in `[-1, 1)`.
    pub x: Vec<T>,
    /// `v × h`, in `±6/√h` (logits of standard deviation about 2).
    pub w: Vec<T>,
    /// One per token: every 7th is [`IGNORE`], the others uniform in `0 .. v`, token 1's the
    /// last class.
    pub labels: Vec<i32>,
}

/// A random problem of shape `s`, seeded.
pub fn problem<T: Half>(s: Shape, seed: u64) -> Problem<T> {
    let mut r = Rng::new(seed);
    let b = 6.0 / (s.h as f32).sqrt();
    let x = r
        .vec(s.t * s.h, -1.0, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let w = r
        .vec(s.v * s.h, -b, b)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let labels = (0..s.t)
        .map(|i| {
            let y = ((r.uniform(0.0, 1.0) * s.v as f32) as usize).min(s.v - 1) as i32;
            match i {
                _ if i % 7 == 3 => IGNORE,
                1 => s.v as i32 - 1,
                _ => y,
            }
        })
        .collect();
    Problem { x, w, labels }
}

/// The chunk's logits and the loss's bookkeeping.
pub struct Scratch<T: tile::Element> {
    /// `chunk × v` logits, then their gradient.
    pub logits: Buffer<T>,
    /// The number of valid labels.
    pub valid: Buffer<i32>,
    /// The mean loss.
    pub mean: Buffer<f32>,
    /// Each token's share of the mean (0 where ignored).
    pub loss: Buffer<f32>,
    /// Tokens per chunk.
    pub chunk: usize,
}

impl<T: Half> Scratch<T> {
    /// Buffers for `s` in chunks of `chunk` tokens.
    pub fn new(dev: &Device, s: Shape, chunk: usize) -> Result<Self, Error> {
        s.validate(chunk)?;
        Ok(Scratch {
            logits: dev.zeros(chunk * s.v)?,
            valid: dev.zeros(1)?,
            mean: dev.zeros(1)?,
            loss: dev.zeros(s.t)?,
            chunk,
        })
    }

    /// Bytes of device memory these buffers hold.
    pub fn bytes(&self) -> usize {
        self.logits.len() * std::mem::size_of::<T>() + 8 + self.loss.len() * 4
    }
}

/// The device inputs and gradients.
pub struct Tensors<T: tile::Element> {
    /// `t × h`.
    pub x: Buffer<T>,
    /// `v × h`.
    pub w: Buffer<T>,
    /// `t`.
    pub labels: Buffer<i32>,
    /// `t × h`, written.
    pub dx: Buffer<T>,
    /// `v × h`, written.
    pub dw: Buffer<T>,
}

impl<T: Half> Tensors<T> {
    /// `p` uploaded, the gradients zeroed.
    pub fn upload(dev: &Device, p: &Problem<T>, s: Shape) -> Result<Self, Error> {
        Ok(Tensors {
            x: dev.upload(&p.x)?,
            w: dev.upload(&p.w)?,
            labels: dev.upload(&p.labels)?,
            dx: dev.zeros(s.t * s.h)?,
            dw: dev.zeros(s.v * s.h)?,
        })
    }
}

/// The forward and backward pass in chunks of `sc.chunk` tokens (see `kernels.rs`): the mean
/// loss lands in `sc.mean`, the gradients in `d.dx` and `d.dw`. With one chunk of every token it
/// is the unfused form.
pub fn run<T: Half>(
    dev: &Device,
    d: &mut Tensors<T>,
    sc: &mut Scratch<T>,
    s: Shape,
    smoothing: f32,
) -> Result<(), Error> {
    s.validate(sc.chunk)?;
    ce_setup::launch(
        dev,
        Grid::x(1),
        &d.labels,
        &mut sc.valid,
        &mut sc.mean,
        s.t as i32,
        IGNORE,
    )?;
    for start in (0..s.t).step_by(sc.chunk) {
        let rows = sc.chunk.min(s.t - start);
        for part in 0..4 {
            launch_part(dev, d, sc, s, part, (start, rows), smoothing, start > 0)?;
        }
    }
    Ok(())
}

/// The four launches of the first chunk, one at a time: `part` 0 the logits, 1 the loss and
/// gradient (run again over the gradient it wrote: the same work), 2 `dx`, 3 `dW` (adding to
/// it); for timing each part.
pub fn run_part<T: Half>(
    dev: &Device,
    d: &mut Tensors<T>,
    sc: &mut Scratch<T>,
    s: Shape,
    part: usize,
) -> Result<(), Error> {
    s.validate(sc.chunk)?;
    launch_part(dev, d, sc, s, part, (0, sc.chunk), 0.0, true)
}

/// Launch `part` of the chunk of `rows` tokens from token `start` (see [`run_part`]); `dW` is
/// added to where `accumulate`, else written.
#[allow(clippy::too_many_arguments)]
fn launch_part<T: Half>(
    dev: &Device,
    d: &mut Tensors<T>,
    sc: &mut Scratch<T>,
    s: Shape,
    part: usize,
    (start, rows): (usize, usize),
    smoothing: f32,
    accumulate: bool,
) -> Result<(), Error> {
    let (t, h, v) = (s.t as i32, s.h as i32, s.v as i32);
    let (r0, cn) = (start as i32, rows as i32);
    let blocks = |bm: i32, m: usize, bn: i32, n: usize| {
        Grid::x((m.div_ceil(bm as usize) * n.div_ceil(bn as usize)) as u32)
    };
    match part {
        0 => gemm_nt::launch(
            dev,
            |c: &gemm_nt::Config| blocks(c.BM, rows, c.BN, s.v),
            &d.x,
            &d.w,
            &mut sc.logits,
            r0,
            cn,
            t,
            v,
            h,
        ),
        1 => lce_ce::launch(
            dev,
            Grid::x(rows as u32),
            &mut sc.logits,
            &d.labels,
            &sc.valid,
            &mut sc.loss,
            &mut sc.mean,
            r0,
            cn,
            t,
            v,
            IGNORE,
            smoothing,
        ),
        2 => lce_dx::launch(
            dev,
            |c: &lce_dx::Config| blocks(c.BM, rows, c.BN, s.h),
            &sc.logits,
            &d.w,
            &mut d.dx,
            r0,
            cn,
            t,
            v,
            h,
        ),
        _ => gemm_tn::launch(
            dev,
            |c: &gemm_tn::Config| blocks(c.BM, s.v, c.BN, s.h),
            &sc.logits,
            &d.x,
            &mut d.dw,
            r0,
            v,
            h,
            cn,
            t,
            i32::from(accumulate),
        ),
    }
}

/// The valid labels of `labels` (not [`IGNORE`]).
pub fn valid(labels: &[i32]) -> usize {
    labels.iter().filter(|&&y| y != IGNORE).count()
}

/// Token `i`'s logits in f64 (exact products of the inputs).
fn logits_row<T: Half>(p: &Problem<T>, s: Shape, i: usize) -> Vec<f64> {
    let xr: Vec<f64> = p.x[i * s.h..(i + 1) * s.h]
        .iter()
        .map(|v| f64::from(v.to_f32()))
        .collect();
    (0..s.v)
        .map(|j| {
            p.w[j * s.h..(j + 1) * s.h]
                .iter()
                .zip(&xr)
                .map(|(w, x)| f64::from(w.to_f32()) * x)
                .sum()
        })
        .collect()
}

/// Token `i`'s share of the mean loss and its row of `G` (the logits' gradient), in f64.
pub fn token_ref<T: Half>(p: &Problem<T>, s: Shape, i: usize, smoothing: f64) -> (f64, Vec<f64>) {
    let y = p.labels[i];
    if y == IGNORE {
        return (0.0, vec![0.0; s.v]);
    }
    let n = valid(&p.labels) as f64;
    let z = logits_row(p, s, i);
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + z.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
    let mean_z = z.iter().sum::<f64>() / s.v as f64;
    let y = y as usize;
    let loss = ((1.0 - smoothing) * (lse - z[y]) + smoothing * (lse - mean_z)) / n;
    let g = z
        .iter()
        .enumerate()
        .map(|(j, zj)| {
            let hot = if j == y { 1.0 - smoothing } else { 0.0 };
            ((zj - lse).exp() - smoothing / s.v as f64 - hot) / n
        })
        .collect();
    (loss, g)
}

/// Token `i`'s row of `dx = G · W` in f64, from its row of `G`.
pub fn dx_row<T: Half>(p: &Problem<T>, s: Shape, g: &[f64]) -> Vec<f64> {
    let mut out = vec![0f64; s.h];
    for (j, &gj) in g.iter().enumerate() {
        if gj == 0.0 {
            continue;
        }
        for (o, w) in out.iter_mut().zip(&p.w[j * s.h..(j + 1) * s.h]) {
            *o += gj * f64::from(w.to_f32());
        }
    }
    out
}

/// The whole reference in f64: the mean loss, `dx` (`t × h`) and `dW` (`v × h`).
pub fn reference<T: Half>(p: &Problem<T>, s: Shape, smoothing: f64) -> (f64, Vec<f64>, Vec<f64>) {
    let mut loss = 0.0;
    let mut dx = Vec::with_capacity(s.t * s.h);
    let mut dw = vec![0f64; s.v * s.h];
    for i in 0..s.t {
        let (l, g) = token_ref(p, s, i, smoothing);
        loss += l;
        dx.extend(dx_row(p, s, &g));
        let xr = &p.x[i * s.h..(i + 1) * s.h];
        for (j, &gj) in g.iter().enumerate() {
            if gj == 0.0 {
                continue;
            }
            for (o, x) in dw[j * s.h..(j + 1) * s.h].iter_mut().zip(xr) {
                *o += gj * f64::from(x.to_f32());
            }
        }
    }
    (loss, dx, dw)
}
