//! Softmax over rows, f32 (examples/fused_softmax): fused against row max, exp(x − max), row sum,
//! divide. x in [-4, 4).

use tile::Device;

use super::rows::RowFamily;
use super::{rc, Job, Plan};
use crate::fused_softmax::{fused, unfused, Scratch};
use crate::measure::Res;

static FAMILY: RowFamily<Scratch> = RowFamily {
    name: "fused_softmax",
    range: (-4.0, 4.0),
    reference,
    out: "out",
    scratch,
    fused,
    unfused,
    ops: [
        "1 kernel, 1 program per row",
        "4 kernels: row max, exp(x - max), row sum, divide",
    ],
};

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let small = [(1, 1), (3, 17), (4, 1000), (2, 5000)];
    let big = [(1024, 512), (16384, 4096), (4096, 32768)];
    plan.shapes(&small, &small, &big)
        .into_iter()
        .map(|(s, timed)| {
            Job::new(FAMILY.name, rc(s), timed, move |ctx| {
                FAMILY.bench(ctx, s, timed)
            })
        })
        .collect()
}

fn reference(x: &[f32], n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        out.extend(row.iter().map(|&v| (v as f64 - m).exp() / s));
    }
    out
}

fn scratch(dev: &Device, rows: usize, len: usize) -> Res<Scratch> {
    Ok(Scratch {
        m: dev.upload(&vec![f32::NAN; rows])?,
        y: dev.upload(&vec![f32::NAN; len])?,
        s: dev.upload(&vec![f32::NAN; rows])?,
    })
}
