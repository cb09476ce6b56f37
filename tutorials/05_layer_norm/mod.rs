//! Triton's tutorial 05, layer normalization: the fused forward kernel (one program per row,
//! three loops over the row in `BLOCK_SIZE` steps: mean, variance, normalize), and the backward
//! pass in two stages: `layer_norm_bwd_dx_fused` computes `dx` per row and adds the row's
//! `dy · x̂` and `dy` into one of `GROUP_SIZE_M` partial-sum rows of `dw` and `db`;
//! `layer_norm_bwd_dwdb` sums those rows.
//!
//! Changed constructs (README.md has the table):
//! - The spin lock that guards each partial-sum row is the tutorial's, line for line: `while
//!   atomic_cas(Lock, 0, 1) == 1 {}` takes it, a counter beside the locks tells the first writer
//!   (which stores without loading), and `debug_barrier()` then `atomic_xchg(Lock, 0)` release
//!   it. The partial-sum row is zeroed before (as the tutorial's `torch.zeros` does, for the
//!   locks and counters too), though the first writer does not read it.
//! - `Y += row * stride` (a pointer parameter advanced) is kept; `DW = DW + lock_id * N + cols`
//!   turns a pointer into a tile of pointers, which tile spells as a new binding
//!   (`let DW = …`): a carried name keeps its type.
//! - f16 is a storage type in tile: loads are converted with `as f32` before arithmetic (where
//!   Triton promotes `f16 · f32` itself), and stores convert back with `as f16`.
//! - The backward's `BLOCK_SIZE_N` is compiled for 128 … 4096, so it takes rows of at most 4096
//!   (a wider row is an `Err` from the launch naming the compiled values); the forward loops
//!   over the row and takes any width.
//! - The tutorial's kernels take any float type; its test and benchmark use float16, the type
//!   compiled here (`Mean` and `Rstd` are f32, as in the tutorial).

use tile::prelude::*;

use crate::check::{compare, err, Rng};

// The tutorial's heuristic, `num_warps = min(max(BLOCK_SIZE // 256, 1), 8)`, is
// `auto(8, max = 8)`: 8 elements of the block per thread, at most 8 warps, per `BLOCK_SIZE`.
// `math = fast`: Triton's `/` and `tl.sqrt` (here and in the backward).
#[tile_kernel(num_warps = auto(8, max = 8), math = fast)]
/// Fused layer norm forward of one row: `Y = (X − mean) · rstd · W + B`; writes the row's
/// `mean` and `rstd`.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_fwd_fused(
    X: Ptr<f16>,    // pointer to the input
    Y: Ptr<f16>,    // pointer to the output
    W: Ptr<f16>,    // pointer to the weights
    B: Ptr<f16>,    // pointer to the biases
    Mean: Ptr<f32>, // pointer to the mean
    Rstd: Ptr<f32>, // pointer to the 1/std
    stride: i32,    // how much to increase the pointer when moving by 1 row
    N: i32,         // number of columns in X
    eps: f32,       // epsilon to avoid division by zero
    BLOCK_SIZE: Const<{ [128, 256, 512, 1024, 2048, 4096, 8192, 16384] }>,
) {
    // Map the program id to the row of X and Y it should compute.
    let row = program_id(0);
    Y += row * stride;
    X += row * stride;
    // Compute mean
    let mut mean = 0.0;
    let mut _mean = zeros([BLOCK_SIZE]);
    for off in (0..N).step_by(BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let a = load(X + cols, mask = cols < N, other = 0.0) as f32;
        _mean += a;
    }
    mean = _mean.sum(0) / N as f32;
    // Compute variance
    let mut _var = zeros([BLOCK_SIZE]);
    for off in (0..N).step_by(BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let mut x = load(X + cols, mask = cols < N, other = 0.0) as f32;
        x = select(cols < N, x - mean, 0.0); // triton: tl.where(cols < N, x - mean, 0.)
        _var += x * x;
    }
    let var = _var.sum(0) / N as f32;
    let rstd = 1.0 / sqrt(var + eps);
    // Write mean / rstd
    store(Mean + row, mean);
    store(Rstd + row, rstd);
    // Normalize and apply linear transformation
    for off in (0..N).step_by(BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let mask = cols < N;
        let w = load(W + cols, mask = mask) as f32;
        let b = load(B + cols, mask = mask) as f32;
        let x = load(X + cols, mask = mask, other = 0.0) as f32;
        let x_hat = (x - mean) * rstd;
        let y = x_hat * w + b;
        // Write output
        store(Y + cols, y as f16, mask = mask);
    }
}

// The tutorial's backward takes the forward's warps (`ctx.num_warps`): the same heuristic.
#[tile_kernel(num_warps = auto(8, max = 8), math = fast)]
/// Layer norm backward, stage 1: `DX` of one row, and the row's `dy · x̂` and `dy` added into
/// partial-sum row `row % GROUP_SIZE_M` of `DW` and `DB` (`GROUP_SIZE_M × N`) under that row's
/// spin lock (`Lock`: `GROUP_SIZE_M` locks, then as many counters, zeroed before).
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_bwd_dx_fused(
    DX: Ptr<f16>,   // pointer to the input gradient
    DY: Ptr<f16>,   // pointer to the output gradient
    DW: Ptr<f16>,   // pointer to the partial sum of weights gradient
    DB: Ptr<f16>,   // pointer to the partial sum of biases gradient
    X: Ptr<f16>,    // pointer to the input
    W: Ptr<f16>,    // pointer to the weights
    Mean: Ptr<f32>, // pointer to the mean
    Rstd: Ptr<f32>, // pointer to the 1/std
    Lock: Ptr<i32>, // pointer to the lock
    stride: i32,    // how much to increase the pointer when moving by 1 row
    N: i32,         // number of columns in X
    GROUP_SIZE_M: Const<{ [64, 96, 128, 256] }>,
    BLOCK_SIZE_N: Const<{ [128, 256, 512, 1024, 2048, 4096] }>,
) {
    // Map the program id to the elements of X, DX, and DY it should compute.
    let row = program_id(0);
    let cols = arange(0, BLOCK_SIZE_N);
    let mask = cols < N;
    X += row * stride;
    DY += row * stride;
    DX += row * stride;
    // Offset weights/biases gradient pointer for parallel reduction
    let lock_id = row % GROUP_SIZE_M;
    Lock += lock_id;
    let Count = Lock + GROUP_SIZE_M;
    let DW = DW + lock_id * N + cols; // triton: DW = DW + lock_id * N + cols
    let DB = DB + lock_id * N + cols;
    // Load data to SRAM
    let x = load(X + cols, mask = mask, other = 0.0) as f32;
    let dy = load(DY + cols, mask = mask, other = 0.0) as f32;
    let w = load(W + cols, mask = mask) as f32;
    let mean = load(Mean + row);
    let rstd = load(Rstd + row);
    // Compute dx
    let mut xhat = (x - mean) * rstd;
    let mut wdy = w * dy;
    xhat = select(mask, xhat, 0.0);
    wdy = select(mask, wdy, 0.0);
    let c1 = (xhat * wdy).sum(0) / N as f32;
    let c2 = wdy.sum(0) / N as f32;
    let dx = (wdy - (xhat * c1 + c2)) * rstd;
    // Write dx
    store(DX + cols, dx as f16, mask = mask);
    // Accumulate partial sums for dw/db
    // triton: (dy * xhat).to(w.dtype), with `w` converted to f32 above: f32 partial sums
    let mut partial_dw = dy * xhat;
    let mut partial_db = dy;
    while atomic_cas(Lock, 0, 1) == 1 {}
    let count = load(Count);
    // First store doesn't accumulate
    if count == 0 {
        atomic_xchg(Count, 1);
    } else {
        partial_dw += load(DW, mask = mask) as f32;
        partial_db += load(DB, mask = mask) as f32;
    }
    store(DW, partial_dw as f16, mask = mask);
    store(DB, partial_db as f16, mask = mask);
    // need a barrier to ensure all threads finished before
    // releasing the lock
    debug_barrier();
    // Release the lock
    atomic_xchg(Lock, 0);
}

#[tile_kernel]
/// Layer norm backward, stage 2: `FINAL_DW` and `FINAL_DB` for columns `pid · BLOCK_SIZE_N …`,
/// the sums of the `M` partial-sum rows of `DW` and `DB`.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_bwd_dwdb(
    DW: Ptr<f16>,       // pointer to the partial sum of weights gradient
    DB: Ptr<f16>,       // pointer to the partial sum of biases gradient
    FINAL_DW: Ptr<f16>, // pointer to the weights gradient
    FINAL_DB: Ptr<f16>, // pointer to the biases gradient
    M: i32,             // GROUP_SIZE_M
    N: i32,             // number of columns
    BLOCK_SIZE_M: Const<32>,
    BLOCK_SIZE_N: Const<128>,
) {
    // Map the program id to the elements of DW and DB it should compute.
    let pid = program_id(0);
    let cols = pid * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
    let mut dw = zeros([BLOCK_SIZE_M, BLOCK_SIZE_N]);
    let mut db = zeros([BLOCK_SIZE_M, BLOCK_SIZE_N]);
    // Iterate through the rows of DW and DB to sum the partial sums.
    for i in (0..M).step_by(BLOCK_SIZE_M) {
        let rows = i + arange(0, BLOCK_SIZE_M);
        let mask = (rows.expand_dims(1) < M) & (cols.expand_dims(0) < N);
        let offs = rows.expand_dims(1) * N + cols.expand_dims(0);
        dw += load(DW + offs, mask = mask, other = 0.0) as f32;
        db += load(DB + offs, mask = mask, other = 0.0) as f32;
    }
    // Write the final sum to the output.
    let sum_dw = dw.sum(0);
    let sum_db = db.sum(0);
    store(FINAL_DW + cols, sum_dw as f16, mask = cols < N);
    store(FINAL_DB + cols, sum_db as f16, mask = cols < N);
}

/// The forward's outputs: `y`, and each row's mean and 1/std.
pub struct Forward {
    /// `M × N`, row-major.
    pub y: Buffer<f16>,
    /// `M` means.
    pub mean: Buffer<f32>,
    /// `M` values of `1 / sqrt(var + eps)`.
    pub rstd: Buffer<f32>,
}

/// The backward's outputs.
pub struct Backward {
    /// `M × N`, row-major.
    pub dx: Buffer<f16>,
    /// `N` weight gradients.
    pub dw: Buffer<f16>,
    /// `N` bias gradients.
    pub db: Buffer<f16>,
}

/// The tutorial's `BLOCK_SIZE` for rows of `n`: the next power of two (at least 128, the
/// smallest compiled), at most 64 KB of f16.
pub fn block_size(n: usize) -> usize {
    n.next_power_of_two().clamp(128, 65536 / 2)
}

/// The tutorial's `LayerNorm.forward` for an `m × n` row-major `x`.
pub fn forward(
    dev: &Device,
    x: &Buffer<f16>,
    weight: &Buffer<f16>,
    bias: &Buffer<f16>,
    (m, n): (usize, usize),
    eps: f32,
) -> Result<Forward, Error> {
    let mut out = Forward {
        y: dev.zeros::<f16>(m * n)?,
        mean: dev.zeros::<f32>(m)?,
        rstd: dev.zeros::<f32>(m)?,
    };
    forward_into(dev, x, weight, bias, (m, n), eps, &mut out)?;
    Ok(out)
}

/// [`forward`] into given outputs (`y` of `m × n`, `mean` and `rstd` of `m`): the launch alone,
/// for timing.
pub fn forward_into(
    dev: &Device,
    x: &Buffer<f16>,
    weight: &Buffer<f16>,
    bias: &Buffer<f16>,
    (m, n): (usize, usize),
    eps: f32,
    out: &mut Forward,
) -> Result<(), Error> {
    let bs = block_size(n) as i32;
    layer_norm_fwd_fused::launch(
        dev,
        Grid::x(m as u32),
        x,
        &mut out.y,
        weight,
        bias,
        &mut out.mean,
        &mut out.rstd,
        n as i32,
        n as i32,
        eps,
        bs,
    )
}

/// The tutorial's `GROUP_SIZE_M` heuristic for rows of `n`.
pub fn group_size_m(n: usize) -> usize {
    if n <= 1024 {
        256
    } else if n <= 4096 {
        128
    } else if n <= 8192 {
        96
    } else {
        64
    }
}

/// The tutorial's `LayerNorm.backward`: `dy` the gradient of `y`; `mean`, `rstd` the forward's.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    dev: &Device,
    dy: &Buffer<f16>,
    x: &Buffer<f16>,
    w: &Buffer<f16>,
    mean: &Buffer<f32>,
    rstd: &Buffer<f32>,
    (m, n): (usize, usize),
) -> Result<Backward, Error> {
    let group = group_size_m(n);
    let mut partial_dw = dev.zeros::<f16>(group * n)?;
    let mut partial_db = dev.zeros::<f16>(group * n)?;
    let mut locks = dev.zeros::<i32>(2 * group)?;
    let mut out = Backward {
        dx: dev.zeros::<f16>(m * n)?,
        dw: dev.zeros::<f16>(n)?,
        db: dev.zeros::<f16>(n)?,
    };
    let partial = (&mut partial_dw, &mut partial_db, &mut locks);
    backward_into(dev, dy, x, w, mean, rstd, (m, n), partial, &mut out)?;
    Ok(out)
}

/// [`backward`] into given outputs (`dx` of `m × n`, `dw` and `db` of `n`) with given
/// partial-sum buffers of [`group_size_m`]`(n) × n` elements each and the locks and counters
/// (`2 ·` [`group_size_m`]`(n)` `i32`s), which must hold zeros (the tutorial allocates them with
/// `torch.zeros`): the two launches alone, for timing.
#[allow(clippy::too_many_arguments)]
pub fn backward_into(
    dev: &Device,
    dy: &Buffer<f16>,
    x: &Buffer<f16>,
    w: &Buffer<f16>,
    mean: &Buffer<f32>,
    rstd: &Buffer<f32>,
    (m, n): (usize, usize),
    (partial_dw, partial_db, locks): (&mut Buffer<f16>, &mut Buffer<f16>, &mut Buffer<i32>),
    out: &mut Backward,
) -> Result<(), Error> {
    let group = group_size_m(n);
    layer_norm_bwd_dx_fused::launch(
        dev,
        Grid::x(m as u32),
        &mut out.dx,
        dy,
        &mut *partial_dw,
        &mut *partial_db,
        x,
        w,
        mean,
        rstd,
        locks,
        n as i32,
        n as i32,
        group as i32,
        block_size(n) as i32,
    )?;
    layer_norm_bwd_dwdb::launch(
        dev,
        Grid::x(cdiv(n, 128)),
        &*partial_dw,
        &*partial_db,
        &mut out.dw,
        &mut out.db,
        group.min(m) as i32,
        n as i32,
    )
}

/// Layer norm forward and backward of one `m × n` problem in f64: `(y, mean, rstd, dx, dw,
/// db)`.
#[allow(clippy::type_complexity)]
pub fn reference(
    x: &[f16],
    w: &[f16],
    b: &[f16],
    dy: &[f16],
    (m, n): (usize, usize),
    eps: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let f = |v: f16| f64::from(v);
    let (mut y, mut mean, mut rstd, mut dx) = (
        vec![0.0; m * n],
        vec![0.0; m],
        vec![0.0; m],
        vec![0.0; m * n],
    );
    let (mut dw, mut db) = (vec![0.0; n], vec![0.0; n]);
    for r in 0..m {
        let row = &x[r * n..(r + 1) * n];
        let mu = row.iter().map(|&v| f(v)).sum::<f64>() / n as f64;
        let var = row.iter().map(|&v| (f(v) - mu).powi(2)).sum::<f64>() / n as f64;
        let rs = 1.0 / (var + eps).sqrt();
        (mean[r], rstd[r]) = (mu, rs);
        let xhat: Vec<f64> = row.iter().map(|&v| (f(v) - mu) * rs).collect();
        let wdy: Vec<f64> = (0..n).map(|c| f(w[c]) * f(dy[r * n + c])).collect();
        let c1 = xhat.iter().zip(&wdy).map(|(a, b)| a * b).sum::<f64>() / n as f64;
        let c2 = wdy.iter().sum::<f64>() / n as f64;
        for c in 0..n {
            y[r * n + c] = xhat[c] * f(w[c]) + f(b[c]);
            dx[r * n + c] = (wdy[c] - (xhat[c] * c1 + c2)) * rs;
            dw[c] += f(dy[r * n + c]) * xhat[c];
            db[c] += f(dy[r * n + c]);
        }
    }
    (y, mean, rstd, dx, dw, db)
}

/// Runs the forward and the backward on the tutorial's data (`x = −2.3 + 0.5 · randn`, `w` and
/// `b` uniform in `[0, 1)`, `dy = 0.1 · randn`, all f16, `eps = 1e-5`) against [`reference()`].
///
/// Tolerances: f32 sums of `N` terms are within `N · 2⁻²⁴` of their magnitude, and the mean's
/// error enters `x̂` multiplied by `|mean| · rstd`; so `mean`, `rstd` and `x̂` are within
/// `e = 8 · (N + 8) · 2⁻²⁴ · (1 + |mean| · rstd)` relative (8 covers the variance's
/// and the square root's share). `y`, `dx`: `e` times the magnitude of their terms, plus the
/// rounding to f16 (`2⁻¹¹` relative). `dw`, `db`: each row's f32 term is added to its f16
/// partial sum under the lock and the sum rounded to f16 (`2⁻¹¹` relative to the running sum,
/// bounded by `Σ |terms|`, once per row of the group), then the f32 sum of the partial rows and
/// a final rounding to f16.
pub fn run_check(dev: &Device, (m, n): (usize, usize), seed: u64) -> Result<(), String> {
    let eps = 1e-5;
    let mut r = Rng::new(seed);
    let h = f16::from_f32;
    let x = r.vec(m * n, |r| h(-2.3 + 0.5 * r.normal()));
    let w = r.vec(n, |r| h(r.uniform()));
    let b = r.vec(n, |r| h(r.uniform()));
    let dy = r.vec(m * n, |r| h(0.1 * r.normal()));
    let up = |v: &[f16]| dev.upload(v).map_err(err);
    let (dx_, dw_, db_, ddy) = (up(&x)?, up(&w)?, up(&b)?, up(&dy)?);
    let fwd = forward(dev, &dx_, &dw_, &db_, (m, n), eps).map_err(err)?;
    let bwd = backward(dev, &ddy, &dx_, &dw_, &fwd.mean, &fwd.rstd, (m, n)).map_err(err)?;
    let down16 = |v: &Buffer<f16>| -> Result<Vec<f64>, String> {
        Ok(dev
            .download(v)
            .map_err(err)?
            .into_iter()
            .map(f64::from)
            .collect())
    };
    let down32 = |v: &Buffer<f32>| -> Result<Vec<f64>, String> {
        Ok(dev
            .download(v)
            .map_err(err)?
            .into_iter()
            .map(f64::from)
            .collect())
    };
    let (y, mean, rstd) = (down16(&fwd.y)?, down32(&fwd.mean)?, down32(&fwd.rstd)?);
    let (dx, dw, db) = (down16(&bwd.dx)?, down16(&bwd.dw)?, down16(&bwd.db)?);
    let (ry, rmean, rrstd, rdx, rdw, rdb) = reference(&x, &w, &b, &dy, (m, n), f64::from(eps));

    let f = |v: f16| f64::from(v);
    let u16 = 2f64.powi(-11);
    let e_row: Vec<f64> = (0..m)
        .map(|r| 8.0 * (n + 8) as f64 * 2f64.powi(-24) * (1.0 + rmean[r].abs() * rrstd[r]))
        .collect();
    let what = |s: &str| format!("layer norm {s}, {m} x {n}");
    compare(&what("mean"), &mean, &rmean, |r| e_row[r] * rmean[r].abs())?;
    compare(&what("rstd"), &rstd, &rrstd, |r| e_row[r] * rrstd[r])?;
    compare(&what("y"), &y, &ry, |i| {
        let (r, c) = (i / n, i % n);
        let xhat = (f(x[i]) - rmean[r]) * rrstd[r];
        e_row[r] * (xhat.abs() * f(w[c]) + f(b[c])) + u16 * ry[i].abs() + 2f64.powi(-24)
    })?;
    // The terms of dx: |w dy| and |x̂| · Σ|x̂ w dy| / N + Σ|w dy| / N, scaled by rstd.
    let xhat = |i: usize| (f(x[i]) - rmean[i / n]) * rrstd[i / n];
    let wdy = |i: usize| f(w[i % n]) * f(dy[i]);
    let (mut c1, mut c2) = (vec![0.0; m], vec![0.0; m]);
    for i in 0..m * n {
        c1[i / n] += (xhat(i) * wdy(i)).abs() / n as f64;
        c2[i / n] += wdy(i).abs() / n as f64;
    }
    let dx_tol = |i: usize| {
        let r = i / n;
        let scale = (wdy(i).abs() + xhat(i).abs() * c1[r] + c2[r]) * rrstd[r];
        4.0 * e_row[r] * scale + u16 * rdx[i].abs() + 2f64.powi(-24)
    };
    compare(&what("dx"), &dx, &rdx, dx_tol)?;
    let group = group_size_m(n);
    let per_group = m.div_ceil(group.min(m)) as f64;
    let sum_tol = |c: usize, term: &dyn Fn(usize) -> f64, want: f64| {
        let mag: f64 = (0..m).map(|r| term(r * n + c).abs()).sum();
        let e_max = e_row.iter().fold(0.0f64, |a, &b| a.max(b));
        (e_max + u16 * (1.0 + per_group) + (m + 2) as f64 * 2f64.powi(-24)) * mag
            + u16 * want.abs()
            + 2f64.powi(-24) * m as f64
    };
    let dw_term = |i: usize| f(dy[i]) * xhat(i);
    let db_term = |i: usize| f(dy[i]);
    compare(&what("dw"), &dw, &rdw, |c| sum_tol(c, &dw_term, rdw[c]))?;
    compare(&what("db"), &db, &rdb, |c| sum_tol(c, &db_term, rdb[c]))
}

/// Every kernel of this tutorial.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = layer_norm_fwd_fused::KERNELS.to_vec();
    v.extend(layer_norm_bwd_dx_fused::KERNELS);
    v.push(&layer_norm_bwd_dwdb::KERNEL);
    v
}
