//! What a run writes: the JSON document ([`Doc`], `tile.json`) and the Markdown tables (one per
//! kernel family, `tile.md`, also printed).

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::ceilings::LaunchCost;
use crate::cli::Opts;
use crate::common::GRAPH_BELOW_MS;
use crate::common::{GRAPH_REPLAYS, MAX_BATCH, SAMPLE_MS};
use crate::families::FAMILIES;
use crate::measure::{Ctx, Row};

/// The ceilings measured in the run.
#[derive(Clone, Debug)]
pub struct Ceilings {
    /// Copy bandwidth at the start (GB/s, read + write).
    pub copy_gbps: f64,
    /// Copy bandwidth at the end.
    pub copy_gbps_end: f64,
    /// The read-mostly rate (GPU only).
    pub read_gbps: Option<f64>,
    /// Host cost of one launch (`None` when its measurement failed).
    pub launch: Option<LaunchCost>,
}

/// `tile.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Doc {
    /// Always `tile-bench`.
    pub tool: &'static str,
    /// The device's name.
    pub device: String,
    /// False on the interpreter: the times are not kernel times.
    pub meaningful_timings: bool,
    /// `gpu` or `interpreter`.
    pub mode: &'static str,
    /// `--quick`.
    pub quick: bool,
    /// `--filter`.
    pub filter: String,
    /// When the run ended (UTC, ISO 8601).
    pub date: String,
    /// The command line.
    pub command: String,
    /// Device-to-device copy bandwidth at the start (GB/s, bytes read + bytes written): the
    /// reference of every row's `pct_copy`.
    pub copy_gbps: f64,
    /// The same at the end.
    pub copy_gbps_end: f64,
    /// A read-mostly rate (tile's row-mean kernel on 16384×4096 f32), GPU only.
    pub read_gbps: Option<f64>,
    /// Host cost of one launch (null when its measurement failed).
    pub launch: Option<LaunchCost>,
    /// How times were taken.
    pub method: String,
    /// Untimed launches before timing.
    pub warmup: usize,
    /// Timed launches (median taken).
    pub reps: usize,
    /// Plain fused times under this (ms) also get CUDA-graph rows.
    pub graph_below_ms: f64,
    /// Seconds the run took.
    pub wall_s: f64,
    /// Timed measurements, one per (kernel, variant, shape, dtype, impl, graph).
    pub rows: Vec<Row>,
    /// Check-only results (the awkward shapes of a full run).
    pub checks: Vec<Row>,
    /// One line per failed check or raised error.
    pub failures: Vec<String>,
}

impl Doc {
    /// The document of a finished run.
    pub fn new(ctx: &Ctx, opts: &Opts, c: Ceilings, wall_s: f64) -> Doc {
        let gpu = ctx.dev.is_cuda();
        let method = if gpu {
            format!(
                "device time: median of {} samples after {} warm-ups, each sample a batch of \
                 back-to-back launches (~{SAMPLE_MS} ms of work, at most {MAX_BATCH}) between \
                 CUDA events after an L2 flush, with the GPU held busy while the host enqueues \
                 (as bench/python/baseline.py); outputs checked against a float64 CPU \
                 reference before timing (a failed check is not timed); CUDA-graph rows where \
                 the plain fused time is under {} ms: median of 30 samples of at least \
                 {GRAPH_REPLAYS} replays, the graph's output checked first; bytes = each input \
                 read once + each output written once",
                ctx.reps, ctx.warmup, GRAPH_BELOW_MS
            )
        } else {
            "CPU interpreter smoke test at tiny sizes: host-clock times of interpreted kernels, \
             MEANINGLESS as kernel times; only the checks count"
                .to_string()
        };
        Doc {
            tool: "tile-bench",
            device: ctx.dev.name(),
            meaningful_timings: gpu,
            mode: if gpu { "gpu" } else { "interpreter" },
            quick: opts.quick,
            filter: opts.filter.clone(),
            date: utc_now(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            copy_gbps: c.copy_gbps,
            copy_gbps_end: c.copy_gbps_end,
            read_gbps: c.read_gbps,
            launch: c.launch,
            method,
            warmup: ctx.warmup,
            reps: ctx.reps,
            graph_below_ms: GRAPH_BELOW_MS,
            wall_s,
            rows: ctx.rows.clone(),
            checks: ctx.checks.clone(),
            failures: ctx.failures.clone(),
        }
    }
}

/// The current time as `YYYY-MM-DDTHH:MM:SS+00:00`.
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    iso_utc(secs)
}

/// Seconds since the Unix epoch as an ISO 8601 UTC time (the civil-from-days algorithm of
/// H. Hinnant's `chrono`-compatible date library).
pub fn iso_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}+00:00",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The join key of a row within its family: variant, shape, dtype, graph.
type Key = (Option<String>, Vec<i64>, String, bool);

fn key(r: &Row) -> Key {
    (r.variant.clone(), r.shape.clone(), r.dtype.clone(), r.graph)
}

fn shape_str(s: &[i64]) -> String {
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// A Markdown table with aligned columns.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count().max(3)).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(wi) = w.get_mut(i) {
                *wi = (*wi).max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let s: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:<1$}", c, w.get(i).copied().unwrap_or(0)))
            .collect();
        format!("| {} |\n", s.join(" | "))
    };
    let mut out = line(header.to_vec());
    let sep: Vec<String> = w.iter().map(|&n| "-".repeat(n)).collect();
    out.push_str(&format!("| {} |\n", sep.join(" | ")));
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

/// A rate with a precision that suits its size: 2958, 97.4, 0.0213.
fn rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The family's table: one line per timed row, with the speedup against tile_unfused of the same
/// (variant, shape, dtype, graph).
fn family_table(rows: &[&Row]) -> String {
    let unfused: HashMap<Key, f64> = rows
        .iter()
        .filter(|r| r.imp == "tile_unfused")
        .filter_map(|r| r.ms.map(|ms| (key(r), ms)))
        .collect();
    let flops = rows.iter().any(|r| r.gflops.is_some());
    let mut header = vec![
        "variant",
        "shape",
        "dtype",
        "impl",
        "time (ms)",
        "GB/s",
        "% of copy",
    ];
    if flops {
        header.push("GFLOP/s");
    }
    header.extend(["speedup vs unfused", "rel err", "ok"]);
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map(f).unwrap_or("-".into());
            let mut cells = vec![
                r.variant.clone().unwrap_or("-".into()),
                shape_str(&r.shape),
                r.dtype.clone(),
                format!("{}{}", r.imp, if r.graph { " (graph)" } else { "" }),
                opt(r.ms, &|v| format!("{v:.4}")),
                opt(r.gbps, &rate),
                opt(r.pct_copy, &|v| format!("{}%", rate(v))),
            ];
            if flops {
                cells.push(opt(r.gflops, &rate));
            }
            let speedup = match (unfused.get(&key(r)), r.ms) {
                (Some(u), Some(ms)) => format!("{:.2}x", u / ms),
                _ => "-".into(),
            };
            cells.push(speedup);
            cells.push(opt(r.rel_err, &|v| format!("{v:.1e}")));
            cells.push(if r.ok { "ok".into() } else { "FAIL".into() });
            cells
        })
        .collect();
    table(&header, &lines)
}

/// `tile.md`: a header (device, ceilings, method), then one table per kernel family.
pub fn markdown(doc: &Doc) -> String {
    let mut md = String::new();
    md.push_str(&format!("# tile-bench: {}\n\n", doc.device));
    if !doc.meaningful_timings {
        md.push_str(
            "**CPU interpreter smoke test at tiny sizes: the times below are MEANINGLESS; only \
             the checks count.**\n\n",
        );
    }
    md.push_str(&format!("- date: {}\n", doc.date));
    md.push_str(&format!("- command: `{}`\n", doc.command));
    md.push_str(&format!(
        "- device-to-device copy bandwidth (read + write): {:.0} GB/s at the start, {:.0} GB/s at \
         the end; % of copy is against the first\n",
        doc.copy_gbps, doc.copy_gbps_end
    ));
    if let Some(r) = doc.read_gbps {
        md.push_str(&format!(
            "- read-mostly rate (tile row-mean kernel, 16384x4096 f32): {r:.0} GB/s\n"
        ));
    }
    if let Some(l) = &doc.launch {
        md.push_str(&format!("- {}\n", l.summary()));
    }
    md.push_str(&format!("- method: {}\n", doc.method));
    let n_ok = doc.rows.iter().chain(&doc.checks).filter(|r| r.ok).count();
    md.push_str(&format!(
        "- checks: {n_ok} passed, {} failed ({} timed rows, {} check-only)\n",
        doc.rows.len() + doc.checks.len() - n_ok,
        doc.rows.len(),
        doc.checks.len()
    ));
    for fam in FAMILIES {
        let rows: Vec<&Row> = doc.rows.iter().filter(|r| r.kernel == fam).collect();
        if rows.is_empty() {
            continue;
        }
        md.push_str(&format!("\n## {fam}\n\n"));
        md.push_str(&family_table(&rows));
    }
    if !doc.failures.is_empty() {
        md.push_str("\n## FAILURES\n\n");
        for f in &doc.failures {
            md.push_str(&format!("- {f}\n"));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00+00:00");
        assert_eq!(iso_utc(951_782_400), "2000-02-29T00:00:00+00:00");
        assert_eq!(iso_utc(1_795_405_075), "2026-11-23T03:37:55+00:00");
    }

    #[test]
    fn tables_align() {
        let t = table(&["a", "bb"], &[vec!["xyz".into(), "1".into()]]);
        assert_eq!(t, "| a   | bb  |\n| --- | --- |\n| xyz | 1   |\n");
    }
}
