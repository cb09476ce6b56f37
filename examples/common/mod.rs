//! Helpers shared by the examples: random inputs, error norms, CUDA-event timing sampled as
//! `triton.testing.do_bench` samples (plain launches and CUDA-graph replays), the device-to-device copy bandwidth that every table is measured
//! against, and the host-side timing of launches.

pub mod dropout;

use std::sync::{Arc, Once};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaSlice, CudaStream};
use half::{bf16, f16};
use tile::Device;

/// A small deterministic generator (xorshift64*), so runs are reproducible without a dependency.
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let bits = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40;
        lo + (hi - lo) * (bits as f32 / (1u64 << 24) as f32)
    }

    /// `n` values uniform in [lo, hi).
    pub fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// ‖got − want‖₂ / ‖want‖₂, and whether every element is finite. NaN never passes.
pub fn rel_l2(got: &[f32], want: &[f64]) -> f64 {
    if got.len() != want.len() || got.iter().any(|x| !x.is_finite()) {
        return f64::INFINITY;
    }
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        num += (g as f64 - w).powi(2);
        den += w * w;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}

/// Bytes zeroed before every timing sample, so that no input of the timed launch is left in the
/// L2 (50 MB on an H100), as `triton.testing.do_bench` does and `bench/python/baseline.py` does.
pub const L2_FLUSH_BYTES: usize = 256 << 20;

/// Device time aimed at per timing sample: launches shorter than this are timed in batches of
/// back-to-back launches (as many as make this much work, at most [`MAX_BATCH`]).
pub const SAMPLE_MS: f64 = 0.2;

/// Launches per timing sample at most.
pub const MAX_BATCH: usize = 50;

#[tile::tile_kernel(num_warps = 1)]
/// Holds the GPU busy for about `iters` dependent multiply-adds (the sampler's stand-in for
/// `torch.cuda._sleep`): the host enqueues a timing sample's launches meanwhile, so no host
/// launch cost lands between the sample's events.
pub fn spin(x: Ptr<f32, 32>, iters: i32) {
    let o = arange(0, 32);
    let mut v = load(x + o);
    for _ in 0..iters {
        v = v * 0.999 + 0.5;
    }
    store(x + o, v);
}

/// What timing on one stream needs: the L2 flush buffer, the spin kernel's buffer and its rate.
struct Sampler {
    stream: Arc<CudaStream>,
    dev: Device,
    flush: CudaSlice<u8>,
    spin_buf: tile::Buffer<f32>,
    /// Iterations of [`spin`] per ms (the fastest of three calibrations, so a hold computed from
    /// it is long enough at any lower clock).
    iters_per_ms: f64,
}

thread_local! {
    /// The last stream's sampler (examples time on one stream; the graph timings on their own).
    static SAMPLER: std::cell::RefCell<Option<Sampler>> = const { std::cell::RefCell::new(None) };
}

type BoxErr = Box<dyn std::error::Error>;

impl Sampler {
    fn new(stream: &Arc<CudaStream>) -> Result<Sampler, BoxErr> {
        let dev = Device::from_stream(stream.clone())?;
        let flush = stream.alloc_zeros::<u8>(L2_FLUSH_BYTES)?;
        let mut spin_buf = dev.upload(&[0f32; 32])?;
        let ctx = stream.context();
        let mut iters_per_ms: f64 = 0.0;
        let iters = 200_000;
        // The first launch loads the module; then three ~1-10 ms holds.
        spin::launch(&dev, tile::Grid::x(1), &mut spin_buf, 1000)?;
        for _ in 0..3 {
            let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            start.record(stream)?;
            spin::launch(&dev, tile::Grid::x(1), &mut spin_buf, iters)?;
            end.record(stream)?;
            end.synchronize()?;
            let ms = f64::from(start.elapsed_ms(&end)?).max(1e-3);
            iters_per_ms = iters_per_ms.max(f64::from(iters) / ms);
        }
        Ok(Sampler {
            stream: stream.clone(),
            dev,
            flush,
            spin_buf,
            iters_per_ms,
        })
    }

    /// `n` samples of `batch` launches of `f` each, every sample after an L2 flush and a hold
    /// of the GPU longer than the host takes to enqueue the batch (`host_ms` per launch), with
    /// no synchronization between samples: ms per launch.
    fn samples(
        &mut self,
        batch: usize,
        host_ms: f64,
        n: usize,
        f: &mut dyn FnMut() -> Result<(), tile::Error>,
    ) -> Result<Vec<f64>, BoxErr> {
        let hold_ms = 2.0 * host_ms * batch as f64 + 0.05;
        let iters = (hold_ms * self.iters_per_ms)
            .ceil()
            .min(f64::from(i32::MAX)) as i32;
        let ctx = self.stream.context().clone();
        let mut events = Vec::with_capacity(n);
        for _ in 0..n {
            let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
            self.stream.memset_zeros(&mut self.flush)?;
            spin::launch(&self.dev, tile::Grid::x(1), &mut self.spin_buf, iters)?;
            start.record(&self.stream)?;
            for _ in 0..batch {
                f()?;
            }
            end.record(&self.stream)?;
            events.push((start, end));
        }
        self.stream.synchronize()?;
        events
            .iter()
            .map(|(s, e)| Ok(f64::from(s.elapsed_ms(e)?) / batch as f64))
            .collect()
    }
}

/// Median device time (ms) of one launch of `f` over `samples` samples, sampled as
/// `triton.testing.do_bench` does and as `bench/python/baseline.py` times PyTorch and Triton:
/// after `warmup` launches, each sample is a batch of back-to-back launches (at least
/// `min_batch`, as many as make [`SAMPLE_MS`] of work, at most [`MAX_BATCH`]) between two CUDA
/// events, divided by the batch; before every sample the L2 is flushed ([`L2_FLUSH_BYTES`]
/// zeroed) and the GPU held busy ([`spin`]) for longer than the host takes to enqueue the batch,
/// so the events bracket device time only; no synchronization between samples. `f` launches on
/// `stream`.
pub fn sample_ms(
    stream: &Arc<CudaStream>,
    warmup: usize,
    samples: usize,
    min_batch: usize,
    mut f: impl FnMut() -> Result<(), tile::Error>,
) -> Result<f64, BoxErr> {
    for _ in 0..warmup {
        f()?;
    }
    stream.synchronize()?;
    let t0 = std::time::Instant::now();
    for _ in 0..5 {
        f()?;
    }
    // Enqueue cost per launch, the device still running.
    let host_ms = t0.elapsed().as_secs_f64() * 1e3 / 5.0;
    stream.synchronize()?;
    SAMPLER.with(|cell| {
        let mut cell = cell.borrow_mut();
        if !cell
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(&s.stream, stream))
        {
            *cell = Some(Sampler::new(stream)?);
        }
        let sampler = cell.as_mut().expect("set above");
        let est = sampler
            .samples(5, host_ms, 3, &mut f)?
            .into_iter()
            .fold(f64::INFINITY, f64::min);
        let batch = ((SAMPLE_MS / est.max(1e-4)).ceil() as usize).clamp(1, MAX_BATCH);
        let mut times = sampler.samples(batch.max(min_batch), host_ms, samples.max(1), &mut f)?;
        times.sort_by(|a, b| a.total_cmp(b));
        Ok(times[times.len() / 2])
    })
}

/// Median device time (ms) of one launch of `f` (on `stream`): [`sample_ms`] with `reps`
/// samples after `warmup` launches.
pub fn time_ms(
    stream: &Arc<CudaStream>,
    warmup: usize,
    reps: usize,
    f: impl FnMut() -> Result<(), tile::Error>,
) -> Result<f64, BoxErr> {
    sample_ms(stream, warmup, reps, 1, f)
}

/// Plain fused times (ms) below this are launch-bound enough (~4 µs of host launch cost per
/// kernel against kernels of 5–50 µs) that the examples also time CUDA-graph replays of those
/// sizes. 75 µs rather than 50 so that add_rmsnorm 4096×4096 (134 MB, ~50 µs on an H100) is in
/// either way; the next sizes up in the examples move ≥ 256 MB (≥ ~85 µs). `--graph-all` on the
/// command line times graphs for every size.
pub const GRAPH_BELOW_MS: f64 = 0.075;

/// Graph replays per timed interval in [`graph_time_ms`].
pub const GRAPH_REPLAYS: usize = 20;

/// Whether to time CUDA graphs for a size whose plain fused time is `plain_fused_ms`.
pub fn wants_graph(plain_fused_ms: f64) -> bool {
    plain_fused_ms < GRAPH_BELOW_MS || std::env::args().any(|a| a == "--graph-all")
}

/// Time (ms) of one replay of a CUDA graph of what `run` launches, and whether the graph's
/// output passed `verify`: [`Device::capture`] records `run`'s launches on `dev` (checked as
/// plain launches, replayed on `dev`'s own stream). Steps:
/// 1. fresh `setup` (outputs start as NaN, as in the plain checks), capture one `run`, one
///    replay, then `verify` on that state (the graph, which borrows the state, dropped first), so
///    the graph is checked before it is timed (one replay from fresh inputs, so in-place kernels
///    check like the plain path);
/// 2. a second capture of `run` on the same state, timed by [`sample_ms`]: 5 warm-up replays,
///    then the median over 30 samples of at least [`GRAPH_REPLAYS`] back-to-back replays each,
///    the L2 flushed before each sample.
pub fn graph_time_ms<S>(
    dev: &Device,
    mut setup: impl FnMut(&Device) -> Result<S, Box<dyn std::error::Error>>,
    mut run: impl FnMut(&Device, &mut S) -> Result<(), tile::Error>,
    verify: impl FnOnce(&Device, &S) -> Result<bool, Box<dyn std::error::Error>>,
) -> Result<(f64, bool), Box<dyn std::error::Error>> {
    let stream = dev
        .stream()
        .ok_or("CUDA graphs need a CUDA device")?
        .clone();
    let mut state = setup(dev)?;
    dev.synchronize()?;
    dev.capture(|d| run(d, &mut state))
        .map_err(|e| format!("capturing a CUDA graph: {e}"))?
        .launch()?;
    let ok = verify(dev, &state)?;
    let mut graph = dev.capture(|d| run(d, &mut state))?;
    let ms = sample_ms(&stream, 5, 30, GRAPH_REPLAYS, || graph.launch())?;
    Ok((ms, ok))
}

/// When [`wants_graph`] holds for `table[0]` (the plain fused row), times CUDA graphs of the
/// fused and the unfused form with [`graph_time_ms`] and appends the rows "tile fused, CUDA
/// graph" and "tile unfused, CUDA graph". `run(dev, state, unfused)` launches one form;
/// `verify(dev, state, unfused)` checks its output. Returns whether both checks passed (true when
/// no graph was timed).
pub fn graph_rows<S>(
    dev: &Device,
    table: &mut Vec<Row>,
    mut setup: impl FnMut(&Device) -> Result<S, Box<dyn std::error::Error>>,
    mut run: impl FnMut(&Device, &mut S, bool) -> Result<(), tile::Error>,
    mut verify: impl FnMut(&Device, &S, bool) -> Result<bool, Box<dyn std::error::Error>>,
) -> Result<bool, Box<dyn std::error::Error>> {
    if !wants_graph(table[0].ms) {
        return Ok(true);
    }
    let mut ok = true;
    for unfused in [false, true] {
        let (ms, good) = graph_time_ms(
            dev,
            &mut setup,
            |d, s| run(d, s, unfused),
            |d, s| verify(d, s, unfused),
        )?;
        ok &= good;
        table.push(Row {
            name: format!("tile {}, CUDA graph", graph_form(unfused)),
            ms,
        });
    }
    Ok(ok)
}

/// "fused" or "unfused", for the labels of graph rows and checks.
pub fn graph_form(unfused: bool) -> &'static str {
    if unfused {
        "unfused"
    } else {
        "fused"
    }
}

/// Device-to-device copy bandwidth in GB/s (bytes read + bytes written), measured on `bytes`.
pub fn copy_bandwidth(
    stream: &Arc<CudaStream>,
    bytes: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let n = bytes / 4;
    let src = stream.clone_htod(&Rng::new(7).vec(n, -1.0, 1.0))?;
    let mut dst = stream.alloc_zeros::<f32>(n)?;
    let ms = time_ms(stream, 5, 30, || {
        stream
            .memcpy_dtod(&src, &mut dst)
            .map_err(|e| tile::Error::Driver {
                during: "copy".into(),
                source: e,
            })
    })?;
    Ok(2.0 * (n * 4) as f64 / (ms * 1e-3) / 1e9)
}

/// Host time of one launch, in µs, of two launchers `a` and `b` (cudarc's own launch and tile's
/// wrapper, say): per round, the mean over `launches` back-to-back launches after 1000 warm-ups,
/// each timed from the first launch until the host has queued the last; rounds alternate which
/// launcher goes first, so that neither always runs second. One `(a, b)` pair per round.
pub fn launch_rounds(
    stream: &Arc<CudaStream>,
    launches: usize,
    rounds: usize,
    a: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error>>,
    b: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error>>,
) -> Result<Vec<(f64, f64)>, Box<dyn std::error::Error>> {
    let mean_us = |f: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error>>| {
        for _ in 0..1000 {
            f()?;
        }
        stream.synchronize()?;
        let t = std::time::Instant::now();
        for _ in 0..launches {
            f()?;
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / launches as f64;
        stream.synchronize()?;
        Ok::<f64, Box<dyn std::error::Error>>(us)
    };
    (0..rounds)
        .map(|round| {
            if round % 2 == 0 {
                let x = mean_us(a)?;
                Ok((x, mean_us(b)?))
            } else {
                let y = mean_us(b)?;
                Ok((mean_us(a)?, y))
            }
        })
        .collect()
}

/// Prints a table with a header row and aligned columns.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut w: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let s: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:<1$}", c, w[i]))
            .collect();
        println!("| {} |", s.join(" | "));
    };
    line(header.to_vec());
    println!(
        "|{}|",
        w.iter()
            .map(|&n| "-".repeat(n + 2))
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

/// One measured implementation in a table.
pub struct Row {
    /// What was run.
    pub name: String,
    /// Median time in milliseconds.
    pub ms: f64,
}

/// Prints time, effective GB/s for `bytes` (the minimal traffic: every input read once, every
/// output written once), % of the copy bandwidth, and the speedup against `rows[baseline]`.
pub fn report(title: &str, copy_gbs: f64, bytes: f64, rows: &[Row], baseline: usize) {
    println!();
    println!("{title}");
    let base = rows[baseline].ms;
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let gbs = bytes / (r.ms * 1e-3) / 1e9;
            vec![
                r.name.clone(),
                format!("{:.4}", r.ms),
                format!("{gbs:.0}"),
                format!("{:.1}%", 100.0 * gbs / copy_gbs),
                format!("{:.2}x", base / r.ms),
            ]
        })
        .collect();
    print_table(
        &[
            "impl",
            "time (ms)",
            "effective GB/s",
            "% of copy BW",
            "speedup vs unfused",
        ],
        &table,
    );
    if rows.iter().any(|r| r.name.contains("CUDA graph")) {
        static NOTE: Once = Once::new();
        NOTE.call_once(|| {
            println!(
                "(CUDA graph rows: one replay, median of 30 timings of {GRAPH_REPLAYS} \
                 back-to-back replays; the graph's output was checked first)"
            )
        });
    }
}

/// [`check_close`] of a fused and an unfused output against one reference, both reported.
pub fn check_forms(what: &str, fused: &[f32], unfused: &[f32], want: &[f64], tol: f64) -> bool {
    let a = check_close(&format!("{what} fused  "), fused, want, tol);
    let b = check_close(&format!("{what} unfused"), unfused, want, tol);
    a && b
}

/// Relative L2 error of `got` against `want`, with a verdict against `tol`.
pub fn check_close(what: &str, got: &[f32], want: &[f64], tol: f64) -> bool {
    let e = rel_l2(got, want);
    let ok = e <= tol;
    println!(
        "check {what}: rel. L2 error {e:.2e} (tolerance {tol:.0e}) -> {}",
        if ok { "ok" } else { "FAILED" }
    );
    ok
}

/// Every example's exit: success when the run finished and every check passed; otherwise a
/// message on stderr and a failure code.
pub fn exit(
    name: &str,
    result: Result<bool, Box<dyn std::error::Error>>,
) -> std::process::ExitCode {
    match result {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("{name}: a result did not match the reference");
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// A 16-bit input type of the matrix examples: conversions from and to f32, a name, and the
/// relative L2 tolerance of a result rounded once to it.
pub trait Half: tile::Element + Copy {
    /// `f16` or `bf16`.
    const NAME: &'static str;
    /// Relative L2 error of one rounding to this type (with f32 accumulation before it).
    const TOL: f64;
    /// Rounds to nearest even.
    fn from_f32(x: f32) -> Self;
    /// Exact.
    fn to_f32(self) -> f32;
}

impl Half for f16 {
    const NAME: &'static str = "f16";
    const TOL: f64 = 4e-3;
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
}

impl Half for bf16 {
    const NAME: &'static str = "bf16";
    const TOL: f64 = 2e-2;
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
}

/// `A @ B` in f64 at the elements `at` (`a` is `m × k`, `b` is `k × n`, both row-major, the exact
/// widenings of the inputs): the reference the matrix-product examples and the bench check
/// against.
pub fn matmul_ref_at(
    a: &[f64],
    b: &[f64],
    (_, n, k): (usize, usize, usize),
    at: &[(usize, usize)],
) -> Vec<f64> {
    at.iter()
        .map(|&(i, j)| (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum())
        .collect()
}

/// The rows of a `batch × classes` softmax output to check: all of them up to 2^16 elements, else
/// 8 drawn with seed 13 (the first and the last among them).
pub fn sampled_rows(batch: usize, classes: usize) -> Vec<usize> {
    if batch * classes <= 1 << 16 {
        return (0..batch).collect();
    }
    let mut r = Rng::new(13);
    let mut v: Vec<usize> = (0..6)
        .map(|_| ((r.uniform(0.0, 1.0) * batch as f32) as usize).min(batch - 1))
        .collect();
    v.extend([0, batch - 1]);
    v
}

/// `softmax(x @ w)` in f64 at `rows` (`x` is `batch × dim`, `w` is `dim × classes`, row-major),
/// row after row: the reference of the softmax-regression example and bench.
pub fn softmax_rows_ref<T: Half>(
    x: &[T],
    w: &[T],
    (_, d, c): (usize, usize, usize),
    rows: &[usize],
) -> Vec<f64> {
    let mut want = Vec::with_capacity(rows.len() * c);
    let mut z = vec![0f64; c];
    for &i in rows {
        z.iter_mut().for_each(|v| *v = 0.0);
        for p in 0..d {
            let xv = f64::from(x[i * d + p].to_f32());
            for (zj, wv) in z.iter_mut().zip(&w[p * c..(p + 1) * c]) {
                *zj += xv * f64::from(wv.to_f32());
            }
        }
        let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = z.iter().map(|v| (v - m).exp()).sum();
        want.extend(z.iter().map(|v| (v - m).exp() / total));
    }
    want
}

/// The elements of an `m × n` output to check against a float64 reference: all of them up to
/// 2^16, else 512 drawn with `seed` (a full reference of a large matrix product would take
/// hours on the host).
pub fn sampled_elements(m: usize, n: usize, seed: u64) -> Vec<(usize, usize)> {
    if m * n <= 1 << 16 {
        return (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
    }
    let mut r = Rng::new(seed);
    (0..512)
        .map(|_| {
            let i = (r.uniform(0.0, 1.0) * m as f32) as usize;
            let j = (r.uniform(0.0, 1.0) * n as f32) as usize;
            (i.min(m - 1), j.min(n - 1))
        })
        .collect()
}

/// Random `m × k` and `k × n` matrices in [-1, 1) rounded to `T` (seeded by the shape), and the
/// same values as f64.
pub fn matmul_inputs<T: Half>(
    (m, n, k): (usize, usize, usize),
) -> (Vec<T>, Vec<T>, Vec<f64>, Vec<f64>) {
    let mut r = Rng::new((m * 1_000_003 + n * 1009 + k) as u64);
    let mut half = |len: usize| -> (Vec<T>, Vec<f64>) {
        let v: Vec<T> = r.vec(len, -1.0, 1.0).into_iter().map(T::from_f32).collect();
        let w = v.iter().map(|x| f64::from(x.to_f32())).collect();
        (v, w)
    };
    let (a, a64) = half(m * k);
    let (b, b64) = half(k * n);
    (a, b, a64, b64)
}
