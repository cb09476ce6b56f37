//! Helpers shared by the examples: random inputs, error norms, CUDA-event timing (plain launches
//! and CUDA-graph replays), the device-to-device copy bandwidth that every table is measured
//! against, and the host-side timing of launches.

#![allow(dead_code)]

use std::sync::{Arc, Once};

use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::CudaStream;
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

/// Median of the times (ms) of `reps` runs of `f`, each bracketed by CUDA events, after `warmup`
/// untimed runs.
pub fn time_ms(
    stream: &Arc<CudaStream>,
    warmup: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<(), tile::Error>,
) -> Result<f64, Box<dyn std::error::Error>> {
    for _ in 0..warmup {
        f()?;
    }
    stream.synchronize()?;
    let ctx = stream.context();
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        start.record(stream)?;
        f()?;
        end.record(stream)?;
        end.synchronize()?;
        times.push(start.elapsed_ms(&end)? as f64);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok(times[times.len() / 2])
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
/// output passed `verify`. All the capture and replay code of the examples is here.
///
/// CUDA cannot capture the legacy default stream that `Device::cuda` uses, so this captures on a
/// new stream of `dev`'s context, through a [`Device`] on that stream that `setup`, `run` and
/// `verify` receive: `setup` must allocate everything `run` touches on that device. Steps:
/// 1. event tracking off for the context (see the SAFETY note), a new stream and its device;
/// 2. warm-up: `setup` + `run` once outside the capture, on buffers then dropped (loads the
///    modules, surfaces launch errors with plain messages);
/// 3. fresh `setup` (outputs start as NaN, as in the plain checks), capture one `run`,
///    instantiate;
/// 4. one replay, then `verify` on that state, so the graph is checked before it is timed (one
///    replay from fresh inputs, so in-place kernels check like the plain path);
/// 5. 5 warm-up replays, then the median over 30 timings (CUDA events on the capture stream) of
///    [`GRAPH_REPLAYS`] back-to-back replays, divided by [`GRAPH_REPLAYS`].
pub fn graph_time_ms<S>(
    dev: &Device,
    mut setup: impl FnMut(&Device) -> Result<S, Box<dyn std::error::Error>>,
    mut run: impl FnMut(&Device, &mut S) -> Result<(), tile::Error>,
    verify: impl FnOnce(&Device, &S) -> Result<bool, Box<dyn std::error::Error>>,
) -> Result<(f64, bool), Box<dyn std::error::Error>> {
    let ctx = dev
        .stream()
        .ok_or("CUDA graphs need a CUDA device")?
        .context()
        .clone();
    // The plain timings' work is done (and no buffer crosses streams anyway, see below).
    dev.synchronize()?;
    // SAFETY: event tracking only orders uses of one buffer on different streams; with it off,
    // cudarc leaves that ordering to us (for every slice: `DevicePtr` and `Drop` read the
    // context's flag at each use). Its three obligations hold because no buffer of these
    // examples is ever used on a stream other than the one that allocated it: the plain path's
    // buffers live on `dev`'s stream, this function's on `stream` below (allocated, uploaded,
    // launched on, downloaded and freed there; `setup` builds them on `gdev`). So no slice is
    // freed before a use on another stream finishes, used on another stream before its
    // allocation finishes, or written by two streams: each stream's own order covers every use.
    // It must be off before the capture: with two streams cudarc would otherwise make each
    // launch wait on the buffers' events, recorded outside the capture, which invalidates it.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream()?;
    let gdev = Device::from_stream(stream.clone())?;
    {
        let mut warm = setup(&gdev)?;
        run(&gdev, &mut warm)?;
        gdev.synchronize()?;
    }
    let mut state = setup(&gdev)?;
    gdev.synchronize()?;
    // A driver error stored by a `Drop` would otherwise surface inside the capture.
    ctx.check_err()?;
    stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    let launched = run(&gdev, &mut state);
    // Ended even when a launch failed, so the stream leaves capture mode.
    let captured = stream.end_capture(CUgraphInstantiate_flags(0));
    launched.map_err(|e| format!("launch during CUDA graph capture: {e}"))?;
    let graph = captured
        .map_err(|e| format!("ending the CUDA graph capture: {e}"))?
        .ok_or("the CUDA graph capture recorded nothing")?;
    graph.launch()?;
    let ok = verify(&gdev, &state)?;
    for _ in 0..5 {
        graph.launch()?;
    }
    stream.synchronize()?;
    let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let mut times = Vec::with_capacity(30);
    for _ in 0..30 {
        start.record(&stream)?;
        for _ in 0..GRAPH_REPLAYS {
            graph.launch()?;
        }
        end.record(&stream)?;
        end.synchronize()?;
        times.push(start.elapsed_ms(&end)? as f64 / GRAPH_REPLAYS as f64);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    // `graph` (declared after `state`) is dropped first; the stream is idle.
    Ok((times[times.len() / 2], ok))
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
