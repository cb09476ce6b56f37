//! Softmax regression, `probs = softmax(x @ w)`, f32 (examples/softmax_regression_simple): fused
//! against matmul then row softmax. x in [-1, 1), w in [-0.5, 0.5). Not in the baseline script;
//! the shape is `[batch, dim, classes]`, and rows carry GFLOP/s of the matmul besides GB/s of the
//! minimal traffic (x and w read once, probs written once).

use tile::{Buffer, Device};

use super::{i32_of, Job, Plan};
use crate::common::Rng;
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};
use crate::softmax_regression_simple::{fused, unfused};

const NAME: &str = "softmax_regression_simple";

/// The jobs of this family; shapes are `(batch, dim, classes)`.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let small = [
        (1, 1, 1),
        (17, 33, 10),
        (5, 100, 17),
        (33, 64, 64),
        (3, 70, 100),
    ];
    let big = [(64, 128, 10), (256, 512, 50), (1024, 1024, 100)];
    plan.shapes(&small, &small, &big)
        .into_iter()
        .map(|(s, timed)| {
            let label = format!("{}x{}x{}", s.0, s.1, s.2);
            Job::new(NAME, label, timed, move |ctx| bench(ctx, s, timed))
        })
        .collect()
}

fn bench(ctx: &mut Ctx, (b, d, c): (usize, usize, usize), timed: bool) -> Res<()> {
    let mut r = Rng::new((b * 131 + d * 7 + c) as u64);
    let x = r.vec(b * d, -1.0, 1.0);
    let w = r.vec(d * c, -0.5, 0.5);
    let want = crate::softmax_regression_reference::softmax_regression(&x, &w, (b, d, c));
    let shape = (i32_of(b)?, i32_of(d)?, i32_of(c)?);
    i32_of(b * d)?;
    i32_of(d * c)?;
    let meta = Meta {
        kernel: NAME,
        variant: None,
        shape: vec![b as i64, d as i64, c as i64],
        dtype: "f32",
        bytes: 4.0 * (b * d + d * c + b * c) as f64,
        flops: Some(2.0 * b as f64 * d as f64 * c as f64),
        timed,
    };
    ctx.bench(&meta, &RegCase { x, w, want, shape });
    Ok(())
}

struct RegCase {
    x: Vec<f32>,
    w: Vec<f32>,
    want: Vec<f64>,
    shape: (i32, i32, i32),
}

struct State {
    x: Buffer<f32>,
    w: Buffer<f32>,
    logits: Buffer<f32>,
    probs: Buffer<f32>,
}

impl Case for RegCase {
    type State = State;

    fn setup(&self, dev: &Device) -> Res<State> {
        let nan = vec![f32::NAN; self.want.len()];
        Ok(State {
            x: dev.upload(&self.x)?,
            w: dev.upload(&self.w)?,
            logits: dev.upload(&nan)?,
            probs: dev.upload(&nan)?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => fused(dev, &s.x, &s.w, &mut s.probs, self.shape),
            Form::Unfused => unfused(dev, &s.x, &s.w, &mut s.logits, &mut s.probs, self.shape),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State, _: Form) -> Res<Vec<OutErr>> {
        Ok(vec![compare(
            "probs",
            &dev.download(&s.probs)?,
            &self.want,
            1e-5,
        )])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => "1 kernel: 16 rows per program, dot over 32-wide slices, softmax".into(),
            Form::Unfused => "2 kernels: matmul (logits in memory), row softmax".into(),
            other => not_a_form(other).to_string(),
        }
    }
}
