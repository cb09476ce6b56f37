//! Layer norm over rows, f32 and f16 (f32 arithmetic), eps = 1e-5 (examples/fused_layernorm):
//! fused against mean, variance, normalize, scale-and-shift. x in [-2, 4), w in [0.5, 1.5),
//! b in [-0.5, 0.5). Rows wider than 4096 take the looped kernels (64×65536), and are also timed in
//! the example's split-row form (`tile_split_rows`: each row over programs of 4096 columns, two
//! kernels).

use tile::{f16, Buffer, Device};

use super::{i32_of, rc, Job, Plan};
use crate::common::Rng;
use crate::fused_layernorm::{splits, LayerNorm, Scratch};
use crate::measure::{
    compare, fetch, not_a_form, rand_vec, widen, Case, Ctx, Elem, Form, Meta, OutErr, Res,
};

const NAME: &str = "fused_layernorm";
const EPS: f32 = 1e-5;

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let checks = [
        (1, 1),
        (3, 17),
        (1, 1000),
        (2, 1024),
        (2, 5000),
        (1, 20000),
        (5, 40000),
    ];
    let small = [(1, 1), (3, 17), (2, 1024), (2, 5000)];
    let big = [(4096, 1024), (16384, 4096), (64, 65536)];
    plan.shapes(&checks, &small, &big)
        .into_iter()
        .map(|(s, timed)| {
            Job::new(NAME, rc(s), timed, move |ctx| {
                bench::<f32>(ctx, s, timed)?;
                bench::<f16>(ctx, s, timed)
            })
        })
        .collect()
}

/// The tolerance of a dtype, as the example.
fn tol(dtype: &str) -> f64 {
    if dtype == "f32" {
        1e-5
    } else {
        1e-2
    }
}

fn bench<T: Elem + LayerNorm>(ctx: &mut Ctx, (rows, n): (usize, usize), timed: bool) -> Res<()> {
    let mut rng = Rng::new((rows * 31 + n) as u64);
    let x: Vec<T> = rand_vec(&mut rng, rows * n, -2.0, 4.0);
    let w: Vec<T> = rand_vec(&mut rng, n, 0.5, 1.5);
    let b: Vec<T> = rand_vec(&mut rng, n, -0.5, 0.5);
    let want = crate::fused_layernorm_reference::layernorm(
        &widen(&x),
        &widen(&w),
        &widen(&b),
        n,
        EPS as f64,
    );
    let case = LnCase {
        x,
        w,
        b,
        want,
        rows: i32_of(rows)?,
        n: i32_of(n)?,
    };
    i32_of(rows * n)?;
    let meta = Meta {
        kernel: NAME,
        variant: None,
        shape: vec![rows as i64, n as i64],
        dtype: T::NAME,
        // Minimal traffic: read x, w, b once, write y once.
        bytes: ((2 * rows * n + 2 * n) * std::mem::size_of::<T>()) as f64,
        flops: None,
        timed,
    };
    ctx.bench(&meta, &case);
    Ok(())
}

struct LnCase<T> {
    x: Vec<T>,
    w: Vec<T>,
    b: Vec<T>,
    want: Vec<f64>,
    rows: i32,
    n: i32,
}

struct State<T> {
    x: Buffer<T>,
    w: Buffer<T>,
    b: Buffer<T>,
    y: Buffer<T>,
    s: Scratch<T>,
    /// Chunk statistics of the split-row form.
    stats: Buffer<f32>,
}

impl<T: Elem + LayerNorm> Case for LnCase<T> {
    type State = State<T>;

    fn setup(&self, dev: &Device) -> Res<State<T>> {
        let nan = vec![T::of(f32::NAN); self.x.len()];
        let rows = self.rows as usize;
        Ok(State {
            x: dev.upload(&self.x)?,
            w: dev.upload(&self.w)?,
            b: dev.upload(&self.b)?,
            y: dev.upload(&nan)?,
            s: Scratch {
                mean: dev.upload(&vec![f32::NAN; rows])?,
                var: dev.upload(&vec![f32::NAN; rows])?,
                xhat: dev.upload(&nan)?,
            },
            stats: dev.upload(&vec![f32::NAN; rows * splits(self.n) as usize * 2])?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State<T>, form: Form) -> Result<(), tile::Error> {
        let (r, n) = (self.rows, self.n);
        match form {
            Form::Fused => T::fused(dev, &s.x, &s.w, &s.b, &mut s.y, r, n, EPS),
            Form::Unfused => T::unfused(dev, &s.x, &s.w, &s.b, &mut s.s, &mut s.y, r, n, EPS),
            Form::SplitRows => T::split(dev, &s.x, &s.w, &s.b, &mut s.stats, &mut s.y, r, n, EPS),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State<T>, _: Form) -> Res<Vec<OutErr>> {
        Ok(vec![compare(
            "y",
            &fetch(dev, &s.y)?,
            &self.want,
            tol(T::NAME),
        )])
    }

    fn ops(&self, form: Form) -> String {
        let looped = self.n > 4096;
        match (form, looped) {
            (Form::Fused, false) => "1 kernel, 1 program per row, one tile per row".into(),
            (Form::Fused, true) => {
                "1 kernel, 1 program per row, 3 loops over 8192-wide tiles".into()
            }
            (Form::Unfused, _) => {
                "4 kernels: row mean, row variance, normalize (xhat in memory), scale and shift"
                    .into()
            }
            (Form::SplitRows, _) => format!(
                "2 kernels, program (4096 columns, row): chunk statistics, combine and normalize \
                 ({} chunks per row)",
                splits(self.n)
            ),
            (other, _) => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        // As the example: the split-row form only for rows the one-tile kernel cannot hold.
        if self.n > 4096 {
            vec![Form::Fused, Form::Unfused, Form::SplitRows]
        } else {
            Form::BOTH.to_vec()
        }
    }
}
