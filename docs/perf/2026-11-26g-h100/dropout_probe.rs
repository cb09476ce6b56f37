//! Probe (not part of the examples): variants of the fused four-words bias + GELU + dropout
//! kernel on 16384×4096, timed against the copy bandwidth of the same run; every variant's output
//! is compared bit for bit with the example's kernel.

#[path = "../common/mod.rs"]
#[allow(dead_code)]
mod common;

use std::process::ExitCode;

use common::{copy_bandwidth, time_ms, Rng};
use tile::prelude::*;

macro_rules! words4 {
    ($name:ident, $block:literal, $rows:tt, [$($hint:tt)*], $($attr:tt)*) => {
        #[tile_kernel $($attr)*]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            x: Ptr<T, { rows * cols }>,
            bias: Ptr<T, cols>,
            out: Ptr<T, { rows * cols }>,
            rows: i32,
            cols: i32,
            p: f32,
            seed: i64,
            T: Type<{ [f32, bf16] }>,
            BLOCK: Const<$block>,
            ROWS: Const<{ $rows }>,
        ) {
            let g = program_id(0) * (BLOCK / 4) + arange(0, BLOCK / 4);
            let j = arange(0, 4).expand_dims(0);
            let col = (g * 4).expand_dims(1) + j;
            let mask = col < cols;
            let b = load(bias + col, mask) as f32;
            let scale = 1.0 / (1.0 - p);
            let groups = (cols + 3) / 4;
            let r0 = program_id(1) * ROWS;
            for r in r0..min(r0 + ROWS, rows) {
                let offs = r * cols + col;
                let gl = gelu(load(x + offs, mask, 0.0 $($hint)*) as f32 + b) * scale;
                let q = r * groups + g;
                let u = select(
                    j == 0,
                    rand4x(seed, q, 0).expand_dims(1),
                    select(
                        j == 1,
                        rand4x(seed, q, 1).expand_dims(1),
                        select(
                            j == 2,
                            rand4x(seed, q, 2).expand_dims(1),
                            rand4x(seed, q, 3).expand_dims(1),
                        ),
                    ),
                );
                store(out + offs, select(u > p, gl, 0.0) as T, mask);
            }
        }
    };
}

words4!(w4, 2048, [1, 4], [],);
words4!(w4_b1024, 1024, [5, 6, 7, 8], [],);

macro_rules! prefetch {
    ($name:ident, $block:literal, $rows:tt, $($attr:tt)*) => {
        #[tile_kernel $($attr)*]
        #[allow(clippy::too_many_arguments)]
        /// The next row's `x` loaded before this row is computed.
        pub fn $name(
            x: Ptr<T, { rows * cols }>,
            bias: Ptr<T, cols>,
            out: Ptr<T, { rows * cols }>,
            rows: i32,
            cols: i32,
            p: f32,
            seed: i64,
            T: Type<{ [f32, bf16] }>,
            BLOCK: Const<$block>,
            ROWS: Const<{ $rows }>,
        ) {
            let g = program_id(0) * (BLOCK / 4) + arange(0, BLOCK / 4);
            let j = arange(0, 4).expand_dims(0);
            let col = (g * 4).expand_dims(1) + j;
            let mask = col < cols;
            let b = load(bias + col, mask) as f32;
            let scale = 1.0 / (1.0 - p);
            let groups = (cols + 3) / 4;
            let r0 = program_id(1) * ROWS;
            let r1 = min(r0 + ROWS, rows);
            let mut xn = load(x + r0 * cols + col, mask & (r0 < r1));
            for r in r0..r1 {
                let offs = r * cols + col;
                let v = xn as f32 + b;
                xn = load(x + (offs + cols), mask & (r + 1 < r1));
                let gl = gelu(v) * scale;
                let q = r * groups + g;
                let u = select(
                    j == 0,
                    rand4x(seed, q, 0).expand_dims(1),
                    select(
                        j == 1,
                        rand4x(seed, q, 1).expand_dims(1),
                        select(
                            j == 2,
                            rand4x(seed, q, 2).expand_dims(1),
                            rand4x(seed, q, 3).expand_dims(1),
                        ),
                    ),
                );
                store(out + offs, select(u > p, gl, 0.0) as T, mask);
            }
        }
    };
}



macro_rules! pairs {
    ($name:ident, $block:literal, $rows:tt, $($attr:tt)*) => {
        #[tile_kernel $($attr)*]
        #[allow(clippy::too_many_arguments)]
        /// Eight contiguous columns (two Philox groups) per row of the tile: 16-byte accesses.
        pub fn $name(
            x: Ptr<T, { rows * cols }>,
            bias: Ptr<T, cols>,
            out: Ptr<T, { rows * cols }>,
            rows: i32,
            cols: i32,
            p: f32,
            seed: i64,
            T: Type<{ [f32, bf16] }>,
            BLOCK: Const<$block>,
            ROWS: Const<{ $rows }>,
        ) {
            let g2 = program_id(0) * (BLOCK / 8) + arange(0, BLOCK / 8);
            let j = arange(0, 8).expand_dims(0);
            let col = (g2 * 8).expand_dims(1) + j;
            let mask = col < cols;
            let b = load(bias + col, mask) as f32;
            let scale = 1.0 / (1.0 - p);
            let groups = (cols + 3) / 4;
            let r0 = program_id(1) * ROWS;
            for r in r0..min(r0 + ROWS, rows) {
                let offs = r * cols + col;
                let gl = gelu(load(x + offs, mask) as f32 + b) * scale;
                let q = r * groups + g2 * 2;
                let q1 = q + 1;
                let u = select(
                    j == 0,
                    rand4x(seed, q, 0).expand_dims(1),
                    select(
                        j == 1,
                        rand4x(seed, q, 1).expand_dims(1),
                        select(
                            j == 2,
                            rand4x(seed, q, 2).expand_dims(1),
                            select(
                                j == 3,
                                rand4x(seed, q, 3).expand_dims(1),
                                select(
                                    j == 4,
                                    rand4x(seed, q1, 0).expand_dims(1),
                                    select(
                                        j == 5,
                                        rand4x(seed, q1, 1).expand_dims(1),
                                        select(
                                            j == 6,
                                            rand4x(seed, q1, 2).expand_dims(1),
                                            rand4x(seed, q1, 3).expand_dims(1),
                                        ),
                                    ),
                                ),
                            ),
                        ),
                    ),
                );
                store(out + offs, select(u > p, gl, 0.0) as T, mask);
            }
        }
    };
}

pairs!(p8_b1024, 1024, [4, 6, 8],);
pairs!(p8_b2048_w8, 2048, [6, 8], (num_warps = 8));

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn run_type<T: tile::Element + Copy + PartialEq>(
    dev: &Device,
    copy: f64,
    conv: fn(f32) -> T,
    name: &str,
) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let (rows, cols) = (16384usize, 4096usize);
    let mut rng = Rng::new(11);
    let x: Vec<T> = rng
        .vec(rows * cols, -3.0, 3.0)
        .into_iter()
        .map(conv)
        .collect();
    let bias: Vec<T> = rng.vec(cols, -0.5, 0.5).into_iter().map(conv).collect();
    let xb = dev.upload(&x)?;
    let bb = dev.upload(&bias)?;
    let mut out = dev.upload(&x)?;
    let (r, c, p, seed) = (rows as i32, cols as i32, 0.1f32, 1234i64);
    let bytes = (std::mem::size_of::<T>() * (2 * rows * cols + cols)) as f64;
    let mut reference: Option<Vec<T>> = None;
    let mut ok = true;
    type L<T> =
        Box<dyn Fn(&Device, &Buffer<T>, &Buffer<T>, &mut Buffer<T>) -> Result<(), tile::Error>>;
    let mut variants: Vec<(String, L<T>)> = Vec::new();
    macro_rules! add {
        ($k:ident, $label:literal, $block:literal, [$($rw:literal),*]) => {
            $(
                variants.push((format!("{} B{} R{}", $label, $block, $rw), Box::new(move |d, x, b, o| {
                    $k::launch(d, Grid::xy(cdiv(c, $block), cdiv(r, $rw)), x, b, o, r, c, p, seed, $rw)
                })));
            )*
        };
    }
    add!(w4_b1024, "4 warps", 1024, [6, 5, 7, 8]);
    add!(p8_b1024, "4 warps 8-wide", 1024, [4, 6, 8]);
    add!(p8_b2048_w8, "8 warps 8-wide", 2048, [6, 8]);
    add!(w4, "4 warps", 2048, [1, 4]);
    println!("{name} 16384x4096, median of 30 after 5 warm-ups; % of copy {copy:.0} GB/s");
    for (vname, f) in &variants {
        f(dev, &xb, &bb, &mut out)?;
        let got = dev.download(&out)?;
        let same = match &reference {
            None => {
                reference = Some(got);
                true
            }
            Some(want) => *want == got,
        };
        ok &= same;
        let ms = time_ms(&stream, 5, 30, || f(dev, &xb, &bb, &mut out))?;
        let gbs = bytes / (ms * 1e-3) / 1e9;
        println!(
            "| {name} | {vname:<32} | {ms:.4} ms | {gbs:6.0} GB/s | {:5.1}% | {} |",
            100.0 * gbs / copy,
            if same { "same" } else { "DIFFERS" }
        );
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let (dev, no_gpu) = Device::best_available();
    if no_gpu.is_some() {
        println!("dropout_probe: no GPU, nothing to do");
        return ExitCode::SUCCESS;
    }
    let run = || -> Res<bool> {
        let copy = copy_bandwidth(dev.stream().ok_or("no stream")?, 1 << 30)?;
        let mut ok = run_type::<bf16>(&dev, copy, bf16::from_f32, "bf16")?;
        ok &= run_type::<f32>(&dev, copy, |v| v, "f32")?;
        Ok(ok)
    };
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            println!("some variant DIFFERS");
            ExitCode::FAILURE
        }
        Err(e) => {
            println!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
