//! Softmax regression on tensor cores, `probs = softmax(x @ w)` over the classes (`x`: `batch ×
//! dim`, `w`: `dim × classes`, f16 or bf16; logits accumulated in f32, softmax in f32, `probs`
//! f32), as the document's tiled kernel: the logits of a `BM × 128` block come from `dot` over
//! `dim` in 32-wide slices (`mma.sync` fed by a `cp.async` ring, as the `gemm` example), and the
//! softmax runs on them while they are still in registers.
//!
//! - Up to 128 classes (`SPLIT = 0`, the document's sizes): one program per `BM` rows holds every
//!   class; it writes the probabilities and nothing else.
//! - More classes (`SPLIT = 1`): the class tiles of a row block run in parallel, one program each.
//!   A program writes `exp(z − m_t)` for its tile and the tile's row maximum `m_t` and row sum
//!   `s_t = Σ exp(z − m_t)` (two f32 per row and tile); `rescale` then combines the tiles of each
//!   row as an online softmax does, `M = max_t m_t`, `S = Σ_t s_t·exp(m_t − M)`, and multiplies
//!   each element in place by `exp(m_t − M) / S`. The logits never reach memory; the price is
//!   one read and one write of `probs` (8 bytes per element) against the unfused form's f32 logits
//!   (4 bytes written, 4 read) plus its extra pass. The tiles are independent, so even 1000 classes
//!   give 8 programs per row block: a one-program-per-row-block online softmax would leave most
//!   SMs idle at these batch sizes.
//!
//! `BM` is 16 or 128, chosen at launch: 16 when 128-row blocks would give fewer programs than an
//! H100 has SMs (the document's sizes), 128 otherwise.
//!
//! Unfused form (in main.rs): the `gemm` example's kernel writing f32 logits, then the
//! `fused_softmax` example's row softmax (the same arithmetic, so the same tolerance).

use tile::prelude::*;

#[tile_kernel(num_warps = 4)]
/// The logits of one `BM × BN` block of `x @ w` and their softmax: complete (`SPLIT = 0`, the
/// grid has one class tile) or per tile with its statistics (`SPLIT = 1`, finished by
/// [`rescale`]). `tile_max` and `tile_sum` hold `tiles` values per row (`SPLIT = 1` only).
#[allow(clippy::too_many_arguments)]
pub fn softmax_regression(
    x: Ptr<T, { batch * dim }>,
    w: Ptr<T, { dim * classes }>,
    probs: Ptr<f32, { batch * classes }>,
    tile_max: Ptr<f32, { batch * tiles }>,
    tile_sum: Ptr<f32, { batch * tiles }>,
    batch: i32,
    dim: i32,
    classes: i32,
    tiles: i32,
    T: Type<{ [f16, bf16] }>,
    SPLIT: Const<{ [0, 1] }>,
    BM: Const<{ [16, 128] }>,
    BN: Const<128>,
    BK: Const<32>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let row_ok = (rows < batch).expand_dims(1);
    let col_ok = (cols < classes).expand_dims(0);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..dim).step_by(BK) {
        let kk = k0 + ks;
        let xt = load(
            x + rows.expand_dims(1) * dim + kk.expand_dims(0),
            row_ok & (kk < dim).expand_dims(0),
        );
        let wt = load(
            w + kk.expand_dims(1) * classes + cols.expand_dims(0),
            (kk < dim).expand_dims(1) & col_ok,
        );
        acc = dot(xt, wt, acc);
    }
    let z = select(col_ok, acc, f32::NEG_INFINITY);
    let m = z.max(1);
    // exp(z − m) as 2^((z − m)·log2 e), one `ex2.approx` each; the arguments are ≤ 0.
    let e = ((z - m.expand_dims(1)) * 1.4426950408889634).exp2();
    let s = e.sum(1);
    let out = probs + rows.expand_dims(1) * classes + cols.expand_dims(0);
    if SPLIT == 0 {
        // One reciprocal per row, not a division per element.
        store(out, e * (1.0 / s).expand_dims(1), row_ok & col_ok);
    } else {
        store(out, e, row_ok & col_ok);
        let stat = rows * tiles + program_id(1);
        store(tile_max + stat, m, rows < batch);
        store(tile_sum + stat, s, rows < batch);
    }
}

#[tile_kernel(num_warps = 8)]
/// The split form's second step: program `(row, j)` combines the row's tile statistics into its
/// maximum `M` and sum `S`, then scales columns `j·BC … j·BC + BC` of the row in place by
/// `exp(m_t − M) / S`, `t` being each column's class tile (`TN` wide). At most `BT` tiles.
#[allow(clippy::too_many_arguments)]
pub fn rescale(
    probs: Ptr<f32, { batch * classes }>,
    tile_max: Ptr<f32, { batch * tiles }>,
    tile_sum: Ptr<f32, { batch * tiles }>,
    batch: i32,
    classes: i32,
    tiles: i32,
    BT: Const<256>,
    BC: Const<4096>,
    TN: Const<128>,
) {
    let row = program_id(0);
    let t = arange(0, BT);
    let stats = row * tiles + t;
    let mt = load(tile_max + stats, t < tiles, f32::NEG_INFINITY);
    let st = load(tile_sum + stats, t < tiles, 0.0);
    let big = mt.max();
    let total = (st * ((mt - big) * 1.4426950408889634).exp2()).sum();
    let cols = program_id(1) * BC + arange(0, BC);
    let ok = cols < classes;
    let m_col = load(tile_max + row * tiles + cols / TN, ok, 0.0);
    let scale = ((m_col - big) * 1.4426950408889634).exp2() / total;
    let p = probs + row * classes + cols;
    store(p, load(p, ok) * scale, ok);
}

/// Every kernel of this example, each instance.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = softmax_regression::KERNELS.to_vec();
    v.extend(rescale::KERNELS);
    v
}

/// Classes per tile (`BN`).
pub const CLASS_TILE: usize = 128;

/// The most classes the split form handles: `BT` tiles of `CLASS_TILE`.
pub const MAX_CLASSES: usize = 256 * CLASS_TILE;

/// Columns per `rescale` program (`BC`).
const RESCALE_COLS: usize = 4096;

/// SMs of the largest GPU this is tuned for (H100 SXM: 132); below this many 128-row programs the
/// launcher takes 16-row blocks.
const SMS: usize = 132;

/// Per-tile statistics of the split form: `tiles` f32 per row for the maximum and the sum.
pub struct Stats {
    /// `m_t` per row and class tile.
    pub max: Buffer<f32>,
    /// `s_t` per row and class tile.
    pub sum: Buffer<f32>,
}

impl Stats {
    /// Buffers for `batch` rows of `classes` classes (at least one element each, so that the
    /// one-tile form has something to pass).
    pub fn new(dev: &Device, batch: usize, classes: usize) -> Result<Stats, Error> {
        let n = (batch * classes.div_ceil(CLASS_TILE)).max(1);
        Ok(Stats {
            max: dev.upload(&vec![f32::NAN; n])?,
            sum: dev.upload(&vec![f32::NAN; n])?,
        })
    }
}

/// Rows per program for `batch × classes`: 128 unless that leaves SMs idle.
pub fn row_block(batch: usize, classes: usize) -> i32 {
    if batch.div_ceil(128) * classes.div_ceil(CLASS_TILE) < SMS {
        16
    } else {
        128
    }
}

/// `probs = softmax(x @ w)`: one launch for up to 128 classes, else two (tiles, then `rescale`).
pub fn fused<T: tile::Element>(
    dev: &Device,
    x: &Buffer<T>,
    w: &Buffer<T>,
    probs: &mut Buffer<f32>,
    stats: &mut Stats,
    s: (usize, usize, usize),
) -> Result<(), Error> {
    fused_rows(dev, x, w, probs, stats, s, row_block(s.0, s.2))
}

/// [`fused`] with `bm` rows per program (16 or 128).
pub fn fused_rows<T: tile::Element>(
    dev: &Device,
    x: &Buffer<T>,
    w: &Buffer<T>,
    probs: &mut Buffer<f32>,
    stats: &mut Stats,
    (batch, dim, classes): (usize, usize, usize),
    bm: i32,
) -> Result<(), Error> {
    if classes > MAX_CLASSES {
        return Err(Error::Args(format!(
            "{classes} classes; the split softmax handles at most {MAX_CLASSES}"
        )));
    }
    let tiles = classes.div_ceil(CLASS_TILE);
    let grid = Grid::xy(cdiv(batch, bm.max(1) as usize), tiles as u32);
    let split = i32::from(tiles > 1);
    let (b, d, c, t) = (batch as i32, dim as i32, classes as i32, tiles as i32);
    softmax_regression::launch(
        dev,
        grid,
        x,
        w,
        probs,
        &mut stats.max,
        &mut stats.sum,
        b,
        d,
        c,
        t,
        split,
        bm,
    )?;
    if tiles > 1 {
        let g = Grid::xy(batch as u32, cdiv(classes, RESCALE_COLS));
        rescale::launch(dev, g, probs, &stats.max, &stats.sum, b, c, t)?;
    }
    Ok(())
}
