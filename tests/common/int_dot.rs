//! `dot` of `i8` tiles into `i32` (W8A8's product): on tensor cores from one `m16n8k32` up, the
//! exact chain below it, checked exactly against Rust.

use tile::prelude::*;

use super::Rng;

#[tile_kernel(num_warps = 4)]
/// `c = a · bᵀ + c0` for `i8` matrices `a` (`m × k`) and `b` (`n × k`, a weight stored as a linear
/// layer stores it), `i32` result, in steps of `BK` along `k`, one `BM × BN` block per program.
#[allow(clippy::too_many_arguments)]
pub fn dot_i8_nt(
    a: Ptr<i8, { m * k }>,
    b: Ptr<i8, { n * k }>,
    c0: Ptr<i32, { m * n }>,
    c: Ptr<i32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    BM: Const<64>,
    BN: Const<64>,
    BK: Const<64>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let inside = (rows < m).expand_dims(1) & (cols < n).expand_dims(0);
    let at_c = rows.expand_dims(1) * n + cols.expand_dims(0);
    let mut acc = load(c0 + at_c, inside, 0);
    for k0 in (0..k).step_by(BK) {
        let kk = (k0 + ks).expand_dims(0);
        let x = load(
            a + rows.expand_dims(1) * k + kk,
            (rows < m).expand_dims(1) & (kk < k),
            0,
        );
        let w = load(
            b + cols.expand_dims(1) * k + kk,
            (cols < n).expand_dims(1) & (kk < k),
            0,
        );
        acc = dot(x, w.trans(), acc);
    }
    store(c + at_c, acc, inside);
}

#[tile_kernel(num_warps = 4, num_stages = 1)]
/// `c = a · b` for `i8` matrices `a` (`m × k`) and `b` (`k × n`), `i32` result; with `BK = 16`
/// below one `m16n8k32`, so the product is the exact chain on every target, and with `BK = 32`
/// on tensor cores, `b` converted through registers (an `i8` `B` stored `K × N` has no ring:
/// `num_stages = 1` says so).
#[allow(clippy::too_many_arguments)]
pub fn dot_i8_nn(
    a: Ptr<i8, { m * k }>,
    b: Ptr<i8, { k * n }>,
    c: Ptr<i32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    BM: Const<32>,
    BN: Const<32>,
    BK: Const<{ [16, 32] }>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let mut acc = full([BM, BN], 0);
    for k0 in (0..k).step_by(BK) {
        let kk = k0 + ks;
        let x = load(
            a + rows.expand_dims(1) * k + kk.expand_dims(0),
            (rows < m).expand_dims(1) & (kk < k).expand_dims(0),
            0,
        );
        let w = load(
            b + kk.expand_dims(1) * n + cols.expand_dims(0),
            (kk < k).expand_dims(1) & (cols < n).expand_dims(0),
            0,
        );
        acc = dot(x, w, acc);
    }
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

/// [`dot_i8_nt`] and both instances of [`dot_i8_nn`] against Rust, exactly, on shapes with ragged
/// edges along every axis; inputs include −128 and 127 so that sums pass 2³¹ and wrap.
pub fn check_dot_i8(dev: &Device, shapes: &[(usize, usize, usize)]) {
    for &(m, n, k) in shapes {
        let mut g = Rng((m * 131 + n * 7 + k) as u64);
        let mut byte = || {
            let x = g.next();
            if x % 3 == 0 {
                if x & 8 == 0 {
                    -128
                } else {
                    127
                }
            } else {
                (x >> 8) as i8
            }
        };
        let a: Vec<i8> = (0..m * k).map(|_| byte()).collect();
        let b: Vec<i8> = (0..n * k).map(|_| byte()).collect();
        let c0: Vec<i32> = (0..m * n)
            .map(|i| (i as i32).wrapping_mul(0x3779_b9f1))
            .collect();
        let (da, db, dc0) = (
            dev.upload(&a).unwrap(),
            dev.upload(&b).unwrap(),
            dev.upload(&c0).unwrap(),
        );
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        // `b` read as `n × k` (transposed) or as `k × n`.
        let want = |i: usize, j: usize, nt: bool| -> i32 {
            (0..k).fold(0i32, |s, p| {
                let bv = if nt { b[j * k + p] } else { b[p * n + j] };
                s.wrapping_add(i32::from(a[i * k + p]) * i32::from(bv))
            })
        };
        let mut c = dev.upload(&vec![0x5555_5555i32; m * n]).unwrap();
        let grid = Grid::xy(m.div_ceil(64) as u32, n.div_ceil(64) as u32);
        dot_i8_nt::launch(dev, grid, &da, &db, &dc0, &mut c, mi, ni, ki).unwrap();
        let got = dev.download(&c).unwrap();
        for i in 0..m {
            for j in 0..n {
                let w = want(i, j, true).wrapping_add(c0[i * n + j]);
                assert_eq!(got[i * n + j], w, "nt {m}×{n}×{k}: c[{i}][{j}]");
            }
        }
        let grid = Grid::xy(m.div_ceil(32) as u32, n.div_ceil(32) as u32);
        for bk in [16, 32] {
            let mut c = dev.upload(&vec![0x5555_5555i32; m * n]).unwrap();
            dot_i8_nn::launch(dev, grid, &da, &db, &mut c, mi, ni, ki, bk).unwrap();
            let got = dev.download(&c).unwrap();
            for i in 0..m {
                for j in 0..n {
                    assert_eq!(
                        got[i * n + j],
                        want(i, j, false),
                        "nn BK {bk} {m}×{n}×{k}: c[{i}][{j}]"
                    );
                }
            }
        }
    }
}
