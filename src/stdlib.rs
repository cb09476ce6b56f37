//! tile's standard library: tile functions (`#[tile_fn]`) written in the kernel language, as a
//! user's own would be, and called the same way:
//!
//! ```
//! use tile::prelude::*;
//! use tile::stdlib::softmax;
//!
//! #[tile_kernel]
//! fn row_softmax(x: Ptr<f32, { rows * n }>, y: Ptr<f32, { rows * n }>, rows: i32, n: i32, BLOCK: Const<256>) {
//!     let row = program_id(0);
//!     let cols = arange(0, BLOCK);
//!     let v = load(x + row * n + cols, cols < n, f32::NEG_INFINITY);
//!     store(y + row * n + cols, softmax(v, 0), cols < n);
//! }
//! # fn main() {}
//! ```
//!
//! Each function is inlined where it is called, so it costs nothing at run time and its
//! arithmetic takes the caller's types. The functions that reduce take the axis as a `Const`
//! and work on 1-D tiles (axis 0) and 2-D tiles alike.
//!
//! Not here yet: `flip` (reversing a tile along an axis needs the reshape the language does
//! not have yet).

use crate::tile_fn;

/// The program order that visits the output tiles of a GEMM in groups of `size_g` rows, column
/// by column within a group, so that the programs running at once share rows of `A` and columns
/// of `B` in L2: program `(i, j)` of a `size_i × size_j` grid computes tile `(new_i, new_j)`.
/// Every tile is visited once; the last group is shorter when `size_g` does not divide
/// `size_i`. (Triton's `tl.swizzle2d`.)
#[tile_fn]
pub fn swizzle2d(i: Tile, j: Tile, size_i: Tile, size_j: Tile, size_g: Tile) -> (Tile, Tile) {
    let linear = i * size_j + j;
    let per_group = size_g * size_j;
    let first_row = linear / per_group * size_g;
    let rows = min(size_i - first_row, size_g);
    let within = linear % per_group;
    (first_row + within % rows, within / rows)
}

/// The output tile `(pid_m, pid_n)` that program `pid` of a 1-D grid computes, for an `m × n`
/// output cut into `BM × BN` tiles and visited in groups of `GROUP` tile rows
/// ([`swizzle2d`]'s order). Launch `cdiv(m, BM) · cdiv(n, BN)` programs.
#[tile_fn]
pub fn grouped_pid(pid: i32, m: i32, n: i32, BM: Const, BN: Const, GROUP: Const) -> (Tile, Tile) {
    let tiles_n = cdiv(n, BN);
    swizzle2d(pid / tiles_n, pid % tiles_n, cdiv(m, BM), tiles_n, GROUP)
}

/// `x · sigmoid(x)`, the SiLU (swish) activation, element-wise.
#[tile_fn]
pub fn silu(x: Tile) -> Tile {
    x * sigmoid(x)
}

/// The softmax of `x` along `AXIS`: `exp(x − max) / Σ exp(x − max)`. Elements to leave out
/// (a ragged edge) should be `-∞`, which give 0; a slice that is all `-∞` gives NaN.
#[tile_fn]
pub fn softmax(x: Tile, AXIS: Const) -> Tile {
    let e = (x - x.max(AXIS).expand_dims(AXIS)).exp();
    e / e.sum(AXIS).expand_dims(AXIS)
}

/// The log-softmax of `x` along `AXIS`: `x − max − log Σ exp(x − max)`, computed without
/// forming the softmax (no `log(0)` for small probabilities). Ragged edges as for [`softmax`].
#[tile_fn]
pub fn log_softmax(x: Tile, AXIS: Const) -> Tile {
    let shifted = x - x.max(AXIS).expand_dims(AXIS);
    shifted - shifted.exp().sum(AXIS).log().expand_dims(AXIS)
}

/// One step of an online softmax along `AXIS` (the running maximum and sum of flash attention
/// and of a cross-entropy read in chunks): with `m` and `l` the maximum and the sum of
/// `exp(s − m)` over the chunks so far, and `s` the next chunk's scores, returns
/// `(m_new, l_new, alpha, p)`: the new maximum, the new sum, the factor `exp(m − m_new)` that
/// rescales anything accumulated with the old maximum, and `p = exp(s − m_new)`. Start with `m`
/// a large negative finite number (not `-∞`, whose difference with itself is NaN) and `l = 0`.
#[tile_fn]
pub fn online_softmax_update(m: Tile, l: Tile, s: Tile, AXIS: Const) -> (Tile, Tile, Tile, Tile) {
    let m_new = max(m, s.max(AXIS));
    let alpha = (m - m_new).exp();
    let p = (s - m_new.expand_dims(AXIS)).exp();
    (m_new, l * alpha + p.sum(AXIS), alpha, p)
}

/// Dropout: `x / (1 − p)` where the element's Philox number `rand(seed, offsets)` exceeds `p`,
/// else 0 — Triton's `tl.rand` stream bit for bit, so a mask drawn here equals one drawn in
/// Triton with the same seed and offsets. `offsets` numbers the elements (unique per element
/// of the whole tensor).
#[tile_fn]
pub fn dropout(x: Tile, p: f32, seed: i32, offsets: Tile) -> Tile {
    select(dropout_keep(p, seed, offsets), x / (1.0 - p), 0.0)
}

/// The elements [`dropout`] keeps: `rand(seed, offsets) > p`.
#[tile_fn]
pub fn dropout_keep(p: f32, seed: i32, offsets: Tile) -> Tile {
    rand(seed, offsets) > p
}

/// A tile of zeros of `x`'s shape and element type.
#[tile_fn]
pub fn zeros_like(x: Tile) -> Tile {
    select(true, 0, x)
}
