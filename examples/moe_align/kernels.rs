//! The kernels of `moe_align`: vLLM's `moe_align_block_size` from atomics and scans, in two
//! forms that differ in where the atomics contend:
//!
//! - **per row** (5 kernels): `count_rows` counts each program's ids into its own row of a
//!   `programs × experts` matrix (atomics contend only among one program's 1024 ids);
//!   `column_sums` adds the columns into per-expert counts; `expert_offsets` turns them into
//!   padded slots (a `cumsum`), the block experts and the total; `row_cursors` gives each program
//!   its first slot per expert (an exclusive `cumsum` down each column); `scatter_rows` places
//!   each id at the old value of one atomic on its program's cursor.
//! - **per id** (3 kernels): `count_each` and `scatter_each` use one atomic per id on one counter
//!   per expert (every id of an expert contends for one address), around `expert_offsets`.
//!
//! Scratch state stays zero between calls (so repeated calls and CUDA-graph replays need no
//! memset): the per-row scatter zeroes its row of counts, the per-id scatter the counts.

use tile::prelude::*;

/// Fills this program's share of `sorted` with `n` (the pad value: slots no id takes keep it) and
/// counts its ids into its own row of `pc` (`rows × e`, zero on entry), so atomics contend only
/// among one program's ids.
#[tile_kernel]
pub fn count_rows(
    ids: Ptr<i32, n>,
    pc: Ptr<i32, { rows * e }>,
    sorted: Ptr<i32, padded>,
    n: i32,
    e: i32,
    padded: i32,
    rows: i32,
    BLOCK: Const<1024>,
) {
    let pid = program_id(0);
    let o = pid * BLOCK + arange(0, BLOCK);
    store(sorted + o, n, o < padded);
    let m = o < n;
    let x = load(ids + o, m, 0);
    atomic_add(pc + pid * e + x, 1, m & (x >= 0) & (x < e));
}

/// Each expert's count: the sum of its column of `pc`, `EC` experts per program.
#[tile_kernel]
pub fn column_sums(
    pc: Ptr<i32, { rows * e }>,
    counts: Ptr<i32, e>,
    e: i32,
    rows: i32,
    PB: Const<32>,
    EC: Const<32>,
) {
    let ex = program_id(0) * EC + arange(0, EC);
    let me = ex < e;
    let mut acc = full([PB, EC], 0);
    for p0 in (0..rows).step_by(PB) {
        let p = p0 + arange(0, PB);
        let at = p.expand_dims(1) * e + ex.expand_dims(0);
        acc += load(pc + at, (p < rows).expand_dims(1) & me.expand_dims(0), 0);
    }
    store(counts + ex, acc.sum(0), me);
}

/// Each program's first slot for each expert: the expert's start plus the counts of the programs
/// before it in its column of `pc` (an exclusive `cumsum` down the column, carried from one
/// `PB`-row tile to the next), into `cursor` (`rows × e`).
#[tile_kernel]
pub fn row_cursors(
    pc: Ptr<i32, { rows * e }>,
    starts: Ptr<i32, e>,
    cursor: Ptr<i32, { rows * e }>,
    e: i32,
    rows: i32,
    PB: Const<32>,
    EC: Const<32>,
) {
    let ex = program_id(0) * EC + arange(0, EC);
    let me = ex < e;
    let mut carry = load(starts + ex, me, 0);
    for p0 in (0..rows).step_by(PB) {
        let p = p0 + arange(0, PB);
        let mk = (p < rows).expand_dims(1) & me.expand_dims(0);
        let at = p.expand_dims(1) * e + ex.expand_dims(0);
        let t = load(pc + at, mk, 0);
        store(cursor + at, t.cumsum(0) - t + carry.expand_dims(0), mk);
        carry += t.sum(0);
    }
}

/// Each id takes the next slot of its expert in its program's row of `cursor` (the old value of
/// one atomic, contended only within the program); each program then zeroes its row of `pc`.
#[tile_kernel]
pub fn scatter_rows(
    ids: Ptr<i32, n>,
    pc: Ptr<i32, { rows * e }>,
    cursor: Ptr<i32, { rows * e }>,
    sorted: Ptr<i32, padded>,
    n: i32,
    e: i32,
    padded: i32,
    rows: i32,
    BLOCK: Const<1024>,
    EB: Const<{ [64, 256] }>,
) {
    let pid = program_id(0);
    let o = pid * BLOCK + arange(0, BLOCK);
    let m = o < n;
    let x = load(ids + o, m, 0);
    let ok = m & (x >= 0) & (x < e);
    let at = atomic_add(cursor + pid * e + x, 1, ok);
    store(sorted + at, o, ok);
    let ex = arange(0, EB);
    store(pc + pid * e + ex, 0, ex < e);
}

/// Fills this program's share of `sorted` with `n` and counts each id with one atomic.
#[tile_kernel]
pub fn count_each(
    ids: Ptr<i32, n>,
    counts: Ptr<i32, e>,
    sorted: Ptr<i32, padded>,
    n: i32,
    e: i32,
    padded: i32,
    BLOCK: Const<1024>,
) {
    let o = program_id(0) * BLOCK + arange(0, BLOCK);
    store(sorted + o, n, o < padded);
    let m = o < n;
    let x = load(ids + o, m, 0);
    atomic_add(counts + x, 1, m & (x >= 0) & (x < e));
}

/// Each id takes the next slot of its expert: the old value of one atomic on `starts`. Program 0
/// zeroes `counts`.
#[tile_kernel]
pub fn scatter_each(
    ids: Ptr<i32, n>,
    counts: Ptr<i32, e>,
    starts: Ptr<i32, e>,
    sorted: Ptr<i32, padded>,
    n: i32,
    e: i32,
    padded: i32,
    BLOCK: Const<1024>,
    EB: Const<{ [64, 256] }>,
) {
    let pid = program_id(0);
    let ex = arange(0, EB);
    store(counts + ex, 0, (ex < e) & (pid == 0));
    let o = pid * BLOCK + arange(0, BLOCK);
    let m = o < n;
    let x = load(ids + o, m, 0);
    let ok = m & (x >= 0) & (x < e);
    let at = atomic_add(starts + x, 1, ok);
    store(sorted + at, o, ok);
}

/// The padded counts' exclusive prefix sum (each expert's first slot) into `starts`, their total
/// into `total` (program 0), and the expert of each of this program's `BB` blocks of
/// `block_size` slots into `expert_ids`: the number of experts whose slots end at or before the
/// block's first slot, or -1 past the total.
#[tile_kernel]
pub fn expert_offsets(
    counts: Ptr<i32, e>,
    starts: Ptr<i32, e>,
    expert_ids: Ptr<i32, blocks>,
    total: Ptr<i32, 1>,
    e: i32,
    blocks: i32,
    block_size: i32,
    BB: Const<32>,
    EB: Const<{ [64, 256] }>,
) {
    let pid = program_id(0);
    let ex = arange(0, EB);
    let m = ex < e;
    let c = load(counts + ex, m, 0);
    let p = (c + block_size - 1) / block_size * block_size;
    let end = p.cumsum();
    let all = p.sum();
    store(starts + ex, end - p, m & (pid == 0));
    store(total, all, pid == 0);
    let j = pid * BB + arange(0, BB);
    let first = j * block_size;
    let before = (end.expand_dims(0) <= first.expand_dims(1)) & m.expand_dims(0);
    let which = (before as i32).sum(1);
    store(expert_ids + j, select(first < all, which, -1), j < blocks);
}

/// Every kernel of the example (each specialization), for the tests.
#[allow(dead_code)] // the example itself launches them by name
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = vec![
        &count_rows::KERNEL,
        &column_sums::KERNEL,
        &row_cursors::KERNEL,
        &count_each::KERNEL,
    ];
    for k in [
        &scatter_rows::KERNELS[..],
        &scatter_each::KERNELS[..],
        &expert_offsets::KERNELS[..],
    ] {
        v.extend(k);
    }
    v
}
