//! W8A8: `y = (x_q · W_qᵀ) · s_x[row] · s_w[col]` with 8-bit activations quantized per token and
//! 8-bit weights quantized per output channel, the product on the tensor cores in `i32`
//! (`mma.sync…s8`), the two scales applied in the epilogue; and the per-row quantization that
//! makes `x_q` (or quantizes any output `y`: to `i8` or to `f8e4m3`).
//!
//! **Quantization** ([`quantize_rows`]): per row `r`, `a = max |x[r]|`, `scale[r] = a / QMAX`
//! (127 for `i8`, 448 for `f8e4m3`; 1 for a row of zeros) and `q = x · (QMAX / a)` rounded: to
//! the nearest `i8`, halves away from zero, or to the nearest `f8e4m3` (ties to even,
//! saturating). One program per row reads the row twice (the maximum, then the values; the
//! second read comes from the L2).
//!
//! **Product** ([`w8a8`]): `BM × BN` blocks of `y`, `k` in steps of `BK`; `x_q` is `m × k` and
//! `W_q` `n × k` (a linear layer's layout), both K-major as 8-bit tensor-core operands must be,
//! so both go through the `cp.async` ring and `ldmatrix`. The unfused form ([`w8a8_i32`] then
//! [`dequant_i32`]) writes the `i32` product and scales it in a second pass, as
//! `torch._int_mm` followed by the scaling does.
//!
//! **FP8** ([`fp8_scaled`]): the same with `f8e4m3` operands (from [`quantize_rows`], or made
//! elsewhere) multiplied on the tensor cores' FP8 path in `f32` (`wgmma`'s e4m3 form on sm_90a,
//! fed through tensor descriptors by the tensor memory accelerator; their `f16` values on sm_80),
//! with per-tensor or per-row scales in the epilogue ([`Scaling`]): `torch._scaled_mm`'s
//! operation. The unfused form ([`fp8_f32`], then [`dequant_i32`]'s `f32` instance) writes the
//! `f32` product first.

// The FP8 product's autotuned kernels list tiles that only the FP8 tensor cores hold: the build
// leaves them out on sm_80 (which multiplies the `f16` values, in more registers) and, on
// sm_90a, leaves out their unaligned variants (whose operands pass through registers), saying
// so with a `deprecated` warning per instance, which is expected here.
#![allow(deprecated)]

use tile::prelude::*;

use tile::stdlib::grouped_pid;

use super::host::Shape;
use crate::common::Half;

#[tile_kernel(num_warps = 4)]
/// Row `program_id(0)` of `x` (`m × k`) quantized: `q` (`m × k`, type `Q`) and `scale` (`m`); `qmax`
/// is `Q`'s largest value used (127 or 448), `half` what is added toward the sign before the
/// conversion (0.5 for `i8`, whose conversion truncates; 0 for `f8e4m3`, which rounds).
#[allow(clippy::too_many_arguments)]
pub fn quantize_rows(
    x: Ptr<T, { m * k }>,
    q: Ptr<Q, { m * k }>,
    scale: Ptr<f32, m>,
    m: i32,
    k: i32,
    qmax: f32,
    half: f32,
    T: Type<{ [f16, bf16] }>,
    Q: Type<{ [i8, f8e4m3] }>,
    BLOCK: Const<1024>,
) {
    let row = program_id(0);
    let offs = arange(0, BLOCK);
    let base = x + row * k;
    let mut amax = 0.0;
    for k0 in (0..k).step_by(BLOCK) {
        let v = load(base + k0 + offs, k0 + offs < k, 0.0) as f32;
        amax = max(amax, abs(v).max());
    }
    let nonzero = amax > 0.0;
    store(scale + row, select(nonzero, amax / qmax, 1.0));
    let inv = select(nonzero, qmax / amax, 1.0);
    for k0 in (0..k).step_by(BLOCK) {
        let inside = k0 + offs < k;
        let t = (load(base + k0 + offs, inside, 0.0) as f32) * inv;
        let r = t + select(t < 0.0, -half, half);
        store(q + row * k + k0 + offs, r as Q, inside);
    }
}

#[tile_fn]
/// The `i32` product of rows `rows` of `xq` (`m × k`) and rows `cols` of `wq` (`n × k`) over
/// `k0 ∈ [k_lo, k_hi)`: a `BM × BN` tile (`rows` and `cols` that long), in steps of `BK`.
fn product(
    xq: Tile,
    wq: Tile,
    rows: Tile,
    cols: Tile,
    m: i32,
    n: i32,
    k: i32,
    k_lo: i32,
    k_hi: i32,
    BM: Const,
    BN: Const,
    BK: Const,
) -> Tile {
    let ks = arange(0, BK);
    let mut acc = full([BM, BN], 0);
    for k0 in (k_lo..k_hi).step_by(BK) {
        let kk = (k0 + ks).expand_dims(0);
        let x = load(
            xq + rows.expand_dims(1) * k + kk,
            (rows < m).expand_dims(1) & (kk < k),
            0,
        );
        let w = load(
            wq + cols.expand_dims(1) * k + kk,
            (cols < n).expand_dims(1) & (kk < k),
            0,
        );
        acc = dot(x, w.trans(), acc);
    }
    acc
}

#[tile_kernel(num_warps = 8)]
/// Block `(i, j)` of `y = (xq · wqᵀ) · sx[row] · sw[col]` (`m × n`, type `T`).
#[allow(clippy::too_many_arguments)]
pub fn w8a8(
    xq: Ptr<i8, { m * k }>,
    wq: Ptr<i8, { n * k }>,
    sx: Ptr<f32, m>,
    sw: Ptr<f32, n>,
    y: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const<{ [64, 128] }>,
    BN: Const<128>,
    BK: Const<64>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let acc = product(xq, wq, rows, cols, m, n, k, 0, k, BM, BN, BK);
    let a = load(sx + rows, rows < m, 0.0);
    let b = load(sw + cols, cols < n, 0.0);
    let out = (acc as f32) * a.expand_dims(1) * b.expand_dims(0);
    store(
        y + rows.expand_dims(1) * n + cols.expand_dims(0),
        out as T,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

#[tile_kernel(num_warps = 8)]
/// The unfused form's product: block `(i, j)` of `c = xq · wqᵀ` in `i32`.
#[allow(clippy::too_many_arguments)]
pub fn w8a8_i32(
    xq: Ptr<i8, { m * k }>,
    wq: Ptr<i8, { n * k }>,
    c: Ptr<i32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    BM: Const<{ [64, 128] }>,
    BN: Const<128>,
    BK: Const<64>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let acc = product(xq, wq, rows, cols, m, n, k, 0, k, BM, BN, BK);
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

#[tile_kernel(num_warps = 8)]
/// Slice `program_id(2)` (`kslice` values of `k`, a multiple of `BK`) of block `(i, j)` of
/// `c += xq · wqᵀ`, added atomically: integer sums in any order are exact, so the split
/// product is deterministic.
#[allow(clippy::too_many_arguments)]
pub fn w8a8_splitk(
    xq: Ptr<i8, { m * k }>,
    wq: Ptr<i8, { n * k }>,
    c: Ptr<i32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    kslice: i32,
    BM: Const<64>,
    BN: Const<128>,
    BK: Const<64>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let k_lo = program_id(2) * kslice;
    let k_hi = min(k_lo + kslice, k);
    let acc = product(xq, wq, rows, cols, m, n, k, k_lo, k_hi, BM, BN, BK);
    atomic_add(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
        sem = relaxed,
    );
}

#[tile_kernel(num_warps = 4)]
/// The second pass: `y = c · sx[row] · sw[col]` over `BLOCK` elements of row `program_id(1)`
/// per program, `c` the `i32` product (W8A8) or the `f32` one (FP8); with `RESET = 1` it writes
/// the zeros back that the next split product adds to.
#[allow(clippy::too_many_arguments)]
pub fn dequant_i32(
    c: Ptr<C, { m * n }>,
    sx: Ptr<f32, m>,
    sw: Ptr<f32, n>,
    y: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    C: Type<{ [i32, f32] }>,
    T: Type<{ [f16, bf16] }>,
    RESET: Const<{ [0, 1] }>,
    BLOCK: Const<1024>,
) {
    let row = program_id(1);
    let cols = program_id(0) * BLOCK + arange(0, BLOCK);
    let inside = cols < n;
    let v = load(c + row * n + cols, inside, 0) as f32;
    let out = v * load(sx + row) * load(sw + cols, inside, 0.0);
    store(y + row * n + cols, out as T, inside);
    if RESET == 1 {
        store(c + row * n + cols, full([BLOCK], 0) as C, inside);
    }
}

#[tile_fn]
/// Block `(pm, pn)` (grouped order) of the `f32` product `xq · wqᵀ` of 8-bit float matrices
/// (`xq` `m × k`, `wq` `n × k`: both K-major, as `wgmma` reads 8-bit operands), `k` in steps of
/// `BK`, both through tensor descriptors (on sm_90a with aligned arguments the tensor memory
/// accelerator fills the ring): the block and its rows and columns.
fn fp8_product(
    xq: Tile,
    wq: Tile,
    m: i32,
    n: i32,
    k: i32,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const,
) -> (Tile, Tile, Tile) {
    let (pm, pn) = grouped_pid(program_id(0), m, n, BM, BN, GM);
    let x_desc = make_tensor_descriptor(xq, [m, k], [k, 1], [BM, BK]);
    let w_desc = make_tensor_descriptor(wq, [n, k], [k, 1], [BN, BK]);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        acc = dot(
            x_desc.load([pm * BM, k0]),
            w_desc.load([pn * BN, k0]).trans(),
            acc,
        );
    }
    (acc, pm * BM + arange(0, BM), pn * BN + arange(0, BN))
}

#[tile_kernel(autotune(
    configs = [
        { BM = 128, BN = 128, BK = 64, num_warps = 8, num_stages = 3 },
        { BM = 128, BN = 256, BK = 128, num_warps = 8, num_stages = 3 },
        { BM = 128, BN = 256, BK = 128, num_warps = 8, num_stages = 4 },
        { BM = 128, BN = 128, BK = 128, num_warps = 8, num_stages = 4 },
    ],
    key = [m, n, k],
))]
/// FP8 W8A8, `y = (xq · wqᵀ) · sx · sw` with `xq`, `wq` in `f8e4m3` (`torch._scaled_mm`'s
/// operation): the product on the tensor cores' FP8 path in `f32` (`fp8_product`), both
/// scales in the epilogue, `y` (`m × n`) in `T`. Row `i`'s scale is `sx[i · step]` and column
/// `j`'s `sw[j · step]`: `step = 1` scales per row of `xq` (per token) and per row of `wq` (per
/// output channel), `step = 0` per tensor (`sx[0]`, `sw[0]`). Autotuned among four tiles (the
/// first the one sm_80, which multiplies the `f16` values, holds).
#[allow(clippy::too_many_arguments)]
pub fn fp8_scaled(
    xq: Ptr<f8e4m3, { m * k }>,
    wq: Ptr<f8e4m3, { n * k }>,
    sx: Ptr<f32>,
    sw: Ptr<f32>,
    y: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    step: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const<8>,
) {
    let (acc, rows, cols) = fp8_product(xq, wq, m, n, k, BM, BN, BK, GM);
    let a = load(sx + rows * step, rows < m, 0.0);
    let b = load(sw + cols * step, cols < n, 0.0);
    store(
        y + rows.expand_dims(1) * n + cols.expand_dims(0),
        (acc * a.expand_dims(1) * b.expand_dims(0)) as T,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

#[tile_kernel(autotune(
    configs = [
        { BM = 128, BN = 128, BK = 64, num_warps = 8, num_stages = 3 },
        { BM = 128, BN = 256, BK = 128, num_warps = 8, num_stages = 3 },
        { BM = 128, BN = 256, BK = 128, num_warps = 8, num_stages = 4 },
        { BM = 128, BN = 128, BK = 128, num_warps = 8, num_stages = 4 },
    ],
    key = [m, n, k],
))]
/// The unfused form's product: block `(i, j)` of `c = xq · wqᵀ` in `f32` for `f8e4m3` matrices,
/// tuned among [`fp8_scaled`]'s tiles, which [`dequant_i32`]'s `f32` instance then scales.
#[allow(clippy::too_many_arguments)]
pub fn fp8_f32(
    xq: Ptr<f8e4m3, { m * k }>,
    wq: Ptr<f8e4m3, { n * k }>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const<8>,
) {
    let (acc, rows, cols) = fp8_product(xq, wq, m, n, k, BM, BN, BK, GM);
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

/// Every kernel of this module, for the ptxas tests.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = Vec::new();
    v.extend(quantize_rows::KERNELS);
    v.extend(w8a8::KERNELS);
    v.extend(w8a8_i32::KERNELS);
    v.extend(w8a8_splitk::KERNELS);
    v.extend(dequant_i32::KERNELS);
    v.extend(fp8_scaled::KERNELS);
    v.extend(fp8_f32::KERNELS);
    v
}

/// How `y = (xq · wqᵀ) · sx · sw` scales ([`fp8_scaled`]'s `step`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scaling {
    /// One scale per tensor: `sx` and `sw` hold one value each.
    Tensor,
    /// `sx` per row of `xq` (per token), `sw` per row of `wq` (per output channel).
    Row,
}

impl Scaling {
    /// Both, tensor first.
    pub const ALL: [Scaling; 2] = [Scaling::Tensor, Scaling::Row];

    /// Values `sx` and `sw` hold for `m × n` outputs.
    pub fn lens(self, m: usize, n: usize) -> (usize, usize) {
        match self {
            Scaling::Tensor => (1, 1),
            Scaling::Row => (m, n),
        }
    }

    /// Its name in tables: `tensor` or `row`.
    pub fn name(self) -> &'static str {
        match self {
            Scaling::Tensor => "tensor",
            Scaling::Row => "row",
        }
    }
}

/// The grid of a `bm × bn` tile of [`fp8_scaled`] or [`fp8_f32`] for `m × n` outputs: one
/// program per block, on one axis (grouped order).
fn fp8_grid(m: usize, n: usize, bm: i32, bn: i32) -> Grid {
    Grid::x(cdiv(m, bm).saturating_mul(cdiv(n, bn)))
}

/// FP8 W8A8 `y = (xq · wqᵀ) · sx · sw` ([`fp8_scaled`], autotuned per shape): `xq` `m × k`, `wq`
/// `n × k`, `y` `m × n`; `sx`, `sw` as `scaling` says ([`Scaling::lens`]).
#[allow(clippy::too_many_arguments)]
pub fn fp8_fused<T: Half>(
    dev: &Device,
    xq: &Buffer<f8e4m3>,
    sx: &Buffer<f32>,
    wq: &Buffer<f8e4m3>,
    sw: &Buffer<f32>,
    y: &mut Buffer<T>,
    s: Shape,
    scaling: Scaling,
) -> Result<(), Error> {
    let (m, n, k) = (s.m as i32, s.n as i32, s.k as i32);
    let (lx, lw) = scaling.lens(s.m, s.n);
    if sx.len() < lx || sw.len() < lw {
        return Err(Error::Args(format!(
            "fp8_fused: {} scaling of {}×{} outputs takes {lx} and {lw} scales, found {} and {}",
            scaling.name(),
            s.m,
            s.n,
            sx.len(),
            sw.len()
        )));
    }
    let step = i32::from(scaling == Scaling::Row);
    let grid = |cfg: &fp8_scaled::Config| fp8_grid(s.m, s.n, cfg.BM, cfg.BN);
    fp8_scaled::launch(dev, grid, xq, wq, sx, sw, y, m, n, k, step)
}

/// The configuration [`fp8_scaled`] chose for `m × n × k` in this process (its label), if it has
/// met the shape.
pub fn fp8_choice(m: usize, n: usize, k: usize) -> Option<&'static str> {
    let key = [m as i64, n as i64, k as i64];
    fp8_scaled::TUNER
        .decisions()
        .into_iter()
        .find(|d| d.key.starts_with(&key))
        .map(|d| d.label)
}

/// The same as two passes: [`fp8_f32`] into `c` (`m × n`), then [`dequant_i32`]'s `f32`
/// instance (per row and column; a per-tensor scale is passed as vectors of one value, which
/// the caller fills: `sx`, `sw` must hold `m` and `n` values).
#[allow(clippy::too_many_arguments)]
pub fn fp8_unfused<T: Half>(
    dev: &Device,
    xq: &Buffer<f8e4m3>,
    sx: &Buffer<f32>,
    wq: &Buffer<f8e4m3>,
    sw: &Buffer<f32>,
    c: &mut Buffer<f32>,
    y: &mut Buffer<T>,
    s: Shape,
) -> Result<(), Error> {
    let (m, n, k) = (s.m as i32, s.n as i32, s.k as i32);
    let grid = |cfg: &fp8_f32::Config| fp8_grid(s.m, s.n, cfg.BM, cfg.BN);
    fp8_f32::launch(dev, grid, xq, wq, c, m, n, k)?;
    let grid = Grid::xy(s.n.div_ceil(1024) as u32, s.m as u32);
    dequant_i32::launch(dev, grid, c, sx, sw, y, m, n, 0)
}

/// The 8-bit types [`quantize_rows`] makes: the largest value it uses and the rounding offset.
pub trait Quantized: tile::Element {
    /// `Q`'s largest value used (127, 448).
    const QMAX: f32;
    /// Added toward the sign before the conversion (0.5 for `i8`, 0 for `f8e4m3`).
    const HALF: f32;
    /// The value, exactly.
    fn value(self) -> f32;
}

impl Quantized for i8 {
    const QMAX: f32 = 127.0;
    const HALF: f32 = 0.5;
    fn value(self) -> f32 {
        f32::from(self)
    }
}

impl Quantized for f8e4m3 {
    const QMAX: f32 = 448.0;
    const HALF: f32 = 0.0;
    fn value(self) -> f32 {
        self.to_f32()
    }
}

/// Rows of `y` per [`w8a8`] program: 64 for up to 64 tokens (more programs), else 128.
pub fn block_rows(m: usize) -> i32 {
    if m <= 64 {
        64
    } else {
        128
    }
}

/// `x` (`m × k`) quantized per row into `q` and `scale` ([`quantize_rows`]).
pub fn quantize<T: Half, Q: Quantized>(
    dev: &Device,
    x: &Buffer<T>,
    q: &mut Buffer<Q>,
    scale: &mut Buffer<f32>,
    m: usize,
    k: usize,
) -> Result<(), Error> {
    let (mi, ki) = (m as i32, k as i32);
    quantize_rows::launch(
        dev,
        Grid::x(m as u32),
        x,
        q,
        scale,
        mi,
        ki,
        Q::QMAX,
        Q::HALF,
    )
}

/// Programs the product aims for: two per SM of an H100 or H200 (132 SMs).
pub const PROGRAMS: usize = 264;

/// The grid of `BM × 128` blocks of `y` for `s`, with `bm` = [`block_rows`].
fn blocks(s: Shape, bm: i32) -> (u32, u32) {
    (s.m.div_ceil(bm as usize) as u32, s.n.div_ceil(128) as u32)
}

/// Blocks of `y` below which the fused form splits `k`.
pub const SPLIT_BELOW: usize = 48;

/// Slices of `k` the fused form splits `s` into: 1 from [`SPLIT_BELOW`] blocks of `y` on, else
/// about [`PROGRAMS`] programs (each slice a multiple of 64 values). On an H200 the split won
/// 2.3x at 1 × 4096 × 4096 and 1.4x at 64 × 4096 × 4096 (32 blocks), but lost 13–15% at
/// 64 × 14336 × 4096 and 256 × 4096 × 4096 (112 and 64 blocks).
pub fn split(s: Shape) -> usize {
    let (i, j) = blocks(s, block_rows(s.m));
    let programs = (i * j) as usize;
    if programs >= SPLIT_BELOW {
        return 1;
    }
    PROGRAMS
        .div_ceil(programs)
        .clamp(1, s.k.div_ceil(64).max(1))
}

/// `y = (xq · wqᵀ) · sx · sw` (`y` is `m × n`): [`w8a8`], or where the blocks of `y` are too few
/// for the GPU ([`split`] > 1) [`w8a8_splitk`] into `c` then [`dequant_i32`], which leaves `c`
/// zero again. `c` holds `m × n` zeros (`Device::zeros`) before the first call.
#[allow(clippy::too_many_arguments)]
pub fn fused<T: Half>(
    dev: &Device,
    xq: &Buffer<i8>,
    sx: &Buffer<f32>,
    wq: &Buffer<i8>,
    sw: &Buffer<f32>,
    c: &mut Buffer<i32>,
    y: &mut Buffer<T>,
    s: Shape,
) -> Result<(), Error> {
    let (m, n, k) = (s.m as i32, s.n as i32, s.k as i32);
    let sp = split(s);
    if sp == 1 {
        let bm = block_rows(s.m);
        let (i, j) = blocks(s, bm);
        return w8a8::launch(dev, Grid::xy(i, j), xq, wq, sx, sw, y, m, n, k, bm);
    }
    // The split kernel's blocks are 64 rows.
    let (i, j) = blocks(s, 64);
    let kslice = s.k.div_ceil(sp).next_multiple_of(64);
    let grid = Grid::xyz(i, j, s.k.div_ceil(kslice) as u32);
    w8a8_splitk::launch(dev, grid, xq, wq, c, m, n, k, kslice as i32)?;
    let grid = Grid::xy(s.n.div_ceil(1024) as u32, s.m as u32);
    dequant_i32::launch(dev, grid, c, sx, sw, y, m, n, 1)
}

/// The same by [`w8a8_i32`] into `c` (`m × n`), then [`dequant_i32`].
#[allow(clippy::too_many_arguments)]
pub fn unfused<T: Half>(
    dev: &Device,
    xq: &Buffer<i8>,
    sx: &Buffer<f32>,
    wq: &Buffer<i8>,
    sw: &Buffer<f32>,
    c: &mut Buffer<i32>,
    y: &mut Buffer<T>,
    s: Shape,
) -> Result<(), Error> {
    let bm = block_rows(s.m);
    let (i, j) = blocks(s, bm);
    let (m, n, k) = (s.m as i32, s.n as i32, s.k as i32);
    w8a8_i32::launch(dev, Grid::xy(i, j), xq, wq, c, m, n, k, bm)?;
    let grid = Grid::xy(s.n.div_ceil(1024) as u32, s.m as u32);
    dequant_i32::launch(dev, grid, c, sx, sw, y, m, n, 0)
}

/// Checks a row quantization made on a device: `scale = max|x| / QMAX` exactly as the kernel
/// computes it (1 for a row of zeros), and every `q · scale` within half a step of `x` (`i8`) or
/// within `f8e4m3`'s rounding (a relative 2⁻⁴, or 2⁻⁹ · scale near zero). Returns the worst
/// error in units of that bound (≤ 1 passes).
pub fn quantization_error<Q: Quantized>(x: &[f32], q: &[Q], scale: f32) -> f64 {
    let amax = x.iter().fold(0.0f32, |a, v| a.max(v.abs()));
    let want = if amax > 0.0 { amax / Q::QMAX } else { 1.0 };
    if scale != want {
        return f64::INFINITY;
    }
    let mut worst = 0.0f64;
    for (&v, &qv) in x.iter().zip(q) {
        let back = f64::from(qv.value()) * f64::from(scale);
        let err = (back - f64::from(v)).abs();
        let bound = if Q::HALF > 0.0 {
            // Half a step, and the rounding of `x · inv` in f32.
            0.5 * f64::from(scale) * (1.0 + 1e-5)
        } else {
            f64::from(v).abs() / 16.0 * (1.0 + 1e-5) + 2f64.powi(-10) * f64::from(scale)
        };
        worst = worst.max(err / bound);
    }
    worst
}
