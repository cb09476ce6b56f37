//! Host side of the `conv_bn_relu` example: a layer's random parameters (a trained convolution
//! and its BatchNorm statistics), the folding of BatchNorm into the filter and bias, the float64
//! reference, and the fused and unfused forms with their launch plans.

use tile::prelude::*;

use super::kernels::{batch_norm, conv2d, relu};
use crate::common::{Half, Rng};

/// A convolution layer's geometry: NHWC input `n × h × w × cin`, `cout` filters of
/// `fh × fw × cin`, stride and zero padding the same along both image axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Images.
    pub n: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Input channels.
    pub cin: usize,
    /// Output channels.
    pub cout: usize,
    /// Filter height.
    pub fh: usize,
    /// Filter width.
    pub fw: usize,
    /// Stride.
    pub stride: usize,
    /// Zero padding on each side.
    pub pad: usize,
}

impl Shape {
    /// A square layer as ResNet's are written: `n` images of `hw × hw × cin`, `cout` filters
    /// `f × f`, padding `f / 2`.
    pub const fn square(
        n: usize,
        hw: usize,
        cin: usize,
        cout: usize,
        f: usize,
        stride: usize,
    ) -> Shape {
        Shape {
            n,
            h: hw,
            w: hw,
            cin,
            cout,
            fh: f,
            fw: f,
            stride,
            pad: f / 2,
        }
    }

    /// Output height (0 when the filter does not fit).
    pub fn p(self) -> usize {
        (self.h + 2 * self.pad)
            .checked_sub(self.fh)
            .map_or(0, |v| v / self.stride.max(1) + 1)
    }

    /// Output width (0 when the filter does not fit).
    pub fn q(self) -> usize {
        (self.w + 2 * self.pad)
            .checked_sub(self.fw)
            .map_or(0, |v| v / self.stride.max(1) + 1)
    }

    /// Output pixels, the GEMM's `M`.
    pub fn m(self) -> usize {
        self.n * self.p() * self.q()
    }

    /// Elements of `x`.
    pub fn x_len(self) -> usize {
        self.n * self.h * self.w * self.cin
    }

    /// Elements of the filter.
    pub fn w_len(self) -> usize {
        self.fh * self.fw * self.cin * self.cout
    }

    /// Elements of `y`.
    pub fn y_len(self) -> usize {
        self.m() * self.cout
    }

    /// Multiply-adds times two.
    pub fn flops(self) -> f64 {
        2.0 * self.m() as f64 * self.cout as f64 * (self.fh * self.fw * self.cin) as f64
    }

    /// `NxHxW CinxCout FxF /stride`, for tables.
    pub fn label(self) -> String {
        format!(
            "{}x{}x{} {}->{} {}x{}{}",
            self.n,
            self.h,
            self.w,
            self.cin,
            self.cout,
            self.fh,
            self.fw,
            if self.stride > 1 {
                format!(" /{}", self.stride)
            } else {
                String::new()
            }
        )
    }

    /// `Err` unless the layer is one the kernels take: positive sizes and stride, a filter that
    /// fits the padded image, and every index within `i32` (the kernels' offsets).
    pub fn validate(self) -> Result<(), Error> {
        let bad = |why: String| Err(Error::Args(format!("convolution {self:?}: {why}")));
        if [
            self.n,
            self.h,
            self.w,
            self.cin,
            self.cout,
            self.fh,
            self.fw,
            self.stride,
        ]
        .contains(&0)
        {
            return bad("sizes and stride must be positive".into());
        }
        if self.p() == 0 || self.q() == 0 {
            return bad("the filter is larger than the padded image".into());
        }
        let big = [
            self.x_len(),
            self.w_len(),
            self.y_len(),
            self.h + 2 * self.pad,
            self.w + 2 * self.pad,
        ];
        if big.iter().any(|&v| v > i32::MAX as usize) {
            return bad("an index does not fit i32".into());
        }
        Ok(())
    }
}

/// A trained layer on the host, in f32: the convolution (`cout × cin × fh × fw`, PyTorch's
/// order) and its bias, and BatchNorm's affine parameters and running statistics.
pub struct Layer {
    /// Filters, `[cout, cin, fh, fw]`.
    pub weight: Vec<f32>,
    /// The convolution's bias.
    pub bias: Vec<f32>,
    /// BatchNorm's scale `γ`.
    pub gamma: Vec<f32>,
    /// BatchNorm's shift `β`.
    pub beta: Vec<f32>,
    /// Running mean `μ`.
    pub mean: Vec<f32>,
    /// Running variance (`σ² − eps`).
    pub var: Vec<f32>,
    /// BatchNorm's `eps`.
    pub eps: f32,
}

/// Random parameters for `s`, seeded: filters uniform in `±1/√(cin·fh·fw)` (outputs of order
/// 1 for inputs in `[-1, 1)`), bias in `±0.1`, `γ` in `[0.5, 1.5)`, `β` in `±0.5`, `μ` in
/// `±0.2`, variance in `[0.5, 2)`, `eps` 1e-5.
pub fn layer(s: Shape, seed: u64) -> Layer {
    let mut r = Rng::new(seed);
    let bound = 1.0 / ((s.cin * s.fh * s.fw) as f32).sqrt();
    Layer {
        weight: r.vec(s.w_len(), -bound, bound),
        bias: r.vec(s.cout, -0.1, 0.1),
        gamma: r.vec(s.cout, 0.5, 1.5),
        beta: r.vec(s.cout, -0.5, 0.5),
        mean: r.vec(s.cout, -0.2, 0.2),
        var: r.vec(s.cout, 0.5, 2.0),
        eps: 1e-5,
    }
}

impl Layer {
    /// `γ/σ` of output channel `co`, in f64.
    fn scale(&self, co: usize) -> f64 {
        f64::from(self.gamma[co]) / (f64::from(self.var[co]) + f64::from(self.eps)).sqrt()
    }

    /// Filter element `(co, ci, r, c)`.
    fn at(&self, s: Shape, co: usize, ci: usize, r: usize, c: usize) -> f32 {
        self.weight[((co * s.cin + ci) * s.fh + r) * s.fw + c]
    }
}

/// The filters laid out `[fh, fw, cin, cout]` (the implicit GEMM's `K × N` operand), each
/// multiplied by `mult(co)` in f64 and rounded once to `T`.
fn filter_rsck<T: Half>(l: &Layer, s: Shape, mult: impl Fn(usize) -> f64) -> Vec<T> {
    let mut out = Vec::with_capacity(s.w_len());
    for r in 0..s.fh {
        for c in 0..s.fw {
            for ci in 0..s.cin {
                for co in 0..s.cout {
                    out.push(T::from_f32(
                        (f64::from(l.at(s, co, ci, r, c)) * mult(co)) as f32,
                    ));
                }
            }
        }
    }
    out
}

/// BatchNorm folded into the convolution, as the chapter derives it: `w' = γ·w/σ`,
/// `b' = γ·(b − μ)/σ + β` (computed in f64; `w'` rounded once to `T`, `b'` to f32).
pub fn fold<T: Half>(l: &Layer, s: Shape) -> (Vec<T>, Vec<f32>) {
    let w = filter_rsck(l, s, |co| l.scale(co));
    let b = (0..s.cout)
        .map(|co| {
            (l.scale(co) * (f64::from(l.bias[co]) - f64::from(l.mean[co])) + f64::from(l.beta[co]))
                as f32
        })
        .collect();
    (w, b)
}

/// `ReLU(BN(conv(x) + b))` in f64 at each `(pixel, channel)` of `at` (pixels in NPQ order), from
/// the trained f32 parameters (not the folded ones).
pub fn reference<T: Half>(x: &[T], l: &Layer, s: Shape, at: &[(usize, usize)]) -> Vec<f64> {
    let (p, q) = (s.p(), s.q());
    at.iter()
        .map(|&(pix, co)| {
            let (img, oh, ow) = (pix / (p * q), pix % (p * q) / q, pix % q);
            let mut acc = f64::from(l.bias[co]);
            for r in 0..s.fh {
                for c in 0..s.fw {
                    let ih = (oh * s.stride + r) as isize - s.pad as isize;
                    let iw = (ow * s.stride + c) as isize - s.pad as isize;
                    if ih < 0 || iw < 0 || ih >= s.h as isize || iw >= s.w as isize {
                        continue;
                    }
                    let row = ((img * s.h + ih as usize) * s.w + iw as usize) * s.cin;
                    for ci in 0..s.cin {
                        acc += f64::from(x[row + ci].to_f32()) * f64::from(l.at(s, co, ci, r, c));
                    }
                }
            }
            let bn = (acc - f64::from(l.mean[co])) * l.scale(co) + f64::from(l.beta[co]);
            bn.max(0.0)
        })
        .collect()
}

/// A layer's parameters on a device: the folded filter and bias for the fused form, the trained
/// ones (the filter in the same `[fh, fw, cin, cout]` layout) and BatchNorm's for the unfused.
pub struct DeviceLayer<T: tile::Element> {
    /// `w'`, `[fh, fw, cin, cout]`.
    pub folded_w: Buffer<T>,
    /// `b'`.
    pub folded_b: Buffer<f32>,
    /// `w`, `[fh, fw, cin, cout]`.
    pub w: Buffer<T>,
    /// The convolution's bias.
    pub b: Buffer<f32>,
    /// BatchNorm's `μ`, variance, `γ`, `β`.
    pub bn: [Buffer<f32>; 4],
    /// BatchNorm's `eps`.
    pub eps: f32,
}

/// Folds and uploads `l`.
pub fn upload<T: Half>(dev: &Device, l: &Layer, s: Shape) -> Result<DeviceLayer<T>, Error> {
    let (fw, fb) = fold::<T>(l, s);
    Ok(DeviceLayer {
        folded_w: dev.upload(&fw)?,
        folded_b: dev.upload(&fb)?,
        w: dev.upload(&filter_rsck::<T>(l, s, |_| 1.0))?,
        b: dev.upload(&l.bias)?,
        bn: [
            dev.upload(&l.mean)?,
            dev.upload(&l.var)?,
            dev.upload(&l.gamma)?,
            dev.upload(&l.beta)?,
        ],
        eps: l.eps,
    })
}

/// Output channels per program: 64 for layers of at most 64, else 128.
pub fn block_n(s: Shape) -> usize {
    if s.cout <= 64 {
        64
    } else {
        128
    }
}

/// [`conv2d`] of `x` with filter `w` and bias `b` into `y`, through ReLU when `relu`.
fn conv<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    w: &Buffer<T>,
    b: &Buffer<f32>,
    y: &mut Buffer<T>,
    s: Shape,
    relu: bool,
) -> Result<(), Error> {
    s.validate()?;
    let bn = block_n(s);
    let programs = s.m().div_ceil(128) * s.cout.div_ceil(bn);
    let i = |v: usize| v as i32;
    conv2d::launch(
        dev,
        Grid::x(programs as u32),
        x,
        w,
        b,
        y,
        i(s.n),
        i(s.h),
        i(s.w),
        i(s.cin),
        i(s.cout),
        i(s.fh),
        i(s.fw),
        i(s.stride),
        i(s.pad),
        i(s.m()),
        i(s.p()),
        i(s.q()),
        i32::from(relu),
        bn as i32,
    )
}

/// The fused form: one [`conv2d`] with the folded filter and bias and the ReLU in its epilogue.
pub fn fused<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    l: &DeviceLayer<T>,
    y: &mut Buffer<T>,
    s: Shape,
) -> Result<(), Error> {
    conv(dev, x, &l.folded_w, &l.folded_b, y, s, true)
}

/// The unfused form, node by node: [`conv2d`] with the trained filter and bias, then
/// [`batch_norm`] and [`relu`] in place on `y`.
pub fn unfused<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    l: &DeviceLayer<T>,
    y: &mut Buffer<T>,
    s: Shape,
) -> Result<(), Error> {
    conv(dev, x, &l.w, &l.b, y, s, false)?;
    let (m, c) = (s.m(), s.cout);
    let [mean, var, gamma, beta] = &l.bn;
    let grid = Grid::xy(m.div_ceil(32) as u32, c.div_ceil(64) as u32);
    batch_norm::launch(
        dev, grid, y, mean, var, gamma, beta, m as i32, c as i32, l.eps,
    )?;
    let len = s.y_len();
    relu::launch(dev, Grid::x(len.div_ceil(2048) as u32), y, len as i32)
}
