//! Decoding attention: one query token per sequence against a paged key/value cache, as vLLM's
//! flash-attention backend lays it out. `K` and `V` are pools of pages `[n_pages, PAGE, hkv, d]`
//! (`PAGE = 16` tokens); sequence `b` owns the pages `block_table[b, 0..]` in order, and its
//! token `t` lives in page `block_table[b, t / PAGE]`, slot `t % PAGE`. Every sequence has its own
//! length (`seq_lens[b]`, at least 1).
//!
//! Split-KV (FlashDecoding): one query token leaves too few rows to fill the GPU, so each
//! sequence's keys are cut into splits of `split_len` tokens and [`attn_decode_split`] runs one
//! program per (split, sequence, key/value head): the query heads that share that key/value head
//! (`hq / hkv` of them, padded to the 16 rows of a tensor-core product) against the split's keys,
//! an online softmax over blocks of 32 tokens, each block's keys gathered page by page through
//! the block table. Each program writes its rows' normalized partial output and log-sum-exp;
//! [`attn_decode_combine`] then merges the splits of each (sequence, query head) by their
//! log-sum-exps. The key/value bytes are read once, whatever the number of query heads sharing
//! them.

use crate::common::{Half, Rng};
use tile::prelude::*;

use super::attn::{attend_row, check_groups, check_head_dim};

/// Tokens per page of the cache.
pub const PAGE: usize = 16;
/// Query rows of one split program (the query heads of one key/value head, padded).
const ROWS: usize = 16;
/// Keys per block of the split loop (a multiple of it is a split's length).
const BLOCK_N: usize = 32;
/// The most splits one sequence is cut into ([`attn_decode_combine`]'s tile).
pub const MAX_SPLITS: usize = 64;
/// Programs the split kernel aims at (several per SM, so that loads of some overlap the
/// products of others).
const TARGET_PROGRAMS: usize = 2048;
/// Fewest tokens a split holds (below this the combine's reads weigh more than the split saves).
const MIN_SPLIT: usize = 256;

// The keys' addresses come from the block table loaded in the same iteration: with a ring
// (`num_stages` 2 or 3) each copy ahead loads its page numbers first; with none (1), three
// programs per SM overlap instead (blocks of 32 keys keep a thread under 170 registers; 64-key
// blocks and a prefetch of the next block into registers measured slower: DECISIONS,
// "Decoding"). Autotuned per shape.
#[tile_kernel(
    specialize = aligned,
    autotune(
        configs = [
            { num_warps = 4, num_stages = 1 },
            { num_warps = 4, num_stages = 2 },
            { num_warps = 4, num_stages = 3 },
        ],
        key = [hq, hkv, max_pages, split_len, n_splits],
    )
)]
/// One split of one sequence for the query heads of one key/value head. Program
/// `(split, (b · hkv + kvh) · head_blocks + hb)`: query heads `kvh · group + hb · 16 + r`
/// (`r < 16`, `hb · 16 + r < group`, `group = hq / hkv`), keys `split · split_len ..
/// min((split + 1) · split_len, seq_lens[b])`. `q` is `[batch, hq, HEAD_DIM]`; the caches
/// `[n_pages, PAGE, hkv, HEAD_DIM]` (`tok_stride = hkv · HEAD_DIM`); `block_table` is `[batch,
/// max_pages]`. Writes `part_o[(b · hq + h) · n_splits + split]` (`HEAD_DIM` values: the split's
/// softmax-weighted values, normalized by its own sum; zeros for an empty split) and `part_lse`
/// (the split's log-sum-exp of the scaled scores in base 2; `-∞` when empty).
#[allow(clippy::too_many_arguments)]
pub fn attn_decode_split(
    q: Ptr<T>,
    k_cache: Ptr<T>,
    v_cache: Ptr<T>,
    block_table: Ptr<i32>,
    seq_lens: Ptr<i32>,
    part_o: Ptr<f32>,
    part_lse: Ptr<f32>,
    sm_scale: f32,
    hq: i32,
    hkv: i32,
    tok_stride: i32,
    max_pages: i32,
    split_len: i32,
    n_splits: i32,
    T: Type<{ [f16, bf16] }>,
    HEAD_DIM: Const<{ [64, 128] }>,
) {
    let split = program_id(0);
    let prog = program_id(1);
    let group = hq / hkv;
    let head_blocks = (group + 15) / 16;
    let b = prog / (hkv * head_blocks);
    let kvh = (prog / head_blocks) % hkv;
    let r = (prog % head_blocks) * 16 + arange(0, 16);
    let row_ok = r < group;
    let heads = kvh * group + r;
    let offs_d = arange(0, HEAD_DIM);
    let q_rows = (b * hq + heads).expand_dims(1) * HEAD_DIM + offs_d.expand_dims(0);
    let q_tile = load(q + q_rows, row_ok.expand_dims(1), 0.0);
    let qk_scale = sm_scale * 1.4426950408889634; // log2(e)
    let seq_len = load(seq_lens + b);
    let lo = split * split_len;
    let hi = min(lo + split_len, seq_len);
    let table = block_table + b * max_pages;
    let head_off = (kvh * HEAD_DIM) as i64;
    let d64 = (offs_d as i64).expand_dims(0);
    let mut acc = zeros([16, HEAD_DIM]);
    let mut m_i = zeros([16]) + f32::NEG_INFINITY;
    let mut l_i = zeros([16]);
    for start in (lo..hi).step_by(32) {
        let cols = start + arange(0, 32);
        let in_seq = cols < hi;
        // Each key's page through the block table, then its row in the pool (64-bit: a pool
        // may hold more than 2^31 elements). The keys and the values are both loaded before
        // the first product, so that their reads overlap.
        let page = load(table + cols / 16, in_seq, 0);
        let row = (page as i64 * 16 + (cols % 16) as i64) * tok_stride as i64 + head_off;
        let kv = row.expand_dims(1) + d64;
        let keep = in_seq.expand_dims(1);
        let kt = load(k_cache + kv, keep, 0.0);
        let vt = load(v_cache + kv, keep, 0.0);
        let s = dot(q_tile, kt.trans());
        let s = select(in_seq.expand_dims(0), s, f32::NEG_INFINITY);
        let m_new = max(m_i, s.max(1) * qk_scale);
        let p = (s * qk_scale - m_new.expand_dims(1)).exp2();
        let alpha = (m_i - m_new).exp2();
        l_i = l_i * alpha + p.sum(1);
        acc = dot(p as T, vt, acc * alpha.expand_dims(1));
        m_i = m_new;
    }
    let part = (b * hq + heads) * n_splits + split;
    let full = l_i > 0.0;
    let l_safe = select(full, l_i, 1.0);
    store(
        part_lse + part,
        select(full, m_i + l_safe.log2(), f32::NEG_INFINITY),
        row_ok,
    );
    store(
        part_o + part.expand_dims(1) * HEAD_DIM + offs_d.expand_dims(0),
        acc / l_safe.expand_dims(1),
        row_ok.expand_dims(1),
    );
}

#[tile_kernel(num_warps = 4)]
/// Merges the `n_splits` partial results of one (sequence, query head), program `b · hq + h`:
/// `o = Σ 2^(lse_s − M) o_s / Σ 2^(lse_s − M)` with `M` the largest partial log-sum-exp; also
/// writes the row's log-sum-exp `lse[b · hq + h]` (natural log). `n_splits ≤ MAX_SPLITS`.
pub fn attn_decode_combine(
    part_o: Ptr<f32>,
    part_lse: Ptr<f32>,
    o: Ptr<T>,
    lse: Ptr<f32>,
    n_splits: i32,
    T: Type<{ [f16, bf16] }>,
    HEAD_DIM: Const<{ [64, 128] }>,
    MAX_SPLITS: Const<64>,
) {
    let row = program_id(0);
    let sp = arange(0, MAX_SPLITS);
    let used = sp < n_splits;
    let part = row * n_splits + sp;
    let ls = load(part_lse + part, used, f32::NEG_INFINITY);
    let m = ls.max(0);
    let w = (ls - m).exp2();
    let offs_d = arange(0, HEAD_DIM);
    let parts = load(
        part_o + part.expand_dims(1) * HEAD_DIM + offs_d.expand_dims(0),
        used.expand_dims(1),
        0.0,
    );
    let total = w.sum(0);
    let out = (parts * w.expand_dims(1)).sum(0) / total;
    store(o + row * HEAD_DIM + offs_d, out as T);
    store(lse + row, (m + total.log2()) * 0.6931471805599453); // ln(2)
}

/// One decoding step: `batch` sequences, one query token each, `hq` query heads sharing `hkv`
/// key/value heads, head dimension `d`; sequence `b` has `lens[b]` cached tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeShape {
    /// Query heads.
    pub hq: usize,
    /// Key/value heads (`hq` a multiple of it).
    pub hkv: usize,
    /// Head dimension: 64 or 128.
    pub d: usize,
    /// Cached tokens per sequence (each at least 1); the batch is its length.
    pub lens: Vec<usize>,
}

impl DecodeShape {
    /// Sequences.
    pub fn batch(&self) -> usize {
        self.lens.len()
    }

    /// Pages of the longest sequence: the block table's row length.
    pub fn max_pages(&self) -> usize {
        self.lens
            .iter()
            .map(|&l| l.div_ceil(PAGE))
            .max()
            .unwrap_or(0)
    }

    /// Pages in the pool: each sequence's own.
    pub fn n_pages(&self) -> usize {
        self.lens.iter().map(|&l| l.div_ceil(PAGE)).sum()
    }

    /// Elements of `q` (and `o`): `batch · hq · d`.
    pub fn q_len(&self) -> usize {
        self.batch() * self.hq * self.d
    }

    /// Elements of each cache pool: `n_pages · PAGE · hkv · d`.
    pub fn cache_len(&self) -> usize {
        self.n_pages() * PAGE * self.hkv * self.d
    }

    /// Bytes the step must move at least, as `attention.py` counts them: the keys and values of
    /// every cached token, `q` read and `o` written.
    pub fn bytes(&self, elem: usize) -> f64 {
        let tokens: usize = self.lens.iter().sum();
        ((2 * tokens * self.hkv * self.d + 2 * self.q_len()) * elem) as f64
    }

    /// `(n_splits, split_len)`: splits of a multiple of the 32-key block, at least 256
    /// tokens, enough of them for about 2,048 programs, at most [`MAX_SPLITS`].
    pub fn splits(&self) -> (usize, usize) {
        let longest = self.lens.iter().copied().max().unwrap_or(1).max(1);
        let programs = self.batch() * self.hkv * (self.hq / self.hkv).div_ceil(ROWS);
        let want = TARGET_PROGRAMS
            .div_ceil(programs.max(1))
            .clamp(1, MAX_SPLITS);
        let per = longest
            .div_ceil(want)
            .max(MIN_SPLIT)
            .next_multiple_of(BLOCK_N);
        let per = per.max(longest.div_ceil(MAX_SPLITS).next_multiple_of(BLOCK_N));
        (longest.div_ceil(per), per)
    }

    /// `Ok` where the kernels take the shape, else why not.
    pub fn check(&self) -> Result<(), tile::Error> {
        let bad = |m: String| Err(tile::Error::Args(m));
        check_head_dim(self.d)?;
        check_groups(self.hq, self.hkv)?;
        if self.lens.contains(&0) {
            return bad("a sequence without cached tokens has no attention".into());
        }
        Ok(())
    }
}

/// A decoding step's inputs on the host: the query, the page pools, the block table (pages
/// handed out in a random order, so that no sequence is contiguous) and the lengths.
pub struct DecodeInputs<T> {
    /// `[batch, hq, d]`.
    pub q: Vec<T>,
    /// `[n_pages, PAGE, hkv, d]`.
    pub k: Vec<T>,
    /// `[n_pages, PAGE, hkv, d]`.
    pub v: Vec<T>,
    /// `[batch, max_pages]` page numbers (unused entries 0).
    pub table: Vec<i32>,
    /// `[batch]`.
    pub lens: Vec<i32>,
}

impl<T: Half> DecodeInputs<T> {
    /// Uniform values in [-1, 1) and a shuffled page order, from `seed`.
    pub fn new(s: &DecodeShape, seed: u64) -> DecodeInputs<T> {
        let q = uniform(s.q_len(), seed);
        let k = uniform(s.cache_len(), seed + 1);
        let v = uniform(s.cache_len(), seed + 2);
        let n_pages = s.n_pages();
        let mut order: Vec<i32> = (0..n_pages as i32).collect();
        let mut rng = Rng::new(seed ^ 0x5EED);
        for i in (1..n_pages).rev() {
            let j = ((rng.uniform(0.0, 1.0) as f64 * (i + 1) as f64) as usize).min(i);
            order.swap(i, j);
        }
        let mp = s.max_pages();
        let mut table = vec![0i32; s.batch() * mp];
        let mut next = 0;
        for (b, &len) in s.lens.iter().enumerate() {
            for p in 0..len.div_ceil(PAGE) {
                table[b * mp + p] = order[next];
                next += 1;
            }
        }
        let lens = s.lens.iter().map(|&l| l as i32).collect();
        DecodeInputs {
            q,
            k,
            v,
            table,
            lens,
        }
    }
}

/// `n` values uniform in [-1, 1) from `seed`, filled by every core in chunks of 2^20 (each
/// chunk its own stream, so the values do not depend on the core count): a 32k-token cache
/// is 2^31 values a pool.
fn uniform<T: Half>(n: usize, seed: u64) -> Vec<T> {
    const CHUNK: usize = 1 << 20;
    let mut out = vec![T::from_f32(0.0); n];
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    // Each core fills a run of whole chunks; chunk `i` of the array is stream `i` either way.
    let per = n.div_ceil(CHUNK).div_ceil(cores).max(1);
    std::thread::scope(|sc| {
        for (g, part) in out.chunks_mut(per * CHUNK).enumerate() {
            sc.spawn(move || {
                for (i, chunk) in part.chunks_mut(CHUNK).enumerate() {
                    let stream = (g * per + i) as u64;
                    let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9).wrapping_add(stream));
                    for x in chunk.iter_mut() {
                        *x = T::from_f32(rng.uniform(-1.0, 1.0));
                    }
                }
            });
        }
    });
    out
}

/// The device buffers of one decoding step, the splits' scratch included.
pub struct DecodeBuffers<T: tile::Element> {
    /// `[batch, hq, d]`.
    pub q: Buffer<T>,
    /// The key pool.
    pub k: Buffer<T>,
    /// The value pool.
    pub v: Buffer<T>,
    /// The block table.
    pub table: Buffer<i32>,
    /// The sequence lengths.
    pub lens: Buffer<i32>,
    /// The output `[batch, hq, d]`.
    pub o: Buffer<T>,
    /// Each row's log-sum-exp (natural log), `[batch, hq]`.
    pub lse: Buffer<f32>,
    part_o: Buffer<f32>,
    part_lse: Buffer<f32>,
}

impl<T: Half> DecodeBuffers<T> {
    /// Uploads `x` and allocates the outputs (NaN, so that an unwritten element shows) and the
    /// splits' scratch for `s`.
    pub fn new(dev: &Device, s: &DecodeShape, x: &DecodeInputs<T>) -> Result<Self, tile::Error> {
        let (splits, _) = s.splits();
        let rows = s.batch() * s.hq;
        Ok(DecodeBuffers {
            q: dev.upload(&x.q)?,
            k: dev.upload(&x.k)?,
            v: dev.upload(&x.v)?,
            table: dev.upload(&x.table)?,
            lens: dev.upload(&x.lens)?,
            o: dev.upload(&vec![T::from_f32(f32::NAN); s.q_len()])?,
            lse: dev.upload(&vec![f32::NAN; rows])?,
            part_o: dev.zeros::<f32>(rows * splits * s.d)?,
            part_lse: dev.zeros::<f32>(rows * splits)?,
        })
    }
}

/// One decoding step: the split kernel, then the combine.
pub fn decode<T: Half>(
    dev: &Device,
    s: &DecodeShape,
    x: &mut DecodeBuffers<T>,
) -> Result<(), tile::Error> {
    s.check()?;
    let (splits, split_len) = s.splits();
    let head_blocks = (s.hq / s.hkv).div_ceil(ROWS);
    let i = |v: usize| -> Result<i32, tile::Error> {
        i32::try_from(v).map_err(|_| tile::Error::Args(format!("{v} does not fit an i32")))
    };
    let grid = Grid::xy(splits as u32, (s.batch() * s.hkv * head_blocks) as u32);
    attn_decode_split::launch(
        dev,
        |_: &_| grid,
        &x.q,
        &x.k,
        &x.v,
        &x.table,
        &x.lens,
        &mut x.part_o,
        &mut x.part_lse,
        1.0 / (s.d as f32).sqrt(),
        i(s.hq)?,
        i(s.hkv)?,
        i(s.hkv * s.d)?,
        i(s.max_pages())?,
        i(split_len)?,
        i(splits)?,
        i(s.d)?,
    )?;
    attn_decode_combine::launch(
        dev,
        Grid::x((s.batch() * s.hq) as u32),
        &x.part_o,
        &x.part_lse,
        &mut x.o,
        &mut x.lse,
        i(splits)?,
        i(s.d)?,
    )
}

/// Float64 attention of query head `h` of sequence `b`: `(o, lse)`.
pub fn decode_reference<T: Half>(
    s: &DecodeShape,
    x: &DecodeInputs<T>,
    b: usize,
    h: usize,
) -> (Vec<f64>, f64) {
    let d = s.d;
    let kvh = h / (s.hq / s.hkv);
    let mp = s.max_pages();
    let at = |t: usize| {
        let page = x.table[b * mp + t / PAGE] as usize;
        ((page * PAGE + t % PAGE) * s.hkv + kvh) * d
    };
    let q = &x.q[(b * s.hq + h) * d..][..d];
    attend_row(q, &x.k, &x.v, s.lens[b], at, 1.0 / (d as f64).sqrt())
}

/// Relative L2 errors `(o, lse)` of a decoding step's output against float64, over every
/// query head of the sequences `seqs`.
pub fn decode_errors<T: Half>(
    s: &DecodeShape,
    x: &DecodeInputs<T>,
    o: &[T],
    lse: &[f32],
    seqs: &[usize],
) -> (f64, f64) {
    let (mut got, mut want, mut got_l, mut want_l) = (vec![], vec![], vec![], vec![]);
    for &b in seqs {
        for h in 0..s.hq {
            let (ro, rl) = decode_reference(s, x, b, h);
            let row = b * s.hq + h;
            got.extend(o[row * s.d..][..s.d].iter().map(|t| t.to_f32()));
            want.extend(ro);
            got_l.push(lse[row]);
            want_l.push(rl);
        }
    }
    (
        crate::common::rel_l2(&got, &want),
        crate::common::rel_l2(&got_l, &want_l),
    )
}
