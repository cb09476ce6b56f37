//! `autotune_cost PHASE [M N K] [CONFIG]`: the first-launch cost of autotuning, on the `gemm`
//! example's autotuned kernel (`gemm_tuned`, f16), each phase in its own process as a user's
//! program would meet it:
//!
//! - `tune`: the cache is cold (point `TILE_CACHE_DIR` at an empty folder): the first launch
//!   loads every configuration's module and times each; prints the wall time of that launch,
//!   each configuration's measured time and the tuning total, and the chosen index.
//! - `cached`: a second process with the same `TILE_CACHE_DIR`: the first launch reads the
//!   choice from disk; prints its wall time and where the choice came from.
//! - `untuned`: the first launch of configuration `CONFIG` through `launch_config` (no tuner):
//!   the baseline `cached` is compared with.
//!
//! Wall times include the module loads and end after a device synchronize. Default shape
//! `4096 × 4096 × 4096`.

use std::time::Instant;

use tile::prelude::*;
use tile_examples::gemm::kernels::{gemm_tuned, matmul_tuned};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let phase = args.first().map(String::as_str).unwrap_or("tune");
    let num = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (m, n, k) = (num(1, 4096), num(2, 4096), num(3, 4096));
    let config = num(4, 0);
    let dev = Device::cuda(0)?;
    let a = dev.upload(&vec![f16::from_f32(0.5); m * k])?;
    let b = dev.upload(&vec![f16::from_f32(0.25); k * n])?;
    let mut c = dev.zeros::<f16>(m * n)?;
    dev.synchronize()?;
    let start = Instant::now();
    match phase {
        "tune" | "cached" => matmul_tuned(&dev, &a, &b, &mut c, (m, n, k))?,
        "untuned" => {
            let cfg = gemm_tuned::CONFIGS[config];
            let grid = Grid::x(cdiv(m, cfg.BM) * cdiv(n, cfg.BN));
            let (mi, ni, ki) = (m as i32, n as i32, k as i32);
            gemm_tuned::launch_config(&dev, config, grid, &a, &b, &mut c, mi, ni, ki)?;
        }
        other => return Err(format!("unknown phase `{other}`: tune, cached or untuned").into()),
    }
    dev.synchronize()?;
    let wall = start.elapsed().as_secs_f64() * 1e3;
    let got = dev.download(&c)?;
    let want = 0.125 * k as f32;
    if got.iter().any(|v| (v.to_f32() - want).abs() > 1e-3 * want) {
        return Err("wrong result".into());
    }
    println!("phase {phase} {m}x{n}x{k}: first launch {wall:.2} ms (wall, with module loads)");
    for d in gemm_tuned::TUNER.decisions() {
        println!(
            "  decision: config {} ({}) from {:?}; tuning {:.2} ms",
            d.config, d.label, d.source, d.tuning_ms
        );
        for (i, t) in d.times.iter().enumerate() {
            println!(
                "    config {i} ({}): {t:?}",
                gemm_tuned::TUNER.configs()[i].label
            );
        }
    }
    Ok(())
}
