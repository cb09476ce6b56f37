//! Variable-length attention: sequences of different lengths packed one after another, as
//! FlashAttention's varlen API takes them. `q` is `[total, hq, d]`, `k` and `v` `[total, hkv,
//! d]`, `o` `[total, hq, d]`; sequence `i` is tokens `cu_seqlens[i] .. cu_seqlens[i + 1]`, and
//! its queries see only its keys (causal within it, with the mask). One launch
//! ([`attn_fwd_varlen`]): program `(i, seq · hq + h)` takes
//! query rows `128·i ..` of that sequence and head, and the programs past a sequence's end do
//! nothing. The log-sum-exp is `[hq, total]`.

use crate::common::{Half, Rng};
use tile::prelude::*;

use super::attn::{attend_row, check_groups, check_head_dim};
use super::kernels::attn_fwd_varlen;

/// A batch of packed sequences.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarlenShape {
    /// Query heads.
    pub hq: usize,
    /// Key/value heads (`hq` a multiple of it).
    pub hkv: usize,
    /// Head dimension: 64 or 128.
    pub d: usize,
    /// Each sequence's length (at least 1).
    pub lens: Vec<usize>,
    /// The causal mask within each sequence.
    pub causal: bool,
}

/// `n` lengths in `1..=max_len` from splitmix64 seeded with `seed`, as `bench/python/attention.py`
/// draws its variable-length batch (`varlen_lengths`), so that both sides time the same batch.
pub fn varlen_lengths(n: usize, max_len: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            1 + (z % max_len as u64) as usize
        })
        .collect()
}

impl VarlenShape {
    /// Tokens of all sequences.
    pub fn total(&self) -> usize {
        self.lens.iter().sum()
    }

    /// `cu_seqlens`: each sequence's first token, then the total.
    pub fn cu_seqlens(&self) -> Vec<i32> {
        let mut v = vec![0i32];
        for &l in &self.lens {
            v.push(v.last().copied().unwrap_or(0) + l as i32);
        }
        v
    }

    /// The forward's floating-point operations as `attention.py` counts them: the dense count
    /// of each sequence (`4·hq·L²·d`, halved with the causal mask), summed.
    pub fn flops(&self) -> f64 {
        let per: f64 = self
            .lens
            .iter()
            .map(|&l| 4.0 * (l as f64).powi(2) * (self.hq * self.d) as f64)
            .sum();
        if self.causal {
            per / 2.0
        } else {
            per
        }
    }

    /// `Ok` where the kernel takes the shape, else why not.
    pub fn check(&self) -> Result<(), tile::Error> {
        let bad = |m: String| Err(tile::Error::Args(m));
        check_head_dim(self.d)?;
        check_groups(self.hq, self.hkv)?;
        if self.lens.is_empty() || self.lens.contains(&0) {
            return bad("every sequence needs at least one token".into());
        }
        if self.total() * self.hq.max(self.hkv) * self.d > i32::MAX as usize {
            return bad(format!("{} tokens overflow 32-bit offsets", self.total()));
        }
        Ok(())
    }
}

/// Packed inputs: `q` `[total, hq, d]`, `k` and `v` `[total, hkv, d]`, uniform in [-1, 1).
pub struct VarlenInputs<T> {
    /// Queries.
    pub q: Vec<T>,
    /// Keys.
    pub k: Vec<T>,
    /// Values.
    pub v: Vec<T>,
}

impl<T: Half> VarlenInputs<T> {
    /// Inputs for `s` from `seed`.
    pub fn new(s: &VarlenShape, seed: u64) -> VarlenInputs<T> {
        let mut rng = Rng::new(seed);
        let mut gen =
            |n: usize| -> Vec<T> { rng.vec(n, -1.0, 1.0).into_iter().map(T::from_f32).collect() };
        let t = s.total();
        VarlenInputs {
            q: gen(t * s.hq * s.d),
            k: gen(t * s.hkv * s.d),
            v: gen(t * s.hkv * s.d),
        }
    }
}

/// The forward over packed sequences: `o` (`[total, hq, d]`) and `lse` (`[hq, total]`, natural
/// log) from `q`, `k`, `v` and `cu_seqlens` ([`VarlenShape::cu_seqlens`] uploaded).
pub fn varlen_forward<T: Half>(
    dev: &Device,
    s: &VarlenShape,
    x: [&Buffer<T>; 3],
    cu_seqlens: &Buffer<i32>,
    o: &mut Buffer<T>,
    lse: &mut Buffer<f32>,
) -> Result<(), tile::Error> {
    s.check()?;
    let longest = s.lens.iter().copied().max().unwrap_or(1);
    let grid = Grid::xy(longest.div_ceil(128) as u32, (s.lens.len() * s.hq) as u32);
    let (hq, hkv, d) = (s.hq as i32, s.hkv as i32, s.d as i32);
    attn_fwd_varlen::launch(
        dev,
        grid,
        x[0],
        x[1],
        x[2],
        o,
        lse,
        cu_seqlens,
        1.0 / (s.d as f32).sqrt(),
        hq * d,
        d,
        hkv * d,
        d,
        hq,
        hkv,
        s.total() as i32,
        d,
        i32::from(s.causal),
    )
}

/// The checked `(sequence, head, row)`s: every row of every head of a small batch; else heads
/// 0 and `hq − 1` of every sequence, at most 4 rows each (first, last and two between).
pub fn varlen_rows(s: &VarlenShape) -> Vec<(usize, usize, usize)> {
    let small = s.total() * s.hq <= 4096;
    let heads: Vec<usize> = if small {
        (0..s.hq).collect()
    } else {
        vec![0, s.hq - 1]
    };
    let mut v = Vec::new();
    for (i, &l) in s.lens.iter().enumerate() {
        let rows: Vec<usize> = if small {
            (0..l).collect()
        } else {
            let mut r = vec![0, l / 3, (2 * l) / 3, l - 1];
            r.dedup();
            r
        };
        for &h in &heads {
            v.extend(rows.iter().map(|&r| (i, h, r)));
        }
    }
    v
}

/// Float64 attention of row `r` of sequence `i`, head `h`: `(o, lse)`.
pub fn varlen_reference_row<T: Half>(
    s: &VarlenShape,
    x: &VarlenInputs<T>,
    cu: &[i32],
    (i, h, r): (usize, usize, usize),
) -> (Vec<f64>, f64) {
    let d = s.d;
    let start = cu[i] as usize;
    let kvh = h / (s.hq / s.hkv);
    let q = &x.q[((start + r) * s.hq + h) * d..][..d];
    let seen = if s.causal { r + 1 } else { s.lens[i] };
    let at = |j: usize| ((start + j) * s.hkv + kvh) * d;
    attend_row(q, &x.k, &x.v, seen, at, 1.0 / (d as f64).sqrt())
}

/// Relative L2 errors `(o, lse)` of the packed output on the rows of [`varlen_rows`].
pub fn varlen_errors<T: Half>(
    s: &VarlenShape,
    x: &VarlenInputs<T>,
    o: &[T],
    lse: &[f32],
) -> (f64, f64) {
    let cu = s.cu_seqlens();
    let (mut got, mut want, mut got_l, mut want_l) = (vec![], vec![], vec![], vec![]);
    for (i, h, r) in varlen_rows(s) {
        let (ro, rl) = varlen_reference_row(s, x, &cu, (i, h, r));
        let tok = cu[i] as usize + r;
        got.extend(
            o[(tok * s.hq + h) * s.d..][..s.d]
                .iter()
                .map(|t| t.to_f32()),
        );
        want.extend(ro);
        got_l.push(lse[h * s.total() + tok]);
        want_l.push(rl);
    }
    (
        crate::common::rel_l2(&got, &want),
        crate::common::rel_l2(&got_l, &want_l),
    )
}
