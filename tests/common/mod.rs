//! Kernels shared by the workspace tests: every example's kernels plus kernels that exercise the
//! rest of the language, and the list of all of them (for the IR and ptxas tests).

#![allow(dead_code)]

#[path = "../../examples/act_and_mul/kernels.rs"]
pub mod act_and_mul;
#[path = "../../examples/elementwise_chains/kernels.rs"]
pub mod elementwise_chains;
#[path = "../../examples/fused_add_mul/kernels.rs"]
pub mod fused_add_mul;
#[path = "../../examples/fused_bias_gelu/kernels.rs"]
pub mod fused_bias_gelu;
#[path = "../../examples/fused_softmax/kernels.rs"]
pub mod fused_softmax;
#[path = "../../examples/gemm/kernels.rs"]
pub mod gemm;
#[path = "../../examples/gemm_bias_act/kernels.rs"]
pub mod gemm_bias_act;
#[path = "../../examples/qk_norm_rope/kernels.rs"]
pub mod qk_norm_rope;
#[path = "../../examples/softmax_regression/kernels.rs"]
pub mod softmax_regression;

use tile::prelude::*;

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
    // the first reduction lost its (unneeded) leading barrier (docs/perf/NOTES.md).
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

/// Every kernel the project compiles (examples and tests).
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = fused_add_mul::all();
    v.extend(fused_softmax::all());
    v.extend(elementwise_chains::all());
    v.extend(fused_bias_gelu::all());
    v.extend(act_and_mul::all());
    v.extend(qk_norm_rope::all());
    v.extend(gemm::all());
    v.extend(gemm_bias_act::all());
    v.extend(softmax_regression::all());
    v.extend([
        &int_ops::KERNEL,
        &i64_axpy::KERNEL,
        &clamp::KERNEL,
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
    v.extend(matmul_tf32::KERNELS);
    v.push(&dot_tf32_once::KERNEL);
    v.push(&mixed_dots::KERNEL);
    v.push(&wide_from_unit::KERNEL);
    v.push(&r#type::KERNEL);
    v.push(&füllen::KERNEL);
    v.push(&philox_i64::KERNEL);
    v.push(&philox_i32::KERNEL);
    v.push(&philox_words::KERNEL);
    v
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

/// Seeds as `i64` (an `i32` one sign-extended, as Triton's `seed.to(tl.uint64)`).
const PHILOX_SEEDS: [i64; 7] = [0, 1, 42, -1, i32::MIN as i64, (1 << 32) + 5, i64::MIN + 3];

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
    /// Next 64 random bits (splitmix64).
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
