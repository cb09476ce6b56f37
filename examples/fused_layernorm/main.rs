//! Layer norm over rows, f32 and f16: one fused kernel against the unfused four-kernel form and an
//! f64 reference.
//!
//! `cargo run --release --example fused_layernorm` — on a GPU: checks awkward shapes and the GPU
//! sizes 4096×1024, 16384×4096 and 64×65536, then times fused and unfused on the latter (median of
//! CUDA events after warm-up) against the copy bandwidth measured in the same run; where the fused
//! kernel takes under 75 µs (launch-bound: 4096×1024), also CUDA-graph replays of both forms, each
//! checked against the reference before it is timed. Rows wider than 4096 are also timed split over
//! programs of 4096 columns (two kernels: chunk statistics, then combine and normalize), plain
//! and as a CUDA graph. Without a GPU: checks awkward shapes on the interpreter. `--quick`: checks
//! only; `--graph-all`: CUDA graphs for every size.

use std::process::ExitCode;
use tile_examples::{
    common,
    fused_layernorm::{kernels, reference},
};

use common::{
    check_close, check_forms, copy_bandwidth, graph_form, graph_rows, graph_time_ms, report,
    time_ms, Rng, Row,
};
use kernels::{splits, LayerNorm, Scratch};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const EPS: f32 = 1e-5;

/// What the host side needs of an element type: conversions, a name and the check's tolerance.
trait Host: LayerNorm {
    const NAME: &'static str;
    const TOL: f64;
    fn of(x: f32) -> Self;
    fn f(self) -> f32;
}

impl Host for f32 {
    const NAME: &'static str = "f32";
    const TOL: f64 = 1e-5;
    fn of(x: f32) -> f32 {
        x
    }
    fn f(self) -> f32 {
        self
    }
}

impl Host for f16 {
    const NAME: &'static str = "f16";
    const TOL: f64 = 1e-2;
    fn of(x: f32) -> f16 {
        f16::from_f32(x)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}

struct Case<T> {
    /// Chunk statistics of the split-row form.
    stats: Buffer<f32>,
    x: Buffer<T>,
    w: Buffer<T>,
    b: Buffer<T>,
    y: Buffer<T>,
    y2: Buffer<T>,
    s: Scratch<T>,
    rows: i32,
    n: i32,
}

fn case<T: Host>(dev: &Device, rows: usize, n: usize) -> Res<(Case<T>, Vec<f64>)> {
    let mut rng = Rng::new((rows * 31 + n) as u64);
    let mut gen = |len, lo, hi| -> Vec<T> { rng.vec(len, lo, hi).into_iter().map(T::of).collect() };
    let (x, w, b) = (
        gen(rows * n, -2.0, 4.0),
        gen(n, 0.5, 1.5),
        gen(n, -0.5, 0.5),
    );
    let f = |v: &[T]| v.iter().map(|&e| e.f()).collect::<Vec<f32>>();
    let want = reference::layernorm(&f(&x), &f(&w), &f(&b), n, EPS as f64);
    let nan = vec![T::of(f32::NAN); rows * n];
    let c = Case {
        stats: dev.upload(&vec![f32::NAN; rows * splits(n as i32) as usize * 2])?,
        x: dev.upload(&x)?,
        w: dev.upload(&w)?,
        b: dev.upload(&b)?,
        y: dev.upload(&nan)?,
        y2: dev.upload(&nan)?,
        s: Scratch {
            mean: dev.upload(&vec![f32::NAN; rows])?,
            var: dev.upload(&vec![f32::NAN; rows])?,
            xhat: dev.upload(&nan)?,
        },
        rows: rows as i32,
        n: n as i32,
    };
    Ok((c, want))
}

fn check<T: Host>(dev: &Device, rows: usize, n: usize) -> Res<bool> {
    let (mut c, want) = case::<T>(dev, rows, n)?;
    T::fused(dev, &c.x, &c.w, &c.b, &mut c.y, c.rows, c.n, EPS)?;
    T::unfused(dev, &c.x, &c.w, &c.b, &mut c.s, &mut c.y2, c.rows, c.n, EPS)?;
    let got =
        |y: &Buffer<T>| -> Res<Vec<f32>> { Ok(dev.download(y)?.into_iter().map(T::f).collect()) };
    let ab = check_forms(
        &format!("{} {rows}x{n}", T::NAME),
        &got(&c.y)?,
        &got(&c.y2)?,
        &want,
        T::TOL,
    );
    let mut y3 = dev.upload(&vec![T::of(f32::NAN); rows * n])?;
    T::split(
        dev,
        &c.x,
        &c.w,
        &c.b,
        &mut c.stats,
        &mut y3,
        c.rows,
        c.n,
        EPS,
    )?;
    let d = check_close(
        &format!("{} {rows}x{n} split  ", T::NAME),
        &got(&y3)?,
        &want,
        T::TOL,
    );
    Ok(ab && d)
}

fn bench<T: Host>(dev: &Device, copy: f64, rows: usize, n: usize) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let (mut c, _) = case::<T>(dev, rows, n)?;
    let (r, nn) = (c.rows, c.n);
    let t_fused = time_ms(&stream, 5, 30, || {
        T::fused(dev, &c.x, &c.w, &c.b, &mut c.y, r, nn, EPS)
    })?;
    let t_unfused = time_ms(&stream, 5, 30, || {
        T::unfused(dev, &c.x, &c.w, &c.b, &mut c.s, &mut c.y2, r, nn, EPS)
    })?;
    let mut table = vec![
        Row {
            name: "tile fused (1 kernel)".into(),
            ms: t_fused,
        },
        Row {
            name: "tile unfused (4 kernels)".into(),
            ms: t_unfused,
        },
    ];
    let ok = graph_rows(
        dev,
        &mut table,
        |g| case::<T>(g, rows, n),
        |g, (c, _), unf| match unf {
            false => T::fused(g, &c.x, &c.w, &c.b, &mut c.y, r, nn, EPS),
            true => T::unfused(g, &c.x, &c.w, &c.b, &mut c.s, &mut c.y2, r, nn, EPS),
        },
        |g, (c, want), unf| {
            let y = if unf { &c.y2 } else { &c.y };
            let got: Vec<f32> = g.download(y)?.into_iter().map(T::f).collect();
            let what = format!("{} {rows}x{n} {}, CUDA graph", T::NAME, graph_form(unf));
            Ok(check_close(&what, &got, want, T::TOL))
        },
    )?;
    // Few wide rows: also the split-row form (two kernels), plain and as a CUDA graph.
    let mut ok = ok;
    if n > 4096 {
        let t_split = time_ms(&stream, 5, 30, || {
            T::split(dev, &c.x, &c.w, &c.b, &mut c.stats, &mut c.y, r, nn, EPS)
        })?;
        table.push(Row {
            name: "tile split rows (2 kernels)".into(),
            ms: t_split,
        });
        let (ms, good) = graph_time_ms(
            dev,
            |g| case::<T>(g, rows, n),
            |g, (c, _)| T::split(g, &c.x, &c.w, &c.b, &mut c.stats, &mut c.y, r, nn, EPS),
            |g, (c, want)| {
                let got: Vec<f32> = g.download(&c.y)?.into_iter().map(T::f).collect();
                let what = format!("{} {rows}x{n} split, CUDA graph", T::NAME);
                Ok(check_close(&what, &got, want, T::TOL))
            },
        )?;
        ok &= good;
        table.push(Row {
            name: "tile split rows, CUDA graph".into(),
            ms,
        });
    }
    // Minimal traffic: read x, w, b once, write y once.
    let bytes = ((2 * rows * n + 2 * n) * std::mem::size_of::<T>()) as f64;
    report(
        &format!(
            "layernorm {rows}x{n} {} ({} MB in + out), median of 30 after 5 warm-ups",
            T::NAME,
            bytes as usize >> 20
        ),
        copy,
        bytes,
        &table,
        1,
    );
    // Below a few L2-sizes of traffic the large-copy rate is out of reach for anything, a copy
    // included (ramp-up and tail are a larger share): also compare with a copy of the same bytes.
    if bytes < 64e6 {
        let same = copy_bandwidth(&stream, (bytes / 2.0) as usize)?;
        let pct = |ms: f64| 100.0 * bytes / (ms * 1e-3) / 1e9 / same;
        let rows: Vec<String> = table
            .iter()
            .map(|r| format!("{} {:.1}%", r.name, pct(r.ms)))
            .collect();
        println!(
            "copy of the same {} MB (read + write): {same:.0} GB/s; as % of it: {}",
            bytes as usize >> 20,
            rows.join(", ")
        );
    }
    Ok(ok)
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let mut shapes = vec![(1, 1), (3, 17), (1, 1000), (2, 1024), (2, 5000), (1, 20000)];
    let sizes = [(4096, 1024), (16384, 4096), (64, 65536)];
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
        }
        None => {
            println!("Running on {}", dev.name());
            shapes.extend([(5, 40000)].into_iter().chain(sizes));
        }
    }
    let mut ok = true;
    for &(rows, n) in &shapes {
        ok &= check::<f32>(&dev, rows, n)?;
        ok &= check::<f16>(&dev, rows, n)?;
    }
    if dev.is_cuda() && !quick {
        let copy = copy_bandwidth(dev.stream().ok_or("no stream")?, 1 << 30)?;
        println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
        for (rows, n) in sizes {
            ok &= bench::<f32>(&dev, copy, rows, n)?;
            ok &= bench::<f16>(&dev, copy, rows, n)?;
        }
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("fused_layernorm", run())
}
