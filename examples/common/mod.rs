//! Helpers shared by the examples: random inputs, error norms, CUDA-event timing and the
//! device-to-device copy bandwidth that every table is measured against.

#![allow(dead_code)]

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaStream;

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
