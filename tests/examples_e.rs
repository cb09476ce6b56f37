//! The `fused_bias_gelu_dropout` and `residual_bias_dropout` examples' kernels on the
//! interpreter: fused and unfused agree with an f64 reference whose mask is Triton's
//! `tl.rand(seed, i) > p` (`tile::random`), exactly on the mask, on awkward shapes, probabilities
//! and seeds; every kernel's IR round-trips and its PTX assembles for both targets without spills.

use tile_examples::fused_bias_gelu_dropout::kernels as fused_bias_gelu_dropout;
use tile_examples::residual_bias_dropout::kernels as residual_bias_dropout;

use fused_bias_gelu_dropout::{Storage, Stream};
use tile::prelude::*;

/// Inputs in [-4, 4) from a seeded xorshift, rounded to `T`.
fn inputs<T: Storage>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::from_f32((s >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0)
        })
        .collect()
}

fn gelu(v: f64) -> f64 {
    0.5 * v * (1.0 + libm::erf(v / std::f64::consts::SQRT_2))
}

fn check<T: Storage>(rows: usize, cols: usize, p: f32, seed: i64) {
    let dev = Device::interpreter();
    let x: Vec<T> = inputs(rows * cols, (rows * 131 + cols) as u64);
    let bias: Vec<T> = inputs(cols, 77);
    let nan = vec![T::from_f32(f32::NAN); rows * cols];
    let (xb, bb) = (dev.upload(&x).unwrap(), dev.upload(&bias).unwrap());
    let (r, c) = (rows as i32, cols as i32);
    // Each fused stream, then the unfused form (Triton's `rand(seed, i)`).
    let forms = Stream::ALL
        .map(|s| (true, s))
        .into_iter()
        .chain([(false, Stream::Rand)]);
    for (fused, stream) in forms {
        let mut out = dev.upload(&nan).unwrap();
        if fused {
            T::fused(&dev, stream, &xb, &bb, &mut out, r, c, p, seed).unwrap();
        } else {
            let (mut t1, mut t2) = (dev.upload(&nan).unwrap(), dev.upload(&nan).unwrap());
            T::unfused(&dev, &xb, &bb, &mut t1, &mut t2, &mut out, r, c, p, seed).unwrap();
        }
        let got = dev.download(&out).unwrap();
        let round = |v: f64| {
            if fused {
                v
            } else {
                T::from_f32(v as f32).to_f32() as f64
            }
        };
        // f32: gelu's error (at most 3e-7 · |v|) and the scale's rounding; bf16: a few roundings of 2^-9.
        let (atol, rtol) = if T::NAME == "f32" {
            (2e-6, 1e-5)
        } else {
            (1e-6, 8e-3)
        };
        for i in 0..rows * cols {
            let at = format!(
                "{} {rows}x{cols} p {p} seed {seed} fused {fused} {} element {i}",
                T::NAME,
                stream.name()
            );
            let keep = stream.keep(seed, i / cols, i % cols, cols, p);
            let g = round(gelu(round(
                x[i].to_f32() as f64 + bias[i % cols].to_f32() as f64,
            )));
            let v = got[i].to_f32() as f64;
            if keep {
                let want = g / (1.0 - f64::from(p));
                assert!(
                    (v - want).abs() <= atol + rtol * want.abs(),
                    "{at}: {v} vs {want}"
                );
            } else {
                assert_eq!(v, 0.0, "{at}: dropped, found {v}");
            }
        }
    }
}

/// `residual + dropout(x + bias)` of `residual_bias_dropout`, both forms, against f64.
fn check_residual<T: Storage + residual_bias_dropout::Storage>(
    rows: usize,
    cols: usize,
    p: f32,
    seed: i64,
) {
    use residual_bias_dropout::{Elem as E, Storage as R};
    let dev = Device::interpreter();
    let x: Vec<T> = inputs(rows * cols, (rows * 31 + cols) as u64);
    let bias: Vec<T> = inputs(cols, 5);
    let res: Vec<T> = inputs(rows * cols, 9);
    let nan = vec![<T as E>::from_f32(f32::NAN); rows * cols];
    let [xb, bb, rb] = [&x, &bias, &res].map(|v| dev.upload(v).unwrap());
    let (r, c) = (rows as i32, cols as i32);
    let forms = Stream::ALL
        .map(|s| (true, s))
        .into_iter()
        .chain([(false, Stream::Rand)]);
    for (fused, stream) in forms {
        let mut out = dev.upload(&nan).unwrap();
        if fused {
            let s = match stream {
                Stream::Rand => residual_bias_dropout::Stream::Rand,
                Stream::Words4 => residual_bias_dropout::Stream::Words4,
            };
            <T as R>::fused(&dev, s, &xb, &bb, &rb, &mut out, r, c, p, seed).unwrap();
        } else {
            let (mut t1, mut t2) = (dev.upload(&nan).unwrap(), dev.upload(&nan).unwrap());
            <T as R>::unfused(
                &dev, &xb, &bb, &rb, &mut t1, &mut t2, &mut out, r, c, p, seed,
            )
            .unwrap();
        }
        let got = dev.download(&out).unwrap();
        let f = |v: T| <T as E>::to_f32(v) as f64;
        let round = |v: f64| {
            if fused {
                v
            } else {
                f(<T as E>::from_f32(v as f32))
            }
        };
        let (atol, rtol) = if <T as E>::NAME == "f32" {
            (1e-6, 1e-6)
        } else {
            (1e-6, 8e-3)
        };
        for i in 0..rows * cols {
            let at = format!(
                "{rows}x{cols} p {p} seed {seed} fused {fused} {} element {i}",
                stream.name()
            );
            let keep = stream.keep(seed, i / cols, i % cols, cols, p);
            let v = round(f(x[i]) + f(bias[i % cols]));
            let d = if keep {
                round(v / (1.0 - f64::from(p)))
            } else {
                0.0
            };
            let want = f(res[i]) + d;
            let g = f(got[i]);
            if keep {
                assert!(
                    (g - want).abs() <= atol + rtol * want.abs(),
                    "{at}: {g} vs {want}"
                );
            } else {
                assert_eq!(g, f(res[i]), "{at}: dropped, so the residual");
            }
        }
    }
}

#[test]
fn dropout_matches_the_reference() {
    for (rows, cols) in [(1, 1), (1, 17), (17, 1), (3, 1000), (2, 1025)] {
        for (p, seed) in [(0.0, 0), (0.1, 0x5EED_1234_ABCD), (0.5, -1), (0.9, 7)] {
            check::<f32>(rows, cols, p, seed);
            check::<bf16>(rows, cols, p, seed);
            check_residual::<f32>(rows, cols, p, seed);
            check_residual::<bf16>(rows, cols, p, seed);
        }
    }
}

#[test]
fn every_kernel_round_trips_and_assembles_without_spills() {
    use tile::ir::{parse, print, verify};
    let ptxas = tile_codegen::ptxas::find();
    if ptxas.is_none() {
        println!("skipped (ptxas): run scripts/setup.sh, or set TILE_PTXAS");
    }
    for k in [fused_bias_gelu_dropout::all(), residual_bias_dropout::all()].concat() {
        let f = parse(k.ir).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        verify(&f).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert_eq!(print(&f), k.ir, "{}", k.name);
        let Some(ptxas) = &ptxas else { continue };
        for (vi, v) in k.variants.iter().enumerate() {
            for t in v.targets {
                let r = tile_codegen::ptxas::assemble(ptxas, t.ptx, t.target.arch())
                    .unwrap_or_else(|e| panic!("{} v{vi} {}: {e}", k.name, t.target.arch()));
                println!(
                    "{:<34} v{vi} {:<7} {:>3} registers",
                    k.name,
                    t.target.arch(),
                    r.registers
                );
                assert!(!r.spills(), "{} v{vi} {} spills", k.name, t.target.arch());
            }
        }
    }
}
