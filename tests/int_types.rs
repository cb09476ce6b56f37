//! The integer types beyond `i32`/`i64` (`i8`, `i16`, `u8`, `u32`, `u64`), shifts and bitcasts,
//! on the interpreter, against Rust computing the same expressions with the semantics the
//! language states: Rust's `as` for conversions, unsigned division, comparison and `max`, and
//! shifts whose amount is read as unsigned, past the width giving 0 (or the sign).

use tile_tests as common;

use common::{int_types, unsigned_reduce, Rng, SIZES};
use tile::prelude::*;

/// `x << a` for an amount read as unsigned (0 past the width).
fn shl32(x: u32, a: u32) -> u32 {
    if a >= 32 {
        0
    } else {
        x << a
    }
}

/// Logical `x >> a` (0 past the width).
fn shr32(x: u32, a: u32) -> u32 {
    if a >= 32 {
        0
    } else {
        x >> a
    }
}

/// Arithmetic `x >> a` (the sign past the width).
fn sar32(x: i32, a: u32) -> i32 {
    x >> a.min(31)
}

/// Random values with the edges of each type mixed in.
struct Inputs {
    a8: Vec<i8>,
    b8: Vec<u8>,
    c16: Vec<i16>,
    w: Vec<u32>,
    q: Vec<u64>,
    s: Vec<i32>,
    f: Vec<f32>,
}

fn inputs(n: usize, seed: u64) -> Inputs {
    let mut r = Rng(seed);
    let mut pick = |edges: &[u64]| {
        let x = r.next();
        if x % 5 == 0 {
            edges[(x >> 8) as usize % edges.len()]
        } else {
            r.next()
        }
    };
    let mut a8 = vec![];
    let mut b8 = vec![];
    let mut c16 = vec![];
    let mut w = vec![];
    let mut q = vec![];
    let mut s = vec![];
    let mut f = vec![];
    let specials = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.999,
        1.0e-40,
    ];
    for i in 0..n {
        a8.push(pick(&[0x80, 0x7f, 0xff, 0]) as i8);
        b8.push(pick(&[0, 255, 31, 32, 33]) as u8);
        c16.push(pick(&[0x8000, 0x7fff, 0xffff]) as i16);
        w.push(pick(&[0, u64::from(u32::MAX), 1 << 31, (1 << 31) - 1, 1]) as u32);
        q.push(pick(&[0, u64::MAX, 1 << 63, 1_000_000_007]));
        s.push(pick(&[(-1i64) as u64, 31, 32, 63, 64, (-32i64) as u64, 1 << 31]) as i32);
        let x = (pick(&[0]) >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
        f.push(if i % 11 == 3 {
            specials[i % specials.len()]
        } else {
            x
        });
    }
    Inputs {
        a8,
        b8,
        c16,
        w,
        q,
        s,
        f,
    }
}

#[test]
fn integer_types_shifts_and_bitcasts_match_rust() {
    let dev = Device::interpreter();
    for (t, &n) in SIZES.iter().enumerate() {
        let i = inputs(n, 40 + t as u64);
        let mut o8 = vec![0i8; n];
        let mut ou8 = vec![0u8; n];
        let mut o16 = vec![0i16; n];
        let mut ow = vec![0u32; n];
        let mut oq = vec![0u64; n];
        let mut os = vec![0i32; n];
        let mut of = vec![0f32; n];
        int_types::launch(
            &dev,
            Grid::x(cdiv(n, 256)),
            &i.a8,
            &i.b8,
            &i.c16,
            &i.w,
            &i.q,
            &i.s,
            &i.f,
            &mut o8,
            &mut ou8,
            &mut o16,
            &mut ow,
            &mut oq,
            &mut os,
            &mut of,
            n as i32,
        )
        .unwrap();
        for e in 0..n {
            let (x8, y8, z16, u, v, k, x) =
                (i.a8[e], i.b8[e], i.c16[e], i.w[e], i.q[e], i.s[e], i.f[e]);
            let wide = i32::from(x8) + i32::from(y8) + i32::from(z16);
            let ud = (u / (u32::from(y8) + 1)) ^ (u % 7) ^ u.max(3_000_000_000);
            let sh = shr32(u, (k & 31) as u32) | u.wrapping_shl(3) | shr32(u, k as u32);
            let sar = sar32(k, (k & 63) as u32)
                ^ (shl32(k as u32, u32::from(y8)) as i32)
                ^ sar32(k, u32::MAX);
            let below = u32::from(u < 1 << 31);
            let bits = x.to_bits();
            let negated = f32::from_bits(bits ^ 0x8000_0000);
            let nibble = ((u >> ((e as u32 & 7) * 4)) & 15) as i32 - 8;
            let v2 = v
                .wrapping_mul(3)
                .wrapping_add(u64::from(u))
                .wrapping_sub(v >> 1)
                .wrapping_add((v / 1_000_000_007) % 5);
            let want_f = negated + u as f32 + v as f32;
            let at = format!("n = {n}, element {e}: inputs {x8} {y8} {z16} {u} {v} {k} {x}");
            assert_eq!(o8[e], wide as i8, "o8, {at}");
            assert_eq!(ou8[e], (x * 300.0) as u8, "ou8, {at}");
            assert_eq!(o16[e], (bits >> 16) as i16, "o16, {at}");
            assert_eq!(ow[e], ud ^ sh ^ below, "ow, {at}");
            assert_eq!(oq[e], v2, "oq, {at}");
            assert_eq!(os[e], sar ^ nibble ^ wide, "os, {at}");
            assert!(
                of[e].to_bits() == want_f.to_bits() || of[e].is_nan() && want_f.is_nan(),
                "of, {at}: {} vs {want_f}",
                of[e]
            );
        }
    }
}

#[test]
fn unsigned_reductions_atomics_and_half_bits() {
    let dev = Device::interpreter();
    for n in [1usize, 17, 511, 512] {
        let i = inputs(n, n as u64);
        let h: Vec<f16> = i.f.iter().map(|&x| f16::from_f32(x)).collect();
        let g: Vec<bf16> = i.f.iter().map(|&x| bf16::from_f32(-x)).collect();
        let mut out = vec![0u32; 4];
        let mut hb = vec![0i16; n];
        let mut gb = vec![bf16::ZERO; n];
        let mut top = vec![7u32];
        unsigned_reduce::launch(
            &dev,
            Grid::x(1),
            &i.w,
            &h,
            &g,
            &mut out,
            &mut hb,
            &mut gb,
            &mut top,
            n as i32,
        )
        .unwrap();
        let max = *i.w.iter().max().unwrap();
        let first_max = i.w.iter().position(|&u| u == max).unwrap() as u32;
        let sum = i.w.iter().fold(0u32, |a, &b| a.wrapping_add(b));
        assert_eq!(
            out,
            [max, *i.w.iter().min().unwrap(), sum, first_max],
            "n = {n}"
        );
        assert_eq!(top[0], max.max(7), "n = {n}");
        for e in 0..n {
            assert_eq!(hb[e], h[e].to_bits() as i16, "n = {n}, element {e}");
            assert_eq!(
                gb[e].to_bits(),
                g[e].to_bits() ^ 0x7fff,
                "n = {n}, element {e}"
            );
        }
    }
}
