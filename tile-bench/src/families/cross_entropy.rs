//! Cross-entropy forward + backward over the rows of a logits matrix (examples/cross_entropy):
//! the mean loss over rows whose label is not -100 (no label smoothing, as the baseline runs it)
//! and the gradient written in place of the logits. Fused is the example's `launch_tuned`: the
//! fused form its tuner timed fastest at the shape's first launch; rule (`tile_rule`) is the
//! form the hand-written rule it replaced picks (`ce::Form::best`); unfused is the example's
//! forward and backward kernels. Logits in [-8, 8), every 7th
//! row ignored (the example's inputs). Traffic: one read of the logits, one write of the
//! gradient, as `baseline.py` counts it.

use tile::{bf16, Device};

use super::{i32_of, rc, Job, Plan};
use crate::ce::{self, Logit};
use crate::measure::{compare, fetch, not_a_form, Case, Ctx, Elem, Form, Meta, OutErr, Res};

const NAME: &str = "cross_entropy";

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let checks = [(1, 1), (17, 1000), (9, 32000), (3, 1024), (8, 3000)];
    let small = [(1, 1), (17, 1000), (9, 32000)];
    // The last three are shapes the form rule was not measured on (for the autotuned form).
    let big = [
        (8192, 32000),
        (4096, 128256),
        (16384, 50257),
        (1024, 256000),
        (65536, 1024),
    ];
    plan.shapes(&checks, &small, &big)
        .into_iter()
        .map(|(s, timed)| {
            Job::new(NAME, rc(s), timed, move |ctx| {
                bench::<bf16>(ctx, s, timed)?;
                bench::<f32>(ctx, s, timed)
            })
        })
        .collect()
}

fn bench<T: Elem + Logit>(ctx: &mut Ctx, (rows, v): (usize, usize), timed: bool) -> Res<()> {
    let (logits, labels) = ce::inputs::<T>(rows, v, (rows * 977 + v) as u64);
    let wide: Vec<f32> = logits.iter().map(|&x| Logit::to_f32(x)).collect();
    let (mean, _, grad) = ce::reference(&wide, &labels, v, 0.0);
    i32_of(rows * v)?;
    let case = CeCase {
        logits,
        labels,
        v,
        mean,
        grad,
    };
    let meta = Meta {
        kernel: NAME,
        variant: None,
        shape: vec![rows as i64, v as i64],
        dtype: <T as Elem>::NAME,
        bytes: (2 * rows * v * std::mem::size_of::<T>()) as f64,
        flops: None,
        timed,
    };
    ctx.bench(&meta, &case);
    Ok(())
}

struct CeCase<T> {
    logits: Vec<T>,
    labels: Vec<i32>,
    v: usize,
    mean: f64,
    grad: Vec<f64>,
}

impl<T: Elem + Logit> CeCase<T> {
    fn form(&self, form: Form) -> Result<ce::Form, tile::Error> {
        match form {
            Form::Rule => Ok(ce::Form::best::<T>(self.v)),
            Form::Unfused => Ok(ce::Form::Unfused),
            other => Err(not_a_form(other)),
        }
    }
}

impl<T: Elem + Logit> Case for CeCase<T> {
    type State = ce::Case<T>;

    fn setup(&self, dev: &Device) -> Res<ce::Case<T>> {
        ce::case(dev, &self.logits, &self.labels, self.v, 0.0)
    }

    fn run(&self, dev: &Device, s: &mut ce::Case<T>, form: Form) -> Result<(), tile::Error> {
        if form == Form::Fused {
            return ce::launch_tuned(dev, s).map(|_| ());
        }
        ce::launch(dev, s, self.form(form)?)
    }

    fn verify(&self, dev: &Device, s: &ce::Case<T>, _: Form) -> Res<Vec<OutErr>> {
        let tol = ce::tolerance::<T>();
        Ok(vec![
            compare("loss", &fetch(dev, &s.mean)?, &[self.mean], tol),
            compare("grad", &fetch(dev, &s.logits)?, &self.grad, tol),
        ])
    }

    fn ops(&self, form: Form) -> String {
        if form == Form::Fused {
            let chosen = ce::tuned_form::<T>(self.labels.len(), self.v)
                .map_or("not yet tuned", |f| f.name());
            return format!(
                "the fused form timed fastest at the first launch ({chosen}); the mean by an \
                 atomic add"
            );
        }
        match self.form(form) {
            Ok(f) => format!("{}; the mean by an atomic add", f.name()),
            Err(e) => e.to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused, Form::Rule, Form::Unfused]
    }
}
