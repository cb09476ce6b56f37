//! Softmax regression on tensor cores, `probs = softmax(x @ w)` over the classes (`x`: `batch ×
//! dim`, `w`: `dim × classes`, f16 or bf16; logits accumulated in f32, softmax in f32, `probs`
//! f32), as the document's tiled kernel: the logits of a `BM × BN` block come from `dot` over
//! `dim` (tensor cores fed by a `cp.async` ring, as the `gemm` example: `mma.sync`, or `wgmma` on
//! sm_90a), and the softmax runs on them while they are still in registers.
//!
//! - Up to `BN` classes (`SPLIT = 0`, the document's sizes): one program per `BM` rows holds
//!   every class; it writes the probabilities and nothing else.
//! - More classes (`SPLIT = 1`): the class tiles of a row block run in parallel, one program each.
//!   A program writes `exp(z − m_t)` for its tile and the tile's row maximum `m_t` and row sum
//!   `s_t = Σ exp(z − m_t)` (two f32 per row and tile); `rescale` then combines the tiles of each
//!   row as an online softmax does, `M = max_t m_t`, `S = Σ_t s_t·exp(m_t − M)`, and multiplies
//!   each element in place by `exp(m_t − M) / S`. The logits never reach memory; the price is
//!   one read and one write of `probs` (8 bytes per element) against the unfused form's f32 logits
//!   (4 bytes written, 4 read) plus its extra pass. The tiles are independent, so even 1000 classes
//!   give 4–8 programs per row block: a one-program-per-row-block online softmax would leave most
//!   SMs idle at these batch sizes.
//!
//! The block ([`Tile`]) is autotuned per shape ([`fused`]) among seven: `128 × 256` on 8 warps
//! (`softmax_regression_wide`, the `gemm_wide` shape), `128 × 128` or `16 × 128` on 4 warps
//! (the document's sizes), and `16 × 16`, `16 × 64`, `64 × 16`, `64 × 64` for few classes
//! (`softmax_regression_narrow`). [`Tile::for_shape`] is the rule it replaced (the largest tile
//! that still gives every SM of an H100 a program). Programs run in grouped order, as the `gemm`
//! example's.
//!
//! Row `k` of `w` starts `ldw` elements after row `k − 1` (`ldw ≥ classes`). Where `classes`
//! puts the rows 16 bytes into a 32-byte sector (1000 f16 classes: 2000-byte rows) and `w` is read
//! by many row blocks, [`fused`] first copies `w` into rows padded to whole sectors ([`pad_rows`],
//! into the [`Workspace`]): `cp.async` fetches such rows at about 60% of the rate of aligned ones,
//! even with the lanes' chunks rotated so that lane pairs share sectors (the destination must
//! follow the chunk, and the rate needs both sides paired; docs/DECISIONS.md,
//! "Matrix products"). The copy is one pass over `w`, and is part of every timed call.
//!
//! Unfused form (in main.rs): the `gemm` example's kernels writing f32 logits, then the
//! `fused_softmax` example's row softmax (the same arithmetic, so the same tolerance).

use tile::prelude::*;
use tile::stdlib::{grouped_order, matmul_acc};

use crate::fused_softmax::kernels as softmax_kernels;
use crate::gemm::kernels::{gemm, gemm_wide, grid};

/// The body of the fused kernels: the logits of the `BM × BN` block that program
/// `program_id(0)` computes and their softmax (see [`softmax_regression`]).
#[tile_fn]
fn softmax_regression_block(
    x: Tile,
    w: Tile,
    probs: Tile,
    tile_max: Tile,
    tile_sum: Tile,
    batch: i32,
    dim: i32,
    classes: i32,
    ldw: i32,
    tiles: i32,
    SPLIT: Const,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const,
) {
    // Program `pid` in grouped order (as the `gemm` example): `GM` row blocks class tile by
    // class tile, then the next `GM`, so the programs resident at once share rows of `x` and
    // columns of `w` in L2.
    let (pm, pn) = grouped_order(program_id(0), cdiv(batch, BM), tiles, GM);
    let rows = pm * BM + arange(0, BM);
    let cols = pn * BN + arange(0, BN);
    let row_ok = (rows < batch).expand_dims(1);
    let col_ok = (cols < classes).expand_dims(0);
    let zero = zeros([BM, BN]);
    let acc = matmul_acc(
        zero, x, dim, w, ldw, rows, cols, row_ok, col_ok, 0, dim, BK, 0,
    );
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
        let stat = rows * tiles + pn;
        store(tile_max + stat, m, rows < batch);
        store(tile_sum + stat, s, rows < batch);
    }
}

#[tile_kernel(num_warps = 4)]
/// The logits of one `BM × 128` block of `x @ w` and their softmax: complete (`SPLIT = 0`,
/// one class tile) or per tile with its statistics (`SPLIT = 1`, finished by [`rescale`]).
/// `tiles` class tiles; `tile_max` and `tile_sum` hold `tiles` values per row (`SPLIT = 1`
/// only). 4 warps, `k` in 32-wide slices; a 1-D grid of `cdiv(batch, BM) · tiles` programs.
#[allow(clippy::too_many_arguments)]
pub fn softmax_regression(
    x: Ptr<T, { batch * dim }>,
    w: Ptr<T, { dim * ldw }>,
    probs: Ptr<f32, { batch * classes }>,
    tile_max: Ptr<f32, { batch * tiles }>,
    tile_sum: Ptr<f32, { batch * tiles }>,
    batch: i32,
    dim: i32,
    classes: i32,
    ldw: i32,
    tiles: i32,
    T: Type<{ [f16, bf16] }>,
    SPLIT: Const<{ [0, 1] }>,
    BM: Const<{ [16, 128] }>,
    BN: Const<128>,
    BK: Const<32>,
    GM: Const<8>,
) {
    softmax_regression_block(
        x, w, probs, tile_max, tile_sum, batch, dim, classes, ldw, tiles, SPLIT, BM, BN, BK, GM,
    );
}

#[tile_kernel(num_warps = 4)]
/// [`softmax_regression`] on `BM × BN` blocks, `BM` = 16 or 64 rows, `BN` = 16 or 64 classes,
/// `k` in 64-wide slices, 4 warps: for few classes (the document's 10 and 50), where a
/// 128-class tile would multiply and fetch up to 8 times the columns there are (Triton's
/// autotuned fused kernel picks `16 × 16` at 64 × 128 × 10). With 64 rows each `k` step copies
/// four times the bytes of `x` per program (and on sm_90a the product is one warpgroup's
/// `wgmma`).
#[allow(clippy::too_many_arguments)]
pub fn softmax_regression_narrow(
    x: Ptr<T, { batch * dim }>,
    w: Ptr<T, { dim * ldw }>,
    probs: Ptr<f32, { batch * classes }>,
    tile_max: Ptr<f32, { batch * tiles }>,
    tile_sum: Ptr<f32, { batch * tiles }>,
    batch: i32,
    dim: i32,
    classes: i32,
    ldw: i32,
    tiles: i32,
    T: Type<{ [f16, bf16] }>,
    SPLIT: Const<{ [0, 1] }>,
    BM: Const<{ [16, 64] }>,
    BN: Const<{ [16, 64] }>,
    BK: Const<64>,
    GM: Const<8>,
) {
    softmax_regression_block(
        x, w, probs, tile_max, tile_sum, batch, dim, classes, ldw, tiles, SPLIT, BM, BN, BK, GM,
    );
}

#[tile_kernel(num_warps = 8)]
/// [`softmax_regression`] on the `gemm_wide` example kernel's tile: `128 × 256` blocks,
/// `k` in 64-wide slices, 8 warps (on sm_90a one `wgmma.m64n256k16` per warpgroup and
/// 16-wide step of `k`).
#[allow(clippy::too_many_arguments)]
pub fn softmax_regression_wide(
    x: Ptr<T, { batch * dim }>,
    w: Ptr<T, { dim * ldw }>,
    probs: Ptr<f32, { batch * classes }>,
    tile_max: Ptr<f32, { batch * tiles }>,
    tile_sum: Ptr<f32, { batch * tiles }>,
    batch: i32,
    dim: i32,
    classes: i32,
    ldw: i32,
    tiles: i32,
    T: Type<{ [f16, bf16] }>,
    SPLIT: Const<{ [0, 1] }>,
    BM: Const<128>,
    BN: Const<256>,
    BK: Const<64>,
    GM: Const<8>,
) {
    softmax_regression_block(
        x, w, probs, tile_max, tile_sum, batch, dim, classes, ldw, tiles, SPLIT, BM, BN, BK, GM,
    );
}

#[tile_kernel(num_warps = 8)]
/// The split form's second step: program `(row, j)` combines the row's tile statistics into its
/// maximum `M` and sum `S`, then scales columns `j·BC … j·BC + BC` of the row in place by
/// `exp(m_t − M) / S`, `t` being each column's class tile (`TN` wide: 16 or 64 after
/// [`softmax_regression_narrow`], 128 after [`softmax_regression`], 256 after
/// [`softmax_regression_wide`]). At most `BT` tiles.
#[allow(clippy::too_many_arguments)]
pub fn rescale(
    probs: Ptr<f32, { batch * classes }>,
    tile_max: Ptr<f32, { batch * tiles }>,
    tile_sum: Ptr<f32, { batch * tiles }>,
    batch: i32,
    classes: i32,
    tiles: i32,
    BT: Const<256>,
    BC: Const<{ [1024, 4096] }>,
    TN: Const<{ [16, 64, 128, 256] }>,
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
    let scale = ((m_col - big) * 1.4426950408889634).exp2() * (1.0 / total);
    let p = probs + row * classes + cols;
    store(p, load(p, ok) * scale, ok);
}

#[tile_kernel(num_warps = 4)]
/// Copies the `rows × cols` matrix `src` into `dst`, whose rows are `ld ≥ cols` elements apart
/// (the columns past `cols` are left as they are): program `(r, j)` copies columns `j·BLOCK …
/// j·BLOCK + BLOCK` of row `r`.
pub fn pad_rows(
    src: Ptr<T, { rows * cols }>,
    dst: Ptr<T, { rows * ld }>,
    rows: i32,
    cols: i32,
    ld: i32,
    T: Type<{ [f16, bf16] }>,
    BLOCK: Const<1024>,
) {
    let r = program_id(0);
    let c = program_id(1) * BLOCK + arange(0, BLOCK);
    let ok = c < cols;
    store(dst + r * ld + c, load(src + r * cols + c, ok), ok);
}

/// Every kernel of this example, each instance.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = softmax_regression::KERNELS.to_vec();
    v.extend(softmax_regression_narrow::KERNELS);
    v.extend(softmax_regression_wide::KERNELS);
    v.extend(rescale::KERNELS);
    v.extend(pad_rows::KERNELS);
    v
}

/// Classes per tile of [`softmax_regression`] (`BN`); [`softmax_regression_wide`] takes twice as
/// many.
pub const CLASS_TILE: usize = 128;

/// The narrowest class tile ([`softmax_regression_narrow`] with `BN = 16`).
pub const NARROW_TILE: usize = 16;

/// The most class tiles [`rescale`] combines per row (its `BT`, which must stay equal): the split
/// form handles up to this many tiles of its tile's width (4096 classes with 16-class tiles,
/// 32768 with 128).
const RESCALE_TILES: usize = 256;

/// Columns per `rescale` program (`BC`) for `classes`: 1024 up to 1024 classes (a 4096-wide
/// program would leave most of its threads masked off), else 4096.
fn rescale_cols(classes: usize) -> usize {
    if classes <= 1024 {
        1024
    } else {
        4096
    }
}

/// SMs of the largest GPU this is tuned for (H100 SXM: 132): below this many programs a tile
/// leaves SMs idle, and the launcher takes a smaller one.
const SMS: usize = 132;

/// The block each program of the fused kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tile {
    /// [`softmax_regression_narrow`] with `BN = 16`: `16 × 16`.
    Narrow,
    /// [`softmax_regression_narrow`] with `BN = 64`: `16 × 64`.
    Narrow64,
    /// [`softmax_regression_narrow`] with `BM = 64`, `BN = 16`: `64 × 16`.
    Tall,
    /// [`softmax_regression_narrow`] with `BM = 64`, `BN = 64`: `64 × 64`.
    Tall64,
    /// [`softmax_regression`] with `BM = 16`: `16 × 128`.
    Rows16,
    /// [`softmax_regression`] with `BM = 128`: `128 × 128`.
    Rows128,
    /// [`softmax_regression_wide`]: `128 × 256` on 8 warps.
    Wide,
}

impl Tile {
    /// Every tile (the tests run each).
    #[allow(dead_code)]
    pub const ALL: [Tile; 7] = [
        Tile::Narrow,
        Tile::Narrow64,
        Tile::Rows16,
        Tile::Rows128,
        Tile::Wide,
        Tile::Tall,
        Tile::Tall64,
    ];

    /// `(rows, classes)` of the block.
    pub fn block(self) -> (usize, usize) {
        match self {
            Tile::Narrow => (16, NARROW_TILE),
            Tile::Narrow64 => (16, 64),
            Tile::Tall => (64, NARROW_TILE),
            Tile::Tall64 => (64, 64),
            Tile::Rows16 => (16, CLASS_TILE),
            Tile::Rows128 => (128, CLASS_TILE),
            Tile::Wide => (128, 2 * CLASS_TILE),
        }
    }

    /// Whether [`fused_with`] takes this tile for `classes`: at most `RESCALE_TILES` (256) class
    /// tiles per row.
    pub fn runs(self, classes: usize) -> bool {
        classes.div_ceil(self.block().1) <= RESCALE_TILES
    }

    /// `16 × 16` for at most 16 classes, `16 × 64` for at most 64; else the largest tile that
    /// still gives every SM a program for `batch × classes`. (Measured on the H100, the narrow
    /// tiles against `16 × 128`: 0.0032 against 0.0044 ms at 64 × 128 × 10, 0.0062 against
    /// 0.0086 at 256 × 512 × 50, 0.0061 against 0.0156 at 4096 × 1024 × 16.)
    pub fn for_shape(batch: usize, classes: usize) -> Tile {
        if classes <= NARROW_TILE {
            return Tile::Narrow;
        }
        if classes <= 64 {
            return Tile::Narrow64;
        }
        let programs = |t: Tile| {
            let (bm, bn) = t.block();
            batch.div_ceil(bm) * classes.div_ceil(bn)
        };
        if programs(Tile::Wide) >= SMS {
            Tile::Wide
        } else if programs(Tile::Rows128) >= SMS {
            Tile::Rows128
        } else {
            Tile::Rows16
        }
    }
}

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
        // The most tiles per row of any tile that can run `classes` ([`Tile::runs`]).
        let tiles = Tile::ALL
            .iter()
            .filter(|t| t.runs(classes))
            .map(|t| classes.div_ceil(t.block().1))
            .max()
            .unwrap_or(1);
        let n = (batch * tiles).max(1);
        Ok(Stats {
            max: dev.upload(&vec![f32::NAN; n])?,
            sum: dev.upload(&vec![f32::NAN; n])?,
        })
    }
}

/// What the fused kernels need besides their operands: the split form's [`Stats`] and, where
/// `w`'s rows are padded, the padded copy.
pub struct Workspace<T> {
    /// The per-tile statistics.
    pub stats: Stats,
    /// `w` with rows `ldw` elements apart, where [`Workspace::new`] pads.
    rows: Option<(Buffer<T>, usize)>,
}

/// The bytes of an L2 sector.
const SECTOR: usize = 32;

/// Row blocks of 128 that must read `w` before padding it pays (it costs one read and one write
/// of `w`; each row block reads it once, misaligned rows at about 60% of the aligned rate).
pub const PAD_MIN_READS: usize = 8;

impl<T: tile::Element> Workspace<T> {
    /// The workspace of shape `(batch, dim, classes)`: `w` is padded when its rows start 16 bytes
    /// into a sector (`classes · size(T) ≡ 16 mod 32`) and at least [`PAD_MIN_READS`] row
    /// blocks of 128 read it.
    pub fn new(dev: &Device, s: (usize, usize, usize)) -> Result<Workspace<T>, Error> {
        let row = s.2 * std::mem::size_of::<T>();
        let pad = row % SECTOR == SECTOR / 2 && s.0.div_ceil(128) >= PAD_MIN_READS;
        Self::with_padding(dev, s, pad)
    }

    /// [`Workspace::new`] padding `w`'s rows to whole sectors if `pad` says so.
    pub fn with_padding(
        dev: &Device,
        (batch, dim, classes): (usize, usize, usize),
        pad: bool,
    ) -> Result<Workspace<T>, Error> {
        let per_sector = SECTOR / std::mem::size_of::<T>();
        let rows = if pad {
            let ld = classes.next_multiple_of(per_sector);
            let zeros = vec![T::default(); (dim * ld).max(1)];
            Some((dev.upload(&zeros)?, ld))
        } else {
            None
        };
        Ok(Workspace {
            stats: Stats::new(dev, batch, classes)?,
            rows,
        })
    }

    /// The elements between rows of `w` as the fused kernel reads it.
    pub fn ldw(&self, classes: usize) -> usize {
        self.rows.as_ref().map_or(classes, |r| r.1)
    }
}

/// [`fused`] on [`Tile::for_shape`]'s tile: the hand-written rule the tuner replaced, kept for
/// the benchmark's comparison (docs/perf/RESULTS.md, "Autotuning against the examples' shape
/// rules").
pub fn fused_rule<T: tile::Element>(
    dev: &Device,
    x: &Buffer<T>,
    w: &Buffer<T>,
    probs: &mut Buffer<f32>,
    ws: &mut Workspace<T>,
    s: (usize, usize, usize),
) -> Result<(), Error> {
    fused_with(dev, x, w, probs, ws, s, Tile::for_shape(s.0, s.2))
}

/// The tiles [`fused`] times, in [`Tile::ALL`]'s order.
static TILE_CONFIGS: [tile::autotune::ConfigDesc; 7] = [
    tile::autotune::ConfigDesc::new("16 x 16"),
    tile::autotune::ConfigDesc::new("16 x 64"),
    tile::autotune::ConfigDesc::new("16 x 128"),
    tile::autotune::ConfigDesc::new("128 x 128"),
    tile::autotune::ConfigDesc::new("128 x 256, 8 warps"),
    tile::autotune::ConfigDesc::new("64 x 16"),
    tile::autotune::ConfigDesc::new("64 x 64"),
];

/// The tiles that take `classes` (key `[batch, dim, classes, dtype]`).
fn tiles_that_run(key: &[i64]) -> Vec<usize> {
    let classes = key.get(2).copied().unwrap_or(0).max(0) as usize;
    (0..Tile::ALL.len())
        .filter(|&i| Tile::ALL[i].runs(classes))
        .collect()
}

/// [`TUNER`]'s key: `[batch, dim, classes, dtype]`.
fn tune_key<T: tile::Element>((b, d, c): (usize, usize, usize)) -> [i64; 4] {
    [b as i64, d as i64, c as i64, T::DTYPE as i64]
}

/// [`fused`]'s tuner: one decision per shape, element type and device.
pub static TUNER: tile::autotune::Autotuner = tile::autotune::Autotuner::new(
    "softmax_regression",
    tile::autotune::source_hash(include_str!("kernels.rs")),
    &TILE_CONFIGS,
)
.with_prune(tiles_that_run);

/// `probs = softmax(x @ w)`: one launch when one class tile holds every class, else two (tiles,
/// then `rescale`), after [`pad_rows`] where the workspace pads `w`, on the tile timed fastest
/// for this shape on this device (at the first call with the shape; later calls, and later
/// processes through the disk cache, reuse the choice; the interpreter takes the first tile that
/// runs the shape). It matches or beats [`Tile::for_shape`]'s rule ([`fused_rule`]) at every
/// shape measured. `probs` and the workspace are written by every timed run and by the last
/// one, so no copy is needed.
pub fn fused<T: tile::Element>(
    dev: &Device,
    x: &Buffer<T>,
    w: &Buffer<T>,
    probs: &mut Buffer<f32>,
    ws: &mut Workspace<T>,
    s: (usize, usize, usize),
) -> Result<(), Error> {
    let i = TUNER.choose(dev, &tune_key::<T>(s), |i| {
        tile::autotune::time_ms(dev, || fused_with(dev, x, w, probs, ws, s, Tile::ALL[i]))
    })?;
    fused_with(dev, x, w, probs, ws, s, Tile::ALL[i])
}

/// The tile [`fused`] chose for a shape in this process, if it has met the shape.
pub fn tuned_tile<T: tile::Element>(s: (usize, usize, usize)) -> Option<Tile> {
    let key = tune_key::<T>(s);
    TUNER
        .decisions()
        .into_iter()
        .find(|d| d.key == key)
        .map(|d| Tile::ALL[d.config])
}

/// [`fused`] on the given tile.
pub fn fused_with<T: tile::Element>(
    dev: &Device,
    x: &Buffer<T>,
    w: &Buffer<T>,
    probs: &mut Buffer<f32>,
    ws: &mut Workspace<T>,
    (batch, dim, classes): (usize, usize, usize),
    tile: Tile,
) -> Result<(), Error> {
    let (bm, bn) = tile.block();
    let tiles = classes.div_ceil(bn);
    if !tile.runs(classes) {
        return Err(Error::Args(format!(
            "{classes} classes; the split softmax handles at most {} with {bn}-class tiles",
            RESCALE_TILES * bn
        )));
    }
    let ld = ws.ldw(classes);
    if ld < classes {
        return Err(Error::Args(format!(
            "the workspace pads rows of {ld} classes, not {classes}: make it for this shape"
        )));
    }
    let (b, d, c, t) = (batch as i32, dim as i32, classes as i32, tiles as i32);
    let w = match &mut ws.rows {
        Some((padded, _)) => {
            let g = Grid::xy(dim as u32, cdiv(classes, 1024));
            pad_rows::launch(dev, g, w, padded, d, c, ld as i32)?;
            &*padded
        }
        None => w,
    };
    let grid = Grid::x(cdiv(batch, bm).saturating_mul(tiles as u32));
    let split = i32::from(tiles > 1);
    let ld = ld as i32;
    let (max, sum) = (&mut ws.stats.max, &mut ws.stats.sum);
    if tile == Tile::Wide {
        softmax_regression_wide::launch(dev, grid, x, w, probs, max, sum, b, d, c, ld, t, split)?;
    } else if matches!(
        tile,
        Tile::Narrow | Tile::Narrow64 | Tile::Tall | Tile::Tall64
    ) {
        let (bm, bn) = (bm as i32, bn as i32);
        softmax_regression_narrow::launch(
            dev, grid, x, w, probs, max, sum, b, d, c, ld, t, split, bm, bn,
        )?;
    } else {
        let bm = bm as i32;
        softmax_regression::launch(dev, grid, x, w, probs, max, sum, b, d, c, ld, t, split, bm)?;
    }
    rescale_with(
        dev,
        probs,
        &ws.stats,
        (batch, classes),
        tile,
        rescale_cols(classes),
    )
}

/// The second launch of [`fused_with`] for `tile` (none when one class tile holds every class):
/// [`rescale`] over the statistics the first left in `stats`, `bc` columns per program (1024 or
/// 4096; [`fused_with`] takes `rescale_cols`', the example's `--tiles` times both).
pub fn rescale_with(
    dev: &Device,
    probs: &mut Buffer<f32>,
    stats: &Stats,
    (batch, classes): (usize, usize),
    tile: Tile,
    bc: usize,
) -> Result<(), Error> {
    let bn = tile.block().1;
    let tiles = classes.div_ceil(bn);
    if tiles > 1 {
        let (b, c, t) = (batch as i32, classes as i32, tiles as i32);
        let g = Grid::xy(batch as u32, cdiv(classes, bc));
        rescale::launch(
            dev, g, probs, &stats.max, &stats.sum, b, c, t, bc as i32, bn as i32,
        )?;
    }
    Ok(())
}

/// The unfused form's product: `x @ w` as f32 `logits` on the `gemm` example's kernels, on the
/// fused kernel's tile where the `gemm` example has it (`gemm_wide` where [`Tile::for_shape`]
/// takes `128 × 256`), else on 64-class tiles where the rule takes 16-row blocks (128-class ones
/// would leave SMs idle) and 128-class ones otherwise.
pub fn logits_gemm<T: tile::Element>(
    dev: &Device,
    x: &Buffer<T>,
    w: &Buffer<T>,
    logits: &mut Buffer<f32>,
    (batch, dim, classes): (usize, usize, usize),
) -> Result<(), Error> {
    let (b, d, c) = (batch as i32, dim as i32, classes as i32);
    match Tile::for_shape(batch, classes) {
        Tile::Wide => gemm_wide::launch(dev, grid(batch, classes, 256), x, w, logits, b, c, d),
        tile => {
            let bn = if matches!(tile, Tile::Narrow | Tile::Narrow64 | Tile::Rows16) {
                64
            } else {
                128
            };
            gemm::launch(dev, grid(batch, classes, bn), x, w, logits, b, c, d, bn)
        }
    }
}

/// The unfused form: [`logits_gemm`], then the `fused_softmax` example's row softmax of the f32
/// logits into `probs`.
pub fn unfused<T: tile::Element>(
    dev: &Device,
    x: &Buffer<T>,
    w: &Buffer<T>,
    logits: &mut Buffer<f32>,
    probs: &mut Buffer<f32>,
    s: (usize, usize, usize),
) -> Result<(), Error> {
    logits_gemm(dev, x, w, logits, s)?;
    let (b, c) = (s.0 as i32, s.2 as i32);
    let width = softmax_kernels::width_for(c);
    softmax_kernels::softmax::launch(dev, Grid::x(s.0 as u32), logits, probs, b, c, width)
}
