//! `y = GELU(x + bias[col])`, erf and tanh forms, f32 and bf16 storage with f32 arithmetic
//! (examples/fused_bias_gelu): fused against add-bias then GELU. x in [-4, 4), bias in [-1, 1).
//! The unfused form stores `x + bias` in the storage type (as PyTorch eager), so its reference
//! rounds that intermediate too.

use tile::{bf16, Buffer, Device};

use super::{bias_matrix_shapes, i32_of, rc, Job, Plan};
use crate::common::Rng;
use crate::fused_bias_gelu::{Gelu, Storage};
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

const NAME: &str = "fused_bias_gelu";

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    bias_matrix_shapes(plan)
        .into_iter()
        .map(|(s, timed)| {
            Job::new(NAME, rc(s), timed, move |ctx| {
                bench::<f32>(ctx, s, timed)?;
                bench::<bf16>(ctx, s, timed)
            })
        })
        .collect()
}

/// GELU in f64.
fn gelu(form: Gelu, v: f64) -> f64 {
    match form {
        Gelu::Erf => 0.5 * v * (1.0 + libm::erf(v / std::f64::consts::SQRT_2)),
        Gelu::Tanh => {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * v * (1.0 + (k * (v + 0.044715 * v * v * v)).tanh())
        }
    }
}

/// The tolerance on the relative L2 error, as the example: f32 erf 1e-4 (cancellation in
/// `1 + erf(v/√2)` for v ≪ 0), f32 tanh 1e-5, bf16 1e-2.
fn tolerance(dtype: &str, form: Gelu) -> f64 {
    match (dtype, form) {
        ("f32", Gelu::Erf) => 1e-4,
        ("f32", Gelu::Tanh) => 1e-5,
        _ => 1e-2,
    }
}

fn variant(form: Gelu) -> &'static str {
    match form {
        Gelu::Erf => "erf",
        Gelu::Tanh => "tanh",
    }
}

struct Host<T> {
    x: Vec<T>,
    bias: Vec<T>,
    rows: i32,
    cols: i32,
}

fn bench<T: Storage>(ctx: &mut Ctx, (rows, cols): (usize, usize), timed: bool) -> Res<()> {
    let mut rng = Rng::new((rows * 7919 + cols) as u64);
    let n = rows * cols;
    let host = Host::<T> {
        x: rng.vec(n, -4.0, 4.0).into_iter().map(T::from_f32).collect(),
        bias: rng
            .vec(cols, -1.0, 1.0)
            .into_iter()
            .map(T::from_f32)
            .collect(),
        rows: i32_of(rows)?,
        cols: i32_of(cols)?,
    };
    i32_of(n)?;
    for form in Gelu::ALL {
        // v as the fused kernel sees it (exact in f64), and as the unfused one stores it.
        let v = |i: usize| host.x[i].to_f32() as f64 + host.bias[i % cols].to_f32() as f64;
        let want_fused = (0..n).map(|i| gelu(form, v(i))).collect();
        let want_unfused = (0..n)
            .map(|i| gelu(form, T::from_f32(v(i) as f32).to_f32() as f64))
            .collect();
        let meta = Meta {
            kernel: NAME,
            variant: Some(variant(form)),
            shape: vec![rows as i64, cols as i64],
            dtype: T::NAME,
            // Minimal traffic: x and the bias read once, the output written once.
            bytes: (std::mem::size_of::<T>() * (2 * n + cols)) as f64,
            flops: None,
            timed,
        };
        let case = GeluCase {
            host: &host,
            form,
            want_fused,
            want_unfused,
        };
        ctx.bench(&meta, &case);
    }
    Ok(())
}

struct GeluCase<'a, T> {
    host: &'a Host<T>,
    form: Gelu,
    want_fused: Vec<f64>,
    want_unfused: Vec<f64>,
}

struct State<T> {
    x: Buffer<T>,
    bias: Buffer<T>,
    tmp: Buffer<T>,
    out: Buffer<T>,
}

impl<T: Storage> Case for GeluCase<'_, T> {
    type State = State<T>;

    fn setup(&self, dev: &Device) -> Res<State<T>> {
        let nan = vec![T::from_f32(f32::NAN); self.host.x.len()];
        Ok(State {
            x: dev.upload(&self.host.x)?,
            bias: dev.upload(&self.host.bias)?,
            tmp: dev.upload(&nan)?,
            out: dev.upload(&nan)?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State<T>, form: Form) -> Result<(), tile::Error> {
        let (r, c) = (self.host.rows, self.host.cols);
        match form {
            Form::Fused => T::fused(dev, self.form, &s.x, &s.bias, &mut s.out, r, c),
            Form::Unfused => {
                T::unfused(dev, self.form, &s.x, &s.bias, &mut s.tmp, &mut s.out, r, c)
            }
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State<T>, form: Form) -> Res<Vec<OutErr>> {
        let got: Vec<f32> = dev.download(&s.out)?.into_iter().map(T::to_f32).collect();
        let want = match form {
            Form::Fused => &self.want_fused,
            _ => &self.want_unfused,
        };
        Ok(vec![compare(
            "out",
            &got,
            want,
            tolerance(T::NAME, self.form),
        )])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => "1 kernel, program (1024 columns, row)".into(),
            Form::Unfused => format!(
                "2 kernels: add bias ({} temporary), {}",
                T::NAME,
                self.form.name()
            ),
            other => not_a_form(other).to_string(),
        }
    }
}
