//! The kernels of `cross_entropy`: per row of logits `x` (`rows × v`) with label `y`, the loss
//! `lse(x) − x[y]` (with label smoothing `s`: `(1 − s)(lse − x[y]) + s (lse − mean(x))`, as
//! PyTorch and Liger define it), averaged over the rows whose label is not `ignore`, and its
//! gradient `(softmax(x) − s / v − (1 − s)·onehot(y)) / valid rows`, written in place of the
//! logits (zero on ignored rows), as Liger's fused kernel does. The fused kernels do not read an
//! ignored row (its loads are masked off; it is only written, with zeros), as Liger skips it: with
//! every 7th row ignored, as the example's inputs, that took the H100 timings 4–9% lower
//! (docs/DECISIONS.md, "Cross-entropy").
//!
//! - `ce_setup` (one program): the number of valid rows, and the mean set to 0.
//! - `ce_loop` (fused): one program per row, two passes over `BLOCK`-wide column tiles: an online
//!   logsumexp (running max and rescaled sum) with the label's logit and the row's sum, then the
//!   gradient written over the row, the row's loss, and the mean (an atomic add). The second pass
//!   runs from the last tile back, so that the tiles the first pass read last are read again
//!   first, while the L2 still holds them, and its loads and stores are `evict = first` (their
//!   data is not read again), so that they do not push the row's other tiles out of the L2. On
//!   the H100 the two took bf16 8192 × 32000 from 80.8% to 85.4% and then 93.2% of copy, f32
//!   4096 × 128256 (32 warps) from 72.4% to 82.9% and 84.5% (docs/DECISIONS.md).
//!   A row held whole in registers (one read) does not fit: 32000 logits per program leave no
//!   registers for the rest (it assembles with spills even in bf16).
//! - `ce_loop_wide`: the same with 16 warps per program and 8192-wide tiles; `ce_loop_full` with
//!   32 warps and 32768-wide tiles (bf16), `ce_loop_full_keep` the same for f32 with the first
//!   pass's loads `evict = last`.
//! - `ce_row`: rows of at most 32768 logits in one tile on 32 warps: one read, one write;
//!   `ce_row16` the same on 16 warps (two programs per SM).
//! - `ce_loop_any32`: the two passes on 32 warps and 16384-wide tiles, rows of any length.
//! - `ce_rows`: rows of at most 1024 logits, `R` of them per program in one `R × 1024` tile, one
//!   read and one write, one atomic add per program.
//! - unfused: `ce_forward` (the first pass and the loss, the row's logsumexp saved) and
//!   `ce_backward` (the gradient from the saved logsumexp), as a framework's separate forward and
//!   backward are.
//!
//! `exp(t)` is `2^(t · log2 e)` (one `ex2.approx` per element, as Triton computes it).

use tile::prelude::*;

/// `valid[0]` = the labels that are not `ignore`; `mean[0]` = 0.
#[tile_kernel]
pub fn ce_setup(
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    mean: Ptr<f32, 1>,
    rows: i32,
    ignore: i32,
    BLOCK: Const<1024>,
) {
    let mut count = 0;
    for r0 in (0..rows).step_by(BLOCK) {
        let r = r0 + arange(0, BLOCK);
        let y = load(labels + r, r < rows, ignore);
        count += ((y != ignore) as i32).sum();
    }
    store(valid, count);
    store(mean, 0.0);
}

/// The body of the fused two-pass kernels (see the module doc): an online logsumexp
/// (running max and rescaled sum) with the label's logit and the row's sum (label smoothing
/// needs it), then the gradient written over the row, the row's loss and the mean (an atomic
/// add). The first pass's loads are `evict = last` where `KEEP` is 1 (the row stays in the L2
/// for the second pass), else `evict = normal`.
#[tile_fn]
pub fn two_pass(
    logits: Tile,
    labels: Tile,
    valid: Tile,
    loss: Tile,
    mean: Tile,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const,
    T: Type,
    KEEP: Const,
) {
    let row = program_id(0);
    let y = load(labels + row);
    let ok = y != ignore;
    let base = logits + row * v;
    // The label's logit before anything else: the gradient overwrites the row, and
    // only the first pass's reductions (their barriers) order this load before other
    // threads' stores.
    let xy = load(base + y, ok) as f32;
    let mut m = f32::NEG_INFINITY;
    let mut d = 0.0;
    let mut sx = 0.0;
    for c in (0..v).step_by(BLOCK) {
        let cols = c + arange(0, BLOCK);
        let mk = cols < v;
        // An ignored row is not read (its loads masked off, as Liger skips it).
        let mut x = 0.0;
        if KEEP == 1 {
            x = load(base + cols, mk & ok, 0.0, evict = last);
        } else {
            x = load(base + cols, mk & ok, 0.0, evict = normal);
        }
        let x = select(mk, x as f32, f32::NEG_INFINITY);
        // The row sum first, so that `x` dies in the exponentials (32 warps hold a
        // 32768-wide tile in 64 registers only that way). Skipping it where the
        // smoothing is 0 (in an `if`) spills 64 bytes there.
        sx += select(mk, x, 0.0).sum();
        let m2 = max(m, x.max());
        let e = ((x - m2) * 1.4426950408889634).exp2().sum();
        d = d * ((m - m2) * 1.4426950408889634).exp2() + e;
        m = m2;
    }
    let lse = m + d.log();
    let n = load(valid) as f32;
    let l = (lse - xy) * (1.0 - smoothing) + smoothing * (lse - sx / v as f32);
    let l = select(ok, l / n, 0.0);
    // softmax − s / v over the valid rows, one multiply per element (a division per
    // element, or the one-hot's compare per element, left 32 warps' 32768-wide tiles
    // without registers: LLVM keeps every column index live across the loop for it).
    let inv_n = 1.0 / n;
    let shift = smoothing / (v as f32 * n);
    // The second pass from the last tile back: the tiles the first pass read last are
    // read again first, while the L2 still holds them.
    let last = (v - 1) / BLOCK * BLOCK;
    for i in (0..v).step_by(BLOCK) {
        let cols = (last - i) + arange(0, BLOCK);
        let mk = cols < v;
        // Their last read, and the gradient is not read again here: both evicted
        // first, so that they do not push out of the L2 the tiles still to be read.
        let x = load(base + cols, mk & ok, 0.0, evict = first) as f32;
        let p = ((x - lse) * 1.4426950408889634).exp2();
        store(
            base + cols,
            select(ok, p * inv_n - shift, 0.0) as T,
            mk,
            evict = first,
        );
    }
    // Then − (1 − s) / n at the label: a later store to the same address in the same
    // program, so it is the value that stays (every thread holding the scalar stores it,
    // the label's thread among them, after its own store of the tile).
    let py = ((xy - lse) * 1.4426950408889634).exp2();
    store(
        base + y,
        (py * inv_n - shift - (1.0 - smoothing) / n) as T,
        ok,
    );
    store(loss + row, l);
    atomic_add(mean, l);
}

/// Fused loss and gradient of one row in two passes over `BLOCK`-wide tiles (any `v`), 8
/// warps.
#[tile_kernel(num_warps = 8)]
#[allow(clippy::too_many_arguments)]
pub fn ce_loop(
    logits: Ptr<T, { rows * v }>,
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    loss: Ptr<f32, rows>,
    mean: Ptr<f32, 1>,
    rows: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const<{ [1024, 8192] }>,
    T: Type<{ [f32, bf16] }>,
) {
    two_pass(
        logits, labels, valid, loss, mean, v, ignore, smoothing, BLOCK, T, 0,
    );
}

/// `ce_loop` with 16 warps and 8192-wide tiles: at most two programs share an SM, so the
/// rows that the first passes in flight read (264 rows of 128 KB at 32000 f32 columns: 34
/// MB) are still in the L2 when the second passes read them again. (Measured on the H100:
/// faster than 8 warps, whose four programs per SM keep twice the rows in flight, and than
/// 32 warps with 16384-wide tiles.)
#[tile_kernel(num_warps = 16)]
#[allow(clippy::too_many_arguments)]
pub fn ce_loop_wide(
    logits: Ptr<T, { rows * v }>,
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    loss: Ptr<f32, rows>,
    mean: Ptr<f32, 1>,
    rows: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const<8192>,
    T: Type<{ [f32, bf16] }>,
) {
    two_pass(
        logits, labels, valid, loss, mean, v, ignore, smoothing, BLOCK, T, 0,
    );
}

/// `ce_loop` with 32 warps and 32768-wide tiles (Liger's shape): one program per SM, so
/// 132 rows in flight on the H100 (34 MB of bf16 rows at 128256 columns: the second pass
/// finds its row in the L2), and a row of at most 32768 logits is one tile per pass.
/// Aligned arguments only (rows of a multiple of 8 logits), as `ce_row`: unaligned, the
/// tile's 64-bit addresses do not fit beside it in 64 registers.
///
/// bf16 only: f32 rows take `ce_loop_full_keep`.
#[tile_kernel(num_warps = 32, specialize = aligned)]
#[allow(clippy::too_many_arguments)]
pub fn ce_loop_full(
    logits: Ptr<T, { rows * v }>,
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    loss: Ptr<f32, rows>,
    mean: Ptr<f32, 1>,
    rows: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const<32768>,
    T: Type<{ [bf16] }>,
) {
    two_pass(
        logits, labels, valid, loss, mean, v, ignore, smoothing, BLOCK, T, 0,
    );
}

/// `ce_loop_full` with the first pass's loads `evict = last`, for f32 rows: at 128256
/// columns (513 KB a row, 68 MB for the 132 rows in flight) more of the row is still in the
/// L2 for the second pass, 84.4% → 85.5% of copy on the H100; in bf16 the same hint lost
/// 5% at 4096 × 128256 (docs/DECISIONS.md).
#[tile_kernel(num_warps = 32, specialize = aligned)]
#[allow(clippy::too_many_arguments)]
pub fn ce_loop_full_keep(
    logits: Ptr<T, { rows * v }>,
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    loss: Ptr<f32, rows>,
    mean: Ptr<f32, 1>,
    rows: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const<32768>,
    T: Type<{ [f32] }>,
) {
    two_pass(
        logits, labels, valid, loss, mean, v, ignore, smoothing, BLOCK, T, 1,
    );
}

/// The body of the one-read kernels (see [`ce_row`]).
#[tile_fn]
fn one_read(
    logits: Tile,
    labels: Tile,
    valid: Tile,
    loss: Tile,
    mean: Tile,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const,
    T: Type,
) {
    let row = program_id(0);
    let y = load(labels + row);
    let ok = y != ignore;
    let base = logits + row * v;
    let cols = arange(0, BLOCK);
    let mk = cols < v;
    // An ignored row is not read (its loads masked off, as Liger skips it).
    let x = select(mk, load(base + cols, mk & ok) as f32, f32::NEG_INFINITY);
    // Read before the row's reductions: their barriers order it before any thread's store of
    // the gradient over the row (read after them, it raced those stores). After the row's
    // loads, which need not wait for the label.
    let xy = load(base + y, ok) as f32;
    // The row sum first: after the max, only the exponentials stay live (x and e together
    // would not fit in 64 registers). Skipping it where the smoothing is 0 (an `if`) measured
    // 2% slower on the H100 (docs/DECISIONS.md).
    let sx = select(mk, x, 0.0).sum();
    let m = x.max();
    let e = ((x - m) * 1.4426950408889634).exp2();
    let d = e.sum();
    let lse = m + d.log();
    let n = load(valid) as f32;
    let l = (lse - xy) * (1.0 - smoothing) + smoothing * (lse - sx / v as f32);
    let l = select(ok, l / n, 0.0);
    // softmax − s / v − (1 − s)·onehot, over the valid rows: one multiply per element.
    let scale = 1.0 / (d * n);
    let shift = smoothing / (v as f32 * n);
    let g = e * scale - shift - select(cols == y, (1.0 - smoothing) / n, 0.0);
    store(base + cols, select(ok, g, 0.0) as T, mk);
    store(loss + row, l);
    atomic_add(mean, l);
}

/// The one-read form for rows of at most 32768 logits: the whole row in one tile (32 per
/// thread on 32 warps, 64 registers, no spills), so it is read from memory once, its
/// exponentials kept for the gradient (one `ex2` per element instead of two), and written once.
/// Compiled for aligned arguments only (rows of a multiple of 8 logits): unaligned, each element
/// needs its own 64-bit address, which does not fit beside the row in 64 registers. Aligned,
/// the mask `cols < v` is one predicate per 8 logits (the back end shares a compare across the
/// registers the axis analysis proves equal); with one per logit, bf16 rows spilled 32 to 144
/// bytes in every arrangement tried (docs/DECISIONS.md).
#[tile_kernel(num_warps = 32, specialize = aligned)]
#[allow(clippy::too_many_arguments)]
pub fn ce_row(
    logits: Ptr<T, { rows * v }>,
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    loss: Ptr<f32, rows>,
    mean: Ptr<f32, 1>,
    rows: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const<32768>,
    T: Type<{ [f32, bf16] }>,
) {
    one_read(
        logits, labels, valid, loss, mean, v, ignore, smoothing, BLOCK, T,
    );
}

/// `ce_row` on 16 warps: 64 logits per thread in up to 128 registers, two programs per SM,
/// so one program's reductions overlap the other's loads.
#[tile_kernel(num_warps = 16, specialize = aligned)]
#[allow(clippy::too_many_arguments)]
pub fn ce_row16(
    logits: Ptr<T, { rows * v }>,
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    loss: Ptr<f32, rows>,
    mean: Ptr<f32, 1>,
    rows: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const<32768>,
    T: Type<{ [f32, bf16] }>,
) {
    one_read(
        logits, labels, valid, loss, mean, v, ignore, smoothing, BLOCK, T,
    );
}

/// `ce_loop` on 32 warps with 16384-wide tiles for rows of any length: one program per SM, so
/// the rows in flight (132 on the H100: 26 MB at 50257 f32 logits) stay in the L2 for the
/// second pass, as `ce_loop_full`'s do, where `ce_loop`'s eight programs per SM (1056 rows, 212
/// MB) read every row twice from memory. Half `ce_loop_full`'s tile, so that unaligned rows'
/// 64-bit addresses (16 per thread) fit beside it.
#[tile_kernel(num_warps = 32)]
#[allow(clippy::too_many_arguments)]
pub fn ce_loop_any32(
    logits: Ptr<T, { rows * v }>,
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    loss: Ptr<f32, rows>,
    mean: Ptr<f32, 1>,
    rows: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const<16384>,
    T: Type<{ [f32, bf16] }>,
) {
    two_pass(
        logits, labels, valid, loss, mean, v, ignore, smoothing, BLOCK, T, 0,
    );
}

/// The one-read form for short rows (at most `BLOCK` logits), `R` rows per program: a
/// `R × BLOCK` tile, each row's reductions along axis 1, and one `atomic_add` of the `R` rows'
/// losses. With one row per program, 65536 rows of 1024 logits ran at a third of copy on the
/// H200 whatever the form: each program's work is short, and every one of them adds to the same
/// `mean`.
#[tile_kernel(num_warps = 8)]
#[allow(clippy::too_many_arguments)]
pub fn ce_rows(
    logits: Ptr<T, { rows * v }>,
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    loss: Ptr<f32, rows>,
    mean: Ptr<f32, 1>,
    rows: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    R: Const<{ [4, 8] }>,
    BLOCK: Const<1024>,
    T: Type<{ [f32, bf16] }>,
) {
    let r = program_id(0) * R + arange(0, R);
    let live = r < rows;
    let y = load(labels + r, live, ignore);
    let ok = live & (y != ignore);
    let cols = arange(0, BLOCK);
    let mk = (cols < v).expand_dims(0);
    let at = logits + (r * v).expand_dims(1) + cols.expand_dims(0);
    // Ignored rows are not read (their loads masked off, as Liger skips them).
    let x = select(
        mk,
        load(at, mk & ok.expand_dims(1)) as f32,
        f32::NEG_INFINITY,
    );
    // The labels' logits before the rows' reductions, whose barriers order these loads before
    // any thread's store of the gradient (as `one_read`).
    let xy = load(logits + r * v + y, ok) as f32;
    let sx = select(mk, x, 0.0).sum(1);
    let m = x.max(1);
    let e = ((x - m.expand_dims(1)) * 1.4426950408889634).exp2();
    let d = e.sum(1);
    let lse = m + d.log();
    let n = load(valid) as f32;
    let l = (lse - xy) * (1.0 - smoothing) + smoothing * (lse - sx / v as f32);
    let l = select(ok, l / n, 0.0);
    let scale = 1.0 / (d * n);
    let shift = smoothing / (v as f32 * n);
    let hot = cols.expand_dims(0) == y.expand_dims(1);
    let g = e * scale.expand_dims(1) - shift - select(hot, (1.0 - smoothing) / n, 0.0);
    store(
        at,
        select(ok.expand_dims(1), g, 0.0) as T,
        mk & live.expand_dims(1),
    );
    store(loss + r, l, live);
    atomic_add(mean, l.sum());
}

/// Unfused forward: the row's logsumexp (saved for the backward) and loss.
#[tile_kernel(num_warps = 8)]
pub fn ce_forward(
    logits: Ptr<T, { rows * v }>,
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    lses: Ptr<f32, rows>,
    loss: Ptr<f32, rows>,
    mean: Ptr<f32, 1>,
    rows: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const<{ [1024, 8192] }>,
    T: Type<{ [f32, bf16] }>,
) {
    let row = program_id(0);
    let y = load(labels + row);
    let ok = y != ignore;
    let base = logits + row * v;
    let mut m = f32::NEG_INFINITY;
    let mut d = 0.0;
    let mut sx = 0.0;
    for c in (0..v).step_by(BLOCK) {
        let cols = c + arange(0, BLOCK);
        let mk = cols < v;
        let x = select(mk, load(base + cols, mk) as f32, f32::NEG_INFINITY);
        let m2 = max(m, x.max());
        let e = ((x - m2) * 1.4426950408889634).exp2().sum();
        d = d * ((m - m2) * 1.4426950408889634).exp2() + e;
        if smoothing != 0.0 {
            sx += select(mk, x, 0.0).sum();
        }
        m = m2;
    }
    let lse = m + d.log();
    let xy = load(base + y, ok) as f32;
    let n = load(valid) as f32;
    let l = (lse - xy) * (1.0 - smoothing) + smoothing * (lse - sx / v as f32);
    let l = select(ok, l / n, 0.0);
    store(lses + row, lse);
    store(loss + row, l);
    atomic_add(mean, l);
}

/// Unfused backward: the gradient from the saved logsumexp, in place of the logits.
#[tile_kernel(num_warps = 8)]
pub fn ce_backward(
    logits: Ptr<T, { rows * v }>,
    labels: Ptr<i32, rows>,
    valid: Ptr<i32, 1>,
    lses: Ptr<f32, rows>,
    rows: i32,
    v: i32,
    ignore: i32,
    smoothing: f32,
    BLOCK: Const<{ [1024, 8192] }>,
    T: Type<{ [f32, bf16] }>,
) {
    let row = program_id(0);
    let y = load(labels + row);
    let ok = y != ignore;
    let base = logits + row * v;
    let lse = load(lses + row);
    let n = load(valid) as f32;
    for c in (0..v).step_by(BLOCK) {
        let cols = c + arange(0, BLOCK);
        let mk = cols < v;
        let x = load(base + cols, mk) as f32;
        let p = ((x - lse) * 1.4426950408889634).exp2();
        let g = (p - smoothing / v as f32 - select(cols == y, 1.0 - smoothing, 0.0)) / n;
        store(base + cols, select(ok, g, 0.0) as T, mk);
    }
}

/// Every kernel of the example (each specialization), for the tests.
#[allow(dead_code)] // the example itself launches them by name
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = vec![&ce_setup::KERNEL];
    for k in [
        &ce_loop::KERNELS[..],
        &ce_loop_wide::KERNELS[..],
        &ce_loop_full::KERNELS[..],
        &ce_loop_full_keep::KERNELS[..],
        &ce_row::KERNELS[..],
        &ce_row16::KERNELS[..],
        &ce_loop_any32::KERNELS[..],
        &ce_rows::KERNELS[..],
        &ce_forward::KERNELS[..],
        &ce_backward::KERNELS[..],
    ] {
        v.extend(k);
    }
    v
}
