//! vLLM's `act_and_mul` on bf16, `out[r, j] = act(x[r, j]) * x[r, d + j]`, act = SiLU or GELU (erf)
//! (examples/act_and_mul): fused against the activation into a bf16 temporary, then the multiply.
//! x in [-4, 4); the shape is the input's, `[rows, 2d]`, as the baseline writes it.

use tile::{bf16, Buffer, Device};

use super::{i32_of, Job, Plan};
use crate::act_and_mul::{fused, unfused, Act};
use crate::common::Rng;
use crate::measure::{compare, fetch, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

const NAME: &str = "act_and_mul";

/// The jobs of this family; shapes are `(rows, d)`.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let checks = [
        (1, 1),
        (1, 17),
        (17, 1),
        (3, 1000),
        (5, 1023),
        (2, 1025),
        (1, 2048),
        (1000, 1000),
    ];
    let small = [(1, 1), (17, 1), (5, 1023), (2, 1025)];
    let shapes = plan.shapes(&checks, &small, &[(8192, 14336)]);
    shapes
        .into_iter()
        .map(|((rows, d), timed)| {
            let label = format!("{rows}x(2x{d})");
            Job::new(NAME, label, timed, move |ctx| bench(ctx, rows, d, timed))
        })
        .collect()
}

/// `act(a) * b` in f64.
fn reference(act: Act, a: f64, b: f64) -> f64 {
    let y = match act {
        Act::Silu => a / (1.0 + (-a).exp()),
        Act::Gelu => 0.5 * a * (1.0 + libm::erf(a / std::f64::consts::SQRT_2)),
    };
    y * b
}

fn variant(act: Act) -> &'static str {
    match act {
        Act::Silu => "silu",
        Act::Gelu => "gelu",
    }
}

struct Host {
    x: Vec<bf16>,
    rows: i32,
    d: i32,
}

fn bench(ctx: &mut Ctx, rows: usize, d: usize, timed: bool) -> Res<()> {
    let x: Vec<bf16> = Rng::new((rows * 7919 + d) as u64)
        .vec(rows * 2 * d, -4.0, 4.0)
        .into_iter()
        .map(bf16::from_f32)
        .collect();
    let host = Host {
        x,
        rows: i32_of(rows)?,
        d: i32_of(d)?,
    };
    i32_of(rows * 2 * d)?;
    for act in Act::ALL {
        let want = (0..rows * d)
            .map(|i| {
                let (r, j) = (i / d, i % d);
                let a = host.x[r * 2 * d + j].to_f64();
                reference(act, a, host.x[r * 2 * d + d + j].to_f64())
            })
            .collect();
        let meta = Meta {
            kernel: NAME,
            variant: Some(variant(act)),
            shape: vec![rows as i64, 2 * d as i64],
            dtype: "bf16",
            // Minimal traffic: x (rows × 2d) read once, out (rows × d) written once.
            bytes: 2.0 * (3 * rows * d) as f64,
            flops: None,
            timed,
        };
        ctx.bench(
            &meta,
            &ActCase {
                host: &host,
                act,
                want,
            },
        );
    }
    Ok(())
}

struct ActCase<'a> {
    host: &'a Host,
    act: Act,
    want: Vec<f64>,
}

struct State {
    x: Buffer<bf16>,
    tmp: Buffer<bf16>,
    out: Buffer<bf16>,
}

impl Case for ActCase<'_> {
    type State = State;

    fn setup(&self, dev: &Device) -> Res<State> {
        let nan = vec![bf16::NAN; self.host.x.len() / 2];
        Ok(State {
            x: dev.upload(&self.host.x)?,
            tmp: dev.upload(&nan)?,
            out: dev.upload(&nan)?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State, form: Form) -> Result<(), tile::Error> {
        let (r, d) = (self.host.rows, self.host.d);
        match form {
            Form::Fused => fused(dev, self.act, &s.x, &mut s.out, r, d),
            Form::Unfused => unfused(dev, self.act, &s.x, &mut s.tmp, &mut s.out, r, d),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State, _: Form) -> Res<Vec<OutErr>> {
        Ok(vec![compare("out", &fetch(dev, &s.out)?, &self.want, 1e-2)])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => "1 kernel, program (1024 columns, row)".into(),
            Form::Unfused => format!("2 kernels: {} into a bf16 temporary, mul", self.act.name()),
            other => not_a_form(other).to_string(),
        }
    }
}
