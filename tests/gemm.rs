//! The `gemm` example's kernels on the interpreter against an f64 reference, on awkward shapes
//! (`M`, `N`, `K` of 1, 17, 1000 and non-multiples of the 128 × 128 × 32 and 128 × 256 × 64
//! tiles); the GPU runs the same checks in `examples/gemm` and `tests/gpu.rs`.

use tile_tests as common;

use common::gemm::{gemm, gemm_tma, gemm_wide};
use common::Rng;
use tile::prelude::*;

/// Every element of `a @ b` (`m × n × k`) written as f32 (`c32`) and as f16 (`c16`) against
/// f64: the f32 one within `dot_reference`'s bound for f32 sums of exact products in any order,
/// the f16 one within one f16 rounding more.
fn check_products(
    a: &[f16],
    b: &[f16],
    (m, n, k): (usize, usize, usize),
    c32: &[f32],
    c16: &[f16],
    what: &str,
) {
    for i in 0..m {
        for j in 0..n {
            let (want, tol) = common::dot_reference(a, b, None, (n, k), (i, j));
            let got = f64::from(c32[i * n + j]);
            assert!(
                (got - want).abs() <= tol,
                "{what} ({i}, {j}): f32 {got} vs {want}"
            );
            let h = f64::from(c16[i * n + j]);
            let tol16 = tol + want.abs() * 2f64.powi(-11) + 2f64.powi(-24);
            assert!(
                (h - want).abs() <= tol16,
                "{what} ({i}, {j}): f16 {h} vs {want}"
            );
        }
    }
}

/// `C = A @ B` for f16 inputs, written as f32 and as f16, against f64: the f32 output within the
/// interpreter's f32 accumulation error, the f16 output within one f16 rounding of it.
#[test]
fn gemm_matches_reference_on_awkward_shapes() {
    let dev = Device::interpreter();
    for (m, n, k) in [
        (1usize, 1usize, 1usize),
        (17, 17, 17),
        (3, 9, 1000),
        (130, 5, 33),
        // 9 row blocks: a full group of 8 and a group of one (the grouped order's ragged edge).
        (1100, 200, 5),
    ] {
        let mut r = Rng((m * 7919 + n * 31 + k) as u64);
        let a: Vec<f16> = (0..m * k).map(|_| f16::from_f32(r.f32())).collect();
        let b: Vec<f16> = (0..k * n).map(|_| f16::from_f32(r.f32())).collect();
        let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let mut c = dev.upload(&vec![f16::NAN; m * n]).unwrap();
        let mut c32 = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        let grid = common::gemm::grid(m, n, 64);
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        gemm::launch(&dev, grid, &da, &db, &mut c, mi, ni, ki, 64).unwrap();
        let grid = common::gemm::grid(m, n, 128);
        gemm::launch(&dev, grid, &da, &db, &mut c32, mi, ni, ki, 128).unwrap();
        let mut wide = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        let grid = common::gemm::grid(m, n, 256);
        gemm_wide::launch(&dev, grid, &da, &db, &mut wide, mi, ni, ki).unwrap();
        let (c, c32) = (dev.download(&c).unwrap(), dev.download(&c32).unwrap());
        let wide = dev.download(&wide).unwrap();
        let mut desc = dev.upload(&vec![f16::NAN; m * n]).unwrap();
        gemm_tma::launch(&dev, grid, &da, &db, &mut desc, mi, ni, ki).unwrap();
        let desc = dev.download(&desc).unwrap();
        let what = format!("{m}x{n}x{k}");
        check_products(&a, &b, (m, n, k), &c32, &c, &what);
        check_products(&a, &b, (m, n, k), &wide, &c, &format!("{what} gemm_wide"));
        check_products(&a, &b, (m, n, k), &wide, &desc, &format!("{what} gemm_tma"));
    }
}

/// The example's `matmul` on few rows (split-K: `gemm_splitk`, then `splitk_sum` adding the f32
/// slices) on the interpreter against f64, written as f32 and f16: one slice and several, a
/// ragged last slice, 16- and 32-row tiles. A split sum is one more summation order of the same
/// products, inside the bound `dot_reference` gives for any order.
#[test]
fn splitk_matches_reference() {
    use common::gemm::{matmul, splitk_plan, splitk_workspace};
    let dev = Device::interpreter();
    for (m, n, k) in [
        (1usize, 1usize, 1usize),
        (17, 17, 17),
        (3, 9, 1000),
        (20, 130, 2000),
        (32, 64, 700),
    ] {
        let (_, split, kslice) = splitk_plan(m, n, k).unwrap();
        assert!(
            split * kslice >= k && (split - 1) * kslice < k,
            "{m}x{n}x{k}"
        );
        let mut r = Rng((m * 104_729 + n * 13 + k) as u64);
        let a: Vec<f16> = (0..m * k).map(|_| f16::from_f32(r.f32())).collect();
        let b: Vec<f16> = (0..k * n).map(|_| f16::from_f32(r.f32())).collect();
        let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let mut part = dev
            .upload(&vec![f32::NAN; splitk_workspace(m, n, k)])
            .unwrap();
        let mut c = dev.upload(&vec![f16::NAN; m * n]).unwrap();
        let mut c32 = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        matmul(&dev, &da, &db, &mut c, &mut part, (m, n, k)).unwrap();
        matmul(&dev, &da, &db, &mut c32, &mut part, (m, n, k)).unwrap();
        let (c, c32) = (dev.download(&c).unwrap(), dev.download(&c32).unwrap());
        let what = format!("{m}x{n}x{k} split-K, {split} slices");
        check_products(&a, &b, (m, n, k), &c32, &c, &what);
    }
    // More rows than split-K takes, or columns enough to fill the GPU: `matmul` takes a tile,
    // and split-K needs no workspace.
    assert!(splitk_plan(33, 64, 64).is_none());
    assert_eq!(splitk_workspace(33, 64, 64), 0);
    assert!(splitk_plan(17, 8192, 1024).is_none());
    assert!(splitk_plan(1, 4096, 4096).is_some());
}

/// `act(A @ B + bias)` fused and unfused (the `gemm_bias_act` example's kernels) on the
/// interpreter, for every activation, both tiles and the f16 instances, against f64.
#[test]
fn gemm_bias_act_matches_reference() {
    use common::gemm_bias_act::{bias_act, gemm_bias_act, gemm_bias_act_wide};
    let dev = Device::interpreter();
    let act_ref = |act: i32, v: f64| match act {
        0 => v.max(0.0),
        1 => 0.5 * v * (1.0 + libm::erf(v / std::f64::consts::SQRT_2)),
        _ => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * v * (1.0 + (c * (v + 0.044715 * v * v * v)).tanh())
        }
    };
    for (m, n, k) in [
        (1usize, 1usize, 1usize),
        (17, 17, 17),
        (130, 9, 33),
        (9, 264, 72),
    ] {
        let mut r = Rng((m * 131 + n * 17 + k) as u64);
        let a: Vec<f16> = (0..m * k).map(|_| f16::from_f32(r.f32())).collect();
        let b: Vec<f16> = (0..k * n).map(|_| f16::from_f32(r.f32())).collect();
        let bias: Vec<f16> = (0..n).map(|_| f16::from_f32(r.f32())).collect();
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        for act in 0..3 {
            let mut fused = vec![f16::NAN; m * n];
            let grid = common::gemm_bias_act::grid(m, n, 128);
            gemm_bias_act::launch(&dev, grid, &a, &b, &bias, &mut fused, mi, ni, ki, act).unwrap();
            // The wide kernel is compiled for `n` and `k` multiples of 8 only
            // (`specialize = aligned`): other shapes are an `Err` that names them.
            let mut wide = vec![f16::NAN; m * n];
            let grid = common::gemm_bias_act::grid(m, n, 256);
            let c = &mut wide;
            let r = gemm_bias_act_wide::launch(&dev, grid, &a, &b, &bias, c, mi, ni, ki, act);
            let aligned = n % 8 == 0 && k % 8 == 0;
            match r {
                Ok(()) => assert!(aligned, "{m}x{n}x{k}: the wide kernel took unaligned sizes"),
                Err(e) => {
                    assert!(!aligned, "{m}x{n}x{k}: {e}");
                    let msg = e.to_string();
                    assert!(msg.contains("specialize = aligned"), "{msg}");
                    assert!(
                        msg.contains(&format!("`k` = {k} is not a multiple of 8")),
                        "{msg}"
                    );
                    wide = fused.clone();
                }
            }
            let mut tmp = vec![f16::NAN; m * n];
            let mut unfused = vec![f16::NAN; m * n];
            let grid64 = common::gemm::grid(m, n, 64);
            gemm::launch(&dev, grid64, &a, &b, &mut tmp, mi, ni, ki, 64).unwrap();
            let g = Grid::x(cdiv(m * n, 2048));
            bias_act::launch(&dev, g, &tmp, &bias, &mut unfused, mi, ni, act).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let (p, tol) = common::dot_reference(&a, &b, None, (n, k), (i, j));
                    let want = act_ref(act, p + f64::from(bias[j]));
                    // The f32 sum's error (GELU's slope is below 1.2), erf/tanh in f32, and one
                    // rounding to f16 (two for the unfused form, which rounds `A @ B` first).
                    let tol = 1.2 * tol + 2e-6 + 2.0 * want.abs().max(p.abs()) * 2f64.powi(-11);
                    let forms = [
                        ("fused", fused[i * n + j]),
                        ("fused wide", wide[i * n + j]),
                        ("unfused", unfused[i * n + j]),
                    ];
                    for (form, got) in forms {
                        let got = f64::from(got);
                        assert!(
                            (got - want).abs() <= tol + 2f64.powi(-24),
                            "{m}x{n}x{k} act {act} {form} ({i}, {j}): {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}

/// `softmax(x @ w)` (the `softmax_regression` example's fused kernels, every tile) on the
/// interpreter against the softmax of the f64 logits: one class tile (`SPLIT = 0`) and several
/// (`SPLIT = 1` plus `rescale`), ragged in every dimension.
#[test]
fn softmax_regression_matches_reference() {
    use common::softmax_regression::{fused_with, Tile, Workspace};
    let dev = Device::interpreter();
    for (b, d, c) in [
        (1usize, 1usize, 1usize),
        (17, 33, 10),
        (130, 40, 129),
        (3, 17, 1000),
        (20, 70, 300),
        (9, 20, 40),
        (5, 3, 200),
    ] {
        let mut r = Rng((b * 131 + d * 7 + c) as u64);
        let x: Vec<f16> = (0..b * d).map(|_| f16::from_f32(r.f32())).collect();
        let w: Vec<f16> = (0..d * c).map(|_| f16::from_f32(r.f32() * 4.0)).collect();
        let (dx, dw) = (dev.upload(&x).unwrap(), dev.upload(&w).unwrap());
        // Every tile, `w` as it is and padded to 32-byte rows (`pad_rows` first, `ldw` past
        // `classes`; 40, 200 and 1000 f16 classes are 16 bytes into a sector).
        for (tile, pad) in Tile::ALL.iter().flat_map(|&t| [(t, false), (t, true)]) {
            let mut probs = dev.upload(&vec![f32::NAN; b * c]).unwrap();
            let mut ws = Workspace::with_padding(&dev, (b, d, c), pad).unwrap();
            fused_with(&dev, &dx, &dw, &mut probs, &mut ws, (b, d, c), tile).unwrap();
            let probs = dev.download(&probs).unwrap();
            for i in 0..b {
                let z: Vec<(f64, f64)> = (0..c)
                    .map(|j| common::dot_reference(&x, &w, None, (c, d), (i, j)))
                    .collect();
                let m = z.iter().map(|v| v.0).fold(f64::NEG_INFINITY, f64::max);
                let total: f64 = z.iter().map(|v| (v.0 - m).exp()).sum();
                // Each logit within its f32 sum's error; the softmax moves by at most twice the
                // largest of them, relatively, plus the f32 exponentials and divisions.
                let zerr = z.iter().map(|v| v.1).fold(0.0, f64::max);
                for (j, &(zj, _)) in z.iter().enumerate() {
                    let want = (zj - m).exp() / total;
                    let got = f64::from(probs[i * c + j]);
                    let tol = want * (2.5 * zerr + 1e-5) + 1e-12;
                    assert!(
                        (got - want).abs() <= tol,
                        "{b}x{d}x{c} {tile:?} pad {pad} ({i}, {j}): {got} vs {want}"
                    );
                }
            }
        }
    }
}

/// A softmax-regression workspace made for fewer classes is refused, not read with rows that
/// overlap (its padded rows are too short for the wider `w`).
#[test]
fn softmax_regression_refuses_a_workspace_of_another_shape() {
    use common::softmax_regression::{fused, Workspace};
    let dev = Device::interpreter();
    let (b, d, c) = (4usize, 8usize, 40usize);
    let x = dev.upload(&vec![f16::ONE; b * d]).unwrap();
    let w = dev.upload(&vec![f16::ONE; d * c]).unwrap();
    let mut probs = dev.upload(&vec![0f32; b * c]).unwrap();
    let mut ws = Workspace::with_padding(&dev, (b, d, 24), true).unwrap();
    let err = fused(&dev, &x, &w, &mut probs, &mut ws, (b, d, c)).unwrap_err();
    assert!(err.to_string().contains("make it for this shape"), "{err}");
}

/// `dot(…, precision = tf32)` of f32 tiles on the interpreter: the operands rounded to tf32
/// ([`tile::ir::round_tf32`]), then the f32 chain, against f64 on the rounded operands; both the
/// tensor-core instances (32-row blocks, `K` steps of 8 and 16) and the 8-row FMA instance.
#[test]
fn tf32_dot_matches_reference() {
    use common::matmul_tf32;
    use tile::ir::round_tf32;
    let dev = Device::interpreter();
    for (m, n, k) in [(1usize, 1usize, 1usize), (17, 33, 9), (40, 8, 100)] {
        let mut r = Rng((m * 613 + n * 37 + k) as u64);
        let a: Vec<f32> = (0..m * k).map(|_| r.f32()).collect();
        let b: Vec<f32> = (0..k * n).map(|_| r.f32()).collect();
        let c0: Vec<f32> = (0..m * n).map(|_| r.f32()).collect();
        let (ra, rb): (Vec<f32>, Vec<f32>) = (
            a.iter().map(|&x| round_tf32(x)).collect(),
            b.iter().map(|&x| round_tf32(x)).collect(),
        );
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        for (bm, bk) in [(8usize, 8), (32, 8), (32, 16)] {
            let mut c = c0.clone();
            let grid = Grid::xy(cdiv(m, bm), cdiv(n, 32));
            matmul_tf32::launch(&dev, grid, &a, &b, &mut c, mi, ni, ki, bm as i32, bk).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let (want, tol) = common::dot_reference(&ra, &rb, Some(&c0), (n, k), (i, j));
                    let got = f64::from(c[i * n + j]);
                    assert!(
                        (got - want).abs() <= tol,
                        "BM {bm} BK {bk} {m}x{n}x{k} ({i}, {j}): {got} vs {want}"
                    );
                }
            }
        }
    }
    // One dot outside a loop (operands through `convert_layout`).
    let mut r = Rng(99);
    let a: Vec<f32> = (0..512).map(|_| r.f32()).collect();
    let b: Vec<f32> = (0..512).map(|_| r.f32()).collect();
    let mut c = vec![f32::NAN; 1024];
    common::dot_tf32_once::launch(&dev, Grid::x(1), &a, &b, &mut c).unwrap();
    let (ra, rb): (Vec<f32>, Vec<f32>) = (
        a.iter().map(|&x| round_tf32(x)).collect(),
        b.iter().map(|&x| round_tf32(x)).collect(),
    );
    for i in 0..32 {
        for j in 0..32 {
            let (want, tol) = common::dot_reference(&ra, &rb, None, (32, 16), (i, j));
            let got = f64::from(c[i * 32 + j]);
            assert!(
                (got - want).abs() <= tol,
                "once ({i}, {j}): {got} vs {want}"
            );
        }
    }
    // 1 + 2⁻¹² is not a tf32 value (it rounds to 1): with tf32 the product is exactly 1.
    let a = vec![1.0 + 2f32.powi(-12); 1];
    let mut c = vec![0.0f32];
    matmul_tf32::launch(
        &dev,
        Grid::xy(1, 1),
        &a,
        &[1.0f32][..],
        &mut c,
        1,
        1,
        1,
        8,
        8,
    )
    .unwrap();
    assert_eq!(c[0], 1.0);
}
