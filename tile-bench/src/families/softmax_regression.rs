//! Softmax regression on tensor cores, `probs = softmax(x @ w)` (examples/softmax_regression):
//! f16 and bf16 `x` (in [-1, 1)) and `w` (in [-0.5, 0.5)), f32 logits, softmax and `probs`.
//! Fused: the example's `fused`, on the tile its tuner timed fastest at the shape's first call
//! (with `rescale` past one class tile; after `pad_rows` where the example's `Workspace` pads
//! `w`'s rows to 32 bytes, which the time includes). Rule (`tile_rule`): the same on the tile
//! [`Tile::for_shape`]'s rule picks, which the tuner replaced. Unfused: the `gemm`
//! example's kernel writing f32 logits (`gemm_wide` where the fused kernel is wide), then the
//! `fused_softmax` row softmax.
//! Shapes `[batch, dim, classes]` as `bench/python/baseline.py`'s softmax_regression rows;
//! checked against the softmax of f64 logits on every row of small shapes and on 8 sampled rows
//! of large ones; rows carry TFLOP/s of the matmul.

use tile::{Buffer, Device};

use super::{i32_of, Job, Plan};
use crate::common::{sampled_rows, softmax_rows_ref, Half, Rng};
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};
use crate::softmax_regression::{fused, fused_rule, tuned_tile, unfused, Tile, Workspace};

const NAME: &str = "softmax_regression";

/// `batch × dim × classes`.
type Shape = (usize, usize, usize);

/// Relative L2 error allowed against the f64 softmax (f32 accumulation in the tensor cores'
/// order, `ex2.approx`), as the example.
const TOL: f64 = 1e-3;

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let small: [Shape; 3] = [(17, 33, 10), (130, 40, 300), (3, 64, 1000)];
    // The last three are shapes the tile rule was not measured on (for the autotuned form).
    let big: [Shape; 8] = [
        (64, 128, 10),
        (256, 512, 50),
        (1024, 1024, 100),
        (8192, 4096, 1000),
        (4096, 4096, 32000),
        (65536, 4096, 10),
        (2048, 1024, 5000),
        (16384, 512, 128),
    ];
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
    let (b, d, c) = s;
    i32_of(b * c)?;
    i32_of(b * d)?;
    i32_of(d * c)?;
    let mut r = Rng::new((b * 131 + d * 7 + c) as u64);
    let x: Vec<T> = r
        .vec(b * d, -1.0, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let w: Vec<T> = r
        .vec(d * c, -0.5, 0.5)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let rows = sampled_rows(b, c);
    let want = softmax_rows_ref(&x, &w, s, &rows);
    let es = std::mem::size_of::<T>() as f64;
    let meta = Meta {
        kernel: NAME,
        variant: None,
        shape: vec![b as i64, d as i64, c as i64],
        dtype: T::NAME,
        bytes: es * (b * d + d * c) as f64 + 4.0 * (b * c) as f64,
        flops: Some(2.0 * b as f64 * d as f64 * c as f64),
        timed,
    };
    ctx.bench(
        &meta,
        &RegCase {
            x,
            w,
            rows,
            want,
            s,
        },
    );
    Ok(())
}

struct RegCase<T> {
    x: Vec<T>,
    w: Vec<T>,
    /// The checked rows and the f64 softmax of each, row after row.
    rows: Vec<usize>,
    want: Vec<f64>,
    s: Shape,
}

struct State<T: tile::Element> {
    x: Buffer<T>,
    w: Buffer<T>,
    probs: Buffer<f32>,
    ws: Workspace<T>,
    /// The unfused form's logits.
    logits: Buffer<f32>,
}

impl<T: Half> Case for RegCase<T> {
    type State = State<T>;

    fn setup(&self, dev: &Device) -> Res<State<T>> {
        let (b, _, c) = self.s;
        let nan = vec![f32::NAN; b * c];
        Ok(State {
            x: dev.upload(&self.x)?,
            w: dev.upload(&self.w)?,
            probs: dev.upload(&nan)?,
            ws: Workspace::new(dev, self.s)?,
            logits: dev.upload(&nan)?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State<T>, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => fused(dev, &s.x, &s.w, &mut s.probs, &mut s.ws, self.s),
            Form::Rule => fused_rule(dev, &s.x, &s.w, &mut s.probs, &mut s.ws, self.s),
            Form::Unfused => unfused(dev, &s.x, &s.w, &mut s.logits, &mut s.probs, self.s),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State<T>, _: Form) -> Res<Vec<OutErr>> {
        let c = self.s.2;
        let probs = dev.download(&s.probs)?;
        let got: Vec<f32> = self
            .rows
            .iter()
            .flat_map(|&i| probs[i * c..(i + 1) * c].iter().copied())
            .collect();
        Ok(vec![compare("probs", &got, &self.want, TOL)])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => format!(
                "1–2 kernels: dot on tensor cores with the softmax on the logits in registers \
                 (per class tile, then rescale past one tile), on the tile timed fastest at the \
                 first call ({})",
                tuned_tile::<T>(self.s).map_or("not yet tuned".into(), |t| format!("{t:?}"))
            ),
            Form::Unfused => "2 kernels: gemm (f32 logits in memory), row softmax".into(),
            Form::Rule => format!(
                "the fused kernels on the tile of the hand-written rule ({:?})",
                Tile::for_shape(self.s.0, self.s.2)
            ),
            other => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused, Form::Rule, Form::Unfused]
    }
}
