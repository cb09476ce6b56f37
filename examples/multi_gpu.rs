//! One kernel on every GPU present, each on a stream of its own, checked against a host
//! reference: `Device::all()` enumerates the devices, `new_stream` gives each its own queue, the
//! launches on different GPUs run at the same time, and each result is read back on its device.
//! With no GPU it runs the same code on the interpreter.
//!
//! `cargo run --release --example multi_gpu`

use std::process::ExitCode;

use tile::prelude::*;
use tile_examples::fused_add_mul::kernels::add_mul;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Elements per device.
const N: usize = 1 << 24;

fn inputs(device: usize) -> [Vec<f32>; 3] {
    let f = |k: usize| {
        (0..N)
            .map(|i| ((i * 7 + k * 13 + device * 31) % 1000) as f32 / 500.0 - 1.0)
            .collect()
    };
    [f(0), f(1), f(2)]
}

fn run() -> Res<()> {
    let mut devices = Device::all()?;
    if devices.is_empty() {
        println!("no CUDA device: running on the interpreter");
        devices.push(Device::interpreter());
    }
    // Queue everything first: the devices work at the same time.
    let mut work = Vec::new();
    for (i, base) in devices.iter().enumerate() {
        let dev = base.new_stream()?;
        let [x, y, z] = inputs(i);
        let (bx, by, bz) = (dev.upload(&x)?, dev.upload(&y)?, dev.upload(&z)?);
        let mut out = dev.zeros::<f32>(N)?;
        let timer = dev.timer()?;
        add_mul::launch(&dev, cdiv(N, 1024), &bx, &by, &bz, &mut out, N as i32)?;
        work.push((dev, timer, out, [x, y, z]));
    }
    let mut failed = 0;
    for (i, (dev, timer, out, [x, y, z])) in work.into_iter().enumerate() {
        let ms = timer.elapsed()?.as_secs_f64() * 1e3;
        let got = dev.download(&out)?;
        let bad = (0..N).filter(|&k| got[k] != (x[k] + y[k]) * z[k]).count();
        println!(
            "device {i} ({}): {N} elements in {ms:.3} ms -> {}",
            dev.name(),
            if bad == 0 {
                "ok".to_string()
            } else {
                format!("{bad} wrong")
            }
        );
        failed += usize::from(bad > 0);
    }
    if failed > 0 {
        return Err(format!("{failed} device(s) computed wrong results").into());
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("multi_gpu: {e}");
            ExitCode::FAILURE
        }
    }
}
