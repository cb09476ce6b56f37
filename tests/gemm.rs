//! The `gemm` example's kernels on the interpreter against an f64 reference, on awkward shapes
//! (`M`, `N`, `K` of 1, 17, 1000 and non-multiples of the 128 × 128 × 32 tile); the GPU runs the
//! same checks in `examples/gemm` and `tests/gpu.rs`.

mod common;

use common::gemm::gemm;
use common::Rng;
use tile::prelude::*;

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
    ] {
        let mut r = Rng((m * 7919 + n * 31 + k) as u64);
        let a: Vec<f16> = (0..m * k).map(|_| f16::from_f32(r.f32())).collect();
        let b: Vec<f16> = (0..k * n).map(|_| f16::from_f32(r.f32())).collect();
        let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let mut c = dev.upload(&vec![f16::NAN; m * n]).unwrap();
        let mut c32 = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        let grid = Grid::xy(cdiv(m, 128), cdiv(n, 64));
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        gemm::launch(&dev, grid, &da, &db, &mut c, mi, ni, ki, 64).unwrap();
        let grid = Grid::xy(cdiv(m, 128), cdiv(n, 128));
        gemm::launch(&dev, grid, &da, &db, &mut c32, mi, ni, ki, 128).unwrap();
        let (c, c32) = (dev.download(&c).unwrap(), dev.download(&c32).unwrap());
        for i in 0..m {
            for j in 0..n {
                let (want, tol) = common::dot_reference(&a, &b, None, (n, k), (i, j));
                let got = f64::from(c32[i * n + j]);
                assert!(
                    (got - want).abs() <= tol,
                    "{m}x{n}x{k} ({i}, {j}): f32 {got} vs {want}"
                );
                let h = f64::from(c[i * n + j]);
                let tol16 = tol + want.abs() * 2f64.powi(-11) + 2f64.powi(-24);
                assert!(
                    (h - want).abs() <= tol16,
                    "{m}x{n}x{k} ({i}, {j}): f16 {h} vs {want}"
                );
            }
        }
    }
}
