//! Host side of the flash-attention example: shapes, inputs, the forward and backward
//! launches, a float64 reference of the forward per sampled row, and a float64 reference of the
//! gradients `dQ`, `dK`, `dV` (analytic, from the float64 forward).

use crate::common::{Half, Rng};
use tile::prelude::*;

use super::kernels::{
    attn_bwd_dkdv, attn_bwd_dkdv_d128, attn_bwd_dkdv_dropout, attn_bwd_dq, attn_bwd_dq_d128,
    attn_bwd_dq_dropout, attn_bwd_preprocess, attn_fwd, attn_fwd_d128, attn_fwd_dropout, attn_pv,
    attn_scores, grid, grid_dkdv, grid_dq, grid_preprocess,
};

/// One attention problem: `batch × hq` query heads of `n_ctx` tokens sharing `hkv` key/value
/// heads, `d` components per head, BHSD layout (contiguous `[batch, heads, n_ctx, d]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Batch size.
    pub batch: usize,
    /// Query heads.
    pub hq: usize,
    /// Key/value heads (`hq` a multiple of it).
    pub hkv: usize,
    /// Sequence length.
    pub n_ctx: usize,
    /// Head dimension: 64 or 128.
    pub d: usize,
    /// The causal mask.
    pub causal: bool,
    /// Dropout on the probabilities, or none.
    pub dropout: Option<Dropout>,
}

/// Dropout on the attention probabilities (FlashAttention's `dropout_p`): each probability is
/// kept with probability `1 − p` and then scaled by `1 / (1 − p)`, the output
/// `O = (P ∘ Z) V / (1 − p)`. The mask `Z` is drawn by Philox-4x32-10 from `seed`, each head
/// its own stream ([`Dropout::keep`] says which; the kernels' `dropout_keep` draws the same),
/// so the backward regenerates it instead of storing it. `p` is rounded to a multiple of
/// `2⁻¹⁶` (each decision compares 16 random bits), and the scale is that of the rounded `p`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropout {
    /// `p · 2¹⁶`, rounded: a 16-bit half below it drops its probability.
    pub thresh: i32,
    /// The seed (the low word of each head's Philox key).
    pub seed: i32,
}

impl Dropout {
    /// Dropout with probability `p` (in `[0, 1)`, rounded to a multiple of `2⁻¹⁶` below 1) and
    /// `seed`; an `Err` for any other `p`.
    pub fn new(p: f64, seed: i32) -> Result<Dropout, tile::Error> {
        let thresh = (p * 65536.0).round();
        if !(0.0..65536.0).contains(&thresh) {
            return Err(tile::Error::Args(format!(
                "dropout probability {p}: it is at least 0 and below 1"
            )));
        }
        Ok(Dropout {
            thresh: thresh as i32,
            seed,
        })
    }

    /// The probability of dropping a value, as rounded.
    pub fn p(&self) -> f64 {
        f64::from(self.thresh) / 65536.0
    }

    /// Whether the probability of query `row` and key `col` of head `bh` (`batch · hq + head`)
    /// in a sequence of `n_ctx` tokens is kept: Philox-4x32-10 with key
    /// `(seed as i64 + (bh << 32)) as u64` and the 32-bit counter `R' · 4 · cdiv(n_ctx, 16) + C'`,
    /// where `R = row` with bit 3 clear, `C = col` with bits 0 and 3 clear, `R' = (R / 16) · 8 +
    /// R % 8` and `C' = (C / 16) · 4 + (C / 2) % 4`; of its four words, word `col bit 3 + 2 ·
    /// row bit 3`; of that word, the half `col bit 0` (low first); kept where the half is at least
    /// `thresh`. (Eight decisions per call, laid out as a tensor-core accumulator holds them: the
    /// kernels' `dropout_keep`.) The counters are distinct while `n_ctx² / 8 < 2³²` (up to
    /// 185,363 tokens); past that the stream of a head repeats.
    pub fn keep(&self, bh: usize, row: usize, col: usize, n_ctx: usize) -> bool {
        let key = i64::from(self.seed).wrapping_add((bh as i64) << 32) as u64;
        let (r, c) = (row as u32 & !8, col as u32 & !9);
        let (r2, c2) = ((r >> 4) * 8 + r % 8, (c >> 4) * 4 + (c >> 1) % 4);
        let counter = r2
            .wrapping_mul(n_ctx.div_ceil(16) as u32 * 4)
            .wrapping_add(c2);
        let word =
            tile::random::randint4x(key, u64::from(counter))[(col >> 3) % 2 + 2 * ((row >> 3) % 2)];
        let half = if col % 2 == 0 {
            word & 0xFFFF
        } else {
            word >> 16
        };
        half as i32 >= self.thresh
    }

    /// The factor dropout applies to that probability: `1 / (1 − p)` where it is kept, else 0.
    pub fn factor(&self, bh: usize, row: usize, col: usize, n_ctx: usize) -> f64 {
        if self.keep(bh, row, col, n_ctx) {
            1.0 / (1.0 - self.p())
        } else {
            0.0
        }
    }
}

impl Shape {
    /// Elements of `q` (and `o`).
    pub fn q_len(&self) -> usize {
        self.batch * self.hq * self.n_ctx * self.d
    }

    /// Elements of `k` (and `v`).
    pub fn kv_len(&self) -> usize {
        self.batch * self.hkv * self.n_ctx * self.d
    }

    /// The forward's floating-point operations as Triton's tutorial counts them: two products of
    /// `2·S²·D` per head, half of them with the causal mask.
    pub fn flops(&self) -> f64 {
        let per_head = 4.0 * (self.n_ctx as f64).powi(2) * self.d as f64;
        let all = per_head * (self.batch * self.hq) as f64;
        if self.causal {
            all / 2.0
        } else {
            all
        }
    }

    /// The backward's floating-point operations as Triton's tutorial counts them: 2.5 times the
    /// forward's (five products of `2·S²·D` per head, where the forward has two).
    pub fn bwd_flops(&self) -> f64 {
        2.5 * self.flops()
    }

    /// The kernels' BHSD strides in elements, `(sb, sh, ss, kb, kh)`: `q`/`o` (and their
    /// gradients) per batch, head and token, then `k`/`v` per batch and head (their token
    /// stride is `ss` too).
    pub fn strides(&self) -> (i32, i32, i32, i32, i32) {
        let (d, n) = (self.d as i32, self.n_ctx as i32);
        (
            self.hq as i32 * n * d,
            n * d,
            d,
            self.hkv as i32 * n * d,
            n * d,
        )
    }

    /// `Ok` for the head dimensions the example has kernels for (64 and 128), else the error
    /// every host function here returns.
    pub fn check_head_dim(&self) -> Result<(), tile::Error> {
        check_head_dim(self.d)
    }

    /// `batch×hq(/hkv)×n_ctx×d` and `causal`, for tables.
    pub fn label(&self) -> String {
        let heads = if self.hkv == self.hq {
            format!("{}", self.hq)
        } else {
            format!("{}/{}", self.hq, self.hkv)
        };
        format!(
            "{}x{}x{}x{}{}",
            self.batch,
            heads,
            self.n_ctx,
            self.d,
            if self.causal { " causal" } else { "" }
        ) + &self.dropout.map_or(String::new(), |dr| {
            format!(" dropout {}", (dr.p() * 1e4).round() / 1e4)
        })
    }
}

/// `Ok` for the head dimensions the example has kernels for (64 and 128), else the error every
/// host function of the example returns.
pub fn check_head_dim(d: usize) -> Result<(), tile::Error> {
    match d {
        64 | 128 => Ok(()),
        other => Err(tile::Error::Args(format!(
            "head dimension {other}: the example has kernels for 64 and 128"
        ))),
    }
}

/// `Ok` where `hq` query heads share `hkv` key/value heads evenly, else the error.
pub fn check_groups(hq: usize, hkv: usize) -> Result<(), tile::Error> {
    if hkv == 0 || hq % hkv != 0 {
        return Err(tile::Error::Args(format!(
            "{hq} query heads do not share {hkv} key/value heads evenly"
        )));
    }
    Ok(())
}

/// Random `q`, `k`, `v` and output gradient `d_o` in `T` (uniform in [-1, 1)); their values as
/// f64 are exact.
pub struct Inputs<T> {
    /// Queries.
    pub q: Vec<T>,
    /// Keys.
    pub k: Vec<T>,
    /// Values.
    pub v: Vec<T>,
    /// The gradient of the loss with respect to the output (the backward's input).
    pub d_o: Vec<T>,
}

impl<T: Half> Inputs<T> {
    /// Inputs for `s` from `seed`.
    pub fn new(s: &Shape, seed: u64) -> Inputs<T> {
        let mut rng = Rng::new(seed);
        let mut gen =
            |n: usize| -> Vec<T> { rng.vec(n, -1.0, 1.0).into_iter().map(T::from_f32).collect() };
        let q = gen(s.q_len());
        let k = gen(s.kv_len());
        let v = gen(s.kv_len());
        let d_o = gen(s.q_len());
        Inputs { q, k, v, d_o }
    }
}

/// `1/sqrt(d)`, the usual softmax scale.
pub fn scale(s: &Shape) -> f32 {
    1.0 / (s.d as f32).sqrt()
}

/// The forward pass: `o` (`[batch, hq, n_ctx, d]`) and `lse` (`[batch · hq, n_ctx]`, natural
/// log) from `q`, `k`, `v` in BHSD layout.
pub fn forward<T: Half>(
    dev: &Device,
    s: &Shape,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    o: &mut Buffer<T>,
    lse: &mut Buffer<f32>,
) -> Result<(), tile::Error> {
    forward_config(dev, s, [q, k, v], o, lse, None)
}

/// How many configurations [`forward_config`] takes for `s`: those of the dropout kernel, or 1.
pub fn forward_configs(s: &Shape) -> usize {
    if s.dropout.is_some() {
        attn_fwd_dropout::CONFIGS.len()
    } else {
        1
    }
}

/// [`forward`], with configuration `config` of the autotuned dropout kernel (the only
/// forward with several; the last where `config` is past them) instead of the tuner's pick
/// when `Some`. A configuration left out on the device's target is an
/// [`tile::Error::NoVariant`].
pub fn forward_config<T: Half>(
    dev: &Device,
    s: &Shape,
    [q, k, v]: [&Buffer<T>; 3],
    o: &mut Buffer<T>,
    lse: &mut Buffer<f32>,
    config: Option<usize>,
) -> Result<(), tile::Error> {
    let n = s.n_ctx as i32;
    let (sb, sh, ss, kb, kh) = s.strides();
    let (hq, hkv) = (s.hq as i32, s.hkv as i32);
    let g = grid(s.batch, s.hq, s.n_ctx);
    let causal = i32::from(s.causal);
    let sm = scale(s);
    s.check_head_dim()?;
    if let Some(dr) = s.dropout {
        let d = s.d as i32;
        let (seed, thresh) = (dr.seed, dr.thresh);
        match config.map(|c| c.min(attn_fwd_dropout::CONFIGS.len() - 1)) {
            None => attn_fwd_dropout::launch(
                dev,
                |_: &_| g,
                q,
                k,
                v,
                o,
                lse,
                sm,
                sb,
                sh,
                ss,
                kb,
                kh,
                ss,
                hq,
                hkv,
                n,
                seed,
                thresh,
                d,
                causal,
            ),
            Some(c) => attn_fwd_dropout::launch_config(
                dev, c, g, q, k, v, o, lse, sm, sb, sh, ss, kb, kh, ss, hq, hkv, n, seed, thresh,
                d, causal,
            ),
        }
    } else if s.d == 64 {
        attn_fwd::launch(
            dev, g, q, k, v, o, lse, sm, sb, sh, ss, kb, kh, ss, hq, hkv, n, causal,
        )
    } else {
        attn_fwd_d128::launch(
            dev, g, q, k, v, o, lse, sm, sb, sh, ss, kb, kh, ss, hq, hkv, n, causal,
        )
    }
}

/// Elements of the unfused form's score (and probability) buffer: `batch · hq · n_ctx²` f32.
pub fn unfused_scratch_len(s: &Shape) -> usize {
    s.batch * s.hq * s.n_ctx * s.n_ctx
}

/// The unfused forward, as three kernels and two round trips of the `n_ctx × n_ctx` scores
/// through memory: `scores = Q Kᵀ · scale` ([`attn_scores`], f32, `-∞` above the diagonal with
/// the causal mask), the fused_softmax example's row softmax into `probs`, then `O = P V`
/// ([`attn_pv`], `P` rounded to the input type). `scores` and `probs` hold
/// [`unfused_scratch_len`] elements each. BHSD layout, contiguous.
#[allow(clippy::too_many_arguments)]
pub fn unfused_forward<T: Half>(
    dev: &Device,
    s: &Shape,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    o: &mut Buffer<T>,
    scores: &mut Buffer<f32>,
    probs: &mut Buffer<f32>,
) -> Result<(), tile::Error> {
    s.check_head_dim()?;
    let n = i32::try_from(s.n_ctx).map_err(|_| tile::Error::Args("n_ctx over i32".into()))?;
    let (hq, hkv, d) = (s.hq as i32, s.hkv as i32, s.d as i32);
    let heads = (s.batch * s.hq) as u32;
    let blocks = cdiv(s.n_ctx, 64);
    let causal = i32::from(s.causal);
    attn_scores::launch(
        dev,
        Grid::xyz(blocks, blocks, heads),
        q,
        k,
        scores,
        scale(s),
        hq,
        hkv,
        n,
        causal,
        d,
    )?;
    let rows = (s.batch * s.hq * s.n_ctx) as i32;
    crate::fused_softmax::kernels::fused(dev, scores, probs, rows, n)?;
    attn_pv::launch(dev, Grid::xy(blocks, heads), probs, v, o, hq, hkv, n, d)
}

/// The float64 reference of query row `row` of head `(b, h)`: its output row (`d` values) and
/// its log-sum-exp.
pub fn reference_row<T: Half>(
    s: &Shape,
    x: &Inputs<T>,
    b: usize,
    h: usize,
    row: usize,
) -> (Vec<f64>, f64) {
    let (n, d) = (s.n_ctx, s.d);
    let hk = h / (s.hq / s.hkv);
    let qo = ((b * s.hq + h) * n + row) * d;
    let kvo = (b * s.hkv + hk) * n * d;
    let keys = if s.causal { row + 1 } else { n };
    let q = &x.q[qo..][..d];
    let bh = b * s.hq + h;
    let weight = |j| s.dropout.map_or(1.0, |dr| dr.factor(bh, row, j, n));
    let at = |j| kvo + j * d;
    attend_row_weighted(
        q,
        &x.k,
        &x.v,
        keys,
        at,
        f64::from(scale(s)),
        |_, z| z,
        weight,
    )
}

/// Float64 attention of one query row `q` (`d` values) against `keys` keys: key `j`'s and
/// value `j`'s `d` values start at `k[at(j)]` and `v[at(j)]`; the scores are scaled by `scale`.
/// Returns the output row and the log-sum-exp (natural log) of the scaled scores.
pub fn attend_row<T: Half>(
    q: &[T],
    k: &[T],
    v: &[T],
    keys: usize,
    at: impl Fn(usize) -> usize,
    scale: f64,
) -> (Vec<f64>, f64) {
    attend_row_with(q, k, v, keys, at, scale, |_, z| z)
}

/// [`attend_row`] with each scaled score `z` of key `j` replaced by `modify(j, z)` (`−∞`: the
/// key is masked; a row with every key masked gives zeros and a log-sum-exp of `−∞`).
pub fn attend_row_with<T: Half>(
    q: &[T],
    k: &[T],
    v: &[T],
    keys: usize,
    at: impl Fn(usize) -> usize,
    scale: f64,
    modify: impl Fn(usize, f64) -> f64,
) -> (Vec<f64>, f64) {
    attend_row_weighted(q, k, v, keys, at, scale, modify, |_| 1.0)
}

/// [`attend_row_with`] with key `j`'s probability multiplied by `weight(j)` in the output
/// only (dropout's factor: the softmax and the log-sum-exp are those of the scores).
#[allow(clippy::too_many_arguments)]
pub fn attend_row_weighted<T: Half>(
    q: &[T],
    k: &[T],
    v: &[T],
    keys: usize,
    at: impl Fn(usize) -> usize,
    scale: f64,
    modify: impl Fn(usize, f64) -> f64,
    weight: impl Fn(usize) -> f64,
) -> (Vec<f64>, f64) {
    let f = |t: T| f64::from(t.to_f32());
    let d = q.len();
    let scores: Vec<f64> = (0..keys)
        .map(|j| {
            let kj = &k[at(j)..][..d];
            modify(
                j,
                q.iter().zip(kj).map(|(&a, &c)| f(a) * f(c)).sum::<f64>() * scale,
            )
        })
        .collect();
    let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return (vec![0.0; d], m);
    }
    let w: Vec<f64> = scores.iter().map(|&z| (z - m).exp()).collect();
    let sum: f64 = w.iter().sum();
    let mut out = vec![0.0; d];
    for (j, &p) in w.iter().enumerate() {
        let p = p * weight(j);
        for (o, &vv) in out.iter_mut().zip(&v[at(j)..][..d]) {
            *o += p * f(vv);
        }
    }
    out.iter_mut().for_each(|o| *o /= sum);
    (out, m + sum.ln())
}

/// Rows to check: every row of small problems, else 64 rows spread over heads and positions
/// (first, last, and pseudo-random ones in between).
pub fn sampled_rows(s: &Shape) -> Vec<(usize, usize, usize)> {
    let all = s.batch * s.hq * s.n_ctx;
    if all <= 2048 {
        return (0..all)
            .map(|i| (i / (s.hq * s.n_ctx), (i / s.n_ctx) % s.hq, i % s.n_ctx))
            .collect();
    }
    let mut rng = Rng::new(17);
    let mut v = vec![(0, 0, 0), (s.batch - 1, s.hq - 1, s.n_ctx - 1)];
    while v.len() < 64 {
        let pick = |r: &mut Rng, n: usize| ((r.uniform(0.0, 1.0) * n as f32) as usize).min(n - 1);
        v.push((
            pick(&mut rng, s.batch),
            pick(&mut rng, s.hq),
            pick(&mut rng, s.n_ctx),
        ));
    }
    v
}

/// Compares `o` and `lse` with the float64 reference on [`sampled_rows`]: the relative L2
/// errors of the outputs and of the log-sum-exps.
pub fn errors<T: Half>(s: &Shape, x: &Inputs<T>, o: &[T], lse: &[f32]) -> (f64, f64) {
    errors_against(s, o, lse, |b, h, r| reference_row(s, x, b, h, r))
}

/// [`errors`] against another reference: `reference(b, h, row)` gives the output row and the
/// log-sum-exp of query row `row` of head `(b, h)`.
pub fn errors_against<T: Half>(
    s: &Shape,
    o: &[T],
    lse: &[f32],
    reference: impl Fn(usize, usize, usize) -> (Vec<f64>, f64),
) -> (f64, f64) {
    let (mut got, mut want, mut lg, mut lw) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (b, h, r) in sampled_rows(s) {
        let (out, l) = reference(b, h, r);
        let at = ((b * s.hq + h) * s.n_ctx + r) * s.d;
        got.extend(o[at..at + s.d].iter().map(|t| t.to_f32()));
        want.extend(out);
        lg.push(lse[(b * s.hq + h) * s.n_ctx + r]);
        lw.push(l);
    }
    (
        crate::common::rel_l2(&got, &want),
        crate::common::rel_l2(&lg, &lw),
    )
}

/// The backward's buffers besides the forward's: its inputs `d_o`, `o` and `lse` (the forward's
/// results), its outputs `dq`, `dk`, `dv` (each shaped as `q`, `k`, `v`), and the scratch `delta`
/// (`[batch · hq, n_ctx]` f32, written by the preprocessing kernel).
pub struct Grads<'a, T: Half> {
    /// The forward's output.
    pub o: &'a Buffer<T>,
    /// The forward's log-sum-exp (natural log).
    pub lse: &'a Buffer<f32>,
    /// The output gradient.
    pub d_o: &'a Buffer<T>,
    /// `dL/dQ`.
    pub dq: &'a mut Buffer<T>,
    /// `dL/dK`.
    pub dk: &'a mut Buffer<T>,
    /// `dL/dV`.
    pub dv: &'a mut Buffer<T>,
    /// Scratch: `rowsum(dO ∘ O)`.
    pub delta: &'a mut Buffer<f32>,
}

/// The backward pass (FlashAttention-2's): `delta = rowsum(dO ∘ O)`, then `dK`, `dV` (one
/// program per block of keys of a key/value head, summing its group's query heads), then `dQ`
/// (one program per block of queries). `q`, `k`, `v` in BHSD layout as for [`forward`]. The
/// `dK`/`dV` and `dQ` kernels are autotuned (their block sizes, on the first launch of each
/// shape).
pub fn backward<T: Half>(
    dev: &Device,
    s: &Shape,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    g: Grads<'_, T>,
) -> Result<(), tile::Error> {
    backward_config(dev, s, q, k, v, g, None)
}

/// How many configurations [`backward_config`] can be asked for on `s` (its head dimension,
/// and dropout or not): the most of its two autotuned kernels.
pub fn backward_configs(s: &Shape) -> usize {
    let d = s.d;
    if s.dropout.is_some() {
        attn_bwd_dkdv_dropout::CONFIGS
            .len()
            .max(attn_bwd_dq_dropout::CONFIGS.len())
    } else if d == 64 {
        attn_bwd_dkdv::CONFIGS.len().max(attn_bwd_dq::CONFIGS.len())
    } else {
        attn_bwd_dkdv_d128::CONFIGS
            .len()
            .max(attn_bwd_dq_d128::CONFIGS.len())
    }
}

/// [`backward`], with configuration `c` of each of the two autotuned kernels (the last where
/// one has fewer) instead of the tuner's pick when `config` is `Some(c)`: to check each one.
/// A configuration left out on the device's target is an [`tile::Error::NoVariant`].
pub fn backward_config<T: Half>(
    dev: &Device,
    s: &Shape,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    g: Grads<'_, T>,
    config: Option<usize>,
) -> Result<(), tile::Error> {
    let n = s.n_ctx as i32;
    let (sb, sh, ss, kb, kh) = s.strides();
    let (hq, hkv) = (s.hq as i32, s.hkv as i32);
    let causal = i32::from(s.causal);
    let sm = scale(s);
    s.check_head_dim()?;
    attn_bwd_preprocess::launch(
        dev,
        grid_preprocess(s.batch, s.hq, s.n_ctx),
        g.o,
        g.d_o,
        g.delta,
        sb,
        sh,
        ss,
        hq,
        n,
        s.d as i32,
    )?;
    let delta: &Buffer<f32> = g.delta;
    let (b, nq, nkv, nc) = (s.batch, s.hq, s.hkv, s.n_ctx);
    // Configuration `c` of a kernel with `len` of them.
    let pick = |len: usize| config.map(|c| c.min(len - 1));
    // Each kernel's launch, tuned or with the configuration asked for, from its grid function;
    // the kernels differ in their outputs only.
    // The dropout kernels take the seed, the threshold and the head dimension too.
    macro_rules! go {
        ($kernel:ident, $grid:expr, [$($out:expr),+] $(, $extra:expr)*) => {{
            let grid = $grid;
            match pick($kernel::CONFIGS.len()) {
                None => $kernel::launch(
                    dev, grid, q, k, v, g.d_o, g.lse, delta, $($out),+, sm, sb, sh, ss, kb, kh,
                    ss, hq, hkv, n, $($extra,)* causal,
                ),
                Some(c) => $kernel::launch_config(
                    dev, c, grid(&$kernel::CONFIGS[c]), q, k, v, g.d_o, g.lse, delta,
                    $($out),+, sm, sb, sh, ss, kb, kh, ss, hq, hkv, n, $($extra,)* causal,
                ),
            }
        }};
    }
    if let Some(dr) = s.dropout {
        let d = s.d as i32;
        let gkv = |c: &attn_bwd_dkdv_dropout::Config| {
            let slices = if c.WHOLE == 1 { 1 } else { s.d / 64 };
            grid_dkdv(b, nkv, nc, c.BN as usize, slices)
        };
        go!(
            attn_bwd_dkdv_dropout,
            gkv,
            [g.dk, g.dv],
            dr.seed,
            dr.thresh,
            d
        )?;
        let gq = |c: &attn_bwd_dq_dropout::Config| grid_dq(b, nq, nc, c.BM as usize);
        go!(attn_bwd_dq_dropout, gq, [g.dq], dr.seed, dr.thresh, d)
    } else if s.d == 64 {
        let gkv = |c: &attn_bwd_dkdv::Config| grid_dkdv(b, nkv, nc, c.BN as usize, 1);
        go!(attn_bwd_dkdv, gkv, [g.dk, g.dv])?;
        let gq = |c: &attn_bwd_dq::Config| grid_dq(b, nq, nc, c.BM as usize);
        go!(attn_bwd_dq, gq, [g.dq])
    } else {
        let slices = |dv: i32| (s.d as i32 / dv) as usize;
        let gkv =
            |c: &attn_bwd_dkdv_d128::Config| grid_dkdv(b, nkv, nc, c.BN as usize, slices(c.DV));
        go!(attn_bwd_dkdv_d128, gkv, [g.dk, g.dv])?;
        let gq = |c: &attn_bwd_dq_d128::Config| grid_dq(b, nq, nc, c.BM as usize);
        go!(attn_bwd_dq_d128, gq, [g.dq])
    }
}

/// The float64 gradients `(dq, dk, dv)` of the whole problem, laid out as `q`, `k`, `v`: per
/// query head, the probabilities `P` from the float64 forward, `dV += Pᵀ dO`, `dP = dO Vᵀ`,
/// `dS = P ∘ (dP − rowsum(P ∘ dP))`, `dQ = dS K · scale`, `dK += dSᵀ Q · scale` (`dK`, `dV`
/// summed over the query heads sharing a key/value head). `O(batch · hq · S² · D)`: for the
/// interpreter's shapes and the GPU's awkward ones.
pub fn reference_grads<T: Half>(s: &Shape, x: &Inputs<T>) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (n, d) = (s.n_ctx, s.d);
    let f = |t: T| f64::from(t.to_f32());
    let sc = f64::from(scale(s));
    let (mut dq, mut dk, mut dv) = (
        vec![0.0; s.q_len()],
        vec![0.0; s.kv_len()],
        vec![0.0; s.kv_len()],
    );
    let mut p = vec![0.0f64; n];
    let mut dp = vec![0.0f64; n];
    let mut z = vec![1.0f64; n];
    for b in 0..s.batch {
        for h in 0..s.hq {
            let hk = h / (s.hq / s.hkv);
            let qo = (b * s.hq + h) * n * d;
            let kvo = (b * s.hkv + hk) * n * d;
            for i in 0..n {
                let keys = if s.causal { i + 1 } else { n };
                let qi = &x.q[qo + i * d..qo + (i + 1) * d];
                let doi = &x.d_o[qo + i * d..qo + (i + 1) * d];
                for (j, pj) in p.iter_mut().enumerate().take(keys) {
                    let kj = &x.k[kvo + j * d..kvo + (j + 1) * d];
                    *pj = qi.iter().zip(kj).map(|(&a, &c)| f(a) * f(c)).sum::<f64>() * sc;
                }
                let m = p[..keys].iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let mut sum = 0.0;
                for pj in &mut p[..keys] {
                    *pj = (*pj - m).exp();
                    sum += *pj;
                }
                // With dropout, `z` is the factor of key `j` (0 or `1 / (1 − p)`): the output
                // and `dV` see `P ∘ z`, and `dP` is `z ∘ dO Vᵀ`.
                let bh = b * s.hq + h;
                for (j, zj) in z.iter_mut().enumerate().take(keys) {
                    *zj = s.dropout.map_or(1.0, |dr| dr.factor(bh, i, j, n));
                }
                let mut delta = 0.0;
                for j in 0..keys {
                    p[j] /= sum;
                    let vj = &x.v[kvo + j * d..kvo + (j + 1) * d];
                    dp[j] = doi.iter().zip(vj).map(|(&a, &c)| f(a) * f(c)).sum::<f64>() * z[j];
                    delta += p[j] * dp[j];
                }
                for j in 0..keys {
                    let ds = p[j] * (dp[j] - delta);
                    let pz = p[j] * z[j];
                    for c in 0..d {
                        dv[kvo + j * d + c] += pz * f(doi[c]);
                        dq[qo + i * d + c] += ds * f(x.k[kvo + j * d + c]) * sc;
                        dk[kvo + j * d + c] += ds * f(qi[c]) * sc;
                    }
                }
            }
        }
    }
    (dq, dk, dv)
}

/// The relative L2 tolerance of each gradient against float64: the forward's ([`Half::TOL`],
/// 4e-3 for f16 and 2e-2 for bf16). The gradients go through a few more roundings to `T` than
/// the output (`P` and `dS` before their products, and the result); on the interpreter's
/// shapes they stay near 3e-4 (f16) and 3e-3 (bf16).
pub fn grad_tol<T: Half>() -> f64 {
    T::TOL
}

/// Relative L2 errors of `dq`, `dk`, `dv` against [`reference_grads`].
pub fn grad_errors<T: Half>(
    s: &Shape,
    x: &Inputs<T>,
    dq: &[T],
    dk: &[T],
    dv: &[T],
) -> (f64, f64, f64) {
    grad_errors_against(&reference_grads(s, x), dq, dk, dv)
}

/// Relative L2 errors of `dq`, `dk`, `dv` against `want`, the float64 gradients of
/// [`reference_grads`] (computed once for several results of the same inputs).
pub fn grad_errors_against<T: Half>(
    want: &(Vec<f64>, Vec<f64>, Vec<f64>),
    dq: &[T],
    dk: &[T],
    dv: &[T],
) -> (f64, f64, f64) {
    let e = |got: &[T], want: &[f64]| {
        let got: Vec<f32> = got.iter().map(|t| t.to_f32()).collect();
        crate::common::rel_l2(&got, want)
    };
    (e(dq, &want.0), e(dk, &want.1), e(dv, &want.2))
}

/// Relative L2 errors of `dq`, `dk`, `dv` on sampled rows, for shapes too large for
/// [`reference_grads`]: those of [`sampled_grads`].
#[allow(clippy::too_many_arguments)]
pub fn sampled_grad_errors<T: Half>(
    s: &Shape,
    x: &Inputs<T>,
    o: &[T],
    lse: &[f32],
    dq: &[T],
    dk: &[T],
    dv: &[T],
) -> (f64, f64, f64) {
    use crate::common::rel_l2;
    let [(gq, wq), (gk, wk), (gv, wv)] = sampled_grads(s, x, o, lse, dq, dk, dv);
    (rel_l2(&gq, &wq), rel_l2(&gk, &wk), rel_l2(&gv, &wv))
}

/// `dq`, `dk`, `dv` on sampled rows beside their float64 values, each as `(got, want)`: the `dQ`
/// rows of [`sampled_rows`] and as many `dK`/`dV` rows (a key of one key/value head each), in
/// float64 from the inputs and from the forward's `o` and `lse` (which [`errors`] checks against
/// float64): `P_ij = exp(s_ij·scale − L_i)`, `Δ_i = rowsum(dO_i ∘ O_i)`. `O(S·D)` per `dQ` row,
/// `O(group · S · D)` per key row.
#[allow(clippy::too_many_arguments)]
pub fn sampled_grads<T: Half>(
    s: &Shape,
    x: &Inputs<T>,
    o: &[T],
    lse: &[f32],
    dq: &[T],
    dk: &[T],
    dv: &[T],
) -> [(Vec<f32>, Vec<f64>); 3] {
    let (n, d) = (s.n_ctx, s.d);
    let group = s.hq / s.hkv;
    let f = |t: T| f64::from(t.to_f32());
    let sc = f64::from(scale(s));
    let dot = |a: &[T], b: &[T]| a.iter().zip(b).map(|(&u, &w)| f(u) * f(w)).sum::<f64>();
    let qrow = |b: usize, h: usize, i: usize| ((b * s.hq + h) * n + i) * d;
    let kvrow = |b: usize, hk: usize, j: usize| ((b * s.hkv + hk) * n + j) * d;
    // `P_ij`, `dP_ij − Δ_i` and dropout's factor `z_ij` (1 without) of query row `i` of head
    // `(b, h)` and key `j`: `dP = z ∘ dO Vᵀ`, and `dV` takes `P ∘ z`.
    let terms = |b: usize, h: usize, i: usize, j: usize| {
        let (qi, ki) = (qrow(b, h, i), kvrow(b, h / group, j));
        let bh = b * s.hq + h;
        let z = s.dropout.map_or(1.0, |dr| dr.factor(bh, i, j, n));
        let l = f64::from(lse[bh * n + i]);
        let p = (dot(&x.q[qi..qi + d], &x.k[ki..ki + d]) * sc - l).exp();
        let delta = dot(&x.d_o[qi..qi + d], &o[qi..qi + d]);
        (p, z * dot(&x.d_o[qi..qi + d], &x.v[ki..ki + d]) - delta, z)
    };
    let (mut gq, mut wq) = (Vec::new(), Vec::new());
    for (b, h, i) in sampled_rows(s) {
        let keys = if s.causal { i + 1 } else { n };
        let mut acc = vec![0.0; d];
        for j in 0..keys {
            let (p, g, _) = terms(b, h, i, j);
            let kj = kvrow(b, h / group, j);
            for (c, a) in acc.iter_mut().enumerate() {
                *a += p * g * f(x.k[kj + c]) * sc;
            }
        }
        let at = qrow(b, h, i);
        gq.extend(dq[at..at + d].iter().map(|t| t.to_f32()));
        wq.extend(acc);
    }
    let (mut gk, mut wk, mut gv, mut wv) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let kv_shape = Shape { hq: s.hkv, ..*s };
    for (b, hk, j) in sampled_rows(&kv_shape) {
        let (mut ak, mut av) = (vec![0.0; d], vec![0.0; d]);
        for h in hk * group..(hk + 1) * group {
            let first = if s.causal { j } else { 0 };
            for i in first..n {
                let (p, g, z) = terms(b, h, i, j);
                let qi = qrow(b, h, i);
                for c in 0..d {
                    ak[c] += p * g * f(x.q[qi + c]) * sc;
                    av[c] += p * z * f(x.d_o[qi + c]);
                }
            }
        }
        let at = kvrow(b, hk, j);
        gk.extend(dk[at..at + d].iter().map(|t| t.to_f32()));
        wk.extend(ak);
        gv.extend(dv[at..at + d].iter().map(|t| t.to_f32()));
        wv.extend(av);
    }
    [(gq, wq), (gk, wk), (gv, wv)]
}
