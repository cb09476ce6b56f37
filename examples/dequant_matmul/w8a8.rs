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

use tile::prelude::*;

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
/// per program; with `RESET = 1` it writes the zeros back that the next split product adds
/// to.
#[allow(clippy::too_many_arguments)]
pub fn dequant_i32(
    c: Ptr<i32, { m * n }>,
    sx: Ptr<f32, m>,
    sw: Ptr<f32, n>,
    y: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
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
        store(c + row * n + cols, full([BLOCK], 0), inside);
    }
}

/// Every kernel of this module, for the ptxas tests.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = Vec::new();
    v.extend(quantize_rows::KERNELS);
    v.extend(w8a8::KERNELS);
    v.extend(w8a8_i32::KERNELS);
    v.extend(w8a8_splitk::KERNELS);
    v.extend(dequant_i32::KERNELS);
    v
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
