//! The measuring core: what a benchmark case provides ([`Case`]: set-up, launch of either form,
//! check against a float64 reference), and [`Ctx::bench`], which checks each form, times it only if
//! the check passed, adds CUDA-graph timings for launch-bound sizes, and records every outcome as
//! a [`Row`].

use std::time::Instant;

use indicatif::ProgressBar;
use serde::Serialize;
use tile::{bf16, f16, Device};

use crate::common;

/// The error type of everything that can fail here (as the examples' helpers use).
pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The forms of a kernel family: every family has the first two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// One kernel.
    Fused,
    /// The sequence of kernels PyTorch eager would run, intermediates in memory.
    Unfused,
    /// Layer norm's split-row form for few wide rows (two kernels, each row over several
    /// programs), which the example times next to the fused kernel for rows wider than 4096.
    SplitRows,
    /// The dropout kernels' other mask: one Philox evaluation per four elements (Triton's
    /// `tl.rand4x` words), which the examples time next to the `tl.rand(seed, i)` mask.
    Words4,
    /// A GEMM as the guide writes it, with none of the `gemm` example's tuning
    /// (`user_gemm::guide_gemm`).
    User,
    /// Triton's tutorial matmul in its own structure (`user_gemm::tutorial_gemm`).
    Tutorial,
    /// The family's autotuned kernel (`autotune`: configurations timed at the first launch).
    Tuned,
    /// The family's kernel written with tensor descriptors (`make_tensor_descriptor`), whose
    /// tiles the tensor memory accelerator copies on Hopper.
    Descriptor,
    /// The fused kernel on the configuration a hand-written shape rule picks, where the
    /// family's fused form is autotuned (the rule it replaced, kept for the comparison).
    Rule,
}

impl Form {
    /// Fused and unfused, fused first (its time decides whether graphs are timed).
    pub const BOTH: [Form; 2] = [Form::Fused, Form::Unfused];

    /// The `impl` field of a row.
    pub fn impl_name(self) -> &'static str {
        match self {
            Form::Fused => "tile_fused",
            Form::Unfused => "tile_unfused",
            Form::SplitRows => "tile_split_rows",
            Form::Words4 => "tile_words4",
            Form::User => "tile_user",
            Form::Tutorial => "tile_tutorial",
            Form::Tuned => "tile_tuned",
            Form::Descriptor => "tile_desc",
            Form::Rule => "tile_rule",
        }
    }
}

/// The error for a form a case does not have (its `forms` does not list it, so the bench never
/// asks for it).
pub fn not_a_form(form: Form) -> tile::Error {
    tile::Error::Args(format!("{form:?} is not a form of this kernel family"))
}

/// An element type of the benchmarks' buffers, with the host-side conversions.
pub trait Elem: tile::Element {
    /// The dtype name of the rows (`f32`, `f16`, `bf16`).
    const NAME: &'static str;
    /// Rounds an f32 to this type.
    fn of(v: f32) -> Self;
    /// Widens to f32 (exactly).
    fn f(self) -> f32;
}

impl Elem for f32 {
    const NAME: &'static str = "f32";
    fn of(v: f32) -> f32 {
        v
    }
    fn f(self) -> f32 {
        self
    }
}

impl Elem for f16 {
    const NAME: &'static str = "f16";
    fn of(v: f32) -> f16 {
        f16::from_f32(v)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}

impl Elem for bf16 {
    const NAME: &'static str = "bf16";
    fn of(v: f32) -> bf16 {
        bf16::from_f32(v)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}

/// `n` values uniform in `[lo, hi)` rounded to `T`, from `rng`.
pub fn rand_vec<T: Elem>(rng: &mut common::Rng, n: usize, lo: f32, hi: f32) -> Vec<T> {
    (0..n).map(|_| T::of(rng.uniform(lo, hi))).collect()
}

/// Widens a vector of `T` to f32.
pub fn widen<T: Elem>(v: &[T]) -> Vec<f32> {
    v.iter().map(|&e| e.f()).collect()
}

/// Downloads a buffer and widens it to f32.
pub fn fetch<T: Elem>(dev: &Device, b: &tile::Buffer<T>) -> Res<Vec<f32>> {
    Ok(widen(&dev.download(b)?))
}

/// One output compared with its reference.
#[derive(Clone, Debug, Serialize)]
pub struct OutErr {
    /// The output's name.
    pub output: String,
    /// ‖got − want‖₂ / ‖want‖₂ (∞ when an element is not finite or the lengths differ).
    pub rel_l2: f64,
    /// max |got − want| (∞ as above).
    pub max_abs: f64,
    /// The tolerance on `rel_l2`.
    pub tol: f64,
    /// `rel_l2 <= tol`.
    pub ok: bool,
}

/// Compares `got` with the float64 reference `want`. NaN or ∞ in `got` never passes, so an output
/// left at its NaN poison fails.
pub fn compare(output: &str, got: &[f32], want: &[f64], tol: f64) -> OutErr {
    let (mut num, mut den, mut max_abs) = (0.0f64, 0.0f64, 0.0f64);
    let mut finite = got.len() == want.len();
    for (&g, &w) in got.iter().zip(want) {
        if !g.is_finite() {
            finite = false;
            break;
        }
        let d = g as f64 - w;
        num += d * d;
        den += w * w;
        max_abs = max_abs.max(d.abs());
    }
    let (rel_l2, max_abs) = if !finite {
        (f64::INFINITY, f64::INFINITY)
    } else if den == 0.0 {
        (num.sqrt(), max_abs)
    } else {
        ((num / den).sqrt(), max_abs)
    };
    OutErr {
        output: output.into(),
        rel_l2,
        max_abs,
        tol,
        ok: rel_l2 <= tol,
    }
}

/// An output that must equal its reference bit for bit (0 error when it does, ∞ when not).
pub fn exact(output: &str, same: bool) -> OutErr {
    let e = if same { 0.0 } else { f64::INFINITY };
    OutErr {
        output: output.into(),
        rel_l2: e,
        max_abs: e,
        tol: 0.0,
        ok: same,
    }
}

/// What one benchmark case of a kernel family provides. `setup` makes fresh device state (inputs
/// uploaded, outputs poisoned with NaN where they are not also inputs); `run` launches one form on
/// it; `verify` compares that form's outputs with the float64 reference after one `run` from fresh
/// state.
pub trait Case {
    /// The device buffers of one run.
    type State;
    /// Fresh state on `dev`.
    fn setup(&self, dev: &Device) -> Res<Self::State>;
    /// Launches `form`.
    fn run(&self, dev: &Device, s: &mut Self::State, form: Form) -> Result<(), tile::Error>;
    /// Checks `form`'s outputs.
    fn verify(&self, dev: &Device, s: &Self::State, form: Form) -> Res<Vec<OutErr>>;
    /// The kernels `form` launches, in words.
    fn ops(&self, form: Form) -> String;
    /// The forms this case has, fused first.
    fn forms(&self) -> Vec<Form> {
        Form::BOTH.to_vec()
    }
}

/// What identifies a case (the join key of `bench/join.py`) and how much it moves.
#[derive(Clone, Debug)]
pub struct Meta {
    /// Kernel family, as `bench/python/baseline.py` names it.
    pub kernel: &'static str,
    /// Variant within the family (a chain, a GELU form, an activation), as the baseline names it.
    pub variant: Option<&'static str>,
    /// Shape, as the baseline writes it.
    pub shape: Vec<i64>,
    /// Storage dtype.
    pub dtype: &'static str,
    /// Minimal traffic in bytes: every input read once, every output written once.
    pub bytes: f64,
    /// Floating-point operations, where the family reports a rate of them.
    pub flops: Option<f64>,
    /// Timed (else checked only).
    pub timed: bool,
}

/// One measurement (or one check-only result): the fields of `bench/python/baseline.py`'s rows.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Kernel family.
    pub kernel: String,
    /// Variant, or null.
    pub variant: Option<String>,
    /// Shape.
    pub shape: Vec<i64>,
    /// Storage dtype.
    pub dtype: String,
    /// `tile_fused` or `tile_unfused`.
    #[serde(rename = "impl")]
    pub imp: String,
    /// A CUDA-graph replay (else plain launches).
    pub graph: bool,
    /// Median time in milliseconds (null when not timed).
    pub ms: Option<f64>,
    /// Effective GB/s from `bytes` and `ms`.
    pub gbps: Option<f64>,
    /// `gbps` as a percentage of the copy bandwidth measured at the start.
    pub pct_copy: Option<f64>,
    /// Every check of this row passed and nothing raised.
    pub ok: bool,
    /// Minimal traffic in bytes.
    pub bytes: f64,
    /// GFLOP/s, for the families that count operations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gflops: Option<f64>,
    /// The kernels launched.
    pub ops: String,
    /// Relative L2 error of the first output.
    pub rel_err: Option<f64>,
    /// Largest absolute error over the outputs.
    pub max_err: Option<f64>,
    /// Every output's comparison.
    pub errors: Vec<OutErr>,
    /// Why the row has no time, when something raised or a check failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Row {
    fn new(m: &Meta, form: Form, graph: bool, ops: String) -> Row {
        Row {
            kernel: m.kernel.into(),
            variant: m.variant.map(String::from),
            shape: m.shape.clone(),
            dtype: m.dtype.into(),
            imp: form.impl_name().into(),
            graph,
            ms: None,
            gbps: None,
            pct_copy: None,
            ok: false,
            bytes: m.bytes,
            gflops: None,
            ops,
            rel_err: None,
            max_err: None,
            errors: Vec::new(),
            error: None,
        }
    }

    fn set_errors(&mut self, errors: Vec<OutErr>) {
        self.ok = errors.iter().all(|e| e.ok);
        self.rel_err = errors.first().map(|e| e.rel_l2);
        self.max_err = errors.iter().map(|e| e.max_abs).reduce(f64::max);
        self.errors = errors;
    }

    fn set_time(&mut self, ms: f64, m: &Meta, copy_gbps: f64) {
        let gbps = m.bytes / (ms * 1e-3) / 1e9;
        self.ms = Some(ms);
        self.gbps = Some(gbps);
        self.pct_copy = Some(100.0 * gbps / copy_gbps);
        self.gflops = m.flops.map(|f| f / (ms * 1e-3) / 1e9);
    }

    /// `kernel/variant shape dtype impl [graph]`, for messages.
    pub fn label(&self) -> String {
        let shape: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        format!(
            "{}{} {} {} {}{}",
            self.kernel,
            self.variant
                .as_deref()
                .map(|v| format!("/{v}"))
                .unwrap_or_default(),
            shape.join("x"),
            self.dtype,
            self.imp,
            if self.graph { " (CUDA graph)" } else { "" }
        )
    }
}

/// The state of a run: the device, the timing settings and everything measured so far.
pub struct Ctx {
    /// Where the kernels run.
    pub dev: Device,
    /// Copy bandwidth (GB/s) measured at the start, the reference of `pct_copy`.
    pub copy_gbps: f64,
    /// Untimed launches before timing.
    pub warmup: usize,
    /// Timed launches (median taken).
    pub reps: usize,
    /// CUDA graphs for every size.
    pub graph_all: bool,
    /// Timed rows.
    pub rows: Vec<Row>,
    /// Check-only results.
    pub checks: Vec<Row>,
    /// One line per failed check or raised error.
    pub failures: Vec<String>,
    pb: ProgressBar,
}

impl Ctx {
    /// A context on `dev`, printing through `pb`.
    pub fn new(
        dev: Device,
        copy_gbps: f64,
        warmup: usize,
        reps: usize,
        graph_all: bool,
        pb: ProgressBar,
    ) -> Ctx {
        Ctx {
            dev,
            copy_gbps,
            warmup,
            reps,
            graph_all,
            rows: Vec::new(),
            checks: Vec::new(),
            failures: Vec::new(),
            pb,
        }
    }

    /// Prints a line above the progress bar (or plainly when the bar is hidden).
    pub fn say(&self, line: &str) {
        self.pb.suspend(|| println!("{line}"));
    }

    /// Checks and (if `m.timed`) times every form of `case`; records every outcome. Errors of one
    /// form are recorded as failed rows and do not stop the others.
    pub fn bench<C: Case>(&mut self, m: &Meta, case: &C) {
        let mut timed = Vec::new();
        let mut fused_ms = None;
        for form in case.forms() {
            match self.plain(m, case, form) {
                Ok(Some(ms)) => {
                    timed.push(form);
                    if form == Form::Fused {
                        fused_ms = Some(ms);
                    }
                }
                Ok(None) => {}
                Err(e) => self.raised(m, case, form, false, &e.to_string()),
            }
        }
        let launch_bound = fused_ms.is_some_and(|ms| ms < common::GRAPH_BELOW_MS);
        if self.dev.is_cuda() && (launch_bound || self.graph_all) {
            for form in timed {
                if let Err(e) = self.graph(m, case, form) {
                    self.raised(m, case, form, true, &e.to_string());
                }
            }
        }
    }

    /// Records a row for a form that raised.
    fn raised<C: Case>(&mut self, m: &Meta, case: &C, form: Form, graph: bool, e: &str) {
        let mut row = Row::new(m, form, graph, case.ops(form));
        row.error = Some(e.to_string());
        self.say(&format!("check {}: raised: {e} -> FAILED", row.label()));
        self.failures.push(format!("{}: {e}", row.label()));
        if m.timed {
            self.rows.push(row);
        } else {
            self.checks.push(row);
        }
    }

    /// One check from fresh state, then (if timed and correct) the median time of plain launches.
    fn plain<C: Case>(&mut self, m: &Meta, case: &C, form: Form) -> Res<Option<f64>> {
        let dev = self.dev.clone();
        let mut s = case.setup(&dev)?;
        case.run(&dev, &mut s, form)?;
        dev.synchronize()?;
        let errors = case.verify(&dev, &s, form)?;
        let mut row = Row::new(m, form, false, case.ops(form));
        row.set_errors(errors);
        self.report_check(&row);
        if !m.timed {
            self.checks.push(row);
            return Ok(None);
        }
        if !row.ok {
            row.error = Some("check failed: not timed".into());
            self.rows.push(row);
            return Ok(None);
        }
        let ms = self.time(|| case.run(&dev, &mut s, form))?;
        row.set_time(ms, m, self.copy_gbps);
        self.rows.push(row);
        Ok(Some(ms))
    }

    /// A CUDA graph of one run of `form` (captured from fresh state, its output checked after one
    /// replay), timed by [`common::graph_time_ms`]; not timed if the check fails.
    fn graph<C: Case>(&mut self, m: &Meta, case: &C, form: Form) -> Res<()> {
        let mut errors = None;
        let (ms, ok) = common::graph_time_ms(
            &self.dev,
            |d| case.setup(d),
            |d, s| case.run(d, s, form),
            |d, s| {
                let e = case.verify(d, s, form)?;
                let ok = e.iter().all(|x| x.ok);
                errors = Some(e);
                Ok(ok)
            },
        )?;
        let mut row = Row::new(m, form, true, case.ops(form));
        row.set_errors(errors.unwrap_or_default());
        row.ok &= ok;
        self.report_check(&row);
        if row.ok {
            row.set_time(ms, m, self.copy_gbps);
        } else {
            row.error = Some("check of the graph's output failed: not timed".into());
        }
        self.rows.push(row);
        Ok(())
    }

    /// Prints a check line and records a failure.
    fn report_check(&mut self, row: &Row) {
        let detail: Vec<String> = row
            .errors
            .iter()
            .map(|e| {
                format!(
                    "{} rel {:.2e} max abs {:.2e} (tol {:.0e})",
                    e.output, e.rel_l2, e.max_abs, e.tol
                )
            })
            .collect();
        let verdict = if row.ok { "ok" } else { "FAILED" };
        self.say(&format!(
            "check {:<58}: {} -> {verdict}",
            row.label(),
            detail.join(", ")
        ));
        if !row.ok {
            self.failures
                .push(format!("{}: {}", row.label(), detail.join(", ")));
        }
    }

    /// Median time (ms) of one run of `f` over `self.reps` samples after `self.warmup` untimed
    /// runs: on a GPU, device time sampled as `bench/python/baseline.py` samples PyTorch and
    /// Triton (batches of back-to-back launches between CUDA events, the L2 flushed before each
    /// sample: [`common::time_ms`]); on the interpreter, by the host clock (meaningless
    /// as a kernel time, but it exercises the path).
    pub fn time(&self, mut f: impl FnMut() -> Result<(), tile::Error>) -> Res<f64> {
        match self.dev.stream() {
            Some(stream) => common::time_ms(stream, self.warmup, self.reps, f),
            None => {
                for _ in 0..self.warmup {
                    f()?;
                }
                let mut times = Vec::with_capacity(self.reps);
                for _ in 0..self.reps.max(1) {
                    let t = Instant::now();
                    f()?;
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                }
                Ok(median(&mut times))
            }
        }
    }
}

/// The median of `v` (the upper one of an even count, as the examples' `time_ms`); 0 when empty.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case without kernels: `run` writes ones (or raises for the unfused form), the reference
    /// is ones (or twos, to fail).
    struct Fake {
        fail: bool,
        raise: bool,
    }

    impl Case for Fake {
        type State = Vec<f32>;
        fn setup(&self, _: &Device) -> Res<Vec<f32>> {
            Ok(vec![f32::NAN; 4])
        }
        fn run(&self, _: &Device, s: &mut Vec<f32>, form: Form) -> Result<(), tile::Error> {
            if self.raise && form == Form::Unfused {
                return Err(tile::Error::Args("boom".into()));
            }
            s.fill(1.0);
            Ok(())
        }
        fn verify(&self, _: &Device, s: &Vec<f32>, _: Form) -> Res<Vec<OutErr>> {
            let want = if self.fail { 2.0 } else { 1.0 };
            Ok(vec![compare("out", s, &[want; 4], 1e-6)])
        }
        fn ops(&self, _: Form) -> String {
            "fake".into()
        }
    }

    fn meta(timed: bool) -> Meta {
        Meta {
            kernel: "fake",
            variant: Some("v"),
            shape: vec![4],
            dtype: "f32",
            bytes: 32.0,
            flops: None,
            timed,
        }
    }

    #[test]
    fn bench_checks_before_timing_and_records_every_outcome() {
        let mut ctx = Ctx::new(
            Device::interpreter(),
            1.0,
            0,
            3,
            false,
            ProgressBar::hidden(),
        );
        ctx.bench(
            &meta(true),
            &Fake {
                fail: false,
                raise: false,
            },
        );
        assert_eq!(ctx.rows.len(), 2);
        assert!(ctx
            .rows
            .iter()
            .all(|r| r.ok && r.ms.is_some() && r.gbps.is_some()));
        assert_eq!(ctx.rows[1].imp, "tile_unfused");
        assert!(ctx.failures.is_empty() && ctx.checks.is_empty());

        ctx.bench(
            &meta(false),
            &Fake {
                fail: false,
                raise: false,
            },
        );
        assert_eq!((ctx.rows.len(), ctx.checks.len()), (2, 2));
        assert!(ctx.checks.iter().all(|r| r.ok && r.ms.is_none()));

        // A failed check is recorded, not timed.
        ctx.bench(
            &meta(true),
            &Fake {
                fail: true,
                raise: false,
            },
        );
        let failed = &ctx.rows[2..];
        assert!(failed
            .iter()
            .all(|r| !r.ok && r.ms.is_none() && r.error.is_some()));
        assert_eq!(ctx.failures.len(), 2);

        // A form that raises is a failed row; the other form still runs.
        ctx.bench(
            &meta(true),
            &Fake {
                fail: false,
                raise: true,
            },
        );
        let (fused, unfused) = (&ctx.rows[4], &ctx.rows[5]);
        assert!(fused.ok && fused.ms.is_some());
        assert!(!unfused.ok && unfused.error.as_deref().is_some_and(|e| e.contains("boom")));
        assert_eq!(ctx.failures.len(), 3);
    }

    #[test]
    fn compare_fails_on_nan_and_length_and_passes_close_values() {
        assert!(compare("o", &[1.0, 2.0], &[1.0, 2.0], 0.0).ok);
        assert!(!compare("o", &[1.0, f32::NAN], &[1.0, 2.0], 1.0).ok);
        assert!(!compare("o", &[1.0], &[1.0, 2.0], 1.0).ok);
        let e = compare("o", &[1.0, 2.001], &[1.0, 2.0], 1e-3);
        assert!(e.ok && e.rel_l2 > 0.0 && (e.max_abs - 0.001).abs() < 1e-6);
        assert!(!exact("v", false).ok && exact("v", true).ok);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut []), 0.0);
    }
}
