//! Mamba's selective scan (forward), as `mamba_ssm`'s `selective_scan_fn(u, delta, A, B, C, D,
//! z, delta_bias, delta_softplus=True)` computes it, for one layer:
//!
//! ```text
//! Δ[b,d,t] = softplus(delta[b,d,t] + delta_bias[d])
//! h[b,d,n,t] = exp(Δ[b,d,t]·A[d,n])·h[b,d,n,t−1] + Δ[b,d,t]·B[b,n,t]·u[b,d,t]   (h[…, −1] = 0)
//! y[b,d,t] = (Σₙ C[b,n,t]·h[b,d,n,t] + D[d]·u[b,d,t]) · silu(z[b,d,t])
//! ```
//!
//! Layout as Mamba's: `u`, `delta`, `z` and `y` are `[batch, channels, len]` (the sequence
//! contiguous), `B` and `C` are `[batch, 16, len]`, `A` is `[channels, 16]` (f32), `D` and
//! `delta_bias` are `[channels]` (f32); the state size is 16. Arithmetic is f32; `T` is the
//! storage type of the sequences (f32 or bf16).
//!
//! - **Fused** ([`ssm_fused`], chunk lengths in [`CONFIGS`]): one program per (block of `BD`
//!   channels, batch element) walks
//!   the sequence in chunks of `BL`. Per chunk it loads `u`, `delta` and `z` once, and for each
//!   of the 16 states the rows `B[n]` and `C[n]` (shared by the block's channels), forms
//!   `exp(Δ·A)` and `Δ·B·u`, runs the recurrence along the chunk with `linear_recurrence` (one
//!   `associative_scan` of the pairs), adds the state carried in from the previous chunk
//!   (`p·h₀`), accumulates `C·h` into the output and keeps the chunk's last state. The states
//!   never leave registers; `y` is written once.
//! - **Unfused** (what a user without the fused kernel writes, as PyTorch's reference
//!   materializes it): [`ssm_discretize`] writes `exp(Δ·A)` and `Δ·B·u` as `[batch, channels,
//!   16, len]` f32, [`ssm_states`] scans them into the states `h` (same shape), [`ssm_output`]
//!   contracts `h` with `C` and applies the skip and the gate.

use tile::prelude::*;
use tile::stdlib::{linear_recurrence, silu, softplus};
use tile::Element;

/// The state size (Mamba's `d_state`).
pub const N_STATE: i32 = 16;

#[tile_kernel(num_warps = 4)]
/// The fused selective scan: program (block of `BD` channels, batch element), chunks of `BL`
/// positions. (8 warps with chunks of 128 or 256 ran no faster: docs/perf/RESULTS.md.)
#[allow(clippy::too_many_arguments)]
pub fn ssm_fused(
    u: Ptr<T, { batch * dm * len }>,
    delta: Ptr<T, { batch * dm * len }>,
    z: Ptr<T, { batch * dm * len }>,
    a: Ptr<f32, { dm * 16 }>,
    bm: Ptr<T, { batch * 16 * len }>,
    cm: Ptr<T, { batch * 16 * len }>,
    dskip: Ptr<f32, dm>,
    dbias: Ptr<f32, dm>,
    y: Ptr<T, { batch * dm * len }>,
    batch: i32,
    dm: i32,
    len: i32,
    BD: Const<16>,
    BL: Const<{ [64, 128] }>,
    N: Const<16>,
    T: Type<{ [f32, bf16] }>,
) {
    let b = program_id(1);
    let d = program_id(0) * BD + arange(0, BD);
    let dok = d < dm;
    let n = arange(0, N);
    let j = arange(0, BL);
    let row = ((b * dm + d) * len).expand_dims(1);
    let bias = load(dbias + d, dok, 0.0).expand_dims(1);
    let dsk = load(dskip + d, dok, 0.0).expand_dims(1);
    // A in base-2 exponent units: exp(Δ·A) = exp2(Δ·A·log2 e).
    let a2 = load(
        a + d.expand_dims(1) * N + n.expand_dims(0),
        dok.expand_dims(1),
        0.0,
    ) * std::f32::consts::LOG2_E;
    let last = (j == BL - 1).expand_dims(0);
    let bc = b * N * len;
    // The 16 states of each channel, carried from chunk to chunk.
    let mut h = zeros([BD, N]);
    for l0 in (0..len).step_by(BL) {
        let l = l0 + j;
        let lok = l < len;
        let m = dok.expand_dims(1) & lok.expand_dims(0);
        let offs = row + l.expand_dims(0);
        let x = load(u + offs, m, 0.0) as f32;
        let dt = softplus(load(delta + offs, m, 0.0) as f32 + bias);
        let dtx = dt * x;
        let mut acc = dsk * x;
        for k in 0..N {
            let col = (n == k).expand_dims(0);
            let ak = select(col, a2, 0.0).sum(1).expand_dims(1);
            let h0 = select(col, h, 0.0).sum(1).expand_dims(1);
            let bk = load(bm + bc + k * len + l, lok, 0.0) as f32;
            let ck = load(cm + bc + k * len + l, lok, 0.0) as f32;
            let (p, s) = linear_recurrence(exp2(dt * ak), dtx * bk.expand_dims(0), 1);
            let hk = p * h0 + s;
            acc = acc + hk * ck.expand_dims(0);
            h = select(col, select(last, hk, 0.0).sum(1).expand_dims(1), h);
        }
        let g = load(z + offs, m, 0.0) as f32;
        store(y + offs, (acc * silu(g)) as T, m);
    }
}

#[tile_kernel(num_warps = 4)]
/// Unfused step 1: `da = exp(Δ·A)` and `dbu = Δ·B·u`, `[batch, channels, 16, len]` f32;
/// program (block of `BD` channels, chunk of `BL` positions, batch element).
#[allow(clippy::too_many_arguments)]
pub fn ssm_discretize(
    u: Ptr<T, { batch * dm * len }>,
    delta: Ptr<T, { batch * dm * len }>,
    a: Ptr<f32, { dm * 16 }>,
    bm: Ptr<T, { batch * 16 * len }>,
    dbias: Ptr<f32, dm>,
    da: Ptr<f32, { batch * dm * 16 * len }>,
    dbu: Ptr<f32, { batch * dm * 16 * len }>,
    batch: i32,
    dm: i32,
    len: i32,
    BD: Const<16>,
    BL: Const<128>,
    N: Const<16>,
    T: Type<{ [f32, bf16] }>,
) {
    let b = program_id(2);
    let d = program_id(0) * BD + arange(0, BD);
    let l = program_id(1) * BL + arange(0, BL);
    let (dok, lok) = (d < dm, l < len);
    let m = dok.expand_dims(1) & lok.expand_dims(0);
    let offs = ((b * dm + d) * len).expand_dims(1) + l.expand_dims(0);
    let bias = load(dbias + d, dok, 0.0).expand_dims(1);
    let dt = softplus(load(delta + offs, m, 0.0) as f32 + bias);
    let dtx = dt * (load(u + offs, m, 0.0) as f32);
    // Row (b, d, n) of the states starts at ((b·dm + d)·16 + n)·len.
    let srow = ((b * dm + d) * N * len).expand_dims(1) + l.expand_dims(0);
    for k in 0..N {
        let ak = load(a + d * N + k, dok, 0.0).expand_dims(1);
        let bk = load(bm + (b * N + k) * len + l, lok, 0.0) as f32;
        store(da + srow + k * len, exp(dt * ak), m);
        store(dbu + srow + k * len, dtx * bk.expand_dims(0), m);
    }
}

#[tile_kernel(num_warps = 4)]
/// Unfused step 2: the states `h = da·h + dbu` along the sequence, in place of `dbu`, for
/// `BR` rows `(b, d, n)` per program, chunk by chunk with the last state carried.
pub fn ssm_states(
    da: Ptr<f32, { rows * len }>,
    h: Ptr<f32, { rows * len }>,
    rows: i32,
    len: i32,
    BR: Const<16>,
    BL: Const<128>,
) {
    let r = program_id(0) * BR + arange(0, BR);
    let j = arange(0, BL);
    let rok = (r < rows).expand_dims(1);
    let last = (j == BL - 1).expand_dims(0);
    let mut carry = zeros([BR]);
    for l0 in (0..len).step_by(BL) {
        let l = l0 + j;
        let m = rok & (l < len).expand_dims(0);
        let offs = (r * len).expand_dims(1) + l.expand_dims(0);
        let (p, s) = linear_recurrence(load(da + offs, m, 0.0), load(h + offs, m, 0.0), 1);
        let hs = p * carry.expand_dims(1) + s;
        store(h + offs, hs, m);
        carry = select(last, hs, 0.0).sum(1);
    }
}

#[tile_kernel(num_warps = 4)]
/// Unfused step 3: `y = (Σₙ C·h + D·u)·silu(z)`; program (block of `BD` channels, chunk of
/// `BL` positions, batch element).
#[allow(clippy::too_many_arguments)]
pub fn ssm_output(
    u: Ptr<T, { batch * dm * len }>,
    z: Ptr<T, { batch * dm * len }>,
    cm: Ptr<T, { batch * 16 * len }>,
    dskip: Ptr<f32, dm>,
    h: Ptr<f32, { batch * dm * 16 * len }>,
    y: Ptr<T, { batch * dm * len }>,
    batch: i32,
    dm: i32,
    len: i32,
    BD: Const<16>,
    BL: Const<128>,
    N: Const<16>,
    T: Type<{ [f32, bf16] }>,
) {
    let b = program_id(2);
    let d = program_id(0) * BD + arange(0, BD);
    let l = program_id(1) * BL + arange(0, BL);
    let (dok, lok) = (d < dm, l < len);
    let m = dok.expand_dims(1) & lok.expand_dims(0);
    let offs = ((b * dm + d) * len).expand_dims(1) + l.expand_dims(0);
    let x = load(u + offs, m, 0.0) as f32;
    let mut acc = load(dskip + d, dok, 0.0).expand_dims(1) * x;
    let srow = ((b * dm + d) * N * len).expand_dims(1) + l.expand_dims(0);
    for k in 0..N {
        let ck = load(cm + (b * N + k) * len + l, lok, 0.0) as f32;
        acc = acc + load(h + srow + k * len, m, 0.0) * ck.expand_dims(0);
    }
    store(
        y + offs,
        (acc * silu(load(z + offs, m, 0.0) as f32)) as T,
        m,
    );
}

/// A layer's sizes: `batch × channels × len` sequences, 16 states.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Batch elements.
    pub batch: i32,
    /// Channels (Mamba's `d_inner`).
    pub channels: i32,
    /// Sequence length.
    pub len: i32,
}

impl Shape {
    /// Elements of one `[batch, channels, len]` sequence tensor.
    pub fn seq(&self) -> usize {
        (self.batch * self.channels * self.len) as usize
    }

    /// Elements of one `[batch, 16, len]` tensor (`B`, `C`).
    pub fn bc(&self) -> usize {
        (self.batch * N_STATE * self.len) as usize
    }

    /// Elements of the unfused form's `[batch, channels, 16, len]` intermediates.
    pub fn states(&self) -> usize {
        self.seq() * N_STATE as usize
    }
}

/// The inputs of one layer on the device.
pub struct Inputs<T: Element> {
    /// `[batch, channels, len]`.
    pub u: Buffer<T>,
    /// `[batch, channels, len]`, before the softplus.
    pub delta: Buffer<T>,
    /// `[batch, channels, len]`, the gate.
    pub z: Buffer<T>,
    /// `[channels, 16]`.
    pub a: Buffer<f32>,
    /// `[batch, 16, len]`.
    pub b: Buffer<T>,
    /// `[batch, 16, len]`.
    pub c: Buffer<T>,
    /// `[channels]`, the skip.
    pub d: Buffer<f32>,
    /// `[channels]`.
    pub delta_bias: Buffer<f32>,
}

/// The unfused form's intermediates.
pub struct Scratch {
    /// `exp(Δ·A)`.
    pub da: Buffer<f32>,
    /// `Δ·B·u`, then the states.
    pub h: Buffer<f32>,
}

impl Scratch {
    /// Intermediates for `s`.
    pub fn new(dev: &Device, s: Shape) -> Result<Scratch, Error> {
        Ok(Scratch {
            da: dev.zeros(s.states())?,
            h: dev.zeros(s.states())?,
        })
    }
}

fn channel_blocks(s: Shape) -> u32 {
    cdiv(s.channels as usize, 16) as u32
}

/// A configuration of the fused kernel: positions per chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Positions per chunk (64 or 128).
    pub bl: u32,
}

/// The configurations built, the default first (the faster at 8 × 2048 × 4096 in both dtypes
/// on an H100: docs/perf/RESULTS.md).
pub const CONFIGS: [Config; 2] = [Config { bl: 64 }, Config { bl: 128 }];

/// The fused selective scan into `y`, in the default configuration.
pub fn fused<T: Element>(
    dev: &Device,
    s: Shape,
    x: &Inputs<T>,
    y: &mut Buffer<T>,
) -> Result<(), Error> {
    fused_with(dev, s, x, y, CONFIGS[0])
}

/// The fused selective scan into `y` in configuration `c` (one of [`CONFIGS`]).
pub fn fused_with<T: Element>(
    dev: &Device,
    s: Shape,
    x: &Inputs<T>,
    y: &mut Buffer<T>,
    c: Config,
) -> Result<(), Error> {
    ssm_fused::launch::<T>(
        dev,
        Grid::xy(channel_blocks(s), s.batch as u32),
        &x.u,
        &x.delta,
        &x.z,
        &x.a,
        &x.b,
        &x.c,
        &x.d,
        &x.delta_bias,
        y,
        s.batch,
        s.channels,
        s.len,
        c.bl as i32,
    )
}

/// The unfused selective scan into `y` (three kernels, `scratch` in between).
pub fn unfused<T: Element>(
    dev: &Device,
    s: Shape,
    x: &Inputs<T>,
    scratch: &mut Scratch,
    y: &mut Buffer<T>,
) -> Result<(), Error> {
    let chunks = cdiv(s.len as usize, 128) as u32;
    let grid = Grid::xyz(channel_blocks(s), chunks, s.batch as u32);
    ssm_discretize::launch::<T>(
        dev,
        grid,
        &x.u,
        &x.delta,
        &x.a,
        &x.b,
        &x.delta_bias,
        &mut scratch.da,
        &mut scratch.h,
        s.batch,
        s.channels,
        s.len,
    )?;
    let rows = s.batch * s.channels * N_STATE;
    ssm_states::launch(
        dev,
        Grid::x(cdiv(rows as usize, 16) as u32),
        &scratch.da,
        &mut scratch.h,
        rows,
        s.len,
    )?;
    ssm_output::launch::<T>(
        dev, grid, &x.u, &x.z, &x.c, &x.d, &scratch.h, y, s.batch, s.channels, s.len,
    )
}

/// Every kernel of this example, each instance (tests assemble them all).
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = ssm_fused::KERNELS.to_vec();
    v.extend(ssm_discretize::KERNELS);
    v.extend(ssm_states::KERNELS);
    v.extend(ssm_output::KERNELS);
    v
}
