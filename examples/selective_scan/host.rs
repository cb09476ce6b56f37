//! The host side of `selective_scan`: seeded inputs in the ranges of a trained Mamba layer, their
//! upload, and the float64 reference (a sequential loop over the sequence, per channel).

use super::kernels::{Inputs, Shape, N_STATE};
use crate::common::Rng;
use tile::prelude::*;
use tile::Element;

/// A layer's inputs on the host, as f32 (the values the storage type holds exactly).
pub struct Host {
    /// `[batch, channels, len]`.
    pub u: Vec<f32>,
    /// `[batch, channels, len]`, before the softplus.
    pub delta: Vec<f32>,
    /// `[batch, channels, len]`.
    pub z: Vec<f32>,
    /// `[channels, 16]`.
    pub a: Vec<f32>,
    /// `[batch, 16, len]`.
    pub b: Vec<f32>,
    /// `[batch, 16, len]`.
    pub c: Vec<f32>,
    /// `[channels]`.
    pub d: Vec<f32>,
    /// `[channels]`.
    pub delta_bias: Vec<f32>,
}

/// A storage type of the sequences: rounding from f32 and back.
pub trait Storage: Element + Copy {
    /// `x` rounded to the type.
    fn from_f32(x: f32) -> Self;
    /// The value as f32 (exact).
    fn to_f32(self) -> f32;
}

impl Storage for f32 {
    fn from_f32(x: f32) -> Self {
        x
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Storage for bf16 {
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
}

/// Seeded inputs for `s`, already rounded to `T`: `u`, `B`, `C` and the gate uniform in
/// [-1, 1), `delta` in [-1, 1) before a bias that puts `Δ` near Mamba's initial range
/// (`softplus⁻¹` of [0.001, 0.1)), `A = −(n + 1)·[0.5, 1.5)` (S4D-real's `−(n + 1)`,
/// perturbed), `D` in [0.5, 1.5).
pub fn host<T: Storage>(s: Shape, seed: u64) -> Host {
    let mut r = Rng::new(seed);
    let round =
        |v: Vec<f32>| -> Vec<f32> { v.into_iter().map(|x| T::from_f32(x).to_f32()).collect() };
    let ch = s.channels as usize;
    let u = round(r.vec(s.seq(), -1.0, 1.0));
    let delta = round(r.vec(s.seq(), -1.0, 1.0));
    let z = round(r.vec(s.seq(), -1.0, 1.0));
    let b = round(r.vec(s.bc(), -1.0, 1.0));
    let c = round(r.vec(s.bc(), -1.0, 1.0));
    let a = (0..ch * N_STATE as usize)
        .map(|i| -((i % N_STATE as usize) as f32 + 1.0) * r.uniform(0.5, 1.5))
        .collect();
    let d = r.vec(ch, 0.5, 1.5);
    let delta_bias = (0..ch)
        .map(|_| {
            let dt = r.uniform(0.001, 0.1);
            (dt.exp() - 1.0).ln()
        })
        .collect();
    Host {
        u,
        delta,
        z,
        a,
        b,
        c,
        d,
        delta_bias,
    }
}

/// `h`'s inputs on `dev`.
pub fn upload<T: Storage>(dev: &Device, h: &Host) -> Result<Inputs<T>, Error> {
    let conv = |v: &[f32]| -> Vec<T> { v.iter().map(|&x| T::from_f32(x)).collect() };
    Ok(Inputs {
        u: dev.upload(&conv(&h.u))?,
        delta: dev.upload(&conv(&h.delta))?,
        z: dev.upload(&conv(&h.z))?,
        a: dev.upload(&h.a)?,
        b: dev.upload(&conv(&h.b))?,
        c: dev.upload(&conv(&h.c))?,
        d: dev.upload(&h.d)?,
        delta_bias: dev.upload(&h.delta_bias)?,
    })
}

/// The channels a check compares: every `(batch, channel)` of a small shape, 48 spread over a
/// large one (the first and last included).
pub fn checked_channels(s: Shape) -> Vec<(usize, usize)> {
    let (nb, nc) = (s.batch as usize, s.channels as usize);
    if nb * nc <= 256 {
        return (0..nb).flat_map(|b| (0..nc).map(move |c| (b, c))).collect();
    }
    let mut r = Rng::new(nb as u64 * 31 + nc as u64);
    let mut out = vec![(0, 0), (nb - 1, nc - 1)];
    out.extend((0..46).map(|_| {
        let b = (r.uniform(0.0, 1.0) * nb as f32) as usize;
        let c = (r.uniform(0.0, 1.0) * nc as f32) as usize;
        (b.min(nb - 1), c.min(nc - 1))
    }));
    out
}

/// `softplus` in f64 with PyTorch's threshold.
fn softplus(x: f64) -> f64 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// The output `y` of the listed channels (each a whole sequence, in the order given), in f64:
/// the recurrence run step by step, as Mamba's `selective_scan_ref` loops.
pub fn reference(s: Shape, h: &Host, channels: &[(usize, usize)]) -> Vec<f64> {
    let (nc, len, ns) = (s.channels as usize, s.len as usize, N_STATE as usize);
    let mut out = Vec::with_capacity(channels.len() * len);
    for &(b, d) in channels {
        let row = (b * nc + d) * len;
        let mut state = [0.0f64; 16];
        for t in 0..len {
            let x = f64::from(h.u[row + t]);
            let dt = softplus(f64::from(h.delta[row + t]) + f64::from(h.delta_bias[d]));
            let mut y = f64::from(h.d[d]) * x;
            for (n, st) in state.iter_mut().enumerate().take(ns) {
                let bc = (b * ns + n) * len + t;
                *st = (dt * f64::from(h.a[d * ns + n])).exp() * *st + dt * f64::from(h.b[bc]) * x;
                y += f64::from(h.c[bc]) * *st;
            }
            let g = f64::from(h.z[row + t]);
            out.push(y * g / (1.0 + (-g).exp()));
        }
    }
    out
}

/// The listed channels' outputs out of a downloaded `y`, as f32.
pub fn gather<T: Storage>(s: Shape, y: &[T], channels: &[(usize, usize)]) -> Vec<f32> {
    let (nc, len) = (s.channels as usize, s.len as usize);
    channels
        .iter()
        .flat_map(|&(b, d)| {
            let row = (b * nc + d) * len;
            y[row..row + len].iter().map(|v| v.to_f32())
        })
        .collect()
}
