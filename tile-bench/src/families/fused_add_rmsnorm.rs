//! vLLM's in-place fused add + RMS norm, bf16 and f16, eps = 1e-6 (examples/fused_add_rmsnorm):
//! `residual = x + residual` (rounded, written back), then `x = residual · rsqrt(mean(r²) + eps) · w`
//! (written back); fused against add, inverse RMS, scale. x and residual in [-2, 2), w in
//! [0.5, 1.5). Both outputs are checked: x (1e-2) and the residual (1e-6: it must be the rounded
//! sum). They are in place, so they cannot start as NaN; the unfused form's scratch does.

use tile::{bf16, f16, Buffer, Device};

use super::{i32_of, rc, Job, Plan};
use crate::common::Rng;
use crate::fused_add_rmsnorm::AddRmsNorm;
use crate::measure::{
    compare, fetch, not_a_form, rand_vec, Case, Ctx, Elem, Form, Meta, OutErr, Res,
};

const NAME: &str = "fused_add_rmsnorm";
const EPS: f32 = 1e-6;

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let checks = [(1, 1), (3, 17), (1, 1000), (2, 4096), (2, 5000), (1, 8192)];
    let small = [(1, 1), (3, 17), (2, 4096), (2, 5000)];
    let big = [(4096, 4096), (32768, 4096)];
    plan.shapes(&checks, &small, &big)
        .into_iter()
        .map(|(s, timed)| {
            Job::new(NAME, rc(s), timed, move |ctx| {
                bench::<bf16>(ctx, s, timed)?;
                bench::<f16>(ctx, s, timed)
            })
        })
        .collect()
}

fn bench<T: Elem + AddRmsNorm>(ctx: &mut Ctx, (rows, n): (usize, usize), timed: bool) -> Res<()> {
    let mut rng = Rng::new((rows * 31 + n) as u64);
    let x: Vec<T> = rand_vec(&mut rng, rows * n, -2.0, 2.0);
    let res: Vec<T> = rand_vec(&mut rng, rows * n, -2.0, 2.0);
    let w: Vec<T> = rand_vec(&mut rng, n, 0.5, 1.5);
    // The sum rounded to T as the kernels store it, then the RMS norm of that in f64.
    let want_res: Vec<f64> = x
        .iter()
        .zip(&res)
        .map(|(&a, &b)| T::of(a.f() + b.f()).f() as f64)
        .collect();
    let mut want_x = Vec::with_capacity(want_res.len());
    for row in want_res.chunks(n) {
        let inv = 1.0 / (row.iter().map(|v| v * v).sum::<f64>() / n as f64 + EPS as f64).sqrt();
        want_x.extend(row.iter().zip(&w).map(|(v, w)| v * inv * w.f() as f64));
    }
    let case = RmsCase {
        x,
        res,
        w,
        want_x,
        want_res,
        rows: i32_of(rows)?,
        n: i32_of(n)?,
    };
    i32_of(rows * n)?;
    let meta = Meta {
        kernel: NAME,
        variant: None,
        shape: vec![rows as i64, n as i64],
        dtype: T::NAME,
        // Minimal traffic: read x, residual and w once, write x and residual once.
        bytes: ((4 * rows * n + n) * std::mem::size_of::<T>()) as f64,
        flops: None,
        timed,
    };
    ctx.bench(&meta, &case);
    Ok(())
}

struct RmsCase<T> {
    x: Vec<T>,
    res: Vec<T>,
    w: Vec<T>,
    want_x: Vec<f64>,
    want_res: Vec<f64>,
    rows: i32,
    n: i32,
}

struct State<T> {
    x: Buffer<T>,
    res: Buffer<T>,
    w: Buffer<T>,
    inv: Buffer<f32>,
}

impl<T: Elem + AddRmsNorm> Case for RmsCase<T> {
    type State = State<T>;

    fn setup(&self, dev: &Device) -> Res<State<T>> {
        Ok(State {
            x: dev.upload(&self.x)?,
            res: dev.upload(&self.res)?,
            w: dev.upload(&self.w)?,
            inv: dev.upload(&vec![f32::NAN; self.rows as usize])?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State<T>, form: Form) -> Result<(), tile::Error> {
        let (r, n) = (self.rows, self.n);
        match form {
            Form::Fused => T::fused(dev, &mut s.x, &mut s.res, &s.w, r, n, EPS),
            Form::Unfused => T::unfused(dev, &mut s.x, &mut s.res, &s.w, &mut s.inv, r, n, EPS),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State<T>, _: Form) -> Res<Vec<OutErr>> {
        Ok(vec![
            compare("x", &fetch(dev, &s.x)?, &self.want_x, 1e-2),
            compare("residual", &fetch(dev, &s.res)?, &self.want_res, 1e-6),
        ])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => "1 kernel, 1 program per row, in place".into(),
            Form::Unfused => {
                "3 kernels: residual add, inverse RMS per row (f32 scratch), scale".into()
            }
            other => not_a_form(other).to_string(),
        }
    }
}
