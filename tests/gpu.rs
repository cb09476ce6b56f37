//! GPU tests: the same kernels on the CUDA device and on the interpreter must agree exactly, and
//! every launch error is an `Err`. Without a CUDA device each test prints that it was skipped.

use tile_tests as common;

use common::fused_add_mul::add_mul;
use common::{accumulate_in_place, clamp, i64_axpy, int_ops, small_tile, Rng};
use tile::prelude::*;

fn cuda() -> Option<Device> {
    match Device::cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("skipped (GPU test): {e}");
            None
        }
    }
}

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

#[test]
fn gpu_matches_interpreter_on_awkward_sizes() {
    let Some(gpu) = cuda() else { return };
    let cpu = Device::interpreter();
    for n in [1usize, 17, 1023, 1024, 1025, 4096 + 3, 1_000_003] {
        let (x, y, z) = (data(n, 1), data(n, 2), data(n, 3));
        let mut outs = Vec::new();
        for dev in [&gpu, &cpu] {
            let (bx, by, bz) = (
                dev.upload(&x).unwrap(),
                dev.upload(&y).unwrap(),
                dev.upload(&z).unwrap(),
            );
            let mut out = dev.upload(&vec![f32::NAN; n]).unwrap();
            add_mul::launch(
                dev,
                Grid::x(cdiv(n, 1024)),
                &bx,
                &by,
                &bz,
                &mut out,
                n as i32,
            )
            .unwrap();
            outs.push(dev.download(&out).unwrap());
        }
        assert!(
            outs[0].iter().all(|v| v.is_finite()),
            "n = {n}: unwritten elements"
        );
        assert_eq!(outs[0], outs[1], "n = {n}: GPU and interpreter differ");
    }
}

#[test]
fn gpu_unaligned_views_use_the_generic_variant() {
    let Some(gpu) = cuda() else { return };
    let n = 10_001usize;
    let x = gpu.stream().unwrap().clone_htod(&data(n + 1, 4)).unwrap();
    let y = gpu.stream().unwrap().clone_htod(&data(n + 1, 5)).unwrap();
    let z = gpu.stream().unwrap().clone_htod(&data(n + 1, 6)).unwrap();
    let mut out = gpu.stream().unwrap().alloc_zeros::<f32>(n + 1).unwrap();
    // Views starting one element in: 4-byte aligned only.
    let (xv, yv, zv) = (x.slice(1..), y.slice(1..), z.slice(1..));
    let mut ov = out.slice_mut(1..);
    add_mul::launch(
        &gpu,
        Grid::x(cdiv(n, 1024)),
        &xv,
        &yv,
        &zv,
        &mut ov,
        n as i32,
    )
    .unwrap();
    let got = gpu.stream().unwrap().clone_dtoh(&out).unwrap();
    let (hx, hy, hz) = (data(n + 1, 4), data(n + 1, 5), data(n + 1, 6));
    for i in 1..=n {
        assert_eq!(got[i], (hx[i] + hy[i]) * hz[i], "element {i}");
    }
    assert_eq!(got[0], 0.0, "wrote before the view");
}

#[test]
fn gpu_launch_errors_are_errs() {
    let Some(gpu) = cuda() else { return };
    let x = gpu.upload(&data(100, 1)).unwrap();
    let mut out = gpu.zeros::<f32>(100).unwrap();
    // Too short for n = 101.
    let e = add_mul::launch(&gpu, Grid::x(1), &x, &x, &x, &mut out, 101).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Length {
                param: "x",
                required: 101,
                actual: 100,
                ..
            }
        ),
        "{e}"
    );
    // An empty grid launches nothing; oversized grids are errors, beside an empty axis too.
    let mut kept = gpu.upload(&[7.0f32; 100]).unwrap();
    add_mul::launch(&gpu, Grid::x(0), &x, &x, &x, &mut kept, 100).unwrap();
    add_mul::launch(&gpu, Grid::xy(1, 0), &x, &x, &x, &mut kept, 100).unwrap();
    assert_eq!(gpu.download(&kept).unwrap(), vec![7.0; 100]);
    let e = add_mul::launch(&gpu, Grid::xy(1, 70_000), &x, &x, &x, &mut out, 100).unwrap_err();
    assert!(matches!(e, Error::Grid { .. }), "{e}");
    let e = add_mul::launch(&gpu, Grid::xy(0, 70_000), &x, &x, &x, &mut out, 100).unwrap_err();
    assert!(matches!(e, Error::Grid { .. }), "{e}");
    // An empty grid still checks its arguments: lengths and devices.
    let e = add_mul::launch(&gpu, Grid::x(0), &x, &x, &x, &mut out, 101).unwrap_err();
    assert!(matches!(e, Error::Length { param: "x", .. }), "{e}");
    let e = add_mul::launch(&gpu, Grid::x(0), &data(100, 2), &x, &x, &mut out, 100).unwrap_err();
    assert!(matches!(e, Error::WrongDevice { param: "x", .. }), "{e}");
    // Host memory on a CUDA launch.
    let host = data(100, 2);
    let e = add_mul::launch(&gpu, Grid::x(1), &host, &x, &x, &mut out, 100).unwrap_err();
    assert!(matches!(e, Error::WrongDevice { param: "x", .. }), "{e}");
    // Device memory on the interpreter.
    let e = add_mul::launch(
        &Device::interpreter(),
        Grid::x(1),
        &x,
        &x,
        &x,
        &mut out,
        100,
    )
    .unwrap_err();
    assert!(matches!(e, Error::WrongDevice { .. }), "{e}");
}

/// Runs `launch` on the GPU and on the interpreter with the same inputs and returns both outputs.
fn both<T: tile::Element + PartialEq + std::fmt::Debug>(
    gpu: &Device,
    n: usize,
    inputs: &[Vec<T>],
    launch: impl Fn(&Device, &[Buffer<T>], &mut Buffer<T>) -> Result<(), Error>,
    poison: T,
) -> (Vec<T>, Vec<T>) {
    let mut outs = Vec::new();
    for dev in [gpu, &Device::interpreter()] {
        let bufs: Vec<Buffer<T>> = inputs.iter().map(|v| dev.upload(v).unwrap()).collect();
        let mut out = dev.upload(&vec![poison; n]).unwrap();
        launch(dev, &bufs, &mut out).unwrap();
        outs.push(dev.download(&out).unwrap());
    }
    let cpu = outs.pop().unwrap();
    (outs.pop().unwrap(), cpu)
}

/// `rand`, `randint` and `umulhi` on the GPU give Triton's Philox stream bit for bit (the
/// reference `tile::random`, which the interpreter matches too).
#[test]
fn gpu_philox_matches_the_reference() {
    let Some(gpu) = cuda() else { return };
    common::check_philox(&gpu);
}

/// `rand > p` on the GPU (an integer compare of the Philox word with a threshold computed once
/// from `p`) is `tile::random`'s float compare, for probabilities at every edge.
#[test]
fn gpu_rand_above_p_matches_the_reference() {
    let Some(gpu) = cuda() else { return };
    common::check_rand_above(&gpu);
}

/// `randn` on the GPU against the interpreter: the same Philox bits and Box–Muller steps, `log`
/// and `cos` within their documented errors (|Δ| ≤ 2e-6 · max(1, |z|)). With `TILE_RANDN_OUT`
/// set, also writes seed 42's first 2^20 values there (raw little-endian `f32`) for the device
/// script to compare with Triton's `tl.randn`.
#[test]
fn gpu_randn_matches_the_interpreter() {
    let Some(gpu) = cuda() else { return };
    let cpu = Device::interpreter();
    let mut worst = 0f32;
    for (seed, base) in [(0i64, 0i64), (42, (1 << 32) - 100), (-1, -5000)] {
        let n = 100_000;
        let (g, c) = (
            common::randn_on(&gpu, n, seed, base),
            common::randn_on(&cpu, n, seed, base),
        );
        for i in 0..n {
            let d = (g[i] - c[i]).abs();
            worst = worst.max(d / c[i].abs().max(1.0));
            assert!(
                d <= 2e-6 * c[i].abs().max(1.0),
                "seed {seed}, offset {base} + {i}: GPU {} interpreter {}",
                g[i],
                c[i]
            );
        }
    }
    println!("randn: largest GPU-interpreter difference {worst:.2e} (relative to max(1, |z|))");
    if let Some(path) = std::env::var_os("TILE_RANDN_OUT") {
        let z = common::randn_on(&gpu, 1 << 20, 42, 0);
        let bytes: Vec<u8> = z.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(path, bytes).unwrap();
    }
}

#[test]
fn gpu_sin_and_cos() {
    let Some(gpu) = cuda() else { return };
    common::check_trig(&gpu);
}

#[test]
fn gpu_gelu() {
    let Some(gpu) = cuda() else { return };
    common::check_gelu(&gpu);
}

#[test]
fn gpu_atomics_match_the_references() {
    let Some(gpu) = cuda() else { return };
    for (n, bins) in [(1, 1), (5000, 16), (1 << 22, 1024), (1 << 22, 4)] {
        common::check_histogram(&gpu, n, bins);
    }
    for n in [1, 17, 100_003] {
        common::check_atomic_each(&gpu, n);
        common::check_atomic_each_16(&gpu, n);
    }
    for g in [1, 3, 40, 1000] {
        common::check_atomic_tickets(&gpu, g);
    }
}

/// The integer types, shifts and bitcasts on the GPU against Rust, bit for bit (the checks the
/// interpreter passes in `tests/int_types.rs`).
#[test]
fn gpu_integer_types_match_rust() {
    let Some(gpu) = cuda() else { return };
    common::check_int_types(&gpu);
    common::check_unsigned_reduce(&gpu);
    common::check_unsigned_scalars(&gpu);
}

/// The 8-bit floats and `f64` on the GPU against Rust (the checks the interpreter passes in
/// `tests/float_types.rs`), at sizes up to a million elements.
#[test]
fn gpu_float_types_match_rust() {
    let Some(gpu) = cuda() else { return };
    let sizes = [1, 17, 1000, 4099, 1_000_003];
    common::floats::check_f8_conversions(&gpu, &sizes);
    common::floats::check_f64(&gpu, &sizes);
}

/// `dot` of `i8` tiles on the GPU (`mma.sync…s8` from one `m16n8k32` up, the exact chain below)
/// against Rust, exactly (the check the interpreter passes in `tests/float_types.rs`).
#[test]
fn gpu_i8_dot_is_exact_in_i32() {
    let Some(gpu) = cuda() else { return };
    let shapes = [
        (64, 64, 64),
        (100, 72, 200),
        (1, 5, 7),
        (33, 130, 96),
        (256, 192, 1000),
    ];
    common::int_dot::check_dot_i8(&gpu, &shapes);
}

/// `dot` of 8-bit float tiles on the GPU (sm_90a: `wgmma`'s FP8 forms for K-major operands,
/// `mma.sync`'s otherwise; sm_80: their `f16` values) against Rust in `f64` (the check the
/// interpreter passes in `tests/float_types.rs`).
#[test]
fn gpu_f8_dot_matches_f64() {
    let Some(gpu) = cuda() else { return };
    let shapes = [
        (64, 64, 64),
        (100, 72, 200),
        (1, 5, 7),
        (33, 130, 96),
        (256, 192, 1000),
    ];
    common::f8_dot::check_dot_f8(&gpu, &shapes);
}

#[test]
fn gpu_interleave_join_and_split_match_their_definitions() {
    let Some(gpu) = cuda() else { return };
    common::check_pairs(&gpu);
    common::check_unpack_int4(&gpu);
}

#[test]
fn gpu_transposed_operands_in_loops_match_float64() {
    let Some(gpu) = cuda() else { return };
    common::check_dot_trans(&gpu);
    common::check_chained_products(&gpu, &[(130, 70), (1, 5), (300, 1000), (256, 4097)]);
}

/// `while` loops on the GPU: a carried offset, a reduction for condition inside a `for`, and a
/// spin lock that up to 3,907 programs contend for (`tests/common/while_loops.rs`).
#[test]
fn gpu_while_loops_and_a_spin_lock_match_their_references() {
    let Some(gpu) = cuda() else { return };
    common::while_loops::check_while_loops(&gpu, &[0, 1, 129, 3000, 1_000_003]);
}

#[test]
fn gpu_scans_match_the_references() {
    let Some(gpu) = cuda() else { return };
    common::check_scans(&gpu);
    common::check_scans_combined(&gpu);
}

#[test]
fn gpu_matches_interpreter_on_every_test_kernel() {
    let Some(gpu) = cuda() else { return };
    for n in [1usize, 17, 1025, 100_003] {
        let mut r = Rng(n as u64);
        let mut a: Vec<i32> = (0..n).map(|_| (r.next() % 21) as i32 - 10).collect();
        let mut b: Vec<i32> = (0..n).map(|_| (r.next() % 7) as i32 - 3).collect();
        if n > 3 {
            (a[0], a[1], a[2], b[2]) = (i32::MIN, i32::MAX, i32::MIN, -1);
        }
        let (g, c) = both(
            &gpu,
            n,
            &[a, b],
            |d, i, o| int_ops::launch(d, Grid::x(cdiv(n, 256)), &i[0], &i[1], o, n as i32),
            7,
        );
        assert_eq!(g, c, "int_ops n = {n}");

        let a64: Vec<i64> = (0..n).map(|_| r.next() as i64).collect();
        let (g, c) = both(
            &gpu,
            n,
            &[a64],
            |d, i, o| {
                i64_axpy::launch(d, Grid::x(cdiv(n, 512)), &i[0], o, n as i32, -3_000_000_007)
            },
            0,
        );
        assert_eq!(g, c, "i64_axpy n = {n}");

        let x: Vec<f32> = (0..n).map(|_| 3.0 * r.f32()).collect();
        let (g, c) = both(
            &gpu,
            n,
            std::slice::from_ref(&x),
            |d, i, o| accumulate_in_place::launch(d, Grid::x(cdiv(n, 256)), o, &i[0], n as i32, 5),
            1.0,
        );
        assert_eq!(g, c, "accumulate_in_place n = {n}");

        let mut x = x;
        if n > 2 {
            (x[1], x[2]) = (f32::NAN, f32::NEG_INFINITY);
        }
        let (g, c) = both(
            &gpu,
            n,
            &[x.clone()],
            |d, i, o| clamp::launch(d, Grid::x(cdiv(n, 2048)), &i[0], o, n as i32, -1.0, 1.0),
            f32::NAN,
        );
        assert_eq!(g, c, "clamp n = {n}");

        let rows = (n / 16).max(1);
        let x: Vec<f32> = (0..rows * 16).map(|_| r.f32()).collect();
        let (g, c) = both(
            &gpu,
            rows * 16,
            &[x],
            |d, i, o| small_tile::launch(d, Grid::xy(4, cdiv(rows, 4)), &i[0], o, rows as i32),
            f32::NAN,
        );
        assert_eq!(g, c, "small_tile rows = {rows}");
    }
}

/// Float results of a sum (order differs between back ends) agree to a relative `tol`; NaN
/// (unwritten) nowhere.
fn assert_close(g: &[f32], c: &[f32], tol: f32, what: &str) {
    assert_eq!(g.len(), c.len(), "{what}");
    for (i, (&x, &y)) in g.iter().zip(c).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}: element {i}: GPU {x} vs interpreter {y}"
        );
    }
}

/// The 2-D kernels (layouts with slices, reductions along each axis, broadcasts, a layout
/// conversion) on the GPU against the interpreter, on awkward shapes.
#[test]
fn gpu_matches_interpreter_on_2d_tiles() {
    use common::{layernorm_rows, outer_2d, sums_2d, transpose_2d};
    let Some(gpu) = cuda() else { return };
    let cpu = Device::interpreter();
    let shapes: [(usize, usize); 7] = [
        (1, 1),
        (1, 100),
        (17, 1),
        (17, 33),
        (33, 64),
        (64, 17),
        (100, 250),
    ];
    for (rows, cols) in shapes {
        let mut r = Rng((rows * 1000 + cols) as u64);
        let x: Vec<f32> = (0..rows * cols).map(|_| 2.0 * r.f32()).collect();
        let (rows_i, cols_i) = (rows as i32, cols as i32);

        // Row and column sums.
        let (nrb, ncb) = (rows.div_ceil(16), cols.div_ceil(64));
        let sums = |dev: &Device| {
            let bx = dev.upload(&x).unwrap();
            let mut rs = dev.upload(&vec![f32::NAN; rows * ncb]).unwrap();
            let mut cs = dev.upload(&vec![f32::NAN; cols * nrb]).unwrap();
            let grid = Grid::xy(nrb as u32, ncb as u32);
            let (a, b) = (ncb as i32, nrb as i32);
            sums_2d::launch(dev, grid, &bx, &mut rs, &mut cs, rows_i, cols_i, a, b).unwrap();
            (dev.download(&rs).unwrap(), dev.download(&cs).unwrap())
        };
        let (g, c) = (sums(&gpu), sums(&cpu));
        assert_close(&g.0, &c.0, 1e-5, &format!("sums_2d rows {rows}x{cols}"));
        assert_close(&g.1, &c.1, 1e-5, &format!("sums_2d cols {rows}x{cols}"));

        // LayerNorm, several rows per program (rows of at most 256).
        if cols <= 256 {
            let w: Vec<f32> = (0..cols).map(|_| r.f32()).collect();
            let b: Vec<f32> = (0..cols).map(|_| r.f32()).collect();
            let ln = |dev: &Device| {
                let (bx, bw, bb) = (
                    dev.upload(&x).unwrap(),
                    dev.upload(&w).unwrap(),
                    dev.upload(&b).unwrap(),
                );
                let mut out = dev.upload(&vec![f32::NAN; rows * cols]).unwrap();
                let mut mean = dev.upload(&vec![f32::NAN; rows]).unwrap();
                let mut rstd = dev.upload(&vec![f32::NAN; rows]).unwrap();
                layernorm_rows::launch(
                    dev,
                    Grid::x(cdiv(rows, 4)),
                    &bx,
                    &bw,
                    &bb,
                    &mut out,
                    &mut mean,
                    &mut rstd,
                    rows_i,
                    cols_i,
                    1e-5,
                )
                .unwrap();
                [out, mean, rstd].map(|o| dev.download(&o).unwrap())
            };
            let (g, c) = (ln(&gpu), ln(&cpu));
            for (k, what) in ["out", "mean", "rstd"].iter().enumerate() {
                assert_close(
                    &g[k],
                    &c[k],
                    1e-4,
                    &format!("layernorm_rows {what} {rows}x{cols}"),
                );
            }
        }

        // Transpose and axis maxima (max is exact: bit for bit).
        let (gr, gc) = (rows.div_ceil(32), cols.div_ceil(32));
        let tr = |dev: &Device| {
            let bx = dev.upload(&x).unwrap();
            let mut out = dev.upload(&vec![f32::NAN; rows * cols]).unwrap();
            let mut diag = dev.upload(&vec![f32::NAN; gr * gc * 32]).unwrap();
            let grid = Grid::xy(gr as u32, gc as u32);
            let n = (gr * gc) as i32;
            transpose_2d::launch(dev, grid, &bx, &mut out, &mut diag, rows_i, cols_i, n).unwrap();
            (dev.download(&out).unwrap(), dev.download(&diag).unwrap())
        };
        let (g, c) = (tr(&gpu), tr(&cpu));
        assert_eq!(g.0, c.0, "transpose_2d {rows}x{cols}");
        let same =
            g.1.iter()
                .zip(&c.1)
                .all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(
            same,
            "transpose_2d maxima {rows}x{cols}: {:?} vs {:?}",
            g.1, c.1
        );

        // Outer products (exact).
        if cols <= 128 {
            let a: Vec<f32> = (0..rows).map(|_| r.f32()).collect();
            let bi: Vec<i32> = (0..cols as i32).map(|j| j * 37 - 500).collect();
            let outer = |dev: &Device| {
                let (ba, bb) = (dev.upload(&a).unwrap(), dev.upload(&bi).unwrap());
                let mut out = dev.upload(&vec![f32::NAN; rows * cols]).unwrap();
                let mut iout = dev.upload(&vec![-1i32; rows * cols]).unwrap();
                let grid = Grid::x(cdiv(rows, 8));
                outer_2d::launch(dev, grid, &ba, &bb, &mut out, &mut iout, rows_i, cols_i).unwrap();
                (dev.download(&out).unwrap(), dev.download(&iout).unwrap())
            };
            let (g, c) = (outer(&gpu), outer(&cpu));
            // `a * b + 0.5` may contract to one fma on the GPU (one rounding instead of two).
            assert_close(&g.0, &c.0, 1e-6, &format!("outer_2d {rows}x{cols}"));
            assert_eq!(g.1, c.1, "outer_2d ints {rows}x{cols}");
        }
    }
}

/// Loops (carried tiles and scalars, nested loops, 2-D carried tiles) on the GPU against the
/// interpreter.
#[test]
fn gpu_matches_interpreter_on_loops() {
    use common::{blocked_row_sums, layernorm_looped};
    let Some(gpu) = cuda() else { return };
    let cpu = Device::interpreter();
    let shapes: [(usize, usize); 6] = [(1, 1), (3, 17), (2, 256), (5, 257), (2, 1000), (64, 4099)];
    for (rows, n) in shapes {
        let mut r = Rng((rows * 7 + n) as u64);
        let x: Vec<f32> = (0..rows * n).map(|_| 2.0 * r.f32()).collect();
        let w: Vec<f32> = (0..n).map(|_| r.f32()).collect();
        let b: Vec<f32> = (0..n).map(|_| r.f32()).collect();
        let ln = |dev: &Device| {
            let (bx, bw, bb) = (
                dev.upload(&x).unwrap(),
                dev.upload(&w).unwrap(),
                dev.upload(&b).unwrap(),
            );
            let mut out = dev.upload(&vec![f32::NAN; rows * n]).unwrap();
            let grid = Grid::x(rows as u32);
            let (ri, ni) = (rows as i32, n as i32);
            layernorm_looped::launch(dev, grid, &bx, &bw, &bb, &mut out, ri, ni, 1e-5).unwrap();
            dev.download(&out).unwrap()
        };
        assert_close(
            &ln(&gpu),
            &ln(&cpu),
            1e-4,
            &format!("layernorm_looped {rows}x{n}"),
        );

        let sums = |dev: &Device| {
            let bx = dev.upload(&x).unwrap();
            let mut out = dev.upload(&vec![f32::NAN; rows]).unwrap();
            let mut iout = dev.upload(&vec![-1i32; rows]).unwrap();
            let grid = Grid::x(cdiv(rows, 8));
            let (ri, ni) = (rows as i32, n as i32);
            blocked_row_sums::launch(dev, grid, &bx, &mut out, &mut iout, ri, ni).unwrap();
            (dev.download(&out).unwrap(), dev.download(&iout).unwrap())
        };
        let (g, c) = (sums(&gpu), sums(&cpu));
        assert_close(&g.0, &c.0, 1e-4, &format!("blocked_row_sums {rows}x{n}"));
        assert_eq!(g.1, c.1, "blocked_row_sums steps {rows}x{n}");
    }
}

/// `dot` of f16 operands runs on tensor cores (`mma.sync`), which sum in their own order: the GPU
/// agrees with the interpreter (the ordered f32 FMA chain) and both with an f64 reference within
/// the documented tolerance, `|x − ref| ≤ (K + 2) · 2⁻²² · (|c| + Σₖ |aₖ bₖ|)` per element (f32
/// accumulation of exact products, in any order).
#[test]
fn gpu_matches_interpreter_on_dot() {
    use common::matmul_f16;
    let Some(gpu) = cuda() else { return };
    for (m, n, k) in [
        (1usize, 1usize, 1usize),
        (32, 32, 16),
        (33, 17, 40),
        (100, 70, 129),
    ] {
        let mut r = Rng((m * 100 + n * 10 + k) as u64);
        let a: Vec<f16> = (0..m * k).map(|_| f16::from_f32(r.f32())).collect();
        let b: Vec<f16> = (0..k * n).map(|_| f16::from_f32(r.f32())).collect();
        let c0: Vec<f32> = (0..m * n).map(|_| r.f32()).collect();
        let run = |dev: &Device| {
            let (ba, bb) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
            let mut c = dev.upload(&c0).unwrap();
            let grid = Grid::xy(cdiv(m, 32), cdiv(n, 32));
            let (mi, ni, ki) = (m as i32, n as i32, k as i32);
            matmul_f16::launch(dev, grid, &ba, &bb, &mut c, mi, ni, ki).unwrap();
            dev.download(&c).unwrap()
        };
        let (g, c) = (run(&gpu), run(&Device::interpreter()));
        for i in 0..m {
            for j in 0..n {
                let (want, tol) = common::dot_reference(&a, &b, Some(&c0), (n, k), (i, j));
                for (what, x) in [("GPU", g[i * n + j]), ("interpreter", c[i * n + j])] {
                    let err = (f64::from(x) - want).abs();
                    assert!(
                        err <= tol,
                        "matmul_f16 {m}x{n}x{k} ({i}, {j}): {what} {x} vs {want} (error {err:.3e} > {tol:.3e})"
                    );
                }
            }
        }
    }
}

/// `dot(…, precision = tf32)` of f32 tiles: 32-row blocks on tensor cores (`mma.m16n8k8.tf32`,
/// the hardware's summation order) within the documented tolerance of f64 on the tf32-rounded
/// operands, as the interpreter is; 8-row blocks (the FMA chain on rounded operands) bit for bit
/// equal to the interpreter.
#[test]
fn gpu_matches_interpreter_on_tf32_dot() {
    use common::matmul_tf32;
    use tile::ir::round_tf32;
    let Some(gpu) = cuda() else { return };
    for (m, n, k) in [
        (1usize, 1usize, 1usize),
        (32, 32, 16),
        (33, 17, 40),
        (100, 70, 129),
    ] {
        let mut r = Rng((m * 101 + n * 11 + k) as u64);
        let a: Vec<f32> = (0..m * k).map(|_| r.f32()).collect();
        let b: Vec<f32> = (0..k * n).map(|_| r.f32()).collect();
        let c0: Vec<f32> = (0..m * n).map(|_| r.f32()).collect();
        let ra: Vec<f32> = a.iter().map(|&x| round_tf32(x)).collect();
        let rb: Vec<f32> = b.iter().map(|&x| round_tf32(x)).collect();
        for (bm, bk) in [(8usize, 8i32), (32, 8), (32, 16)] {
            let run = |dev: &Device| {
                let (ba, bb) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
                let mut c = dev.upload(&c0).unwrap();
                let grid = Grid::xy(cdiv(m, bm), cdiv(n, 32));
                let (mi, ni, ki) = (m as i32, n as i32, k as i32);
                matmul_tf32::launch(dev, grid, &ba, &bb, &mut c, mi, ni, ki, bm as i32, bk)
                    .unwrap();
                dev.download(&c).unwrap()
            };
            let (g, c) = (run(&gpu), run(&Device::interpreter()));
            if bm == 8 {
                assert_eq!(g, c, "matmul_tf32 BM 8 {m}x{n}x{k}: the FMA path is exact");
            }
            for i in 0..m {
                for j in 0..n {
                    let (want, tol) = common::dot_reference(&ra, &rb, Some(&c0), (n, k), (i, j));
                    for (what, x) in [("GPU", g[i * n + j]), ("interpreter", c[i * n + j])] {
                        let err = (f64::from(x) - want).abs();
                        assert!(
                            err <= tol,
                            "matmul_tf32 BM {bm} BK {bk} {m}x{n}x{k} ({i}, {j}): {what} {x} vs {want} (error {err:.3e} > {tol:.3e})"
                        );
                    }
                }
            }
        }
    }
}

/// A tf32 `dot` outside a loop (operands through `convert_layout` into the k_width-1 operand
/// layouts) on the GPU, within the tolerance of f64 on the rounded operands.
#[test]
fn gpu_tf32_dot_without_a_loop() {
    use common::dot_tf32_once;
    use tile::ir::round_tf32;
    let Some(gpu) = cuda() else { return };
    let mut r = Rng(5);
    let a: Vec<f32> = (0..512).map(|_| r.f32()).collect();
    let b: Vec<f32> = (0..512).map(|_| r.f32()).collect();
    let (ba, bb) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let mut c = gpu.upload(&vec![f32::NAN; 1024]).unwrap();
    dot_tf32_once::launch(&gpu, Grid::x(1), &ba, &bb, &mut c).unwrap();
    let c = gpu.download(&c).unwrap();
    let ra: Vec<f32> = a.iter().map(|&x| round_tf32(x)).collect();
    let rb: Vec<f32> = b.iter().map(|&x| round_tf32(x)).collect();
    for i in 0..32 {
        for j in 0..32 {
            let (want, tol) = common::dot_reference(&ra, &rb, None, (32, 16), (i, j));
            let got = f64::from(c[i * 32 + j]);
            assert!(
                (got - want).abs() <= tol,
                "dot_tf32_once ({i}, {j}): {got} vs {want}"
            );
        }
    }
}

/// A tensor-core `dot` and an FMA `dot` of the same f16 tiles, combined by `max`: both on the GPU
/// and on the interpreter within the tolerance of f64.
#[test]
fn gpu_mixed_tensor_core_and_fma_dots() {
    use common::mixed_dots;
    let Some(gpu) = cuda() else { return };
    let mut r = Rng(11);
    let a: Vec<f16> = (0..1024).map(|_| f16::from_f32(r.f32())).collect();
    let b: Vec<f16> = (0..1024).map(|_| f16::from_f32(r.f32())).collect();
    let run = |dev: &Device| {
        let (ba, bb) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let mut c = dev.upload(&vec![f32::NAN; 1024]).unwrap();
        mixed_dots::launch(dev, Grid::x(1), &ba, &bb, &mut c).unwrap();
        dev.download(&c).unwrap()
    };
    let (g, i) = (run(&gpu), run(&Device::interpreter()));
    for row in 0..32 {
        for col in 0..32 {
            let (want, tol) = common::dot_reference(&a, &b, None, (32, 32), (row, col));
            for (who, got) in [
                ("gpu", g[row * 32 + col]),
                ("interpreter", i[row * 32 + col]),
            ] {
                let got = f64::from(got);
                assert!(
                    (got - want).abs() <= tol,
                    "{who} ({row}, {col}): {got} vs {want}"
                );
            }
        }
    }
}

/// A `[1]` value reduced from a `[1, 1]` tile and broadcast over 1024 elements, on the GPU and
/// the interpreter: exact on the interpreter (one product, one sum); on the GPU `a * b + c` may
/// be one fused multiply-add (the language allows it), so either rounding passes there.
#[test]
fn gpu_unit_tile_broadcast_to_a_wide_one() {
    use common::wide_from_unit;
    let Some(gpu) = cuda() else { return };
    let mut r = Rng(3);
    let x: Vec<f32> = (0..1024).map(|_| r.f32()).collect();
    let y = [1.5f32];
    let run = |dev: &Device| {
        let (bx, by) = (dev.upload(&x).unwrap(), dev.upload(&y).unwrap());
        let mut out = dev.upload(&vec![f32::NAN; 1024]).unwrap();
        wide_from_unit::launch(dev, Grid::x(1), &bx, &by, &mut out).unwrap();
        dev.download(&out).unwrap()
    };
    let (g, i) = (run(&gpu), run(&Device::interpreter()));
    for j in 0..1024 {
        let want = x[j] * 1.5 + j as f32;
        let fused = x[j].mul_add(1.5, j as f32);
        assert!(
            g[j] == want || g[j] == fused,
            "gpu [{j}]: {} vs {want} / {fused}",
            g[j]
        );
        assert_eq!(i[j], want, "interpreter [{j}]");
    }
}

/// `argmax`/`argmin` on the GPU against the interpreter (exact).
#[test]
fn gpu_matches_interpreter_on_arg_extremes() {
    use common::arg_extremes;
    let Some(gpu) = cuda() else { return };
    for rows in [1usize, 7, 64] {
        let mut r = Rng(rows as u64 + 99);
        let mut x: Vec<f32> = (0..rows * 32).map(|_| (r.next() % 5) as f32).collect();
        x[rows * 16] = f32::NAN;
        let run = |dev: &Device| {
            let bx = dev.upload(&x).unwrap();
            let mut rm = dev.upload(&vec![-1i32; rows]).unwrap();
            let mut cm = dev.upload(&[-1i32; 32]).unwrap();
            let mut fm = dev.upload(&[-1i32]).unwrap();
            arg_extremes::launch(dev, Grid::x(1), &bx, &mut rm, &mut cm, &mut fm, rows as i32)
                .unwrap();
            [rm, cm, fm].map(|b| dev.download(&b).unwrap())
        };
        assert_eq!(run(&gpu), run(&Device::interpreter()), "rows {rows}");
    }
}

/// `roll` on the GPU (lane shuffles, slot swaps, shared memory) against the interpreter (exact).
#[test]
fn gpu_matches_interpreter_on_roll() {
    use common::rolls;
    let Some(gpu) = cuda() else { return };
    let x = data(8192, 5);
    let h: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    let run = |dev: &Device| {
        let (bx, bh) = (dev.upload(&x).unwrap(), dev.upload(&h).unwrap());
        let mut out = dev.upload(&vec![f32::NAN; 33472]).unwrap();
        let mut hout = dev.upload(&vec![bf16::ZERO; 8192]).unwrap();
        let mut iout = dev.upload(&vec![-1i32; 256]).unwrap();
        rolls::launch(dev, Grid::x(1), &bx, &bh, &mut out, &mut hout, &mut iout).unwrap();
        let o = dev.download(&out).unwrap();
        (
            o,
            dev.download(&hout).unwrap(),
            dev.download(&iout).unwrap(),
        )
    };
    let (g, i) = (run(&gpu), run(&Device::interpreter()));
    // Row sums may differ in the last bits (the GPU adds in a tree); everything else is exact.
    assert_eq!(g.0[..33280], i.0[..33280]);
    for (a, b) in g.0[33280..33344].iter().zip(&i.0[33280..33344]) {
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "{a} vs {b}");
    }
    assert_eq!(g.0[33344..], i.0[33344..]);
    assert_eq!((g.1, g.2), (i.1, i.2));
}

/// `gather` (shared memory and in-register selects) and the standard library's `flip` on the
/// GPU against the interpreter, bit for bit, indices outside the range included.
#[test]
fn gpu_matches_interpreter_on_gather_and_flip() {
    use common::{flips, gather_inputs, gathers};
    let Some(gpu) = cuda() else { return };
    let (x, h, idx) = gather_inputs(7);
    let run = |dev: &Device| {
        let (bx, bh, bi) = (
            dev.upload(&x).unwrap(),
            dev.upload(&h).unwrap(),
            dev.upload(&idx).unwrap(),
        );
        let mut out = dev.upload(&vec![f32::NAN; 5635]).unwrap();
        let mut hout = dev.upload(&vec![bf16::ZERO; 1024]).unwrap();
        gathers::launch(dev, Grid::x(1), &bx, &bh, &bi, &mut out, &mut hout).unwrap();
        let fx = dev.upload(&x[..2433]).unwrap();
        let mut fout = dev.upload(&vec![f32::NAN; 2433]).unwrap();
        flips::launch(dev, Grid::x(1), &fx, &mut fout).unwrap();
        (
            dev.download(&out).unwrap(),
            dev.download(&hout).unwrap(),
            dev.download(&fout).unwrap(),
        )
    };
    assert_eq!(run(&gpu), run(&Device::interpreter()));
}

/// `if` on scalars on the GPU against the interpreter.
#[test]
fn gpu_matches_interpreter_on_if() {
    use common::branchy;
    let Some(gpu) = cuda() else { return };
    let n = 100_003;
    let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    for flag in [1, 0] {
        let run = |dev: &Device| {
            let bx = dev.upload(&x).unwrap();
            let mut out = dev.upload(&vec![f32::NAN; n]).unwrap();
            let mut flags = dev.upload(&[flag, 0]).unwrap();
            branchy::launch(
                dev,
                Grid::x(cdiv(n, 256)),
                &bx,
                &mut out,
                &mut flags,
                n as i32,
            )
            .unwrap();
            (dev.download(&out).unwrap(), dev.download(&flags).unwrap())
        };
        let (g, c) = (run(&gpu), run(&Device::interpreter()));
        assert_eq!(g.1, c.1, "flags");
        // Sums inside a branch differ in order: compare with a tolerance (NaN where not stored).
        for (i, (a, b)) in g.0.iter().zip(&c.0).enumerate() {
            assert!(
                (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                "flag {flag} element {i}: {a} vs {b}"
            );
        }
    }
}

/// More than `i32::MAX` elements: a kernel with 64-bit offsets fills 2^31 + 100 floats (8.6 GB)
/// and reads back its last elements; a kernel with 32-bit offsets is refused that buffer.
#[test]
fn gpu_more_than_2_pow_31_elements() {
    use common::{clamp, fill_i64};
    let Some(gpu) = cuda() else { return };
    let n = (1usize << 31) + 100;
    let mut big = gpu.zeros::<f32>(n).unwrap();
    let mut tail = gpu.zeros::<f32>(64).unwrap();
    let start = n as i64 - 64;
    fill_i64::launch(
        &gpu,
        Grid::x(cdiv(n, 1024)),
        &mut big,
        &mut tail,
        n as i64,
        start,
        3.0,
    )
    .unwrap();
    // The tail copy ran in program 0, maybe before other programs filled the end: copy again
    // (one program: it refills its own first block with the same values).
    fill_i64::launch(&gpu, Grid::x(1), &mut big, &mut tail, n as i64, start, 3.0).unwrap();
    let got = gpu.download(&tail).unwrap();
    let want: Vec<f32> = (0..64).map(|i| 3.0 + ((start + i) % 7) as f32).collect();
    assert_eq!(got, want);
    let mut out = gpu.zeros::<f32>(16).unwrap();
    let e = clamp::launch(&gpu, Grid::x(1), &big, &mut out, 16, 0.0, 1.0).unwrap_err();
    assert!(e.to_string().contains("32-bit offsets"), "{e}");
}

/// `Ptr<bool>` buffers on the GPU against the interpreter.
#[test]
fn gpu_matches_interpreter_on_bool_buffers() {
    use common::bool_mask;
    let Some(gpu) = cuda() else { return };
    let n = 100_003;
    let x: Vec<f32> = (0..n).map(|i| (i % 9) as f32 - 4.0).collect();
    let keep: Vec<bool> = (0..n).map(|i| i % 3 != 0).collect();
    let run = |dev: &Device| {
        let (bx, bk) = (dev.upload(&x).unwrap(), dev.upload(&keep).unwrap());
        let mut out = dev.upload(&vec![f32::NAN; n]).unwrap();
        let mut pos = dev.upload(&vec![false; n]).unwrap();
        bool_mask::launch(
            dev,
            Grid::x(cdiv(n, 256)),
            &bx,
            &bk,
            &mut out,
            &mut pos,
            n as i32,
        )
        .unwrap();
        (dev.download(&out).unwrap(), dev.download(&pos).unwrap())
    };
    assert_eq!(run(&gpu), run(&Device::interpreter()));
}

/// A target chosen for the device is the PTX every launch takes: the gemm kernel's sm_80 PTX
/// (`mma.sync`) and its default PTX (`wgmma` on Hopper: the tensor cores' own order of sums) agree
/// within f32 rounding, and the device's own target named explicitly is the default exactly; a
/// target the device cannot run is an `Err` when it is chosen, and the form of the name is
/// checked.
#[test]
fn gpu_explicit_target() {
    use common::gemm::gemm;
    let Some(gpu) = cuda() else { return };
    let (m, n, k) = (130usize, 136usize, 72usize);
    let mut r = Rng((m * n + k) as u64);
    let a: Vec<f16> = (0..m * k).map(|_| f16::from_f32(r.f32())).collect();
    let b: Vec<f16> = (0..k * n).map(|_| f16::from_f32(r.f32())).collect();
    let run = |dev: &Device| {
        let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let mut c = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        let grid = common::gemm::grid(m, n, 128);
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        gemm::launch(dev, grid, &da, &db, &mut c, mi, ni, ki, 128).unwrap();
        dev.download(&c).unwrap()
    };
    let sm80 = gpu.clone().with_target("sm_80").unwrap();
    assert_eq!(sm80.target(), Some(tile::Target::Sm80));
    assert!(sm80.name().contains("PTX target sm_80"), "{}", sm80.name());
    let default = run(&gpu);
    assert!(default.iter().all(|v| v.is_finite()));
    let other_order = run(&sm80);
    for (i, (x, y)) in other_order.iter().zip(&default).enumerate() {
        // 72 products of values below 1 in magnitude: sums below 72, f32 rounding far below this.
        assert!(
            (x - y).abs() <= 1e-4 * (1.0 + y.abs()),
            "element {i}: sm_80 PTX {x}, default PTX {y}"
        );
    }
    let (major, minor) = gpu.compute_capability().unwrap();
    let own = format!("sm_{major}{minor}a");
    // Every target tile builds runs on Hopper: there a name it does not build is refused.
    let (other, why) = if major == 9 {
        ("sm_100a", "is not a target tile compiles for")
    } else {
        ("sm_90a", "does not run on")
    };
    let e = gpu.clone().with_target(other).unwrap_err();
    assert!(e.to_string().contains(why), "{e}");
    assert!(gpu.clone().with_target("sm80").is_err());
    if major == 9 && minor == 0 {
        assert_eq!(run(&gpu.clone().with_target(&own).unwrap()), default);
    }
}

/// A GEMM written with tensor descriptors (`gemm_tma`) computes what the same tile written with
/// pointers (`gemm_wide`) computes, bit for bit: on Hopper with aligned arguments its tiles come
/// through the tensor memory accelerator (rows, columns and `K` past the extents filled with 0 by
/// the copy engine), elsewhere through the descriptors' expansion; both run the same tensor-core
/// instructions in the same order. Aligned shapes with ragged edges in `M`, `N` and `K`, a `K`
/// below one block, exact multiples, an unaligned shape (the expansion on every target), and
/// `K = 0` (an empty array has no tensor map: the launch takes the variant that loads, and
/// both write zeros).
#[test]
fn gpu_descriptor_gemm_matches_the_pointer_gemm() {
    use common::gemm::{gemm_tma, gemm_wide};
    let Some(dev) = cuda() else { return };
    for (m, n, k) in [
        (1000usize, 1000usize, 1000usize),
        (130, 200, 72),
        (256, 512, 128),
        (300, 264, 8),
        (17, 33, 65),
        (128, 256, 0),
    ] {
        let mut r = Rng((m * 31 + n * 7 + k) as u64);
        // (At least one element each, so that `K = 0` still passes buffers.)
        let a: Vec<f16> = (0..(m * k).max(1))
            .map(|_| f16::from_f32(r.f32()))
            .collect();
        let b: Vec<f16> = (0..(k * n).max(1))
            .map(|_| f16::from_f32(r.f32()))
            .collect();
        let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let mut c_desc = dev.upload(&vec![f16::NAN; m * n]).unwrap();
        let mut c_ptr = dev.upload(&vec![f16::NAN; m * n]).unwrap();
        let grid = common::gemm::grid(m, n, 256);
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        gemm_tma::launch(&dev, grid, &da, &db, &mut c_desc, mi, ni, ki).unwrap();
        gemm_wide::launch(&dev, grid, &da, &db, &mut c_ptr, mi, ni, ki).unwrap();
        let (got, want) = (
            dev.download(&c_desc).unwrap(),
            dev.download(&c_ptr).unwrap(),
        );
        let differ = got
            .iter()
            .zip(&want)
            .position(|(x, y)| x.to_bits() != y.to_bits());
        assert!(
            differ.is_none(),
            "{m}x{n}x{k}: element {:?}: descriptors {:?}, pointers {:?}",
            differ,
            differ.map(|i| got[i]),
            differ.map(|i| want[i])
        );
    }
}

/// A GEMM written with plain pointers as the guide writes it (`pointer_gemm`), whose operand
/// loads the compiler reads as descriptor accesses: on Hopper with aligned arguments the copy
/// engine fetches them (rows, columns and `K` past the masks' bounds filled with 0), elsewhere
/// the loads run as written. Against a float64 product on aligned shapes with ragged edges, an
/// unaligned one (`k` odd: the variant that loads), a `K` below one slice and `K = 0` (an
/// empty array has no tensor map: that variant gives way, and the product is 0).
#[test]
fn gpu_pointer_gemm_through_implied_descriptors() {
    use common::pointer_gemm;
    let Some(dev) = cuda() else { return };
    for (m, n, k) in [
        (1000usize, 1000usize, 1000usize),
        (130, 200, 72),
        (256, 512, 128),
        (300, 264, 8),
        (17, 33, 65),
        (128, 256, 0),
    ] {
        let mut r = Rng((m * 131 + n * 17 + k) as u64);
        let (a, b) = f16_operands(&mut r, m, n, k);
        let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let mut dc = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        let grid = Grid::xy(m.div_ceil(128) as u32, n.div_ceil(128) as u32);
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        pointer_gemm::launch(&dev, grid, &da, &db, &mut dc, mi, ni, ki).unwrap();
        let got = dev.download(&dc).unwrap();
        assert_f16_product(&a, &b, &got, m, n, k);
    }
}

/// Random `m × k` and `k × n` f16 operands (at least one element each, for the upload).
fn f16_operands(r: &mut Rng, m: usize, n: usize, k: usize) -> (Vec<f16>, Vec<f16>) {
    let mut draw =
        |len: usize| -> Vec<f16> { (0..len.max(1)).map(|_| f16::from_f32(r.f32())).collect() };
    let a = draw(m * k);
    (a, draw(k * n))
}

/// `got` (`m × n`, f32) is `a · b` within the f32 accumulation's error of float64.
fn assert_f16_product(a: &[f16], b: &[f16], got: &[f32], m: usize, n: usize, k: usize) {
    assert_f16_product_plus(a, b, got, m, n, k, |_, _| 0.0);
}

/// `got` (`m × n`, f32) is `a · b + plus(i, j)` within the f32 accumulation's error of float64.
fn assert_f16_product_plus(
    a: &[f16],
    b: &[f16],
    got: &[f32],
    m: usize,
    n: usize,
    k: usize,
    plus: impl Fn(usize, usize) -> f64,
) {
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|l| f64::from(a[i * k + l].to_f32()) * f64::from(b[l * n + j].to_f32()))
                .sum::<f64>()
                + plus(i, j);
            let g = f64::from(got[i * n + j]);
            assert!(
                (g - want).abs() <= 1e-4 * (k as f64 + 1.0),
                "{m}x{n}x{k}: c[{i}][{j}] = {g}, want {want}"
            );
        }
    }
}

/// `paged_gemm`: operands addressed through a table loaded in the loop, read through the ring
/// (each copy ahead loads its own step's entry), against float64 on ragged shapes, short `K`
/// and `K = 0`, with the blocks in a shuffled order.
#[test]
fn gpu_paged_gemm_through_the_ring() {
    use common::paged_gemm;
    let Some(dev) = cuda() else { return };
    for (m, n, k) in [
        (200usize, 136usize, 200usize),
        (64, 64, 32),
        (130, 70, 1000),
        (17, 33, 65),
        (64, 64, 0),
    ] {
        let mut r = Rng((m * 7 + n * 3 + k) as u64);
        let (a, b) = f16_operands(&mut r, m, n, k);
        // Blocks of 32 in a shuffled order (Fisher–Yates).
        let blocks = k.div_ceil(32);
        let mut pages: Vec<i32> = (0..blocks as i32).collect();
        for i in (1..blocks).rev() {
            let j = r.next() as usize % (i + 1);
            pages.swap(i, j);
        }
        pages.push(0);
        let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let dp = dev.upload(&pages).unwrap();
        let mut dc = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        let grid = Grid::xy(m.div_ceil(64) as u32, n.div_ceil(64) as u32);
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        paged_gemm::launch(&dev, grid, &da, &db, &dp, &mut dc, mi, ni, ki).unwrap();
        let got = dev.download(&dc).unwrap();
        assert_f16_product(&a, &b, &got, m, n, k);
    }
}

/// `stepped_bias_gemm`: a tile no `dot` reads, added to the product at each step, read through
/// a ring of its own (on sm_90a beside the copy engine's operand rings), against float64 on
/// ragged row and column edges, `K = 0` and, in the unaligned variant (`n`, `k` not multiples of
/// 16, where the tile is loaded in the loop), short `K`; the row stride wider than the tiles.
#[test]
fn gpu_stepped_bias_through_its_own_ring() {
    use common::stepped_bias_gemm;
    let Some(dev) = cuda() else { return };
    for (m, n, k) in [
        (200usize, 144usize, 192usize),
        (64, 64, 32),
        (130, 80, 1024),
        (17, 34, 65),
        (64, 64, 0),
    ] {
        let mut r = Rng((m * 5 + n * 11 + k) as u64);
        let (a, b) = f16_operands(&mut r, m, n, k);
        let steps = k.div_ceil(32);
        let ld = (steps * n).next_multiple_of(16) + 16;
        let bias: Vec<f16> = (0..(m * ld).max(1))
            .map(|_| f16::from_f32(r.f32()))
            .collect();
        let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let dbias = dev.upload(&bias).unwrap();
        let mut dc = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        let grid = Grid::xy(m.div_ceil(64) as u32, n.div_ceil(64) as u32);
        let (mi, ni, ki, ldi) = (m as i32, n as i32, k as i32, ld as i32);
        stepped_bias_gemm::launch(&dev, grid, &da, &db, &dbias, &mut dc, mi, ni, ki, ldi).unwrap();
        let got = dev.download(&dc).unwrap();
        assert_f16_product_plus(&a, &b, &got, m, n, k, |i, j| {
            (0..steps)
                .map(|s| f64::from(bias[i * ld + s * n + j].to_f32()))
                .sum()
        });
    }
}

/// Every configuration of the `gemm` example's autotuned kernel (written with tensor
/// descriptors: on Hopper its 64- and 32-wide `K` tiles are copied with 128- and 64-byte
/// swizzles, its 4- and 8-warp tiles read by `wgmma`) agrees with the pointer GEMM within one
/// rounding to f16, on aligned shapes with ragged edges and on an unaligned one. Tuning runs
/// each configuration but keeps only the chosen one's output, so each is checked here.
#[test]
fn gpu_every_tuned_gemm_configuration_is_right() {
    use common::gemm::{gemm_tuned, gemm_wide};
    let Some(dev) = cuda() else { return };
    for (m, n, k) in [
        (1000usize, 1000usize, 1000usize),
        (200, 136, 40),
        (17, 33, 65),
    ] {
        let mut r = Rng((m * 13 + n * 5 + k) as u64);
        let a: Vec<f16> = (0..m * k).map(|_| f16::from_f32(r.f32())).collect();
        let b: Vec<f16> = (0..k * n).map(|_| f16::from_f32(r.f32())).collect();
        let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        let mut want = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        let grid = common::gemm::grid(m, n, 256);
        gemm_wide::launch(&dev, grid, &da, &db, &mut want, mi, ni, ki).unwrap();
        let want = dev.download(&want).unwrap();
        for (i, cfg) in gemm_tuned::CONFIGS.iter().enumerate() {
            let mut c = dev.upload(&vec![f16::NAN; m * n]).unwrap();
            let grid = Grid::x(cdiv(m, cfg.BM).saturating_mul(cdiv(n, cfg.BN)));
            gemm_tuned::launch_config(&dev, i, grid, &da, &db, &mut c, mi, ni, ki).unwrap();
            let got = dev.download(&c).unwrap();
            for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                let (g, w) = (f64::from(g.to_f32()), f64::from(*w));
                assert!(
                    (g - w).abs() <= w.abs() * 2f64.powi(-10) + 1e-4,
                    "{m}x{n}x{k} config {i} element {j}: {g} vs {w}"
                );
            }
        }
    }
}

/// An autotuned kernel that accumulates into its output: tuning must leave `y` as it was.
#[tile_kernel(autotune(
    configs = [
        { BLOCK = 256, num_warps = 2 },
        { BLOCK = 1024, num_warps = 4 },
        { BLOCK = 4096, num_warps = 8 },
    ],
    key = [n],
))]
fn tuned_accumulate(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(y + offs, load(y + offs, mask) + load(x + offs, mask), mask);
}

#[test]
fn autotuning_times_on_copies_and_caches_on_disk() {
    let Some(gpu) = cuda() else { return };
    let dir = std::env::temp_dir().join(format!("tile-autotune-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Read once per process, at the first decision: only this test tunes.
    std::env::set_var("TILE_CACHE_DIR", &dir);
    let n = 1 << 22;
    let x = data(n, 5);
    let bx = gpu.upload(&x).unwrap();
    let mut by = gpu.upload(&vec![1.0f32; n]).unwrap();
    let grid = |c: &tuned_accumulate::Config| Grid::x(cdiv(n, c.BLOCK));
    tuned_accumulate::launch(&gpu, grid, &bx, &mut by, n as i32).unwrap();
    let y = gpu.download(&by).unwrap();
    // Exactly one accumulation, whatever tuning ran.
    assert!(
        (0..n).all(|i| y[i] == 1.0 + x[i]),
        "tuning changed the output"
    );
    let d = tuned_accumulate::TUNER.decisions();
    assert_eq!(d.len(), 1);
    println!(
        "tuned: config {} ({:?}) in {:.2} ms: {:?}",
        d[0].config, d[0].source, d[0].tuning_ms, d[0].times
    );
    assert_eq!(format!("{:?}", d[0].source), "Timed");
    // Forgotten in memory, the choice comes back from the disk, untimed.
    tuned_accumulate::TUNER.clear();
    tuned_accumulate::launch(&gpu, grid, &bx, &mut by, n as i32).unwrap();
    let again = tuned_accumulate::TUNER.decisions();
    assert_eq!(format!("{:?}", again[0].source), "Disk");
    assert_eq!(again[0].config, d[0].config);
    let y = gpu.download(&by).unwrap();
    assert!((0..n).all(|i| y[i] == 1.0 + 2.0 * x[i]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Device::hold` keeps the queue waiting: work queued behind a hold of 2 ms finishes no earlier
/// than 2 ms after the event before it; inside a capture it is an `Err`, on the interpreter a
/// no-op.
#[test]
fn gpu_hold_delays_the_queue() {
    let Some(gpu) = cuda() else { return };
    let hold = std::time::Duration::from_millis(2);
    gpu.hold(hold).unwrap(); // loads the module
    gpu.synchronize().unwrap();
    let before = gpu.record_event().unwrap();
    gpu.hold(hold).unwrap();
    let after = gpu.record_event().unwrap();
    let held = before.elapsed(&after).unwrap();
    println!("a hold of {hold:?} took {held:?} of device time");
    assert!(held >= hold.mul_f64(0.95), "{held:?}");
    assert!(held < hold * 20, "{held:?}");
    let Err(e) = gpu.capture(|d| d.hold(hold)) else {
        panic!("a hold was captured");
    };
    assert!(e.to_string().contains("Device::hold"), "{e}");
    Device::interpreter().hold(hold).unwrap();
}

#[test]
fn gpu_pointer_tables_reach_their_buffers() {
    let Some(gpu) = cuda() else { return };
    let cpu = Device::interpreter();
    let rows: Vec<Vec<f32>> = (0..5).map(|r| data(50, r)).collect();
    let mut outs = Vec::new();
    for dev in [&gpu, &cpu] {
        let src: Vec<Buffer<f32>> = rows.iter().map(|r| dev.upload(r).unwrap()).collect();
        let mut dst: Vec<Buffer<f32>> = (0..5).map(|_| dev.zeros::<f32>(50).unwrap()).collect();
        let from = PointerTable::new(dev, &src.iter().collect::<Vec<_>>()).unwrap();
        let mut to = PointerTable::new_mut(dev, dst.iter_mut().collect()).unwrap();
        // SAFETY: both tables hold addresses of live f32 buffers of 50 elements on `dev`.
        unsafe { common::gather_rows::launch(dev, Grid::x(5), &from, &to, 50).unwrap() };
        let got: Vec<Vec<f32>> = (0..5)
            .map(|g| dev.download(to.buffer(g).unwrap()).unwrap())
            .collect();
        outs.push(got);
    }
    assert_eq!(outs[0], outs[1]);
    // A table made for the interpreter is refused by a CUDA launch (its addresses are host ones).
    let host = cpu.upload(&rows[0]).unwrap();
    let e = PointerTable::new(&gpu, &[&host]).unwrap_err();
    assert!(e.to_string().contains("upload it first"), "{e}");
}

#[test]
fn gpu_grouped_gemm_tutorial_matches_reference() {
    let Some(gpu) = cuda() else { return };
    // Problems of different sizes, more tiles than any configuration's programs, so that
    // programs cross from one problem to the next; the tuner times the four configurations.
    let shapes = [
        (1024, 512, 256),
        (128, 2048, 64),
        (640, 384, 1024),
        (256, 256, 32),
    ];
    tile_tutorials::grouped_gemm::run_check(&gpu, &shapes, 7).unwrap();
}

/// The attention tutorial on the GPU, every configuration (on Hopper `K` and `V` come by the
/// copy engine), causal and not, both head dimensions, several key blocks per program. Tuning
/// keeps only the chosen configuration's output, so each is checked here.
#[test]
fn gpu_fused_attention_tutorial_every_configuration() {
    use tile::f16;
    let Some(gpu) = cuda() else { return };
    let configs = tile_tutorials::fused_attention::_attn_fwd::CONFIGS.len();
    let cases = [
        ((1, 2, 512, 64), false),
        ((2, 1, 384, 64), true),
        ((1, 2, 512, 128), false),
        ((1, 1, 640, 128), true),
    ];
    for (i, (shape, causal)) in cases.into_iter().enumerate() {
        for c in 0..configs {
            tile_tutorials::fused_attention::run_check(
                &gpu,
                Some(c),
                shape,
                causal,
                900 + i as u64,
                f16::from_f32,
                2f64.powi(-10),
            )
            .unwrap_or_else(|e| panic!("{shape:?} causal {causal} config {c}: {e}"));
        }
    }
}

/// The softmax tutorial's row loop on the GPU, where `num_stages = 4` has the compiler load
/// each program's next row ahead (`prefetch-rows`): rows not a multiple of the programs (the
/// last prefetch of a program masked off), padded rows, and widths that take and that skip
/// the prefetch (up to 8192 columns it applies, at 16384 a thread would hold too many values).
#[test]
fn gpu_fused_softmax_tutorial_matches_reference() {
    let Some(gpu) = cuda() else { return };
    let cases = [
        ((7, 100), 3, 3),
        ((1000, 4096), 0, 132),
        ((37, 4096), 5, 5),
        ((19, 8192), 0, 4),
        ((5, 12288), 0, 2),
        ((3, 2049), 0, 2),
    ];
    for (k, (shape, pad, programs)) in cases.into_iter().enumerate() {
        tile_tutorials::fused_softmax::run_check(&gpu, shape, pad, programs, 200 + k as u64)
            .unwrap();
    }
}
