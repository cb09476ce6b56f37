//! The shape shared by the f32 row families (fused_softmax, mean_center): `y = f(x)` over a
//! `rows × n` matrix, one program per row fused, against an unfused form with its own scratch
//! buffers; x uniform in a family's range, checked against a float64 reference.

use tile::{Buffer, Device, Error};

use super::i32_of;
use crate::common::Rng;
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

/// A fused launch: `(dev, x, y, rows, n)`.
type Fused = fn(&Device, &Buffer<f32>, &mut Buffer<f32>, i32, i32) -> Result<(), Error>;
/// An unfused launch with scratch `S`: `(dev, x, scratch, y, rows, n)`.
type Unfused<S> =
    fn(&Device, &Buffer<f32>, &mut S, &mut Buffer<f32>, i32, i32) -> Result<(), Error>;

/// One f32 row family: its kernels, its scratch, its reference.
pub(super) struct RowFamily<S> {
    /// Kernel family name (the join key).
    pub name: &'static str,
    /// The range `x` is drawn from.
    pub range: (f32, f32),
    /// The exact result of rows of `n` (row-major), in f64.
    pub reference: fn(&[f32], usize) -> Vec<f64>,
    /// The output's name in check lines.
    pub out: &'static str,
    /// The unfused form's scratch for `rows` rows of `len` elements in all, NaN-filled.
    pub scratch: fn(&Device, usize, usize) -> Res<S>,
    /// The fused form.
    pub fused: Fused,
    /// The unfused form.
    pub unfused: Unfused<S>,
    /// What each form launches, in words: fused, unfused.
    pub ops: [&'static str; 2],
}

impl<S> RowFamily<S> {
    /// Checks (and if `timed`, times) both forms on `rows × n`.
    pub fn bench(&'static self, ctx: &mut Ctx, (rows, n): (usize, usize), timed: bool) -> Res<()> {
        let x = Rng::new((rows * 31 + n) as u64).vec(rows * n, self.range.0, self.range.1);
        let want = (self.reference)(&x, n);
        let case = RowCase {
            family: self,
            x,
            want,
            rows: i32_of(rows)?,
            n: i32_of(n)?,
        };
        i32_of(rows * n)?;
        let meta = Meta {
            kernel: self.name,
            variant: None,
            shape: vec![rows as i64, n as i64],
            dtype: "f32",
            // Minimal traffic: read x once, write y once.
            bytes: 2.0 * 4.0 * (rows * n) as f64,
            flops: None,
            timed,
        };
        ctx.bench(&meta, &case);
        Ok(())
    }
}

struct RowCase<S: 'static> {
    family: &'static RowFamily<S>,
    x: Vec<f32>,
    want: Vec<f64>,
    rows: i32,
    n: i32,
}

struct State<S> {
    x: Buffer<f32>,
    y: Buffer<f32>,
    scratch: S,
}

impl<S> Case for RowCase<S> {
    type State = State<S>;

    fn setup(&self, dev: &Device) -> Res<State<S>> {
        Ok(State {
            x: dev.upload(&self.x)?,
            y: dev.upload(&vec![f32::NAN; self.x.len()])?,
            scratch: (self.family.scratch)(dev, self.rows as usize, self.x.len())?,
        })
    }

    fn run(&self, dev: &Device, s: &mut State<S>, form: Form) -> Result<(), Error> {
        let f = self.family;
        match form {
            Form::Fused => (f.fused)(dev, &s.x, &mut s.y, self.rows, self.n),
            Form::Unfused => (f.unfused)(dev, &s.x, &mut s.scratch, &mut s.y, self.rows, self.n),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &State<S>, _: Form) -> Res<Vec<OutErr>> {
        Ok(vec![compare(
            self.family.out,
            &dev.download(&s.y)?,
            &self.want,
            1e-5,
        )])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => self.family.ops[0].into(),
            Form::Unfused => self.family.ops[1].into(),
            other => not_a_form(other).to_string(),
        }
    }
}
