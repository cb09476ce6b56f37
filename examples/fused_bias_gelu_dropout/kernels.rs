//! The kernels of the `fused_bias_gelu_dropout` example: `y = dropout(GELU(x + bias[col]), p)` on
//! a `rows × cols` matrix with the exact GELU `0.5·v·(1 + erf(v/√2))`, as one fused kernel and as
//! the unfused three (add the bias, GELU, dropout), for f32 and bf16 storage (f32 arithmetic).
//!
//! Dropout is Triton's (its tutorial's `_seeded_dropout`): element `i` of the matrix (row-major
//! index `row · cols + col`) is kept where `rand(seed, i) > p` and then scaled by `1 / (1 − p)`,
//! else 0. `rand` is Triton's `tl.rand` stream bit for bit, so for the same seed the mask is
//! Triton's. The scale is computed once per program and multiplied (within one rounding of
//! `x / (1 − p)`, which Triton computes per element).
//!
//! GELU is the language's `gelu`, the exact `v · Φ(v)` written as `max(v, 0) − |v| · 2^{Q(|v|)}`
//! (one `ex2` fed by a degree-6 polynomial; tile-codegen's `llvm/math.rs` gives its error, which
//! matches the erf formula's): 10 SASS instructions per element where `0.5 · v · (1 + erf(v /
//! √2))` takes 17. The fused kernels take `BLOCK` columns of `ROWS` rows per program, looping
//! over the rows, so each thread's fixed work (addresses, the bias, the scale's division,
//! Philox's key schedule) is spread over more elements; the sizes are per storage type
//! ([`Storage`]): f32 is bound by memory, bf16 by instruction issue (README).

use tile::prelude::*;

// `examples/common/dropout.rs`, which the crate declares as `shared` next to this module.
pub use crate::common::dropout::{add_bias, dropout, Elem, Stream};

/// Elements per program of the unfused kernels.
pub const BLOCK: i32 = 1024;

#[tile_kernel]
/// Fused: `out = dropout(GELU(x + bias[col]), p)`, computed in f32. Program `(i, k)` takes
/// columns `[i · BLOCK, (i + 1) · BLOCK)` of rows `[k · ROWS, (k + 1) · ROWS)`, one row per loop
/// turn: the bias, the mask of the columns and the per-program constants once for `ROWS` rows
/// ([`Storage::BLOCK`], [`Storage::ROWS`] per type).
#[allow(clippy::too_many_arguments)]
pub fn bias_gelu_dropout(
    x: Ptr<T, { rows * cols }>,
    bias: Ptr<T, cols>,
    out: Ptr<T, { rows * cols }>,
    rows: i32,
    cols: i32,
    p: f32,
    seed: i64,
    T: Type<{ [f32, bf16] }>,
    BLOCK: Const<{ [1024, 2048] }>,
    ROWS: Const<{ [1, 6] }>,
) {
    let col = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = col < cols;
    let b = load(bias + col, mask) as f32;
    let scale = 1.0 / (1.0 - p);
    let r0 = program_id(1) * ROWS;
    for r in r0..min(r0 + ROWS, rows) {
        let offs = r * cols + col;
        let g = gelu(load(x + offs, mask) as f32 + b) * scale;
        store(out + offs, select(rand(seed, offs) > p, g, 0.0) as T, mask);
    }
}

#[tile_kernel]
/// Fused, one Philox evaluation per four elements (see [`Stream::Words4`]): `out =
/// dropout(GELU(x + bias[col]), p)` where element `(row, col)` is kept if word `col % 4` of
/// `rand4x(seed, row · ⌈cols / 4⌉ + col / 4)` is above `p`. Programs take `ROWS` rows of a
/// column block, as [`bias_gelu_dropout`].
#[allow(clippy::too_many_arguments)]
pub fn bias_gelu_dropout4(
    x: Ptr<T, { rows * cols }>,
    bias: Ptr<T, cols>,
    out: Ptr<T, { rows * cols }>,
    rows: i32,
    cols: i32,
    p: f32,
    seed: i64,
    T: Type<{ [f32, bf16] }>,
    BLOCK: Const<{ [1024, 2048] }>,
    ROWS: Const<{ [1, 6] }>,
) {
    // The block's columns as [BLOCK / 8, 8]: (k, j) is column 8·h + j, in group 2·h + j / 4
    // (word j % 4): eight contiguous columns a thread, 16-byte accesses in bf16.
    let h = program_id(0) * (BLOCK / 8) + arange(0, BLOCK / 8);
    let j = arange(0, 8).expand_dims(0);
    let col = (h * 8).expand_dims(1) + j;
    let mask = col < cols;
    let b = load(bias + col, mask) as f32;
    let scale = 1.0 / (1.0 - p);
    let groups = (cols + 3) / 4;
    let w = j % 4;
    let r0 = program_id(1) * ROWS;
    for r in r0..min(r0 + ROWS, rows) {
        let offs = r * cols + col;
        let gl = gelu(load(x + offs, mask) as f32 + b) * scale;
        let q = r * groups + h * 2;
        // Word w of the group's evaluation: every select's condition is a constant per element
        // slot, so they fold away.
        let lo = select(
            w == 0,
            rand4x(seed, q, 0).expand_dims(1),
            select(
                w == 1,
                rand4x(seed, q, 1).expand_dims(1),
                select(
                    w == 2,
                    rand4x(seed, q, 2).expand_dims(1),
                    rand4x(seed, q, 3).expand_dims(1),
                ),
            ),
        );
        let hi = select(
            w == 0,
            rand4x(seed, q + 1, 0).expand_dims(1),
            select(
                w == 1,
                rand4x(seed, q + 1, 1).expand_dims(1),
                select(
                    w == 2,
                    rand4x(seed, q + 1, 2).expand_dims(1),
                    rand4x(seed, q + 1, 3).expand_dims(1),
                ),
            ),
        );
        let u = select(j < 4, lo, hi);
        store(out + offs, select(u > p, gl, 0.0) as T, mask);
    }
}

#[tile_kernel]
/// Unfused step 2: `out = GELU(x)` (the exact GELU, `gelu`), computed in f32.
pub fn gelu_only(
    x: Ptr<T, n>,
    out: Ptr<T, n>,
    n: i32,
    T: Type<{ [f32, bf16] }>,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(out + offs, gelu(load(x + offs, mask) as f32) as T, mask);
}

/// Every kernel of this example.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = Vec::new();
    v.extend(bias_gelu_dropout::KERNELS);
    v.extend(bias_gelu_dropout4::KERNELS);
    v.extend(add_bias::KERNELS);
    v.extend(gelu_only::KERNELS);
    v.extend(dropout::KERNELS);
    v
}

/// The element types the example runs on, with the launchers of both forms.
pub trait Storage: Elem {
    /// Columns per program of the fused kernels.
    const BLOCK: i32;
    /// Rows per program of the fused kernels.
    const ROWS: i32;

    /// `out = dropout(GELU(x + bias[col]), p)` in one kernel, with the mask of `stream`.
    #[allow(clippy::too_many_arguments)]
    fn fused(
        dev: &Device,
        stream: Stream,
        x: &Buffer<Self>,
        bias: &Buffer<Self>,
        out: &mut Buffer<Self>,
        rows: i32,
        cols: i32,
        p: f32,
        seed: i64,
    ) -> Result<(), Error> {
        let (b, r) = (Self::BLOCK, Self::ROWS);
        let g = Grid::xy(cdiv(cols, b), cdiv(rows, r));
        match stream {
            Stream::Rand => {
                bias_gelu_dropout::launch(dev, g, x, bias, out, rows, cols, p, seed, b, r)
            }
            Stream::Words4 => {
                bias_gelu_dropout4::launch(dev, g, x, bias, out, rows, cols, p, seed, b, r)
            }
        }
    }

    /// `t1 = x + bias[col]`, `t2 = GELU(t1)`, `out = dropout(t2, p)`: three kernels.
    #[allow(clippy::too_many_arguments)]
    fn unfused(
        dev: &Device,
        x: &Buffer<Self>,
        bias: &Buffer<Self>,
        t1: &mut Buffer<Self>,
        t2: &mut Buffer<Self>,
        out: &mut Buffer<Self>,
        rows: i32,
        cols: i32,
        p: f32,
        seed: i64,
    ) -> Result<(), Error> {
        let g2 = Grid::xy(cdiv(cols, BLOCK), rows.max(0) as u32);
        add_bias::launch(dev, g2, x, bias, t1, rows, cols)?;
        let n = rows
            .checked_mul(cols)
            .ok_or_else(|| Error::Args("rows × cols overflows i32".into()))?;
        let g = Grid::x(cdiv(n, BLOCK));
        gelu_only::launch(dev, g, &*t1, t2, n)?;
        dropout::launch(dev, g, &*t2, out, n, p, seed)
    }
}

/// f32 is bound by memory: 2048 columns (16 per thread) of one row keep the most loads in flight
/// (on the H100, 98% of copy; 4 rows 95%, 8 warps or 1024 columns 93–97%).
impl Storage for f32 {
    const BLOCK: i32 = 2048;
    const ROWS: i32 = 1;
}

/// bf16 is bound by instruction issue: 1024 columns (8 per thread, 32 registers, so 16 programs
/// of 4 warps per SM) and 6 rows per program, the per-program work (the bias, the scale,
/// Philox's keys, addresses) done once for six rows. On the H100 the four-words kernel ran at
/// 89.8–90.3% of copy (eight contiguous columns a thread; four: 89.1–90.2%); 2048 columns of 4
/// rows (50 registers, 9 programs per SM) at 82.6%, 1024 of 8 rows at 88.7–90.0%, 8 warps of
/// 2048 columns and 8 rows at 89.0% (README).
impl Storage for bf16 {
    const BLOCK: i32 = 1024;
    const ROWS: i32 = 6;
}
