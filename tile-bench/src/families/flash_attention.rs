//! FlashAttention forward, `O = softmax(Q Kᵀ / √D [+ causal mask]) V`, and backward
//! (examples/flash_attention): the example's `attn::forward` (one kernel, `attn_fwd` for head
//! dimension 64, `attn_fwd_d128` for 128), which also writes each row's log-sum-exp, and its
//! `attn::backward` (three kernels: `delta = rowsum(dO ∘ O)`, then `dK` and `dV`, then `dQ`). One
//! form, `tile_fused`; the baseline's rows (`bench/python/attention.py`) are PyTorch's
//! `scaled_dot_product_attention` with each backend pinned, FlexAttention and Triton's
//! fused-attention tutorial.
//!
//! Row keys as `attention.py` writes them: variants `fwd`, `fwd_causal`, `bwd` and `bwd_causal`
//! with shape `[B, H, S, D]`, `gqa_fwd` (grouped-query heads, `Hq ≠ Hkv`) with shape `[B, Hq, Hkv, S, D]`;
//! dtypes `bf16` and `f16`. Timed shapes (a full GPU run): `fwd` and `fwd_causal` (and the same
//! `bwd` and `bwd_causal`) at B 4, H 32,
//! S in {4096, 16384, 1024, 1000, 4097}, D in {128, 64}, both dtypes; `gqa_fwd`
//! `[4, 32, 8, 4096, 128]` and `[4, 32, 1, 4096, 128]` bf16. `--quick` times `attention.py`'s
//! small shapes (`[1, 4, 256, 64]` f16, `[1, 4, 256, 128]` and `[1, 4, 1000, 128]` bf16 causal,
//! `gqa_fwd [1, 32, 8, 256, 128]` bf16), so a quick run joins a quick baseline; a full run checks
//! those and the example's awkward shapes (lengths 1, 17, 130, 1000, 4097; grouped heads 2:1, 4:1,
//! 4:1 and 32:1; causal and not; both dtypes) without timing them. The backward runs on the
//! shapes with `Hq = Hkv` (attention.py has no grouped-query backward): the grid, the three
//! small dense shapes and the awkward length 1. The interpreter's smoke test runs the
//! 256-token small shapes (the two dense ones and dropout's; keys a CPU baseline run has too)
//! and the awkward lengths 1 and 17;
//! the other two small shapes are each about 16 times the work of a 256-token one.
//!
//! Inputs: `attn::Inputs` (uniform in [-1, 1), seeded from the shape), shared by the causal and
//! the plain case of a shape. Check, before any timing: the output and the log-sum-exp of the rows
//! `attn::errors` checks (`attn::sampled_rows`: every row of small problems, else 64 rows over
//! heads and positions) against the example's float64 reference (`attn::reference_row`), computed
//! once per case; relative L2 error within the example's tolerances (output 4e-3 f16, 2e-2 bf16;
//! log-sum-exp 1e-5). FLOPs as `attention.py` and Triton's tutorial count them:
//! `4·B·Hq·S²·D`, half with the causal mask (`attn::Shape::flops`); rows carry TFLOP/s (as
//! `gflops`). Bytes as `attention.py` counts them: Q, K, V read and O written once (the
//! log-sum-exp's 4 bytes per query row, which the baseline's forward does not write, left out so
//! the two sides' byte counts agree).
//!
//! Backward: `dO` drawn with Q, K, V (`attn::Inputs`); the forward run once, untimed, in the
//! case's set-up (as `attention.py` runs it before timing its backward), then `attn::backward`
//! alone timed. Check, before any timing: `dQ`, `dK` and `dV` on sampled rows
//! (`attn::sampled_grads`: the `dQ` rows of `attn::sampled_rows` and as many key rows) against
//! the example's float64 gradients, computed from the inputs and the forward's `O` and
//! log-sum-exp (themselves checked on their sampled rows, as above), within the example's
//! tolerances (`attn::grad_tol`: 4e-3 f16, 2e-2 bf16). FLOPs `2.5 ×` the forward's
//! (`attn::Shape::bwd_flops`), bytes `8·B·H·S·D·size` (Q, K, V, O, dO read; dQ, dK, dV written),
//! as `attention.py` counts its `bwd` rows.
//!
//! GPU only (the example checks both on the interpreter): `varlen_fwd` and `varlen_fwd_causal`,
//! shape `[n, H, total, D]`: `attention.py`'s packed batch (`varlen_lengths`: 64 sequences of
//! 1..4096 tokens, 32 heads, D 128; `--quick`: 8 of 1..256, 4 heads), the example's
//! `varlen_forward`, checked on 4 rows of heads 0 and H−1 of every sequence (every row of
//! every head of the small batch), FLOPs summed over the sequences. `decode_paged16`, shape
//! `[B, Hq, Hkv, ctx, D]`: batch 64 (`--quick`: 4), 32 query heads on 8 key/value heads, D 128,
//! ctx in {1024, 4096, 8192, 16384, 32768} (`--quick`: 1024), every sequence `ctx` tokens in
//! pages of 16 in a shuffled order; the example's `decode` (split kernel and combine), checked
//! on every query head of the first and last sequence; no FLOPs, bytes = K and V plus `q` and `o`
//! (attention.py's count). Both bf16. `mod_window_l1024_r0`, `mod_alibi`, `mod_softcap20`,
//! `mod_bias`, shape `[B, H, S, D]`: attention.py's score modifiers at `[4, 32, 4096, 128]`
//! (`--quick`: `[1, 4, 256, 128]`) bf16, the example's `mod_forward` (a tile function per rule
//! handed to the row loop), checked on `attn::sampled_rows` against `mods::mod_reference_row`;
//! FLOPs `4·D` per (query, key) pair seen, bytes Q, K, V, O (plus the bias), as attention.py.
//!
//! Dropout (`--attn-parts dropout`): `fwd_dropout`, `fwd_causal_dropout`, `bwd_dropout` and
//! `bwd_causal_dropout` at `[4, 32, 4096, D]`, D in {128, 64} (`--quick`: `[1, 4, 256, 128]`),
//! bf16, `dropout_p` 0.1 (`attn::Dropout`, seeded from the shape): the same cases as above with
//! the example's dropout kernels, checked the same way against float64 with the same mask
//! (`attn::Dropout::keep` on the host). The baseline's rows check SDPA's dropout through what
//! structured inputs make of any mask (its docstring), since no reference can draw its mask.

use tile::{Buffer, Device};

use super::{i32_of, Job, Plan};
use crate::common::Half;
use crate::flash_attention::attn::{
    backward, forward, grad_tol, reference_row, sampled_grads, sampled_rows, Dropout, Grads,
    Inputs, Shape,
};
use crate::flash_attention::decode::{
    decode, decode_reference, DecodeBuffers, DecodeInputs, DecodeShape, PAGE,
};
use crate::flash_attention::mods::{mod_forward, mod_reference_row, ModInputs, ModShape, Rule};
use crate::flash_attention::varlen::{
    varlen_forward, varlen_lengths, varlen_reference_row, varlen_rows, VarlenInputs, VarlenShape,
};
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

const NAME: &str = "flash_attention";

/// Relative L2 tolerance of the log-sum-exp, as the example's.
const LSE_TOL: f64 = 1e-5;

/// The storage types of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    Bf16,
    F16,
}

impl Dtype {
    fn name(self) -> &'static str {
        match self {
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
        }
    }
}

/// One attention problem in one dtype and the masks it runs with: the cases that share inputs.
#[derive(Clone, Copy, Debug)]
struct Group {
    batch: usize,
    hq: usize,
    hkv: usize,
    n_ctx: usize,
    d: usize,
    dtype: Dtype,
    /// The causal flags, each a case (and a row key) of its own.
    causal: &'static [bool],
    /// Dropout on the probabilities ([`DROP_P`]; the `dropout` part's variants).
    dropout: bool,
}

/// The dropout part's `dropout_p`, as `attention.py`'s `DROP_P`.
const DROP_P: f64 = 0.1;

/// Plain and causal.
const BOTH: &[bool] = &[false, true];
/// Plain only.
const PLAIN: &[bool] = &[false];
/// Causal only.
const CAUSAL: &[bool] = &[true];

/// `[B, H, S, D]` in `dtype`, with the masks `causal`.
fn dense(b: usize, h: usize, s: usize, d: usize, dtype: Dtype, causal: &'static [bool]) -> Group {
    gqa(b, h, h, s, d, dtype, causal)
}

/// `[B, Hq, Hkv, S, D]` in `dtype`, with the masks `causal`.
fn gqa(
    batch: usize,
    hq: usize,
    hkv: usize,
    n_ctx: usize,
    d: usize,
    dtype: Dtype,
    causal: &'static [bool],
) -> Group {
    Group {
        batch,
        hq,
        hkv,
        n_ctx,
        d,
        dtype,
        causal,
        dropout: false,
    }
}

/// [`dense`] with dropout on the probabilities.
fn with_dropout(b: usize, h: usize, s: usize, d: usize, causal: &'static [bool]) -> Group {
    Group {
        dropout: true,
        ..dense(b, h, s, d, Dtype::Bf16, causal)
    }
}

impl Group {
    /// The example's shape of one case of the group.
    fn shape(&self, causal: bool) -> Shape {
        Shape {
            batch: self.batch,
            hq: self.hq,
            hkv: self.hkv,
            n_ctx: self.n_ctx,
            d: self.d,
            causal,
            dropout: self
                .dropout
                .then(|| Dropout::new(DROP_P, self.seed() as i32).ok())
                .flatten(),
        }
    }

    /// Grouped-query heads (the `gqa_fwd` variants and their five-number shape).
    fn is_gqa(&self) -> bool {
        self.hq != self.hkv
    }

    /// The row key's shape: `[B, H, S, D]`, or `[B, Hq, Hkv, S, D]` with grouped heads.
    fn key_shape(&self) -> Vec<i64> {
        let mut v = vec![self.batch, self.hq];
        if self.is_gqa() {
            v.push(self.hkv);
        }
        v.extend([self.n_ctx, self.d]);
        v.into_iter().map(|x| x as i64).collect()
    }

    /// The part of `attention.py` (`--attn-parts`) the group's forward rows belong to.
    fn part(&self) -> &'static str {
        if self.dropout {
            "dropout"
        } else if self.is_gqa() {
            "gqa"
        } else {
            "fwd"
        }
    }

    /// The part of `attention.py` the group's backward rows belong to.
    fn bwd_part(&self) -> &'static str {
        if self.dropout {
            "dropout"
        } else {
            "bwd"
        }
    }

    /// The backward's variant for one mask, as `attention.py` names it (dense heads only).
    fn bwd_variant(&self, causal: bool) -> &'static str {
        match (self.dropout, causal) {
            (false, false) => "bwd",
            (false, true) => "bwd_causal",
            (true, false) => "bwd_dropout",
            (true, true) => "bwd_causal_dropout",
        }
    }

    /// The forward's variant for one mask, as `attention.py` names it.
    fn fwd_variant(&self, causal: bool) -> &'static str {
        match (self.is_gqa(), causal, self.dropout) {
            (false, false, false) => "fwd",
            (false, true, false) => "fwd_causal",
            (true, false, _) => "gqa_fwd",
            (true, true, _) => "gqa_fwd_causal",
            (false, false, true) => "fwd_dropout",
            (false, true, true) => "fwd_causal_dropout",
        }
    }

    /// What the progress bar says, for the forward's rows (`fwd`) and the backward's (`bwd`).
    fn label(&self, fwd: bool, bwd: bool) -> String {
        let mut variants: Vec<&str> = Vec::new();
        if fwd {
            variants.extend(self.causal.iter().map(|&c| self.fwd_variant(c)));
        }
        if bwd {
            variants.extend(self.causal.iter().map(|&c| self.bwd_variant(c)));
        }
        let shape: Vec<String> = self.key_shape().iter().map(|x| x.to_string()).collect();
        format!(
            "{} {} {}",
            variants.join("+"),
            shape.join("x"),
            self.dtype.name()
        )
    }

    /// A seed from the problem's numbers (the masks share it: one set of inputs).
    fn seed(&self) -> u64 {
        [self.batch, self.hq, self.hkv, self.n_ctx, self.d]
            .iter()
            .fold(17u64, |s, &x| {
                s.wrapping_mul(1_000_003).wrapping_add(x as u64)
            })
    }
}

/// The full run's timed groups: `attention.py`'s fwd grid, which is its bwd grid too (its order: dtype, head dimension,
/// length; both masks of a length share inputs) and its two grouped-query shapes.
fn timed_groups() -> Vec<Group> {
    let mut v = Vec::new();
    for dtype in [Dtype::Bf16, Dtype::F16] {
        for d in [128, 64] {
            for s in [4096, 16384, 1024, 1000, 4097] {
                v.push(dense(4, 32, s, d, dtype, BOTH));
            }
        }
    }
    v.push(gqa(4, 32, 8, 4096, 128, Dtype::Bf16, PLAIN));
    v.push(gqa(4, 32, 1, 4096, 128, Dtype::Bf16, PLAIN));
    for d in [128, 64] {
        v.push(with_dropout(4, 32, 4096, d, BOTH));
    }
    v
}

/// `attention.py`'s small shapes (its `SMALL_FWD` and `SMALL_GQA`): what `--quick` times.
fn small_groups() -> Vec<Group> {
    vec![
        dense(1, 4, 256, 64, Dtype::F16, PLAIN),
        dense(1, 4, 256, 128, Dtype::Bf16, CAUSAL),
        dense(1, 4, 1000, 128, Dtype::Bf16, CAUSAL),
        gqa(1, 32, 8, 256, 128, Dtype::Bf16, PLAIN),
        with_dropout(1, 4, 256, 128, BOTH),
    ]
}

/// The example's awkward shapes: lengths that are not multiples of the blocks, one token,
/// grouped-query heads; both head dimensions, both masks, both dtypes. `gpu` adds the length 130
/// (two row blocks, the second of two rows; a few seconds each on the interpreter, which the
/// example's own interpreter run checks) and the example's GPU-only ones (lengths 1000 and
/// 4097).
fn awkward_groups(gpu: bool) -> Vec<Group> {
    let mut v = Vec::new();
    for d in [64, 128] {
        for dtype in [Dtype::F16, Dtype::Bf16] {
            v.push(gqa(1, 2, 2, 1, d, dtype, BOTH));
            v.push(gqa(2, 2, 1, 17, d, dtype, BOTH));
            if gpu {
                v.push(gqa(1, 4, 1, 130, d, dtype, BOTH));
                v.push(gqa(2, 8, 2, 1000, d, dtype, BOTH));
                v.push(gqa(1, 32, 1, 4097, d, dtype, BOTH));
            }
        }
    }
    v
}

/// Query rows (over batch and heads) of the largest small shape the interpreter runs: the two
/// 256-token small shapes of four heads (a few seconds each in a debug build), not the
/// 1000-token and the 32-head ones, each about 16 times their work.
const INTERPRETER_ROWS: usize = 1024;

/// The jobs of this family, one per [`Group`]: on a GPU, a full run checks the small and awkward
/// shapes and checks then times the fwd (and bwd) grid and the grouped-query shapes; `--quick` checks and
/// times the small shapes; the interpreter checks and times the small shapes of at most
/// [`INTERPRETER_ROWS`] query rows (so that a smoke test joins the baseline's on their keys) and
/// the awkward lengths 1 and 17. A group's job runs its forward cases, then (`Hq = Hkv` only) its
/// backward cases on the same inputs. `--attn-parts` keeps the rows of the parts it names (`gqa`
/// for grouped-query heads, `fwd` for the others' forward, `bwd` for their backward),
/// `--attn-dtypes` the grid's groups of the dtypes it names, as `attention.py` selects its cases.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let wants =
        |part: &str| plan.attn_parts.is_empty() || plan.attn_parts.iter().any(|p| p == part);
    let wants_dtype = |g: &Group| {
        g.is_gqa()
            || plan.attn_dtypes.is_empty()
            || plan.attn_dtypes.iter().any(|d| d == g.dtype.name())
    };
    let small = small_groups();
    let grid: Vec<Group> = timed_groups().into_iter().filter(wants_dtype).collect();
    let groups: Vec<(Group, bool)> = if !plan.gpu {
        let cheap = small
            .iter()
            .filter(|g| g.batch * g.hq * g.n_ctx <= INTERPRETER_ROWS);
        let v = cheap.copied().chain(awkward_groups(false));
        v.map(|g| (g, true)).collect()
    } else {
        let mut checks = small.clone();
        checks.extend(awkward_groups(true));
        plan.shapes(&checks, &small, &grid)
    };
    let mut jobs: Vec<Job> = groups
        .into_iter()
        .filter_map(|(g, timed)| {
            let fwd = wants(g.part());
            let bwd = !g.is_gqa() && wants(g.bwd_part());
            let parts = Parts { fwd, bwd };
            (fwd || bwd).then(|| {
                Job::new(NAME, g.label(fwd, bwd), timed, move |ctx| match g.dtype {
                    Dtype::Bf16 => bench::<tile::bf16>(ctx, g, timed, parts),
                    Dtype::F16 => bench::<tile::f16>(ctx, g, timed, parts),
                })
            })
        })
        .collect();
    // Decoding (GPU only: the example checks it on the interpreter): attention.py's small
    // batch, then its five context lengths.
    if plan.gpu && wants("decode") {
        let small = [(DECODE_SMALL_BATCH, 1024)];
        let big: Vec<(usize, usize)> = DECODE_CTX.iter().map(|&c| (DECODE_BATCH, c)).collect();
        for (batch, ctx, timed) in plan
            .shapes(&[], &small, &big)
            .into_iter()
            .map(|((b, c), t)| (b, c, t))
        {
            let label = format!("decode_paged{PAGE} {batch}x32x8x{ctx}x128 bf16");
            jobs.push(Job::new(NAME, label, timed, move |ctx_| {
                bench_decode(ctx_, batch, ctx, timed)
            }));
        }
    }
    // Variable lengths (GPU only, as decoding): attention.py's small batch (8 sequences of
    // 1..256, 4 heads), then its 64 sequences of 1..4096 with 32 heads; D 128, bf16, both masks.
    if plan.gpu && wants("varlen") {
        let small = [(8, 256, 4)];
        let big = [(64, 4096, 32)];
        for ((n, max_len, h), timed) in plan.shapes(&[], &small, &big) {
            let total: usize = varlen_lengths(n, max_len, VARLEN_SEED).iter().sum();
            let label = format!("varlen_fwd+varlen_fwd_causal {n}x{h}x{total}x128 bf16");
            jobs.push(Job::new(NAME, label, timed, move |ctx| {
                bench_varlen(ctx, n, max_len, h, timed)
            }));
        }
    }
    // Score modifiers (GPU only, as decoding): attention.py's small shape, then its timed one.
    if plan.gpu && wants("mods") {
        let small = [(1, 4, 256)];
        let big = [(4, 32, 4096)];
        for ((b, h, n), timed) in plan.shapes(&[], &small, &big) {
            let label = format!(
                "mod_window_l1024_r0+mod_alibi+mod_softcap20+mod_bias {b}x{h}x{n}x128 bf16"
            );
            jobs.push(Job::new(NAME, label, timed, move |ctx| {
                bench_mods(ctx, b, h, n, timed)
            }));
        }
    }
    jobs
}

/// attention.py's modifiers (`mods` part) on `[b, h, n, 128]` bf16: each rule a case with its
/// own inputs (the bias drawn only for the bias rule).
fn bench_mods(ctx: &mut Ctx, b: usize, h: usize, n: usize, timed: bool) -> Res<()> {
    let shape = Shape {
        batch: b,
        hq: h,
        hkv: h,
        n_ctx: n,
        d: 128,
        causal: false,
        dropout: None,
    };
    for (window, rule) in [
        (Some((1024, 0)), Rule::None),
        (None, Rule::Alibi),
        (None, Rule::Softcap(20.0)),
        (None, Rule::Bias),
    ] {
        let m = ModShape {
            shape,
            window,
            rule,
        };
        m.check()?;
        let x = ModInputs::<tile::bf16>::new(&m, 43);
        let rows = sampled_rows(&shape);
        let (mut want_o, mut want_lse) = (Vec::new(), Vec::new());
        for &(bb, hh, r) in &rows {
            let (o, l) = mod_reference_row(&m, &x, bb, hh, r);
            want_o.extend(o);
            want_lse.push(l);
        }
        let variant: &'static str = match rule {
            Rule::None => "mod_window_l1024_r0",
            Rule::Alibi => "mod_alibi",
            Rule::Softcap(_) => "mod_softcap20",
            Rule::Bias => "mod_bias",
        };
        debug_assert_eq!(variant, m.variant());
        let meta = Meta {
            kernel: NAME,
            variant: Some(variant),
            shape: [b, h, n, 128].map(|v| v as i64).to_vec(),
            dtype: "bf16",
            bytes: 4.0 * (shape.q_len() * 2) as f64 + (x.bias.len() * 2) as f64,
            flops: Some(m.flops()),
            timed,
        };
        let case = ModCase {
            m,
            x: &x,
            rows,
            want_o,
            want_lse,
        };
        ctx.bench(&meta, &case);
    }
    Ok(())
}

/// One modified case: the problem, its inputs and the float64 reference of the checked rows.
struct ModCase<'a> {
    m: ModShape,
    x: &'a ModInputs<tile::bf16>,
    rows: Vec<(usize, usize, usize)>,
    want_o: Vec<f64>,
    want_lse: Vec<f64>,
}

/// A modified case's device buffers (`bias` a one-element stand-in unless the rule reads it).
struct ModState {
    q: Buffer<tile::bf16>,
    k: Buffer<tile::bf16>,
    v: Buffer<tile::bf16>,
    slopes: Buffer<f32>,
    bias: Buffer<tile::bf16>,
    o: Buffer<tile::bf16>,
    lse: Buffer<f32>,
}

impl Case for ModCase<'_> {
    type State = ModState;

    fn setup(&self, dev: &Device) -> Res<ModState> {
        let x = &self.x;
        let bias = if x.bias.is_empty() {
            &x.x.q[..1]
        } else {
            &x.bias[..]
        };
        let s = &self.m.shape;
        Ok(ModState {
            q: dev.upload(&x.x.q)?,
            k: dev.upload(&x.x.k)?,
            v: dev.upload(&x.x.v)?,
            slopes: dev.upload(&x.slopes)?,
            bias: dev.upload(bias)?,
            o: dev.upload(&vec![tile::bf16::NAN; s.q_len()])?,
            lse: dev.upload(&vec![f32::NAN; s.batch * s.hq * s.n_ctx])?,
        })
    }

    fn run(&self, dev: &Device, st: &mut ModState, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => mod_forward(
                dev,
                &self.m,
                [&st.q, &st.k, &st.v],
                &st.slopes,
                &st.bias,
                &mut st.o,
                &mut st.lse,
            ),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, st: &ModState, _: Form) -> Res<Vec<OutErr>> {
        let s = &self.m.shape;
        let (o, lse) = (dev.download(&st.o)?, dev.download(&st.lse)?);
        let (mut got_o, mut got_lse) = (Vec::new(), Vec::new());
        for &(b, h, r) in &self.rows {
            let row = (b * s.hq + h) * s.n_ctx + r;
            got_o.extend(o[row * s.d..][..s.d].iter().map(|t| t.to_f32()));
            got_lse.push(lse[row]);
        }
        Ok(vec![
            compare("o", &got_o, &self.want_o, tile::bf16::TOL),
            compare("lse", &got_lse, &self.want_lse, LSE_TOL),
        ])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => format!(
                "1 kernel: {}, 128 query rows x 64-key blocks per program, 8 warps; the rule a \
                 tile function handed to the row loop{}",
                if self.m.rule == Rule::Bias {
                    "attn_fwd_bias (2 stages)"
                } else {
                    "attn_fwd_mod (3 stages)"
                },
                if self.m.window.is_some() {
                    "; key blocks outside every row's window skipped"
                } else {
                    ""
                }
            ),
            other => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}

/// attention.py's `VARLEN_SEED`: its lengths are `varlen_lengths(n, max_len, VARLEN_SEED)`.
const VARLEN_SEED: u64 = 12345;

/// The packed batch of `n` sequences of `1..=max_len` tokens, `h` heads of 128, bf16: the
/// plain and the causal case on the same inputs, keyed `[n, h, total, 128]` as attention.py's.
fn bench_varlen(ctx: &mut Ctx, n: usize, max_len: usize, h: usize, timed: bool) -> Res<()> {
    let lens = varlen_lengths(n, max_len, VARLEN_SEED);
    let s0 = VarlenShape {
        hq: h,
        hkv: h,
        d: 128,
        lens,
        causal: false,
    };
    s0.check()?;
    let x = VarlenInputs::<tile::bf16>::new(&s0, 41);
    for causal in [false, true] {
        let s = VarlenShape {
            causal,
            ..s0.clone()
        };
        let cu = s.cu_seqlens();
        let rows = varlen_rows(&s);
        let (mut want_o, mut want_lse) = (Vec::new(), Vec::new());
        for &r in &rows {
            let (o, l) = varlen_reference_row(&s, &x, &cu, r);
            want_o.extend(o);
            want_lse.push(l);
        }
        let meta = Meta {
            kernel: NAME,
            variant: Some(if causal {
                "varlen_fwd_causal"
            } else {
                "varlen_fwd"
            }),
            shape: [n, h, s.total(), s.d].map(|v| v as i64).to_vec(),
            dtype: "bf16",
            bytes: 4.0 * (s.total() * h * s.d * 2) as f64,
            flops: Some(s.flops()),
            timed,
        };
        let case = VarlenCase {
            s,
            x: &x,
            rows,
            want_o,
            want_lse,
        };
        ctx.bench(&meta, &case);
    }
    Ok(())
}

/// One packed case: the shape (with its mask), the inputs and the float64 reference of the
/// checked rows.
struct VarlenCase<'a> {
    s: VarlenShape,
    x: &'a VarlenInputs<tile::bf16>,
    rows: Vec<(usize, usize, usize)>,
    want_o: Vec<f64>,
    want_lse: Vec<f64>,
}

/// A packed case's device buffers.
struct VarlenState {
    q: Buffer<tile::bf16>,
    k: Buffer<tile::bf16>,
    v: Buffer<tile::bf16>,
    cu: Buffer<i32>,
    o: Buffer<tile::bf16>,
    lse: Buffer<f32>,
}

impl Case for VarlenCase<'_> {
    type State = VarlenState;

    fn setup(&self, dev: &Device) -> Res<VarlenState> {
        Ok(VarlenState {
            q: dev.upload(&self.x.q)?,
            k: dev.upload(&self.x.k)?,
            v: dev.upload(&self.x.v)?,
            cu: dev.upload(&self.s.cu_seqlens())?,
            o: dev.upload(&vec![tile::bf16::NAN; self.x.q.len()])?,
            lse: dev.upload(&vec![f32::NAN; self.s.hq * self.s.total()])?,
        })
    }

    fn run(&self, dev: &Device, st: &mut VarlenState, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => {
                let x = [&st.q, &st.k, &st.v];
                varlen_forward(dev, &self.s, x, &st.cu, &mut st.o, &mut st.lse)
            }
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, st: &VarlenState, _: Form) -> Res<Vec<OutErr>> {
        let s = &self.s;
        let cu = s.cu_seqlens();
        let (o, lse) = (dev.download(&st.o)?, dev.download(&st.lse)?);
        let (mut got_o, mut got_lse) = (Vec::new(), Vec::new());
        for &(i, h, r) in &self.rows {
            let tok = cu[i] as usize + r;
            got_o.extend(
                o[(tok * s.hq + h) * s.d..][..s.d]
                    .iter()
                    .map(|t| t.to_f32()),
            );
            got_lse.push(lse[h * s.total() + tok]);
        }
        Ok(vec![
            compare("o", &got_o, &self.want_o, tile::bf16::TOL),
            compare("lse", &got_lse, &self.want_lse, LSE_TOL),
        ])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => format!(
                "1 kernel: attn_fwd_varlen, 128 query rows x 64-key blocks of one sequence per \
                 program, 8 warps, 3 stages{}; programs past a sequence's end return",
                if self.s.causal { ", causal" } else { "" }
            ),
            other => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}

/// attention.py's decoding batch (`DECODE_BATCH`) and context lengths (`DECODE_CTX`), and its
/// small batch (`SMALL_DECODE`, at 1024 tokens); 32 query heads on 8 key/value heads of 128.
const DECODE_BATCH: usize = 64;
const DECODE_CTX: [usize; 5] = [1024, 4096, 8192, 16384, 32768];
const DECODE_SMALL_BATCH: usize = 4;

/// One decoding case, `[batch, 32, 8, ctx, 128]` bf16 in pages of 16: every sequence `ctx`
/// tokens long, pages in a shuffled order.
fn bench_decode(ctx: &mut Ctx, batch: usize, n_ctx: usize, timed: bool) -> Res<()> {
    let s = DecodeShape {
        hq: 32,
        hkv: 8,
        d: 128,
        lens: vec![n_ctx; batch],
    };
    let x = DecodeInputs::<tile::bf16>::new(&s, 29 + n_ctx as u64);
    // Every query head of the first and the last sequence, as attention.py checks.
    let seqs = if batch > 1 {
        vec![0, batch - 1]
    } else {
        vec![0]
    };
    let (mut want_o, mut want_lse) = (Vec::new(), Vec::new());
    for &b in &seqs {
        for h in 0..s.hq {
            let (o, l) = decode_reference(&s, &x, b, h);
            want_o.extend(o);
            want_lse.push(l);
        }
    }
    let meta = Meta {
        kernel: NAME,
        variant: Some("decode_paged16"),
        shape: [batch, s.hq, s.hkv, n_ctx, s.d].map(|v| v as i64).to_vec(),
        dtype: "bf16",
        bytes: s.bytes(2),
        flops: None,
        timed,
    };
    let case = DecodeCase {
        s,
        x,
        seqs,
        want_o,
        want_lse,
    };
    ctx.bench(&meta, &case);
    Ok(())
}

/// One decoding case: the shape, the inputs and the float64 reference of the checked rows.
struct DecodeCase {
    s: DecodeShape,
    x: DecodeInputs<tile::bf16>,
    seqs: Vec<usize>,
    want_o: Vec<f64>,
    want_lse: Vec<f64>,
}

impl Case for DecodeCase {
    type State = DecodeBuffers<tile::bf16>;

    fn setup(&self, dev: &Device) -> Res<Self::State> {
        Ok(DecodeBuffers::new(dev, &self.s, &self.x)?)
    }

    fn run(&self, dev: &Device, st: &mut Self::State, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => decode(dev, &self.s, st),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, st: &Self::State, _: Form) -> Res<Vec<OutErr>> {
        let s = &self.s;
        let (o, lse) = (dev.download(&st.o)?, dev.download(&st.lse)?);
        let (mut got_o, mut got_lse) = (Vec::new(), Vec::new());
        for &b in &self.seqs {
            for h in 0..s.hq {
                let row = b * s.hq + h;
                got_o.extend(o[row * s.d..(row + 1) * s.d].iter().map(|t| t.to_f32()));
                got_lse.push(lse[row]);
            }
        }
        Ok(vec![
            compare("o", &got_o, &self.want_o, tile::bf16::TOL),
            compare("lse", &got_lse, &self.want_lse, LSE_TOL),
        ])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => {
                let (splits, len) = self.s.splits();
                format!(
                    "2 kernels: attn_decode_split ({splits} splits of {len} tokens per sequence; \
                     the 4 query heads of a key/value head as 16 rows against 32-key blocks \
                     gathered through the block table, 4 warps), attn_decode_combine"
                )
            }
            other => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}

/// Which of a group's rows a job makes.
#[derive(Clone, Copy, Debug)]
struct Parts {
    /// The forward's.
    fwd: bool,
    /// The backward's.
    bwd: bool,
}

/// The cases of `g`: its inputs drawn once; for each mask, the forward's case then the
/// backward's (those `parts` asks for), each checked then (if `timed`) timed.
fn bench<T: Half>(ctx: &mut Ctx, g: Group, timed: bool, parts: Parts) -> Res<()> {
    let s0 = g.shape(false);
    i32_of(s0.q_len())?;
    i32_of(s0.batch * s0.hq * s0.n_ctx)?;
    let x = Inputs::<T>::new(&s0, g.seed());
    let es = std::mem::size_of::<T>() as f64;
    let (q_len, kv_len) = (s0.q_len() as f64, s0.kv_len() as f64);
    for &causal in g.causal {
        let s = g.shape(causal);
        let fwd = AttnCase::new(s, &x);
        if parts.fwd {
            let meta = Meta {
                kernel: NAME,
                variant: Some(g.fwd_variant(causal)),
                shape: g.key_shape(),
                dtype: T::NAME,
                bytes: es * (2.0 * q_len + 2.0 * kv_len),
                flops: Some(s.flops()),
                timed,
            };
            ctx.bench(&meta, &fwd);
        }
        if parts.bwd {
            let meta = Meta {
                kernel: NAME,
                variant: Some(g.bwd_variant(causal)),
                shape: g.key_shape(),
                dtype: T::NAME,
                bytes: es * 8.0 * q_len,
                flops: Some(s.bwd_flops()),
                timed,
            };
            ctx.bench(&meta, &BwdCase { fwd: &fwd });
        }
    }
    Ok(())
}

/// One forward case: the shape (with its mask), the inputs, and the float64 reference of the
/// checked rows.
struct AttnCase<'a, T> {
    s: Shape,
    x: &'a Inputs<T>,
    /// The checked `(batch, head, row)`s.
    rows: Vec<(usize, usize, usize)>,
    /// Their output rows, one after the other.
    want_o: Vec<f64>,
    /// Their log-sum-exps.
    want_lse: Vec<f64>,
}

impl<'a, T: Half> AttnCase<'a, T> {
    fn new(s: Shape, x: &'a Inputs<T>) -> AttnCase<'a, T> {
        let rows = sampled_rows(&s);
        let (mut want_o, mut want_lse) = (Vec::new(), Vec::new());
        for &(b, h, r) in &rows {
            let (o, l) = reference_row(&s, x, b, h, r);
            want_o.extend(o);
            want_lse.push(l);
        }
        AttnCase {
            s,
            x,
            rows,
            want_o,
            want_lse,
        }
    }
}

struct State<T: tile::Element> {
    q: Buffer<T>,
    k: Buffer<T>,
    v: Buffer<T>,
    o: Buffer<T>,
    lse: Buffer<f32>,
}

impl<T: Half> Case for AttnCase<'_, T> {
    type State = State<T>;

    fn setup(&self, dev: &Device) -> Res<State<T>> {
        let s = &self.s;
        Ok(State {
            q: dev.upload(&self.x.q)?,
            k: dev.upload(&self.x.k)?,
            v: dev.upload(&self.x.v)?,
            o: dev.upload(&vec![T::from_f32(f32::NAN); s.q_len()])?,
            lse: dev.upload(&vec![f32::NAN; s.batch * s.hq * s.n_ctx])?,
        })
    }

    fn run(&self, dev: &Device, st: &mut State<T>, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => forward(dev, &self.s, &st.q, &st.k, &st.v, &mut st.o, &mut st.lse),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, st: &State<T>, _: Form) -> Res<Vec<OutErr>> {
        let s = &self.s;
        let (o, lse) = (dev.download(&st.o)?, dev.download(&st.lse)?);
        let mut got_o = Vec::with_capacity(self.want_o.len());
        let mut got_lse = Vec::with_capacity(self.want_lse.len());
        for &(b, h, r) in &self.rows {
            let row = (b * s.hq + h) * s.n_ctx + r;
            got_o.extend(o[row * s.d..(row + 1) * s.d].iter().map(|t| t.to_f32()));
            got_lse.push(lse[row]);
        }
        Ok(vec![
            compare("o", &got_o, &self.want_o, T::TOL),
            compare("lse", &got_lse, &self.want_lse, LSE_TOL),
        ])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => {
                let kernel = match (self.s.dropout, self.s.d) {
                    (Some(_), _) => {
                        "attn_fwd_dropout (dropout_p 0.1, its Philox mask drawn \
                                     per block), 128 query rows x 32- or 64-key blocks \
                                     (autotuned)"
                    }
                    (None, 64) => "attn_fwd, 128 query rows x 64-key blocks",
                    (None, _) => "attn_fwd_d128, 128 query rows x 64-key blocks",
                };
                format!(
                    "1 kernel: {kernel}, 8 warps, 3 stages, \
                     online softmax{}; writes O and the log-sum-exp",
                    if self.s.causal {
                        ", key blocks up to the diagonal"
                    } else {
                        ""
                    }
                )
            }
            other => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}

/// One backward case: the forward's case of the same shape and mask (its inputs, with `dO`, and
/// the float64 reference of its checked rows).
struct BwdCase<'a, 'x, T> {
    fwd: &'a AttnCase<'x, T>,
}

struct BwdState<T: tile::Element> {
    /// The forward's buffers, `o` and `lse` written by the untimed forward.
    f: State<T>,
    d_o: Buffer<T>,
    dq: Buffer<T>,
    dk: Buffer<T>,
    dv: Buffer<T>,
    delta: Buffer<f32>,
}

impl<T: Half> Case for BwdCase<'_, '_, T> {
    type State = BwdState<T>;

    /// The forward's state, the forward run once (untimed), `dO` uploaded and the gradients and
    /// `delta` poisoned.
    fn setup(&self, dev: &Device) -> Res<BwdState<T>> {
        let s = &self.fwd.s;
        let mut f = self.fwd.setup(dev)?;
        forward(dev, s, &f.q, &f.k, &f.v, &mut f.o, &mut f.lse)?;
        let nan = |n: usize| vec![T::from_f32(f32::NAN); n];
        Ok(BwdState {
            f,
            d_o: dev.upload(&self.fwd.x.d_o)?,
            dq: dev.upload(&nan(s.q_len()))?,
            dk: dev.upload(&nan(s.kv_len()))?,
            dv: dev.upload(&nan(s.kv_len()))?,
            delta: dev.upload(&vec![f32::NAN; s.batch * s.hq * s.n_ctx])?,
        })
    }

    fn run(&self, dev: &Device, st: &mut BwdState<T>, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => {
                let g = Grads {
                    o: &st.f.o,
                    lse: &st.f.lse,
                    d_o: &st.d_o,
                    dq: &mut st.dq,
                    dk: &mut st.dk,
                    dv: &mut st.dv,
                    delta: &mut st.delta,
                };
                backward(dev, &self.fwd.s, &st.f.q, &st.f.k, &st.f.v, g)
            }
            other => Err(not_a_form(other)),
        }
    }

    /// The forward's `O` and log-sum-exp on their sampled rows (the gradients' reference is
    /// computed from them), then `dQ`, `dK`, `dV` on theirs.
    fn verify(&self, dev: &Device, st: &BwdState<T>, form: Form) -> Res<Vec<OutErr>> {
        let mut errs = self.fwd.verify(dev, &st.f, form)?;
        let (s, x) = (&self.fwd.s, self.fwd.x);
        let (o, lse) = (dev.download(&st.f.o)?, dev.download(&st.f.lse)?);
        let (dq, dk, dv) = (
            dev.download(&st.dq)?,
            dev.download(&st.dk)?,
            dev.download(&st.dv)?,
        );
        let grads = sampled_grads(s, x, &o, &lse, &dq, &dk, &dv);
        for (name, (got, want)) in ["dq", "dk", "dv"].into_iter().zip(grads) {
            errs.push(compare(name, &got, &want, grad_tol::<T>()));
        }
        Ok(errs)
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => {
                let (dkdv, dq) = match (self.fwd.s.dropout, self.fwd.s.d) {
                    (Some(_), _) => ("attn_bwd_dkdv_dropout", "attn_bwd_dq_dropout"),
                    (None, 64) => ("attn_bwd_dkdv", "attn_bwd_dq"),
                    (None, _) => ("attn_bwd_dkdv_d128", "attn_bwd_dq_d128"),
                };
                format!(
                    "3 kernels after one untimed forward: attn_bwd_preprocess (delta = \
                     rowsum(dO*O)), {dkdv} (key blocks over query blocks), {dq} (query rows \
                     over key blocks); block sizes and warps autotuned per shape{}",
                    if self.fwd.s.causal {
                        ", blocks up to the diagonal"
                    } else {
                        ""
                    }
                )
            }
            other => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(gpu: bool, quick: bool, parts: &[&str], dtypes: &[&str]) -> Vec<String> {
        let plan = Plan {
            gpu,
            quick,
            attn_parts: parts.iter().map(|s| s.to_string()).collect(),
            attn_dtypes: dtypes.iter().map(|s| s.to_string()).collect(),
        };
        jobs(&plan).into_iter().map(|j| j.label).collect()
    }

    #[test]
    fn jobs_cover_attention_py_keys_and_select_parts_and_dtypes() {
        let full = labels(true, false, &[], &[]);
        let timed: Vec<&String> = full.iter().filter(|l| !l.ends_with("(check)")).collect();
        // 5 lengths x 2 head dimensions x 2 dtypes, both masks each; two grouped-query shapes;
        // two dropout shapes; one packed batch (both masks); five decoding lengths; the
        // modifiers.
        assert_eq!(timed.len(), 22 + 2 + 1 + 5 + 1);
        assert_eq!(full.len() - timed.len(), 5 + 20);
        assert!(full.contains(
            &"flash_attention gqa_fwd+gqa_fwd_causal 1x4x1x130x64 f16 (check)".to_string()
        ));
        assert!(timed.contains(
            &&"flash_attention fwd+fwd_causal+bwd+bwd_causal 4x32x16384x128 bf16".to_string()
        ));
        assert!(timed.contains(&&"flash_attention gqa_fwd 4x32x1x4096x128 bf16".to_string()));

        let quick = labels(true, true, &[], &[]);
        assert_eq!(
            quick,
            [
                "fwd+bwd 1x4x256x64 f16",
                "fwd_causal+bwd_causal 1x4x256x128 bf16",
                "fwd_causal+bwd_causal 1x4x1000x128 bf16",
                "gqa_fwd 1x32x8x256x128 bf16",
                "fwd_dropout+fwd_causal_dropout+bwd_dropout+bwd_causal_dropout 1x4x256x128 bf16",
                "decode_paged16 4x32x8x1024x128 bf16",
                "varlen_fwd+varlen_fwd_causal 8x4x1011x128 bf16",
                "mod_window_l1024_r0+mod_alibi+mod_softcap20+mod_bias 1x4x256x128 bf16",
            ]
            .map(|l| format!("flash_attention {l}"))
        );

        let part = labels(true, false, &["fwd"], &["bf16"]);
        let timed: Vec<&String> = part.iter().filter(|l| !l.ends_with("(check)")).collect();
        assert_eq!(timed.len(), 10);
        assert!(timed
            .iter()
            .all(|l| l.contains(" fwd+fwd_causal ") && l.ends_with(" bf16")));
        // The backward: the grid's dense shapes, the small ones and the awkward length 1.
        let bwd = labels(true, false, &["bwd"], &["f16"]);
        let (timed, checks): (Vec<&String>, Vec<&String>) =
            bwd.iter().partition(|l| !l.ends_with("(check)"));
        assert_eq!((timed.len(), checks.len()), (10, 3 + 4));
        assert!(bwd.iter().all(|l| l.contains(" bwd")));
        assert!(timed
            .iter()
            .all(|l| l.contains(" bwd+bwd_causal ") && l.ends_with(" f16")));
        assert!(checks.contains(&&"flash_attention bwd+bwd_causal 1x2x1x128 bf16 (check)".into()));
        let gqa = labels(true, false, &["gqa"], &["f16"]);
        assert!(gqa.iter().all(|l| l.contains("gqa_fwd")));
        assert_eq!(gqa.iter().filter(|l| !l.ends_with("(check)")).count(), 2);
        assert_eq!(
            labels(true, false, &["varlen"], &[]),
            ["flash_attention varlen_fwd+varlen_fwd_causal 64x32x141380x128 bf16"]
        );
        assert_eq!(
            labels(true, true, &["varlen"], &[]),
            ["flash_attention varlen_fwd+varlen_fwd_causal 8x4x1011x128 bf16"]
        );
        assert_eq!(
            labels(true, false, &["mods"], &[]),
            ["flash_attention mod_window_l1024_r0+mod_alibi+mod_softcap20+mod_bias 4x32x4096x128 bf16"]
        );
        // The small shape checked, then the two timed ones.
        assert_eq!(
            labels(true, false, &["dropout"], &[]),
            [
                "1x4x256x128 bf16 (check)",
                "4x32x4096x128 bf16",
                "4x32x4096x64 bf16"
            ]
            .map(|l| {
                format!(
                    "flash_attention fwd_dropout+fwd_causal_dropout+bwd_dropout+\
                     bwd_causal_dropout {l}"
                )
            })
        );
        let decode = labels(true, false, &["decode"], &[]);
        assert_eq!(decode.len(), 5);
        assert!(decode.contains(&"flash_attention decode_paged16 64x32x8x32768x128 bf16".into()));
        assert_eq!(
            labels(true, true, &["decode"], &[]),
            ["flash_attention decode_paged16 4x32x8x1024x128 bf16"]
        );

        // The interpreter: the three 256-token small shapes (one with dropout) and lengths 1
        // and 17.
        let interp = labels(false, false, &[], &[]);
        assert_eq!(interp.len(), 3 + 8);
        assert_eq!(labels(false, false, &["bwd"], &[]).len(), 2 + 4);
    }

    #[test]
    fn flops_and_keys_are_attention_py_s() {
        let g = dense(4, 32, 4096, 128, Dtype::Bf16, BOTH);
        assert_eq!(g.key_shape(), vec![4, 32, 4096, 128]);
        assert_eq!(
            g.shape(false).flops(),
            4.0 * 4.0 * 32.0 * 4096.0 * 4096.0 * 128.0
        );
        assert_eq!(g.shape(true).flops(), g.shape(false).flops() / 2.0);
        let q = gqa(4, 32, 8, 4096, 128, Dtype::Bf16, PLAIN);
        assert_eq!(q.key_shape(), vec![4, 32, 8, 4096, 128]);
        assert_eq!((q.fwd_variant(false), q.part()), ("gqa_fwd", "gqa"));
        assert_eq!(g.shape(true).bwd_flops(), 2.5 * g.shape(true).flops());
        assert_eq!(
            (q.bwd_variant(false), q.bwd_variant(true)),
            ("bwd", "bwd_causal")
        );
        let p = with_dropout(4, 32, 4096, 64, BOTH);
        assert_eq!(
            (
                p.fwd_variant(true),
                p.bwd_variant(false),
                p.part(),
                p.bwd_part()
            ),
            ("fwd_causal_dropout", "bwd_dropout", "dropout", "dropout")
        );
        let dr = p
            .shape(false)
            .dropout
            .expect("a dropout group's shape drops");
        assert_eq!(dr.thresh, (DROP_P * 65536.0).round() as i32);
        assert_eq!(g.shape(false).dropout, None);
    }
}
