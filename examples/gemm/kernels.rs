//! GEMM, `C = A @ B` with row-major `A` (`m × k`) and `B` (`k × n`), f16 or bf16 inputs and f32
//! accumulation on tensor cores (`dot` of 16-bit tiles lowers to `mma.sync.m16n8k16`): one program
//! per `BM × BN` block of `C` (a 1-D grid in grouped order, [`grid`]), a loop over `BK`-wide slices of `k` whose ragged edge is masked (the
//! masked-off elements load as 0, which adds nothing). `C` is written as `O`: the input type or
//! f32 (the mixed f16/bf16 instances are compiled too, and unused by the example). `BN` is 64 or
//! 128, chosen at launch, on 4 warps (64 × 32 or 64 × 64 accumulator tiles per warp; two programs
//! fit on an H100 SM). The `k` loop's tiles go through a 3-stage shared-memory ring filled by
//! `cp.async` (`pipeline-dot`). On sm_90a (Hopper) the `dot` runs on `wgmma` instead, reading
//! both operands from that ring; [`gemm_wide`] is the same kernel with Hopper's preferred
//! `128 × 256 × 64` tile on 8 warps. The specialization for aligned arguments needs `k` and `n` to be
//! multiples of 8 (16-byte rows of f16); other shapes take the unspecialized variant, which copies
//! element by element and therefore runs on 8 warps (docs/DECISIONS.md).

use tile::prelude::*;
use tile::stdlib::{grouped_pid, matmul_acc};

/// The `BM × BN` accumulator of `a @ b` (`m × k` and `k × n`, row-major) for the block that
/// program `program_id(0)` computes in grouped order (`GM` row blocks column by column), with
/// the block's rows, columns and their masks: `(acc, rows, cols, row_ok, col_ok)`. The GEMM
/// part of [`gemm`], [`gemm_wide`] and the `gemm_bias_act` example's kernels.
#[tile_fn]
pub fn gemm_acc(
    a: Tile,
    b: Tile,
    m: i32,
    n: i32,
    k: i32,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const,
) -> (Tile, Tile, Tile, Tile, Tile) {
    let (pm, pn) = grouped_pid(program_id(0), m, n, BM, BN, GM);
    let rows = pm * BM + arange(0, BM);
    let cols = pn * BN + arange(0, BN);
    let row_ok = (rows < m).expand_dims(1);
    let col_ok = (cols < n).expand_dims(0);
    let zero = zeros([BM, BN]);
    let acc = matmul_acc(zero, a, k, b, n, rows, cols, row_ok, col_ok, 0, k, BK, 0);
    (acc, rows, cols, row_ok, col_ok)
}

/// The body of [`gemm`] and [`gemm_wide`]: `c`'s block of [`gemm_acc`], written as `O`.
#[tile_fn]
fn gemm_block(
    a: Tile,
    b: Tile,
    c: Tile,
    m: i32,
    n: i32,
    k: i32,
    O: Type,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const,
) {
    let (acc, rows, cols, row_ok, col_ok) = gemm_acc(a, b, m, n, k, BM, BN, BK, GM);
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc as O,
        row_ok & col_ok,
    );
}

#[tile_kernel(num_warps = 4)]
/// `c = a @ b`, written as `O` (the input type, or f32). A 1-D grid ([`grid`]) of programs in
/// grouped order, as in Triton's tutorial matmul: `GM` row blocks are visited column by column
/// before the next `GM`, so the programs resident at once share panels of `A` and `B` in L2.
/// 4 warps, `128 × BN × 32` tiles.
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    a: Ptr<T, { m * k }>,
    b: Ptr<T, { k * n }>,
    c: Ptr<O, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    O: Type<{ [f16, bf16, f32] }>,
    BM: Const<128>,
    BN: Const<{ [64, 128] }>,
    BK: Const<32>,
    GM: Const<8>,
) {
    gemm_block(a, b, c, m, n, k, O, BM, BN, BK, GM);
}

#[tile_kernel(num_warps = 8)]
/// [`gemm`] with `128 × 256 × 64` tiles on 8 warps (two warpgroups of 64 rows), the shape
/// Triton's tutorial matmul autotunes to on Hopper: on sm_90a each warpgroup's `dot` is one
/// `wgmma.m64n256k16` per 16-wide step of `K`, its accumulator 128 registers per thread.
#[allow(clippy::too_many_arguments)]
pub fn gemm_wide(
    a: Ptr<T, { m * k }>,
    b: Ptr<T, { k * n }>,
    c: Ptr<O, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    O: Type<{ [f16, bf16, f32] }>,
    BM: Const<128>,
    BN: Const<256>,
    BK: Const<64>,
    GM: Const<8>,
) {
    gemm_block(a, b, c, m, n, k, O, BM, BN, BK, GM);
}

/// [`gemm_acc`] with the operands read through tensor descriptors (their extents make the
/// ragged edges read as 0, so the loop has no masks): on Hopper, with aligned arguments, the
/// tensor memory accelerator copies the tiles. The GEMM part of [`gemm_tma`], [`gemm_tuned`]
/// and the `gemm_bias_act` example's kernels.
#[tile_fn]
pub fn gemm_desc_acc(
    a: Tile,
    b: Tile,
    m: i32,
    n: i32,
    k: i32,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const,
) -> (Tile, Tile, Tile, Tile, Tile) {
    let (pm, pn) = grouped_pid(program_id(0), m, n, BM, BN, GM);
    let a_desc = make_tensor_descriptor(a, [m, k], [k, 1], [BM, BK]);
    let b_desc = make_tensor_descriptor(b, [k, n], [n, 1], [BK, BN]);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        acc = dot(a_desc.load([pm * BM, k0]), b_desc.load([k0, pn * BN]), acc);
    }
    let rows = pm * BM + arange(0, BM);
    let cols = pn * BN + arange(0, BN);
    let row_ok = (rows < m).expand_dims(1);
    let col_ok = (cols < n).expand_dims(0);
    (acc, rows, cols, row_ok, col_ok)
}

/// The body of [`gemm_tma`] and [`gemm_tuned`]: `c`'s block of [`gemm_desc_acc`], written in
/// the input type.
#[tile_fn]
fn gemm_desc_block(
    a: Tile,
    b: Tile,
    c: Tile,
    m: i32,
    n: i32,
    k: i32,
    T: Type,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const,
) {
    let (acc, rows, cols, row_ok, col_ok) = gemm_desc_acc(a, b, m, n, k, BM, BN, BK, GM);
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc as T,
        row_ok & col_ok,
    );
}

#[tile_kernel(num_warps = 8)]
/// [`gemm_wide`] written with tensor descriptors, as Triton's Hopper kernels are
/// (`make_tensor_descriptor` for `A` and `B`, `desc.load([row, col])` in the `K` loop). On
/// sm_90a, with 16-byte-aligned arguments and `k`, `n` multiples of 8, the tiles reach shared
/// memory through the tensor memory accelerator (one thread issues a copy per tile, completing
/// on an mbarrier per ring stage) instead of every thread's `cp.async`; elsewhere the
/// descriptors become the masked pointer loads they stand for. Out-of-range rows and columns
/// read as 0, as the descriptor's extents say, so the ragged edges need no masks here. `c` is
/// written in the input type (an f32 output would double the instances past the compile budget).
#[allow(clippy::too_many_arguments)]
pub fn gemm_tma(
    a: Ptr<T, { m * k }>,
    b: Ptr<T, { k * n }>,
    c: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const<128>,
    BN: Const<256>,
    BK: Const<64>,
    GM: Const<8>,
) {
    gemm_desc_block(a, b, c, m, n, k, T, BM, BN, BK, GM);
}

#[tile_kernel(autotune(
    configs = [
        { BM = 128, BN = 256, BK = 64, num_warps = 8, num_stages = 3 },
        { BM = 128, BN = 128, BK = 64, num_warps = 8, num_stages = 3 },
        { BM = 128, BN = 128, BK = 32, num_warps = 4, num_stages = 4 },
        { BM = 128, BN = 64, BK = 32, num_warps = 4 },
    ],
    key = [m, n, k],
))]
/// `c = a @ b` in the input type, autotuned: the tiles of [`gemm_wide`] (config 0) and of
/// [`gemm`] with `BN = 64` (config 3) among four configurations, the fastest timed per
/// `(m, n, k)` at its first launch ([`matmul_tuned`]). Written with tensor descriptors, as
/// [`gemm_tma`]: on Hopper with aligned arguments the tensor memory accelerator copies the
/// tiles.
#[allow(clippy::too_many_arguments)]
pub fn gemm_tuned(
    a: Ptr<T, { m * k }>,
    b: Ptr<T, { k * n }>,
    c: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const<8>,
) {
    gemm_desc_block(a, b, c, m, n, k, T, BM, BN, BK, GM);
}

/// `c = a @ b` (`m × n × k`, `c` in the input type) on [`gemm_tuned`]: the configuration timed
/// fastest for this shape on this device (at the first launch with it; later launches reuse the
/// choice, also across processes through the on-disk cache).
#[allow(dead_code)]
pub fn matmul_tuned<T: tile::Element>(
    dev: &Device,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<T>,
    (m, n, k): (usize, usize, usize),
) -> Result<(), Error> {
    let grid = |cfg: &gemm_tuned::Config| Grid::x(cdiv(m, cfg.BM).saturating_mul(cdiv(n, cfg.BN)));
    gemm_tuned::launch(dev, grid, a, b, c, m as i32, n as i32, k as i32)
}

/// The configuration [`gemm_tuned`] chose for `m × n × k` in this process (its label), if it
/// has met the shape.
#[allow(dead_code)]
pub fn tuned_choice(m: usize, n: usize, k: usize) -> Option<&'static str> {
    let key = [m as i64, n as i64, k as i64];
    gemm_tuned::TUNER
        .decisions()
        .into_iter()
        .find(|d| d.key.starts_with(&key))
        .map(|d| d.label)
}

/// The grid of [`gemm`] for an `m × n` result in `128 × bn` blocks: one program per block, on
/// one axis (the kernel orders them itself). A count past `u32` saturates, and the launch
/// refuses that grid.
#[allow(dead_code)]
pub fn grid(m: usize, n: usize, bn: i32) -> Grid {
    Grid::x(cdiv(m, 128).saturating_mul(cdiv(n, bn)))
}

#[tile_kernel(num_warps = 4)]
/// `c = a @ b` for f32 matrices on tf32 tensor cores (`precision = tf32`: each operand element
/// rounded to tf32, products summed in f32): 128 × 128 blocks on 4 warps, 16-wide slices of `k`
/// (an f32 slice holds twice the registers of a 16-bit one) through the same `cp.async` ring.
#[allow(clippy::too_many_arguments)]
pub fn gemm_tf32(
    a: Ptr<f32, { m * k }>,
    b: Ptr<f32, { k * n }>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    BM: Const<128>,
    BN: Const<128>,
    BK: Const<16>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let row_ok = (rows < m).expand_dims(1);
    let col_ok = (cols < n).expand_dims(0);
    let zero = zeros([BM, BN]);
    let acc = matmul_acc(zero, a, k, b, n, rows, cols, row_ok, col_ok, 0, k, BK, 1);
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        row_ok & col_ok,
    );
}

#[tile_kernel(num_warps = 4)]
/// Split-K for few rows (`m ≤ BM`): program `(j, s)` computes columns `j·BN … j·BN + BN` of
/// every row over slice `s` of `k` (`kslice` long, a multiple of `BK`) and writes the f32 partial
/// product to slice `s` of `part` (`split × m × n`); [`splitk_sum`] adds the slices. With a
/// handful of rows one program per `128 × BN` block leaves most SMs idle and most of each tile
/// empty: here every program streams its own `kslice × BN` panel of `B`, the part of the
/// product that costs.
#[allow(clippy::too_many_arguments)]
pub fn gemm_splitk(
    a: Ptr<T, { m * k }>,
    b: Ptr<T, { k * n }>,
    part: Ptr<f32, { split * m * n }>,
    m: i32,
    n: i32,
    k: i32,
    split: i32,
    kslice: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const<{ [16, 32] }>,
    BN: Const<64>,
    BK: Const<64>,
) {
    let s = program_id(1);
    let rows = arange(0, BM);
    let cols = program_id(0) * BN + arange(0, BN);
    let row_ok = (rows < m).expand_dims(1);
    let col_ok = (cols < n).expand_dims(0);
    let lo = s * kslice;
    let hi = min(lo + kslice, k);
    let zero = zeros([BM, BN]);
    let acc = matmul_acc(zero, a, k, b, n, rows, cols, row_ok, col_ok, lo, hi, BK, 0);
    store(
        part + s * m * n + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        row_ok & col_ok,
    );
}

#[tile_kernel(num_warps = 4)]
/// `c = Σ_s part[s]` over the `split` slices [`gemm_splitk`] wrote, as `O`: program `i` adds
/// elements `i·BLOCK … i·BLOCK + BLOCK` of the `m · n` result, slice after slice.
pub fn splitk_sum(
    part: Ptr<f32, { split * mn }>,
    c: Ptr<O, { mn }>,
    mn: i32,
    split: i32,
    O: Type<{ [f16, bf16, f32] }>,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let ok = offs < mn;
    let mut acc = zeros([BLOCK]);
    for s in 0..split {
        acc = acc + load(part + s * mn + offs, ok, 0.0);
    }
    store(c + offs, acc as O, ok);
}

/// Rows up to which [`matmul`] takes split-K (two 16-row mma tiles).
pub const SPLITK_MAX_ROWS: usize = 32;

/// Columns per split-K program ([`gemm_splitk`]'s `BN`) and its `k` step (`BK`).
const SPLITK_BN: usize = 64;
const SPLITK_BK: usize = 64;

/// Programs split-K aims for: two per SM of an H100 (132), so the panels of `B` stream from
/// every SM at once.
pub const SPLITK_PROGRAMS: usize = 264;

/// Column blocks of 64 from which few rows take [`gemm`]'s `128 × 64` tile instead of split-K:
/// half an H100's SMs. (Measured, 17 × 8192 × 1024, 128 blocks: the tile 0.0099 ms, split-K over
/// 3 slices 0.0127, its sum a second launch; 1 × 4096 × 4096, 64 blocks: the tile 0.0386, split-K
/// over 5 slices 0.0152.)
const SPLITK_MAX_COLUMN_BLOCKS: usize = 66;

/// Split-K's plan for `m × n × k`: `(bm, split, kslice)`, the slices of `k` as few as give about
/// [`SPLITK_PROGRAMS`] programs, each at least 256 long (a multiple of `BK`, so the slices start
/// where 16-byte copies can). `None` where [`matmul`] takes a tile instead: more than
/// [`SPLITK_MAX_ROWS`] rows, or enough columns to fill the GPU without splitting `k`.
#[allow(dead_code)]
pub fn splitk_plan(m: usize, n: usize, k: usize) -> Option<(i32, usize, usize)> {
    if m == 0 || m > SPLITK_MAX_ROWS || n.div_ceil(SPLITK_BN) >= SPLITK_MAX_COLUMN_BLOCKS {
        return None;
    }
    let bm = if m <= 16 { 16 } else { 32 };
    let columns = n.div_ceil(SPLITK_BN).max(1);
    let want = SPLITK_PROGRAMS.div_ceil(columns).max(1);
    let most = k.div_ceil(256).max(1);
    let kslice = (k.div_ceil(want.min(most)).div_ceil(SPLITK_BK) * SPLITK_BK).max(SPLITK_BK);
    Some((bm, k.div_ceil(kslice).max(1), kslice))
}

/// The f32 partial products [`matmul`] needs for `m × n × k` (0 where it does not split `k`).
#[allow(dead_code)]
pub fn splitk_workspace(m: usize, n: usize, k: usize) -> usize {
    splitk_plan(m, n, k).map_or(0, |(_, split, _)| split * m * n)
}

/// The kernel [`matmul`] runs for a shape.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatmulKernel {
    /// [`gemm_splitk`] on `bm`-row tiles over `split` slices of `k`, `kslice` long, then
    /// [`splitk_sum`] ([`splitk_plan`]'s plan).
    SplitK {
        /// Rows of the tile (16 or 32).
        bm: i32,
        /// Slices of `k`.
        split: usize,
        /// Length of each slice but the last.
        kslice: usize,
    },
    /// [`gemm`]'s `128 × 64` tile: few rows, but columns enough to fill the GPU.
    Narrow,
    /// [`gemm_wide`].
    Wide,
}

#[allow(dead_code)]
impl MatmulKernel {
    /// Split-K where [`splitk_plan`] has a plan; other shapes of at most [`SPLITK_MAX_ROWS`]
    /// rows on the `128 × 64` tile; the rest on [`gemm_wide`].
    pub fn for_shape(m: usize, n: usize, k: usize) -> MatmulKernel {
        match splitk_plan(m, n, k) {
            Some((bm, split, kslice)) => MatmulKernel::SplitK { bm, split, kslice },
            None if m <= SPLITK_MAX_ROWS => MatmulKernel::Narrow,
            None => MatmulKernel::Wide,
        }
    }
}

/// `c = a @ b` (`m × n × k`): split-K where [`splitk_plan`] has a plan (through `part`, at least
/// [`splitk_workspace`] long); else, for `c` in the input type, [`gemm_tuned`] (the tile timed
/// fastest for the shape: it matches or beats the tile rule of [`MatmulKernel::for_shape`] on
/// every shape measured, and loses to split-K by 2–4× on few rows, so that rule stays); for an
/// f32 `c`, the rule's kernel.
#[allow(dead_code, clippy::too_many_arguments)]
pub fn matmul<T: tile::Element, O: tile::Element>(
    dev: &Device,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    part: &mut Buffer<f32>,
    (m, n, k): (usize, usize, usize),
) -> Result<(), Error> {
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let kernel = MatmulKernel::for_shape(m, n, k);
    if !matches!(kernel, MatmulKernel::SplitK { .. }) {
        if let Some(c) = (c as &mut dyn std::any::Any).downcast_mut::<Buffer<T>>() {
            return matmul_tuned(dev, a, b, c, (m, n, k));
        }
    }
    match kernel {
        MatmulKernel::SplitK { bm, split, kslice } => {
            let g = Grid::xy(cdiv(n, SPLITK_BN as i32), split as u32);
            let (sp, ks) = (split as i32, kslice as i32);
            gemm_splitk::launch(dev, g, a, b, part, mi, ni, ki, sp, ks, bm)?;
            let mn = m * n;
            splitk_sum::launch(dev, Grid::x(cdiv(mn, 1024)), part, c, mn as i32, sp)
        }
        MatmulKernel::Narrow => gemm::launch(dev, grid(m, n, 64), a, b, c, mi, ni, ki, 64),
        MatmulKernel::Wide => gemm_wide::launch(dev, grid(m, n, 256), a, b, c, mi, ni, ki),
    }
}

#[tile_kernel(autotune(
    configs = [
        { BM = 128, BN = 256, BK = 64, num_warps = 8 },
        { BM = 128, BN = 128, BK = 64, num_warps = 8 },
        { BM = 128, BN = 128, BK = 64, num_warps = 4 },
    ],
    key = [m, n, k],
))]
/// `C = A[r0 .. r0 + m] · Bᵀ` (`A` `ta × k` and `B` `n × k`, both row-major: a linear layer's
/// `x · Wᵀ`, attention's `Q Kᵀ`; `C` `m × n` in the input type, f32 accumulation), one
/// `BM × BN` block per program in grouped order; both operands through tensor descriptors,
/// `B`'s block loaded `BN × BK` as it lies and read transposed by the tensor cores (`wgmma`
/// K-major, `ldmatrix` on sm_80), from the ring. The `linear_cross_entropy` example's logits and
/// the softmax-regression backward's `dx`.
#[allow(clippy::too_many_arguments)]
pub fn gemm_nt(
    a: Ptr<T, { ta * k }>,
    b: Ptr<T, { n * k }>,
    c: Ptr<T, { m * n }>,
    r0: i32,
    m: i32,
    ta: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const<8>,
) {
    let (pm, pn) = grouped_pid(program_id(0), m, n, BM, BN, GM);
    let a_desc = make_tensor_descriptor(a, [ta, k], [k, 1], [BM, BK]);
    let b_desc = make_tensor_descriptor(b, [n, k], [k, 1], [BN, BK]);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        acc = dot(
            a_desc.load([r0 + pm * BM, k0]),
            b_desc.load([pn * BN, k0]).trans(),
            acc,
        );
    }
    let rows = pm * BM + arange(0, BM);
    let cols = pn * BN + arange(0, BN);
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc as T,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

#[tile_kernel(autotune(
    configs = [
        { BM = 128, BN = 128, BK = 64, PRE = 0, num_warps = 8, num_stages = 2 },
        { BM = 128, BN = 128, BK = 64, PRE = 1, num_warps = 8, num_stages = 2 },
    ],
    key = [m, n, k],
))]
/// `C = Aᵀ · B[r0 .. r0 + k]`, plus `C`'s current value where `accumulate` is not 0 (`A` `k × m`
/// and `B` `tb × n`, both row-major: a product over the rows of both, as a weight gradient
/// `Gᵀ · x` is; `C` `m × n` in the input type, f32 accumulation), one `BM × BN` block per program
/// in grouped order: `A`'s `BK × BM` block is read transposed by the tensor cores (`wgmma`
/// M-major, `ldmatrix.trans` on sm_80) from the `cp.async` ring. `C`'s block is read before the
/// product where `PRE` is 1 (tuned). The `linear_cross_entropy` example's `dW` (accumulated over
/// chunks of tokens) and the softmax-regression backward's `dW`.
#[allow(clippy::too_many_arguments)]
pub fn gemm_tn(
    a: Ptr<T, { k * m }>,
    b: Ptr<T, { tb * n }>,
    c: Ptr<T, { m * n }>,
    r0: i32,
    m: i32,
    n: i32,
    k: i32,
    tb: i32,
    accumulate: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const,
    BN: Const,
    BK: Const,
    PRE: Const,
    GM: Const<8>,
) {
    let (pm, pn) = grouped_pid(program_id(0), m, n, BM, BN, GM);
    let rows = pm * BM + arange(0, BM);
    let cols = pn * BN + arange(0, BN);
    let ok = (rows < m).expand_dims(1) & (cols < n).expand_dims(0);
    let at = c + rows.expand_dims(1) * n + cols.expand_dims(0);
    // `dW`'s block read before the product where `PRE` is 1 (its latency hidden under it, at
    // the price of its registers through the loop), else after it.
    let mut old = zeros([BM, BN]) as T;
    if PRE == 1 {
        old = load(at, ok & (accumulate != 0), 0.0);
    }
    let a_desc = make_tensor_descriptor(a, [k, m], [m, 1], [BK, BM]);
    let b_desc = make_tensor_descriptor(b, [tb, n], [n, 1], [BK, BN]);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        acc = dot(
            a_desc.load([k0, pm * BM]).trans(),
            b_desc.load([r0 + k0, pn * BN]),
            acc,
        );
    }
    if PRE == 0 {
        old = load(at, ok & (accumulate != 0), 0.0);
    }
    store(at, (acc + old as f32) as T, ok);
}

/// Every kernel of this example, each instance (tests assemble them all; the example itself does
/// not need the list).
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = gemm::KERNELS.to_vec();
    v.extend(gemm_wide::KERNELS);
    v.extend(gemm_tma::KERNELS);
    v.extend(gemm_tuned::KERNELS);
    v.push(&gemm_tf32::KERNEL);
    v.extend(gemm_splitk::KERNELS);
    v.extend(splitk_sum::KERNELS);
    v.extend(gemm_nt::KERNELS);
    v.extend(gemm_tn::KERNELS);
    v
}
