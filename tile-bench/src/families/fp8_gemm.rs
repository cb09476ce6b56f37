//! FP8 GEMM with scales, `y = (x · Wᵀ) · sx · sw` (examples/dequant_matmul's FP8 W8A8,
//! `torch._scaled_mm`'s operation): `x` (`M × K`) and `W` (`N × K`) in `f8e4m3`, values spread
//! over the format's range, `y` in bf16; variant `tensor` (one scale each) or `row` (`sx` per row
//! of `x`, `sw` per row of `W`). The fused form is the example's `fp8_fused` (the product on the
//! FP8 tensor cores, the scales in its epilogue, autotuned over four tiles); the unfused one
//! (`row` only) writes the `f32` product, then scales it in a second pass. Checked against
//! float64 of the same values on every element of small shapes and on 512 sampled elements of
//! large ones; rows carry TFLOP/s. The baseline's row is `torch._scaled_mm` (cuBLASLt).

use tile::{f8e4m3, Buffer, Device};

use super::{Job, Plan};
use crate::common::{sampled_elements, Rng};
use crate::dequant_host::Shape as DShape;
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};
use crate::w8a8::{self, Scaling};

const NAME: &str = "fp8_gemm";

/// `M × N × K`.
type Shape = (usize, usize, usize);

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    // Awkward shapes are checked only; the baseline's `torch._scaled_mm` takes multiples of 16.
    let checks: [Shape; 2] = [(17, 33, 65), (130, 100, 300)];
    let small: [Shape; 2] = [(16, 32, 64), (64, 48, 128)];
    let big: [Shape; 3] = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096)];
    plan.shapes(&checks, &small, &big)
        .into_iter()
        .map(|(s, timed)| {
            let label = format!("{}x{}x{}", s.0, s.1, s.2);
            Job::new(NAME, label, timed, move |ctx| {
                for scaling in Scaling::ALL {
                    bench(ctx, s, timed, scaling)?;
                }
                Ok(())
            })
        })
        .collect()
}

fn bench(ctx: &mut Ctx, (m, n, k): Shape, timed: bool, scaling: Scaling) -> Res<()> {
    super::i32_of(m * k)?;
    super::i32_of(n * k)?;
    super::i32_of(m * n)?;
    let mut g = Rng::new((m * 7 + n * 131 + k) as u64);
    let mut bytes = |len: usize| -> Vec<f8e4m3> {
        g.vec(len, -1.0, 1.0)
            .into_iter()
            .map(|v| f8e4m3::from_f32(v * 448.0))
            .collect()
    };
    let x = bytes(m * k);
    let w = bytes(n * k);
    let (lx, lw) = scaling.lens(m, n);
    let sx = g.vec(lx, 1e-3, 2e-3);
    let sw = g.vec(lw, 1e-3, 2e-3);
    let at = sampled_elements(m, n, 11);
    let want: Vec<f64> = at
        .iter()
        .map(|&(i, j)| {
            let dot: f64 = (0..k)
                .map(|p| x[i * k + p].to_f64() * w[j * k + p].to_f64())
                .sum();
            dot * f64::from(sx[i.min(lx - 1)]) * f64::from(sw[j.min(lw - 1)])
        })
        .collect();
    let meta = Meta {
        kernel: NAME,
        variant: Some(scaling.name()),
        shape: vec![m as i64, n as i64, k as i64],
        dtype: "f8e4m3",
        bytes: (m * k + n * k + 2 * m * n) as f64,
        flops: Some(2.0 * m as f64 * n as f64 * k as f64),
        timed,
    };
    let case = Fp8Case {
        x,
        w,
        sx,
        sw,
        at,
        want,
        shape: DShape { m, n, k },
        scaling,
    };
    ctx.bench(&meta, &case);
    Ok(())
}

struct Fp8Case {
    x: Vec<f8e4m3>,
    w: Vec<f8e4m3>,
    sx: Vec<f32>,
    sw: Vec<f32>,
    /// The checked elements and their f64 values.
    at: Vec<(usize, usize)>,
    want: Vec<f64>,
    shape: DShape,
    scaling: Scaling,
}

struct State {
    x: Buffer<f8e4m3>,
    w: Buffer<f8e4m3>,
    sx: Buffer<f32>,
    sw: Buffer<f32>,
    y: Buffer<tile::bf16>,
    /// The unfused form's `f32` product.
    c: Buffer<f32>,
}

impl Case for Fp8Case {
    type State = State;

    fn setup(&self, dev: &Device) -> Res<State> {
        let len = self.shape.m * self.shape.n;
        Ok(State {
            x: dev.upload(&self.x)?,
            w: dev.upload(&self.w)?,
            sx: dev.upload(&self.sx)?,
            sw: dev.upload(&self.sw)?,
            y: dev.upload(&vec![tile::bf16::from_f32(f32::NAN); len])?,
            c: if self.scaling == Scaling::Row {
                dev.zeros(len)?
            } else {
                dev.zeros(1)?
            },
        })
    }

    fn run(&self, dev: &Device, s: &mut State, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => w8a8::fp8_fused(
                dev,
                &s.x,
                &s.sx,
                &s.w,
                &s.sw,
                &mut s.y,
                self.shape,
                self.scaling,
            ),
            Form::Unfused if self.scaling == Scaling::Row => w8a8::fp8_unfused(
                dev, &s.x, &s.sx, &s.w, &s.sw, &mut s.c, &mut s.y, self.shape,
            ),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State, _: Form) -> Res<Vec<OutErr>> {
        let n = self.shape.n;
        let y = dev.download(&s.y)?;
        let got: Vec<f32> = self
            .at
            .iter()
            .map(|&(i, j)| y[i * n + j].to_f32())
            .collect();
        // bf16 output: its rounding, and the FP8 product's narrower accumulation.
        Ok(vec![compare("y", &got, &self.want, 1e-2)])
    }

    fn ops(&self, form: Form) -> String {
        let (m, n, k) = (self.shape.m, self.shape.n, self.shape.k);
        match form {
            Form::Fused => format!(
                "1 kernel: fp8_scaled, f8e4m3 product on the FP8 tensor cores (wgmma on sm_90a), \
                 per-{} scales in the epilogue; the fastest of 4 tiles timed at the first launch ({})",
                self.scaling.name(),
                w8a8::fp8_choice(m, n, k).unwrap_or("not yet tuned")
            ),
            Form::Unfused => "2 kernels: the f32 product (fp8_f32, tuned the same way), then the \
                              scaling pass"
                .into(),
            other => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        match self.scaling {
            Scaling::Row => Form::BOTH.to_vec(),
            Scaling::Tensor => vec![Form::Fused],
        }
    }
}
