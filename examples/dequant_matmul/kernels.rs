//! Kernels of the `dequant_matmul` example: `y = x @ dequant(W)ᵀ` with 4-bit weights.
//!
//! **Layout.** `x` is `m × k` (f16 or bf16, row-major). `W` is `n × k` 4-bit values packed
//! eight to a `u32` along `k`: `qw` is `n × k/8` words, value `k` of row `r` in bits
//! `4·(k mod 8) … 4·(k mod 8) + 3` of word `r·k/8 + k/8` (GPTQ's order within a word; GPTQ
//! stores the words `k/8 × n`, a transpose of this). Each row has one scale and one zero point
//! per group of [`GROUP`] values along `k` (`n × k/128`, in the activations' type, AWQ's and
//! GPTQ's asymmetric scheme): `W[r][k] = (q − zero[r][k/128]) · scale[r][k/128]`.
//!
//! **Fused.** [`w4a16`] computes a block of `yᵀ`: `BN` rows of `W` (columns of `y`) against
//! `BM` rows of `x`, so that with a few rows of `x` the tensor cores still get a full
//! 64-row tile of weights (the "swap" of decode kernels). Per group of 128 along `k` it loads
//! `BN × 16` words, unpacks them in order with three levels of `interleave`, makes each value
//! `q` an f32 from its bits (`2²³ + q` is the float whose low mantissa bits are `q`, less
//! `2²³`: no integer conversion), applies scale and zero point with one fused multiply-add,
//! rounds to the activations' type and feeds `dot`. `split` programs along the grid's second axis each take a slice of the
//! groups and write f32 partial sums, added by the `gemm` example's [`splitk_sum`].
//!
//! **One token.** [`w4a16_gemv`] takes `m = 1` (decoding) off the tensor cores: `BN = 32` rows
//! of `W` per program, each weight one fused multiply-add with its `x` after dequantizing, the
//! products kept per column of the group and summed once at the end; split over the groups
//! where the rows give too few programs. (32 rows: 64 and 128 were 1.4× slower at 28672 rows.)
//!
//! **Unfused.** [`dequant_int4`] writes `Wᵀ` (`k × n`, the activations' type), and the `gemm`
//! example's `matmul` multiplies.
//!
//! [`splitk_sum`]: crate::gemm::kernels::splitk_sum

use tile::prelude::*;

/// Values along `k` sharing one scale and zero point.
pub const GROUP: usize = 128;

#[tile_fn]
/// Group `g` of rows `rows` of `W`, a `BN × 128` f32 tile: the `BN × 16` words unpacked in
/// order, each value `q` made `(q − zero) · scale`.
fn dequant_group(
    qw: Tile,
    scales: Tile,
    zeros: Tile,
    rows: Tile,
    row_ok: Tile,
    k: i32,
    g: Tile,
) -> Tile {
    let words = arange(0, 16);
    let q = load(
        qw + rows.expand_dims(1) * (k / 8) + (g * 16 + words).expand_dims(0),
        row_ok.expand_dims(1),
    );
    let s = load(scales + rows * (k / 128) + g, row_ok) as f32;
    let z = load(zeros + rows * (k / 128) + g, row_ok) as f32;
    // Each value's bits under the exponent of 2²³: the float 2²³ + q.
    let big = 0x4B00_0000;
    let n0 = (q & 15) | big;
    let n1 = ((q >> 4) & 15) | big;
    let n2 = ((q >> 8) & 15) | big;
    let n3 = ((q >> 12) & 15) | big;
    let n4 = ((q >> 16) & 15) | big;
    let n5 = ((q >> 20) & 15) | big;
    let n6 = ((q >> 24) & 15) | big;
    let n7 = (q >> 28) | big;
    let even = interleave(interleave(n0, n4), interleave(n2, n6));
    let odd = interleave(interleave(n1, n5), interleave(n3, n7));
    // q exactly (2²³ + q − 2²³), then q · s − z · s rounded once.
    let v = interleave(even, odd).bitcast(f32) - 8388608.0;
    fma(v, s.expand_dims(1), -(z * s).expand_dims(1))
}

#[tile_kernel(num_warps = 4)]
/// Program `(i, j, s)`: columns `j·BN …` of rows `i·BM …` of `y`, over slice `s` of the
/// groups (`gslice` groups each), as f32 partial sums in slice `s` of `part` (`split × m × n`).
/// The row blocks that share a block of weights are neighbours in the grid, so that the
/// weights come from DRAM once and from the L2 for the others.
#[allow(clippy::too_many_arguments)]
pub fn w4a16(
    x: Ptr<T, { m * k }>,
    qw: Ptr<u32, { n * (k / 8) }>,
    scales: Ptr<T, { n * (k / 128) }>,
    zeros: Ptr<T, { n * (k / 128) }>,
    part: Ptr<f32, { split * m * n }>,
    m: i32,
    n: i32,
    k: i32,
    split: i32,
    gslice: i32,
    T: Type<{ [f16, bf16] }>,
    BN: Const<64>,
    BM: Const<16>,
) {
    let s = program_id(2);
    let rows = program_id(1) * BN + arange(0, BN);
    let cols = program_id(0) * BM + arange(0, BM);
    let row_ok = rows < n;
    let col_ok = cols < m;
    let kk = arange(0, 128);
    let g0 = s * gslice;
    let g1 = min(g0 + gslice, k / 128);
    let mut acc = zeros([BN, BM]);
    for g in g0..g1 {
        let w = dequant_group(qw, scales, zeros, rows, row_ok, k, g) as T;
        let xs = load(
            x + cols.expand_dims(1) * k + (g * 128 + kk).expand_dims(0),
            col_ok.expand_dims(1),
        );
        acc = dot(w, xs.trans(), acc);
    }
    store(
        part + s * m * n + cols.expand_dims(0) * n + rows.expand_dims(1),
        acc,
        row_ok.expand_dims(1) & col_ok.expand_dims(0),
    );
}

#[tile_kernel(num_warps = 4)]
/// One token (`m = 1`, decoding): program `(j, s)` computes `y[j·BN …]` over slice `s` of the
/// groups on FMAs, as f32 partial sums in slice `s` of `part` (`split × n`). A single row gives
/// the tensor cores nothing to do; here each weight is one fused multiply-add after its
/// dequantization, the products kept per column of the group and summed once at the end.
#[allow(clippy::too_many_arguments)]
pub fn w4a16_gemv(
    x: Ptr<T, k>,
    qw: Ptr<u32, { n * (k / 8) }>,
    scales: Ptr<T, { n * (k / 128) }>,
    zeros: Ptr<T, { n * (k / 128) }>,
    part: Ptr<f32, { split * n }>,
    n: i32,
    k: i32,
    split: i32,
    gslice: i32,
    T: Type<{ [f16, bf16] }>,
    BN: Const<32>,
) {
    let s = program_id(1);
    let rows = program_id(0) * BN + arange(0, BN);
    let row_ok = rows < n;
    let kk = arange(0, 128);
    let g0 = s * gslice;
    let g1 = min(g0 + gslice, k / 128);
    let mut acc = zeros([BN, 128]);
    for g in g0..g1 {
        let w = dequant_group(qw, scales, zeros, rows, row_ok, k, g);
        let xv = load(x + g * 128 + kk) as f32;
        acc = fma(w, xv.expand_dims(0), acc);
    }
    store(part + s * n + rows, acc.sum(1), row_ok);
}

#[tile_kernel(num_warps = 4)]
/// The unfused form's first step: `wt = Wᵀ` dequantized (`k × n`, the activations' type), a
/// `BN × 128` block of `W` (one group) per program.
pub fn dequant_int4(
    qw: Ptr<u32, { n * (k / 8) }>,
    scales: Ptr<T, { n * (k / 128) }>,
    zeros: Ptr<T, { n * (k / 128) }>,
    wt: Ptr<T, { k * n }>,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    BN: Const<64>,
) {
    let rows = program_id(0) * BN + arange(0, BN);
    let row_ok = rows < n;
    let g = program_id(1);
    let w = dequant_group(qw, scales, zeros, rows, row_ok, k, g) as T;
    let kk = g * 128 + arange(0, 128);
    store(
        wt + kk.expand_dims(0) * n + rows.expand_dims(1),
        w,
        row_ok.expand_dims(1),
    );
}

/// Every kernel of this example, each instance.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = w4a16::KERNELS.to_vec();
    v.extend(w4a16_gemv::KERNELS);
    v.extend(dequant_int4::KERNELS);
    v
}
