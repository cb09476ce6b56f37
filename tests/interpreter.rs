//! The interpreter against plain Rust references, on random inputs of awkward sizes.

use tile_tests as common;

use common::{clamp, fused_add_mul::add_mul, i64_axpy, int_ops, small_tile, Rng, SIZES};
use tile::prelude::*;

fn dev() -> Device {
    Device::interpreter()
}

#[test]
fn add_mul_matches_reference() {
    for (k, &n) in SIZES.iter().enumerate() {
        let mut r = Rng(k as u64);
        let x: Vec<f32> = (0..n).map(|_| r.f32()).collect();
        let y: Vec<f32> = (0..n).map(|_| r.f32()).collect();
        let z: Vec<f32> = (0..n).map(|_| r.f32()).collect();
        let mut out = vec![f32::NAN; n];
        add_mul::launch(
            &dev(),
            Grid::x(cdiv(n, 1024)),
            &x,
            &y,
            &z,
            &mut out,
            n as i32,
        )
        .unwrap();
        for i in 0..n {
            assert_eq!(out[i], (x[i] + y[i]) * z[i], "n = {n}, i = {i}");
        }
    }
}

fn int_ops_ref(x: i32, y: i32, i: i32) -> i32 {
    let div = |a: i32, b: i32| if b == 0 { 0 } else { a.wrapping_div(b) };
    let rem = |a: i32, b: i32| if b == 0 { 0 } else { a.wrapping_rem(b) };
    let q = div(x, y).wrapping_add(rem(x, y));
    let s = if x > y {
        x.min(y).wrapping_mul(3)
    } else {
        x.max(y.wrapping_neg())
    };
    (s ^ (q & 255) | !x).wrapping_sub(i)
}

#[test]
fn int_ops_match_reference() {
    for (k, &n) in SIZES.iter().enumerate() {
        let mut r = Rng(100 + k as u64);
        // Small values so that zero divisors and equal operands occur, plus extremes.
        let mut a: Vec<i32> = (0..n).map(|_| (r.next() % 21) as i32 - 10).collect();
        let b: Vec<i32> = (0..n).map(|_| (r.next() % 7) as i32 - 3).collect();
        if n > 3 {
            a[0] = i32::MIN;
            a[1] = i32::MAX;
            a[2] = i32::MIN;
        }
        let mut b = b;
        if n > 3 {
            b[2] = -1;
        }
        let mut out = vec![12345; n];
        int_ops::launch(&dev(), Grid::x(cdiv(n, 256)), &a, &b, &mut out, n as i32).unwrap();
        for i in 0..n {
            assert_eq!(
                out[i],
                int_ops_ref(a[i], b[i], i as i32),
                "n = {n}, i = {i}, a = {}, b = {}",
                a[i],
                b[i]
            );
        }
    }
}

#[test]
fn i64_axpy_matches_reference() {
    for &n in &SIZES {
        let mut r = Rng(n as u64);
        let a: Vec<i64> = (0..n).map(|_| r.next() as i64).collect();
        let mut out = vec![0i64; n];
        let s = -3_000_000_007i64;
        i64_axpy::launch(&dev(), Grid::x(cdiv(n, 512)), &a, &mut out, n as i32, s).unwrap();
        for i in 0..n {
            assert_eq!(
                out[i],
                a[i].wrapping_mul(s).wrapping_add(7),
                "n = {n}, i = {i}"
            );
        }
    }
}

#[test]
fn clamp_matches_reference() {
    for &n in &SIZES {
        let mut r = Rng(7 * n as u64);
        let mut x: Vec<f32> = (0..n).map(|_| 3.0 * r.f32()).collect();
        if n > 2 {
            x[1] = f32::NAN;
            x[2] = f32::INFINITY;
        }
        let mut out = vec![f32::NAN; n];
        clamp::launch(
            &dev(),
            Grid::x(cdiv(n, 2048)),
            &x,
            &mut out,
            n as i32,
            -1.0,
            1.0,
        )
        .unwrap();
        for i in 0..n {
            let v = x[i];
            let want = if v.is_nan() { 0.0 } else { v.clamp(-1.0, 1.0) } / 2.0 + 0.25;
            assert_eq!(out[i], want, "n = {n}, i = {i}, x = {v}");
        }
    }
}

#[test]
fn small_tile_on_a_2d_grid() {
    for rows in [1i32, 3, 17, 64] {
        let n = rows as usize * 16;
        let mut r = Rng(rows as u64);
        let x: Vec<f32> = (0..n).map(|_| r.f32()).collect();
        let mut out = vec![f32::NAN; n];
        // 2-D grid: axis 0 has 4 programs, axis 1 enough rows of programs to cover.
        small_tile::launch(&dev(), Grid::xy(4, cdiv(rows, 4)), &x, &mut out, rows).unwrap();
        for i in 0..n {
            assert_eq!(out[i], x[i] * 2.0 + 1.0, "rows = {rows}, i = {i}");
        }
    }
}

#[test]
fn masked_off_lanes_take_other() {
    // n = 5 with a 2048 tile: lanes 5.. are masked; `other` = -1.5 flows into the result but is
    // not stored, and nothing past n is touched.
    let x = vec![0.5f32; 5];
    let mut out = vec![9.0f32; 8];
    clamp::launch(&dev(), Grid::x(1), &x, &mut out, 5, -1.0, 1.0).unwrap();
    assert_eq!(&out[..5], &[0.5; 5]);
    assert_eq!(&out[5..], &[9.0; 3]);
}
