//! Softmax over rows, f32 (examples/fused_softmax): fused against row max, exp(x − max), row sum,
//! divide. x in [-4, 4).

use tile::{Buffer, Device};

use super::{i32_of, rc, Job, Plan};
use crate::common::Rng;
use crate::fused_softmax::{fused, unfused, Scratch};
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

const NAME: &str = "fused_softmax";

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let small = [(1, 1), (3, 17), (4, 1000), (2, 5000)];
    let big = [(1024, 512), (16384, 4096), (4096, 32768)];
    plan.shapes(&small, &small, &big)
        .into_iter()
        .map(|(s, timed)| Job::new(NAME, rc(s), timed, move |ctx| bench(ctx, s, timed)))
        .collect()
}

fn reference(x: &[f32], n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        out.extend(row.iter().map(|&v| (v as f64 - m).exp() / s));
    }
    out
}

fn bench(ctx: &mut Ctx, (rows, n): (usize, usize), timed: bool) -> Res<()> {
    let x = Rng::new((rows * 31 + n) as u64).vec(rows * n, -4.0, 4.0);
    let want = reference(&x, n);
    let case = SoftmaxCase {
        x,
        want,
        rows: i32_of(rows)?,
        n: i32_of(n)?,
    };
    i32_of(rows * n)?;
    let meta = Meta {
        kernel: NAME,
        variant: None,
        shape: vec![rows as i64, n as i64],
        dtype: "f32",
        bytes: 2.0 * 4.0 * (rows * n) as f64,
        flops: None,
        timed,
    };
    ctx.bench(&meta, &case);
    Ok(())
}

struct SoftmaxCase {
    x: Vec<f32>,
    want: Vec<f64>,
    rows: i32,
    n: i32,
}

struct State {
    x: Buffer<f32>,
    out: Buffer<f32>,
    scratch: Scratch,
}

impl Case for SoftmaxCase {
    type State = State;

    fn setup(&self, dev: &Device) -> Res<State> {
        let nan = vec![f32::NAN; self.x.len()];
        let rows = self.rows as usize;
        Ok(State {
            x: dev.upload(&self.x)?,
            out: dev.upload(&nan)?,
            scratch: Scratch {
                m: dev.upload(&vec![f32::NAN; rows])?,
                y: dev.upload(&nan)?,
                s: dev.upload(&vec![f32::NAN; rows])?,
            },
        })
    }

    fn run(&self, dev: &Device, s: &mut State, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => fused(dev, &s.x, &mut s.out, self.rows, self.n),
            Form::Unfused => unfused(dev, &s.x, &mut s.scratch, &mut s.out, self.rows, self.n),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State, _: Form) -> Res<Vec<OutErr>> {
        Ok(vec![compare(
            "out",
            &dev.download(&s.out)?,
            &self.want,
            1e-5,
        )])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => "1 kernel, 1 program per row".into(),
            Form::Unfused => "4 kernels: row max, exp(x - max), row sum, divide".into(),
            other => not_a_form(other).to_string(),
        }
    }
}
