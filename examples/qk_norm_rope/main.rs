//! QK-norm + RoPE (vLLM's fused kernel): fused against the unfused pair and an f64 reference.
//!
//! `cargo run --release --example qk_norm_rope` — on a GPU: checks and times 8192 tokens, 32 q
//! heads, 8 kv heads, head dimension 128, bf16, in place in a packed qkv buffer. Without a GPU:
//! checks small shapes on the interpreter. `--quick`: checks only.

use std::process::ExitCode;
use tile_examples::{
    common,
    qk_norm_rope::{host, kernels},
};

use common::{check_close, copy_bandwidth, report, time_ms, Row};
use host::{host, Host};
use kernels::{fused, touch, unfused, Shape, Tables, HEAD_DIM};
use tile::prelude::*;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const EPS: f32 = 1e-6;

/// The q and k heads after norm and rope (the normalized head rounded to bf16, as vLLM and both
/// kernels do), in f64, laid out like `qkv`; v heads as they were.
fn reference(s: Shape, h: &Host) -> Vec<f64> {
    let f = |v: bf16| v.to_f64();
    let mut out: Vec<f64> = h.qkv.iter().map(|&v| f(v)).collect();
    for t in 0..s.tokens as usize {
        for head in 0..(s.q_heads + s.kv_heads) as usize {
            let base = t * s.stride() as usize + head * 128;
            let x: Vec<f64> = (0..128).map(|i| f(h.qkv[base + i])).collect();
            let w = if head < s.q_heads as usize {
                &h.qw
            } else {
                &h.kw
            };
            let r = 1.0 / (x.iter().map(|v| v * v).sum::<f64>() / 128.0 + EPS as f64).sqrt();
            let y: Vec<f64> = (0..128)
                .map(|i| bf16::from_f64(x[i] * r * f(w[i])).to_f64())
                .collect();
            let p = h.positions[t] as usize * 128;
            for i in 0..64 {
                let (c, sn) = (f(h.cos_sin[p + i]), f(h.cos_sin[p + 64 + i]));
                out[base + i] = y[i] * c - y[64 + i] * sn;
                out[base + 64 + i] = y[64 + i] * c + y[i] * sn;
            }
        }
    }
    out
}

fn tables(dev: &Device, h: &Host) -> Res<Tables> {
    Ok(Tables {
        positions: dev.upload(&h.positions)?,
        cos_sin: dev.upload(&h.cos_sin)?,
        qw: dev.upload(&h.qw)?,
        kw: dev.upload(&h.kw)?,
    })
}

fn check(dev: &Device, s: Shape) -> Res<bool> {
    let h = host(
        s.tokens,
        s.stride(),
        s.max_pos,
        (s.tokens * 7 + s.q_heads) as u64,
    );
    let want = reference(s, &h);
    let t = tables(dev, &h)?;
    let mut ok = true;
    for (name, run) in [
        (
            "fused  ",
            fused as fn(&Device, Shape, &mut Buffer<bf16>, &Tables, f32) -> Result<(), Error>,
        ),
        ("unfused", unfused),
    ] {
        let mut qkv = dev.upload(&h.qkv)?;
        run(dev, s, &mut qkv, &t, EPS)?;
        let got = dev.download(&qkv)?;
        let got32: Vec<f32> = got.iter().map(|v| v.to_f32()).collect();
        ok &= check_close(
            &format!(
                "{} tokens, {}+{} heads {name}",
                s.tokens, s.q_heads, s.kv_heads
            ),
            &got32,
            &want,
            1e-2,
        );
        // v must be untouched, bit for bit.
        let stride = s.stride() as usize;
        let v0 = ((s.q_heads + s.kv_heads) * HEAD_DIM) as usize;
        let v_same = (0..s.tokens as usize).all(|tk| {
            got[tk * stride + v0..(tk + 1) * stride] == h.qkv[tk * stride + v0..(tk + 1) * stride]
        });
        if !v_same {
            println!("check {name}: v heads were modified -> FAILED");
        }
        ok &= v_same;
    }
    Ok(ok)
}

fn bench(dev: &Device, copy: f64, s: Shape) -> Res<()> {
    let stream = dev.stream().ok_or("no stream")?.clone();
    let h = host(s.tokens, s.stride(), s.max_pos, 1);
    let t = tables(dev, &h)?;
    let mut qkv = dev.upload(&h.qkv)?;
    // Repeated in place: the values drift, but the work per call is the same.
    let t_fused = time_ms(&stream, 5, 30, || fused(dev, s, &mut qkv, &t, EPS))?;
    let t_unfused = time_ms(&stream, 5, 30, || unfused(dev, s, &mut qkv, &t, EPS))?;
    let t_touch = time_ms(&stream, 5, 30, || touch(s, dev, &mut qkv))?;
    let heads = (s.tokens * (s.q_heads + s.kv_heads) * HEAD_DIM) as f64;
    let bytes = 2.0 * 2.0 * heads + s.tokens as f64 * (4.0 + 2.0 * 128.0) + 2.0 * 2.0 * 128.0;
    report(
        &format!("qk_norm_rope, {} tokens, {} q + {} kv heads of 128, bf16, median of 30 after 5 warm-ups", s.tokens, s.q_heads, s.kv_heads),
        copy,
        bytes,
        &[Row { name: "tile fused (1 kernel)".into(), ms: t_fused }, Row { name: "tile unfused (norm, rope)".into(), ms: t_unfused }],
        1,
    );
    // The same q/k bytes read and written back in place with no math, same programs and tiles.
    let touch_bytes = 2.0 * 2.0 * heads;
    let touch_gbs = touch_bytes / (t_touch * 1e-3) / 1e9;
    println!(
        "access-pattern ceiling (q/k heads read and written back in place, no math): {t_touch:.4} ms, \
         {touch_gbs:.0} GB/s = {:.1}% of copy; fused reaches {:.1}% of this ceiling",
        100.0 * touch_gbs / copy,
        100.0 * t_touch / t_fused
    );
    Ok(())
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    let small = [
        Shape {
            tokens: 1,
            q_heads: 1,
            kv_heads: 1,
            max_pos: 1,
        },
        Shape {
            tokens: 3,
            q_heads: 4,
            kv_heads: 2,
            max_pos: 17,
        },
        Shape {
            tokens: 17,
            q_heads: 8,
            kv_heads: 1,
            max_pos: 100,
        },
    ];
    let mut ok = true;
    match &no_gpu {
        Some(e) => {
            println!("No CUDA device found ({e}).");
            println!("Running on the CPU interpreter instead (timings are meaningless there).");
            for s in small {
                ok &= check(&dev, s)?;
            }
        }
        None => {
            println!("Running on {}", dev.name());
            let big = Shape {
                tokens: 8192,
                q_heads: 32,
                kv_heads: 8,
                max_pos: 8192,
            };
            for s in small.into_iter().chain([big]) {
                ok &= check(&dev, s)?;
            }
            if !quick {
                let copy = copy_bandwidth(dev.stream().ok_or("no stream")?, 1 << 30)?;
                println!("device-to-device copy bandwidth (read + write): {copy:.0} GB/s");
                bench(&dev, copy, big)?;
            }
        }
    }
    Ok(ok)
}

fn main() -> ExitCode {
    common::exit("qk_norm_rope", run())
}
