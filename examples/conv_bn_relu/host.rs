//! Host side of the `conv_bn_relu` example: a layer's random parameters (a trained convolution
//! and its BatchNorm statistics), the folding of BatchNorm into the filter and bias, the float64
//! reference, and the fused and unfused forms with their launch plans.

use tile::prelude::*;

use super::kernels::{batch_norm, conv2d, conv2d_any, conv2d_split, conv_split_sum, relu};
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

/// A tile the tuner chooses among: `BM × BN`, the pipeline's stages, and whether the loop
/// steps are split (split-K: [`conv2d_split`], then [`conv_split_sum`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvTile {
    /// Output pixels per program.
    pub bm: usize,
    /// Output channels per program.
    pub bn: usize,
    /// Shared-memory stages of the `cp.async` ring on sm_90a: 4 (the compiler's choice), or 3
    /// (`num_stages = 2`, which a `wgmma` loop with a group in flight gets one stage more than;
    /// a smaller ring lets more programs share an SM).
    pub stages: usize,
    /// Split-K.
    pub split: bool,
}

const fn tile(bm: usize, bn: usize, stages: usize, split: bool) -> ConvTile {
    ConvTile {
        bm,
        bn,
        stages,
        split,
    }
}

/// The tiles, in the tuner's order: [`conv2d`]'s seven configurations, then
/// [`conv2d_split`]'s two (each runs as its unsplit twin where the layer gets one slice).
pub const CONV_TILES: [ConvTile; 9] = [
    tile(128, 64, 4, false),
    tile(128, 64, 3, false),
    tile(128, 128, 4, false),
    tile(128, 128, 3, false),
    tile(64, 128, 4, false),
    tile(128, 256, 4, false),
    tile(64, 256, 4, false),
    tile(128, 128, 4, true),
    tile(64, 128, 4, true),
];

/// [`conv2d`]'s configurations: the first `SPLIT_FROM` tiles; [`conv2d_split`]'s the rest.
pub const SPLIT_FROM: usize = 7;

static CONV_CONFIGS: [tile::autotune::ConfigDesc; 9] = [
    tile::autotune::ConfigDesc::new("128 x 64, 4 warps"),
    tile::autotune::ConfigDesc::new("128 x 64, 4 warps, 3 stages"),
    tile::autotune::ConfigDesc::new("128 x 128, 4 warps"),
    tile::autotune::ConfigDesc::new("128 x 128, 4 warps, 3 stages"),
    tile::autotune::ConfigDesc::new("64 x 128, 4 warps"),
    tile::autotune::ConfigDesc::new("128 x 256, 8 warps"),
    tile::autotune::ConfigDesc::new("64 x 256, 4 warps"),
    tile::autotune::ConfigDesc::new("128 x 128, 4 warps, split-K"),
    tile::autotune::ConfigDesc::new("64 x 128, 4 warps, split-K"),
];

/// Programs split-K aims for: two per SM of an H100 (132).
pub const PROGRAMS: usize = 264;

/// Loop steps (64 channels of one filter tap each) that a split keeps at least.
const MIN_STEPS: usize = 8;

/// The split count of tile `t` for `m` output pixels, `cout` channels and `steps` loop steps:
/// enough slices for [`PROGRAMS`] programs, each of at least [`MIN_STEPS`] steps (1: no split).
fn splits_for(t: ConvTile, m: usize, cout: usize, steps: usize) -> usize {
    if !t.split {
        return 1;
    }
    let blocks = m.div_ceil(t.bm) * cout.div_ceil(t.bn);
    PROGRAMS
        .div_ceil(blocks.max(1))
        .min(steps / MIN_STEPS)
        .max(1)
}

/// [`splits_for`] of a layer.
fn splits(t: ConvTile, s: Shape) -> usize {
    splits_for(t, s.m(), s.cout, s.fh * s.fw * s.cin.div_ceil(64))
}

/// f32 elements of the split-K workspace that `s` may use (at least 1).
pub fn workspace_len(s: Shape) -> usize {
    if !aligned(s) {
        return 1;
    }
    CONV_TILES
        .iter()
        .map(|&t| match splits(t, s) {
            1 => 1,
            k => k * s.m() * s.cout,
        })
        .max()
        .unwrap_or(1)
}

/// The tiles worth timing for a key `[m, cin, cout, fh, fw, stride, dtype]`: those whose block
/// of output channels is at most `cout` rounded up to 64 (a wider block computes zeros), and
/// the split-K ones only where they split.
fn tiles_that_fit(key: &[i64]) -> Vec<usize> {
    let at = |i: usize| key.get(i).copied().unwrap_or(1).max(1) as usize;
    let (m, cout, steps) = (at(0), at(2), at(3) * at(4) * at(1).div_ceil(64));
    (0..CONV_TILES.len())
        .filter(|&i| {
            let t = CONV_TILES[i];
            i == 0
                || (t.bn <= cout.next_multiple_of(64)
                    && (!t.split || splits_for(t, m, cout, steps) > 1))
        })
        .collect()
}

/// The convolution's tuner: one decision per layer geometry, element type and device (in
/// memory and in the on-disk cache, as a tuned kernel's). Without timing (the interpreter,
/// deterministic tuning) it takes the first tile, 128 × 64.
pub static TUNER: tile::autotune::Autotuner = tile::autotune::Autotuner::new(
    "conv2d",
    tile::autotune::source_hash(include_str!("kernels.rs")),
    &CONV_CONFIGS,
)
.with_prune(tiles_that_fit);

/// Whether [`conv2d`]'s aligned specialization takes `s`: channel counts that are multiples
/// of 8 (16-byte rows; the device's buffers are aligned).
pub fn aligned(s: Shape) -> bool {
    s.cin % 8 == 0 && s.cout % 8 == 0
}

/// The convolution of `x` with filter `w` and bias `b` into `y`, through ReLU when `relu`, on
/// tile `t` of [`CONV_TILES`] ([`conv2d_any`]'s one tile where `s` is not [`aligned`]); `ws`
/// is the split-K workspace, at least [`workspace_len`] long.
#[allow(clippy::too_many_arguments)]
fn conv_with<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    w: &Buffer<T>,
    b: &Buffer<f32>,
    y: &mut Buffer<T>,
    ws: &mut Buffer<f32>,
    s: Shape,
    relu: bool,
    t: usize,
) -> Result<(), Error> {
    let ct = CONV_TILES[t];
    if ct.split && splits(ct, s) == 1 {
        // A split tile that does not split runs as its unsplit twin.
        let twin = CONV_TILES
            .iter()
            .position(|&u| u == ConvTile { split: false, ..ct });
        return conv_with(dev, x, w, b, y, ws, s, relu, twin.unwrap_or(0));
    }
    let blocks = (s.m().div_ceil(ct.bm) * s.cout.div_ceil(ct.bn)) as u32;
    // `validate` checked that every size fits i32.
    let [n, h, wd, cin, cout, fh, fw] =
        [s.n, s.h, s.w, s.cin, s.cout, s.fh, s.fw].map(|v| v as i32);
    let [st, pad, m, p, q] = [s.stride, s.pad, s.m(), s.p(), s.q()].map(|v| v as i32);
    let r = i32::from(relu);
    if !aligned(s) {
        let grid = Grid::x((s.m().div_ceil(128) * s.cout.div_ceil(64)) as u32);
        return conv2d_any::launch(
            dev, grid, x, w, b, y, n, h, wd, cin, cout, fh, fw, st, pad, m, p, q, r,
        );
    }
    if t < SPLIT_FROM {
        let grid = Grid::x(blocks);
        return conv2d::launch_config(
            dev, t, grid, x, w, b, y, n, h, wd, cin, cout, fh, fw, st, pad, m, p, q, r,
        );
    }
    let k = splits(ct, s);
    let sp = k as i32;
    let grid = Grid::xy(blocks, k as u32);
    let c = t - SPLIT_FROM;
    conv2d_split::launch_config(
        dev, c, grid, x, w, ws, n, h, wd, cin, cout, fh, fw, st, pad, m, p, q, sp,
    )?;
    let mc = s.y_len();
    let grid = Grid::x(mc.div_ceil(1024) as u32);
    conv_split_sum::launch(dev, grid, ws, b, y, mc as i32, cout, sp, r)
}

/// [`TUNER`]'s key for a layer: `[m, cin, cout, fh, fw, stride, dtype]`.
fn tune_key<T: tile::Element>(s: Shape) -> [i64; 7] {
    let v = [
        s.m(),
        s.cin,
        s.cout,
        s.fh,
        s.fw,
        s.stride,
        T::DTYPE as usize,
    ];
    v.map(|x| x as i64)
}

/// The label of the tile [`TUNER`] chose for `s` on this process's last decision, if any.
pub fn chosen_tile<T: tile::Element>(s: Shape) -> Option<&'static str> {
    let key = tune_key::<T>(s);
    TUNER
        .decisions()
        .into_iter()
        .rev()
        .find(|d| d.key == key)
        .map(|d| d.label)
}

/// The convolution of `x` with filter `w` and bias `b` into `y`, through ReLU when `relu`, on
/// the tile [`TUNER`] picks for the layer (timing the candidates at its first launch), or on
/// [`conv2d_any`] where the layer is not [`aligned`].
#[allow(clippy::too_many_arguments)]
fn conv<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    w: &Buffer<T>,
    b: &Buffer<f32>,
    y: &mut Buffer<T>,
    ws: &mut Buffer<f32>,
    s: Shape,
    relu: bool,
) -> Result<(), Error> {
    check(ws, s)?;
    if !aligned(s) {
        return conv_with(dev, x, w, b, y, ws, s, relu, 0);
    }
    let t = TUNER.choose(dev, &tune_key::<T>(s), |t| {
        tile::autotune::time_ms(dev, || conv_with(dev, x, w, b, y, ws, s, relu, t))
    })?;
    conv_with(dev, x, w, b, y, ws, s, relu, t)
}

/// `Err` unless the kernels take `s` and `ws` is long enough for it.
fn check(ws: &Buffer<f32>, s: Shape) -> Result<(), Error> {
    s.validate()?;
    if ws.len() < workspace_len(s) {
        return Err(Error::Args(format!(
            "the split-K workspace holds {} f32, and {} needs {}",
            ws.len(),
            s.label(),
            workspace_len(s)
        )));
    }
    Ok(())
}

/// [`fused`] on tile `t` of [`CONV_TILES`] (or [`conv2d_any`] where `s` is not [`aligned`]),
/// without the tuner: how the tests run every tile on the interpreter (which would always take
/// the first).
pub fn fused_on_tile<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    l: &DeviceLayer<T>,
    y: &mut Buffer<T>,
    ws: &mut Buffer<f32>,
    s: Shape,
    t: usize,
) -> Result<(), Error> {
    check(ws, s)?;
    if t >= CONV_TILES.len() {
        return Err(Error::Args(format!(
            "no tile {t}: there are {}",
            CONV_TILES.len()
        )));
    }
    conv_with(dev, x, &l.folded_w, &l.folded_b, y, ws, s, true, t)
}

/// The fused form: one convolution with the folded filter and bias and the ReLU in its
/// epilogue (for split-K tiles, in the sum of the slices). `ws`: at least [`workspace_len`].
pub fn fused<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    l: &DeviceLayer<T>,
    y: &mut Buffer<T>,
    ws: &mut Buffer<f32>,
    s: Shape,
) -> Result<(), Error> {
    conv(dev, x, &l.folded_w, &l.folded_b, y, ws, s, true)
}

/// The unfused form, node by node: the convolution with the trained filter and bias, then
/// [`batch_norm`] and [`relu`] in place on `y`.
pub fn unfused<T: Half>(
    dev: &Device,
    x: &Buffer<T>,
    l: &DeviceLayer<T>,
    y: &mut Buffer<T>,
    ws: &mut Buffer<f32>,
    s: Shape,
) -> Result<(), Error> {
    conv(dev, x, &l.w, &l.b, y, ws, s, false)?;
    let (m, c) = (s.m(), s.cout);
    let [mean, var, gamma, beta] = &l.bn;
    let grid = Grid::xy(m.div_ceil(32) as u32, c.div_ceil(64) as u32);
    batch_norm::launch(
        dev, grid, y, mean, var, gamma, beta, m as i32, c as i32, l.eps,
    )?;
    let len = s.y_len();
    relu::launch(dev, Grid::x(len.div_ceil(2048) as u32), y, len as i32)
}
