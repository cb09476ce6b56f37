//! Plots: per kernel family, effective GB/s against bytes moved (log scale), one line per
//! implementation (and variant, dtype, graph-or-not), with the copy bandwidth as a dashed line;
//! written as PNG and SVG by `plotters` with no system libraries: text is drawn by `ab_glyph`
//! from a font embedded in the binary (a subset of DejaVu Sans, `assets/`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::register_font;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::families::FAMILIES;
use crate::measure::{Res, Row};
use crate::report::Doc;

/// DejaVu Sans reduced to ASCII and a few symbols (license: `assets/DejaVuSans-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");

/// Registers the embedded font as plotters' "sans-serif" (once).
fn font() -> Res<()> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| register_font("sans-serif", FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err("the embedded font could not be read".into())
    }
}

/// One line of a plot.
struct Series {
    label: String,
    /// `tile_fused`, `tile_unfused` or another form.
    imp: String,
    /// Index of the (variant, dtype, graph) group: fused and unfused of a group share a color.
    group: usize,
    /// Runs of (bytes moved, GB/s) in increasing size, each drawn as one line: a size taken by
    /// two shapes (layer norm's 4096×1024 and 64×65536) starts another run rather than a
    /// vertical jump.
    runs: Vec<Vec<(f64, f64)>>,
}

/// Pixels of every plot.
const SIZE: (u32, u32) = (1100, 760);

/// Sizes closer than this factor are one size on the plot (one label; never joined by a line).
const SAME_SIZE: f64 = 1.25;

/// Splits points `(bytes, GB/s, row length)` into runs of strictly increasing size: each point
/// joins the first run whose last point is smaller by more than [`SAME_SIZE`] (ties broken by row
/// length, so rows of one kind stay together).
fn runs(mut points: Vec<(f64, f64, i64)>) -> Vec<Vec<(f64, f64)>> {
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    for (x, y, _) in points {
        match runs
            .iter_mut()
            .find(|r| r.last().is_some_and(|l| l.0 * SAME_SIZE < x))
        {
            Some(r) => r.push((x, y)),
            None => runs.push(vec![(x, y)]),
        }
    }
    runs
}

/// The shapes at each size of the plot (sizes within [`SAME_SIZE`] merged), for the labels along
/// the top.
fn size_labels(rows: &[&Row]) -> Vec<(f64, String)> {
    let mut sizes: Vec<(f64, String)> = rows
        .iter()
        .filter(|r| r.gbps.is_some() && r.bytes > 0.0)
        .map(|r| {
            let shape: Vec<String> = r.shape.iter().map(|d| d.to_string()).collect();
            (r.bytes, shape.join("x"))
        })
        .collect();
    sizes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, Vec<String>)> = Vec::new();
    for (x, shape) in sizes {
        match out.last_mut() {
            Some((x0, shapes)) if x < *x0 * SAME_SIZE => {
                if !shapes.contains(&shape) {
                    shapes.push(shape);
                }
            }
            _ => out.push((x, vec![shape])),
        }
    }
    out.into_iter().map(|(x, s)| (x, s.join(", "))).collect()
}

/// The series of one family: one per (variant, dtype, graph, impl), points sorted by size.
fn series(rows: &[&Row]) -> Vec<Series> {
    type Group = (String, String, bool);
    type Points = Vec<(f64, f64, i64)>;
    let mut by: BTreeMap<(Group, String), Points> = BTreeMap::new();
    for r in rows {
        if let Some(g) = r
            .gbps
            .filter(|g| g.is_finite() && *g > 0.0 && r.bytes > 0.0)
        {
            let group = (
                r.variant.clone().unwrap_or_default(),
                r.dtype.clone(),
                r.graph,
            );
            let width = r.shape.last().copied().unwrap_or(0);
            by.entry((group, r.imp.clone()))
                .or_default()
                .push((r.bytes, g, width));
        }
    }
    let mut groups: Vec<Group> = Vec::new();
    by.into_iter()
        .map(|((group, imp), points)| {
            let mut label = imp.trim_start_matches("tile_").to_string();
            for part in [group.0.as_str(), group.1.as_str()] {
                if !part.is_empty() {
                    label.push(' ');
                    label.push_str(part);
                }
            }
            if group.2 {
                label.push_str(" (CUDA graph)");
            }
            let index = match groups.iter().position(|g| *g == group) {
                Some(i) => i,
                None => {
                    groups.push(group);
                    groups.len() - 1
                }
            };
            Series {
                label,
                imp,
                group: index,
                runs: runs(points),
            }
        })
        .collect()
}

/// Writes `dir/FAMILY.png` and `dir/FAMILY.svg` for every family with timed rows; returns the
/// paths written.
pub fn family_plots(doc: &Doc, dir: &Path) -> Res<Vec<String>> {
    font()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for fam in FAMILIES {
        let rows: Vec<&Row> = doc.rows.iter().filter(|r| r.kernel == fam).collect();
        let s = series(&rows);
        let sizes = size_labels(&rows);
        if s.is_empty() {
            continue;
        }
        let png = dir.join(format!("{fam}.png"));
        let svg = dir.join(format!("{fam}.svg"));
        draw(
            BitMapBackend::new(&png, SIZE).into_drawing_area(),
            fam,
            doc,
            &s,
            &sizes,
        )
        .map_err(|e| format!("{}: {e}", png.display()))?;
        draw(
            SVGBackend::new(&svg, SIZE).into_drawing_area(),
            fam,
            doc,
            &s,
            &sizes,
        )
        .map_err(|e| format!("{}: {e}", svg.display()))?;
        written.push(png.display().to_string());
        written.push(svg.display().to_string());
    }
    Ok(written)
}

/// Draws one family's chart on `root`.
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    fam: &str,
    doc: &Doc,
    series: &[Series],
    sizes: &[(f64, String)],
) -> Res<()>
where
    DB::ErrorType: 'static,
{
    let points = || series.iter().flat_map(|s| s.runs.iter().flatten());
    let xs = points().map(|p| p.0);
    let (lo, hi) = xs.fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    let (x0, x1) = (lo / 2.0, hi * 2.0);
    // Room above the data (and the copy line) for the size labels and the legend (17 px an
    // entry, one per series and the copy line), so that nothing covers a point: the plotting
    // area is about 760 - 120 px high.
    let ymax = points().map(|p| p.1).fold(doc.copy_gbps, f64::max);
    let legend_px = 17.0 * (series.len() + 1) as f64 + 50.0;
    let top = ymax / (1.0 - (legend_px / 640.0).min(0.6));
    root.fill(&WHITE)?;
    let title = if doc.meaningful_timings {
        format!("{fam}: effective GB/s vs bytes moved ({})", doc.device)
    } else {
        format!("{fam}: INTERPRETER SMOKE TEST, timings meaningless")
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("bytes moved (each input read once, each output written once; log scale)")
        .y_desc("effective GB/s")
        .x_label_formatter(&|v| format_bytes(*v))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()?;
    let copy = doc.copy_gbps;
    chart
        .draw_series(DashedLineSeries::new(
            [(x0, copy), (x1, copy)],
            10,
            6,
            BLACK.stroke_width(1),
        ))?
        .label(format!("D2D copy {copy:.0} GB/s"))
        .legend(|(x, y)| {
            let dash = BLACK.stroke_width(1);
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (8, 0)], dash)
                + PathElement::new(vec![(14, 0), (24, 0)], dash)
        });
    let grey = RGBColor(90, 90, 90);
    let label_style = TextStyle::from(("sans-serif", 12).into_font())
        .color(&grey)
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    chart.draw_series(sizes.iter().map(|(x, t)| {
        Text::new(
            t.clone(),
            (*x, ymax * 1.01 + top * 0.01),
            label_style.clone(),
        )
    }))?;
    for s in series {
        let color = COLORS[s.group % COLORS.len()];
        let (wide, thin) = (color.stroke_width(2), color.stroke_width(1));
        let mark = color.stroke_width(2);
        for (i, run) in s.runs.iter().enumerate() {
            let pts = run.clone();
            // Only the first run of a series gets a legend entry.
            let label = (i == 0).then(|| s.label.clone());
            match s.imp.as_str() {
                "tile_fused" => {
                    let a = chart.draw_series(LineSeries::new(pts.clone(), wide))?;
                    if let Some(l) = label {
                        a.label(l).legend(move |(x, y)| {
                            EmptyElement::at((x, y))
                                + PathElement::new(vec![(0, 0), (24, 0)], wide)
                                + Circle::new((12, 0), 4, color.filled())
                        });
                    }
                    chart.draw_series(pts.iter().map(|&p| Circle::new(p, 5, color.filled())))?;
                }
                "tile_unfused" => {
                    let a = chart.draw_series(DashedLineSeries::new(pts.clone(), 8, 5, wide))?;
                    if let Some(l) = label {
                        a.label(l).legend(move |(x, y)| {
                            EmptyElement::at((x, y))
                                + PathElement::new(vec![(0, 0), (6, 0)], wide)
                                + PathElement::new(vec![(18, 0), (24, 0)], wide)
                                + TriangleMarker::new((12, 0), 5, color.filled())
                        });
                    }
                    chart.draw_series(
                        pts.iter()
                            .map(|&p| TriangleMarker::new(p, 6, color.filled())),
                    )?;
                }
                _ => {
                    let a = chart.draw_series(LineSeries::new(pts.clone(), thin))?;
                    if let Some(l) = label {
                        a.label(l).legend(move |(x, y)| {
                            EmptyElement::at((x, y))
                                + PathElement::new(vec![(0, 0), (24, 0)], thin)
                                + Cross::new((12, 0), 4, mark)
                        });
                    }
                    chart.draw_series(pts.iter().map(|&p| Cross::new(p, 5, mark)))?;
                }
            }
        }
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Distinct, readable line colors (Tableau 10); fused and unfused of a group share one.
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// An axis label for a byte count: `512 B`, `4 KB`, `268 MB`, `1.07 GB` (decimal units).
fn format_bytes(v: f64) -> String {
    let (d, unit) = match v {
        v if v >= 1e9 => (1e9, "GB"),
        v if v >= 1e6 => (1e6, "MB"),
        v if v >= 1e3 => (1e3, "KB"),
        _ => (1.0, "B"),
    };
    let x = v / d;
    let digits = if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.digits$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ceilings::LaunchCost;

    fn row(imp: &str, dtype: &str, graph: bool, shape: [i64; 2], gbps: f64) -> Row {
        let size = if dtype == "f32" { 4.0 } else { 2.0 };
        let bytes = size * (2 * shape[0] * shape[1] + 2 * shape[1]) as f64;
        Row {
            kernel: "fused_layernorm".into(),
            variant: None,
            shape: shape.to_vec(),
            dtype: dtype.into(),
            imp: imp.into(),
            graph,
            ms: Some(bytes / (gbps * 1e9) * 1e3),
            gbps: Some(gbps),
            pct_copy: Some(100.0 * gbps / 2958.0),
            ok: true,
            bytes,
            gflops: None,
            ops: String::new(),
            rel_err: Some(1e-7),
            max_err: Some(1e-6),
            errors: Vec::new(),
            error: None,
        }
    }

    /// A GPU-like document (layer norm, where two shapes move the same bytes): the plots are
    /// written as PNG and SVG, with the legend and the shapes along the top.
    #[test]
    fn writes_png_and_svg() {
        let mut rows = Vec::new();
        for dt in ["f32", "f16"] {
            for (shape, f) in [
                ([4096, 1024], 0.5),
                ([16384, 4096], 0.95),
                ([64, 65536], 0.3),
            ] {
                rows.push(row("tile_fused", dt, false, shape, 2958.0 * f));
                rows.push(row("tile_unfused", dt, false, shape, 1000.0 * f));
            }
            rows.push(row("tile_split_rows", dt, false, [64, 65536], 1800.0));
            rows.push(row("tile_fused", dt, true, [4096, 1024], 2700.0));
            rows.push(row("tile_unfused", dt, true, [4096, 1024], 1300.0));
        }
        let doc = Doc {
            tool: "tile-bench",
            device: "NVIDIA H100 80GB HBM3 (sm_90)".into(),
            meaningful_timings: true,
            mode: "gpu",
            quick: false,
            filter: String::new(),
            date: String::new(),
            command: String::new(),
            copy_gbps: 2958.0,
            copy_gbps_end: 2950.0,
            read_gbps: None,
            launch: Some(LaunchCost {
                tile_us: 4.75,
                cudarc_us: Some(4.39),
                wrapper_adds_us: Some(0.36),
                launches: 1,
                rounds: 1,
                what: String::new(),
            }),
            method: String::new(),
            warmup: 0,
            reps: 1,
            graph_below_ms: 0.075,
            wall_s: 0.0,
            rows,
            checks: Vec::new(),
            failures: Vec::new(),
        };
        let dir = std::env::temp_dir().join(format!("tile-bench-plot-{}", std::process::id()));
        let files = family_plots(&doc, &dir).expect("plots");
        assert_eq!(files.len(), 2);
        for f in &files {
            let len = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
            assert!(len > 1000, "{f} is {len} bytes");
        }
        let svg = std::fs::read_to_string(dir.join("fused_layernorm.svg")).unwrap_or_default();
        for text in [
            "unfused f16 (CUDA graph)",
            "split_rows f32",
            "D2D copy 2958 GB/s",
            "4096x1024, 64x65536",
        ] {
            assert!(svg.contains(text), "the SVG lacks {text:?}");
        }
        if std::env::var_os("TILE_BENCH_KEEP_PLOTS").is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn runs_never_go_back_in_size() {
        let r = runs(vec![
            (2.0, 1.0, 1024),
            (1.0, 1.0, 65536),
            (1.0, 2.0, 1024),
            (3.0, 1.0, 1),
        ]);
        assert_eq!(
            r,
            vec![vec![(1.0, 2.0), (2.0, 1.0), (3.0, 1.0)], vec![(1.0, 1.0)]]
        );
        assert_eq!(format_bytes(2.68e8), "268 MB");
        assert_eq!(format_bytes(1.5e3), "1.50 KB");
    }
}
