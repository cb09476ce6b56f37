//! Row mean centering, `y = x − mean(row)`, f32 (examples/mean_center): fused against row mean,
//! then subtract. x in [-1, 3).

use tile::{Buffer, Device};

use super::{i32_of, rc, Job, Plan};
use crate::common::Rng;
use crate::mean_center::{fused, unfused};
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

const NAME: &str = "mean_center";

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let checks = [(1, 1), (3, 17), (1, 1000), (2, 4096), (2, 5000), (1, 8192)];
    let small = [(1, 1), (3, 17), (2, 4096), (2, 5000)];
    plan.shapes(&checks, &small, &[(16384, 4096)])
        .into_iter()
        .map(|(s, timed)| Job::new(NAME, rc(s), timed, move |ctx| bench(ctx, s, timed)))
        .collect()
}

fn reference(x: &[f32], n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        out.extend(row.iter().map(|&v| v as f64 - mean));
    }
    out
}

fn bench(ctx: &mut Ctx, (rows, n): (usize, usize), timed: bool) -> Res<()> {
    let x = Rng::new((rows * 31 + n) as u64).vec(rows * n, -1.0, 3.0);
    let want = reference(&x, n);
    let case = MeanCase {
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
        // Minimal traffic: read x once, write y once.
        bytes: 2.0 * 4.0 * (rows * n) as f64,
        flops: None,
        timed,
    };
    ctx.bench(&meta, &case);
    Ok(())
}

struct MeanCase {
    x: Vec<f32>,
    want: Vec<f64>,
    rows: i32,
    n: i32,
}

struct State {
    x: Buffer<f32>,
    mean: Buffer<f32>,
    y: Buffer<f32>,
}

impl Case for MeanCase {
    type State = State;

    fn setup(&self, dev: &Device) -> Res<State> {
        Ok(State {
            x: dev.upload(&self.x)?,
            mean: dev.upload(&vec![f32::NAN; self.rows as usize])?,
            y: dev.upload(&vec![f32::NAN; self.x.len()])?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => fused(dev, &s.x, &mut s.y, self.rows, self.n),
            Form::Unfused => unfused(dev, &s.x, &mut s.mean, &mut s.y, self.rows, self.n),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State, _: Form) -> Res<Vec<OutErr>> {
        Ok(vec![compare("y", &dev.download(&s.y)?, &self.want, 1e-5)])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => "1 kernel, 1 program per row".into(),
            Form::Unfused => "2 kernels: row mean, subtract".into(),
            other => not_a_form(other).to_string(),
        }
    }
}
