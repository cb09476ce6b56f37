//! The two dropout families (examples/fused_bias_gelu_dropout and examples/residual_bias_dropout),
//! f32 and bf16 storage with f32 arithmetic, p = 0.1, the examples' seed:
//!
//! - `fused_bias_gelu_dropout`: `y = dropout(GELU_erf(x + bias[col]), p)`;
//! - `residual_bias_dropout`: `out = residual + dropout(x + bias[col], p)`.
//!
//! Three forms each: fused with Triton's `tl.rand(seed, i) > p` mask (`tile_fused`, the mask of
//! `baseline.py`'s `triton` row), fused with one Philox evaluation per four elements
//! (`tile_words4`, the mask of its `triton_words4` row), and the three unfused kernels (`rand(i)`
//! mask; intermediates stored in the storage type, so its reference rounds them). Inputs: x and
//! the residual in [-4, 4), the bias in [-1, 1). Each form's reference applies that form's mask
//! (computed on the CPU by `tile::random`) to the float64 result; the bias + GELU family also
//! checks the mask exactly (an element is 0 exactly where it is dropped, or where the reference
//! itself is 0). Traffic: every input read once, the output written once.

use tile::{bf16, Buffer, Device};

use super::{bias_matrix_shapes, i32_of, rc, Job, Plan};
use crate::common::Rng;
use crate::dropout::shared::Stream;
use crate::dropout::{gelu as gelu_k, residual as resid_k};
use crate::measure::{compare, exact, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

/// The dropout probability every case runs with (as `baseline.py`).
const P: f32 = 0.1;
/// The seed (as the examples and `baseline.py`).
const SEED: i64 = 0x5EED_1234_ABCD;

/// Which of the two families.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    /// `dropout(GELU_erf(x + bias[col]), p)`.
    BiasGelu,
    /// `residual + dropout(x + bias[col], p)`.
    Residual,
}

impl Family {
    fn name(self) -> &'static str {
        match self {
            Family::BiasGelu => "fused_bias_gelu_dropout",
            Family::Residual => "residual_bias_dropout",
        }
    }
}

/// The jobs of `fused_bias_gelu_dropout`.
pub fn gelu_jobs(plan: &Plan) -> Vec<Job> {
    jobs(plan, Family::BiasGelu)
}

/// The jobs of `residual_bias_dropout`.
pub fn residual_jobs(plan: &Plan) -> Vec<Job> {
    jobs(plan, Family::Residual)
}

fn jobs(plan: &Plan, fam: Family) -> Vec<Job> {
    bias_matrix_shapes(plan)
        .into_iter()
        .map(|(s, timed)| {
            Job::new(fam.name(), rc(s), timed, move |ctx| {
                let masks = Masks::new(s);
                bench::<f32>(ctx, fam, s, timed, &masks)?;
                bench::<bf16>(ctx, fam, s, timed, &masks)
            })
        })
        .collect()
}

/// The kept elements of both streams (the two families' kernels use the same streams).
struct Masks {
    rand: Vec<bool>,
    words4: Vec<bool>,
}

impl Masks {
    fn new((rows, cols): (usize, usize)) -> Masks {
        let of = |s: Stream| {
            (0..rows * cols)
                .map(|i| s.keep(SEED, i / cols, i % cols, cols, P))
                .collect()
        };
        Masks {
            rand: of(Stream::Rand),
            words4: of(Stream::Words4),
        }
    }

    /// The mask of `form`.
    fn of(&self, form: Form) -> &[bool] {
        match form {
            Form::Words4 => &self.words4,
            _ => &self.rand,
        }
    }
}

/// A storage type with the launchers of both families.
trait Storage: gelu_k::Storage + resid_k::Storage {}
impl Storage for f32 {}
impl Storage for bf16 {}

/// The inputs as the kernels see them, widened to f32.
struct Host<T> {
    x: Vec<T>,
    bias: Vec<T>,
    residual: Vec<T>,
    rows: i32,
    cols: i32,
}

fn bench<T: Storage>(
    ctx: &mut Ctx,
    fam: Family,
    (rows, cols): (usize, usize),
    timed: bool,
    masks: &Masks,
) -> Res<()> {
    let mut rng = Rng::new((rows * 7919 + cols) as u64);
    let n = rows * cols;
    let mut vec = |n: usize, lo: f32, hi: f32| -> Vec<T> {
        let v = rng.vec(n, lo, hi);
        v.into_iter().map(T::from_f32).collect()
    };
    let x = vec(n, -4.0, 4.0);
    let bias = vec(cols, -1.0, 1.0);
    let residual = match fam {
        Family::Residual => vec(n, -4.0, 4.0),
        Family::BiasGelu => Vec::new(),
    };
    i32_of(n)?;
    let host = Host {
        x,
        bias,
        residual,
        rows: i32_of(rows)?,
        cols: i32_of(cols)?,
    };
    let inputs = match fam {
        Family::BiasGelu => 2,
        Family::Residual => 3,
    };
    let meta = Meta {
        kernel: fam.name(),
        variant: None,
        shape: vec![rows as i64, cols as i64],
        dtype: T::NAME,
        bytes: (std::mem::size_of::<T>() * (inputs * n + cols)) as f64,
        flops: None,
        timed,
    };
    let case = DropoutCase {
        fam,
        host: &host,
        masks,
    };
    ctx.bench(&meta, &case);
    Ok(())
}

struct DropoutCase<'a, T> {
    fam: Family,
    host: &'a Host<T>,
    masks: &'a Masks,
}

impl<T: Storage> DropoutCase<'_, T> {
    /// The float64 reference of `form`: the unfused form rounds its stored intermediates to `T`.
    fn want(&self, form: Form) -> Vec<f64> {
        let h = self.host;
        let cols = h.cols as usize;
        let keep = self.masks.of(form);
        let round = |v: f64| match form {
            Form::Unfused => f64::from(T::from_f32(v as f32).to_f32()),
            _ => v,
        };
        let wide = |t: T| f64::from(T::to_f32(t));
        let scale = 1.0 / (1.0 - f64::from(P));
        (0..h.x.len())
            .map(|i| {
                let v = round(wide(h.x[i]) + wide(h.bias[i % cols]));
                match self.fam {
                    Family::BiasGelu => {
                        let g = round(0.5 * v * (1.0 + libm::erf(v / std::f64::consts::SQRT_2)));
                        if keep[i] {
                            g * scale
                        } else {
                            0.0
                        }
                    }
                    Family::Residual => {
                        let d = if keep[i] { round(v * scale) } else { 0.0 };
                        wide(h.residual[i]) + d
                    }
                }
            })
            .collect()
    }
}

struct State<T> {
    x: Buffer<T>,
    bias: Buffer<T>,
    residual: Buffer<T>,
    t1: Buffer<T>,
    t2: Buffer<T>,
    out: Buffer<T>,
}

impl<T: Storage> Case for DropoutCase<'_, T> {
    type State = State<T>;

    fn setup(&self, dev: &Device) -> Res<State<T>> {
        let nan = vec![T::from_f32(f32::NAN); self.host.x.len()];
        // The bias + GELU family has no residual: a one-element buffer stands in, unused.
        let residual = if self.host.residual.is_empty() {
            dev.upload(&nan[..1.min(nan.len())])?
        } else {
            dev.upload(&self.host.residual)?
        };
        Ok(State {
            x: dev.upload(&self.host.x)?,
            bias: dev.upload(&self.host.bias)?,
            residual,
            t1: dev.upload(&nan)?,
            t2: dev.upload(&nan)?,
            out: dev.upload(&nan)?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State<T>, form: Form) -> Result<(), tile::Error> {
        let (r, c) = (self.host.rows, self.host.cols);
        let stream = |form| match form {
            Form::Words4 => Ok(Stream::Words4),
            Form::Fused => Ok(Stream::Rand),
            other => Err(not_a_form(other)),
        };
        let (x, b) = (&s.x, &s.bias);
        match (self.fam, form) {
            (Family::BiasGelu, Form::Unfused) => {
                gelu_k::Storage::unfused(dev, x, b, &mut s.t1, &mut s.t2, &mut s.out, r, c, P, SEED)
            }
            (Family::BiasGelu, f) => {
                gelu_k::Storage::fused(dev, stream(f)?, x, b, &mut s.out, r, c, P, SEED)
            }
            (Family::Residual, Form::Unfused) => resid_k::Storage::unfused(
                dev,
                x,
                b,
                &s.residual,
                &mut s.t1,
                &mut s.t2,
                &mut s.out,
                r,
                c,
                P,
                SEED,
            ),
            (Family::Residual, f) => resid_k::Storage::fused(
                dev,
                stream(f)?,
                x,
                b,
                &s.residual,
                &mut s.out,
                r,
                c,
                P,
                SEED,
            ),
        }
    }

    fn verify(&self, dev: &Device, s: &State<T>, form: Form) -> Res<Vec<OutErr>> {
        let got: Vec<f32> = dev.download(&s.out)?.into_iter().map(T::to_f32).collect();
        let want = self.want(form);
        // The examples' tolerances.
        let tol = match (T::NAME, self.fam) {
            ("f32", Family::BiasGelu) => 1e-4,
            ("f32", Family::Residual) => 1e-6,
            _ => 1e-2,
        };
        let mut errs = vec![compare("out", &got, &want, tol)];
        if self.fam == Family::BiasGelu {
            let keep = self.masks.of(form);
            let same = (0..got.len().min(want.len()))
                .all(|i| (got[i] == 0.0) == (!keep[i] || want[i] == 0.0));
            errs.push(exact("mask", same && got.len() == want.len()));
        }
        Ok(errs)
    }

    fn ops(&self, form: Form) -> String {
        match (self.fam, form) {
            (_, Form::Fused) => "1 kernel, program (1024 columns, row), rand(seed, i) > p".into(),
            (_, Form::Words4) => {
                "1 kernel, one Philox per 4 elements (word i % 4 of rand4x(seed, i / 4))".into()
            }
            (Family::BiasGelu, Form::Unfused) => format!(
                "3 kernels: add bias, GELU, dropout rand(i) ({} temporaries)",
                T::NAME
            ),
            (Family::Residual, Form::Unfused) => format!(
                "3 kernels: add bias, dropout rand(i), add residual ({} temporaries)",
                T::NAME
            ),
            (_, other) => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused, Form::Words4, Form::Unfused]
    }
}
