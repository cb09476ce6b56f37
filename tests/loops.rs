//! `for` and `while` loops on the interpreter: rows longer than one tile (carried tiles and
//! scalars), nested loops, 2-D carried tiles, loops unrolled at build time (`static_range`),
//! `while` loops (a spin lock among them), against Rust references on awkward sizes.

use tile_tests as common;

use common::{blocked_row_sums, layernorm_looped, Rng};
use tile::prelude::*;

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut r = Rng(seed);
    (0..n).map(|_| 2.0 * r.f32()).collect()
}

#[test]
fn layernorm_of_rows_longer_than_a_tile() {
    // 256-wide tiles: rows of 1 element, one partial tile, exactly one, several plus a remainder.
    for (rows, n) in [(1, 1), (3, 17), (2, 256), (5, 257), (2, 1000), (1, 4099)] {
        let x = random(rows * n, 21);
        let w = random(n, 22);
        let b = random(n, 23);
        let mut out = vec![f32::NAN; rows * n];
        layernorm_looped::launch(
            &Device::interpreter(),
            Grid::x(rows as u32),
            &x,
            &w,
            &b,
            &mut out,
            rows as i32,
            n as i32,
            1e-5,
        )
        .unwrap();
        for i in 0..rows {
            let row = &x[i * n..(i + 1) * n];
            let m = row.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
            let var = row.iter().map(|&v| (v as f64 - m).powi(2)).sum::<f64>() / n as f64;
            let r = 1.0 / (var + 1e-5).sqrt();
            for j in 0..n {
                let want = (row[j] as f64 - m) * r * w[j] as f64 + b[j] as f64;
                let got = out[i * n + j] as f64;
                assert!(
                    (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                    "{rows}x{n} [{i}][{j}]: {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn nested_loops_and_carried_2d_tiles() {
    for (rows, cols) in [(1, 1), (8, 64), (9, 65), (17, 1), (3, 300)] {
        let x = random(rows * cols, 31);
        let mut out = vec![f32::NAN; rows];
        let mut iout = vec![-1; rows];
        blocked_row_sums::launch(
            &Device::interpreter(),
            Grid::x(cdiv(rows, 8)),
            &x,
            &mut out,
            &mut iout,
            rows as i32,
            cols as i32,
        )
        .unwrap();
        // steps = Σ over column blocks j of (0 + j) + (1 + j).
        let steps: i32 = (0..cols as i32).step_by(64).map(|j| 2 * j + 1).sum();
        for i in 0..rows {
            let want: f64 = x[i * cols..(i + 1) * cols].iter().map(|&v| v as f64).sum();
            assert!(
                (out[i] as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()),
                "{rows}x{cols} row {i}"
            );
            assert_eq!(iout[i], steps, "{rows}x{cols} row {i}");
        }
    }
}

/// `while` loops: over a carried offset, with a reduction for condition inside a `for`, and a
/// spin lock taken in the condition (`tests/common/while_loops.rs`).
#[test]
fn while_loops_match_their_references() {
    common::while_loops::check_while_loops(&Device::interpreter(), &[0, 1, 127, 128, 129, 3000]);
}

#[test]
fn dot_in_a_loop_is_the_ordered_fma_chain() {
    use common::matmul_f16;
    for (m, n, k) in [(1, 1, 1), (32, 32, 16), (33, 17, 40), (5, 70, 3)] {
        let mut r = Rng((m * 100 + n * 10 + k) as u64);
        let a: Vec<f16> = (0..m * k).map(|_| f16::from_f32(r.f32())).collect();
        let b: Vec<f16> = (0..k * n).map(|_| f16::from_f32(r.f32())).collect();
        let c0: Vec<f32> = (0..m * n).map(|_| r.f32()).collect();
        let mut c = c0.clone();
        let grid = Grid::xy(cdiv(m, 32), cdiv(n, 32));
        let dev = Device::interpreter();
        matmul_f16::launch(&dev, grid, &a, &b, &mut c, m as i32, n as i32, k as i32).unwrap();
        for i in 0..m {
            for j in 0..n {
                let mut s = c0[i * n + j];
                for kk in 0..k {
                    s = a[i * k + kk].to_f32().mul_add(b[kk * n + j].to_f32(), s);
                }
                assert_eq!(c[i * n + j], s, "{m}x{n}x{k} [{i}][{j}]");
            }
        }
    }
}

#[tile_kernel]
/// Counts to `n` one step at a time: with `n = i32::MAX`, two billion iterations.
fn spin(x: Ptr<f32, 128>, n: i32) {
    let o = arange(0, 128);
    let mut acc = zeros([128]);
    for _i in (0..n).step_by(1) {
        acc = acc + 1.0;
    }
    store(x + o, acc);
}

/// The interpreter stops a launch that runs over its step budget with an `Err` naming the kernel
/// and program, instead of running for hours; within the budget the same kernel completes.
#[test]
fn interpreter_loops_are_bounded_by_a_step_budget() {
    use tile::interp::{run_with_budget, HostMut, InterpArg, InterpError};
    let f = tile::ir::parse(spin::KERNEL.ir).unwrap();
    let mut x = vec![0.0f32; 128];
    let mut args = [
        InterpArg::Mut(HostMut::F32(&mut x)),
        InterpArg::I32(i32::MAX),
    ];
    let e = run_with_budget(&f, [1, 1, 1], &mut args, 1 << 20).unwrap_err();
    assert!(
        matches!(&e, InterpError::StepBudget { kernel, budget, program }
            if kernel == "spin" && *budget == 1 << 20 && *program == [0, 0, 0]),
        "{e}"
    );
    assert!(e.to_string().contains("TILE_INTERP_STEPS"), "{e}");
    let mut args = [InterpArg::Mut(HostMut::F32(&mut x)), InterpArg::I32(100)];
    run_with_budget(&f, [1, 1, 1], &mut args, 1 << 20).unwrap();
    assert!(x.iter().all(|&v| v == 100.0));
}

/// `static_range`: the columns of a 4 × 8 tile picked one at a time by a compile-time index
/// (`n == k` folds), a running sum carried from copy to copy, a branch on the index decided at
/// build time, a step of 3, and a nested unrolled loop that reads the outer index.
#[tile_kernel]
fn unrolled(x: Ptr<f32, 32>, out: Ptr<f32, { 4 * 4 }>, N: Const<8>) {
    let r = arange(0, 4);
    let n = arange(0, N);
    let t = load(x + r.expand_dims(1) * N + n.expand_dims(0));
    let mut sum = zeros([4]);
    let mut firsts = zeros([4]);
    let mut every_third = zeros([4]);
    for k in static_range(0, N) {
        let col = select((n == k).expand_dims(0), t, 0.0).sum(1);
        sum = sum + col;
        if k == 0 {
            firsts = col;
        }
    }
    for k in static_range(0, N, 3) {
        every_third = every_third + select((n == k).expand_dims(0), t, 0.0).sum(1);
    }
    let mut tri = zeros([4]);
    for i in static_range(0, 3) {
        for j in static_range(0, i + 1) {
            tri = tri + select((n == i * 2 + j).expand_dims(0), t, 0.0).sum(1);
        }
    }
    store(out + r, sum);
    store(out + 4 + r, firsts);
    store(out + 8 + r, every_third);
    store(out + 12 + r, tri);
}

#[test]
fn static_range_unrolls_with_compile_time_indices() {
    let dev = Device::interpreter();
    let x = random(32, 5);
    let mut out = dev.zeros::<f32>(16).unwrap();
    unrolled::launch(&dev, Grid::x(1), &dev.upload(&x).unwrap(), &mut out).unwrap();
    let out = dev.download(&out).unwrap();
    let at = |r: usize, c: usize| x[r * 8 + c];
    for r in 0..4 {
        let sum: f32 = (0..8).map(|c| at(r, c)).sum();
        assert!((out[r] - sum).abs() < 1e-5, "sum of row {r}");
        assert_eq!(out[4 + r], at(r, 0), "first column of row {r}");
        let third = at(r, 0) + at(r, 3) + at(r, 6);
        assert!(
            (out[8 + r] - third).abs() < 1e-5,
            "every third column of row {r}"
        );
        // i = 0: column 0; i = 1: columns 2, 3; i = 2: columns 4, 5, 6.
        let tri = at(r, 0) + at(r, 2) + at(r, 3) + at(r, 4) + at(r, 5) + at(r, 6);
        assert!((out[12 + r] - tri).abs() < 1e-5, "nested, row {r}");
    }
}
