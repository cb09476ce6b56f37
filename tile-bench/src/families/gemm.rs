//! GEMM, `C = A @ B` on tensor cores (examples/gemm): f16 and bf16 inputs in [-1, 1), `C` in the
//! input type and (variant `out_f32`, where the baseline has it) in f32. The example's `matmul`
//! (the fused form), and for 16-bit output the same product written as users write it
//! (`crate::user_gemm`: the guide's form and Triton's tutorial form). `matmul`: the `gemm_wide` kernel (128 × 256 × 64 on 8 warps, `wgmma` on sm_90a); for at most
//! 32 rows split-K (`gemm_splitk` and `splitk_sum`, two launches) or, with many columns, the
//! `128 × 64` tile; `gemm` has no unfused form. The baseline's rows are cuBLAS
//! and Triton's tutorial matmul. Shapes `[M, N, K]` as `bench/python/baseline.py` (GEMM_SMALL,
//! GEMM_BIG, GEMM_OUT_F32). Checked against float64 on every element of small shapes and on 512
//! sampled elements of large ones; rows carry TFLOP/s.

use tile::{cdiv, Buffer, Device, Grid};

use super::{i32_of, Job, Plan};
use crate::common::{matmul_inputs, matmul_ref_at, sampled_elements, Half};
use crate::gemm_kernels::{
    gemm_tma, matmul, matmul_tuned, splitk_workspace, tuned_choice, MatmulKernel,
};
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};
use crate::user_gemm::guide_gemm;
use tile_tutorials::matrix_multiplication;

const NAME: &str = "gemm";

/// `M × N × K`.
pub type Shape = (usize, usize, usize);

/// f32 output: f32 accumulation of exact products, summed in the tensor cores' order.
pub const TOL_F32: f64 = 1e-3;

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let small: [Shape; 3] = [(1, 1, 1), (17, 33, 65), (64, 48, 100)];
    // The last three are shapes the example's rules were not measured on (for the autotuned
    // form against them).
    let big: [Shape; 9] = [
        (4096, 4096, 4096),
        (8192, 8192, 8192),
        (4000, 3000, 1000),
        (1, 4096, 4096),
        (17, 8192, 1024),
        (17, 1024, 8192),
        (6144, 5120, 3072),
        (2048, 2048, 8192),
        (256, 8192, 4096),
    ];
    plan.shapes(&small, &small, &big)
        .into_iter()
        .map(|(s, timed)| {
            let label = format!("{}x{}x{}", s.0, s.1, s.2);
            let out_f32 = small.contains(&s) || s.0 == s.1 && s.1 == s.2 && s.0 >= 4096;
            Job::new(NAME, label, timed, move |ctx| {
                bench::<tile::f16>(ctx, s, timed, out_f32)?;
                bench::<tile::bf16>(ctx, s, timed, out_f32)
            })
        })
        .collect()
}

/// `(m, n, k)` as the kernels' `i32`s, or an error if a dimension or a matrix's element count
/// does not fit.
pub fn gemm_dims((m, n, k): Shape) -> Res<(i32, i32, i32)> {
    i32_of(m * k)?;
    i32_of(k * n)?;
    i32_of(m * n)?;
    Ok((i32_of(m)?, i32_of(n)?, i32_of(k)?))
}

fn bench<T: Half + Tutorial>(ctx: &mut Ctx, s: Shape, timed: bool, out_f32: bool) -> Res<()> {
    let (m, n, k) = s;
    let dims = gemm_dims(s)?;
    let (a, b, a64, b64) = matmul_inputs::<T>(s);
    let at = sampled_elements(m, n, 7);
    let want = matmul_ref_at(&a64, &b64, s, &at);
    let es = std::mem::size_of::<T>() as f64;
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    let inputs = es * (m * k + k * n) as f64;
    for f32_out in [false, true] {
        if f32_out && !out_f32 {
            continue;
        }
        let meta = Meta {
            kernel: NAME,
            variant: f32_out.then_some("out_f32"),
            shape: vec![m as i64, n as i64, k as i64],
            dtype: T::NAME,
            bytes: inputs + if f32_out { 4.0 } else { es } * (m * n) as f64,
            flops: Some(flops),
            timed,
        };
        let case = GemmCase {
            a: a.clone(),
            b: b.clone(),
            at: at.clone(),
            want: want.clone(),
            dims,
            f32_out,
        };
        ctx.bench(&meta, &case);
    }
    Ok(())
}

/// Triton's tutorial matmul where the element type has a port (`tile-tutorials` ports it for
/// f16, as the tutorial runs it): row-major `B`, the configuration the port's host function
/// picks (the tutorial's first, 128 × 256 × 64, for large aligned shapes).
trait Tutorial: tile::Element {
    /// The product into `s.c`, or `None` for a type without a port.
    fn tutorial(dev: &Device, s: &mut State<Self>, shape: Shape)
        -> Option<Result<(), tile::Error>>;
}

impl Tutorial for tile::f16 {
    fn tutorial(
        dev: &Device,
        s: &mut State<Self>,
        (m, n, k): Shape,
    ) -> Option<Result<(), tile::Error>> {
        Some(matrix_multiplication::matmul_into(
            dev,
            &s.a,
            &s.b,
            &mut s.c,
            (m, n, k),
            (n, 1),
            0,
        ))
    }
}

impl Tutorial for tile::bf16 {
    fn tutorial(_: &Device, _: &mut State<Self>, _: Shape) -> Option<Result<(), tile::Error>> {
        None
    }
}

struct GemmCase<T> {
    a: Vec<T>,
    b: Vec<T>,
    /// The checked elements and their f64 values.
    at: Vec<(usize, usize)>,
    want: Vec<f64>,
    dims: (i32, i32, i32),
    f32_out: bool,
}

struct State<T: tile::Element> {
    a: Buffer<T>,
    b: Buffer<T>,
    c: Buffer<T>,
    c32: Buffer<f32>,
    /// Split-K's f32 slices.
    part: Buffer<f32>,
}

impl<T: Half + Tutorial> Case for GemmCase<T> {
    type State = State<T>;

    fn setup(&self, dev: &Device) -> Res<State<T>> {
        let (m, n, _) = self.dims;
        let len = m as usize * n as usize;
        let (c, c32) = if self.f32_out {
            (dev.zeros(1)?, dev.upload(&vec![f32::NAN; len])?)
        } else {
            (
                dev.upload(&vec![T::from_f32(f32::NAN); len])?,
                dev.zeros(1)?,
            )
        };
        let (mu, nu, ku) = (m as usize, n as usize, self.dims.2 as usize);
        Ok(State {
            a: dev.upload(&self.a)?,
            b: dev.upload(&self.b)?,
            c,
            c32,
            part: dev.zeros(splitk_workspace(mu, nu, ku).max(1))?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State<T>, form: Form) -> Result<(), tile::Error> {
        let (m, n, k) = self.dims;
        let (mu, nu) = (m as usize, n as usize);
        match form {
            Form::Fused => {}
            Form::User if !self.f32_out => {
                let grid = Grid::xy(cdiv(mu, 128), cdiv(nu, 128));
                return guide_gemm::launch(dev, grid, &s.a, &s.b, &mut s.c, m, n, k);
            }
            Form::Tutorial if !self.f32_out => {
                return T::tutorial(dev, s, (mu, nu, k as usize))
                    .unwrap_or_else(|| Err(not_a_form(form)));
            }
            Form::Tuned if !self.f32_out => {
                return matmul_tuned(dev, &s.a, &s.b, &mut s.c, (mu, nu, k as usize));
            }
            Form::Descriptor if !self.f32_out => {
                let grid = Grid::x(cdiv(mu, 128).saturating_mul(cdiv(nu, 256)));
                return gemm_tma::launch(dev, grid, &s.a, &s.b, &mut s.c, m, n, k);
            }
            other => return Err(not_a_form(other)),
        }
        let shape = (m as usize, n as usize, k as usize);
        if self.f32_out {
            matmul(dev, &s.a, &s.b, &mut s.c32, &mut s.part, shape)
        } else {
            matmul(dev, &s.a, &s.b, &mut s.c, &mut s.part, shape)
        }
    }

    fn verify(&self, dev: &Device, s: &State<T>, _: Form) -> Res<Vec<OutErr>> {
        let n = self.dims.1 as usize;
        let got: Vec<f32> = if self.f32_out {
            let c = dev.download(&s.c32)?;
            self.at.iter().map(|&(i, j)| c[i * n + j]).collect()
        } else {
            let c = dev.download(&s.c)?;
            self.at
                .iter()
                .map(|&(i, j)| c[i * n + j].to_f32())
                .collect()
        };
        let tol = if self.f32_out { TOL_F32 } else { T::TOL };
        Ok(vec![compare("c", &got, &self.want, tol)])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => match MatmulKernel::for_shape(
                self.dims.0 as usize,
                self.dims.1 as usize,
                self.dims.2 as usize,
            ) {
                MatmulKernel::Narrow | MatmulKernel::Wide if !self.f32_out => tuned_ops(self.dims),
                MatmulKernel::SplitK { bm, split, .. } => format!(
                    "2 kernels: split-K, {bm}x64x64 tiles over {split} slices of k (4 warps), \
                     then the slices summed"
                ),
                MatmulKernel::Narrow => "1 kernel: 128x64x32 tiles, 4 warps, wgmma (mma.sync on \
                                         sm_80) through a cp.async ring"
                    .into(),
                MatmulKernel::Wide => "1 kernel: 128x256x64 tiles, 8 warps, wgmma (mma.sync on \
                                       sm_80) through a cp.async ring"
                    .into(),
            },
            Form::User => "1 kernel as the guide writes it: 128x128x32 tiles, 4 warps, 3 stages, \
                           2-D grid"
                .into(),
            Form::Tuned => tuned_ops(self.dims),
            Form::Descriptor => "1 kernel: the 128x256x64 tile written with tensor descriptors, \
                                 8 warps, grouped order; on sm_90a with aligned arguments the \
                                 tensor memory accelerator fills a wgmma ring (mbarriers)"
                .into(),
            Form::Tutorial => "1 kernel, Triton's tutorial matmul ported line by line \
                               (tile-tutorials): strides as arguments, pointers advanced in the \
                               loop, 128x256x64 tiles, 8 warps, 3 stages, grouped order"
                .into(),
            other => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        match (self.f32_out, T::NAME) {
            (true, _) => vec![Form::Fused],
            (false, "f16") => vec![
                Form::Fused,
                Form::Tuned,
                Form::Descriptor,
                Form::User,
                Form::Tutorial,
            ],
            (false, _) => vec![Form::Fused, Form::Tuned, Form::Descriptor, Form::User],
        }
    }
}

/// What the autotuned kernel ran for a shape: the configuration it chose.
fn tuned_ops((m, n, k): (i32, i32, i32)) -> String {
    let chosen = tuned_choice(m as usize, n as usize, k as usize).unwrap_or("not yet tuned");
    format!("1 kernel: gemm_tuned, the fastest of 4 tile configurations timed at the first launch ({chosen})")
}
