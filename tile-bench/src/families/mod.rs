//! The kernel families, one file each, in the order of the tables. Each turns the plan (GPU or
//! interpreter, full or quick) into jobs: one per shape, covering that shape's dtypes and variants.
//!
//! Shapes per family, as in `bench/python/baseline.py` (which took them from the examples):
//! `checks` are the examples' awkward shapes, checked but not timed in a full GPU run; `small` are
//! the baseline's small shapes, timed by `--quick` (so a quick run joins a quick baseline) and run
//! by the interpreter's smoke test; `big` are the examples' GPU sizes, checked then timed.

mod act_and_mul;
mod cross_entropy;
mod dropout;
mod elementwise_chains;
mod flash_attention;
mod fp8_gemm;
mod fused_add_mul;
mod fused_add_rmsnorm;
mod fused_bias_gelu;
mod fused_layernorm;
mod fused_softmax;
mod gemm;
mod gemm_bias_act;
mod mean_center;
mod moe_align;
mod qk_norm_rope;
mod rows;
mod selective_scan;
mod softmax_regression;
mod softmax_regression_simple;
mod tutorials;

use crate::measure::{Ctx, Res};

/// Every family, in table order (the names `--filter` matches and the rows' `kernel`).
pub const FAMILIES: [&str; 21] = [
    "fused_add_mul",
    "elementwise_chains",
    "fused_bias_gelu",
    "act_and_mul",
    "fused_layernorm",
    "fused_add_rmsnorm",
    "fused_softmax",
    "mean_center",
    "qk_norm_rope",
    "softmax_regression_simple",
    "gemm",
    "fp8_gemm",
    "gemm_bias_act",
    "softmax_regression",
    "cross_entropy",
    "fused_bias_gelu_dropout",
    "residual_bias_dropout",
    "moe_align",
    "flash_attention",
    "selective_scan",
    "tutorials",
];

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// On a GPU (else the interpreter's smoke test).
    pub gpu: bool,
    /// `--quick`.
    pub quick: bool,
    /// `--attn-parts`: the flash_attention family's parts to run (empty: all).
    pub attn_parts: Vec<String>,
    /// `--attn-dtypes`: the dtypes of the flash_attention family's fwd and bwd grid (empty: all).
    pub attn_dtypes: Vec<String>,
}

impl Plan {
    /// `(shape, timed)` pairs: a full GPU run checks `checks` and checks + times `big`; a quick
    /// GPU run and the interpreter check + time `small`.
    pub fn shapes<S: Copy>(&self, checks: &[S], small: &[S], big: &[S]) -> Vec<(S, bool)> {
        if self.gpu && !self.quick {
            let c = checks.iter().map(|&s| (s, false));
            c.chain(big.iter().map(|&s| (s, true))).collect()
        } else {
            small.iter().map(|&s| (s, true)).collect()
        }
    }
}

/// The work of a job.
pub type JobFn = Box<dyn FnOnce(&mut Ctx) -> Res<()>>;

/// A unit of work (one progress-bar step).
pub struct Job {
    /// The family (what `--filter` matches).
    pub family: &'static str,
    /// What the step does, for the progress bar.
    pub label: String,
    /// The work.
    pub run: JobFn,
}

impl Job {
    /// A job of `family` for one shape.
    pub fn new(
        family: &'static str,
        label: String,
        timed: bool,
        run: impl FnOnce(&mut Ctx) -> Res<()> + 'static,
    ) -> Job {
        Job {
            family,
            label: format!("{family} {label}{}", if timed { "" } else { " (check)" }),
            run: Box::new(run),
        }
    }
}

/// Every job of every family, in table order.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    [
        fused_add_mul::jobs(plan),
        elementwise_chains::jobs(plan),
        fused_bias_gelu::jobs(plan),
        act_and_mul::jobs(plan),
        fused_layernorm::jobs(plan),
        fused_add_rmsnorm::jobs(plan),
        fused_softmax::jobs(plan),
        mean_center::jobs(plan),
        qk_norm_rope::jobs(plan),
        softmax_regression_simple::jobs(plan),
        gemm::jobs(plan),
        fp8_gemm::jobs(plan),
        gemm_bias_act::jobs(plan),
        softmax_regression::jobs(plan),
        cross_entropy::jobs(plan),
        dropout::gelu_jobs(plan),
        dropout::residual_jobs(plan),
        moe_align::jobs(plan),
        flash_attention::jobs(plan),
        selective_scan::jobs(plan),
        tutorials::jobs(plan),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The `(rows, cols)` shapes of the families with a bias per column (fused_bias_gelu and the two
/// dropout families, whose examples check and time the same ones), as [`Plan::shapes`] pairs.
pub fn bias_matrix_shapes(plan: &Plan) -> Vec<((usize, usize), bool)> {
    let checks = [
        (1, 1),
        (1, 17),
        (17, 1),
        (3, 1000),
        (5, 1023),
        (2, 4096),
        (1000, 1000),
    ];
    plan.shapes(&checks, &[(1, 1), (17, 1), (5, 1023)], &[(16384, 4096)])
}

/// `rows x cols` as text.
pub fn rc((rows, cols): (usize, usize)) -> String {
    format!("{rows}x{cols}")
}

/// A host size as the i32 the kernels take, or an error.
pub fn i32_of(v: usize) -> Res<i32> {
    Ok(i32::try_from(v).map_err(|_| format!("{v} does not fit in i32"))?)
}
