//! The ceilings every table is read against, measured in the same run: the device-to-device copy
//! bandwidth, a read-mostly rate, and the host cost of one launch.

use std::time::Instant;

use cudarc::driver::{LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use serde::Serialize;
use tile::{cdiv, Device, Grid};

use crate::common;
use crate::fused_add_mul::add_mul;
use crate::mean_center::row_mean;
use crate::measure::{median, Res};

/// Bytes of the copy that measures the bandwidth on a GPU (as the examples: 1 GiB).
const COPY_BYTES: usize = 1 << 30;

/// Device-to-device copy bandwidth in GB/s (bytes read + bytes written) on a GPU; on the
/// interpreter a host `copy_from_slice` of 16 MiB (only so the tables have a denominator).
pub fn copy_gbps(dev: &Device) -> Res<f64> {
    match dev.stream() {
        Some(stream) => common::copy_bandwidth(stream, COPY_BYTES),
        None => {
            let n = 1 << 22;
            let src = common::Rng::new(7).vec(n, -1.0, 1.0);
            let mut dst = vec![0.0f32; n];
            let mut times = Vec::new();
            for _ in 0..5 {
                let t = Instant::now();
                dst.copy_from_slice(&src);
                times.push(t.elapsed().as_secs_f64());
                std::hint::black_box(&dst);
            }
            Ok(2.0 * (n * 4) as f64 / median(&mut times).max(1e-9) / 1e9)
        }
    }
}

/// A read-mostly rate (GPU only): tile's row-mean kernel over 16384×4096 f32 (reads 256 MiB,
/// writes 64 KiB), in GB/s of the bytes read and written. A tile kernel, so not an independent
/// ceiling: it says what the reductions can reach when they do nothing but read.
pub fn read_gbps(dev: &Device) -> Res<Option<f64>> {
    let Some(stream) = dev.stream() else {
        return Ok(None);
    };
    let (rows, n) = (16384usize, 4096usize);
    let x = dev.upload(&common::Rng::new(11).vec(rows * n, -1.0, 1.0))?;
    let mut mean = dev.zeros::<f32>(rows)?;
    let (r, nn) = (rows as i32, n as i32);
    let ms = common::time_ms(stream, 10, 50, || {
        row_mean::launch(dev, Grid::x(rows as u32), &x, &mut mean, r, nn, 4096)
    })?;
    Ok(Some(4.0 * (rows * n + rows) as f64 / (ms * 1e-3) / 1e9))
}

/// Host cost of one launch.
#[derive(Clone, Debug, Serialize)]
pub struct LaunchCost {
    /// Mean host time (µs) of one launch through tile's generated wrapper.
    pub tile_us: f64,
    /// Mean host time (µs) of cudarc's own launch of the same PTX (GPU only).
    pub cudarc_us: Option<f64>,
    /// `tile_us - cudarc_us`.
    pub wrapper_adds_us: Option<f64>,
    /// Launches per round (the mean is over these).
    pub launches: usize,
    /// Rounds (the median over rounds is reported).
    pub rounds: usize,
    /// What was launched.
    pub what: String,
}

impl LaunchCost {
    /// One line for the log.
    pub fn summary(&self) -> String {
        match (self.cudarc_us, self.wrapper_adds_us) {
            (Some(c), Some(d)) => format!(
                "launch cost (mean of {} launches, median of {} rounds): cudarc {c:.2} us, tile {:.2} us, wrapper adds {d:+.2} us",
                self.launches, self.rounds, self.tile_us
            ),
            _ => format!(
                "launch cost on the interpreter (mean of {} launches, median of {} rounds): {:.2} us (meaningless as a GPU number)",
                self.launches, self.rounds, self.tile_us
            ),
        }
    }
}

/// The host cost of one launch of a one-program `add_mul` (1024 elements), as
/// `examples/launch_overhead.rs` measures it: the mean over back-to-back launches after warm-up,
/// through tile's wrapper and through cudarc directly on the same PTX, rounds alternating which
/// goes first, the median over rounds. On the interpreter, the wrapper only (a kernel run on the
/// CPU, so it measures the interpreter).
pub fn launch_cost(dev: &Device) -> Res<LaunchCost> {
    let n: i32 = 1024;
    let host: Vec<f32> = (0..n).map(|i| 1.0 + i as f32 * 0.5).collect();
    let want: Vec<f32> = host.iter().map(|&v| (v + v) * v).collect();
    let what = "add_mul, 1 program of 1024 elements".to_string();
    let Some(stream) = dev.stream().cloned() else {
        let (launches, rounds) = (50, 3);
        let (x, y, z) = (dev.upload(&host)?, dev.upload(&host)?, dev.upload(&host)?);
        let mut out = dev.zeros::<f32>(n as usize)?;
        let mut means = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            for _ in 0..launches {
                add_mul::launch(dev, Grid::x(cdiv(n, 1024)), &x, &y, &z, &mut out, n)?;
            }
            means.push(t.elapsed().as_secs_f64() * 1e6 / launches as f64);
        }
        if dev.download(&out)? != want {
            return Err("launch cost: add_mul computed a wrong result".into());
        }
        return Ok(LaunchCost {
            tile_us: median(&mut means),
            cudarc_us: None,
            wrapper_adds_us: None,
            launches,
            rounds,
            what,
        });
    };
    const LAUNCHES: usize = 10_000;
    const ROUNDS: usize = 9;
    let x = stream.clone_htod(&host)?;
    let y = stream.clone_htod(&host)?;
    let z = stream.clone_htod(&host)?;
    let mut out = stream.alloc_zeros::<f32>(n as usize)?;
    let (major, minor) = dev.compute_capability().ok_or("no compute capability")?;
    let variant = add_mul::KERNEL
        .variants
        .first()
        .ok_or("add_mul has no compiled variant")?;
    let target = variant
        .targets
        .iter()
        .find(|t| t.runs_on(major, minor))
        .ok_or("no PTX of add_mul for this device")?;
    let module = stream.context().load_module(Ptx::from_src(target.ptx))?;
    let func = module.load_function(target.entry)?;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32 * variant.num_warps, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut raw = || -> Res<()> {
        let mut b = stream.launch_builder(&func);
        b.arg(&x).arg(&y).arg(&z).arg(&mut out).arg(&n);
        // SAFETY: the arguments match the PTX entry's parameters (four f32 buffers of n elements,
        // then n), the launch has the warps the variant was compiled for, and the kernel masks
        // every access at n (this is the 16-byte-aligned variant: cudarc's allocations are
        // 256-byte aligned and n = 1024 is a multiple of 16).
        unsafe { b.launch(cfg) }?;
        Ok(())
    };
    let mut out2 = stream.alloc_zeros::<f32>(n as usize)?;
    let mut wrapper = || -> Res<()> {
        add_mul::launch(dev, Grid::x(1), &x, &y, &z, &mut out2, n)?;
        Ok(())
    };
    let (mut raws, mut tiles): (Vec<f64>, Vec<f64>) =
        common::launch_rounds(&stream, LAUNCHES, ROUNDS, &mut raw, &mut wrapper)?
            .into_iter()
            .unzip();
    if stream.clone_dtoh(&out2)? != want {
        return Err("launch cost: wrapper launches computed a wrong result".into());
    }
    let (r, t) = (median(&mut raws), median(&mut tiles));
    Ok(LaunchCost {
        tile_us: t,
        cudarc_us: Some(r),
        wrapper_adds_us: Some(t - r),
        launches: LAUNCHES,
        rounds: ROUNDS,
        what,
    })
}
