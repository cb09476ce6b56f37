//! The float types beyond `f32`, `f16` and `bf16`: the 8-bit floats (`f8e4m3`, `f8e5m2`) and
//! `f64`. Each check runs a kernel on a device and compares it with Rust computing the same
//! thing: `tile::f8e4m3::from_f32` (round to nearest even, saturating) and `to_f32` bit for bit,
//! IEEE double arithmetic, Rust's `as` for the conversions.

use tile::prelude::*;
use tile::{bf16, f16};

use super::Rng;

/// Conversions to and from both 8-bit formats: `f32 → f8` (pairs and single elements), `f16 →
/// f8`, `f8 → f32`, `f16`, `bf16` and `i32`, and an 8-bit `other` for masked loads.
#[tile_kernel]
#[allow(clippy::too_many_arguments)]
pub fn f8_convert(
    x: Ptr<f32, n>,
    h: Ptr<f16, n>,
    e4: Ptr<f8e4m3, n>,
    e5: Ptr<f8e5m2, n>,
    o4: Ptr<f8e4m3, n>,
    o5: Ptr<f8e5m2, n>,
    oh: Ptr<f8e4m3, n>,
    w4: Ptr<f32, n>,
    w5: Ptr<f32, n>,
    wh: Ptr<f16, n>,
    wb: Ptr<bf16, n>,
    wi: Ptr<i32, n>,
    n: i32,
    BLOCK: Const<256>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    store(o4 + offs, v as f8e4m3, m);
    store(o5 + offs, v as f8e5m2, m);
    store(oh + offs, load(h + offs, m) as f8e4m3, m);
    let a = load(e4 + offs, m);
    let b = load(e5 + offs, m, 1.5);
    store(w4 + offs, a as f32, m);
    store(w5 + offs, b as f32 * 2.0, m);
    store(wh + offs, a as f16, m);
    store(wb + offs, b as bf16, m);
    store(wi + offs, a as i32 + b as i32, m);
}

/// One `f32` rounded to `f8e4m3` in a scalar (one element per program: the single-element
/// conversion, not the pairs).
#[tile_kernel]
pub fn f8_scalar(x: Ptr<f32, n>, o4: Ptr<f8e4m3, n>, o5: Ptr<f8e5m2, n>, n: i32) {
    let i = program_id(0);
    let v = load(x + i);
    store(o4 + i, v as f8e4m3);
    store(o5 + i, v as f8e5m2);
}

/// `f64` arithmetic, math, conversions, reductions and atomics, with an `f64` scalar argument.
#[tile_kernel]
#[allow(clippy::too_many_arguments)]
pub fn f64_ops(
    x: Ptr<f64, n>,
    y: Ptr<f64, n>,
    q: Ptr<i64, n>,
    o: Ptr<f64, n>,
    of: Ptr<f32, n>,
    oi: Ptr<i64, n>,
    oh: Ptr<f16, n>,
    o8: Ptr<f8e4m3, n>,
    red: Ptr<f64>,
    total: Ptr<f64, 1>,
    count: Ptr<u64, 1>,
    alpha: f64,
    n: i32,
    BLOCK: Const<256>,
) {
    let pid = program_id(0);
    let offs = pid * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let a = load(x + offs, m, 0.0);
    let b = load(y + offs, m, 1.0);
    let k = load(q + offs, m, 0);
    let r = a / b - alpha * sqrt(abs(a)) + fma(a, b, k as f64) + max(a, b) - min(a, -b);
    store(o + offs, r + floor(a) * ceil(b), m);
    store(of + offs, a as f32, m);
    store(oi + offs, (a * 1e12) as i64, m);
    store(oh + offs, b as f16, m);
    store(o8 + offs, b as f8e4m3, m);
    store(red + pid * 3, select(m, a, 0.0).sum());
    store(red + pid * 3 + 1, select(m, a, -1e300).max());
    store(red + pid * 3 + 2, select(m, b, 1e300).min());
    // Integers in f64 add exactly in any order.
    atomic_add(total + offs * 0, floor(a * 1000.0), m);
    atomic_add(count + offs * 0, k as u64, m);
}

/// f32 inputs for the conversions: every magnitude from 2⁻²⁴ to 2²⁰ at random, the 8-bit
/// formats' edges (largest finite values, the midpoints past them, ties, subnormals) and the
/// specials.
fn f8_inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut r = Rng(seed);
    let edges = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        448.0,
        464.0,
        -465.0,
        57344.0,
        61440.0,
        -61441.0,
        1.0625,
        1.1875,
        2f32.powi(-10),
        3.0 * 2f32.powi(-10),
        2f32.powi(-17),
        2f32.powi(-6) * 0.9999,
        1e-40,
    ];
    (0..n)
        .map(|i| {
            let x = r.next();
            if i % 7 == 3 {
                return edges[(x >> 8) as usize % edges.len()];
            }
            let mant = 1.0 + (x >> 40) as f32 / (1u64 << 24) as f32;
            let exp = ((x >> 8) % 45) as i32 - 24;
            let sign = if x & 1 == 1 { -1.0 } else { 1.0 };
            sign * mant * 2f32.powi(exp)
        })
        .collect()
}

/// Equal as numbers, or both NaN.
fn same(a: f32, b: f32) -> bool {
    a == b && a.is_sign_negative() == b.is_sign_negative() || (a.is_nan() && b.is_nan())
}

/// [`f8_convert`] and [`f8_scalar`] on `dev` against `tile::f8e4m3` / `tile::f8e5m2`, bit for bit
/// (NaNs as NaNs), at the sizes given.
pub fn check_f8_conversions(dev: &Device, sizes: &[usize]) {
    for (t, &n) in sizes.iter().enumerate() {
        let xs = f8_inputs(n, 70 + t as u64);
        let hs: Vec<f16> = xs.iter().map(|&v| f16::from_f32(v)).collect();
        let e4s: Vec<f8e4m3> = (0..n).map(|i| f8e4m3::from_bits((i * 37) as u8)).collect();
        let e5s: Vec<f8e5m2> = (0..n).map(|i| f8e5m2::from_bits((i * 91) as u8)).collect();
        let (x, h) = (dev.upload(&xs).unwrap(), dev.upload(&hs).unwrap());
        let (e4, e5) = (dev.upload(&e4s).unwrap(), dev.upload(&e5s).unwrap());
        let mut o4 = dev.zeros::<f8e4m3>(n).unwrap();
        let mut o5 = dev.zeros::<f8e5m2>(n).unwrap();
        let mut oh = dev.zeros::<f8e4m3>(n).unwrap();
        let mut w4 = dev.zeros::<f32>(n).unwrap();
        let mut w5 = dev.zeros::<f32>(n).unwrap();
        let mut wh = dev.zeros::<f16>(n).unwrap();
        let mut wb = dev.zeros::<bf16>(n).unwrap();
        let mut wi = dev.zeros::<i32>(n).unwrap();
        f8_convert::launch(
            dev,
            Grid::x(cdiv(n, 256)),
            &x,
            &h,
            &e4,
            &e5,
            &mut o4,
            &mut o5,
            &mut oh,
            &mut w4,
            &mut w5,
            &mut wh,
            &mut wb,
            &mut wi,
            n as i32,
        )
        .unwrap();
        let (o4, o5, oh) = (
            dev.download(&o4).unwrap(),
            dev.download(&o5).unwrap(),
            dev.download(&oh).unwrap(),
        );
        let (w4, w5, wh, wb, wi) = (
            dev.download(&w4).unwrap(),
            dev.download(&w5).unwrap(),
            dev.download(&wh).unwrap(),
            dev.download(&wb).unwrap(),
            dev.download(&wi).unwrap(),
        );
        for i in 0..n {
            let (v, a, b) = (xs[i], e4s[i], e5s[i]);
            assert_eq!(o4[i], f8e4m3::from_f32(v), "f32 {v:e} as f8e4m3, n = {n}");
            assert_eq!(o5[i], f8e5m2::from_f32(v), "f32 {v:e} as f8e5m2, n = {n}");
            let want = f8e4m3::from_f32(hs[i].to_f32());
            assert_eq!(oh[i], want, "f16 {} as f8e4m3", hs[i]);
            assert!(same(w4[i], a.to_f32()), "{a:?} as f32: {}", w4[i]);
            assert!(same(w5[i], b.to_f32() * 2.0), "{b:?} as f32 * 2: {}", w5[i]);
            assert!(same(wh[i].to_f32(), a.to_f32()), "{a:?} as f16: {}", wh[i]);
            assert!(same(wb[i].to_f32(), b.to_f32()), "{b:?} as bf16: {}", wb[i]);
            let wi_want = (a.to_f32() as i32).wrapping_add(b.to_f32() as i32);
            assert_eq!(wi[i], wi_want, "{a:?} as i32 + {b:?} as i32");
        }
        // Single elements (no pairs), on a prefix.
        let m = n.min(600);
        let mut s4 = dev.zeros::<f8e4m3>(n).unwrap();
        let mut s5 = dev.zeros::<f8e5m2>(n).unwrap();
        f8_scalar::launch(dev, Grid::x(m as u32), &x, &mut s4, &mut s5, n as i32).unwrap();
        let (s4, s5) = (dev.download(&s4).unwrap(), dev.download(&s5).unwrap());
        for i in 0..m {
            assert_eq!(
                s4[i],
                f8e4m3::from_f32(xs[i]),
                "scalar {:e} as f8e4m3",
                xs[i]
            );
            assert_eq!(
                s5[i],
                f8e5m2::from_f32(xs[i]),
                "scalar {:e} as f8e5m2",
                xs[i]
            );
        }
    }
}

/// [`f64_ops`] on `dev` against Rust in `f64`. The element-wise expression within 8 ulps of the
/// sum of its terms' sizes (the GPU may fuse a multiply and an add); conversions, `max`, `min` and the integer-valued atomic sums
/// exact; per-program sums within 1e-12 relative.
pub fn check_f64(dev: &Device, sizes: &[usize]) {
    let alpha = 0.3f64;
    for (t, &n) in sizes.iter().enumerate() {
        let mut r = Rng(90 + t as u64);
        let mut unit = || (r.next() >> 11) as f64 / (1u64 << 53) as f64;
        let xs: Vec<f64> = (0..n).map(|_| (unit() - 0.3) * 1e3).collect();
        let ys: Vec<f64> = (0..n).map(|_| (unit() + 0.01) * 7.0).collect();
        let qs: Vec<i64> = (0..n)
            .map(|i| (i as i64 * 7919) % 100_003 - 50_000)
            .collect();
        let programs = n.div_ceil(256);
        let (x, y, q) = (
            dev.upload(&xs).unwrap(),
            dev.upload(&ys).unwrap(),
            dev.upload(&qs).unwrap(),
        );
        let mut o = dev.zeros::<f64>(n).unwrap();
        let mut of = dev.zeros::<f32>(n).unwrap();
        let mut oi = dev.zeros::<i64>(n).unwrap();
        let mut oh = dev.zeros::<f16>(n).unwrap();
        let mut o8 = dev.zeros::<f8e4m3>(n).unwrap();
        let mut red = dev.zeros::<f64>(3 * programs).unwrap();
        let mut total = dev.zeros::<f64>(1).unwrap();
        let mut count = dev.zeros::<u64>(1).unwrap();
        f64_ops::launch(
            dev,
            Grid::x(programs as u32),
            &x,
            &y,
            &q,
            &mut o,
            &mut of,
            &mut oi,
            &mut oh,
            &mut o8,
            &mut red,
            &mut total,
            &mut count,
            alpha,
            n as i32,
        )
        .unwrap();
        let o = dev.download(&o).unwrap();
        let (of, oi, oh, o8) = (
            dev.download(&of).unwrap(),
            dev.download(&oi).unwrap(),
            dev.download(&oh).unwrap(),
            dev.download(&o8).unwrap(),
        );
        let (red, total, count) = (
            dev.download(&red).unwrap(),
            dev.download(&total).unwrap(),
            dev.download(&count).unwrap(),
        );
        for i in 0..n {
            let (a, b, k) = (xs[i], ys[i], qs[i]);
            let want = a / b - alpha * a.abs().sqrt() + a.mul_add(b, k as f64) + a.max(b)
                - a.min(-b)
                + a.floor() * b.ceil();
            // Each rounding is at most half an ulp of its result, bounded by the terms' sizes.
            let size = (a * b).abs()
                + (a / b).abs()
                + alpha * a.abs().sqrt()
                + (k as f64).abs()
                + a.abs().max(b.abs()) * 2.0
                + (a.floor() * b.ceil()).abs();
            let tol = 8.0 * f64::EPSILON * size;
            assert!(
                (o[i] - want).abs() <= tol,
                "f64 expression at {i}: {} vs {want}",
                o[i]
            );
            assert_eq!(of[i], a as f32, "{a} as f32");
            assert_eq!(oi[i], (a * 1e12) as i64, "{a} * 1e12 as i64");
            assert_eq!(oh[i], f16::from_f32(b as f32), "{b} as f16");
            assert_eq!(o8[i], f8e4m3::from_f32(b as f32), "{b} as f8e4m3");
        }
        for p in 0..programs {
            let rows = p * 256..((p + 1) * 256).min(n);
            let sum: f64 = xs[rows.clone()].iter().sum();
            let scale: f64 = xs[rows.clone()].iter().map(|v| v.abs()).sum();
            assert!(
                (red[3 * p] - sum).abs() <= 1e-12 * scale,
                "sum of program {p}"
            );
            let max = xs[rows.clone()].iter().copied().fold(f64::MIN, f64::max);
            let min = ys[rows].iter().copied().fold(f64::MAX, f64::min);
            assert_eq!(red[3 * p + 1], max, "max of program {p}");
            assert_eq!(red[3 * p + 2], min, "min of program {p}");
        }
        let want_total: f64 = xs.iter().map(|&a| (a * 1000.0).floor()).sum();
        assert_eq!(total[0], want_total, "atomic f64 sum");
        let want_count = qs.iter().fold(0u64, |s, &k| s.wrapping_add(k as u64));
        assert_eq!(count[0], want_count, "atomic u64 sum");
    }
}
