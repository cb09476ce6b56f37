//! Score modifiers on the attention forward (`head_dim = 128`): a sliding window and the rules
//! of FlexAttention's examples — ALiBi, the logit softcap, an additive bias read from memory —
//! each a tile function passed to the kernels' row loop ([`super::kernels::attn_fwd_mod`],
//! [`super::kernels::attn_fwd_bias`]), and a float64 reference of the same rules.

use crate::common::{Half, Rng};
use tile::prelude::*;

use super::attn::{attend_row_with, errors_against, scale, Inputs, Shape};
use super::kernels::{attn_fwd_bias, attn_fwd_mod, grid};

/// The rule applied to each scaled score `s = q·k · scale` of query `i`, key `j`, head `h`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// `s`.
    None,
    /// `s + slope[h] · (j − i)`, `slope[h] = 2^(−8 (h + 1) / hq)` ([`alibi_slopes`]).
    Alibi,
    /// `cap · tanh(s / cap)`.
    Softcap(f32),
    /// `s + bias[i, j]`, `bias` an `n_ctx × bias_stride(n_ctx)` array in the input type.
    Bias,
}

/// A modified attention problem: `shape` (not causal: the window says which keys are seen),
/// the window, the rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModShape {
    /// The heads, lengths and head dimension (128); `causal` must be false.
    pub shape: Shape,
    /// `Some((left, right))`: query `i` sees keys `i − left ..= i + right` (a negative bound is
    /// no bound); `None`: every key.
    pub window: Option<(i32, i32)>,
    /// The rule on the scores.
    pub rule: Rule,
}

impl ModShape {
    /// `Ok` for what the kernels take: head dimension 128, no causal flag (use a window with
    /// `right = 0`), lengths within `i32`, a positive softcap.
    pub fn check(&self) -> Result<(), tile::Error> {
        let s = &self.shape;
        super::attn::check_groups(s.hq, s.hkv)?;
        let bad = |m: String| Err(tile::Error::Args(m));
        if s.d != 128 {
            return bad(format!(
                "head dimension {}: the score modifiers run at 128",
                s.d
            ));
        }
        if s.causal {
            return bad("a modified forward takes a window (left, 0) instead of `causal`".into());
        }
        if s.n_ctx > (i32::MAX / 4) as usize {
            return bad(format!(
                "{} tokens: over the kernels' 32-bit positions",
                s.n_ctx
            ));
        }
        if let Rule::Softcap(c) = self.rule {
            if !(c.is_finite() && c > 0.0) {
                return bad(format!("softcap {c}: the cap must be positive and finite"));
            }
        }
        Ok(())
    }

    /// The key range `lo..hi` query `i` sees.
    pub fn keys(&self, i: usize) -> (usize, usize) {
        let n = self.shape.n_ctx;
        match self.window {
            None => (0, n),
            Some((l, r)) => {
                let lo = if l < 0 {
                    0
                } else {
                    i.saturating_sub(l as usize)
                };
                let hi = if r < 0 {
                    n
                } else {
                    (i + r as usize + 1).min(n)
                };
                (lo, hi)
            }
        }
    }

    /// The forward's floating-point operations: `4·D` per (query, key) pair seen.
    pub fn flops(&self) -> f64 {
        let pairs: usize = (0..self.shape.n_ctx)
            .map(|i| {
                let (lo, hi) = self.keys(i);
                hi - lo
            })
            .sum();
        4.0 * (self.shape.batch * self.shape.hq) as f64 * self.shape.d as f64 * pairs as f64
    }

    /// The variant name of `bench/python/attention.py`'s rows: `mod_window_l{L}_r{R}`,
    /// `mod_alibi`, `mod_softcap{C}`, `mod_bias` (the window first when there are both).
    pub fn variant(&self) -> String {
        let mut parts = Vec::new();
        if let Some((l, r)) = self.window {
            parts.push(format!("window_l{l}_r{r}"));
        }
        match self.rule {
            Rule::None => {}
            Rule::Alibi => parts.push("alibi".into()),
            Rule::Softcap(c) => parts.push(format!("softcap{c}")),
            Rule::Bias => parts.push("bias".into()),
        }
        if parts.is_empty() {
            parts.push("none".into());
        }
        format!("mod_{}", parts.join("_"))
    }
}

/// ALiBi's slopes for `hq` heads: `2^(−8 (h + 1) / hq)`.
pub fn alibi_slopes(hq: usize) -> Vec<f32> {
    (0..hq)
        .map(|h| (-8.0 * (h + 1) as f64 / hq as f64).exp2() as f32)
        .collect()
}

/// The inputs of a modified problem: `q`, `k`, `v` ([`Inputs`]), the slopes and the bias
/// (uniform in [-1, 1), `n_ctx²` values; empty unless the rule is [`Rule::Bias`]).
pub struct ModInputs<T> {
    /// Queries, keys, values.
    pub x: Inputs<T>,
    /// ALiBi's slopes, one per query head.
    pub slopes: Vec<f32>,
    /// The additive bias, `n_ctx × bias_stride(n_ctx)` (the columns past `n_ctx` unused).
    pub bias: Vec<T>,
}

impl<T: Half> ModInputs<T> {
    /// Inputs for `s` from `seed`.
    pub fn new(s: &ModShape, seed: u64) -> ModInputs<T> {
        let x = Inputs::new(&s.shape, seed);
        let bias = if s.rule == Rule::Bias {
            let n = s.shape.n_ctx;
            Rng::new(seed ^ 0xB1A5)
                .vec(n * bias_stride(n), -1.0, 1.0)
                .into_iter()
                .map(T::from_f32)
                .collect()
        } else {
            Vec::new()
        };
        ModInputs {
            x,
            slopes: alibi_slopes(s.shape.hq),
            bias,
        }
    }
}

/// The row stride of an additive bias for `n` tokens: `n` rounded up to a multiple of 64, the
/// kernel's key block (PyTorch's memory-efficient attention pads its mask likewise, to 16).
/// The kernel reads whole key blocks of a row, the padding columns of keys past `n` included
/// (and not used), so that its copies need neither a clamp nor a mask and take a thread's two
/// neighbouring keys at once.
pub fn bias_stride(n: usize) -> usize {
    n.next_multiple_of(64)
}

/// The modified forward: `o`, `lse` as [`super::attn::forward`] writes them. `slopes` holds
/// `hq` values, `bias` `n_ctx × bias_stride(n_ctx)` (either may be any buffer when the rule does
/// not read it).
#[allow(clippy::too_many_arguments)]
pub fn mod_forward<T: Half>(
    dev: &Device,
    m: &ModShape,
    [q, k, v]: [&Buffer<T>; 3],
    slopes: &Buffer<f32>,
    bias: &Buffer<T>,
    o: &mut Buffer<T>,
    lse: &mut Buffer<f32>,
) -> Result<(), tile::Error> {
    m.check()?;
    let s = &m.shape;
    let n = s.n_ctx as i32;
    let (sb, sh, ss, kb, kh) = s.strides();
    let (hq, hkv) = (s.hq as i32, s.hkv as i32);
    let (left, right) = m.window.unwrap_or((-1, -1));
    let g = grid(s.batch, s.hq, s.n_ctx);
    let sm = scale(s);
    match m.rule {
        Rule::Bias => {
            let ld = bias_stride(s.n_ctx);
            if bias.len() < s.n_ctx * ld {
                return Err(tile::Error::Args(format!(
                    "bias of {} values for {} tokens: it takes n_ctx × {ld} values",
                    bias.len(),
                    s.n_ctx
                )));
            }
            let ld = ld as i32;
            attn_fwd_bias::launch(
                dev, g, q, k, v, o, lse, bias, sm, sb, sh, ss, kb, kh, ss, hq, hkv, n, left, right,
                ld,
            )
        }
        rule => {
            let (which, cap) = match rule {
                Rule::Alibi => (1, 0.0),
                Rule::Softcap(c) => (2, c),
                _ => (0, 0.0),
            };
            if which == 1 && slopes.len() < s.hq {
                return Err(tile::Error::Args(format!(
                    "{} ALiBi slopes for {} heads",
                    slopes.len(),
                    s.hq
                )));
            }
            attn_fwd_mod::launch(
                dev, g, q, k, v, o, lse, slopes, sm, sb, sh, ss, kb, kh, ss, hq, hkv, n, left,
                right, cap, which,
            )
        }
    }
}

/// The float64 reference of query row `row` of head `(b, h)`: its output row and log-sum-exp.
pub fn mod_reference_row<T: Half>(
    m: &ModShape,
    x: &ModInputs<T>,
    b: usize,
    h: usize,
    row: usize,
) -> (Vec<f64>, f64) {
    let s = &m.shape;
    let (n, d) = (s.n_ctx, s.d);
    let hk = h / (s.hq / s.hkv);
    let qo = ((b * s.hq + h) * n + row) * d;
    let kvo = (b * s.hkv + hk) * n * d;
    let (lo, hi) = m.keys(row);
    let q = &x.x.q[qo..][..d];
    let slope = f64::from(x.slopes[h]);
    let rule = |j: usize, z: f64| -> f64 {
        if j < lo || j >= hi {
            return f64::NEG_INFINITY;
        }
        match m.rule {
            Rule::None => z,
            Rule::Alibi => z + slope * (j as f64 - row as f64),
            Rule::Softcap(c) => f64::from(c) * (z / f64::from(c)).tanh(),
            Rule::Bias => z + f64::from(x.bias[row * bias_stride(n) + j].to_f32()),
        }
    };
    attend_row_with(
        q,
        &x.x.k,
        &x.x.v,
        n,
        |j| kvo + j * d,
        f64::from(scale(s)),
        rule,
    )
}

/// Relative L2 errors of `o` and `lse` against the float64 reference on
/// [`super::attn::sampled_rows`].
pub fn mod_errors<T: Half>(m: &ModShape, x: &ModInputs<T>, o: &[T], lse: &[f32]) -> (f64, f64) {
    errors_against(&m.shape, o, lse, |b, h, r| mod_reference_row(m, x, b, h, r))
}
