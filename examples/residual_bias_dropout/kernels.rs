//! The kernels of the `residual_bias_dropout` example: `out = residual + dropout(x + bias[col], p)`
//! on a `rows × cols` matrix (the end of a transformer block's attention or MLP branch), as one
//! fused kernel and as the unfused three (add the bias, dropout, add the residual), for f32 and
//! bf16 storage (f32 arithmetic).
//!
//! Dropout is Triton's (its tutorial's `_seeded_dropout`): element `i` (row-major index
//! `row · cols + col`) is kept where `rand(seed, i) > p` (Triton's `tl.rand` stream bit for bit),
//! scaled by `1 / (1 − p)` (computed once per program, then multiplied), else 0.

use tile::prelude::*;

// `examples/common/dropout.rs`, which the crate declares as `shared` next to this module.
pub use crate::common::dropout::{add_bias, dropout, Elem, Stream};

/// Elements per program, for every kernel of this example but the fused `rand(i)` one.
pub const BLOCK: i32 = 1024;

/// Columns per program of the fused kernel with the `rand(i)` mask (16 per thread, which spreads
/// each thread's fixed work over more of its eight Philox evaluations' elements).
pub const RAND_BLOCK: i32 = 2048;

#[tile_kernel]
/// Fused: `out = residual + dropout(x + bias[col], p)`, computed in f32. Program `(i, k)` takes
/// columns `[i · BLOCK, (i + 1) · BLOCK)` of rows `[k · ROWS, (k + 1) · ROWS)`, one row per loop
/// turn: the bias, the mask of the columns and the per-program constants once for `ROWS` rows.
#[allow(clippy::too_many_arguments)]
pub fn residual_bias_dropout(
    x: Ptr<T, { rows * cols }>,
    bias: Ptr<T, cols>,
    residual: Ptr<T, { rows * cols }>,
    out: Ptr<T, { rows * cols }>,
    rows: i32,
    cols: i32,
    p: f32,
    seed: i64,
    T: Type<{ [f32, bf16] }>,
    BLOCK: Const<2048>,
    ROWS: Const<{ [1, 4] }>,
) {
    let col = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = col < cols;
    let b = load(bias + col, mask) as f32;
    let scale = 1.0 / (1.0 - p);
    let r0 = program_id(1) * ROWS;
    for r in r0..min(r0 + ROWS, rows) {
        let offs = r * cols + col;
        let v = load(x + offs, mask) as f32 + b;
        let d = select(rand(seed, offs) > p, v * scale, 0.0);
        store(
            out + offs,
            (load(residual + offs, mask) as f32 + d) as T,
            mask,
        );
    }
}

#[tile_kernel]
/// Fused, one Philox evaluation per four elements ([`Stream::Words4`]): element `(row, col)` is
/// kept if word `col % 4` of `rand4x(seed, row · ⌈cols / 4⌉ + col / 4)` is above `p`.
#[allow(clippy::too_many_arguments)]
pub fn residual_bias_dropout4(
    x: Ptr<T, { rows * cols }>,
    bias: Ptr<T, cols>,
    residual: Ptr<T, { rows * cols }>,
    out: Ptr<T, { rows * cols }>,
    rows: i32,
    cols: i32,
    p: f32,
    seed: i64,
    T: Type<{ [f32, bf16] }>,
    BLOCK: Const<1024>,
) {
    // The block's columns as [BLOCK / 4, 4]: (k, j) is column 4·g + j of group g.
    let g = program_id(0) * (BLOCK / 4) + arange(0, BLOCK / 4);
    let j = arange(0, 4).expand_dims(0);
    let col = (g * 4).expand_dims(1) + j;
    let mask = col < cols;
    let offs = program_id(1) * cols + col;
    let v = load(x + offs, mask) as f32 + load(bias + col, mask) as f32;
    let q = program_id(1) * ((cols + 3) / 4) + g;
    let u = select(
        j == 0,
        rand4x(seed, q, 0).expand_dims(1),
        select(
            j == 1,
            rand4x(seed, q, 1).expand_dims(1),
            select(
                j == 2,
                rand4x(seed, q, 2).expand_dims(1),
                rand4x(seed, q, 3).expand_dims(1),
            ),
        ),
    );
    let scale = 1.0 / (1.0 - p);
    let d = select(u > p, v * scale, 0.0);
    store(
        out + offs,
        (load(residual + offs, mask) as f32 + d) as T,
        mask,
    );
}

#[tile_kernel]
/// Unfused step 3: `out = a + b`, rounded to the storage type.
pub fn add(
    a: Ptr<T, n>,
    b: Ptr<T, n>,
    out: Ptr<T, n>,
    n: i32,
    T: Type<{ [f32, bf16] }>,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(
        out + offs,
        (load(a + offs, mask) as f32 + load(b + offs, mask) as f32) as T,
        mask,
    );
}

/// Every kernel of this example.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = Vec::new();
    v.extend(residual_bias_dropout::KERNELS);
    v.extend(residual_bias_dropout4::KERNELS);
    v.extend(add_bias::KERNELS);
    v.extend(dropout::KERNELS);
    v.extend(add::KERNELS);
    v
}

/// The element types the example runs on, with the launchers of both forms.
pub trait Storage: Elem {
    /// Rows per program of the fused `rand(i)` kernel.
    const ROWS: i32;

    /// `out = residual + dropout(x + bias[col], p)` in one kernel, with the mask of `stream`.
    #[allow(clippy::too_many_arguments)]
    fn fused(
        dev: &Device,
        stream: Stream,
        x: &Buffer<Self>,
        bias: &Buffer<Self>,
        residual: &Buffer<Self>,
        out: &mut Buffer<Self>,
        rows: i32,
        cols: i32,
        p: f32,
        seed: i64,
    ) -> Result<(), Error> {
        match stream {
            Stream::Rand => {
                let r = Self::ROWS;
                let g = Grid::xy(cdiv(cols, RAND_BLOCK), cdiv(rows, r));
                residual_bias_dropout::launch(
                    dev, g, x, bias, residual, out, rows, cols, p, seed, r,
                )
            }
            Stream::Words4 => {
                let g = Grid::xy(cdiv(cols, BLOCK), rows.max(0) as u32);
                residual_bias_dropout4::launch(dev, g, x, bias, residual, out, rows, cols, p, seed)
            }
        }
    }

    /// `t1 = x + bias[col]`, `t2 = dropout(t1, p)`, `out = residual + t2`: three kernels.
    #[allow(clippy::too_many_arguments)]
    fn unfused(
        dev: &Device,
        x: &Buffer<Self>,
        bias: &Buffer<Self>,
        residual: &Buffer<Self>,
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
        dropout::launch(dev, g, &*t1, t2, n, p, seed)?;
        add::launch(dev, g, residual, &*t2, out, n)
    }
}

/// f32 is bound by memory: one row per program keeps more loads in flight (on the H100, 4 rows
/// lost 3–5%; docs/DECISIONS.md).
impl Storage for f32 {
    const ROWS: i32 = 1;
}

/// bf16 is bound by instruction issue: a program's fixed work (the bias, the scale, Philox's
/// keys) is done once for four rows (on the H100, `rand(i)` 72.0 → 75.1% of copy;
/// docs/DECISIONS.md).
impl Storage for bf16 {
    const ROWS: i32 = 4;
}
