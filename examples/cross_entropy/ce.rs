//! The host side of `cross_entropy`: problems, the launches of each form, and the f64 reference
//! with the comparison (shared by the example and its interpreter test).

use tile::prelude::*;

use super::kernels;

/// Errors of the example.
pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The label of rows left out of the loss (PyTorch's default `ignore_index`).
pub const IGNORE: i32 = -100;

/// A storage type of the logits.
pub trait Logit: tile::Element + Copy {
    /// Its name in tables.
    const NAME: &'static str;
    /// `x` rounded to the type.
    fn from_f32(x: f32) -> Self;
    /// The value as `f32` (exact).
    fn to_f32(self) -> f32;
}

impl Logit for f32 {
    const NAME: &'static str = "f32";
    fn from_f32(x: f32) -> Self {
        x
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Logit for bf16 {
    const NAME: &'static str = "bf16";
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
}

/// How the loss and gradient are computed (see `kernels.rs`).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Form {
    /// `ce_loop`: two passes over column tiles, 8 warps.
    Loop,
    /// `ce_loop_wide`: the same with 16 warps, two programs per SM.
    Wide,
    /// `ce_loop_full`: 32 warps, 32768-wide tiles, one program per SM.
    Full,
    /// `ce_row`: the whole row in one tile (rows of at most [`ROW_MAX`] logits, a multiple of
    /// 8).
    Row,
    /// `ce_row16`: the same on 16 warps, two programs per SM.
    Row16,
    /// `ce_loop_any32`: two passes, 32 warps, 16384-wide tiles, rows of any length.
    Any32,
    /// `ce_rows` with 4 rows per program (rows of at most [`ROWS_MAX`] logits).
    Rows4,
    /// `ce_rows` with 8 rows per program.
    Rows8,
    /// `ce_forward` then `ce_backward`.
    Unfused,
}

impl Form {
    /// Every form, in the order the tables list them.
    pub const ALL: [Form; 9] = [
        Form::Loop,
        Form::Wide,
        Form::Full,
        Form::Row,
        Form::Row16,
        Form::Any32,
        Form::Rows4,
        Form::Rows8,
        Form::Unfused,
    ];

    /// Whether the form computes rows of `v` logits of type `T`.
    pub fn fits<T: Logit>(self, v: usize) -> bool {
        match self {
            Form::Row | Form::Row16 => v <= ROW_MAX && v % 8 == 0,
            Form::Full => v % 8 == 0,
            Form::Rows4 | Form::Rows8 => v <= ROWS_MAX,
            _ => true,
        }
    }
    /// The hand-written rule [`launch_tuned`] replaced (kept for the benchmark's comparison):
    /// the fused form measured fastest for rows of `v` logits of type `T` on the H100
    /// (docs/DECISIONS.md, "Cross-entropy"): in f32 the one-read kernel on 16 warps where it fits
    /// (1% ahead of 32 warps), in bf16 the 8-warp two-pass kernel for rows the one-read kernel
    /// would fit (93% of copy against 77%), the 32-warp two-pass one for longer aligned rows,
    /// and the 8-warp one, which takes any row, for the rest.
    #[allow(dead_code)] // tile-bench uses it; the example times every form
    pub fn best<T: Logit>(v: usize) -> Form {
        if Form::Row.fits::<T>(v) {
            if T::NAME == "f32" {
                Form::Row16
            } else {
                Form::Loop
            }
        } else if Form::Full.fits::<T>(v) {
            Form::Full
        } else {
            Form::Loop
        }
    }

    /// The form's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Form::Loop => "fused (1 kernel, 8 warps)",
            Form::Wide => "fused (1 kernel, 16 warps)",
            Form::Full => "fused (1 kernel, 32 warps)",
            Form::Row => "fused (1 kernel, one read, 32 warps)",
            Form::Row16 => "fused (1 kernel, one read, 16 warps)",
            Form::Any32 => "fused (1 kernel, 32 warps, any row)",
            Form::Rows4 => "fused (1 kernel, one read, 4 rows)",
            Form::Rows8 => "fused (1 kernel, one read, 8 rows)",
            Form::Unfused => "unfused (forward, backward)",
        }
    }
}

/// The relative error every form must stay within against the f64 reference: tight in f32,
/// the storage's rounding in bf16.
pub fn tolerance<T: Logit>() -> f64 {
    if T::NAME == "f32" {
        1e-5
    } else {
        1e-2
    }
}

/// The widest row `ce_row` holds.
pub const ROW_MAX: usize = 32768;

/// The widest row `ce_rows` holds (its `BLOCK`).
pub const ROWS_MAX: usize = 1024;

/// The column tile for rows of `v`: 1024 for short rows, else 8192.
fn block(v: usize) -> i32 {
    if v <= 1024 {
        1024
    } else {
        8192
    }
}

/// A problem on the device: `rows × v` logits (overwritten by the gradient), labels, outputs.
pub struct Case<T: Logit> {
    /// `rows × v` logits; the backward pass overwrites them with the gradient.
    pub logits: Buffer<T>,
    /// One label per row (`IGNORE` for an ignored row).
    pub labels: Buffer<i32>,
    /// The count of rows whose label is not ignored.
    pub valid: Buffer<i32>,
    /// Each row's log-sum-exp.
    pub lses: Buffer<f32>,
    /// Each row's loss.
    pub loss: Buffer<f32>,
    /// The mean loss over the rows not ignored.
    pub mean: Buffer<f32>,
    /// Rows.
    pub rows: usize,
    /// Columns (the vocabulary).
    pub v: usize,
    /// Label smoothing, 0 for none.
    pub smoothing: f32,
}

/// Logits in [-8, 8) rounded to `T`, labels uniform over the columns with every 7th row ignored,
/// row 1's label the last column.
pub fn inputs<T: Logit>(rows: usize, v: usize, seed: u64) -> (Vec<T>, Vec<i32>) {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let logits = (0..rows * v)
        .map(|_| T::from_f32((next() >> 40) as f32 / (1u64 << 24) as f32 * 16.0 - 8.0))
        .collect();
    let labels = (0..rows)
        .map(|r| match r {
            1 => v as i32 - 1,
            r if r % 7 == 3 => IGNORE,
            _ => (next() % v as u64) as i32,
        })
        .collect();
    (logits, labels)
}

/// Uploads `inputs`' logits and labels as a [`Case`] with zeroed outputs.
pub fn case<T: Logit>(
    dev: &Device,
    logits: &[T],
    labels: &[i32],
    v: usize,
    smoothing: f32,
) -> Res<Case<T>> {
    let rows = labels.len();
    Ok(Case {
        logits: dev.upload(logits)?,
        labels: dev.upload(labels)?,
        valid: dev.zeros::<i32>(1)?,
        lses: dev.zeros::<f32>(rows)?,
        loss: dev.zeros::<f32>(rows)?,
        mean: dev.zeros::<f32>(1)?,
        rows,
        v,
        smoothing,
    })
}

/// The fused forms [`launch_tuned`] times, in order.
pub const FUSED: [Form; 8] = {
    // Every form but the last, `Unfused`.
    let mut fused = [Form::Loop; 8];
    let mut i = 0;
    while i < fused.len() {
        fused[i] = Form::ALL[i];
        i += 1;
    }
    fused
};

static FUSED_CONFIGS: [tile::autotune::ConfigDesc; 8] = [
    tile::autotune::ConfigDesc::new("two passes, 8 warps"),
    tile::autotune::ConfigDesc::new("two passes, 16 warps"),
    tile::autotune::ConfigDesc::new("two passes, 32 warps"),
    tile::autotune::ConfigDesc::new("one read, 32 warps"),
    tile::autotune::ConfigDesc::new("one read, 16 warps"),
    tile::autotune::ConfigDesc::new("two passes, 32 warps, any row"),
    tile::autotune::ConfigDesc::new("one read, 4 rows a program"),
    tile::autotune::ConfigDesc::new("one read, 8 rows a program"),
];

/// The fused forms that take rows of `v` logits (key `[rows, v, dtype]`).
fn forms_that_fit(key: &[i64]) -> Vec<usize> {
    let v = key.get(1).copied().unwrap_or(0).max(0) as usize;
    (0..FUSED.len())
        .filter(|&i| FUSED[i].fits::<f32>(v))
        .collect()
}

/// [`launch_tuned`]'s tuner: one decision per shape, element type and device.
pub static TUNER: tile::autotune::Autotuner = tile::autotune::Autotuner::new(
    "cross_entropy",
    tile::autotune::source_hash(include_str!("kernels.rs")),
    &FUSED_CONFIGS,
)
.with_prune(forms_that_fit);

/// [`TUNER`]'s key: `[rows, v, dtype]`.
fn tune_key<T: Logit>(rows: usize, v: usize) -> [i64; 3] {
    [rows as i64, v as i64, T::DTYPE as i64]
}

/// The fused form [`launch_tuned`] chose for `rows × v` logits of type `T` in this process, if
/// it has met the shape.
pub fn tuned_form<T: Logit>(rows: usize, v: usize) -> Option<Form> {
    let key = tune_key::<T>(rows, v);
    TUNER
        .decisions()
        .into_iter()
        .find(|d| d.key == key)
        .map(|d| FUSED[d.config])
}

/// The fused form timed fastest for this case's shape on this device (at the first call with
/// the shape; later calls and processes reuse the choice; the interpreter takes the first form
/// that fits), launched on `c`: what the benchmark times as the fused form. It matches or beats
/// [`Form::best`]'s rule, which it replaced, at every shape measured. The kernels overwrite the
/// logits with the gradient, so each form is timed on a copy of the case
/// (`Device::scratch_copy`), and `c` is computed on once.
pub fn launch_tuned<T: Logit>(dev: &Device, c: &mut Case<T>) -> Result<Form, Error> {
    let i = TUNER.choose(dev, &tune_key::<T>(c.rows, c.v), |i| {
        let mut scratch = Case {
            logits: dev.scratch_copy(&mut c.logits)?,
            labels: dev.scratch_copy(&mut c.labels)?,
            valid: dev.zeros::<i32>(1)?,
            lses: dev.zeros::<f32>(c.rows)?,
            loss: dev.zeros::<f32>(c.rows)?,
            mean: dev.zeros::<f32>(1)?,
            rows: c.rows,
            v: c.v,
            smoothing: c.smoothing,
        };
        tile::autotune::time_ms(dev, || launch(dev, &mut scratch, FUSED[i]))
    })?;
    launch(dev, c, FUSED[i])?;
    Ok(FUSED[i])
}

/// The launches of `form`: the setup, then the loss and gradient.
pub fn launch<T: Logit>(dev: &Device, c: &mut Case<T>, form: Form) -> Result<(), Error> {
    let (rows, v, s) = (c.rows as i32, c.v as i32, c.smoothing);
    kernels::ce_setup::launch(
        dev,
        Grid::x(1),
        &c.labels,
        &mut c.valid,
        &mut c.mean,
        rows,
        IGNORE,
    )?;
    let grid = Grid::x(c.rows as u32);
    let b = block(c.v);
    match form {
        Form::Loop => kernels::ce_loop::launch(
            dev,
            grid,
            &mut c.logits,
            &c.labels,
            &c.valid,
            &mut c.loss,
            &mut c.mean,
            rows,
            v,
            IGNORE,
            s,
            b,
        ),
        Form::Rows4 | Form::Rows8 => {
            let per: i32 = if form == Form::Rows4 { 4 } else { 8 };
            kernels::ce_rows::launch(
                dev,
                Grid::x(cdiv(c.rows, per)),
                &mut c.logits,
                &c.labels,
                &c.valid,
                &mut c.loss,
                &mut c.mean,
                rows,
                v,
                IGNORE,
                s,
                per,
            )
        }
        // The kernels of one tile width take the same arguments.
        Form::Wide | Form::Full | Form::Row | Form::Row16 | Form::Any32 => {
            let launch = match form {
                Form::Wide => kernels::ce_loop_wide::launch::<T>,
                Form::Any32 => kernels::ce_loop_any32::launch::<T>,
                Form::Full if T::NAME == "f32" => kernels::ce_loop_full_keep::launch::<T>,
                Form::Full => kernels::ce_loop_full::launch::<T>,
                Form::Row16 => kernels::ce_row16::launch::<T>,
                _ => kernels::ce_row::launch::<T>,
            };
            launch(
                dev,
                grid,
                &mut c.logits,
                &c.labels,
                &c.valid,
                &mut c.loss,
                &mut c.mean,
                rows,
                v,
                IGNORE,
                s,
            )
        }
        Form::Unfused => {
            kernels::ce_forward::launch(
                dev,
                grid,
                &c.logits,
                &c.labels,
                &c.valid,
                &mut c.lses,
                &mut c.loss,
                &mut c.mean,
                rows,
                v,
                IGNORE,
                s,
                b,
            )?;
            kernels::ce_backward::launch(
                dev,
                grid,
                &mut c.logits,
                &c.labels,
                &c.valid,
                &c.lses,
                rows,
                v,
                IGNORE,
                s,
                b,
            )
        }
    }
}

/// The f64 reference: the mean loss, each row's loss (divided by the valid rows) and the
/// gradient.
pub fn reference(logits: &[f32], labels: &[i32], v: usize, s: f64) -> (f64, Vec<f64>, Vec<f64>) {
    let rows = labels.len();
    let n = labels.iter().filter(|&&y| y != IGNORE).count() as f64;
    let mut loss = vec![0.0; rows];
    let mut grad = vec![0.0; rows * v];
    for r in 0..rows {
        let y = labels[r];
        if y == IGNORE {
            continue;
        }
        let x: Vec<f64> = logits[r * v..(r + 1) * v]
            .iter()
            .map(|&e| f64::from(e))
            .collect();
        let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let d: f64 = x.iter().map(|&e| (e - m).exp()).sum();
        let lse = m + d.ln();
        let mean_x = x.iter().sum::<f64>() / v as f64;
        loss[r] = ((lse - x[y as usize]) * (1.0 - s) + s * (lse - mean_x)) / n;
        for j in 0..v {
            let onehot = if j == y as usize { 1.0 - s } else { 0.0 };
            grad[r * v + j] = ((x[j] - lse).exp() - s / v as f64 - onehot) / n;
        }
    }
    (loss.iter().sum(), loss, grad)
}

/// Relative L2 error of `got` against `want` (absolute where `want` is all zeros).
pub fn rel_l2(got: &[f32], want: &[f64]) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for (&g, &w) in got.iter().zip(want) {
        let g = f64::from(g);
        num += (g - w) * (g - w);
        den += w * w;
    }
    if !num.is_finite() {
        return f64::INFINITY;
    }
    if den > 0.0 {
        (num / den).sqrt()
    } else {
        num.sqrt()
    }
}

/// Runs `form` on fresh logits and compares the mean loss, the row losses and the gradient with
/// the reference: the worst of the three relative errors.
pub fn check<T: Logit>(
    dev: &Device,
    logits: &[T],
    labels: &[i32],
    v: usize,
    smoothing: f32,
    form: Form,
    want: &(f64, Vec<f64>, Vec<f64>),
) -> Res<f64> {
    let mut c = case(dev, logits, labels, v, smoothing)?;
    launch(dev, &mut c, form)?;
    let mean = f64::from(dev.download(&c.mean)?[0]);
    let loss = dev.download(&c.loss)?;
    let grad: Vec<f32> = dev
        .download(&c.logits)?
        .into_iter()
        .map(T::to_f32)
        .collect();
    let e_mean = (mean - want.0).abs() / want.0.abs().max(1e-30);
    let e_mean = if want.0 == 0.0 { mean.abs() } else { e_mean };
    let e_loss = rel_l2(&loss, &want.1);
    let e_grad = rel_l2(&grad, &want.2);
    Ok(e_mean.max(e_loss).max(e_grad))
}
