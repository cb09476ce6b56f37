//! The `fused_layernorm`, `fused_add_rmsnorm` and `mean_center` examples' kernels, fused and
//! unfused, on the interpreter against f64 Rust references, on random awkward shapes (one row, one
//! column, non-power-of-two rows, every tile width). Outputs start as NaN and carry a sentinel tail
//! past the last row, so an unwritten element or a write out of bounds fails.

use tile_examples::fused_add_rmsnorm::kernels as fused_add_rmsnorm;
use tile_examples::fused_layernorm::kernels as fused_layernorm;
use tile_examples::fused_layernorm::reference as fused_layernorm_reference;
use tile_examples::mean_center::kernels as mean_center;

use fused_add_rmsnorm::AddRmsNorm;
use fused_layernorm::{LayerNorm, Scratch};
use tile::prelude::*;

/// Elements past the end of each output, which no kernel may touch.
const TAIL: usize = 5;
const SENTINEL: f32 = 12345.0;

fn dev() -> Device {
    Device::interpreter()
}

/// xorshift64*, seeded.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
    fn vec<T>(&mut self, len: usize, lo: f32, hi: f32, of: impl Fn(f32) -> T) -> Vec<T> {
        (0..len).map(|_| of(self.uniform(lo, hi))).collect()
    }
}

/// Fixed edge cases, then random shapes whose rows use every tile width up to `max_n`.
fn shapes(seed: u64, max_n: usize) -> Vec<(usize, usize)> {
    let mut r = Rng::new(seed);
    let mut s = vec![(1, 1), (4, 1), (1, 17), (3, 1000), (2, 1024), (1, 1025)];
    for _ in 0..5 {
        s.push((
            1 + (r.next() % 3) as usize,
            1 + (r.next() % max_n as u64) as usize,
        ));
    }
    s.push((1, max_n));
    s
}

/// Element type conversions for the host side.
trait Half: Copy {
    fn of(x: f32) -> Self;
    fn f(self) -> f32;
}

impl Half for f32 {
    fn of(x: f32) -> f32 {
        x
    }
    fn f(self) -> f32 {
        self
    }
}

impl Half for f16 {
    fn of(x: f32) -> f16 {
        f16::from_f32(x)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}

impl Half for bf16 {
    fn of(x: f32) -> bf16 {
        bf16::from_f32(x)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}

fn to_f32<T: Half>(v: &[T]) -> Vec<f32> {
    v.iter().map(|&e| e.f()).collect()
}

/// An output buffer of `len` NaNs followed by the sentinel tail.
fn poisoned<T: Half + tile::Element>(len: usize) -> Buffer<T> {
    let mut v = vec![T::of(f32::NAN); len];
    v.extend(std::iter::repeat_n(T::of(SENTINEL), TAIL));
    dev().upload(&v).unwrap()
}

/// Asserts `|got − want| ≤ tol · max(1, |want|)` element-wise and an untouched tail.
fn assert_close<T: Half + tile::Element>(what: &str, got: &Buffer<T>, want: &[f64], tol: f64) {
    let got = to_f32(&dev().download(got).unwrap());
    assert_eq!(got.len(), want.len() + TAIL, "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= tol * w.abs().max(1.0),
            "{what}: element {i}: got {g}, want {w}"
        );
    }
    let sentinel = T::of(SENTINEL).f();
    assert!(
        got[want.len()..].iter().all(|&t| t == sentinel),
        "{what}: wrote past the end: {:?}",
        &got[want.len()..]
    );
}

fn layernorm_case<T: LayerNorm + Half>(name: &str, seed: u64, tol: f64) {
    let d = dev();
    let eps = 1e-5f32;
    for (rows, n) in shapes(seed, 100_003) {
        let mut r = Rng::new(seed ^ (rows * 7919 + n) as u64);
        let x = r.vec(rows * n, -3.0, 5.0, T::of);
        let w = r.vec(n, -1.5, 1.5, T::of);
        let b = r.vec(n, -1.0, 1.0, T::of);
        let want = fused_layernorm_reference::layernorm(
            &to_f32(&x),
            &to_f32(&w),
            &to_f32(&b),
            n,
            eps as f64,
        );
        let (xb, wb, bb) = (
            d.upload(&x).unwrap(),
            d.upload(&w).unwrap(),
            d.upload(&b).unwrap(),
        );
        let (ri, ni) = (rows as i32, n as i32);
        let mut y = poisoned::<T>(rows * n);
        T::fused(&d, &xb, &wb, &bb, &mut y, ri, ni, eps).unwrap();
        assert_close(
            &format!("{name} layernorm fused {rows}x{n}"),
            &y,
            &want,
            tol,
        );
        let mut s = Scratch {
            mean: poisoned(rows),
            var: poisoned(rows),
            xhat: poisoned::<T>(rows * n),
        };
        let mut y = poisoned::<T>(rows * n);
        T::unfused(&d, &xb, &wb, &bb, &mut s, &mut y, ri, ni, eps).unwrap();
        assert_close(
            &format!("{name} layernorm unfused {rows}x{n}"),
            &y,
            &want,
            tol,
        );
        let k = fused_layernorm::splits(ni) as usize;
        let mut stats = poisoned::<f32>(rows * k * 2);
        let mut y = poisoned::<T>(rows * n);
        let split = T::split(&d, &xb, &wb, &bb, &mut stats, &mut y, ri, ni, eps);
        if k <= 64 {
            split.unwrap();
            assert_close(
                &format!("{name} layernorm split {rows}x{n}"),
                &y,
                &want,
                tol,
            );
        } else {
            assert!(split.is_err(), "{rows}x{n}: {k} chunks must be refused");
        }
    }
}

#[test]
fn layernorm_f32() {
    layernorm_case::<f32>("f32", 1, 2e-5);
}

#[test]
fn layernorm_f16() {
    layernorm_case::<f16>("f16", 2, 1e-2);
}

#[test]
fn layernorm_rejects_buffers_shorter_than_the_rows() {
    let d = dev();
    let x = d.upload(&vec![0.0f32; 65537]).unwrap();
    let w = d.upload(&vec![0.0f32; 65537]).unwrap();
    let mut y = d.upload(&vec![0.0f32; 65537]).unwrap();
    // One row of 65537 fits; two do not (the looped kernel takes any row length, not any buffer).
    assert!(f32::fused(&d, &x, &w, &w, &mut y, 1, 65537, 1e-5).is_ok());
    assert!(f32::fused(&d, &x, &w, &w, &mut y, 2, 65537, 1e-5).is_err());
}

fn add_rmsnorm_case<T: AddRmsNorm + Half>(name: &str, seed: u64) {
    let d = dev();
    let eps = 1e-6f32;
    for (rows, n) in shapes(seed, 8192) {
        let mut r = Rng::new(seed ^ (rows * 7919 + n) as u64);
        let x = r.vec(rows * n, -2.0, 2.0, T::of);
        let res = r.vec(rows * n, -2.0, 2.0, T::of);
        let w = r.vec(n, -1.5, 1.5, T::of);
        // The residual as the kernels store it (rounded to T), then its RMS norm in f64.
        let want_res: Vec<f64> = x
            .iter()
            .zip(&res)
            .map(|(a, b)| T::of(a.f() + b.f()).f() as f64)
            .collect();
        let mut want_x = Vec::new();
        for row in want_res.chunks(n) {
            let inv = 1.0 / (row.iter().map(|v| v * v).sum::<f64>() / n as f64 + eps as f64).sqrt();
            want_x.extend(row.iter().zip(&w).map(|(v, w)| v * inv * w.f() as f64));
        }
        let wb = d.upload(&w).unwrap();
        let (ri, ni) = (rows as i32, n as i32);
        for unfused in [false, true] {
            let what = format!(
                "{name} add_rmsnorm {} {rows}x{n}",
                if unfused { "unfused" } else { "fused" }
            );
            let with_tail = |v: &[T]| {
                let mut v = v.to_vec();
                v.extend(std::iter::repeat_n(T::of(SENTINEL), TAIL));
                d.upload(&v).unwrap()
            };
            let (mut xb, mut rb) = (with_tail(&x), with_tail(&res));
            if unfused {
                let mut inv = poisoned::<f32>(rows);
                T::unfused(&d, &mut xb, &mut rb, &wb, &mut inv, ri, ni, eps).unwrap();
            } else {
                T::fused(&d, &mut xb, &mut rb, &wb, ri, ni, eps).unwrap();
            }
            assert_close(&format!("{what} residual"), &rb, &want_res, 0.0);
            assert_close(&format!("{what} x"), &xb, &want_x, 1e-2);
        }
    }
}

#[test]
fn add_rmsnorm_bf16() {
    add_rmsnorm_case::<bf16>("bf16", 3);
}

#[test]
fn add_rmsnorm_f16() {
    add_rmsnorm_case::<f16>("f16", 4);
}

#[test]
fn mean_center_f32() {
    let d = dev();
    for (rows, n) in shapes(5, 8192) {
        let mut r = Rng::new((rows * 7919 + n) as u64);
        let x = r.vec(rows * n, -1.0, 3.0, f32::of);
        let mut want = Vec::new();
        for row in x.chunks(n) {
            let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
            want.extend(row.iter().map(|&v| v as f64 - mean));
        }
        let xb = d.upload(&x).unwrap();
        let (ri, ni) = (rows as i32, n as i32);
        let mut y = poisoned::<f32>(rows * n);
        mean_center::fused(&d, &xb, &mut y, ri, ni).unwrap();
        assert_close(&format!("mean_center fused {rows}x{n}"), &y, &want, 1e-5);
        let (mut mean, mut y) = (poisoned::<f32>(rows), poisoned::<f32>(rows * n));
        mean_center::unfused(&d, &xb, &mut mean, &mut y, ri, ni).unwrap();
        assert_close(&format!("mean_center unfused {rows}x{n}"), &y, &want, 1e-5);
    }
}

fn all_kernels() -> Vec<&'static tile::KernelSpec> {
    [
        fused_layernorm::all(),
        fused_add_rmsnorm::all(),
        mean_center::all(),
    ]
    .concat()
}

#[test]
fn ir_round_trips_for_every_kernel() {
    use tile::ir::{parse, print, verify};
    for k in all_kernels() {
        let f = parse(k.ir).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        verify(&f).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert_eq!(print(&f), k.ir, "{}: print(parse(ir)) differs", k.name);
    }
}

/// Every variant of every kernel above assembles with ptxas for each target without spills,
/// printing registers (`cargo test --test examples_b -- --nocapture`); skipped when there is no
/// ptxas.
#[test]
fn every_variant_assembles() {
    let Some(ptxas) = tile_codegen::ptxas::find() else {
        println!("skipped: no ptxas (run scripts/setup.sh, or set TILE_PTXAS)");
        return;
    };
    for k in all_kernels() {
        for (vi, v) in k.variants.iter().enumerate() {
            for t in v.targets {
                let r = tile_codegen::ptxas::assemble(&ptxas, t.ptx, t.target.arch())
                    .unwrap_or_else(|e| {
                        panic!("{} v{vi} {}: ptxas failed:\n{e}", k.name, t.target.arch())
                    });
                println!(
                    "{:<20} v{vi} {:<6} {:>2} warps {:>3} registers, spill stores {:>4} B, loads {:>4} B",
                    k.name, t.target.arch(), v.num_warps, r.registers, r.spill_stores, r.spill_loads
                );
                assert!(
                    !r.spills(),
                    "{} v{vi} {} spills:\n{}",
                    k.name,
                    t.target.arch(),
                    r.raw
                );
            }
        }
    }
}
