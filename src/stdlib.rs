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

use crate::tile_fn;

/// The program order that visits the output tiles of a GEMM in groups of `size_g` rows, column
/// by column within a group, so that the programs running at once share rows of `A` and columns
/// of `B` in L2: program `(i, j)` of a `size_i × size_j` grid computes tile `(new_i, new_j)`.
/// Every tile is visited once; the last group is shorter when `size_g` does not divide
/// `size_i`. (Triton's `tl.swizzle2d`.)
#[tile_fn]
pub fn swizzle2d(i: Tile, j: Tile, size_i: Tile, size_j: Tile, size_g: Tile) -> (Tile, Tile) {
    grouped_order(i * size_j + j, size_i, size_j, size_g)
}

/// The output tile `(pid_m, pid_n)` that program `pid` of a 1-D grid computes, for an `m × n`
/// output cut into `BM × BN` tiles and visited in groups of `GROUP` tile rows
/// ([`swizzle2d`]'s order). Launch `cdiv(m, BM) · cdiv(n, BN)` programs.
#[tile_fn]
pub fn grouped_pid(pid: i32, m: i32, n: i32, BM: Const, BN: Const, GROUP: Const) -> (Tile, Tile) {
    grouped_order(pid, cdiv(m, BM), cdiv(n, BN), GROUP)
}

/// [`grouped_pid`] for a grid of `tiles_m × tiles_n` output tiles counted by the caller:
/// program `pid` (`0 ≤ pid < tiles_m · tiles_n`) computes tile `(pid_m, pid_n)`, the tiles
/// visited in groups of `group` tile rows, column by column within a group (the last group
/// shorter when `group` does not divide `tiles_m`).
#[tile_fn]
pub fn grouped_order(pid: Tile, tiles_m: Tile, tiles_n: Tile, group: Tile) -> (Tile, Tile) {
    let width = group * tiles_n;
    let first_m = (pid / width) * group;
    let group_m = min(tiles_m - first_m, group);
    (first_m + (pid % width) % group_m, (pid % width) / group_m)
}

/// The `K` loop of a matrix product: `acc + A[rows, lo..hi] · B[lo..hi, cols]`, by `dot` over
/// `BK`-wide slices of `lo..hi`. `A` is row-major from `a` with rows `lda` elements apart, `B`
/// row-major from `b` with rows `ldb` apart; `rows` (`BM`) and `cols` (`BN`) are 1-D tiles of
/// the row and column indices the caller computes, `row_ok` (`BM × 1`) and `col_ok` (`1 × BN`)
/// the masks of its ragged edges, which the caller's store takes too. Elements past `hi` (the
/// last slice's ragged end) and outside the masks load as 0 and add nothing. `acc` is the
/// `BM × BN` accumulator to add to (`zeros([BM, BN])`, f32); the result has its type.
///
/// The operands' type picks the `dot`: f16/bf16 tiles run on tensor cores (their slices
/// through the `cp.async` ring of `pipeline-dot`); f32 tiles in f32, or on tf32 tensor cores
/// with `TF32 = 1` (`precision = tf32`).
///
/// ```
/// use tile::prelude::*;
/// use tile::stdlib::matmul_acc;
///
/// #[tile_kernel]
/// fn matmul(
///     a: Ptr<f16, { m * k }>, b: Ptr<f16, { k * n }>, c: Ptr<f32, { m * n }>,
///     m: i32, n: i32, k: i32, BM: Const<64>, BN: Const<64>, BK: Const<32>,
/// ) {
///     let rows = program_id(0) * BM + arange(0, BM);
///     let cols = program_id(1) * BN + arange(0, BN);
///     let row_ok = (rows < m).expand_dims(1);
///     let col_ok = (cols < n).expand_dims(0);
///     let acc = matmul_acc(zeros([BM, BN]), a, k, b, n, rows, cols, row_ok, col_ok, 0, k, BK, 0);
///     store(c + rows.expand_dims(1) * n + cols.expand_dims(0), acc, row_ok & col_ok);
/// }
/// # fn main() {}
/// ```
#[tile_fn]
pub fn matmul_acc(
    acc: Tile,
    a: Tile,
    lda: i32,
    b: Tile,
    ldb: i32,
    rows: Tile,
    cols: Tile,
    row_ok: Tile,
    col_ok: Tile,
    lo: i32,
    hi: i32,
    BK: Const,
    TF32: Const,
) -> Tile {
    let ks = arange(0, BK);
    let mut acc = acc;
    for k0 in (lo..hi).step_by(BK) {
        let kk = k0 + ks;
        let at = load(
            a + rows.expand_dims(1) * lda + kk.expand_dims(0),
            row_ok & (kk < hi).expand_dims(0),
        );
        let bt = load(
            b + kk.expand_dims(1) * ldb + cols.expand_dims(0),
            (kk < hi).expand_dims(1) & col_ok,
        );
        if TF32 == 1 {
            acc = dot(at, bt, acc, precision = tf32);
        } else {
            acc = dot(at, bt, acc);
        }
    }
    acc
}

/// GELU's tanh approximation, `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`, element-wise
/// (the exact, erf form is the builtin `gelu`).
#[tile_fn]
pub fn gelu_tanh(x: Tile) -> Tile {
    0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
}

/// `x · sigmoid(x)`, the SiLU (swish) activation, element-wise.
#[tile_fn]
pub fn silu(x: Tile) -> Tile {
    x * sigmoid(x)
}

/// `log(1 + exp(x))`, the softplus, element-wise; `x` itself above 20, as PyTorch's
/// `F.softplus` (threshold 20) and Mamba's kernels compute it.
#[tile_fn]
pub fn softplus(x: Tile) -> Tile {
    select(x > 20.0, x, log(1.0 + exp(x)))
}

/// The first-order linear recurrence `h[t] = a[t]·h[t−1] + b[t]` along `AXIS` from `h[−1] = 0`,
/// by one `associative_scan` of the pairs `(a, b)`: returns `(p, h)` with `p[t] = a[0]·…·a[t]`,
/// so that a state `h0` carried in from before the first element adds `p·h0` (a chunked scan's
/// carry). The combination is reassociated (a tree, not a loop), so f32 results match a
/// sequential loop to rounding.
#[tile_fn]
pub fn linear_recurrence(a: Tile, b: Tile, AXIS: Const) -> (Tile, Tile) {
    associative_scan((a, b), AXIS, |(a1, b1), (a2, b2)| (a1 * a2, b1 * a2 + b2))
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

/// `x` reversed along `AXIS` (Triton's `tl.flip`): element `j` along the axis is element
/// `n − 1 − j` of `x`, `n` the axis's extent; a 1-D or 2-D tile of numbers. `flip(x, 0)`
/// reverses a row, or the rows of a 2-D tile.
///
/// The positions are counted without knowing `n` (a reversed running count of ones), and the
/// elements move by one `gather`: through shared memory on the GPU, or between a thread's own
/// registers where it holds the whole axis.
#[tile_fn]
pub fn flip(x: Tile, AXIS: Const) -> Tile {
    let back = (zeros_like(x) as i32 + 1).cumsum(AXIS, reverse = true) - 1;
    x.gather(back, AXIS)
}

/// A tile of zeros of `x`'s shape and element type.
#[tile_fn]
pub fn zeros_like(x: Tile) -> Tile {
    select(true, 0, x)
}
