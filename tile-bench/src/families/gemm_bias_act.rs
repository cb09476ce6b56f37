//! GEMM + bias + activation, `C = act(A @ B + bias)` (examples/gemm_bias_act): fused
//! (`gemm_bias_act_wide`, the epilogue on the accumulator; `gemm_bias_act` where `n` or `k` is not
//! a multiple of 8, which the wide kernel refuses) against unfused (the `gemm_wide` kernel writing
//! `A @ B`, then `bias_act`), `128 × 256 × 64` tiles on 8 warps, for ReLU, GELU (erf) and GELU (tanh) (variants `relu`, `gelu`, `gelu_tanh` as
//! `bench/python/baseline.py` names them), f16 and bf16, inputs and bias in [-1, 1). Shapes
//! `[M, N, K]`; checked against float64 on every element of small shapes and on 512 sampled
//! elements of large ones (the unfused form rounds `A @ B` once more, within the same tolerance);
//! rows carry TFLOP/s of the product.

use tile::{cdiv, Buffer, Device, Grid};

use super::gemm::{gemm_dims, Shape};
use super::{Job, Plan};
use crate::common::{matmul_inputs, matmul_ref_at, sampled_elements, Half, Rng};
use crate::gemm_bias_act::{act_ref, bias_act, gemm_bias_act, gemm_bias_act_wide};
use crate::gemm_kernels::gemm_wide;
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

const NAME: &str = "gemm_bias_act";

/// The activations: `ACT` value and the baseline's variant name.
const ACTS: [(i32, &str); 3] = [(0, "relu"), (1, "gelu"), (2, "gelu_tanh")];

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let small: [Shape; 2] = [(17, 33, 65), (64, 48, 100)];
    let big: [Shape; 2] = [(4096, 4096, 4096), (8192, 8192, 8192)];
    plan.shapes(&small, &small, &big)
        .into_iter()
        .map(|(s, timed)| {
            let label = format!("{}x{}x{}", s.0, s.1, s.2);
            Job::new(NAME, label, timed, move |ctx| {
                bench::<tile::f16>(ctx, s, timed)?;
                bench::<tile::bf16>(ctx, s, timed)
            })
        })
        .collect()
}

fn bench<T: Half>(ctx: &mut Ctx, s: Shape, timed: bool) -> Res<()> {
    let (m, n, k) = s;
    let dims = gemm_dims(s)?;
    let (a, b, a64, b64) = matmul_inputs::<T>(s);
    let bias: Vec<T> = Rng::new(n as u64 + 5)
        .vec(n, -1.0, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let at = sampled_elements(m, n, 11);
    let z: Vec<f64> = matmul_ref_at(&a64, &b64, s, &at)
        .into_iter()
        .zip(&at)
        .map(|(p, &(_, j))| p + f64::from(bias[j].to_f32()))
        .collect();
    let es = std::mem::size_of::<T>() as f64;
    for (act, variant) in ACTS {
        let meta = Meta {
            kernel: NAME,
            variant: Some(variant),
            shape: vec![m as i64, n as i64, k as i64],
            dtype: T::NAME,
            bytes: es * (m * k + k * n + n + m * n) as f64,
            flops: Some(2.0 * m as f64 * n as f64 * k as f64),
            timed,
        };
        let case = ActCase {
            a: a.clone(),
            b: b.clone(),
            bias: bias.clone(),
            at: at.clone(),
            want: z.iter().map(|&v| act_ref(act, v)).collect(),
            dims,
            act,
        };
        ctx.bench(&meta, &case);
    }
    Ok(())
}

struct ActCase<T> {
    a: Vec<T>,
    b: Vec<T>,
    bias: Vec<T>,
    /// The checked elements and their f64 values.
    at: Vec<(usize, usize)>,
    want: Vec<f64>,
    dims: (i32, i32, i32),
    act: i32,
}

struct State<T: tile::Element> {
    a: Buffer<T>,
    b: Buffer<T>,
    bias: Buffer<T>,
    /// The unfused form's `A @ B`.
    tmp: Buffer<T>,
    c: Buffer<T>,
}

impl<T: Half> Case for ActCase<T> {
    type State = State<T>;

    fn setup(&self, dev: &Device) -> Res<State<T>> {
        let len = self.dims.0 as usize * self.dims.1 as usize;
        let nan = vec![T::from_f32(f32::NAN); len];
        Ok(State {
            a: dev.upload(&self.a)?,
            b: dev.upload(&self.b)?,
            bias: dev.upload(&self.bias)?,
            tmp: dev.upload(&nan)?,
            c: dev.upload(&nan)?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State<T>, form: Form) -> Result<(), tile::Error> {
        let (m, n, k) = self.dims;
        let (mu, nu) = (m as usize, n as usize);
        match form {
            Form::Fused => {
                let (a, b, bias) = (&s.a, &s.b, &s.bias);
                // The wide kernel takes aligned shapes only (`specialize = aligned`).
                if n % 8 == 0 && k % 8 == 0 {
                    let g = crate::gemm_bias_act::grid(mu, nu, 256);
                    gemm_bias_act_wide::launch(dev, g, a, b, bias, &mut s.c, m, n, k, self.act)
                } else {
                    let g = crate::gemm_bias_act::grid(mu, nu, 128);
                    gemm_bias_act::launch(dev, g, a, b, bias, &mut s.c, m, n, k, self.act)
                }
            }
            Form::Unfused => {
                let g = crate::gemm_kernels::grid(mu, nu, 256);
                gemm_wide::launch(dev, g, &s.a, &s.b, &mut s.tmp, m, n, k)?;
                let e = Grid::x(cdiv(mu * nu, 2048));
                bias_act::launch(dev, e, &s.tmp, &s.bias, &mut s.c, m, n, self.act)
            }
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State<T>, _: Form) -> Res<Vec<OutErr>> {
        let n = self.dims.1 as usize;
        let c = dev.download(&s.c)?;
        let got: Vec<f32> = self
            .at
            .iter()
            .map(|&(i, j)| c[i * n + j].to_f32())
            .collect();
        Ok(vec![compare("c", &got, &self.want, T::TOL)])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => "1 kernel: gemm with bias + activation on the accumulator".into(),
            Form::Unfused => "2 kernels: gemm (A @ B in memory), bias + activation".into(),
            other => not_a_form(other).to_string(),
        }
    }
}
