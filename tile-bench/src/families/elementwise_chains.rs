//! Four element-wise chains on a `rows × cols` f32 matrix with a per-column bias and s = 0.75
//! (examples/elementwise_chains), each fused against one kernel per operation. x, y in [-3, 3),
//! bias in [-1, 1). Variants are named after the fused kernels, as the baseline names them.

use tile::Device;

use super::{i32_of, rc, Job, Plan};
use crate::common::Rng;
use crate::elementwise_chains::{Bufs, Chain};
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

const NAME: &str = "elementwise_chains";
const S: f32 = 0.75;

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let checks = [
        (1, 1),
        (1, 17),
        (17, 1),
        (3, 1000),
        (17, 17),
        (5, 1023),
        (2, 4096),
        (1000, 1000),
    ];
    let shapes = plan.shapes(&checks, &[(1, 1), (17, 17), (5, 1023)], &[(16384, 4096)]);
    shapes
        .into_iter()
        .map(|(s, timed)| Job::new(NAME, rc(s), timed, move |ctx| bench(ctx, s, timed)))
        .collect()
}

/// The variant name of a chain (its fused kernel's name).
fn variant(c: Chain) -> &'static str {
    match c {
        Chain::ReluScaleBias => "relu_scale_bias",
        Chain::AddRelu => "add_relu",
        Chain::AddTanhScale => "add_tanh_scale",
        Chain::BiasReluExp => "bias_relu_exp",
    }
}

/// The chain on one element, in f64.
fn reference(c: Chain, x: f32, y: f32, bias: f32) -> f64 {
    let (x, y, bias, s) = (x as f64, y as f64, bias as f64, S as f64);
    match c {
        Chain::ReluScaleBias => x.max(0.0) * s + bias,
        Chain::AddRelu => (x + y).max(0.0),
        Chain::AddTanhScale => (x + y).tanh() * s,
        Chain::BiasReluExp => (x + bias).max(0.0).exp(),
    }
}

struct Host {
    x: Vec<f32>,
    y: Vec<f32>,
    bias: Vec<f32>,
    rows: i32,
    cols: i32,
}

fn bench(ctx: &mut Ctx, (rows, cols): (usize, usize), timed: bool) -> Res<()> {
    let mut rng = Rng::new((rows * 7919 + cols) as u64);
    let n = rows * cols;
    let host = Host {
        x: rng.vec(n, -3.0, 3.0),
        y: rng.vec(n, -3.0, 3.0),
        bias: rng.vec(cols, -1.0, 1.0),
        rows: i32_of(rows)?,
        cols: i32_of(cols)?,
    };
    i32_of(n)?;
    for chain in Chain::ALL {
        let want = (0..n)
            .map(|i| reference(chain, host.x[i], host.y[i], host.bias[i % cols]))
            .collect();
        // Minimal traffic: x (and y) read once, the bias once, the output written once.
        let matrices = if chain.reads_y() { 3 } else { 2 };
        let bias = if chain.reads_y() { 0 } else { cols };
        let meta = Meta {
            kernel: NAME,
            variant: Some(variant(chain)),
            shape: vec![rows as i64, cols as i64],
            dtype: "f32",
            bytes: 4.0 * (matrices * n + bias) as f64,
            flops: None,
            timed,
        };
        ctx.bench(
            &meta,
            &ChainCase {
                host: &host,
                chain,
                want,
            },
        );
    }
    Ok(())
}

struct ChainCase<'a> {
    host: &'a Host,
    chain: Chain,
    want: Vec<f64>,
}

impl Case for ChainCase<'_> {
    type State = Bufs;

    fn setup(&self, dev: &Device) -> Res<Bufs> {
        let h = self.host;
        let nan = vec![f32::NAN; h.x.len()];
        Ok(Bufs {
            x: dev.upload(&h.x)?,
            y: dev.upload(&h.y)?,
            bias: dev.upload(&h.bias)?,
            out: dev.upload(&nan)?,
            t1: dev.upload(&nan)?,
            t2: dev.upload(&nan)?,
            rows: h.rows,
            cols: h.cols,
            s: S,
        })
    }

    fn run(&self, dev: &Device, s: &mut Bufs, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => self.chain.fused(dev, s),
            Form::Unfused => self.chain.unfused(dev, s),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, s: &Bufs, _: Form) -> Res<Vec<OutErr>> {
        Ok(vec![compare(
            "out",
            &dev.download(&s.out)?,
            &self.want,
            1e-5,
        )])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => format!(
                "1 kernel ({}), 1024 elements per program",
                variant(self.chain)
            ),
            Form::Unfused => format!(
                "{} ({} kernels)",
                self.chain.unfused_ops(),
                self.chain.unfused_ops().split(", ").count()
            ),
            other => not_a_form(other).to_string(),
        }
    }
}
