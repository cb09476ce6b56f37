//! Per-head RMSNorm of q and k, then neox RoPE, in place in a packed bf16 qkv buffer, eps = 1e-6
//! (examples/qk_norm_rope): fused against norm then rope. qkv in [-2, 2), weights in [0.5, 1.5),
//! random positions below `max_pos`. The shape is `[tokens, q_heads, kv_heads, head_dim]`, as the
//! baseline writes it. Checked: the q and k heads (1e-2) and the v heads (untouched, bit for bit).

use tile::{bf16, Buffer, Device};

use super::{Job, Plan};
use crate::measure::{compare, exact, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};
use crate::qk_norm_rope::{fused, unfused, Shape, Tables, HEAD_DIM};
use crate::qk_norm_rope_host::{host, Host};

const NAME: &str = "qk_norm_rope";
const EPS: f32 = 1e-6;

/// The jobs of this family; shapes are `(tokens, q_heads, kv_heads, max_pos)`.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let small = [(1, 1, 1, 1), (3, 4, 2, 17), (17, 8, 1, 100)];
    plan.shapes(&small, &small, &[(8192, 32, 8, 8192)])
        .into_iter()
        .map(|((tokens, q_heads, kv_heads, max_pos), timed)| {
            let shape = Shape {
                tokens,
                q_heads,
                kv_heads,
                max_pos,
            };
            let label = format!("{tokens} tokens, {q_heads}+{kv_heads} heads");
            Job::new(NAME, label, timed, move |ctx| bench(ctx, shape, timed))
        })
        .collect()
}

/// The q and k heads after norm and rope (the normalized head rounded to bf16, as vLLM and both
/// kernels do), in f64, token by token and head by head.
fn reference(s: Shape, h: &Host) -> Vec<f64> {
    let f = |v: bf16| v.to_f64();
    let heads = (s.q_heads + s.kv_heads) as usize;
    let mut out = Vec::with_capacity(s.tokens as usize * heads * 128);
    for t in 0..s.tokens as usize {
        for head in 0..heads {
            let base = t * s.stride() as usize + head * 128;
            let x: Vec<f64> = (0..128).map(|i| f(h.qkv[base + i])).collect();
            let w = if head < s.q_heads as usize {
                &h.qw
            } else {
                &h.kw
            };
            let r = 1.0 / (x.iter().map(|v| v * v).sum::<f64>() / 128.0 + EPS as f64).sqrt();
            let y: Vec<f64> = (0..128)
                .map(|i| bf16::from_f64(x[i] * r * f(w[i])).to_f64())
                .collect();
            let p = h.positions[t] as usize * 128;
            let (c, sn) = (&h.cos_sin[p..p + 64], &h.cos_sin[p + 64..p + 128]);
            out.extend((0..64).map(|i| y[i] * f(c[i]) - y[64 + i] * f(sn[i])));
            out.extend((0..64).map(|i| y[64 + i] * f(c[i]) + y[i] * f(sn[i])));
        }
    }
    out
}

/// Splits a downloaded qkv into its q/k heads (widened) and its v heads.
fn split(s: Shape, qkv: &[bf16]) -> (Vec<f32>, Vec<bf16>) {
    let stride = s.stride() as usize;
    let v0 = ((s.q_heads + s.kv_heads) * HEAD_DIM) as usize;
    let mut qk = Vec::with_capacity(s.tokens as usize * v0);
    let mut v = Vec::with_capacity(s.tokens as usize * (stride - v0));
    for tok in qkv.chunks(stride) {
        qk.extend(tok[..v0].iter().map(|e| e.to_f32()));
        v.extend_from_slice(&tok[v0..]);
    }
    (qk, v)
}

fn bench(ctx: &mut Ctx, s: Shape, timed: bool) -> Res<()> {
    if s.tokens < 1 || s.q_heads < 1 || s.kv_heads < 0 || s.max_pos < 1 {
        return Err(format!("bad qk_norm_rope shape {s:?}").into());
    }
    let h = host(
        s.tokens,
        s.stride(),
        s.max_pos,
        (s.tokens * 7 + s.q_heads) as u64,
    );
    let want = reference(s, &h);
    let (_, v) = split(s, &h.qkv);
    let heads = (s.tokens * (s.q_heads + s.kv_heads) * HEAD_DIM) as f64;
    let meta = Meta {
        kernel: NAME,
        variant: None,
        shape: [s.tokens, s.q_heads, s.kv_heads, HEAD_DIM]
            .iter()
            .map(|&d| d as i64)
            .collect(),
        dtype: "bf16",
        // Minimal traffic: the q and k heads read and written once, positions and the token's
        // cos/sin row once per token, both weights once.
        bytes: 2.0 * 2.0 * heads + s.tokens as f64 * (4.0 + 2.0 * 128.0) + 2.0 * 2.0 * 128.0,
        flops: None,
        timed,
    };
    ctx.bench(&meta, &QkCase { s, h, want, v });
    Ok(())
}

struct QkCase {
    s: Shape,
    h: Host,
    want: Vec<f64>,
    v: Vec<bf16>,
}

struct State {
    qkv: Buffer<bf16>,
    t: Tables,
}

impl Case for QkCase {
    type State = State;

    fn setup(&self, dev: &Device) -> Res<State> {
        Ok(State {
            qkv: dev.upload(&self.h.qkv)?,
            t: Tables {
                positions: dev.upload(&self.h.positions)?,
                cos_sin: dev.upload(&self.h.cos_sin)?,
                qw: dev.upload(&self.h.qw)?,
                kw: dev.upload(&self.h.kw)?,
            },
        })
    }

    fn run(&self, dev: &Device, st: &mut State, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => fused(dev, self.s, &mut st.qkv, &st.t, EPS),
            Form::Unfused => unfused(dev, self.s, &mut st.qkv, &st.t, EPS),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, st: &State, _: Form) -> Res<Vec<OutErr>> {
        let (qk, v) = split(self.s, &dev.download(&st.qkv)?);
        Ok(vec![
            compare("qk", &qk, &self.want, 1e-2),
            exact("v (must be untouched)", v == self.v),
        ])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => "1 kernel, program (8 q/k heads, token), in place".into(),
            Form::Unfused => {
                "2 kernels: per-head RMSNorm, then RoPE (program per head and token)".into()
            }
            other => not_a_form(other).to_string(),
        }
    }
}
