//! Kernels shared by the workspace tests: every example's kernels plus kernels that exercise the
//! rest of the language, and the list of all of them (for the IR and ptxas tests).

pub use tile_examples::act_and_mul::kernels as act_and_mul;
pub use tile_examples::elementwise_chains::kernels as elementwise_chains;
pub use tile_examples::fused_add_mul::kernels as fused_add_mul;
pub use tile_examples::fused_bias_gelu::kernels as fused_bias_gelu;
pub use tile_examples::fused_softmax::kernels as fused_softmax;
pub use tile_examples::gemm::kernels as gemm;
pub use tile_examples::gemm_bias_act::kernels as gemm_bias_act;
pub use tile_examples::qk_norm_rope::kernels as qk_norm_rope;
pub use tile_examples::softmax_regression::kernels as softmax_regression;

use tile::prelude::*;
use tile::stdlib::flip;
pub mod f8_dot;
pub mod floats;
pub mod int_dot;
pub mod while_loops;

#[tile_kernel]
/// Integer arithmetic: div/rem (with zero divisors), min/max, select, bitwise ops, negation.
pub fn int_ops(a: Ptr<i32, n>, b: Ptr<i32, n>, out: Ptr<i32, n>, n: i32, BLOCK: Const<256>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let x = load(a + offs, mask);
    let y = load(b + offs, mask, 1);
    let q = x / y + x % y;
    let r = select(x > y, min(x, y) * 3, max(x, -y)) ^ (q & 255) | !x;
    store(out + offs, r - offs, mask);
}

#[tile_kernel]
/// 64-bit integers and a scalar i64 argument.
pub fn i64_axpy(a: Ptr<i64, n>, out: Ptr<i64, n>, n: i32, s: i64, BLOCK: Const<512>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let mut v = load(a + offs, mask);
    v *= s;
    v += 7;
    store(out + offs, v, mask);
}

#[tile_kernel]
/// A masked read-modify-write of the same addresses in a loop: every iteration reads what the
/// one before stored (LLVM once hoisted the masked load, inline asm it took for memory-free,
/// out of the loop, and each iteration read the value from before it).
pub fn accumulate_in_place(
    out: Ptr<f32, n>,
    x: Ptr<f32, n>,
    n: i32,
    steps: i32,
    BLOCK: Const<256>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    for _ in 0..steps {
        store(out + offs, load(out + offs, m) * 0.5 + v, m);
    }
}

#[tile_kernel(num_warps = 8)]
/// Float clamp with NaN → 0, masks combined with `&&`, scalars by value.
pub fn clamp(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, lo: f32, hi: f32, BLOCK: Const<2048>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n && offs >= 0;
    let v = load(x + offs, mask, -1.5);
    let c = min(max(v, lo), hi);
    store(out + offs, select(v != v, 0.0, c) / 2.0 - -0.25, mask);
}

#[tile_kernel]
/// A small tile with more threads than elements, and a 2-D grid.
pub fn small_tile(
    x: Ptr<f32, { rows * 16 }>,
    out: Ptr<f32, { rows * 16 }>,
    rows: i32,
    BLOCK: Const<16>,
) {
    let row = program_id(1) * num_programs(0) + program_id(0);
    let offs = row * BLOCK + arange(0, BLOCK);
    let mask = offs < rows * BLOCK;
    store(out + offs, load(x + offs, mask) * 2.0 + 1, mask);
}

#[tile_kernel]
/// 2-D tiles: per-row and per-column sums of a `rows × cols` matrix, `BM × BN` per program, with
/// masks on both edges (a 2-D grid: axis 0 over row blocks, axis 1 over column blocks).
pub fn sums_2d(
    x: Ptr<f32, { rows * cols }>,
    row_sums: Ptr<f32, { rows * ncb }>,
    col_sums: Ptr<f32, { cols * nrb }>,
    rows: i32,
    cols: i32,
    ncb: i32,
    nrb: i32,
    BM: Const<16>,
    BN: Const<64>,
) {
    let rb = program_id(0);
    let cb = program_id(1);
    let r = rb * BM + arange(0, BM);
    let c = cb * BN + arange(0, BN);
    let mask = (r < rows).expand_dims(1) & (c < cols).expand_dims(0);
    let v = load(x + r.expand_dims(1) * cols + c.expand_dims(0), mask);
    store(row_sums + r * ncb + cb, v.sum(1), r < rows);
    store(col_sums + c * nrb + rb, v.sum(0), c < cols);
}

#[tile_kernel(num_warps = 4)]
/// LayerNorm of `BM` rows per program, each row in one `BN`-wide tile: row statistics by axis-1
/// reductions, weight and bias broadcast down the rows, mean and 1/std stored per row.
pub fn layernorm_rows(
    x: Ptr<f32, { rows * n }>,
    w: Ptr<f32, n>,
    b: Ptr<f32, n>,
    out: Ptr<f32, { rows * n }>,
    mean_out: Ptr<f32, rows>,
    rstd_out: Ptr<f32, rows>,
    rows: i32,
    n: i32,
    eps: f32,
    BM: Const<4>,
    BN: Const<256>,
) {
    let r = program_id(0) * BM + arange(0, BM);
    let c = arange(0, BN);
    let rmask = r < rows;
    let cmask = c < n;
    let mask = rmask.expand_dims(1) & cmask.expand_dims(0);
    let offs = r.expand_dims(1) * n + c.expand_dims(0);
    let v = load(x + offs, mask);
    let mean = v.sum(1) / (n as f32);
    let d = select(mask, v - mean.expand_dims(1), 0.0);
    let rstd = rsqrt((d * d).sum(1) / (n as f32) + eps);
    let y = d * rstd.expand_dims(1) * load(w + c, cmask) + load(b + c, cmask);
    store(out + offs, y, mask);
    store(mean_out + r, mean, rmask);
    store(rstd_out + r, rstd, rmask);
}

#[tile_kernel]
/// Transpose through 2-D tiles: `out[j][i] = x[i][j]`; one `arange` serves rows and columns
/// (the tile is square), and row and column maxima of the same tile meet in one sum, so the pass
/// must give one 1-D tensor two layouts (a `convert_layout`).
pub fn transpose_2d(
    x: Ptr<f32, { rows * cols }>,
    out: Ptr<f32, { rows * cols }>,
    diag: Ptr<f32, { cdiv_rows * 32 }>,
    rows: i32,
    cols: i32,
    cdiv_rows: i32,
    B: Const<32>,
) {
    let i = program_id(0) * B + arange(0, B);
    let j = program_id(1) * B + arange(0, B);
    let mask = (i.expand_dims(1) < rows) & (j.expand_dims(0) < cols);
    let v = load(
        x + i.expand_dims(1) * cols + j.expand_dims(0),
        mask,
        f32::NEG_INFINITY,
    );
    store(out + j.expand_dims(0) * rows + i.expand_dims(1), v, mask);
    // Maxima along both axes; summed element-wise (row k's max + column k's max).
    let s = v.max(1) + v.max(0);
    let k = arange(0, B);
    store(
        diag + (program_id(0) * num_programs(1) + program_id(1)) * B + k,
        s,
        i < rows,
    );
}

#[tile_kernel]
/// Outer products with broadcasting both ways, a scalar, and 2-D integer math.
pub fn outer_2d(
    a: Ptr<f32, m>,
    b: Ptr<i32, n>,
    out: Ptr<f32, { m * n }>,
    iout: Ptr<i32, { m * n }>,
    m: i32,
    n: i32,
    BM: Const<8>,
    BN: Const<128>,
) {
    let i = program_id(0) * BM + arange(0, BM);
    let j = arange(0, BN);
    let av = load(a + i, i < m);
    let bv = load(b + j, j < n);
    let mask = (i < m).expand_dims(1) & (j < n).expand_dims(0);
    let o = i.expand_dims(1) * n + j;
    store(out + o, av.expand_dims(1) * (bv as f32) + 0.5, mask);
    store(
        iout + o,
        i.expand_dims(1) * 1000 + bv.expand_dims(0) % 7,
        mask,
    );
}

#[tile_kernel(num_warps = 4)]
/// Loops: LayerNorm of rows longer than one tile, one program per row, three passes over the
/// row in `BLOCK`-wide steps (sum, sum of squared deviations, normalize) with a tile and a
/// scalar carried through the loops.
pub fn layernorm_looped(
    x: Ptr<f32, { rows * n }>,
    w: Ptr<f32, n>,
    b: Ptr<f32, n>,
    out: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    eps: f32,
    BLOCK: Const<256>,
) {
    let row = program_id(0) * n;
    let cols = arange(0, BLOCK);
    let mut acc = zeros(BLOCK);
    for off in (0..n).step_by(BLOCK) {
        let c = off + cols;
        acc += load(x + row + c, c < n);
    }
    let mean = acc.sum() / (n as f32);
    let mut var = 0.0;
    for off in (0..n).step_by(BLOCK) {
        let c = off + cols;
        let d = select(c < n, load(x + row + c, c < n) - mean, 0.0);
        var += (d * d).sum();
    }
    let rstd = rsqrt(var / (n as f32) + eps);
    for off in (0..n).step_by(BLOCK) {
        let c = off + cols;
        let m = c < n;
        let y = (load(x + row + c, m) - mean) * rstd * load(w + c, m) + load(b + c, m);
        store(out + row + c, y, m);
    }
}

#[tile_kernel]
/// Loops over 2-D tiles, nested: per row block, the column blocks accumulate a 2-D tile that is
/// reduced after the loop; an inner loop counts down a second carried value; the loop variable
/// feeds an integer carried value.
pub fn blocked_row_sums(
    x: Ptr<f32, { rows * cols }>,
    out: Ptr<f32, rows>,
    iout: Ptr<i32, rows>,
    rows: i32,
    cols: i32,
    BM: Const<8>,
    BN: Const<64>,
) {
    let r = program_id(0) * BM + arange(0, BM);
    let c = arange(0, BN);
    let mut acc = full([BM, BN], 0.0);
    let mut steps = 0;
    for j in (0..cols).step_by(BN) {
        let cc = j + c;
        let m = (r < rows).expand_dims(1) & (cc < cols).expand_dims(0);
        acc = acc + load(x + r.expand_dims(1) * cols + cc.expand_dims(0), m);
        for k in 0..2 {
            steps += k + j;
        }
    }
    store(out + r, acc.sum(1), r < rows);
    store(iout + r, full(BM, steps), r < rows);
}

#[tile_kernel]
/// `c = a @ b + c` for f16 `a` (`m × k`) and `b` (`k × n`), f32 `c`, in 32 × 32 blocks with a loop
/// over 16-wide slices of `k`: `dot` with an accumulator carried through a loop.
pub fn matmul_f16(
    a: Ptr<f16, { m * k }>,
    b: Ptr<f16, { k * n }>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    BM: Const<32>,
    BN: Const<32>,
    BK: Const<16>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let out = rows.expand_dims(1) * n + cols.expand_dims(0);
    let ok = (rows < m).expand_dims(1) & (cols < n).expand_dims(0);
    let mut acc = load(c + out, ok);
    for k0 in (0..k).step_by(BK) {
        let kk = k0 + ks;
        let at = load(
            a + rows.expand_dims(1) * k + kk.expand_dims(0),
            (rows < m).expand_dims(1) & (kk < k).expand_dims(0),
        );
        let bt = load(
            b + kk.expand_dims(1) * n + cols.expand_dims(0),
            (kk < k).expand_dims(1) & (cols < n).expand_dims(0),
        );
        acc = dot(at, bt, acc);
    }
    store(c + out, acc, ok);
}

#[tile_kernel]
/// `c = a @ b + c` for f32 tiles with `precision = tf32`: tensor cores (`mma.m16n8k8.tf32`) for
/// 32-row blocks, 8 and 16-wide slices of `k`; the FMA chain on rounded operands for 8-row
/// blocks (smaller than one instruction).
pub fn matmul_tf32(
    a: Ptr<f32, { m * k }>,
    b: Ptr<f32, { k * n }>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    BM: Const<{ [8, 32] }>,
    BN: Const<32>,
    BK: Const<{ [8, 16] }>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let out = rows.expand_dims(1) * n + cols.expand_dims(0);
    let ok = (rows < m).expand_dims(1) & (cols < n).expand_dims(0);
    let mut acc = load(c + out, ok);
    for k0 in (0..k).step_by(BK) {
        let kk = k0 + ks;
        let at = load(
            a + rows.expand_dims(1) * k + kk.expand_dims(0),
            (rows < m).expand_dims(1) & (kk < k).expand_dims(0),
        );
        let bt = load(
            b + kk.expand_dims(1) * n + cols.expand_dims(0),
            (kk < k).expand_dims(1) & (cols < n).expand_dims(0),
        );
        acc = dot(at, bt, acc, precision = tf32);
    }
    store(c + out, acc, ok);
}

#[tile_kernel]
/// `c = a @ b` for one 32 × 16 and one 16 × 32 f32 tile with `precision = tf32`, outside any
/// loop: the operands reach the tensor cores through `convert_layout` (no `cp.async` ring).
pub fn dot_tf32_once(a: Ptr<f32, 512>, b: Ptr<f32, 512>, c: Ptr<f32, 1024>) {
    let r = arange(0, 32);
    let k = arange(0, 16);
    let at = load(a + r.expand_dims(1) * 16 + k.expand_dims(0));
    let bt = load(b + k.expand_dims(1) * 32 + r.expand_dims(0));
    let out = c + r.expand_dims(1) * 32 + r.expand_dims(0);
    store(out, dot(at, bt, precision = tf32));
}

#[tile_kernel]
/// Two products of the same 32 × 32 f16 tiles, one on tensor cores and one as f32 FMAs, combined
/// element-wise: the FMA `dot` joins the tensor-core result's layout class and computes in a
/// blocked layout with conversions around it (found by tile-fuzz as an internal error).
pub fn mixed_dots(a: Ptr<f16, 1024>, b: Ptr<f16, 1024>, c: Ptr<f32, 1024>) {
    let r = arange(0, 32);
    let at = load(a + r.expand_dims(1) * 32 + r.expand_dims(0));
    let bt = load(b + r.expand_dims(1) * 32 + r.expand_dims(0));
    let out = c + r.expand_dims(1) * 32 + r.expand_dims(0);
    store(out, max(dot(at, bt), dot(at as f32, bt as f32)));
}

#[tile_kernel]
/// A `[1, 1]` tile reduced to `[1]` and broadcast over a `[1024]` tile: the 1-D values keep a
/// layout of their own instead of the slice of the `[1, 1]` layout, which would have put all
/// 1024 elements in every thread (found by tile-fuzz: 12 s to compile).
pub fn wide_from_unit(x: Ptr<f32, 1024>, y: Ptr<f32, 1>, out: Ptr<f32, 1024>) {
    let o = arange(0, 1024);
    let u = arange(0, 1).expand_dims(1) + arange(0, 1).expand_dims(0);
    let s = load(y + u).min(0);
    store(out + o, load(x + o) * s + o as f32);
}

#[tile_kernel]
/// A kernel whose name is a raw identifier.
pub fn r#type(x: Ptr<f32, n>, n: i32) {
    let o = arange(0, 128);
    store(x + o, 2.0, o < n);
}

#[tile_kernel]
/// A kernel whose name is not ASCII.
pub fn füllen(x: Ptr<f32, n>, n: i32) {
    let o = arange(0, 128);
    store(x + o, 3.0, o < n);
}

#[tile_kernel(num_warps = auto(8))]
/// An element-type specialization: one instance per declared `T` (and per `BLOCK`), the launch
/// picking the instance of its buffers' type.
pub fn axpb_typed(
    x: Ptr<T, n>,
    out: Ptr<T, n>,
    n: i32,
    a: f32,
    T: Type<{ [f32, f16, bf16] }>,
    BLOCK: Const<{ [256, 1024] }>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    store(out + offs, ((load(x + offs, m) as f32) * a + 1.0) as T, m);
}

#[tile_kernel]
/// `argmax`/`argmin`: per row of a `rows × cols` matrix (axis 1), per column block (axis 0) and
/// of a whole 1-D row; masked elements load ∓∞ so that they never win.
pub fn arg_extremes(
    x: Ptr<f32, { rows * 32 }>,
    row_max: Ptr<i32, rows>,
    col_min: Ptr<i32, 32>,
    first_max: Ptr<i32, 1>,
    rows: i32,
    BM: Const<64>,
) {
    let r = arange(0, BM);
    let c = arange(0, 32);
    let ok = (r < rows).expand_dims(1);
    let offs = r.expand_dims(1) * 32 + c.expand_dims(0);
    let hi = load(x + offs, ok, f32::NEG_INFINITY);
    // One read of the tile: a second masked load of the same addresses with +∞ as `other`
    // kept 16 more registers live, and ptxas 12 spilled 8 bytes for it on sm_80 or sm_90a once
    // the first reduction lost its (unneeded) leading barrier (docs/DECISIONS.md).
    let lo = select(ok, hi, f32::INFINITY);
    store(row_max + r, hi.argmax(1), r < rows);
    store(col_min + c, lo.argmin(0));
    store(first_max, load(x + c).argmax());
}

#[tile_kernel]
/// `if` on compile-time integers: each `MODE` holds only its branch (one binding a name of its own).
pub fn static_branches(
    x: Ptr<f32, n>,
    out: Ptr<f32, n>,
    n: i32,
    MODE: Const<{ [0, 1, 2] }>,
    BLOCK: Const<256>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let mut y = v;
    if MODE == 0 {
        y = v * 2.0;
    } else if MODE == 1 && BLOCK > 128 {
        let t = v + 1.0;
        y = t * t;
    } else {
        y = -v;
    }
    store(out + offs, y, m);
}

#[tile_kernel]
/// `if` on scalars: an `else if` chain assigning a tile and a scalar (a reduction inside a
/// branch), a branch without `else` that stores, and one guarded by a loaded flag.
pub fn branchy(x: Ptr<f32, n>, out: Ptr<f32, n>, flags: Ptr<i32, 2>, n: i32, BLOCK: Const<256>) {
    let pid = program_id(0);
    let offs = pid * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let mut y = v;
    let mut s = 0.0;
    if pid % 2 == 0 {
        y = v * 2.0;
        s = v.sum();
    } else if pid % 3 == 0 {
        y = v - 1.0;
    } else {
        s = 1.0;
    }
    if load(flags) > 0 {
        store(out + offs, y + s, m);
    }
    if pid == 0 {
        store(flags + 1, 7);
    }
}

#[tile_kernel]
/// 64-bit offsets: fills `n` elements (possibly more than `i32::MAX`) with `v`, and copies the
/// 64 elements from `start` into `tail`.
pub fn fill_i64(
    out: Ptr<f32, n>,
    tail: Ptr<f32, 64>,
    n: i64,
    start: i64,
    v: f32,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) as i64 * BLOCK + arange(0, BLOCK) as i64;
    store(out + offs, v + (offs % 7) as f32, offs < n);
    if program_id(0) == 0 {
        let t = arange(0, 64) as i64;
        store(tail + t, load(out + start + t, start + t < n, -1.0));
    }
}

#[tile_kernel]
/// `bool` buffers: a mask read from memory selects, and the comparison is stored back as bytes.
pub fn bool_mask(
    x: Ptr<f32, n>,
    keep: Ptr<bool, n>,
    out: Ptr<f32, n>,
    pos: Ptr<bool, n>,
    n: i32,
    BLOCK: Const<256>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    store(out + offs, select(load(keep + offs, m), v, 0.0), m);
    store(pos + offs, v > 0.0, m);
}

#[tile_kernel(num_warps = 4)]
/// `roll` through each of its lowerings: by half along the inner axis (lane shuffles; bf16 two to
/// a shuffle), by half along rows (the thread's own slots, or warps through shared memory for a
/// 4-row tile), by other shifts (shared memory), on a reduction's slice layout and on a 1-D `i32`
/// tile. `out` holds the f32 results one after another.
pub fn rolls(
    x: Ptr<f32, 8192>,
    h: Ptr<bf16, 8192>,
    out: Ptr<f32, 33472>,
    hout: Ptr<bf16, 8192>,
    iout: Ptr<i32, 256>,
) {
    let r = arange(0, 64);
    let c = arange(0, 128);
    let offs = r.expand_dims(1) * 128 + c.expand_dims(0);
    let v = load(x + offs);
    store(out + offs, v.roll(64, 1));
    store(out + 8192 + offs, v.roll(32, 0));
    store(out + 16384 + offs, v.roll(3, 1));
    store(out + 24576 + offs, v.roll(-5, 0));
    let r4 = arange(0, 4);
    let offs4 = r4.expand_dims(1) * 128 + c.expand_dims(0);
    store(out + 32768 + offs4, load(x + offs4).roll(2, 0));
    store(out + 33280 + r, v.sum(1).roll(32, 0));
    store(out + 33344 + c, v.max(0).roll(64, 0));
    store(hout + offs, load(h + offs).roll(64, 1));
    let i = arange(0, 256);
    store(iout + i, (i * 3).roll(128, 0));
}

#[tile_kernel]
/// `trans`, `reshape` and `broadcast_to` on one `BM × BN` block of a `rows × cols` matrix (the
/// grid's programs over its blocks; masked-off elements read 0): `t` is the matrix transposed
/// (`cols × rows`, the block's transpose stored through the transposed pointer tile); `flat`
/// and `swapped` hold, per block (`BM · BN` elements from `(pid(0) · grid(1) + pid(1)) · BM · BN`),
/// its elements in row-major order as a 1-D tile and as a `BN × BM` tile; `rows0` is the matrix
/// with every row of a block replaced by the block's first row (a 1-D row broadcast).
pub fn shapes_2d(
    x: Ptr<T>,
    t: Ptr<T>,
    flat: Ptr<T>,
    swapped: Ptr<T>,
    rows0: Ptr<T>,
    rows: i32,
    cols: i32,
    T: Type<{ [f32, i32] }>,
    BM: Const<{ [1, 16, 64] }>,
    BN: Const<{ [1, 64] }>,
) {
    let i = program_id(0) * BM + arange(0, BM);
    let j = program_id(1) * BN + arange(0, BN);
    let mask = (i < rows).expand_dims(1) & (j < cols).expand_dims(0);
    let v = load(x + i.expand_dims(1) * cols + j.expand_dims(0), mask);
    store(
        t + j.expand_dims(1) * rows + i.expand_dims(0),
        v.trans(),
        mask.trans(),
    );
    let base = (program_id(0) * num_programs(1) + program_id(1)) * (BM * BN);
    store(flat + base + arange(0, BM * BN), v.reshape(BM * BN));
    let (a, b) = (arange(0, BN), arange(0, BM));
    store(
        swapped + base + a.expand_dims(1) * BM + b.expand_dims(0),
        reshape(v, [BN, BM]),
    );
    let first = load(
        x + program_id(0) * BM * cols + j,
        (j < cols) & (program_id(0) * BM < rows),
    );
    store(
        rows0 + i.expand_dims(1) * cols + j.expand_dims(0),
        first.broadcast_to([BM, BN]),
        mask,
    );
}

#[tile_kernel(num_warps = 4)]
/// Products with transposed operands, as attention writes them, on one block: `s = q · kᵀ`
/// (`q` 64 × 64 and `k` 32 × 64, both loaded row by row), `st = sᵀ` where `sᵀ > 0` (a
/// transposed product and a transposed bool tile) and `u = qᵀ · q`.
pub fn trans_dots(
    q: Ptr<T, 4096>,
    k: Ptr<T, 2048>,
    s: Ptr<f32, 2048>,
    st: Ptr<f32, 2048>,
    u: Ptr<f32, 4096>,
    T: Type<{ [f16, f32] }>,
) {
    let m = arange(0, 64);
    let n = arange(0, 32);
    let qt = load(q + m.expand_dims(1) * 64 + m.expand_dims(0));
    let kt = load(k + n.expand_dims(1) * 64 + m.expand_dims(0));
    let p = dot(qt, kt.trans());
    store(s + m.expand_dims(1) * 32 + n.expand_dims(0), p);
    let positive = trans(p > 0.0);
    store(
        st + n.expand_dims(1) * 64 + m.expand_dims(0),
        select(positive, p.trans(), 0.0),
    );
    store(
        u + m.expand_dims(1) * 64 + m.expand_dims(0),
        dot(qt.trans(), qt),
    );
}

#[tile_kernel(num_warps = 4)]
/// `gather` on awkward shapes, both axes, indices of other extents than the source along the
/// axis, and indices outside `0..n` (taken modulo `n`); [`GATHER_CASES`] has the table of where
/// each source, index and result lies in `x`, `h`, `idx`, `out` and `hout` (`idx` parallel to
/// `out`, then the bf16 case's indices).
pub fn gathers(
    x: Ptr<f32, 2435>,
    h: Ptr<bf16, 1024>,
    idx: Ptr<i32, 6659>,
    out: Ptr<f32, 5635>,
    hout: Ptr<bf16, 1024>,
) {
    let (c2, c4, c16, c64, c128) = (
        arange(0, 2),
        arange(0, 4),
        arange(0, 16),
        arange(0, 64),
        arange(0, 128),
    );
    // A 16 × 64 tile along its columns (indices 16 × 128) and its rows (indices 32 × 64).
    let a = load(x + c16.expand_dims(1) * 64 + c64.expand_dims(0));
    let o1 = c16.expand_dims(1) * 128 + c128.expand_dims(0);
    store(out + o1, a.gather(load(idx + o1), 1));
    let o2 = 2048 + arange(0, 32).expand_dims(1) * 64 + c64.expand_dims(0);
    store(out + o2, gather(a, load(idx + o2), 0));
    // A 64 × 16 tile along its rows (indices 64 × 16) and its columns (indices 64 × 2).
    let b = load(x + 1024 + c64.expand_dims(1) * 16 + c16.expand_dims(0));
    let o3 = 4096 + c64.expand_dims(1) * 16 + c16.expand_dims(0);
    store(out + o3, b.gather(load(idx + o3), 0));
    let o4 = 5120 + c64.expand_dims(1) * 2 + c2.expand_dims(0);
    store(out + o4, b.gather(load(idx + o4), 1));
    // 1-D: 128 elements by 128 indices, 1 element by 2 indices, 2 elements by 1 index.
    let v = load(x + 2048 + c128);
    store(out + 5248 + c128, v.gather(load(idx + 5248 + c128), 0));
    let one = load(x + 2176 + arange(0, 1));
    store(out + 5376 + c2, one.gather(load(idx + 5376 + c2), 0));
    let two = load(x + 2177 + c2);
    let z = arange(0, 1);
    store(out + 5378 + z, two.gather(load(idx + 5378 + z), 0));
    // A 64 × 4 tile along its rows of 4, which each thread holds whole (the select path).
    let o5 = c64.expand_dims(1) * 4 + c4.expand_dims(0);
    let w = load(x + 2179 + o5);
    store(out + 5379 + o5, w.gather(load(idx + 5379 + o5), 1));
    // bf16, 16 × 64 along its columns.
    let hx = c16.expand_dims(1) * 64 + c64.expand_dims(0);
    store(hout + hx, load(h + hx).gather(load(idx + 5635 + hx), 1));
}

/// `gather {axis}` of a row-major `shape` source by a row-major index of shape `to` (the
/// source's rank; its extents off `axis`): the source at the index's coordinates, the one along
/// `axis` replaced by the index modulo the extent.
pub fn gather_ref<T: Copy>(
    src: &[T],
    shape: &[usize],
    index: &[i32],
    to: &[usize],
    axis: usize,
) -> Vec<T> {
    let n = shape[axis];
    let inner: usize = to[axis + 1..].iter().product();
    (0..index.len())
        .map(|i| {
            let (outer, rest) = (i / (to[axis] * inner), i % inner);
            let at = index[i].rem_euclid(n as i32) as usize;
            src[(outer * n + at) * inner + rest]
        })
        .collect()
}

/// One `gather` of the `gathers` kernel: where its source lies in `x` and its result in `out`
/// (its indices at the same offset in `idx`).
pub struct GatherCase {
    /// What the case is, for messages.
    pub name: &'static str,
    /// The source's offset in `x`.
    pub src: usize,
    /// The source's shape.
    pub shape: &'static [usize],
    /// The result's (and the indices') offset in `out` (`idx`).
    pub at: usize,
    /// The index's shape, which the result has.
    pub to: &'static [usize],
    /// The axis gathered along.
    pub axis: usize,
}

const fn case(
    name: &'static str,
    src: usize,
    shape: &'static [usize],
    at: usize,
    to: &'static [usize],
    axis: usize,
) -> GatherCase {
    GatherCase {
        name,
        src,
        shape,
        at,
        to,
        axis,
    }
}

/// The `gather`s of the `gathers` kernel, in its order.
pub const GATHER_CASES: [GatherCase; 8] = [
    case("16 × 64 along columns", 0, &[16, 64], 0, &[16, 128], 1),
    case("16 × 64 along rows", 0, &[16, 64], 2048, &[32, 64], 0),
    case("64 × 16 along rows", 1024, &[64, 16], 4096, &[64, 16], 0),
    case("64 × 16 along columns", 1024, &[64, 16], 5120, &[64, 2], 1),
    case("128", 2048, &[128], 5248, &[128], 0),
    case("1 by 2 indices", 2176, &[1], 5376, &[2], 0),
    case("2 by 1 index", 2177, &[2], 5378, &[1], 0),
    case("64 × 4 along rows of 4", 2179, &[64, 4], 5379, &[64, 4], 1),
];

/// Inputs of the `gathers` kernel: `x`, `h`, and indices spread over `[-2n, 2n)` for each
/// case's `n` (half of them negative, a quarter past the end).
pub fn gather_inputs(seed: u64) -> (Vec<f32>, Vec<bf16>, Vec<i32>) {
    let mut r = Rng(seed);
    let x: Vec<f32> = (0..2435).map(|_| r.f32()).collect();
    let h: Vec<bf16> = (0..1024).map(|_| bf16::from_f32(r.f32())).collect();
    let mut idx = vec![0i32; 6659];
    let mut fill = |at: usize, len: usize, n: usize| {
        for v in &mut idx[at..at + len] {
            *v = (r.next() % (4 * n as u64)) as i32 - 2 * n as i32;
        }
    };
    for c in &GATHER_CASES {
        fill(c.at, c.to.iter().product(), c.shape[c.axis]);
    }
    fill(5635, 1024, 64);
    (x, h, idx)
}

#[tile_kernel(num_warps = 4)]
/// The standard library's `flip` along both axes of a `16 × 64` tile, the one axis of a
/// 128-element and a 1-element tile, and along the rows of 4 of a `64 × 4` tile (held whole
/// by each thread); `out` holds the results one after another, as `x` the sources.
pub fn flips(x: Ptr<f32, 2433>, out: Ptr<f32, 2433>) {
    let (c4, c16, c64) = (arange(0, 4), arange(0, 16), arange(0, 64));
    let o = c16.expand_dims(1) * 64 + c64.expand_dims(0);
    let a = load(x + o);
    store(out + o, flip(a, 1));
    store(out + 1024 + o, flip(a, 0));
    let c128 = arange(0, 128);
    store(out + 2048 + c128, flip(load(x + 2048 + c128), 0));
    let z = arange(0, 1);
    store(out + 2176 + z, flip(load(x + 2176 + z), 0));
    let o4 = c64.expand_dims(1) * 4 + c4.expand_dims(0);
    store(out + 2177 + o4, flip(load(x + 2177 + o4), 1));
}

/// The integer types beyond `i32`/`i64`: 8- and 16-bit loads widened by their signedness and
/// narrowed by truncation, unsigned division, remainder, `max` and comparison, logical and
/// arithmetic shifts (amounts past the width, negative, of another type), an int4 unpack, `u64`
/// arithmetic, bitcasts both ways, float to unsigned saturation and unsigned to float.
#[tile_kernel]
#[allow(clippy::too_many_arguments)]
pub fn int_types(
    a8: Ptr<i8, n>,
    b8: Ptr<u8, n>,
    c16: Ptr<i16, n>,
    w: Ptr<u32, n>,
    q: Ptr<u64, n>,
    s: Ptr<i32, n>,
    f: Ptr<f32, n>,
    o8: Ptr<i8, n>,
    ou8: Ptr<u8, n>,
    o16: Ptr<i16, n>,
    ow: Ptr<u32, n>,
    oq: Ptr<u64, n>,
    os: Ptr<i32, n>,
    of: Ptr<f32, n>,
    n: i32,
    BLOCK: Const<256>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let x8 = load(a8 + offs, m);
    let y8 = load(b8 + offs, m);
    let z16 = load(c16 + offs, m);
    let u = load(w + offs, m, 1);
    let v = load(q + offs, m);
    let k = load(s + offs, m);
    let x = load(f + offs, m);
    let wide = x8 as i32 + y8 as i32 + z16 as i32;
    let ud = (u / (y8 as u32 + 1)) ^ (u % 7) ^ max(u, 3000000000);
    let sh = (u >> (k & 31)) | (u << 3) | (u >> k);
    let sar = (k >> (k & 63)) ^ (k << (y8 as i32)) ^ (k >> -1);
    let below = select(u < 2147483648, 1, 0);
    let bits = x.bitcast(u32);
    let negated = bitcast(bits ^ 2147483648, f32);
    let nibble = ((u >> ((offs & 7) * 4)) & 15) as i32 - 8;
    let v2 = v * 3 + u as u64 - (v >> 1) + (v / 1000000007) % 5;
    store(o8 + offs, wide as i8, m);
    store(ou8 + offs, (x * 300.0) as u8, m);
    store(o16 + offs, (bits >> 16) as i16, m);
    store(ow + offs, ud ^ sh ^ (below as u32), m);
    store(oq + offs, v2, m);
    store(os + offs, sar ^ nibble ^ wide, m);
    store(of + offs, negated + u as f32 + v as f32, m);
}

/// Unsigned reductions (`max`, `min`, `sum`, `argmax` over `u32` values past `i32::MAX`), an
/// unsigned running maximum, a `u32` `atomic_max`, and the bits of `f16` and `bf16` tiles through
/// `bitcast`.
#[tile_kernel]
#[allow(clippy::too_many_arguments)]
pub fn unsigned_reduce(
    w: Ptr<u32, n>,
    h: Ptr<f16, n>,
    g: Ptr<bf16, n>,
    out: Ptr<u32, 4>,
    hb: Ptr<i16, n>,
    gb: Ptr<bf16, n>,
    top: Ptr<u32, 1>,
    cm: Ptr<u32, n>,
    n: i32,
    BLOCK: Const<512>,
) {
    let offs = arange(0, BLOCK);
    let m = offs < n;
    let u = load(w + offs, m);
    store(out, select(m, u, 0).max());
    store(out + 1, select(m, u, 4294967295).min());
    store(out + 2, select(m, u, 0).sum());
    store(out + 3, select(m, u, 0).argmax() as u32);
    store(hb + offs, load(h + offs, m).bitcast(i16), m);
    let gbits = load(g + offs, m).bitcast(i16) ^ 32767;
    store(gb + offs, gbits.bitcast(bf16), m);
    atomic_max(top + offs * 0, u, m);
    store(cm + offs, select(m, u, 0).cummax(0), m);
}

/// `x << a` for an amount read as unsigned (0 past the width).
fn shl32(x: u32, a: u32) -> u32 {
    if a >= 32 {
        0
    } else {
        x << a
    }
}

/// Logical `x >> a` (0 past the width).
fn shr32(x: u32, a: u32) -> u32 {
    if a >= 32 {
        0
    } else {
        x >> a
    }
}

/// Arithmetic `x >> a` (the sign past the width).
fn sar32(x: i32, a: u32) -> i32 {
    x >> a.min(31)
}

/// Random values of the types [`int_types`] reads, with the edges of each type mixed in.
struct IntInputs {
    a8: Vec<i8>,
    b8: Vec<u8>,
    c16: Vec<i16>,
    w: Vec<u32>,
    q: Vec<u64>,
    s: Vec<i32>,
    f: Vec<f32>,
}

fn int_inputs(n: usize, seed: u64) -> IntInputs {
    let mut r = Rng(seed);
    let mut pick = |edges: &[u64]| {
        let x = r.next();
        if x % 5 == 0 {
            edges[(x >> 8) as usize % edges.len()]
        } else {
            r.next()
        }
    };
    let mut a8 = vec![];
    let mut b8 = vec![];
    let mut c16 = vec![];
    let mut w = vec![];
    let mut q = vec![];
    let mut s = vec![];
    let mut f = vec![];
    let specials = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.999,
        1.0e-40,
    ];
    for i in 0..n {
        a8.push(pick(&[0x80, 0x7f, 0xff, 0]) as i8);
        b8.push(pick(&[0, 255, 31, 32, 33]) as u8);
        c16.push(pick(&[0x8000, 0x7fff, 0xffff]) as i16);
        w.push(pick(&[0, u64::from(u32::MAX), 1 << 31, (1 << 31) - 1, 1]) as u32);
        q.push(pick(&[0, u64::MAX, 1 << 63, 1_000_000_007]));
        s.push(pick(&[(-1i64) as u64, 31, 32, 63, 64, (-32i64) as u64, 1 << 31]) as i32);
        let x = (pick(&[0]) >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
        f.push(if i % 11 == 3 {
            specials[i % specials.len()]
        } else {
            x
        });
    }
    IntInputs {
        a8,
        b8,
        c16,
        w,
        q,
        s,
        f,
    }
}

/// [`int_types`] on `dev` against Rust, at every size of [`SIZES`], inputs with the edges of
/// each type, bit for bit.
pub fn check_int_types(dev: &Device) {
    for (t, &n) in SIZES.iter().enumerate() {
        let i = int_inputs(n, 40 + t as u64);
        let (a8, b8, c16) = (
            dev.upload(&i.a8).unwrap(),
            dev.upload(&i.b8).unwrap(),
            dev.upload(&i.c16).unwrap(),
        );
        let (w, q, s, f) = (
            dev.upload(&i.w).unwrap(),
            dev.upload(&i.q).unwrap(),
            dev.upload(&i.s).unwrap(),
            dev.upload(&i.f).unwrap(),
        );
        let mut o8 = dev.zeros::<i8>(n).unwrap();
        let mut ou8 = dev.zeros::<u8>(n).unwrap();
        let mut o16 = dev.zeros::<i16>(n).unwrap();
        let mut ow = dev.zeros::<u32>(n).unwrap();
        let mut oq = dev.zeros::<u64>(n).unwrap();
        let mut os = dev.zeros::<i32>(n).unwrap();
        let mut of = dev.zeros::<f32>(n).unwrap();
        int_types::launch(
            dev,
            Grid::x(cdiv(n, 256)),
            &a8,
            &b8,
            &c16,
            &w,
            &q,
            &s,
            &f,
            &mut o8,
            &mut ou8,
            &mut o16,
            &mut ow,
            &mut oq,
            &mut os,
            &mut of,
            n as i32,
        )
        .unwrap();
        let (o8, ou8, o16) = (
            dev.download(&o8).unwrap(),
            dev.download(&ou8).unwrap(),
            dev.download(&o16).unwrap(),
        );
        let (ow, oq, os, of) = (
            dev.download(&ow).unwrap(),
            dev.download(&oq).unwrap(),
            dev.download(&os).unwrap(),
            dev.download(&of).unwrap(),
        );
        for e in 0..n {
            let (x8, y8, z16, u, v, k, x) =
                (i.a8[e], i.b8[e], i.c16[e], i.w[e], i.q[e], i.s[e], i.f[e]);
            let wide = i32::from(x8) + i32::from(y8) + i32::from(z16);
            let ud = (u / (u32::from(y8) + 1)) ^ (u % 7) ^ u.max(3_000_000_000);
            let sh = shr32(u, (k & 31) as u32) | u.wrapping_shl(3) | shr32(u, k as u32);
            let sar = sar32(k, (k & 63) as u32)
                ^ (shl32(k as u32, u32::from(y8)) as i32)
                ^ sar32(k, u32::MAX);
            let below = u32::from(u < 1 << 31);
            let bits = x.to_bits();
            let negated = f32::from_bits(bits ^ 0x8000_0000);
            let nibble = ((u >> ((e as u32 & 7) * 4)) & 15) as i32 - 8;
            let v2 = v
                .wrapping_mul(3)
                .wrapping_add(u64::from(u))
                .wrapping_sub(v >> 1)
                .wrapping_add((v / 1_000_000_007) % 5);
            let want_f = negated + u as f32 + v as f32;
            let at = format!("n = {n}, element {e}: inputs {x8} {y8} {z16} {u} {v} {k} {x}");
            assert_eq!(o8[e], wide as i8, "o8, {at}");
            assert_eq!(ou8[e], (x * 300.0) as u8, "ou8, {at}");
            assert_eq!(o16[e], (bits >> 16) as i16, "o16, {at}");
            assert_eq!(ow[e], ud ^ sh ^ below, "ow, {at}");
            assert_eq!(oq[e], v2, "oq, {at}");
            assert_eq!(os[e], sar ^ nibble ^ wide, "os, {at}");
            assert!(
                of[e].to_bits() == want_f.to_bits() || of[e].is_nan() && want_f.is_nan(),
                "of, {at}: {} vs {want_f}",
                of[e]
            );
        }
    }
}

/// [`unsigned_reduce`] on `dev` against Rust, bit for bit.
pub fn check_unsigned_reduce(dev: &Device) {
    for n in [1usize, 17, 511, 512] {
        let i = int_inputs(n, n as u64);
        let h: Vec<f16> = i.f.iter().map(|&x| f16::from_f32(x)).collect();
        let g: Vec<bf16> = i.f.iter().map(|&x| bf16::from_f32(-x)).collect();
        let (w, hd, gd) = (
            dev.upload(&i.w).unwrap(),
            dev.upload(&h).unwrap(),
            dev.upload(&g).unwrap(),
        );
        let mut out = dev.zeros::<u32>(4).unwrap();
        let mut hb = dev.zeros::<i16>(n).unwrap();
        let mut gb = dev.zeros::<bf16>(n).unwrap();
        let mut top = dev.upload(&[7u32]).unwrap();
        let mut cm = dev.zeros::<u32>(n).unwrap();
        unsigned_reduce::launch(
            dev,
            Grid::x(1),
            &w,
            &hd,
            &gd,
            &mut out,
            &mut hb,
            &mut gb,
            &mut top,
            &mut cm,
            n as i32,
        )
        .unwrap();
        let (out, hb, gb, top) = (
            dev.download(&out).unwrap(),
            dev.download(&hb).unwrap(),
            dev.download(&gb).unwrap(),
            dev.download(&top).unwrap(),
        );
        let cm = dev.download(&cm).unwrap();
        let running: Vec<u32> =
            i.w.iter()
                .scan(0u32, |a, &u| {
                    *a = (*a).max(u);
                    Some(*a)
                })
                .collect();
        assert_eq!(cm, running, "n = {n}: cummax");
        let max = *i.w.iter().max().unwrap();
        let first_max = i.w.iter().position(|&u| u == max).unwrap() as u32;
        let sum = i.w.iter().fold(0u32, |a, &b| a.wrapping_add(b));
        assert_eq!(
            out,
            [max, *i.w.iter().min().unwrap(), sum, first_max],
            "n = {n}"
        );
        assert_eq!(top[0], max.max(7), "n = {n}");
        for e in 0..n {
            assert_eq!(hb[e], h[e].to_bits() as i16, "n = {n}, element {e}");
            assert_eq!(
                gb[e].to_bits(),
                g[e].to_bits() ^ 0x7fff,
                "n = {n}, element {e}"
            );
        }
    }
}

/// `u32` and `u64` scalar parameters: an extent, a shift amount and a multiplier beyond the
/// signed types' range.
#[tile_kernel]
pub fn unsigned_scalars(
    x: Ptr<u32, m>,
    out: Ptr<u64, m>,
    m: u32,
    a: u32,
    b: u64,
    BLOCK: Const<256>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = (offs as u32) < m;
    let v = load(x + offs, mask);
    store(out + offs, ((v >> (a % 32)) as u64) * b + a as u64, mask);
}

/// [`unsigned_scalars`] on `dev` against Rust, for amounts and multipliers past `i32`/`i64`.
pub fn check_unsigned_scalars(dev: &Device) {
    for (m, a, b) in [
        (1usize, 0u32, 1u64),
        (1000, 4_000_000_007, u64::MAX - 2),
        (70_001, 31, 1 << 63),
    ] {
        let x: Vec<u32> = (0..m as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        let xd = dev.upload(&x).unwrap();
        let mut out = dev.zeros::<u64>(m).unwrap();
        unsigned_scalars::launch(dev, Grid::x(cdiv(m, 256)), &xd, &mut out, m as u32, a, b)
            .unwrap();
        let got = dev.download(&out).unwrap();
        for (i, (&v, &g)) in x.iter().zip(&got).enumerate() {
            let want = u64::from(v >> (a % 32))
                .wrapping_mul(b)
                .wrapping_add(u64::from(a));
            assert_eq!(g, want, "m = {m}, a = {a}, b = {b}, element {i}");
        }
    }
}

#[tile_kernel]
/// Program `g` copies the first `n` elements of the buffer at address `src[g]` to the buffer at
/// address `dst[g]`, tripled: the tables of a grouped kernel (`x as Ptr<T>`).
pub unsafe fn gather_rows(src: Ptr<i64>, dst: Ptr<i64>, n: i32, BLOCK: Const<64>) {
    let g = program_id(0);
    let from = load(src + g) as Ptr<f32>;
    let to = load(dst + g) as Ptr<f32>;
    let offs = arange(0, BLOCK);
    let v = load(from + offs, mask = offs < n, other = 0.0);
    store(to + offs, v * 3.0, mask = offs < n);
}

#[tile_kernel(num_warps = 4, num_stages = 3)]
/// `c = a @ b` written as the guide writes a GEMM: plain pointer arithmetic and masks, a 2-D grid
/// of `128 × 128` blocks, `K` in slices of 32. Its operand loads read the boxes of `a` and `b`
/// (implied descriptors): on Hopper with aligned arguments the copy engine fetches them.
pub fn pointer_gemm(
    a: Ptr<f16, { m * k }>,
    b: Ptr<f16, { k * n }>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    BM: Const<128>,
    BN: Const<128>,
    BK: Const<32>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let kk = k0 + ks;
        let at = load(
            a + rows.expand_dims(1) * k + kk.expand_dims(0),
            (rows < m).expand_dims(1) & (kk < k).expand_dims(0),
        );
        let bt = load(
            b + kk.expand_dims(1) * n + cols.expand_dims(0),
            (kk < k).expand_dims(1) & (cols < n).expand_dims(0),
        );
        acc = dot(at, bt, acc);
    }
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

#[tile_kernel(num_warps = 4, num_stages = 3)]
/// `c = a @ b` with `K` read in blocks of 32 in the order the table `pages` lists them (step `j`
/// reads block `pages[j]`; every block once): the operands' addresses come from a load in the
/// loop, as a paged cache's keys do. Each copy of the ring loads its own step's entry first.
pub fn paged_gemm(
    a: Ptr<f16, { m * k }>,
    b: Ptr<f16, { k * n }>,
    pages: Ptr<i32>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    BM: Const<64>,
    BN: Const<64>,
    BK: Const<32>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let kk = load(pages + k0 / BK) * BK + ks;
        let at = load(
            a + rows.expand_dims(1) * k + kk.expand_dims(0),
            (rows < m).expand_dims(1) & (kk < k).expand_dims(0),
        );
        let bt = load(
            b + kk.expand_dims(1) * n + cols.expand_dims(0),
            (kk < k).expand_dims(1) & (cols < n).expand_dims(0),
        );
        acc = dot(at, bt, acc);
    }
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

#[tile_kernel(num_warps = 4, num_stages = 3)]
/// `c = a @ b + Σ_j bias[:, j·n ..][rows, cols]`: step `j` of the `K` loop (blocks of 32) adds
/// the `m × n` tile at column `j · n` of `bias` (`m × steps·n`, row stride `ld`) to the product
/// so far, a tile no `dot` reads, in the accumulator's layout: it is copied through a ring of
/// its own beside the operands', as an attention bias is.
#[allow(clippy::too_many_arguments)]
pub fn stepped_bias_gemm(
    a: Ptr<f16, { m * k }>,
    b: Ptr<f16, { k * n }>,
    bias: Ptr<f16>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    ld: i32,
    BM: Const<64>,
    BN: Const<64>,
    BK: Const<32>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let in_c = (rows < m).expand_dims(1) & (cols < n).expand_dims(0);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let kk = k0 + ks;
        let at = load(
            a + rows.expand_dims(1) * k + kk.expand_dims(0),
            (rows < m).expand_dims(1) & (kk < k).expand_dims(0),
        );
        let bt = load(
            b + kk.expand_dims(1) * n + cols.expand_dims(0),
            (kk < k).expand_dims(1) & (cols < n).expand_dims(0),
        );
        let step = load(
            bias + rows.expand_dims(1) * ld + (k0 / BK * n + cols).expand_dims(0),
            in_c,
        );
        acc = dot(at, bt, acc) + step as f32;
    }
    store(c + rows.expand_dims(1) * n + cols.expand_dims(0), acc, in_c);
}

/// Every kernel the project compiles (examples, tutorials and tests).
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = fused_add_mul::all();
    v.extend(tile_tutorials::all());
    v.extend(fused_softmax::all());
    v.extend(elementwise_chains::all());
    v.extend(fused_bias_gelu::all());
    v.extend(act_and_mul::all());
    v.extend(qk_norm_rope::all());
    v.extend(gemm::all());
    v.extend(gemm_bias_act::all());
    v.extend(softmax_regression::all());
    v.extend(tile_examples::flash_attention::kernels::all());
    v.extend(tile_examples::dequant_matmul::kernels::all());
    v.extend(tile_examples::dequant_matmul::w8a8::all());
    v.extend(tile_examples::selective_scan::kernels::all());
    v.extend(tile_examples::conv_bn_relu::kernels::all());
    v.extend(tile_examples::rmsnorm_linear::kernels::all());
    v.extend(tile_examples::linear_cross_entropy::kernels::all());
    v.extend(tile_examples::softmax_regression::backward::all());
    v.extend(dot_trans_a::KERNELS);
    v.extend(dot_trans_b::KERNELS);
    v.extend([
        &int_ops::KERNEL,
        &gather_rows::KERNEL,
        &i64_axpy::KERNEL,
        &clamp::KERNEL,
        &accumulate_in_place::KERNEL,
        &pointer_gemm::KERNEL,
        &paged_gemm::KERNEL,
        &stepped_bias_gemm::KERNEL,
        &small_tile::KERNEL,
        &sums_2d::KERNEL,
        &layernorm_rows::KERNEL,
        &transpose_2d::KERNEL,
        &outer_2d::KERNEL,
        &layernorm_looped::KERNEL,
        &blocked_row_sums::KERNEL,
        &matmul_f16::KERNEL,
    ]);
    v.extend(axpb_typed::KERNELS);
    v.push(&arg_extremes::KERNEL);
    v.push(&branchy::KERNEL);
    v.extend(static_branches::KERNELS);
    v.push(&fill_i64::KERNEL);
    v.push(&bool_mask::KERNEL);
    v.push(&rolls::KERNEL);
    v.extend(shapes_2d::KERNELS);
    v.extend(trans_dots::KERNELS);
    v.push(&gathers::KERNEL);
    v.push(&flips::KERNEL);
    v.push(&int_types::KERNEL);
    v.push(&unsigned_reduce::KERNEL);
    v.push(&unsigned_scalars::KERNEL);
    v.extend(matmul_tf32::KERNELS);
    v.push(&dot_tf32_once::KERNEL);
    v.push(&mixed_dots::KERNEL);
    v.push(&wide_from_unit::KERNEL);
    v.push(&r#type::KERNEL);
    v.push(&füllen::KERNEL);
    v.push(&philox_i64::KERNEL);
    v.push(&philox_i32::KERNEL);
    v.push(&philox_words::KERNEL);
    v.push(&normals::KERNEL);
    v.push(&trig::KERNEL);
    v.extend([
        &histogram::KERNEL,
        &atomic_each::KERNEL,
        &atomic_tickets::KERNEL,
        &scans_1d::KERNEL,
        &scans_2d::KERNEL,
        &unpack_int4::KERNEL,
        &pairs::KERNEL,
        &floats::f8_convert::KERNEL,
        &floats::f8_scalar::KERNEL,
        &floats::f64_ops::KERNEL,
        &int_dot::dot_i8_nt::KERNEL,
    ]);
    v.extend(int_dot::dot_i8_nn::KERNELS);
    v.extend([
        &while_loops::while_fill::KERNEL,
        &while_loops::collatz::KERNEL,
        &while_loops::locked_sum::KERNEL,
    ]);
    v
}

/// `y` (on `dev`) within `T::TOL` relative L2 of `want`: the check of every 16-bit example's
/// interpreter test against its float64 reference.
pub fn assert_close<T: tile_examples::common::Half>(
    dev: &Device,
    y: &Buffer<T>,
    want: &[f64],
    what: &str,
) {
    let got: Vec<f32> = dev
        .download(y)
        .unwrap()
        .iter()
        .map(|v| v.to_f32())
        .collect();
    let e = tile_examples::common::rel_l2(&got, want);
    assert!(e <= T::TOL, "{what}: rel. L2 error {e:.2e}");
}

/// Element `(i, j)` of `acc + a @ b` (`a`: `m × k`, `b`: `k × n`, row-major; `acc` 0 when `None`)
/// in f64, and the tolerance a `dot` result must meet: `(K + 2) · 2⁻²² · (|acc| + Σₖ |aₖ bₖ|)`,
/// f32 accumulation of exact products in any order (the documented tensor-core semantics).
pub fn dot_reference<T: Copy>(
    a: &[T],
    b: &[T],
    acc: Option<&[f32]>,
    (n, k): (usize, usize),
    (i, j): (usize, usize),
) -> (f64, f64)
where
    f64: From<T>,
{
    let c = acc.map_or(0.0, |c| c[i * n + j] as f64);
    let terms = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]));
    let want = c + terms.clone().sum::<f64>();
    let scale = c.abs() + terms.map(f64::abs).sum::<f64>();
    (want, (k as f64 + 2.0) * 2f64.powi(-22) * scale)
}

/// `rand` and `randint` (Triton's Philox stream) of an `i64` seed at `base + i` for `i64`
/// offsets and at `base32 + i` for `i32` offsets, and `umulhi` of the words.
#[tile_kernel]
pub fn philox_i64(
    u: Ptr<f32, n>,
    bits: Ptr<i32, n>,
    u32s: Ptr<f32, n>,
    bits32: Ptr<i32, n>,
    hi: Ptr<i32, n>,
    n: i32,
    seed: i64,
    base: i64,
    base32: i32,
    BLOCK: Const<256>,
) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = i < n;
    let o = i as i64 + base;
    let w = randint(seed, o);
    store(u + i, rand(seed, o), m);
    store(bits + i, w, m);
    store(u32s + i, rand(seed, i + base32), m);
    store(bits32 + i, randint(seed, i + base32), m);
    store(hi + i, umulhi(w, i * 40503 + 7), m);
}

/// The four words of `randint4x` of an `i64` seed at `base + i` (into `w[4 i + k]`), and word 3
/// of `rand4x`.
#[tile_kernel]
pub fn philox_words(
    w: Ptr<i32, { 4 * n }>,
    u3: Ptr<f32, n>,
    n: i32,
    seed: i64,
    base: i64,
    BLOCK: Const<256>,
) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = i < n;
    let o = i as i64 + base;
    store(w + 4 * i, randint4x(seed, o, 0), m);
    store(w + 4 * i + 1, randint4x(seed, o, 1), m);
    store(w + 4 * i + 2, randint4x(seed, o, 2), m);
    store(w + 4 * i + 3, randint4x(seed, o, 3), m);
    store(u3 + i, rand4x(seed, o, 3), m);
}

/// `rand` and `randint` of an `i32` seed (sign-extended to the 64-bit key, as Triton does) at
/// `base32 + i`, and of a literal seed.
#[tile_kernel]
pub fn philox_i32(
    u: Ptr<f32, n>,
    bits: Ptr<i32, n>,
    lit: Ptr<i32, n>,
    n: i32,
    seed: i32,
    base32: i32,
    BLOCK: Const<256>,
) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = i < n;
    store(u + i, rand(seed, i + base32), m);
    store(bits + i, randint(seed, i + base32), m);
    store(lit + i, randint(-5, i + base32), m);
}

/// `rand(seed, i) > p` and `p < rand4x(seed, i, 2)` as 0 or 1 (the GPU back end compares the
/// Philox word with an integer threshold computed once from `p`; see `llvm/threshold.rs`).
#[tile_kernel]
pub fn rand_above(
    keep: Ptr<i32, n>,
    keep4: Ptr<i32, n>,
    n: i32,
    seed: i64,
    p: f32,
    BLOCK: Const<256>,
) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = i < n;
    store(keep + i, (rand(seed, i) > p) as i32, m);
    store(keep4 + i, (p < rand4x(seed, i, 2)) as i32, m);
}

/// `sin x` and `x.cos()` (the function and the method forms).
#[tile_kernel]
pub fn trig(x: Ptr<f32, n>, s: Ptr<f32, n>, c: Ptr<f32, n>, n: i32, BLOCK: Const<256>) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = i < n;
    let v = load(x + i, m);
    store(s + i, sin(v), m);
    store(c + i, v.cos(), m);
}

/// `trig` on `dev` over `x`, checked against `f64` within 1e-7 absolute (the GPU's bound, 6.8e-8
/// measured on its exact model; the interpreter's libm is closer); NaN and ±∞ give NaN.
pub fn check_trig(dev: &Device) {
    let mut x: Vec<f32> = (0..20_001).map(|i| (i as f32 - 10_000.0) * 0.01).collect();
    x.extend((0..5_000).map(|i| (i as f32 - 2_500.0) * 39.99));
    x.extend([
        0.0,
        -0.0,
        1e-30,
        -1e-30,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ]);
    let n = x.len();
    let xb = dev.upload(&x).unwrap();
    let (mut s, mut c) = (dev.zeros::<f32>(n).unwrap(), dev.zeros::<f32>(n).unwrap());
    trig::launch(dev, Grid::x(cdiv(n, 256)), &xb, &mut s, &mut c, n as i32).unwrap();
    let (s, c) = (dev.download(&s).unwrap(), dev.download(&c).unwrap());
    let mut worst = 0f64;
    for i in 0..n {
        let xd = f64::from(x[i]);
        if !x[i].is_finite() {
            assert!(s[i].is_nan() && c[i].is_nan(), "sin/cos({})", x[i]);
            continue;
        }
        let e = (f64::from(s[i]) - xd.sin())
            .abs()
            .max((f64::from(c[i]) - xd.cos()).abs());
        worst = worst.max(e);
        assert!(e < 1e-7, "x = {}: sin {} cos {}", x[i], s[i], c[i]);
    }
    assert_eq!(s[n - 6].to_bits(), (-0f32).to_bits(), "sin(-0) = -0");
    println!("sin/cos on {}: max abs error {worst:.2e}", dev.name());
}

/// `gelu(x)` and `x.gelu()` (the function and the method forms).
#[tile_kernel]
pub fn gelus(x: Ptr<f32, n>, g: Ptr<f32, n>, m: Ptr<f32, n>, n: i32, BLOCK: Const<256>) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let k = i < n;
    let v = load(x + i, k);
    store(g + i, gelu(v), k);
    store(m + i, v.gelu(), k);
}

/// `gelus` on `dev` against `0.5 · x · erfc(−x/√2)` in `f64`: `|error| ≤ 3e-7 · |x|` (the GPU's
/// bound, 2.8e-7 on its worst-case model), the method form equal to the function; `gelu(+∞) =
/// +∞`, `gelu(−∞) = 0`, NaN stays NaN.
pub fn check_gelu(dev: &Device) {
    let mut x: Vec<f32> = (0..40_001).map(|i| (i as f32 - 20_000.0) * 0.001).collect();
    x.extend((0..2_000).map(|i| (i as f32 - 1_000.0) * 0.37));
    x.extend([0.0, -0.0, 1e-30, -1e-30, 14.0, -14.0, 1e30, -1e30]);
    x.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
    let n = x.len();
    let xb = dev.upload(&x).unwrap();
    let (mut g, mut m) = (dev.zeros::<f32>(n).unwrap(), dev.zeros::<f32>(n).unwrap());
    gelus::launch(dev, Grid::x(cdiv(n, 256)), &xb, &mut g, &mut m, n as i32).unwrap();
    let (g, m) = (dev.download(&g).unwrap(), dev.download(&m).unwrap());
    let mut worst = 0f64;
    for i in 0..n {
        assert_eq!(g[i].to_bits(), m[i].to_bits(), "gelu({}) two forms", x[i]);
        let xd = f64::from(x[i]);
        if x[i].is_nan() {
            assert!(g[i].is_nan(), "gelu(NaN)");
            continue;
        }
        if x[i].is_infinite() {
            assert_eq!(g[i], x[i].max(0.0), "gelu({})", x[i]);
            continue;
        }
        let want = 0.5 * xd * libm::erfc(-xd / std::f64::consts::SQRT_2);
        let e = (f64::from(g[i]) - want).abs();
        if xd != 0.0 {
            worst = worst.max(e / xd.abs());
        }
        assert!(e <= 3e-7 * xd.abs(), "gelu({}) = {} vs {want}", x[i], g[i]);
    }
    println!("gelu on {}: max |error| / |x| {worst:.2e}", dev.name());
}

/// `randn` (Triton's `tl.randn`) of an `i64` seed at `base + i`.
#[tile_kernel]
pub fn normals(z: Ptr<f32, n>, n: i32, seed: i64, base: i64, BLOCK: Const<256>) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    store(z + i, randn(seed, i as i64 + base), i < n);
}

/// `normals` of `seed` at offsets `base`, `base + 1`, … on `dev` (`n` of them).
pub fn randn_on(dev: &Device, n: usize, seed: i64, base: i64) -> Vec<f32> {
    let mut z = dev.upload(&vec![f32::NAN; n]).unwrap();
    normals::launch(dev, Grid::x(cdiv(n, 256)), &mut z, n as i32, seed, base).unwrap();
    dev.download(&z).unwrap()
}

/// Seeds as `i64` (an `i32` one sign-extended, as Triton's `seed.to(tl.uint64)`).
const PHILOX_SEEDS: [i64; 7] = [0, 1, 42, -1, i32::MIN as i64, (1 << 32) + 5, i64::MIN + 3];

/// `rand_above` on `dev` against `tile::random`'s `rand(seed, i) > p`, exactly, for
/// probabilities at every edge (negative, ±0, subnormal, NaN, ±∞, 1 and the float below it), a
/// sweep, and values the stream itself takes with their neighbours (elements equal to `p` are
/// dropped).
pub fn check_rand_above(dev: &Device) {
    use tile::random;
    let (n, seed) = (4096usize, 0x5EED_1234_ABCDi64);
    let mut ps = vec![
        -1.0,
        -0.0,
        0.0,
        f32::from_bits(1),
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.0,
        f32::from_bits(1.0f32.to_bits() - 1),
        2f32.powi(-7),
        0.1,
        0.5,
        0.9,
    ];
    for k in 1..24 {
        ps.push(k as f32 / 24.0);
    }
    for i in [3u64, 17, 1000, 4095] {
        for u in [
            random::rand(seed as u64, i),
            random::rand4x(seed as u64, i)[2],
        ] {
            for d in [-1i32, 0, 1] {
                ps.push(f32::from_bits(u.to_bits().wrapping_add_signed(d)));
            }
        }
    }
    for p in ps {
        let mut keep = dev.zeros::<i32>(n).unwrap();
        let mut keep4 = dev.zeros::<i32>(n).unwrap();
        rand_above::launch(
            dev,
            Grid::x(cdiv(n, 256)),
            &mut keep,
            &mut keep4,
            n as i32,
            seed,
            p,
        )
        .unwrap();
        let (keep, keep4) = (dev.download(&keep).unwrap(), dev.download(&keep4).unwrap());
        for i in 0..n {
            let at = format!("p = {p:e} ({:#x}), element {i}", p.to_bits());
            let key = seed as u64;
            assert_eq!(
                keep[i] == 1,
                random::rand(key, i as u64) > p,
                "rand > p, {at}"
            );
            assert_eq!(
                keep4[i] == 1,
                p < random::rand4x(key, i as u64)[2],
                "p < rand4x, {at}"
            );
        }
    }
}

/// `philox_i64` and `philox_i32` on `dev` against `tile::random` (Triton's stream), bit for bit,
/// for seeds and offsets at the edges of their types.
pub fn check_philox(dev: &Device) {
    use tile::random;
    let n = 1000usize;
    for &seed in &PHILOX_SEEDS {
        for (base, base32) in [
            (0i64, 0i32),
            (-(n as i64) / 2, i32::MAX - 500),
            ((1 << 32) - 500, -300),
            ((1 << 40) + 3, i32::MIN),
        ] {
            let mut u = dev.zeros::<f32>(n).unwrap();
            let mut bits = dev.zeros::<i32>(n).unwrap();
            let mut u32s = dev.zeros::<f32>(n).unwrap();
            let mut bits32 = dev.zeros::<i32>(n).unwrap();
            let mut hi = dev.zeros::<i32>(n).unwrap();
            philox_i64::launch(
                dev,
                Grid::x(cdiv(n, 256)),
                &mut u,
                &mut bits,
                &mut u32s,
                &mut bits32,
                &mut hi,
                n as i32,
                seed,
                base,
                base32,
            )
            .unwrap();
            let [u, u32s] = [&u, &u32s].map(|b| dev.download(b).unwrap());
            let [bits, bits32, hi] = [&bits, &bits32, &hi].map(|b| dev.download(b).unwrap());
            for i in 0..n {
                let o = (base + i as i64) as u64;
                let o32 = u64::from(base32.wrapping_add(i as i32) as u32);
                let key = seed as u64;
                let at = format!("seed {seed}, offsets {base} / {base32}, element {i}");
                assert_eq!(bits[i] as u32, random::randint(key, o), "{at}");
                assert_eq!(u[i].to_bits(), random::rand(key, o).to_bits(), "{at}");
                assert_eq!(bits32[i] as u32, random::randint(key, o32), "{at}");
                assert_eq!(u32s[i].to_bits(), random::rand(key, o32).to_bits(), "{at}");
                let b = (i as i32).wrapping_mul(40503).wrapping_add(7) as u32;
                let want = ((u64::from(bits[i] as u32) * u64::from(b)) >> 32) as u32;
                assert_eq!(hi[i] as u32, want, "umulhi, {at}");
                assert!((0.0..1.0).contains(&u[i]), "{at}");
            }
            if let Ok(s32) = i32::try_from(seed) {
                let mut u = dev.zeros::<f32>(n).unwrap();
                let mut bits = dev.zeros::<i32>(n).unwrap();
                let mut lit = dev.zeros::<i32>(n).unwrap();
                philox_i32::launch(
                    dev,
                    Grid::x(cdiv(n, 256)),
                    &mut u,
                    &mut bits,
                    &mut lit,
                    n as i32,
                    s32,
                    base32,
                )
                .unwrap();
                let u = dev.download(&u).unwrap();
                let [bits, lit] = [&bits, &lit].map(|b| dev.download(b).unwrap());
                for i in 0..n {
                    let o32 = u64::from(base32.wrapping_add(i as i32) as u32);
                    let at = format!("i32 seed {s32}, offsets {base32}, element {i}");
                    assert_eq!(bits[i] as u32, random::randint(seed as u64, o32), "{at}");
                    assert_eq!(
                        u[i].to_bits(),
                        random::rand(seed as u64, o32).to_bits(),
                        "{at}"
                    );
                    assert_eq!(lit[i] as u32, random::randint(-5i64 as u64, o32), "{at}");
                }
            }
        }
    }
    // The four words of one Philox evaluation.
    for &seed in &PHILOX_SEEDS {
        let base = (1i64 << 32) - 300;
        let mut w = dev.zeros::<i32>(4 * n).unwrap();
        let mut u3 = dev.zeros::<f32>(n).unwrap();
        philox_words::launch(
            dev,
            Grid::x(cdiv(n, 256)),
            &mut w,
            &mut u3,
            n as i32,
            seed,
            base,
        )
        .unwrap();
        let (w, u3) = (dev.download(&w).unwrap(), dev.download(&u3).unwrap());
        for i in 0..n {
            let words = random::randint4x(seed as u64, (base + i as i64) as u64);
            let got = [w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]].map(|x| x as u32);
            assert_eq!(got, words, "randint4x, seed {seed}, element {i}");
            let want = random::rand4x(seed as u64, (base + i as i64) as u64)[3];
            assert_eq!(
                u3[i].to_bits(),
                want.to_bits(),
                "rand4x, seed {seed}, element {i}"
            );
        }
    }
}

/// Deterministic pseudo-random numbers for tests.
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits (splitmix64). Infinite and never `None`, so not an `Iterator`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform f32 in [-1, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// The sizes every interpreter test runs.
pub const SIZES: [usize; 6] = [1, 17, 1023, 1024, 1025, 1_000_003];

/// A histogram through `atomic_add` (`hist` is written only by atomics, so the launch takes it as
/// `&mut`); values outside `0..bins` are skipped.
#[tile_kernel]
pub fn histogram(x: Ptr<i32, n>, hist: Ptr<i32, bins>, n: i32, bins: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m, -1);
    atomic_add(hist + v, 1, m & (v >= 0) & (v < bins));
}

/// Every atomic on `i32`, `i64` and `f32`, each element on its own address (so the old values
/// are the initial ones): region `k` of `i`/`l`/`f` is updated by the `k`-th atomic below, and
/// the old values go to the same region of `old_*`.
#[tile_kernel]
pub fn atomic_each(
    i: Ptr<i32, { 8 * n }>,
    l: Ptr<i64, { 3 * n }>,
    f: Ptr<f32, { 4 * n }>,
    vi: Ptr<i32, n>,
    vl: Ptr<i64, n>,
    vf: Ptr<f32, n>,
    old_i: Ptr<i32, { 8 * n }>,
    old_l: Ptr<i64, { 3 * n }>,
    old_f: Ptr<f32, { 4 * n }>,
    n: i32,
    BLOCK: Const<128>,
) {
    let o = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = o < n;
    let a = load(vi + o, m);
    let b = load(vl + o, m);
    let c = load(vf + o, m);
    store(old_i + o, atomic_add(i + o, a, m), m);
    store(old_i + n + o, atomic_max(i + n + o, a, m), m);
    store(
        old_i + 2 * n + o,
        atomic_min(i + 2 * n + o, a, m, sem = relaxed),
        m,
    );
    store(
        old_i + 3 * n + o,
        atomic_and(i + 3 * n + o, a, m, scope = cta),
        m,
    );
    store(
        old_i + 4 * n + o,
        atomic_or(i + 4 * n + o, a, m, sem = acquire, scope = sys),
        m,
    );
    store(
        old_i + 5 * n + o,
        atomic_xor(i + 5 * n + o, a, m, sem = release),
        m,
    );
    store(old_i + 6 * n + o, atomic_xchg(i + 6 * n + o, a, m), m);
    store(old_i + 7 * n + o, atomic_cas(i + 7 * n + o, a & 1, a, m), m);
    store(old_l + o, atomic_add(l + o, b, m), m);
    store(old_l + n + o, atomic_min(l + n + o, b, m), m);
    store(old_l + 2 * n + o, atomic_cas(l + 2 * n + o, b & 1, b, m), m);
    store(old_f + o, atomic_add(f + o, c, m), m);
    store(old_f + n + o, atomic_max(f + n + o, c, m), m);
    store(old_f + 2 * n + o, atomic_min(f + 2 * n + o, c, m), m);
    store(old_f + 3 * n + o, atomic_xchg(f + 3 * n + o, c, m), m);
}

/// Every atomic on 16-bit floats (`T` is `f16` or `bf16`), each element on its own address:
/// region `k` of `h` is updated by the `k`-th atomic below (add, max, min, exchange,
/// compare-and-swap), its old values go to region `k` of `old`; then every program adds 1 to
/// each of `acc`'s 16 elements and takes the maximum of its index into `top` (contended).
#[tile_kernel]
#[allow(clippy::too_many_arguments)]
pub fn atomic_each_16(
    h: Ptr<T, { 5 * n }>,
    v: Ptr<T, n>,
    old: Ptr<T, { 5 * n }>,
    acc: Ptr<T, 16>,
    top: Ptr<T, 16>,
    n: i32,
    T: Type<{ [f16, bf16] }>,
    BLOCK: Const<128>,
) {
    let o = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = o < n;
    let a = load(v + o, m);
    store(old + o, atomic_add(h + o, a, m), m);
    store(old + n + o, atomic_max(h + n + o, a, m), m);
    store(
        old + 2 * n + o,
        atomic_min(h + 2 * n + o, a, m, sem = relaxed),
        m,
    );
    store(
        old + 3 * n + o,
        atomic_xchg(h + 3 * n + o, a, m, scope = cta),
        m,
    );
    let twice = (a as f32 * 2.0) as T;
    store(old + 4 * n + o, atomic_cas(h + 4 * n + o, a, twice, m), m);
    let j = arange(0, 16);
    atomic_add(acc + j, full([16], 1.0) as T);
    atomic_max(top + j, full([16], program_id(0) as f32) as T);
}

/// Atomics whose old values every thread needs: a scalar ticket per program, a float total, and
/// tiles smaller than the program (threads hold copies: each element must still be updated once).
#[tile_kernel(num_warps = 4)]
pub fn atomic_tickets(
    x: Ptr<f32, n>,
    counter: Ptr<i32, 1>,
    order: Ptr<i32, g>,
    total: Ptr<f32, 1>,
    acc: Ptr<i32, 16>,
    olds: Ptr<i32, { 16 * g }>,
    grid2: Ptr<i32, 32>,
    n: i32,
    g: i32,
    BLOCK: Const<256>,
) {
    let pid = program_id(0);
    let offs = pid * BLOCK + arange(0, BLOCK);
    store(order + pid, atomic_add(counter, 1));
    atomic_add(total, load(x + offs, offs < n, 0.0).sum());
    let j = arange(0, 16);
    store(olds + pid * 16 + j, atomic_add(acc + j, j + 1));
    let r = arange(0, 4);
    let c = arange(0, 8);
    atomic_max(grid2 + r.expand_dims(1) * 8 + c.expand_dims(0), pid);
}

/// Scans of 1-D tiles: every kind, both directions, 4096 elements (registers, lanes and warps along
/// the axis), 256 and 16 (lanes holding copies), a bool count and f32; two of them written as
/// `associative_scan` (a combiner by name and by closure).
#[tile_kernel(num_warps = 8)]
pub fn scans_1d(
    xi: Ptr<i32, 4096>,
    xf: Ptr<f32, 4096>,
    out: Ptr<i32, { 7 * 4096 }>,
    outf: Ptr<f32, { 4 * 4096 }>,
    cnt: Ptr<i32, 4096>,
) {
    let i = arange(0, 4096);
    let a = load(xi + i);
    let f = load(xf + i);
    store(out + i, a.cumsum());
    store(out + 4096 + i, a.cumsum(0, reverse = true));
    store(out + 2 * 4096 + i, cummax(a, 0));
    store(
        out + 3 * 4096 + i,
        associative_scan(a, 0, min, reverse = true),
    );
    store(out + 4 * 4096 + i, associative_scan(a & 3, 0, |x, y| x * y));
    let s = arange(0, 16);
    store(out + 5 * 4096 + s, load(xi + s).cumsum());
    let h = arange(0, 256);
    store(out + 6 * 4096 + h, load(xi + h).cummax(reverse = true));
    store(cnt + i, (a > 0).cumsum());
    store(outf + i, f.cumsum());
    store(outf + 4096 + i, f.cummax());
    store(outf + 2 * 4096 + i, f.cumsum(reverse = true));
    store(outf + 3 * 4096 + s, load(xf + s).cumprod());
}

/// Scans of 2-D tiles along either axis: 64 × 128, 4 × 2048 (warps along the axis) and
/// 1024 × 8 (a short axis), i32 and f32; two written as `associative_scan` with closures.
#[tile_kernel(num_warps = 16)]
pub fn scans_2d(
    x: Ptr<i32, 8192>,
    out: Ptr<i32, { 6 * 8192 }>,
    f: Ptr<f32, 8192>,
    outf: Ptr<f32, { 2 * 8192 }>,
) {
    let r = arange(0, 64);
    let c = arange(0, 128);
    let offs = r.expand_dims(1) * 128 + c.expand_dims(0);
    let v = load(x + offs);
    store(out + offs, v.cumsum(1));
    store(out + 8192 + offs, associative_scan(v, 0, |a, b| a + b));
    store(
        out + 2 * 8192 + offs,
        associative_scan(v, 1, |p, q| max(q, p), reverse = true),
    );
    store(out + 3 * 8192 + offs, v.cummin(0, reverse = true));
    let r4 = arange(0, 4);
    let c2k = arange(0, 2048);
    let o2 = r4.expand_dims(1) * 2048 + c2k.expand_dims(0);
    store(out + 4 * 8192 + o2, load(x + o2).cumsum(1));
    let r1k = arange(0, 1024);
    let c8 = arange(0, 8);
    let o3 = r1k.expand_dims(1) * 8 + c8.expand_dims(0);
    store(out + 5 * 8192 + o3, load(x + o3).cumsum(0, reverse = true));
    let fv = load(f + offs);
    store(outf + offs, fv.cumsum(1));
    store(outf + 8192 + offs, fv.cumsum(0));
}

/// `associative_scan` with closures over tuples: first-order linear recurrences `h = a·h + b`
/// (the `(a1 * a2, b1 * a2 + b2)` combiner) in f32 on 4096 elements both ways, in wrapping `i32`
/// along both axes of 64 × 128 and the short axis of 1024 × 8 (exact, so the order of
/// combination is checked bit for bit), one combiner reading a scalar parameter, and a running
/// argmax over an `(f32, i32)` pair.
#[tile_kernel(num_warps = 8)]
pub fn scans_combined(
    fa: Ptr<f32, 4096>,
    fb: Ptr<f32, 4096>,
    ia: Ptr<i32, 8192>,
    ib: Ptr<i32, 8192>,
    one: i32,
    outf: Ptr<f32, { 4 * 4096 }>,
    arg: Ptr<i32, 4096>,
    out: Ptr<i32, { 6 * 8192 }>,
) {
    let i = arange(0, 4096);
    let (a, b) = (load(fa + i), load(fb + i));
    let (pa, h) = associative_scan((a, b), 0, |(a1, b1), (a2, b2)| (a1 * a2, b1 * a2 + b2));
    store(outf + i, pa);
    store(outf + 4096 + i, h);
    let (_, back) = associative_scan(
        (a, b),
        0,
        |(a1, b1), (a2, b2)| (a1 * a2, b1 * a2 + b2),
        reverse = true,
    );
    store(outf + 2 * 4096 + i, back);
    let (best, at) = associative_scan((b, i), 0, |(v1, i1), (v2, i2)| {
        let take = v2 > v1;
        (select(take, v2, v1), select(take, i2, i1))
    });
    store(outf + 3 * 4096 + i, best);
    store(arg + i, at);

    let r = arange(0, 64);
    let c = arange(0, 128);
    let offs = r.expand_dims(1) * 128 + c.expand_dims(0);
    let (x, y) = (load(ia + offs), load(ib + offs));
    let (m0, h0) = associative_scan((x, y), 0, |(a1, b1), (a2, b2)| (a1 * a2, b1 * a2 + b2));
    store(out + offs, m0);
    store(out + 8192 + offs, h0);
    let (_, h1) = associative_scan(
        (x, y),
        1,
        |(a1, b1), (a2, b2)| (a1 * a2 * one, (b1 * a2 + b2) * one),
        reverse = true,
    );
    store(out + 2 * 8192 + offs, h1);
    let r1k = arange(0, 1024);
    let c8 = arange(0, 8);
    let o3 = r1k.expand_dims(1) * 8 + c8.expand_dims(0);
    let (m3, h3) = associative_scan((load(ia + o3), load(ib + o3)), 0, |(a1, b1), (a2, b2)| {
        (a1 * a2, b1 * a2 + b2)
    });
    store(out + 3 * 8192 + o3, m3);
    store(out + 4 * 8192 + o3, h3);
}

/// `scans_combined` against sequential host scans: the `i32` recurrences exactly, the f32 ones
/// within a relative 1e-4 of a float64 reference, the argmax exactly.
pub fn check_scans_combined(dev: &Device) {
    let mut r = Rng(123);
    let n = 4096;
    let fa: Vec<f32> = (0..n).map(|_| 0.9 + 0.1 * r.f32()).collect();
    let fb: Vec<f32> = (0..n).map(|_| r.f32() - 0.5).collect();
    let ia: Vec<i32> = (0..8192).map(|_| r.next() as i32).collect();
    let ib: Vec<i32> = (0..8192).map(|_| r.next() as i32).collect();
    let mut outf = dev.zeros::<f32>(4 * n).unwrap();
    let mut arg = dev.zeros::<i32>(n).unwrap();
    let mut out = dev.zeros::<i32>(6 * 8192).unwrap();
    scans_combined::launch(
        dev,
        Grid::x(1),
        &dev.upload(&fa).unwrap(),
        &dev.upload(&fb).unwrap(),
        &dev.upload(&ia).unwrap(),
        &dev.upload(&ib).unwrap(),
        1,
        &mut outf,
        &mut arg,
        &mut out,
    )
    .unwrap();
    let outf = dev.download(&outf).unwrap();
    let out = dev.download(&out).unwrap();
    let affine = |(a1, b1): (f64, f64), (a2, b2): (f64, f64)| (a1 * a2, b1 * a2 + b2);
    let pairs: Vec<(f64, f64)> = fa
        .iter()
        .zip(&fb)
        .map(|(&a, &b)| (f64::from(a), f64::from(b)))
        .collect();
    let close = |got: &[f32], want: &[f64], what: &str| {
        for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
            assert!(
                (f64::from(g) - w).abs() <= 1e-4 * w.abs().max(1.0),
                "{what} {k}: {g} vs {w}"
            );
        }
    };
    let fwd = scan_ref(&pairs, (1, n), 1, false, affine);
    let bwd = scan_ref(&pairs, (1, n), 1, true, affine);
    close(
        &outf[..n],
        &fwd.iter().map(|p| p.0).collect::<Vec<_>>(),
        "product",
    );
    close(
        &outf[n..2 * n],
        &fwd.iter().map(|p| p.1).collect::<Vec<_>>(),
        "recurrence",
    );
    close(
        &outf[2 * n..3 * n],
        &bwd.iter().map(|p| p.1).collect::<Vec<_>>(),
        "reverse recurrence",
    );
    let idx: Vec<(f32, i32)> = fb.iter().zip(0..).map(|(&v, i)| (v, i)).collect();
    let best = scan_ref(&idx, (1, n), 1, false, |p, q| if q.0 > p.0 { q } else { p });
    assert_eq!(
        &outf[3 * n..],
        best.iter().map(|p| p.0).collect::<Vec<_>>(),
        "running max"
    );
    assert_eq!(
        dev.download(&arg).unwrap(),
        best.iter().map(|p| p.1).collect::<Vec<_>>(),
        "argmax"
    );

    let wrap = |(a1, b1): (i32, i32), (a2, b2): (i32, i32)| {
        (a1.wrapping_mul(a2), b1.wrapping_mul(a2).wrapping_add(b2))
    };
    let ipairs: Vec<(i32, i32)> = ia.iter().copied().zip(ib.iter().copied()).collect();
    let region = |k: usize| &out[k * 8192..(k + 1) * 8192];
    let firsts = |v: &[(i32, i32)]| v.iter().map(|p| p.0).collect::<Vec<_>>();
    let seconds = |v: &[(i32, i32)]| v.iter().map(|p| p.1).collect::<Vec<_>>();
    let a0 = scan_ref(&ipairs, (64, 128), 0, false, wrap);
    assert_eq!(region(0), firsts(&a0), "64 × 128 along 0, products");
    assert_eq!(region(1), seconds(&a0), "64 × 128 along 0, recurrence");
    let a1 = scan_ref(&ipairs, (64, 128), 1, true, wrap);
    assert_eq!(
        region(2),
        seconds(&a1),
        "64 × 128 along 1, reverse, captured scalar"
    );
    let a3 = scan_ref(&ipairs, (1024, 8), 0, false, wrap);
    assert_eq!(region(3), firsts(&a3), "1024 × 8 along 0, products");
    assert_eq!(region(4), seconds(&a3), "1024 × 8 along 0, recurrence");
}

/// `histogram` on `n` values (some outside the bins) against a host count.
pub fn check_histogram(dev: &Device, n: usize, bins: usize) {
    let mut r = Rng(n as u64 + 7);
    let x: Vec<i32> = (0..n)
        .map(|_| (r.next() % (bins as u64 + 4)) as i32 - 2)
        .collect();
    let xb = dev.upload(&x).unwrap();
    let mut hist = dev.zeros::<i32>(bins).unwrap();
    histogram::launch(
        dev,
        Grid::x(cdiv(n, 1024)),
        &xb,
        &mut hist,
        n as i32,
        bins as i32,
    )
    .unwrap();
    let got = dev.download(&hist).unwrap();
    let mut want = vec![0i32; bins];
    for &v in &x {
        if (0..bins as i32).contains(&v) {
            want[v as usize] += 1;
        }
    }
    assert_eq!(got, want, "histogram of {n} values into {bins} bins");
}

/// `atomic_each` on `n` elements against the ops' definitions.
pub fn check_atomic_each(dev: &Device, n: usize) {
    use tile::ir::{atomic_float_max, atomic_float_min};
    let mut r = Rng(n as u64 + 11);
    let mut i0: Vec<i32> = (0..8 * n).map(|_| r.next() as i32 >> 8).collect();
    // The compare-and-swap region holds 0 and 1, so about half the elements match `a & 1`.
    for v in &mut i0[7 * n..] {
        *v &= 1;
    }
    let mut l0: Vec<i64> = (0..3 * n).map(|_| r.next() as i64 >> 3).collect();
    for v in &mut l0[2 * n..] {
        *v &= 1;
    }
    let specials = [0.0f32, -0.0, 1.5, -1.5, f32::INFINITY, f32::NEG_INFINITY];
    let pick = |r: &mut Rng| {
        if r.next() % 4 == 0 {
            specials[(r.next() % specials.len() as u64) as usize]
        } else {
            r.f32() * 100.0
        }
    };
    let f0: Vec<f32> = (0..4 * n).map(|_| pick(&mut r)).collect();
    let vi: Vec<i32> = (0..n).map(|_| r.next() as i32 >> 8).collect();
    let vl: Vec<i64> = (0..n).map(|_| r.next() as i64 >> 3).collect();
    let vf: Vec<f32> = (0..n).map(|_| pick(&mut r)).collect();
    let mut ib = dev.upload(&i0).unwrap();
    let mut lb = dev.upload(&l0).unwrap();
    let mut fb = dev.upload(&f0).unwrap();
    let (vib, vlb, vfb) = (
        dev.upload(&vi).unwrap(),
        dev.upload(&vl).unwrap(),
        dev.upload(&vf).unwrap(),
    );
    let mut oi = dev.zeros::<i32>(8 * n).unwrap();
    let mut ol = dev.zeros::<i64>(3 * n).unwrap();
    let mut of = dev.zeros::<f32>(4 * n).unwrap();
    atomic_each::launch(
        dev,
        Grid::x(cdiv(n, 128)),
        &mut ib,
        &mut lb,
        &mut fb,
        &vib,
        &vlb,
        &vfb,
        &mut oi,
        &mut ol,
        &mut of,
        n as i32,
    )
    .unwrap();
    let (gi, gl, gf) = (
        dev.download(&ib).unwrap(),
        dev.download(&lb).unwrap(),
        dev.download(&fb).unwrap(),
    );
    let (goi, gol, gof) = (
        dev.download(&oi).unwrap(),
        dev.download(&ol).unwrap(),
        dev.download(&of).unwrap(),
    );
    assert_eq!(goi, i0, "old i32 values");
    assert_eq!(gol, l0, "old i64 values");
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&gof), bits(&f0), "old f32 values");
    for e in 0..n {
        let a = vi[e];
        let ops: [fn(i32, i32) -> i32; 8] = [
            |o, a| o.wrapping_add(a),
            |o, a| o.max(a),
            |o, a| o.min(a),
            |o, a| o & a,
            |o, a| o | a,
            |o, a| o ^ a,
            |_, a| a,
            |o, a| if o == a & 1 { a } else { o },
        ];
        for (k, op) in ops.iter().enumerate() {
            assert_eq!(
                gi[k * n + e],
                op(i0[k * n + e], a),
                "i32 op {k}, element {e}"
            );
        }
        let b = vl[e];
        assert_eq!(gl[e], l0[e].wrapping_add(b), "i64 add, element {e}");
        assert_eq!(gl[n + e], l0[n + e].min(b), "i64 min, element {e}");
        let cas = if l0[2 * n + e] == b & 1 {
            b
        } else {
            l0[2 * n + e]
        };
        assert_eq!(gl[2 * n + e], cas, "i64 cas, element {e}");
        let c = vf[e];
        let want = [
            f0[e] + c,
            atomic_float_max(f0[n + e], c),
            atomic_float_min(f0[2 * n + e], c),
            c,
        ];
        for (k, w) in want.iter().enumerate() {
            let g = gf[k * n + e];
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "f32 op {k}, element {e}: {} and {c} gave {g}, want {w}",
                f0[k * n + e]
            );
        }
    }
}

/// `atomic_each_16` on `n` elements, for `f16` and `bf16`: the old values are the initial ones,
/// every update is the reference's (adds rounded once, max and min in
/// `tile::ir::atomic_half_max`'s order, NaN only where the reference has one), and the contended
/// count and maximum are exact.
pub fn check_atomic_each_16(dev: &Device, n: usize) {
    check_atomic_each_16_of::<half::f16>(dev, n);
    check_atomic_each_16_of::<half::bf16>(dev, n);
}

/// 16-bit floats as [`check_atomic_each_16`] needs them.
pub trait Half16: tile::Element + Copy + PartialEq + std::fmt::Debug {
    /// `x` rounded to the type.
    fn of(x: f32) -> Self;
    /// The value as f32 (exact).
    fn f(self) -> f32;
    /// The bit pattern.
    fn bits(self) -> u16;
    /// The value of a bit pattern.
    fn from_bits16(b: u16) -> Self;
}

impl Half16 for half::f16 {
    fn of(x: f32) -> Self {
        half::f16::from_f32(x)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
    fn bits(self) -> u16 {
        self.to_bits()
    }
    fn from_bits16(b: u16) -> Self {
        half::f16::from_bits(b)
    }
}

impl Half16 for half::bf16 {
    fn of(x: f32) -> Self {
        half::bf16::from_f32(x)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
    fn bits(self) -> u16 {
        self.to_bits()
    }
    fn from_bits16(b: u16) -> Self {
        half::bf16::from_bits(b)
    }
}

fn check_atomic_each_16_of<T: Half16>(dev: &Device, n: usize) {
    use tile::ir::{atomic_half_max, atomic_half_min};
    let mut r = Rng(n as u64 + 29);
    let specials = [0.0f32, -0.0, 1.5, -1.5, f32::INFINITY, f32::NEG_INFINITY];
    let pick = |r: &mut Rng| {
        if r.next() % 4 == 0 {
            T::of(specials[(r.next() % specials.len() as u64) as usize])
        } else {
            T::of(r.f32() * 100.0 - 50.0)
        }
    };
    let v: Vec<T> = (0..n).map(|_| pick(&mut r)).collect();
    let mut h0: Vec<T> = (0..5 * n).map(|_| pick(&mut r)).collect();
    // About half the compare-and-swap elements hold the value compared with.
    for e in 0..n {
        if r.next() % 2 == 0 {
            h0[4 * n + e] = v[e];
        }
    }
    let mut hb = dev.upload(&h0).unwrap();
    let vb = dev.upload(&v).unwrap();
    let mut ob = dev.zeros::<T>(5 * n).unwrap();
    let mut acc = dev.zeros::<T>(16).unwrap();
    let mut top = dev.upload(&[T::of(-1.0); 16]).unwrap();
    let programs = cdiv(n, 128);
    atomic_each_16::launch(
        dev,
        Grid::x(programs),
        &mut hb,
        &vb,
        &mut ob,
        &mut acc,
        &mut top,
        n as i32,
    )
    .unwrap();
    let (gh, go) = (dev.download(&hb).unwrap(), dev.download(&ob).unwrap());
    let bits = |x: &[T]| x.iter().map(|v| v.bits()).collect::<Vec<_>>();
    assert_eq!(bits(&go), bits(&h0), "old values");
    let same = |g: T, w: T| g.bits() == w.bits() || (g.f().is_nan() && w.f().is_nan());
    for e in 0..n {
        let a = v[e];
        let want = [
            T::of(h0[e].f() + a.f()),
            T::from_bits16(atomic_half_max(h0[n + e].bits(), a.bits())),
            T::from_bits16(atomic_half_min(h0[2 * n + e].bits(), a.bits())),
            a,
            if h0[4 * n + e].bits() == a.bits() {
                T::of(a.f() * 2.0)
            } else {
                h0[4 * n + e]
            },
        ];
        for (k, w) in want.iter().enumerate() {
            let g = gh[k * n + e];
            assert!(
                same(g, *w),
                "op {k}, element {e}: {:?} and {a:?} gave {g:?}, want {w:?}",
                h0[k * n + e]
            );
        }
    }
    // Adding 1 `programs` times in `T`: the same in any order (bf16 stops at 256, where 1 is
    // under half an ulp). The maximum of the indices rounded to `T` is the last one rounded.
    let count = (0..programs).fold(T::of(0.0), |c, _| T::of(c.f() + 1.0));
    let last = T::of((programs - 1) as f32);
    for (k, c) in dev.download(&acc).unwrap().into_iter().enumerate() {
        assert_eq!(
            c.bits(),
            count.bits(),
            "contended add, element {k}: {c:?}, want {count:?}"
        );
    }
    for (k, t) in dev.download(&top).unwrap().into_iter().enumerate() {
        assert_eq!(
            t.bits(),
            last.bits(),
            "contended max, element {k}: {t:?}, want {last:?}"
        );
    }
}

/// `atomic_tickets` with `g` programs: the tickets are a permutation, the total is the sum, the
/// 16-element tile was added once per program with old values that are each program's turn, and
/// the 4 × 8 maximum is the last program's index.
pub fn check_atomic_tickets(dev: &Device, g: usize) {
    let n = 256 * g - 100;
    let mut r = Rng(g as u64);
    let x: Vec<f32> = (0..n).map(|_| r.f32()).collect();
    let xb = dev.upload(&x).unwrap();
    let mut counter = dev.upload(&[5i32]).unwrap();
    let mut order = dev.zeros::<i32>(g).unwrap();
    let mut total = dev.zeros::<f32>(1).unwrap();
    let mut acc = dev.zeros::<i32>(16).unwrap();
    let mut olds = dev.zeros::<i32>(16 * g).unwrap();
    let mut grid2 = dev.upload(&[-1i32; 32]).unwrap();
    atomic_tickets::launch(
        dev,
        Grid::x(g as u32),
        &xb,
        &mut counter,
        &mut order,
        &mut total,
        &mut acc,
        &mut olds,
        &mut grid2,
        n as i32,
        g as i32,
    )
    .unwrap();
    assert_eq!(dev.download(&counter).unwrap(), vec![5 + g as i32]);
    let mut tickets = dev.download(&order).unwrap();
    tickets.sort_unstable();
    assert_eq!(tickets, (5..5 + g as i32).collect::<Vec<_>>(), "tickets");
    let want: f64 = x.iter().map(|&v| f64::from(v)).sum();
    let got = f64::from(dev.download(&total).unwrap()[0]);
    let scale: f64 = x.iter().map(|&v| f64::from(v).abs()).sum();
    assert!(
        (got - want).abs() <= 1e-5 * scale,
        "total {got}, want {want}"
    );
    let acc = dev.download(&acc).unwrap();
    let olds = dev.download(&olds).unwrap();
    for j in 0..16 {
        let step = j as i32 + 1;
        assert_eq!(
            acc[j],
            step * g as i32,
            "element {j} added once per program"
        );
        let mut seen: Vec<i32> = (0..g).map(|p| olds[p * 16 + j]).collect();
        seen.sort_unstable();
        let want: Vec<i32> = (0..g as i32).map(|k| k * step).collect();
        assert_eq!(seen, want, "old values of element {j}");
    }
    assert_eq!(dev.download(&grid2).unwrap(), vec![g as i32 - 1; 32]);
}

/// A sequential inclusive scan of `x` (row-major `rows × cols`) along `axis`, as `f` combines.
pub fn scan_ref<T: Copy>(
    x: &[T],
    (rows, cols): (usize, usize),
    axis: usize,
    reverse: bool,
    f: impl Fn(T, T) -> T,
) -> Vec<T> {
    let mut out = x.to_vec();
    let (outer, n, stride) = if axis == 1 {
        (rows, cols, 1)
    } else {
        (cols, rows, cols)
    };
    for o in 0..outer {
        let at = |k: usize| {
            if axis == 1 {
                o * cols + k
            } else {
                k * stride + o
            }
        };
        let order: Vec<usize> = if reverse {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        };
        for w in order.windows(2) {
            out[at(w[1])] = f(out[at(w[0])], x[at(w[1])]);
        }
    }
    out
}

/// f32 scan results against an f64 sequential sum, within `n · 2⁻²³` of the running sum of
/// magnitudes (float sums associate differently on the GPU).
fn check_f32_sums(
    got: &[f32],
    x: &[f32],
    shape: (usize, usize),
    axis: usize,
    reverse: bool,
    what: &str,
) {
    let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let abs: Vec<f64> = x64.iter().map(|v| v.abs()).collect();
    let want = scan_ref(&x64, shape, axis, reverse, |a, b| a + b);
    let mag = scan_ref(&abs, shape, axis, reverse, |a, b| a + b);
    let n = if axis == 1 { shape.1 } else { shape.0 } as f64;
    for i in 0..x.len() {
        let err = (f64::from(got[i]) - want[i]).abs();
        assert!(
            err <= (n + 2.0) * 2f64.powi(-23) * mag[i],
            "{what}, element {i}: {} against {}",
            got[i],
            want[i]
        );
    }
}

/// `scans_1d` and `scans_2d` against sequential references.
pub fn check_scans(dev: &Device) {
    let mut r = Rng(99);
    let xi: Vec<i32> = (0..8192).map(|_| (r.next() % 2001) as i32 - 1000).collect();
    let xf: Vec<f32> = (0..8192).map(|_| r.f32() * 4.0).collect();
    let n = 4096;
    let (xib, xfb) = (dev.upload(&xi[..n]).unwrap(), dev.upload(&xf[..n]).unwrap());
    let mut out = dev.zeros::<i32>(7 * n).unwrap();
    let mut outf = dev.zeros::<f32>(4 * n).unwrap();
    let mut cnt = dev.zeros::<i32>(n).unwrap();
    scans_1d::launch(dev, Grid::x(1), &xib, &xfb, &mut out, &mut outf, &mut cnt).unwrap();
    let out = dev.download(&out).unwrap();
    let outf = dev.download(&outf).unwrap();
    let a = &xi[..n];
    let row = (1, n);
    let add = |x: i32, y: i32| x.wrapping_add(y);
    let region = |k: usize, len: usize| &out[k * n..k * n + len];
    assert_eq!(region(0, n), scan_ref(a, row, 1, false, add), "cumsum");
    assert_eq!(
        region(1, n),
        scan_ref(a, row, 1, true, add),
        "cumsum reverse"
    );
    assert_eq!(region(2, n), scan_ref(a, row, 1, false, i32::max), "cummax");
    assert_eq!(
        region(3, n),
        scan_ref(a, row, 1, true, i32::min),
        "cummin reverse"
    );
    let low: Vec<i32> = a.iter().map(|v| v & 3).collect();
    assert_eq!(
        region(4, n),
        scan_ref(&low, row, 1, false, i32::wrapping_mul),
        "cumprod"
    );
    assert_eq!(
        region(5, 16),
        scan_ref(&a[..16], (1, 16), 1, false, add),
        "16 elements"
    );
    assert_eq!(
        region(6, 256),
        scan_ref(&a[..256], (1, 256), 1, true, i32::max),
        "256 elements, reverse"
    );
    let pos: Vec<i32> = a.iter().map(|&v| i32::from(v > 0)).collect();
    assert_eq!(
        dev.download(&cnt).unwrap(),
        scan_ref(&pos, row, 1, false, add),
        "count"
    );
    let f = &xf[..n];
    check_f32_sums(&outf[..n], f, row, 1, false, "f32 cumsum");
    assert_eq!(
        &outf[n..2 * n],
        scan_ref(f, row, 1, false, f32::max),
        "f32 cummax"
    );
    check_f32_sums(&outf[2 * n..3 * n], f, row, 1, true, "f32 cumsum reverse");
    let p16 = scan_ref(&f[..16], (1, 16), 1, false, |x, y| x * y);
    for (k, (&g, &w)) in outf[3 * n..3 * n + 16].iter().zip(&p16).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * w.abs().max(1e-30),
            "f32 cumprod {k}: {g} vs {w}"
        );
    }

    let m = 8192;
    let xb = dev.upload(&xi).unwrap();
    let fb = dev.upload(&xf).unwrap();
    let mut out = dev.zeros::<i32>(6 * m).unwrap();
    let mut outf = dev.zeros::<f32>(2 * m).unwrap();
    scans_2d::launch(dev, Grid::x(1), &xb, &mut out, &fb, &mut outf).unwrap();
    let out = dev.download(&out).unwrap();
    let outf = dev.download(&outf).unwrap();
    let region = |k: usize| &out[k * m..(k + 1) * m];
    let sq = (64, 128);
    assert_eq!(
        region(0),
        scan_ref(&xi, sq, 1, false, add),
        "64 × 128 along 1"
    );
    assert_eq!(
        region(1),
        scan_ref(&xi, sq, 0, false, add),
        "64 × 128 along 0"
    );
    assert_eq!(
        region(2),
        scan_ref(&xi, sq, 1, true, i32::max),
        "cummax along 1, reverse"
    );
    assert_eq!(
        region(3),
        scan_ref(&xi, sq, 0, true, i32::min),
        "cummin along 0, reverse"
    );
    assert_eq!(
        region(4),
        scan_ref(&xi, (4, 2048), 1, false, add),
        "4 × 2048 along 1"
    );
    assert_eq!(
        region(5),
        scan_ref(&xi, (1024, 8), 0, true, add),
        "1024 × 8 along 0, reverse"
    );
    check_f32_sums(&outf[..m], &xf, sq, 1, false, "f32 along 1");
    check_f32_sums(&outf[m..], &xf, sq, 0, false, "f32 along 0");
}

#[tile_kernel(num_warps = 4)]
/// 4-bit values packed eight to a `u32` (value `j` of a word in bits `4j .. 4j + 4`, GPTQ's
/// order along a row) unpacked in order by three levels of `interleave`, less a zero point of
/// 8, as f32: `out[r][8w + j] = ((q[r][w] >> 4j) & 15) − 8`. Blocks of `BM` rows and `BW` words.
pub fn unpack_int4(
    q: Ptr<u32, { rows * words }>,
    out: Ptr<f32, { rows * words * 8 }>,
    rows: i32,
    words: i32,
    BM: Const<16>,
    BW: Const<16>,
) {
    let r = program_id(0) * BM + arange(0, BM);
    let w = program_id(1) * BW + arange(0, BW);
    let m = (r < rows).expand_dims(1) & (w < words).expand_dims(0);
    let x = load(q + r.expand_dims(1) * words + w.expand_dims(0), m);
    let n0 = x & 15;
    let n1 = (x >> 4) & 15;
    let n2 = (x >> 8) & 15;
    let n3 = (x >> 12) & 15;
    let n4 = (x >> 16) & 15;
    let n5 = (x >> 20) & 15;
    let n6 = (x >> 24) & 15;
    let n7 = x >> 28;
    // Per word: [n0, n2, n4, n6] and [n1, n3, n5, n7], then all eight in order.
    let even = interleave(interleave(n0, n4), interleave(n2, n6));
    let odd = interleave(interleave(n1, n5), interleave(n3, n7));
    let v = interleave(even, odd);
    let c = program_id(1) * (8 * BW) + arange(0, 8 * BW);
    let mo = (r < rows).expand_dims(1) & (c < 8 * words).expand_dims(0);
    store(
        out + r.expand_dims(1) * (8 * words) + c.expand_dims(0),
        (v as f32) - 8.0,
        mo,
    );
}

/// `unpack_int4` against the host's unpacking on shapes with partial blocks on both edges.
pub fn check_unpack_int4(dev: &Device) {
    let mut g = Rng(77);
    for (rows, words) in [(1usize, 1usize), (17, 5), (16, 16), (33, 40)] {
        let q: Vec<u32> = (0..rows * words).map(|_| g.next() as u32).collect();
        let mut out = dev.zeros::<f32>(rows * words * 8).unwrap();
        let grid = Grid::xy(rows.div_ceil(16) as u32, words.div_ceil(16) as u32);
        let (ri, wi) = (rows as i32, words as i32);
        unpack_int4::launch(dev, grid, &dev.upload(&q).unwrap(), &mut out, ri, wi).unwrap();
        let got = dev.download(&out).unwrap();
        for (i, &word) in q.iter().enumerate() {
            for j in 0..8 {
                let want = ((word >> (4 * j)) & 15) as f32 - 8.0;
                assert_eq!(got[8 * i + j], want, "{rows}x{words}: word {i}, value {j}");
            }
        }
    }
}

#[tile_kernel]
/// `join`, `split` and `interleave` of 1-D tiles, in layouts that agree and in ones that do not:
/// `joined` is `[a, b]` per row of an `n × 2` tile; `diff[i] = x − y` of the pairs `xy[2i],
/// xy[2i + 1]` split off a loaded `n × 2` tile; `mixed[k] = interleave(b, a)[k] + xy[k]` (the
/// interleaved tile meets a loaded one); `prod[i] = xy[2i] · xy[2i + 1]` split off a loaded 1-D
/// tile reshaped.
pub fn pairs(
    a: Ptr<f32, n>,
    b: Ptr<f32, n>,
    xy: Ptr<f32, { 2 * n }>,
    joined: Ptr<f32, { 2 * n }>,
    diff: Ptr<f32, n>,
    mixed: Ptr<f32, { 2 * n }>,
    prod: Ptr<f32, n>,
    n: i32,
    BLOCK: Const<128>,
) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = i < n;
    let (va, vb) = (load(a + i, m), load(b + i, m));
    let k = arange(0, 2);
    let p2 = i.expand_dims(1) * 2 + k.expand_dims(0);
    let m2 = m.expand_dims(1) & (k < 2).expand_dims(0);
    store(joined + p2, join(va, vb), m2);
    let (x, y) = split(load(xy + p2, m2));
    store(diff + i, x - y, m);
    let i2 = program_id(0) * (2 * BLOCK) + arange(0, 2 * BLOCK);
    let m1 = i2 < 2 * n;
    let flat = load(xy + i2, m1);
    store(mixed + i2, interleave(vb, va) + flat, m1);
    let (e, o) = flat.reshape([BLOCK, 2]).split();
    store(prod + i, e * o, m);
}

/// `pairs` against its definition at sizes with a partial last block.
pub fn check_pairs(dev: &Device) {
    let mut g = Rng(5);
    for n in [1usize, 17, 128, 1000] {
        let a: Vec<f32> = (0..n).map(|_| g.f32()).collect();
        let b: Vec<f32> = (0..n).map(|_| g.f32()).collect();
        let xy: Vec<f32> = (0..2 * n).map(|_| g.f32()).collect();
        let mut joined = dev.zeros::<f32>(2 * n).unwrap();
        let mut diff = dev.zeros::<f32>(n).unwrap();
        let mut mixed = dev.zeros::<f32>(2 * n).unwrap();
        let mut prod = dev.zeros::<f32>(n).unwrap();
        pairs::launch(
            dev,
            Grid::x(n.div_ceil(128) as u32),
            &dev.upload(&a).unwrap(),
            &dev.upload(&b).unwrap(),
            &dev.upload(&xy).unwrap(),
            &mut joined,
            &mut diff,
            &mut mixed,
            &mut prod,
            n as i32,
        )
        .unwrap();
        let (joined, diff) = (dev.download(&joined).unwrap(), dev.download(&diff).unwrap());
        let (mixed, prod) = (dev.download(&mixed).unwrap(), dev.download(&prod).unwrap());
        for i in 0..n {
            assert_eq!(
                [joined[2 * i], joined[2 * i + 1]],
                [a[i], b[i]],
                "n {n}: join {i}"
            );
            assert_eq!(diff[i], xy[2 * i] - xy[2 * i + 1], "n {n}: split {i}");
            assert_eq!(
                prod[i],
                xy[2 * i] * xy[2 * i + 1],
                "n {n}: reshaped split {i}"
            );
            assert_eq!(
                mixed[2 * i],
                b[i] + xy[2 * i],
                "n {n}: interleave {}",
                2 * i
            );
            assert_eq!(
                mixed[2 * i + 1],
                a[i] + xy[2 * i + 1],
                "n {n}: interleave {}",
                2 * i + 1
            );
        }
    }
}

#[tile_kernel(num_warps = 4)]
/// `c = aᵀ · b` (`a` is `k × m`, `b` is `k × n`, both row-major: a product over the rows of
/// both, as a weight gradient `Gᵀ · x` is), one `BM × BN` block per program, `k` in steps of
/// `BK`: the left operand is a `BK × BM` tile loaded row by row and transposed, which `wgmma`
/// reads M-major from the `cp.async` ring on Hopper.
pub fn dot_trans_a(
    a: Ptr<T, { k * m }>,
    b: Ptr<T, { k * n }>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const<64>,
    BN: Const<64>,
    BK: Const<32>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let kk = (k0 + ks).expand_dims(1);
        let at = load(
            a + kk * m + rows.expand_dims(0),
            (kk < k) & (rows < m).expand_dims(0),
            0.0,
        );
        let bt = load(
            b + kk * n + cols.expand_dims(0),
            (kk < k) & (cols < n).expand_dims(0),
            0.0,
        );
        acc = dot(at.trans(), bt, acc);
    }
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

#[tile_kernel(num_warps = 4)]
/// `c = a · bᵀ` (`a` is `m × k`, `b` is `n × k`, both row-major: attention's `Q Kᵀ`, a linear
/// layer's `x Wᵀ`) over a loop along `k`, one `BM × BN` block per program: the right operand is
/// a `BN × BK` tile loaded row by row and transposed, which `wgmma` reads K-major and `mma.sync`
/// reads with `ldmatrix` without `.trans`, both from the `cp.async` ring.
pub fn dot_trans_b(
    a: Ptr<T, { m * k }>,
    b: Ptr<T, { n * k }>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const<64>,
    BN: Const<64>,
    BK: Const<32>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let kk = (k0 + ks).expand_dims(0);
        let at = load(
            a + rows.expand_dims(1) * k + kk,
            (rows < m).expand_dims(1) & (kk < k),
            0.0,
        );
        let bt = load(
            b + cols.expand_dims(1) * k + kk,
            (cols < n).expand_dims(1) & (kk < k),
            0.0,
        );
        acc = dot(at, bt.trans(), acc);
    }
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

#[tile_kernel(num_warps = 8, num_stages = 3)]
/// Attention's two products without its softmax: `out = Σⱼ ((q Kⱼᵀ) · 1/16 as T) Vⱼ` over key
/// blocks `Kⱼ`, `Vⱼ` of 64 rows, at head dimension 128, one block of 128 query rows per
/// program (`q` is `m × 128`, `k` and `v` are `n × 128`, row-major). On sm_80 each warp
/// multiplies by a whole `128 × 64` `Kⱼᵀ` and `64 × 128` `Vⱼ` (128 registers of every thread
/// each): their `ldmatrix` reads go one `K` step at a time, beside the `mma`s that use them, and
/// `Kⱼ` comes transposed from its ring.
pub fn chained_products(
    q: Ptr<T, { m * 128 }>,
    k: Ptr<T, { n * 128 }>,
    v: Ptr<T, { n * 128 }>,
    out: Ptr<f32, { m * 128 }>,
    m: i32,
    n: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const<128>,
    BN: Const<64>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let d = arange(0, 128);
    let qt = load(
        q + rows.expand_dims(1) * 128 + d.expand_dims(0),
        (rows < m).expand_dims(1),
        0.0,
    );
    let mut acc = zeros([BM, 128]);
    for start in (0..n).step_by(BN) {
        let keys = start + arange(0, BN);
        let at = keys.expand_dims(1) * 128 + d.expand_dims(0);
        let ok = (keys < n).expand_dims(1);
        let s = dot(qt, load(k + at, ok, 0.0).trans());
        acc = dot((s * 0.0625) as T, load(v + at, ok, 0.0), acc);
    }
    store(
        out + rows.expand_dims(1) * 128 + d.expand_dims(0),
        acc,
        (rows < m).expand_dims(1),
    );
}

/// [`chained_products`] against float64 (the scaled scores rounded to the input type as the
/// kernel rounds them), f16 and bf16, on query and key counts with ragged last blocks.
pub fn check_chained_products(dev: &Device, shapes: &[(usize, usize)]) {
    fn run<T: tile::Element>(
        dev: &Device,
        (m, n): (usize, usize),
        conv: fn(f32) -> T,
        back: fn(T) -> f32,
        tol: f64,
    ) {
        let mut g = Rng((m * 31 + n) as u64);
        let mut data = |len: usize| -> Vec<T> { (0..len).map(|_| conv(g.f32())).collect() };
        let (q, k, v) = (data(m * 128), data(n * 128), data(n * 128));
        let mut out = dev.upload(&vec![f32::NAN; m * 128]).unwrap();
        let (dq, dk, dv) = (
            dev.upload(&q).unwrap(),
            dev.upload(&k).unwrap(),
            dev.upload(&v).unwrap(),
        );
        let grid = Grid::x(m.div_ceil(128) as u32);
        chained_products::launch(dev, grid, &dq, &dk, &dv, &mut out, m as i32, n as i32).unwrap();
        let got = dev.download(&out).unwrap();
        let f = |t: T| f64::from(back(t));
        let (mut err, mut norm) = (0.0f64, 0.0f64);
        for i in 0..m {
            let mut want = [0.0f64; 128];
            for j in 0..n {
                let s: f64 = (0..128)
                    .map(|c| f(q[i * 128 + c]) * f(k[j * 128 + c]))
                    .sum();
                let p = f(conv((s * 0.0625) as f32));
                for (c, w) in want.iter_mut().enumerate() {
                    *w += p * f(v[j * 128 + c]);
                }
            }
            for (c, w) in want.iter().enumerate() {
                err += (f64::from(got[i * 128 + c]) - w).powi(2);
                norm += w * w;
            }
        }
        let rel = (err / norm.max(1e-30)).sqrt();
        assert!(
            rel <= tol,
            "{m} × {n}: relative L2 error {rel:.2e} over {tol:.0e}"
        );
    }
    for &shape in shapes {
        run::<f16>(dev, shape, f16::from_f32, f16::to_f32, 2e-3);
        run::<bf16>(dev, shape, bf16::from_f32, bf16::to_f32, 1e-2);
    }
}

/// [`dot_trans_a`] and [`dot_trans_b`] against float64 on shapes with ragged edges along every
/// axis, f16 and bf16.
pub fn check_dot_trans(dev: &Device) {
    fn run<T: tile::Element>(
        dev: &Device,
        (m, n, k): (usize, usize, usize),
        conv: fn(f32) -> T,
        back: fn(T) -> f32,
    ) {
        let mut g = Rng((m * 131 + n * 7 + k) as u64);
        let a: Vec<T> = (0..k * m).map(|_| conv(g.f32())).collect();
        let b: Vec<T> = (0..k * n).map(|_| conv(g.f32())).collect();
        let grid = Grid::xy(m.div_ceil(64) as u32, n.div_ceil(64) as u32);
        let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        for trans_a in [true, false] {
            let mut c = dev.upload(&vec![f32::NAN; m * n]).unwrap();
            if trans_a {
                dot_trans_a::launch(dev, grid, &da, &db, &mut c, mi, ni, ki).unwrap();
            } else {
                dot_trans_b::launch(dev, grid, &da, &db, &mut c, mi, ni, ki).unwrap();
            }
            let c = dev.download(&c).unwrap();
            // `a` is `k × m` (transposed `A`) or `m × k`; `b` is `k × n` or `n × k`.
            let at = |i: usize, p: usize| if trans_a { a[p * m + i] } else { a[i * k + p] };
            let bt = |p: usize, j: usize| if trans_a { b[p * n + j] } else { b[j * k + p] };
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|p| f64::from(back(at(i, p))) * f64::from(back(bt(p, j))))
                        .sum();
                    let tol = 1e-4 * (k as f64).sqrt() + 1e-5 * want.abs();
                    assert!(
                        (f64::from(c[i * n + j]) - want).abs() <= tol,
                        "{m}×{n}×{k} trans_a {trans_a}: c[{i}][{j}] = {} against {want}",
                        c[i * n + j]
                    );
                }
            }
        }
    }
    for shape in [(64, 64, 32), (100, 72, 200), (128, 130, 1000), (1, 5, 7)] {
        run::<f16>(dev, shape, f16::from_f32, f16::to_f32);
        run::<bf16>(dev, shape, bf16::from_f32, bf16::to_f32);
    }
}
