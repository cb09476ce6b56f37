//! `out = (x + y) * z`, f32 (examples/fused_add_mul): the fused kernel against `add` then `mul`.
//! x, y in [-1, 1), z in [0.5, 2); 16 bytes per element.

use tile::{cdiv, Buffer, Device, Grid};

use super::{i32_of, Job, Plan};
use crate::common::Rng;
use crate::fused_add_mul::{add, add_mul, mul};
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

const NAME: &str = "fused_add_mul";

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let shapes = plan.shapes(&[1, 17, 1_000_003], &[1, 17, 5003], &[1 << 27]);
    shapes
        .into_iter()
        .map(|(n, timed)| {
            Job::new(NAME, format!("n={n}"), timed, move |ctx| {
                bench(ctx, n, timed)
            })
        })
        .collect()
}

fn bench(ctx: &mut Ctx, n: usize, timed: bool) -> Res<()> {
    let mut rng = Rng::new(n as u64);
    let (x, y, z) = (
        rng.vec(n, -1.0, 1.0),
        rng.vec(n, -1.0, 1.0),
        rng.vec(n, 0.5, 2.0),
    );
    let want = (0..n)
        .map(|i| (x[i] as f64 + y[i] as f64) * z[i] as f64)
        .collect();
    let case = AddMul {
        n: i32_of(n)?,
        x,
        y,
        z,
        want,
    };
    let meta = Meta {
        kernel: NAME,
        variant: None,
        shape: vec![n as i64],
        dtype: "f32",
        bytes: 16.0 * n as f64,
        flops: None,
        timed,
    };
    ctx.bench(&meta, &case);
    Ok(())
}

struct AddMul {
    n: i32,
    x: Vec<f32>,
    y: Vec<f32>,
    z: Vec<f32>,
    want: Vec<f64>,
}

struct State {
    x: Buffer<f32>,
    y: Buffer<f32>,
    z: Buffer<f32>,
    tmp: Buffer<f32>,
    out: Buffer<f32>,
}

impl Case for AddMul {
    type State = State;

    fn setup(&self, dev: &Device) -> Res<State> {
        let nan = vec![f32::NAN; self.x.len()];
        Ok(State {
            x: dev.upload(&self.x)?,
            y: dev.upload(&self.y)?,
            z: dev.upload(&self.z)?,
            tmp: dev.upload(&nan)?,
            out: dev.upload(&nan)?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State, form: Form) -> Result<(), tile::Error> {
        let (n, g) = (self.n, Grid::x(cdiv(self.n, 1024)));
        match form {
            Form::Fused => add_mul::launch(dev, g, &s.x, &s.y, &s.z, &mut s.out, n),
            Form::Unfused => {
                add::launch(dev, g, &s.x, &s.y, &mut s.tmp, n)?;
                mul::launch(dev, g, &s.tmp, &s.z, &mut s.out, n)
            }
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State, _: Form) -> Res<Vec<OutErr>> {
        Ok(vec![compare(
            "out",
            &dev.download(&s.out)?,
            &self.want,
            1e-6,
        )])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => "1 kernel (add_mul), 1024 elements per program".into(),
            Form::Unfused => "2 kernels: add, mul (temporary in memory)".into(),
            other => not_a_form(other).to_string(),
        }
    }
}
