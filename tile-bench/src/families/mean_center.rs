//! Row mean centering, `y = x − mean(row)`, f32 (examples/mean_center): fused against row mean,
//! then subtract. x in [-1, 3).

use tile::{Buffer, Device};

use super::rows::RowFamily;
use super::{rc, Job, Plan};
use crate::mean_center::{fused, unfused};
use crate::measure::Res;

static FAMILY: RowFamily<Buffer<f32>> = RowFamily {
    name: "mean_center",
    range: (-1.0, 3.0),
    reference,
    out: "y",
    scratch,
    fused,
    unfused,
    ops: [
        "1 kernel, 1 program per row",
        "2 kernels: row mean, subtract",
    ],
};

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let checks = [(1, 1), (3, 17), (1, 1000), (2, 4096), (2, 5000), (1, 8192)];
    let small = [(1, 1), (3, 17), (2, 4096), (2, 5000)];
    plan.shapes(&checks, &small, &[(16384, 4096)])
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
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        out.extend(row.iter().map(|&v| v as f64 - mean));
    }
    out
}

/// The row means.
fn scratch(dev: &Device, rows: usize, _len: usize) -> Res<Buffer<f32>> {
    Ok(dev.upload(&vec![f32::NAN; rows])?)
}
