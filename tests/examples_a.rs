//! The kernels of the examples `elementwise_chains`, `fused_bias_gelu` and `act_and_mul`, fused and
//! unfused, on the interpreter: random inputs on awkward shapes (one row, one column, lengths that
//! are not multiples of the tile width) against Rust references, element by element.

use tile_examples::act_and_mul::kernels as act_and_mul;
use tile_examples::elementwise_chains::kernels as elementwise_chains;
use tile_examples::fused_bias_gelu::kernels as fused_bias_gelu;

use tile::prelude::*;

/// xorshift64*: reproducible inputs without a dependency.
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
    /// Uniform in [lo, hi).
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
    fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[(self.next() % from.len() as u64) as usize]
    }
}

/// Fixed awkward shapes (one row, one column, one element) plus random ones whose lengths are
/// rarely multiples of the tile width.
fn shapes(seed: u64) -> Vec<(usize, usize)> {
    let mut r = Rng::new(seed);
    let mut v = vec![(1, 1), (1, 17), (17, 1), (3, 1000)];
    for _ in 0..6 {
        let rows = 1 + (r.next() % 8) as usize;
        let cols = r.pick(&[2usize, 5, 31, 100, 513, 1023, 1025, 1500]);
        v.push((rows, cols));
    }
    v
}

/// Element-wise `|got − want| ≤ rtol·|want| + atol`; NaN never passes.
fn assert_close(what: &str, got: &[f32], want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g as f64 - w).abs() <= rtol * w.abs() + atol;
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

#[test]
fn elementwise_chains_match_reference() {
    use elementwise_chains::{Bufs, Chain};
    let dev = Device::interpreter();
    for (k, (rows, cols)) in shapes(1).into_iter().enumerate() {
        let mut r = Rng::new(10 + k as u64);
        let n = rows * cols;
        let (x, y, bias) = (
            r.vec(n, -3.0, 3.0),
            r.vec(n, -3.0, 3.0),
            r.vec(cols, -1.0, 1.0),
        );
        let nan = vec![f32::NAN; n];
        let s = r.uniform(-2.0, 2.0);
        let up = |v: &[f32]| dev.upload(v).unwrap();
        let mut b = Bufs {
            x: up(&x),
            y: up(&y),
            bias: up(&bias),
            out: up(&nan),
            t1: up(&nan),
            t2: up(&nan),
            rows: rows as i32,
            cols: cols as i32,
            s,
        };
        for c in Chain::ALL {
            let want: Vec<f64> = (0..n)
                .map(|i| {
                    let (x, y, bias, s) =
                        (x[i] as f64, y[i] as f64, bias[i % cols] as f64, s as f64);
                    match c {
                        Chain::ReluScaleBias => x.max(0.0) * s + bias,
                        Chain::AddRelu => (x + y).max(0.0),
                        Chain::AddTanhScale => (x + y).tanh() * s,
                        Chain::BiasReluExp => (x + bias).max(0.0).exp(),
                    }
                })
                .collect();
            b.out = up(&nan);
            c.fused(&dev, &mut b).unwrap();
            assert_close(
                &format!("{rows}x{cols} {c:?} fused"),
                &dev.download(&b.out).unwrap(),
                &want,
                1e-5,
                1e-6,
            );
            b.out = up(&nan);
            c.unfused(&dev, &mut b).unwrap();
            assert_close(
                &format!("{rows}x{cols} {c:?} unfused"),
                &dev.download(&b.out).unwrap(),
                &want,
                1e-5,
                1e-6,
            );
        }
    }
}

fn gelu(form: fused_bias_gelu::Gelu, v: f64) -> f64 {
    match form {
        fused_bias_gelu::Gelu::Erf => 0.5 * v * (1.0 + libm::erf(v / std::f64::consts::SQRT_2)),
        fused_bias_gelu::Gelu::Tanh => {
            0.5 * v
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v.powi(3))).tanh())
        }
    }
}

/// Fused and unfused bias + GELU in storage type `T`, both forms; `rtol`/`atol` per element.
fn bias_gelu_case<T: fused_bias_gelu::Storage>(rtol: f64, atol: f64) {
    let dev = Device::interpreter();
    for (k, (rows, cols)) in shapes(2).into_iter().enumerate() {
        let mut r = Rng::new(20 + k as u64);
        let n = rows * cols;
        let x: Vec<T> = r.vec(n, -5.0, 5.0).into_iter().map(T::from_f32).collect();
        let bias: Vec<T> = r
            .vec(cols, -1.0, 1.0)
            .into_iter()
            .map(T::from_f32)
            .collect();
        let nan = vec![T::from_f32(f32::NAN); n];
        let (xb, bb) = (dev.upload(&x).unwrap(), dev.upload(&bias).unwrap());
        let mut tmp = dev.upload(&nan).unwrap();
        for form in fused_bias_gelu::Gelu::ALL {
            let want: Vec<f64> = (0..n)
                .map(|i| gelu(form, x[i].to_f32() as f64 + bias[i % cols].to_f32() as f64))
                .collect();
            let as_f32 = |b: &Buffer<T>| -> Vec<f32> {
                dev.download(b)
                    .unwrap()
                    .into_iter()
                    .map(T::to_f32)
                    .collect()
            };
            let what = format!("{rows}x{cols} {} {form:?}", T::NAME);
            let mut out = dev.upload(&nan).unwrap();
            T::fused(&dev, form, &xb, &bb, &mut out, rows as i32, cols as i32).unwrap();
            assert_close(&format!("{what} fused"), &as_f32(&out), &want, rtol, atol);
            let mut out = dev.upload(&nan).unwrap();
            T::unfused(
                &dev,
                form,
                &xb,
                &bb,
                &mut tmp,
                &mut out,
                rows as i32,
                cols as i32,
            )
            .unwrap();
            assert_close(&format!("{what} unfused"), &as_f32(&out), &want, rtol, atol);
        }
    }
}

#[test]
fn fused_bias_gelu_f32_matches_reference() {
    bias_gelu_case::<f32>(1e-5, 1e-6);
}

#[test]
fn fused_bias_gelu_bf16_matches_reference() {
    // One bf16 rounding of the output (2^-9 relative), and in the unfused form one more of the
    // intermediate `x + bias`, which GELU's steep relative slope in the far negative tail amplifies.
    bias_gelu_case::<bf16>(1e-2, 1e-3);
}

#[test]
fn act_and_mul_matches_reference() {
    use act_and_mul::{fused, unfused, Act};
    let dev = Device::interpreter();
    for (k, (rows, d)) in shapes(3).into_iter().enumerate() {
        let x: Vec<bf16> = Rng::new(30 + k as u64)
            .vec(rows * 2 * d, -5.0, 5.0)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        let nan = vec![bf16::NAN; rows * d];
        let xb = dev.upload(&x).unwrap();
        let mut tmp = dev.upload(&nan).unwrap();
        for act in Act::ALL {
            let want: Vec<f64> = (0..rows * d)
                .map(|i| {
                    let (r, j) = (i / d, i % d);
                    let (a, b) = (x[r * 2 * d + j].to_f64(), x[r * 2 * d + d + j].to_f64());
                    let y = match act {
                        Act::Silu => a / (1.0 + (-a).exp()),
                        Act::Gelu => 0.5 * a * (1.0 + libm::erf(a / std::f64::consts::SQRT_2)),
                    };
                    y * b
                })
                .collect();
            let as_f32 = |b: &Buffer<bf16>| -> Vec<f32> {
                dev.download(b)
                    .unwrap()
                    .into_iter()
                    .map(bf16::to_f32)
                    .collect()
            };
            let mut out = dev.upload(&nan).unwrap();
            fused(&dev, act, &xb, &mut out, rows as i32, d as i32).unwrap();
            assert_close(
                &format!("{rows}x(2x{d}) {act:?} fused"),
                &as_f32(&out),
                &want,
                8e-3,
                1e-4,
            );
            let mut out = dev.upload(&nan).unwrap();
            unfused(&dev, act, &xb, &mut tmp, &mut out, rows as i32, d as i32).unwrap();
            assert_close(
                &format!("{rows}x(2x{d}) {act:?} unfused"),
                &as_f32(&out),
                &want,
                8e-3,
                1e-4,
            );
        }
    }
}
