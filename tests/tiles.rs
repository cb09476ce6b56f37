//! 2-D tiles on the interpreter: broadcasting (`expand_dims`, NumPy rules), reductions along either
//! axis, masks on both edges, against Rust references on awkward shapes (1 row, 1 column, 17,
//! sizes that are not multiples of the tile, rows wider than one program's columns); `roll` along
//! either axis against NumPy's definition; `trans`, `reshape` and `broadcast_to` on blocks of
//! 1 × 1 to 64 × 64 (and products with transposed operands) against their definitions; `gather`
//! along either axis against its definition.

use tile_tests as common;

use common::{
    gather_inputs, gather_ref, gathers, layernorm_rows, outer_2d, rolls, shapes_2d, sums_2d,
    trans_dots, transpose_2d, Rng,
};
use tile::prelude::*;

/// Shapes every 2-D test runs: `(rows, cols)`.
const SHAPES: [(i32, i32); 7] = [
    (1, 1),
    (1, 100),
    (17, 1),
    (17, 33),
    (33, 64),
    (64, 17),
    (100, 300),
];

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut r = Rng(seed);
    (0..n).map(|_| 2.0 * r.f32()).collect()
}

fn close(got: f32, want: f64, tol: f64) -> bool {
    (got as f64 - want).abs() <= tol * (1.0 + want.abs())
}

#[test]
fn row_and_column_sums() {
    for (rows, cols) in SHAPES {
        let (bm, bn) = (16, 64);
        let (nrb, ncb) = ((rows + bm - 1) / bm, (cols + bn - 1) / bn);
        let x = random((rows * cols) as usize, 7);
        let mut row_sums = vec![f32::NAN; (rows * ncb) as usize];
        let mut col_sums = vec![f32::NAN; (cols * nrb) as usize];
        sums_2d::launch(
            &Device::interpreter(),
            Grid::xy(nrb as u32, ncb as u32),
            &x,
            &mut row_sums,
            &mut col_sums,
            rows,
            cols,
            ncb,
            nrb,
        )
        .unwrap();
        let at = |i: i32, j: i32| x[(i * cols + j) as usize] as f64;
        for i in 0..rows {
            for cb in 0..ncb {
                let want: f64 = (cb * bn..((cb + 1) * bn).min(cols)).map(|j| at(i, j)).sum();
                let got = row_sums[(i * ncb + cb) as usize];
                assert!(
                    close(got, want, 1e-5),
                    "{rows}x{cols} row {i} block {cb}: {got} vs {want}"
                );
            }
        }
        for j in 0..cols {
            for rb in 0..nrb {
                let want: f64 = (rb * bm..((rb + 1) * bm).min(rows)).map(|i| at(i, j)).sum();
                let got = col_sums[(j * nrb + rb) as usize];
                assert!(
                    close(got, want, 1e-5),
                    "{rows}x{cols} col {j} block {rb}: {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn layernorm_of_several_rows_per_program() {
    for (rows, n) in SHAPES {
        if n > 256 {
            continue; // a row is one tile of 256 columns
        }
        let x = random((rows * n) as usize, 11);
        let w = random(n as usize, 12);
        let b = random(n as usize, 13);
        let mut out = vec![f32::NAN; (rows * n) as usize];
        let (mut mean, mut rstd) = (vec![f32::NAN; rows as usize], vec![f32::NAN; rows as usize]);
        let eps = 1e-5f32;
        layernorm_rows::launch(
            &Device::interpreter(),
            Grid::x(cdiv(rows as usize, 4)),
            &x,
            &w,
            &b,
            &mut out,
            &mut mean,
            &mut rstd,
            rows,
            n,
            eps,
        )
        .unwrap();
        for i in 0..rows as usize {
            let row = &x[i * n as usize..(i + 1) * n as usize];
            let m = row.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
            let var = row.iter().map(|&v| (v as f64 - m).powi(2)).sum::<f64>() / n as f64;
            let r = 1.0 / (var + eps as f64).sqrt();
            assert!(close(mean[i], m, 1e-5), "{rows}x{n} mean {i}");
            assert!(
                close(rstd[i], r, 1e-4),
                "{rows}x{n} rstd {i}: {} vs {r}",
                rstd[i]
            );
            for j in 0..n as usize {
                let want = (row[j] as f64 - m) * r * w[j] as f64 + b[j] as f64;
                let got = out[i * n as usize + j];
                assert!(
                    close(got, want, 1e-4),
                    "{rows}x{n} [{i}][{j}]: {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn transpose_and_axis_maxima() {
    for (rows, cols) in SHAPES {
        let b = 32;
        let (gr, gc) = ((rows + b - 1) / b, (cols + b - 1) / b);
        let x = random((rows * cols) as usize, 5);
        let mut out = vec![f32::NAN; (rows * cols) as usize];
        let mut diag = vec![f32::NAN; (gr * gc * b) as usize];
        transpose_2d::launch(
            &Device::interpreter(),
            Grid::xy(gr as u32, gc as u32),
            &x,
            &mut out,
            &mut diag,
            rows,
            cols,
            gr * gc,
        )
        .unwrap();
        for i in 0..rows {
            for j in 0..cols {
                assert_eq!(out[(j * rows + i) as usize], x[(i * cols + j) as usize]);
            }
        }
        let at = |i: i32, j: i32| {
            if i < rows && j < cols {
                x[(i * cols + j) as usize]
            } else {
                f32::NEG_INFINITY
            }
        };
        for pi in 0..gr {
            for pj in 0..gc {
                for k in 0..b {
                    let i = pi * b + k;
                    if i >= rows {
                        continue;
                    }
                    let row_max = (0..b)
                        .map(|c| at(i, pj * b + c))
                        .fold(f32::NEG_INFINITY, f32::max);
                    let col_max = (0..b)
                        .map(|r| at(pi * b + r, pj * b + k))
                        .fold(f32::NEG_INFINITY, f32::max);
                    let got = diag[((pi * gc + pj) * b + k) as usize];
                    assert_eq!(
                        got,
                        row_max + col_max,
                        "{rows}x{cols} block ({pi},{pj}) k {k}"
                    );
                }
            }
        }
    }
}

#[test]
fn outer_products_broadcast_both_ways() {
    for (m, n) in SHAPES {
        if n > 128 {
            continue; // one column block
        }
        let a = random(m as usize, 3);
        let b: Vec<i32> = (0..n).map(|j| j * 37 - 500).collect();
        let mut out = vec![f32::NAN; (m * n) as usize];
        let mut iout = vec![-1; (m * n) as usize];
        outer_2d::launch(
            &Device::interpreter(),
            Grid::x(cdiv(m as usize, 8)),
            &a,
            &b,
            &mut out,
            &mut iout,
            m,
            n,
        )
        .unwrap();
        for i in 0..m as usize {
            for j in 0..n as usize {
                assert_eq!(out[i * n as usize + j], a[i] * b[j] as f32 + 0.5);
                assert_eq!(iout[i * n as usize + j], i as i32 * 1000 + b[j] % 7);
            }
        }
    }
}

/// NumPy's `roll` of a row-major `rows × cols` matrix: element `(i, j)` of the result is element
/// `((i − dr) mod rows, (j − dc) mod cols)`.
fn roll_ref<T: Copy>(a: &[T], rows: usize, cols: usize, dr: i64, dc: i64) -> Vec<T> {
    let m = |x: i64, n: usize| x.rem_euclid(n as i64) as usize;
    (0..rows * cols)
        .map(|k| {
            let (i, j) = (k / cols, k % cols);
            a[m(i as i64 - dr, rows) * cols + m(j as i64 - dc, cols)]
        })
        .collect()
}

#[test]
fn roll_matches_numpy_on_every_lowering() {
    let dev = Device::interpreter();
    let mut r = Rng(41);
    let x: Vec<f32> = (0..8192).map(|_| r.next() as f32 / 1e9).collect();
    let h: Vec<bf16> = (0..8192).map(|i| bf16::from_f32(i as f32)).collect();
    let (bx, bh) = (dev.upload(&x).unwrap(), dev.upload(&h).unwrap());
    let mut out = dev.upload(&vec![f32::NAN; 33472]).unwrap();
    let mut hout = dev.upload(&vec![bf16::ZERO; 8192]).unwrap();
    let mut iout = dev.upload(&vec![-1i32; 256]).unwrap();
    rolls::launch(&dev, Grid::x(1), &bx, &bh, &mut out, &mut hout, &mut iout).unwrap();
    let out = dev.download(&out).unwrap();
    assert_eq!(
        out[..8192],
        roll_ref(&x, 64, 128, 0, 64)[..],
        "half along columns"
    );
    assert_eq!(
        out[8192..16384],
        roll_ref(&x, 64, 128, 32, 0)[..],
        "half along rows"
    );
    assert_eq!(
        out[16384..24576],
        roll_ref(&x, 64, 128, 0, 3)[..],
        "by 3 along columns"
    );
    assert_eq!(
        out[24576..32768],
        roll_ref(&x, 64, 128, -5, 0)[..],
        "by -5 along rows"
    );
    assert_eq!(
        out[32768..33280],
        roll_ref(&x[..512], 4, 128, 2, 0)[..],
        "4 rows, by 2"
    );
    let sums: Vec<f32> = (0..64)
        .map(|i| x[i * 128..(i + 1) * 128].iter().sum())
        .collect();
    let got: Vec<f32> = out[33280..33344].to_vec();
    let want = roll_ref(&sums, 1, 64, 0, 32);
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-4 * w.abs().max(1.0),
            "row sums rolled: {g} vs {w}"
        );
    }
    let maxes: Vec<f32> = (0..128)
        .map(|j| {
            (0..64)
                .map(|i| x[i * 128 + j])
                .fold(f32::NEG_INFINITY, f32::max)
        })
        .collect();
    assert_eq!(
        out[33344..],
        roll_ref(&maxes, 1, 128, 0, 64)[..],
        "column maxima"
    );
    assert_eq!(
        dev.download(&hout).unwrap(),
        roll_ref(&h, 64, 128, 0, 64),
        "bf16"
    );
    let i3: Vec<i32> = (0..256).map(|i| i * 3).collect();
    assert_eq!(
        dev.download(&iout).unwrap(),
        roll_ref(&i3, 1, 256, 0, 128),
        "1-D i32"
    );
}

/// `trans`, `reshape` (1-D and 2-D) and `broadcast_to` of `BM × BN` blocks, `f32` and `i32`,
/// on matrices whose shapes are not multiples of the blocks, against their definitions.
#[test]
fn trans_reshape_and_broadcast_to() {
    let dev = Device::interpreter();
    for (rows, cols) in SHAPES {
        for (bm, bn) in [
            (1usize, 1usize),
            (1, 64),
            (16, 1),
            (16, 64),
            (64, 1),
            (64, 64),
        ] {
            let (nrb, ncb) = ((rows as usize).div_ceil(bm), (cols as usize).div_ceil(bn));
            let (rows_u, cols_u) = (rows as usize, cols as usize);
            let x: Vec<i32> = (0..rows_u * cols_u).map(|e| e as i32 * 7 - 3).collect();
            let xf: Vec<f32> = x.iter().map(|&e| e as f32 * 0.5).collect();
            let n = rows_u * cols_u;
            let per = nrb * ncb * bm * bn;
            let at = |i: usize, j: usize| {
                if i < rows_u && j < cols_u {
                    x[i * cols_u + j]
                } else {
                    0
                }
            };
            let grid = Grid::xy(nrb as u32, ncb as u32);
            let (mut t, mut flat, mut sw, mut r0) = (
                vec![0i32; n],
                vec![0i32; per],
                vec![0i32; per],
                vec![0i32; n],
            );
            shapes_2d::launch(
                &dev, grid, &x, &mut t, &mut flat, &mut sw, &mut r0, rows, cols, bm as i32,
                bn as i32,
            )
            .unwrap();
            let (mut tf, mut flatf, mut swf, mut r0f) = (
                vec![0f32; n],
                vec![0f32; per],
                vec![0f32; per],
                vec![0f32; n],
            );
            shapes_2d::launch(
                &dev, grid, &xf, &mut tf, &mut flatf, &mut swf, &mut r0f, rows, cols, bm as i32,
                bn as i32,
            )
            .unwrap();
            let case = format!("{rows}x{cols} in {bm}x{bn} blocks");
            for i in 0..rows_u {
                for j in 0..cols_u {
                    assert_eq!(t[j * rows_u + i], at(i, j), "{case}: trans at {i},{j}");
                    assert_eq!(
                        tf[j * rows_u + i],
                        at(i, j) as f32 * 0.5,
                        "{case}: f32 trans"
                    );
                    let first = at(i / bm * bm, j);
                    assert_eq!(r0[i * cols_u + j], first, "{case}: broadcast_to at {i},{j}");
                    assert_eq!(
                        r0f[i * cols_u + j],
                        first as f32 * 0.5,
                        "{case}: f32 broadcast_to"
                    );
                }
            }
            for pi in 0..nrb {
                for pj in 0..ncb {
                    let base = (pi * ncb + pj) * bm * bn;
                    for e in 0..bm * bn {
                        let want = at(pi * bm + e / bn, pj * bn + e % bn);
                        assert_eq!(
                            flat[base + e],
                            want,
                            "{case}: 1-D reshape of block {pi},{pj}"
                        );
                        assert_eq!(sw[base + e], want, "{case}: 2-D reshape of block {pi},{pj}");
                        assert_eq!(flatf[base + e], want as f32 * 0.5, "{case}: f32 reshape");
                        assert_eq!(swf[base + e], want as f32 * 0.5, "{case}: f32 2-D reshape");
                    }
                }
            }
        }
    }
}

/// `q · kᵀ`, the product transposed under a transposed bool mask, and `qᵀ · q`, in f32 and f16,
/// against an f64 reference of the rounded inputs.
#[test]
fn products_with_transposed_operands() {
    let dev = Device::interpreter();
    let q: Vec<f32> = random(4096, 11).iter().map(|v| v - 1.0).collect();
    let k: Vec<f32> = random(2048, 12).iter().map(|v| v - 1.0).collect();
    let qh: Vec<f16> = q.iter().map(|&v| f16::from_f32(v)).collect();
    let kh: Vec<f16> = k.iter().map(|&v| f16::from_f32(v)).collect();
    let check = |q: &[f64], k: &[f64], s: &[f32], st: &[f32], u: &[f32], what: &str| {
        for m in 0..64 {
            for n in 0..32 {
                let want: f64 = (0..64).map(|d| q[m * 64 + d] * k[n * 64 + d]).sum();
                assert!(close(s[m * 32 + n], want, 1e-5), "{what}: s[{m}][{n}]");
                let t = if s[m * 32 + n] > 0.0 {
                    s[m * 32 + n]
                } else {
                    0.0
                };
                assert_eq!(st[n * 64 + m], t, "{what}: st[{n}][{m}]");
            }
            for e in 0..64 {
                let want: f64 = (0..64).map(|r| q[r * 64 + m] * q[r * 64 + e]).sum();
                assert!(close(u[m * 64 + e], want, 1e-5), "{what}: u[{m}][{e}]");
            }
        }
    };
    let (mut s, mut st, mut u) = (vec![0f32; 2048], vec![0f32; 2048], vec![0f32; 4096]);
    trans_dots::launch(&dev, 1, &q, &k, &mut s, &mut st, &mut u).unwrap();
    let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    check(&wide(&q), &wide(&k), &s, &st, &u, "f32");
    trans_dots::launch(&dev, 1, &qh, &kh, &mut s, &mut st, &mut u).unwrap();
    let wide_h = |v: &[f16]| v.iter().map(|&x| f64::from(x.to_f32())).collect::<Vec<_>>();
    check(&wide_h(&qh), &wide_h(&kh), &s, &st, &u, "f16");
}

#[test]
fn products_with_a_transposed_operand_in_a_loop() {
    common::check_dot_trans(&Device::interpreter());
}

#[test]
fn chained_products_at_head_dimension_128() {
    common::check_chained_products(&Device::interpreter(), &[(130, 70), (1, 5)]);
}

#[test]
fn gather_matches_its_definition() {
    let dev = Device::interpreter();
    let (x, h, idx) = gather_inputs(29);
    let mut out = dev.upload(&vec![f32::NAN; 5635]).unwrap();
    let mut hout = dev.upload(&vec![bf16::ZERO; 1024]).unwrap();
    let (bx, bh, bi) = (
        dev.upload(&x).unwrap(),
        dev.upload(&h).unwrap(),
        dev.upload(&idx).unwrap(),
    );
    gathers::launch(&dev, Grid::x(1), &bx, &bh, &bi, &mut out, &mut hout).unwrap();
    let out = dev.download(&out).unwrap();
    for c in &common::GATHER_CASES {
        let len: usize = c.to.iter().product();
        let numel: usize = c.shape.iter().product();
        let src = &x[c.src..c.src + numel];
        let want = gather_ref(src, c.shape, &idx[c.at..c.at + len], c.to, c.axis);
        assert_eq!(out[c.at..c.at + len], want[..], "{}", c.name);
    }
    let want = gather_ref(&h, &[16, 64], &idx[5635..], &[16, 64], 1);
    assert_eq!(dev.download(&hout).unwrap(), want, "bf16");
    // The reference itself: row 0 of the first case, and an index of -1 reading the last.
    assert_eq!(
        gather_ref(&[1, 2, 3, 4], &[4], &[-1, 4, 6], &[3], 0),
        [4, 1, 3]
    );
    assert_eq!(
        gather_ref(&[1, 2, 3, 4], &[2, 2], &[1, 0, 0, 1], &[2, 2], 0),
        [3, 2, 1, 4]
    );
}

#[test]
fn interleave_join_and_split_match_their_definitions() {
    let dev = Device::interpreter();
    common::check_pairs(&dev);
    common::check_unpack_int4(&dev);
}
