//! Kernels made of tile functions (`#[tile_fn]`), on the interpreter against Rust references:
//! the standard library (`tile::stdlib`, a second crate's functions), functions of this crate in
//! another module, tuples of results, `Const` and `Type` parameters, loops and stores inside a
//! function, nested calls, one function instantiated at two ranks, and the standard library's
//! `K` loop (`matmul_acc`) on ragged shapes; `flip` along either axis; functions passed as
//! values to `Fn` parameters, across crates and passed on.

use tile::prelude::*;
use tile::stdlib::{
    dropout, gelu_tanh, grouped_order, grouped_pid, linear_recurrence, log_softmax, matmul_acc,
    online_softmax_update, silu, softmax, softplus, swizzle2d, zeros_like,
};
use tile_tests::Rng;

/// Tile functions of this crate, called from the kernels below by path and by `use`.
mod helpers {
    use tile::prelude::*;

    /// `(a + b, a − b)`.
    #[tile_fn]
    pub fn sum_diff(a: Tile, b: Tile) -> (Tile, Tile) {
        (a + b, a - b)
    }

    /// `x` scaled by the compile-time `K`, through another function of this module.
    #[tile_fn]
    pub fn scaled(x: Tile, K: Const) -> Tile {
        twice(x) * K / 2
    }

    #[tile_fn]
    fn twice(x: Tile) -> Tile {
        x + x
    }

    /// The sum of `x`'s first `count` powers, by a loop carried inside the function.
    #[tile_fn]
    pub fn power_sum(x: Tile, count: i32) -> Tile {
        let mut acc = x * 0.0;
        let mut p = x * 0.0 + 1.0;
        for _ in 0..count {
            p = p * x;
            acc += p;
        }
        acc
    }

    /// `−x`.
    #[tile_fn]
    pub fn negate(x: Tile) -> Tile {
        -x
    }

    /// Stores `v` converted to `T` where `mask` holds: a function with no result.
    #[tile_fn]
    pub fn store_as(ptrs: Tile, v: Tile, mask: Tile, T: Type) {
        store(ptrs, v as T, mask);
    }
}

use helpers::{power_sum, store_as, sum_diff};

#[tile_kernel]
fn user_fns(
    x: Ptr<f32, n>,
    y: Ptr<f32, n>,
    out: Ptr<f32, { 4 * n }>,
    half: Ptr<f16, n>,
    n: i32,
    BLOCK: Const<128>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let a = load(x + offs, mask);
    let b = load(y + offs, mask);
    let (s, d) = sum_diff(a, b);
    let (_, d2) = helpers::sum_diff(d, s);
    store(out + offs, s, mask);
    store(out + n + offs, d2, mask);
    store(out + 2 * n + offs, helpers::scaled(a, 6), mask);
    store(out + 3 * n + offs, power_sum(b, 3), mask);
    store_as(half + offs, a * b, mask, f16);
}

#[test]
fn user_functions_inline() {
    let dev = Device::interpreter();
    let mut rng = Rng(7);
    for n in [1usize, 127, 300] {
        let x: Vec<f32> = (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let y: Vec<f32> = (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let xb = dev.upload(&x).unwrap();
        let yb = dev.upload(&y).unwrap();
        let mut out = dev.zeros::<f32>(4 * n).unwrap();
        let mut half = dev.zeros::<f16>(n).unwrap();
        user_fns::launch(
            &dev,
            Grid::x(cdiv(n, 128)),
            &xb,
            &yb,
            &mut out,
            &mut half,
            n as i32,
        )
        .unwrap();
        let out = dev.download(&out).unwrap();
        let half = dev.download(&half).unwrap();
        for i in 0..n {
            let (a, b) = (x[i], y[i]);
            let (s, d) = (a + b, a - b);
            assert_eq!(out[i], s);
            assert_eq!(out[n + i], d - s);
            assert_eq!(out[2 * n + i], (a + a) * 6.0 / 2.0);
            let p = b * b * b + b * b + b;
            assert!(
                (out[3 * n + i] - p).abs() <= 1e-6 * p.abs().max(1.0),
                "{} vs {p}",
                out[3 * n + i]
            );
            assert_eq!(half[i], f16::from_f32(a * b));
        }
    }
}

/// The same `softmax` on rows of a 2-D tile (axis 1) and on a 1-D row (axis 0); `log_softmax`
/// and `silu` beside it.
#[tile_kernel]
fn std_rows(
    x: Ptr<f32, { rows * n }>,
    sm2: Ptr<f32, { rows * n }>,
    sm1: Ptr<f32, { rows * n }>,
    lsm: Ptr<f32, { rows * n }>,
    act: Ptr<f32, { rows * n }>,
    zero: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    BR: Const<4>,
    BN: Const<64>,
) {
    let r = program_id(0) * BR + arange(0, BR);
    let c = arange(0, BN);
    let offs = r.expand_dims(1) * n + c.expand_dims(0);
    let mask = (r < rows).expand_dims(1) & (c < n).expand_dims(0);
    let v = load(x + offs, mask, f32::NEG_INFINITY);
    store(sm2 + offs, softmax(v, 1), mask);
    store(lsm + offs, log_softmax(v, 1), mask);
    store(act + offs, silu(load(x + offs, mask)), mask);
    store(zero + offs, zeros_like(v) + 1.0, mask);
    for i in 0..BR {
        let row = program_id(0) * BR + i;
        if row < rows {
            let one = load(x + row * n + c, c < n, f32::NEG_INFINITY);
            store(sm1 + row * n + c, softmax(one, 0), c < n);
        }
    }
}

fn softmax_ref(row: &[f32]) -> Vec<f64> {
    let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
    let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
    row.iter().map(|&v| (v as f64 - m).exp() / s).collect()
}

#[test]
fn stdlib_softmax_silu_zeros() {
    let dev = Device::interpreter();
    let mut rng = Rng(11);
    for (rows, n) in [(1usize, 1usize), (5, 37), (8, 64)] {
        let x: Vec<f32> = (0..rows * n).map(|_| rng.f32() * 8.0 - 4.0).collect();
        let xb = dev.upload(&x).unwrap();
        let mut outs: Vec<Buffer<f32>> = (0..5).map(|_| dev.zeros(rows * n).unwrap()).collect();
        let [sm2, sm1, lsm, act, zero] = &mut outs[..] else {
            unreachable!()
        };
        std_rows::launch(
            &dev,
            Grid::x(cdiv(rows, 4)),
            &xb,
            sm2,
            sm1,
            lsm,
            act,
            zero,
            rows as i32,
            n as i32,
        )
        .unwrap();
        let got: Vec<Vec<f32>> = outs.iter().map(|b| dev.download(b).unwrap()).collect();
        for r in 0..rows {
            let row = &x[r * n..(r + 1) * n];
            let want = softmax_ref(row);
            for c in 0..n {
                let i = r * n + c;
                assert!((got[0][i] as f64 - want[c]).abs() < 1e-6, "softmax axis 1");
                assert!((got[1][i] as f64 - want[c]).abs() < 1e-6, "softmax axis 0");
                assert!(
                    (got[2][i] as f64 - want[c].ln()).abs() < 1e-5,
                    "log_softmax"
                );
                let v = row[c] as f64;
                assert!(
                    (got[3][i] as f64 - v / (1.0 + (-v).exp())).abs() < 1e-5,
                    "silu"
                );
                assert_eq!(got[4][i], 1.0);
            }
        }
    }
}

/// `softplus` element-wise, and `linear_recurrence` along the rows of a 2-D tile with a state
/// carried in from a previous chunk (`p·h0 + h`).
#[tile_kernel]
fn std_recurrence(
    a: Ptr<f32, { rows * 64 }>,
    b: Ptr<f32, { rows * 64 }>,
    h0: Ptr<f32, rows>,
    h: Ptr<f32, { rows * 64 }>,
    sp: Ptr<f32, { rows * 64 }>,
    rows: i32,
    BR: Const<4>,
) {
    let r = program_id(0) * BR + arange(0, BR);
    let c = arange(0, 64);
    let offs = r.expand_dims(1) * 64 + c.expand_dims(0);
    let mask = (r < rows).expand_dims(1);
    let (x, y) = (load(a + offs, mask), load(b + offs, mask));
    let (p, s) = linear_recurrence(x, y, 1);
    store(
        h + offs,
        p * load(h0 + r, r < rows).expand_dims(1) + s,
        mask,
    );
    store(sp + offs, softplus(y * 30.0), mask);
}

#[test]
fn stdlib_linear_recurrence_and_softplus() {
    let dev = Device::interpreter();
    let mut rng = Rng(5);
    let rows = 7;
    let a: Vec<f32> = (0..rows * 64).map(|_| 0.5 + 0.5 * rng.f32()).collect();
    let b: Vec<f32> = (0..rows * 64).map(|_| rng.f32() * 2.0 - 1.0).collect();
    let h0: Vec<f32> = (0..rows).map(|_| rng.f32() * 4.0 - 2.0).collect();
    let mut h = dev.zeros::<f32>(rows * 64).unwrap();
    let mut sp = dev.zeros::<f32>(rows * 64).unwrap();
    std_recurrence::launch(
        &dev,
        Grid::x(cdiv(rows, 4)),
        &dev.upload(&a).unwrap(),
        &dev.upload(&b).unwrap(),
        &dev.upload(&h0).unwrap(),
        &mut h,
        &mut sp,
        rows as i32,
    )
    .unwrap();
    let (h, sp) = (dev.download(&h).unwrap(), dev.download(&sp).unwrap());
    for (r, &start) in h0.iter().enumerate() {
        let mut state = f64::from(start);
        for c in 0..64 {
            let i = r * 64 + c;
            state = f64::from(a[i]) * state + f64::from(b[i]);
            assert!(
                (f64::from(h[i]) - state).abs() < 1e-5,
                "h[{r}, {c}]: {} vs {state}",
                h[i]
            );
            let x = f64::from(b[i]) * 30.0;
            let want = if x > 20.0 { x } else { x.exp().ln_1p() };
            assert!(
                (f64::from(sp[i]) - want).abs() < 1e-5 * want.max(1.0),
                "softplus({x})"
            );
        }
    }
}

/// A row's softmax from a running maximum and sum over chunks (`online_softmax_update`), then
/// a second pass.
#[tile_kernel]
fn online_softmax(
    x: Ptr<f32, { rows * n }>,
    y: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    BLOCK: Const<32>,
) {
    let row = program_id(0);
    let c = arange(0, BLOCK);
    let mut m = -1.0e30;
    let mut l = 0.0;
    for k in 0..cdiv(n, BLOCK) {
        let cols = k * BLOCK + c;
        let s = load(x + row * n + cols, cols < n, f32::NEG_INFINITY);
        let (m_new, l_new, _alpha, _p) = online_softmax_update(m, l, s, 0);
        m = m_new;
        l = l_new;
    }
    for k in 0..cdiv(n, BLOCK) {
        let cols = k * BLOCK + c;
        let s = load(x + row * n + cols, cols < n);
        store(y + row * n + cols, (s - m).exp() / l, cols < n);
    }
}

#[test]
fn stdlib_online_softmax() {
    let dev = Device::interpreter();
    let mut rng = Rng(3);
    for (rows, n) in [(1usize, 1usize), (3, 100), (2, 64)] {
        let x: Vec<f32> = (0..rows * n).map(|_| rng.f32() * 20.0 - 10.0).collect();
        let xb = dev.upload(&x).unwrap();
        let mut yb = dev.zeros::<f32>(rows * n).unwrap();
        online_softmax::launch(
            &dev,
            Grid::x(rows as u32),
            &xb,
            &mut yb,
            rows as i32,
            n as i32,
        )
        .unwrap();
        let y = dev.download(&yb).unwrap();
        for r in 0..rows {
            let want = softmax_ref(&x[r * n..(r + 1) * n]);
            for c in 0..n {
                assert!((y[r * n + c] as f64 - want[c]).abs() < 1e-6);
            }
        }
    }
}

/// Each program writes the output tile it computes in grouped order, by `grouped_pid`, by
/// `grouped_order` over the counted grid and by `swizzle2d` of its row-major place.
#[tile_kernel]
fn grouped_kernel(out: Ptr<i32, { 6 * programs }>, programs: i32, m: i32, n: i32) {
    let pid = program_id(0);
    let (pid_m, pid_n) = grouped_pid(pid, m, n, 16, 32, 3);
    store(out + 2 * pid, pid_m);
    store(out + 2 * pid + 1, pid_n);
    let tiles_n = cdiv(n, 32);
    let (gm, gn) = grouped_order(pid, cdiv(m, 16), tiles_n, 3);
    store(out + 2 * programs + 2 * pid, gm);
    store(out + 2 * programs + 2 * pid + 1, gn);
    let (sm, sn) = swizzle2d(pid / tiles_n, pid % tiles_n, cdiv(m, 16), tiles_n, 3);
    store(out + 4 * programs + 2 * pid, sm);
    store(out + 4 * programs + 2 * pid + 1, sn);
}

#[test]
fn stdlib_grouped_order() {
    let dev = Device::interpreter();
    for (m, n) in [(16usize, 32usize), (100, 70), (160, 320), (17, 1000)] {
        let (tm, tn) = (m.div_ceil(16), n.div_ceil(32));
        let programs = tm * tn;
        let mut out = dev.zeros::<i32>(6 * programs).unwrap();
        grouped_kernel::launch(
            &dev,
            Grid::x(programs as u32),
            &mut out,
            programs as i32,
            m as i32,
            n as i32,
        )
        .unwrap();
        let out = dev.download(&out).unwrap();
        // The reference order: groups of 3 tile rows, column by column inside a group.
        let mut want = Vec::new();
        for g in (0..tm).step_by(3) {
            let rows = (tm - g).min(3);
            for j in 0..tn {
                for i in 0..rows {
                    want.extend([(g + i) as i32, j as i32]);
                }
            }
        }
        let p2 = 2 * programs;
        assert_eq!(out[..p2], want, "grouped_pid {m}×{n}");
        assert_eq!(out[p2..2 * p2], want, "grouped_order {m}×{n}");
        assert_eq!(out[2 * p2..], want, "swizzle2d {m}×{n}");
    }
}

#[tile_kernel]
fn dropout_kernel(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, p: f32, seed: i32, BLOCK: Const<256>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(y + offs, dropout(load(x + offs, mask), p, seed, offs), mask);
}

#[test]
fn stdlib_dropout_matches_philox() {
    let dev = Device::interpreter();
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let xb = dev.upload(&x).unwrap();
    let mut yb = dev.zeros::<f32>(n).unwrap();
    let (p, seed) = (0.3f32, 1234);
    dropout_kernel::launch(&dev, Grid::x(cdiv(n, 256)), &xb, &mut yb, n as i32, p, seed).unwrap();
    let y = dev.download(&yb).unwrap();
    let mut kept = 0;
    for i in 0..n {
        let keep = tile::random::rand(seed as u64, i as u64) > p;
        kept += keep as usize;
        let want = if keep { x[i] / (1.0 - p) } else { 0.0 };
        assert_eq!(y[i], want, "element {i}");
    }
    assert!((600..800).contains(&kept), "{kept} of {n} kept");
}

/// An autotuned kernel: three configs of its block size and warps, keyed on `n`.
#[tile_kernel(autotune(
    configs = [
        { BLOCK = 128, num_warps = 4 },
        { BLOCK = 256, num_warps = 4 },
        { BLOCK = 256, num_warps = 8 },
    ],
    key = [n],
))]
fn tuned_axpy(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, a: f32, BLOCK: Const) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(
        y + offs,
        a * load(x + offs, mask) + load(y + offs, mask),
        mask,
    );
}

#[test]
fn autotuned_kernel_runs_config_zero_on_the_interpreter() {
    let dev = Device::interpreter();
    assert_eq!(tuned_axpy::CONFIGS.len(), 3);
    assert_eq!(tuned_axpy::CONFIGS[1].BLOCK, 256);
    assert_eq!(tuned_axpy::CONFIGS[2].num_warps, 8);
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let xb = dev.upload(&x).unwrap();
    let mut yb = dev.upload(&vec![1.0f32; n]).unwrap();
    tuned_axpy::launch(
        &dev,
        |c| Grid::x(cdiv(n, c.BLOCK)),
        &xb,
        &mut yb,
        n as i32,
        2.0,
    )
    .unwrap();
    let y = dev.download(&yb).unwrap();
    assert!((0..n).all(|i| y[i] == 2.0 * x[i] + 1.0));
    let d = tuned_axpy::TUNER.decisions();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].config, 0);
    assert_eq!(d[0].key, [n as i64]);
    // Every config computes the same, launched directly.
    for c in 0..3 {
        let mut yb = dev.upload(&vec![1.0f32; n]).unwrap();
        let grid = Grid::x(cdiv(n, tuned_axpy::CONFIGS[c].BLOCK));
        tuned_axpy::launch_config(&dev, c, grid, &xb, &mut yb, n as i32, 2.0).unwrap();
        assert_eq!(dev.download(&yb).unwrap(), y);
    }
    let mut yb = dev.upload(&vec![1.0f32; n]).unwrap();
    let e = tuned_axpy::launch_config(&dev, 3, Grid::x(1), &xb, &mut yb, n as i32, 2.0);
    assert!(e.is_err());
}

/// `tile_fnlib`'s functions called from this crate's kernel (a second crate's tile functions).
#[tile_kernel]
fn across_crates(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = tile_fnlib::scale_shift(load(x + offs, m), 3.0, -1.0);
    store(y + offs, tile_fnlib::clamp_to(v, 4), m);
}

/// `x²`, passed by path to the library's functions that take functions.
#[tile_fn]
fn square(x: Tile) -> Tile {
    x * x
}

/// `v` through `F` and through `square`, by a function of this crate that takes a function and
/// passes it on to the library's.
#[tile_fn]
fn both(v: Tile, F: Fn) -> (Tile, Tile) {
    (
        tile_fnlib::apply_twice(v, F),
        tile_fnlib::apply_twice(v, square),
    )
}

/// Functions passed as values: this crate's `square` and `helpers::negate`, through the
/// library's `apply_twice` (`F(F(x))`) and `twice_plus_one` (which passes `F` on, and passes a
/// private helper of its own crate), directly and through this crate's `both`.
#[tile_kernel]
fn function_values(x: Ptr<f32, n>, y: Ptr<f32, { 4 * n }>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    store(y + offs, tile_fnlib::apply_twice(v, square), m);
    store(y + n + offs, tile_fnlib::twice_plus_one(v, square), m);
    let (a, b) = both(v, helpers::negate);
    store(y + 2 * n + offs, a, m);
    store(y + 3 * n + offs, b, m);
}

#[test]
fn functions_taken_as_values() {
    let dev = Device::interpreter();
    let n = 200;
    let x: Vec<f32> = (0..n).map(|i| i as f32 / 40.0 - 2.0).collect();
    let xb = dev.upload(&x).unwrap();
    let mut yb = dev.zeros::<f32>(4 * n).unwrap();
    function_values::launch(&dev, Grid::x(cdiv(n, 128)), &xb, &mut yb, n as i32).unwrap();
    let y = dev.download(&yb).unwrap();
    for i in 0..n {
        let v = x[i];
        let sq2 = (v * v) * (v * v);
        assert_eq!(y[i], sq2, "apply_twice(square) at {i}");
        assert_eq!(y[n + i], sq2 + (v + 1.0) - v - 1.0, "twice_plus_one at {i}");
        assert_eq!(y[2 * n + i], v, "apply_twice(negate) at {i}");
        assert_eq!(
            y[3 * n + i],
            sq2,
            "apply_twice(square) inside `both` at {i}"
        );
    }
}

#[test]
fn functions_of_another_crate() {
    let dev = Device::interpreter();
    let n = 300;
    let x: Vec<f32> = (0..n).map(|i| i as f32 / 50.0 - 1.0).collect();
    let xb = dev.upload(&x).unwrap();
    let mut yb = dev.zeros::<f32>(n).unwrap();
    across_crates::launch(&dev, Grid::x(cdiv(n, 128)), &xb, &mut yb, n as i32).unwrap();
    let y = dev.download(&yb).unwrap();
    for i in 0..n {
        assert_eq!(y[i], (x[i] * 3.0 - 1.0).clamp(0.0, 4.0));
    }
    // The library's own kernels, which share its functions.
    for (i, spec) in tile_fnlib::all().iter().enumerate() {
        assert_eq!(spec.rust_name, format!("k{i}"));
    }
    let mut yb = dev.zeros::<f32>(n).unwrap();
    tile_fnlib::k1::launch(&dev, Grid::x(cdiv(n, 512)), &xb, &mut yb, n as i32).unwrap();
    let y = dev.download(&yb).unwrap();
    for i in 0..n {
        let v = (x[i] * 2.0).clamp(0.0, 1.0).clamp(0.0, 2.0);
        assert_eq!(y[i], v * 2.0 + 1.0);
    }
}

/// `c = 1 + a[rows, lo..hi] · b[lo..hi, cols]` in f32 and `a[rows, lo..hi] · b[lo..hi, cols]`
/// on tf32 (`matmul_acc` with `TF32` 0 and 1), `a` and `b` with padded rows.
#[tile_kernel]
#[allow(clippy::too_many_arguments)]
fn k_loop(
    a: Ptr<f32, { m * lda }>,
    b: Ptr<f32, { k * ldb }>,
    c: Ptr<f32, { 2 * m * n }>,
    m: i32,
    n: i32,
    k: i32,
    lda: i32,
    ldb: i32,
    lo: i32,
    hi: i32,
    BM: Const<16>,
    BN: Const<16>,
    BK: Const<16>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let row_ok = (rows < m).expand_dims(1);
    let col_ok = (cols < n).expand_dims(0);
    let ones = zeros([BM, BN]) + 1.0;
    let exact = matmul_acc(
        ones, a, lda, b, ldb, rows, cols, row_ok, col_ok, lo, hi, BK, 0,
    );
    let zero = zeros([BM, BN]);
    let tf32 = matmul_acc(
        zero, a, lda, b, ldb, rows, cols, row_ok, col_ok, lo, hi, BK, 1,
    );
    let offs = rows.expand_dims(1) * n + cols.expand_dims(0);
    store(c + offs, exact, row_ok & col_ok);
    store(c + m * n + offs, tf32, row_ok & col_ok);
}

#[test]
fn stdlib_matmul_acc() {
    let dev = Device::interpreter();
    let mut rng = Rng(5);
    // (m, n, k, lo, hi): whole tiles, ragged rows, columns and `k`, a slice of `k` starting
    // and ending inside a step, an empty slice.
    for (m, n, k, lo, hi) in [
        (16usize, 16usize, 32usize, 0usize, 32usize),
        (21, 37, 45, 0, 45),
        (5, 3, 70, 13, 61),
        (18, 17, 20, 20, 20),
    ] {
        let (lda, ldb) = (k + 3, n + 5);
        let a: Vec<f32> = (0..m * lda).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let b: Vec<f32> = (0..k * ldb).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let (ab, bb) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let mut cb = dev.zeros::<f32>(2 * m * n).unwrap();
        let g = Grid::xy(cdiv(m, 16), cdiv(n, 16));
        let s = |v: usize| v as i32;
        k_loop::launch(
            &dev,
            g,
            &ab,
            &bb,
            &mut cb,
            s(m),
            s(n),
            s(k),
            s(lda),
            s(ldb),
            s(lo),
            s(hi),
        )
        .unwrap();
        let c = dev.download(&cb).unwrap();
        for i in 0..m {
            for j in 0..n {
                let terms = (lo..hi).map(|p| a[i * lda + p] as f64 * b[p * ldb + j] as f64);
                let want: f64 = terms.clone().sum();
                let scale: f64 = terms.map(f64::abs).sum::<f64>() + 1.0;
                let exact = c[i * n + j] as f64;
                let tf32 = c[m * n + i * n + j] as f64;
                let what = format!("{m}×{n}×{k} [{lo}, {hi}) at ({i}, {j})");
                assert!((exact - 1.0 - want).abs() <= 1e-5 * scale, "f32 {what}");
                assert!((tf32 - want).abs() <= 2e-3 * scale, "tf32 {what}");
            }
        }
    }
}

#[tile_kernel]
fn gelu_tanh_kernel(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(y + offs, gelu_tanh(load(x + offs, mask)), mask);
}

#[test]
fn stdlib_gelu_tanh() {
    let dev = Device::interpreter();
    let n = 300;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.05 - 7.5).collect();
    let xb = dev.upload(&x).unwrap();
    let mut yb = dev.zeros::<f32>(n).unwrap();
    gelu_tanh_kernel::launch(&dev, Grid::x(cdiv(n, 128)), &xb, &mut yb, n as i32).unwrap();
    let y = dev.download(&yb).unwrap();
    let c = (2.0 / std::f64::consts::PI).sqrt();
    for (&v, &got) in x.iter().zip(&y) {
        let v = v as f64;
        let want = 0.5 * v * (1.0 + (c * (v + 0.044715 * v * v * v)).tanh());
        assert!(
            (got as f64 - want).abs() <= 1e-5 * want.abs().max(1.0),
            "{v}: {got} vs {want}"
        );
    }
}

/// The heuristic picks config 2 of `picked` without timing.
fn pick_last(_key: &[i64]) -> usize {
    2
}

/// Only configs 1 and 2 of `pruned` are candidates.
fn drop_first(_key: &[i64]) -> Vec<usize> {
    vec![1, 2]
}

#[tile_kernel(autotune(
    configs = [{ BLOCK = 64 }, { BLOCK = 128 }, { BLOCK = 256 }],
    key = [n],
    heuristic = pick_last,
))]
fn picked(x: Ptr<f32, n>, n: i32, BLOCK: Const) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, offs < n) + 1.0, offs < n);
}

#[tile_kernel(autotune(
    configs = [{ BLOCK = 64 }, { BLOCK = 128 }, { BLOCK = 256 }],
    key = [n],
    prune = drop_first,
))]
fn pruned(x: Ptr<f32, n>, n: i32, BLOCK: Const) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, offs < n) + 1.0, offs < n);
}

#[test]
fn autotune_heuristic_and_prune_decide_on_the_interpreter() {
    let dev = Device::interpreter();
    let n = 500;
    let mut xb = dev.upload(&vec![0.0f32; n]).unwrap();
    picked::launch(&dev, |c| Grid::x(cdiv(n, c.BLOCK)), &mut xb, n as i32).unwrap();
    pruned::launch(&dev, |c| Grid::x(cdiv(n, c.BLOCK)), &mut xb, n as i32).unwrap();
    assert!(dev.download(&xb).unwrap().iter().all(|&v| v == 2.0));
    assert_eq!(picked::TUNER.decisions()[0].config, 2);
    assert_eq!(pruned::TUNER.decisions()[0].config, 1);
}

/// Autotuned with a constant and an element type chosen at launch: each variant is its own
/// decision.
#[tile_kernel(autotune(configs = [{ BLOCK = 64 }, { BLOCK = 128 }], key = [n]))]
fn tuned_variants(
    x: Ptr<T, n>,
    n: i32,
    SCALE: Const<{ [2, 3] }>,
    BLOCK: Const,
    T: Type<{ [i32, i64] }>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, offs < n) * SCALE, offs < n);
}

#[test]
fn autotune_keys_hold_the_variant_chosen_at_launch() {
    let dev = Device::interpreter();
    let n = 300;
    let grid = |c: &tuned_variants::Config| Grid::x(cdiv(n, c.BLOCK));
    let mut a = dev.upload(&vec![1i32; n]).unwrap();
    let mut b = dev.upload(&vec![1i64; n]).unwrap();
    tuned_variants::launch(&dev, grid, &mut a, n as i32, 2).unwrap();
    tuned_variants::launch(&dev, grid, &mut a, n as i32, 3).unwrap();
    tuned_variants::launch(&dev, grid, &mut b, n as i32, 2).unwrap();
    tuned_variants::launch(&dev, grid, &mut a, n as i32, 2).unwrap();
    assert!(dev.download(&a).unwrap().iter().all(|&v| v == 12));
    assert!(dev.download(&b).unwrap().iter().all(|&v| v == 2));
    let keys: Vec<Vec<i64>> = tuned_variants::TUNER
        .decisions()
        .into_iter()
        .map(|d| d.key)
        .collect();
    assert_eq!(keys.len(), 3, "three variants, three decisions: {keys:?}");
    assert!(
        keys.iter().all(|k| k.len() == 3 && k[0] == n as i64),
        "{keys:?}"
    );
    assert_eq!(keys[0][..2], [n as i64, 2]);
    assert_eq!(keys[1][..2], [n as i64, 3]);
    assert_eq!(keys[2][..2], [n as i64, 2]);
    assert_ne!(keys[0][2], keys[2][2], "i32 and i64 are told apart");
}

/// Config 1's ring is deep: with `num_stages = 6`, seven 32 KiB stages (a `128 × 64` and a
/// `64 × 128` f16 tile each) on sm_90a, 224 KiB of its 227, and six on sm_80, 192 KiB of its 163.
/// It is left out on sm_80 (a build warning says so: hence the `allow`) and kept on sm_90a;
/// config 0 builds everywhere.
#[allow(deprecated)]
mod left_out {
    use tile::prelude::*;

    #[tile_kernel(
        num_warps = 8,
        autotune(
            configs = [{ BK = 32, num_stages = 2 }, { BK = 64, num_stages = 6 }],
            key = [k],
        )
    )]
    pub fn deep_ring(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, k: i32, BK: Const) {
        let rm = arange(0, 128);
        let rn = arange(0, 128);
        let mut acc = zeros([128, 128]);
        for k0 in (0..k).step_by(BK) {
            let rk = k0 + arange(0, BK);
            let x = load(
                a + rm.expand_dims(1) * k + rk.expand_dims(0),
                rk.expand_dims(0) < k,
                0.0,
            );
            let y = load(
                b + rk.expand_dims(1) * 128 + rn.expand_dims(0),
                rk.expand_dims(1) < k,
                0.0,
            );
            acc = dot(x, y, acc);
        }
        store(c + rm.expand_dims(1) * 128 + rn.expand_dims(0), acc);
    }
}

#[test]
fn an_autotuning_config_that_does_not_fit_a_target_is_left_out_there() {
    use tile::Target;
    let k = &left_out::deep_ring::KERNELS;
    let targets = |i: usize| -> Vec<Vec<Target>> {
        k[i].variants
            .iter()
            .map(|v| v.targets.iter().map(|t| t.target).collect())
            .collect()
    };
    for v in targets(0) {
        assert_eq!(v, Target::ALL, "config 0 builds on every target");
    }
    for v in targets(1) {
        assert_eq!(v, [Target::Sm90a], "config 1 only where its ring fits");
    }
    // The interpreter runs either config (it has no targets), and both compute the same.
    let dev = Device::interpreter();
    let (m, kk) = (128usize, 96usize);
    let a: Vec<f16> = (0..m * kk)
        .map(|i| f16::from_f32((i % 7) as f32 - 3.0))
        .collect();
    let b: Vec<f16> = (0..kk * 128)
        .map(|i| f16::from_f32((i % 5) as f32 - 2.0))
        .collect();
    let (ab, bb) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
    let mut outs = Vec::new();
    for config in 0..2 {
        let mut cb = dev.zeros::<f32>(m * 128).unwrap();
        left_out::deep_ring::launch_config(&dev, config, Grid::x(1), &ab, &bb, &mut cb, kk as i32)
            .unwrap();
        outs.push(dev.download(&cb).unwrap());
    }
    assert_eq!(outs[0], outs[1]);
    let want: f32 = (0..kk)
        .map(|j| f32::from(a[5 * kk + j]) * f32::from(b[j * 128 + 9]))
        .sum();
    assert_eq!(outs[0][5 * 128 + 9], want);
}

/// `x` (row-major `rows × cols`) reversed along `axis`.
fn flip_ref(x: &[f32], rows: usize, cols: usize, axis: usize) -> Vec<f32> {
    (0..rows * cols)
        .map(|k| {
            let (i, j) = (k / cols, k % cols);
            if axis == 0 {
                x[(rows - 1 - i) * cols + j]
            } else {
                x[i * cols + cols - 1 - j]
            }
        })
        .collect()
}

#[test]
fn stdlib_flip() {
    use tile_tests::flips;
    let dev = Device::interpreter();
    let mut rng = Rng(17);
    let x: Vec<f32> = (0..2433).map(|_| rng.f32()).collect();
    let xb = dev.upload(&x).unwrap();
    let mut out = dev.upload(&vec![f32::NAN; 2433]).unwrap();
    flips::launch(&dev, Grid::x(1), &xb, &mut out).unwrap();
    let got = dev.download(&out).unwrap();
    assert_eq!(
        got[..1024],
        flip_ref(&x[..1024], 16, 64, 1)[..],
        "16 × 64, axis 1"
    );
    assert_eq!(
        got[1024..2048],
        flip_ref(&x[..1024], 16, 64, 0)[..],
        "16 × 64, axis 0"
    );
    assert_eq!(
        got[2048..2176],
        flip_ref(&x[2048..2176], 1, 128, 1)[..],
        "128"
    );
    assert_eq!(got[2176], x[2176], "1");
    assert_eq!(
        got[2177..],
        flip_ref(&x[2177..], 64, 4, 1)[..],
        "64 × 4, axis 1"
    );
    assert_eq!(
        flip_ref(&[1.0, 2.0, 3.0, 4.0], 2, 2, 0),
        [3.0, 4.0, 1.0, 2.0]
    );
}
