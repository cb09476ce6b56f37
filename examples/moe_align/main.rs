//! MoE routing as vLLM's `moe_align_block_size` computes it: given the top-k expert ids of every
//! token (`tokens × k`, flattened to `n` ids), the ids' indices sorted by expert into slots padded
//! to multiples of `block_size` per expert (pad value `n`), the expert of every block of slots (-1
//! past the end), and the padded total. Built from atomics and scans: count per expert, the
//! padded counts' prefix sum, scatter (see `kernels.rs` for the two forms: counts and cursors per
//! program, whose atomics contend only within a program, or one counter per expert).
//!
//! `cargo run --release --example moe_align` — on a GPU: checks awkward shapes and the two sizes
//! of the document (8192 tokens × top-2 of 64 experts, 65536 × top-8 of 256; block 64), then times
//! both forms, plain and as CUDA-graph replays (µs; PyTorch's times come from
//! `bench/python/baseline.py --filter moe_align`). Without a GPU: checks awkward shapes on the
//! interpreter. `--quick`: checks only. The check is exact: each expert's slots hold exactly the
//! indices of its ids (the order within an expert depends on the order atomics land in, which
//! vLLM's kernel leaves open too), then pads; blocks and total match a host computation, and the
//! per-program counts are zero again after each call. Each case runs twice, so the second call checks the re-zeroed
//! counts.

use std::process::ExitCode;
use tile_examples::{common, moe_align::align};

use align::{bufs, launch, route, verify, Form, Res, Shape};
use common::{graph_time_ms, print_table, time_ms};
use tile::prelude::*;

fn check(dev: &Device, s: Shape) -> Res<bool> {
    let ids = route(s, (s.n() * 31 + s.experts) as u64);
    let mut ok = true;
    for form in Form::ALL {
        let mut b = bufs(dev, s, &ids)?;
        for call in 1..=2 {
            launch(dev, s, &mut b, form)?;
            let problem = verify(dev, s, &ids, &b)?;
            println!(
                "check {:<48} {:<34} call {call}: -> {}",
                s.name(),
                form.name(),
                problem
                    .as_deref()
                    .map_or_else(|| "ok".to_string(), |p| format!("FAILED ({p})"))
            );
            ok &= problem.is_none();
        }
    }
    Ok(ok)
}

fn bench(dev: &Device, s: Shape) -> Res<bool> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let ids = route(s, 2026);
    let mut ok = true;
    let mut rows = Vec::new();
    for form in Form::ALL {
        let mut b = bufs(dev, s, &ids)?;
        let ms = time_ms(&stream, 5, 30, || launch(dev, s, &mut b, form))?;
        let (gms, good) = graph_time_ms(
            dev,
            |d| bufs(d, s, &ids),
            |d, b| launch(d, s, b, form),
            |d, b| {
                let problem = verify(d, s, &ids, b)?;
                if let Some(p) = &problem {
                    println!("CUDA graph of {}: {p} -> FAILED", form.name());
                }
                Ok(problem.is_none())
            },
        )?;
        ok &= good;
        // `Form::best` is the form tile-bench times for this shape.
        let best = if form == Form::best(s) { ", best" } else { "" };
        rows.push(vec![
            format!("tile, {}{best}", form.name()),
            format!("{:.1}", ms * 1e3),
            format!("{:.1}", gms * 1e3),
        ]);
    }
    println!();
    println!(
        "moe_align {} ({} ids), median of 30 after 5 warm-ups",
        s.name(),
        s.n()
    );
    print_table(&["impl", "µs", "µs, CUDA graph"], &rows);
    Ok(ok)
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let shape = |tokens, k, experts, block_size| Shape {
        tokens,
        k,
        experts,
        block_size,
    };
    let mut shapes = vec![
        shape(1, 1, 1, 1),
        shape(1, 2, 64, 16),
        shape(17, 2, 64, 64),
        shape(5, 3, 7, 5),
        shape(333, 4, 100, 16),
        shape(1000, 8, 256, 64),
    ];
    let big = [shape(8192, 2, 64, 64), shape(65536, 8, 256, 64)];
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
        }
        None => {
            println!("Running on {}", dev.name());
            shapes.extend(big);
        }
    }
    let mut ok = true;
    for s in shapes {
        ok &= check(&dev, s)?;
    }
    if dev.is_cuda() && !quick {
        for s in big {
            ok &= bench(&dev, s)?;
        }
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("moe_align", run())
}
