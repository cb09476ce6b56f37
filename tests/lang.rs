//! The language beyond the basics, on the interpreter: math functions (as functions and methods),
//! casts, f16/bf16 storage, and reductions, against Rust references.

use tile_tests as common;

use common::{static_branches, Rng};
use tile::prelude::*;

/// The softmax of row `program_id(0)` of an `n`-wide matrix: the body of the precise and the
/// fast kernel.
#[tile_fn]
fn softmax_of_row(x: Tile, out: Tile, n: Tile, BLOCK: Const) {
    let row = program_id(0);
    let cols = arange(0, BLOCK);
    let mask = cols < n;
    let v = load(x + row * n + cols, mask, -1.0e30);
    let e = (v - v.max()).exp();
    let e = select(mask, e, 0.0);
    store(out + row * n + cols, e / e.sum(), mask);
}

#[tile_kernel]
fn softmax_row(
    x: Ptr<f32, { rows * n }>,
    out: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    BLOCK: Const<256>,
) {
    softmax_of_row(x, out, n, BLOCK);
}

/// [`softmax_row`] with Triton's floating point: `/`, `exp` and `sqrt` approximate.
#[tile_kernel(math = fast)]
fn fast_softmax_row(
    x: Ptr<f32, { rows * n }>,
    out: Ptr<f32, { rows * n }>,
    roots: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    BLOCK: Const<256>,
) {
    softmax_of_row(x, out, n, BLOCK);
    let cols = program_id(0) * n + arange(0, BLOCK);
    let mask = arange(0, BLOCK) < n;
    store(roots + cols, load(x + cols, mask).abs().sqrt(), mask);
}

#[tile_kernel]
fn half_math(
    x: Ptr<f16, n>,
    y: Ptr<bf16, n>,
    out: Ptr<f16, n>,
    iout: Ptr<i32, n>,
    n: i32,
    BLOCK: Const<128>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let a = load(x + offs, mask) as f32;
    let b = load(y + offs, mask) as f32;
    let r = fma(a.abs().sqrt(), erf(b), tanh(a) + sigmoid(b))
        + pow(a.abs() + 1.0, 0.5)
        + log2(exp2(b))
        + floor(a)
        - ceil(b)
        + rsqrt(a * a + 1.0)
        + log(a.exp());
    store(out + offs, r as f16, mask);
    store(iout + offs, (r * 3.0) as i32 + abs(offs - 5), mask);
}

#[tile_kernel]
fn int_reduce(x: Ptr<i32, n>, out: Ptr<i32, 3>, n: i32, BLOCK: Const<1024>) {
    let offs = arange(0, BLOCK);
    let mask = offs < n;
    let v = load(x + offs, mask);
    store(out, select(mask, v, 0).sum());
    store(out + 1, select(mask, v, -2147483647).max());
    store(out + 2, select(mask, v, 2147483647).min());
}

/// Eviction hints on masked and unmasked loads and a store: they reach the IR and change no
/// value.
#[tile_kernel]
fn hinted(x: Ptr<f32, n>, y: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let a = load(x + offs, mask, 0.0, evict = first);
    let b = load(y + offs, mask, evict = last);
    let first = load(x, evict = normal);
    store(out + offs, a * 2.0 + b - first, mask, evict = first);
}

/// Runs a row-softmax kernel (`launch(x, out, roots, rows, n)`) on 5 rows of `n` values for
/// several `n`, and checks each output within `tol(|x − max|, want)` of the exact softmax, and
/// each root (where the kernel writes them) within `2.5e-7` relative.
fn check_softmax_rows(
    seed: u64,
    launch: impl Fn(&[f32], &mut [f32], &mut [f32], i32, i32),
    tol: impl Fn(f64, f64) -> f64,
) {
    for n in [1i32, 17, 200, 256] {
        let rows = 5;
        let mut r = Rng(n as u64 + seed);
        let x: Vec<f32> = (0..rows * n).map(|_| 4.0 * r.f32()).collect();
        let mut out = vec![f32::NAN; (rows * n) as usize];
        let mut roots = vec![f32::NAN; (rows * n) as usize];
        launch(&x, &mut out, &mut roots, rows, n);
        for row in 0..rows as usize {
            let xs = &x[row * n as usize..(row + 1) * n as usize];
            let m = xs.iter().fold(f64::MIN, |a, &b| a.max(b as f64));
            let s: f64 = xs.iter().map(|&v| (v as f64 - m).exp()).sum();
            for (i, &v) in xs.iter().enumerate() {
                let want = (v as f64 - m).exp() / s;
                let got = out[row * n as usize + i] as f64;
                assert!(
                    (got - want).abs() <= tol((v as f64 - m).abs(), want),
                    "n = {n}, row {row}, col {i}: {got} vs {want}"
                );
                let root = roots[row * n as usize + i] as f64;
                let want = (v as f64).abs().sqrt();
                assert!(
                    root.is_nan() || (root - want).abs() <= 2.5e-7 * want,
                    "{root} vs {want}"
                );
            }
        }
    }
}

#[test]
fn softmax_rows() {
    let dev = Device::interpreter();
    check_softmax_rows(
        0,
        |x, out, _, rows, n| {
            softmax_row::launch(&dev, Grid::x(rows as u32), x, out, rows, n).unwrap();
        },
        |_, want| 1e-6 * want.max(1e-3),
    );
}

/// `math = fast` reaches the kernel's IR, and its results stay within the approximations'
/// bounds: `exp`'s argument rounding (`|x| · 2⁻²⁴` relative), `/` 2 ulp, `sqrt` 2⁻²³.
#[test]
fn fast_math_softmax_rows() {
    for spec in fast_softmax_row::KERNELS {
        assert!(spec.ir.contains("math = fast"), "{}", spec.ir);
    }
    for spec in softmax_row::KERNELS {
        assert!(!spec.ir.contains("math = fast"), "{}", spec.ir);
    }
    let dev = Device::interpreter();
    check_softmax_rows(
        100,
        |x, out, roots, rows, n| {
            let grid = Grid::x(rows as u32);
            fast_softmax_row::launch(&dev, grid, x, out, roots, rows, n).unwrap();
            assert!(roots.iter().all(|r| !r.is_nan()));
        },
        |arg, want| (1e-6 + arg * 6e-8) * want.max(1e-3),
    );
}

#[test]
fn half_types_and_math() {
    let n = 1000usize;
    let mut r = Rng(3);
    let x: Vec<f16> = (0..n).map(|_| f16::from_f32(2.0 * r.f32())).collect();
    let y: Vec<bf16> = (0..n).map(|_| bf16::from_f32(2.0 * r.f32())).collect();
    let mut out = vec![f16::NAN; n];
    let mut iout = vec![0i32; n];
    half_math::launch(
        &Device::interpreter(),
        Grid::x(cdiv(n, 128)),
        &x,
        &y,
        &mut out,
        &mut iout,
        n as i32,
    )
    .unwrap();
    for i in 0..n {
        let (a, b) = (x[i].to_f32() as f64, y[i].to_f32() as f64);
        let sig = 1.0 / (1.0 + (-b).exp());
        let want = a.abs().sqrt() * libm::erf(b)
            + (a.tanh() + sig)
            + (a.abs() + 1.0).sqrt()
            + b
            + a.floor()
            - b.ceil()
            + 1.0 / (a * a + 1.0).sqrt()
            + a;
        let got = out[i].to_f32() as f64;
        assert!(
            (got - want).abs() <= 2e-3 * want.abs().max(1.0),
            "i = {i}: {got} vs {want}"
        );
        let r32 = out_f32(a, b);
        assert_eq!(
            iout[i],
            (r32 * 3.0) as i32 + (i as i32 - 5).abs(),
            "i = {i}"
        );
    }
}

/// The kernel's f32 value before rounding to f16, recomputed with the interpreter's definitions.
fn out_f32(a: f64, b: f64) -> f32 {
    let (a, b) = (a as f32, b as f32);
    a.abs()
        .sqrt()
        .mul_add(libm::erff(b), a.tanh() + 1.0 / (1.0 + (-b).exp()))
        + (0.5 * (a.abs() + 1.0).log2()).exp2()
        + b.exp2().log2()
        + a.floor()
        - b.ceil()
        + 1.0 / (a * a + 1.0).sqrt()
        + a.exp().ln()
}

#[test]
fn sin_and_cos_on_the_interpreter() {
    common::check_trig(&Device::interpreter());
}

#[test]
fn gelu_on_the_interpreter() {
    common::check_gelu(&Device::interpreter());
}

#[test]
fn integer_reductions() {
    for n in [1usize, 5, 1000, 1024] {
        let mut r = Rng(n as u64 + 9);
        let x: Vec<i32> = (0..n).map(|_| (r.next() % 2001) as i32 - 1000).collect();
        let mut out = vec![0i32; 3];
        int_reduce::launch(&Device::interpreter(), Grid::x(1), &x, &mut out, n as i32).unwrap();
        assert_eq!(
            out,
            [
                x.iter().sum::<i32>(),
                *x.iter().max().unwrap(),
                *x.iter().min().unwrap()
            ],
            "n = {n}"
        );
    }
}

#[tile_kernel(num_warps = auto)]
fn softmax_spec(
    x: Ptr<f32, { rows * n }>,
    out: Ptr<f32, { rows * n }>,
    rows: i32,
    n: i32,
    BLOCK: Const<{ [32, 256, 4096] }>,
) {
    let cols = arange(0, BLOCK);
    let mask = cols < n;
    let offs = program_id(0) * n + cols;
    let v = load(x + offs, mask, f32::NEG_INFINITY);
    let e = (v - v.max()).exp();
    store(out + offs, e / e.sum(), mask);
}

#[test]
fn specializations_are_compiled_and_dispatched() {
    assert_eq!(softmax_spec::values::BLOCK, &[32, 256, 4096]);
    let warps: Vec<u32> = softmax_spec::KERNELS
        .iter()
        .map(|k| k.variants[0].num_warps)
        .collect();
    assert_eq!(warps, [4, 4, 8], "num_warps = auto grows with the tile");
    let names: Vec<&str> = softmax_spec::KERNELS.iter().map(|k| k.name).collect();
    assert_eq!(
        names,
        [
            "softmax_spec__BLOCK_32",
            "softmax_spec__BLOCK_256",
            "softmax_spec__BLOCK_4096"
        ]
    );
    for (n, block) in [(20i32, 32), (200, 256), (3000, 4096)] {
        let rows = 3;
        let mut r = Rng(n as u64);
        let x: Vec<f32> = (0..rows * n).map(|_| r.f32()).collect();
        let mut out = vec![f32::NAN; (rows * n) as usize];
        softmax_spec::launch(
            &Device::interpreter(),
            Grid::x(rows as u32),
            &x,
            &mut out,
            rows,
            n,
            block,
        )
        .unwrap();
        for row in 0..rows as usize {
            let s: f32 = out[row * n as usize..(row + 1) * n as usize].iter().sum();
            assert!((s - 1.0).abs() < 1e-5, "n = {n}: row sums to {s}");
        }
    }
    let x = vec![0.0f32; 10];
    let mut out = vec![0.0f32; 10];
    let e = softmax_spec::launch(&Device::interpreter(), Grid::x(1), &x, &mut out, 1, 10, 512)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `softmax_spec`: no specialization for BLOCK = 512 (declared: 32, 256, 4096)"
    );
    // Messages name an instance as the user wrote the kernel, not by its PTX symbol.
    let labels: Vec<String> = softmax_spec::KERNELS.iter().map(|k| k.label()).collect();
    assert_eq!(labels[1], "`softmax_spec` with BLOCK = 256");
    let e = softmax_spec::launch(&Device::interpreter(), Grid::x(1), &x, &mut out, 1, 11, 256)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `softmax_spec`: buffer `x` has 10 elements, the kernel's declaration needs at least 11"
    );
}

/// A kernel specialized on an element type: each declared type runs its own instance, chosen by
/// the buffers' type; an undeclared type is an `Err` naming the declared ones.
#[test]
fn element_type_specialization_dispatches_on_the_buffers() {
    use common::axpb_typed;
    let dev = Device::interpreter();
    let n = 1000;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 / 8.0 - 60.0).collect();
    let want: Vec<f32> = xs.iter().map(|&v| v * 0.5 + 1.0).collect();

    let mut out = vec![f32::NAN; n];
    axpb_typed::launch(
        &dev,
        Grid::x(cdiv(n, 256)),
        &xs,
        &mut out,
        n as i32,
        0.5,
        256,
    )
    .unwrap();
    assert_eq!(out, want);

    let xh: Vec<f16> = xs.iter().map(|&v| f16::from_f32(v)).collect();
    let mut oh = vec![f16::NAN; n];
    axpb_typed::launch(
        &dev,
        Grid::x(cdiv(n, 1024)),
        &xh,
        &mut oh,
        n as i32,
        0.5,
        1024,
    )
    .unwrap();
    for (g, x) in oh.iter().zip(&xh) {
        assert_eq!(*g, f16::from_f32(x.to_f32() * 0.5 + 1.0));
    }

    let xb: Vec<bf16> = xs.iter().map(|&v| bf16::from_f32(v)).collect();
    let mut ob = vec![bf16::NAN; n];
    axpb_typed::launch(
        &dev,
        Grid::x(cdiv(n, 256)),
        &xb,
        &mut ob,
        n as i32,
        0.5,
        256,
    )
    .unwrap();
    for (g, x) in ob.iter().zip(&xb) {
        assert_eq!(*g, bf16::from_f32(x.to_f32() * 0.5 + 1.0));
    }

    assert_eq!(
        axpb_typed::values::T,
        &[
            tile::ir::DType::F32,
            tile::ir::DType::F16,
            tile::ir::DType::BF16
        ]
    );
    let xi = vec![1i32; 4];
    let mut oi = vec![0i32; 4];
    let e = axpb_typed::launch(&dev, Grid::x(1), &xi, &mut oi, 4, 0.5, 256).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("T = i32 (declared: f32, f16, bf16)"), "{msg}");
    let e = axpb_typed::launch(&dev, Grid::x(1), &xs, &mut out, 4, 0.5, 512).unwrap_err();
    assert!(
        e.to_string().contains("BLOCK = 512 (declared: 256, 1024)"),
        "{e}"
    );
}

/// `argmax`/`argmin` along either axis and of a 1-D tile: the first index of the extreme, NaN
/// ignored (as `max`/`min` ignore it), ties to the smaller index.
#[test]
fn argmax_and_argmin() {
    use common::arg_extremes;
    for rows in [1usize, 7, 64] {
        let mut r = Rng(rows as u64);
        // Few distinct values, so ties happen; a NaN in each row.
        let mut x: Vec<f32> = (0..rows * 32).map(|_| (r.next() % 5) as f32).collect();
        for i in 0..rows {
            x[i * 32 + (i * 7) % 32] = f32::NAN;
        }
        let (mut rm, mut cm, mut fm) = (vec![-1; rows], vec![-1; 32], vec![-1; 1]);
        arg_extremes::launch(
            &Device::interpreter(),
            Grid::x(1),
            &x,
            &mut rm,
            &mut cm,
            &mut fm,
            rows as i32,
        )
        .unwrap();
        let first = |vals: &mut dyn Iterator<Item = f32>, better: fn(f32, f32) -> bool| {
            let mut best: Option<(usize, f32)> = None;
            for (i, v) in vals.enumerate() {
                if v.is_nan() {
                    continue;
                }
                if best.is_none_or(|(_, b)| better(v, b)) {
                    best = Some((i, v));
                }
            }
            best.map_or(0, |(i, _)| i as i32)
        };
        for i in 0..rows {
            let want = first(&mut x[i * 32..(i + 1) * 32].iter().copied(), |a, b| a > b);
            assert_eq!(rm[i], want, "rows {rows}: argmax of row {i}");
        }
        for j in 0..32 {
            // The tile has 64 rows: those past `rows` load +∞.
            let col = (0..64).map(|i| {
                if i < rows {
                    x[i * 32 + j]
                } else {
                    f32::INFINITY
                }
            });
            let want = first(&mut col.into_iter(), |a, b| a < b);
            assert_eq!(cm[j], want, "rows {rows}: argmin of column {j}");
        }
        assert_eq!(fm[0], first(&mut x[..32].iter().copied(), |a, b| a > b));
    }
}

/// `if` on scalars: each program takes its branch, values assigned in branches hold after the
/// `if`, a false flag skips the store.
#[test]
fn if_on_scalars() {
    use common::branchy;
    let n = 1500;
    let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    for flag in [1, 0] {
        let mut out = vec![f32::NAN; n];
        let mut flags = vec![flag, 0];
        branchy::launch(
            &Device::interpreter(),
            Grid::x(cdiv(n, 256)),
            &x,
            &mut out,
            &mut flags,
            n as i32,
        )
        .unwrap();
        assert_eq!(flags[1], 7);
        for (pid, chunk) in out.chunks(256).enumerate() {
            let xs = &x[pid * 256..(pid * 256 + chunk.len())];
            for (j, &o) in chunk.iter().enumerate() {
                let v = xs[j];
                let want = if pid % 2 == 0 {
                    v * 2.0 + xs.iter().sum::<f32>()
                } else if pid % 3 == 0 {
                    v - 1.0
                } else {
                    v + 1.0
                };
                if flag == 0 {
                    assert!(o.is_nan(), "flag 0 stored");
                } else {
                    assert!(
                        (o - want).abs() <= 1e-4 * (1.0 + want.abs()),
                        "program {pid} [{j}]: {o} vs {want}"
                    );
                }
            }
        }
    }
}

/// Which buffers a kernel addresses with 32-bit offsets (the launch refuses buffers of more than
/// `i32::MAX` elements for those): none with `i64` offsets throughout, all with `i32`.
#[test]
fn kernels_record_their_offset_width() {
    use common::{clamp, fill_i64};
    let narrow = |k: &tile::KernelSpec| -> Vec<bool> {
        k.params
            .iter()
            .filter_map(|p| match p.kind {
                tile::ParamKind::Ptr { offsets32, .. } => Some(offsets32),
                tile::ParamKind::Scalar(_) => None,
            })
            .collect()
    };
    assert_eq!(narrow(&fill_i64::KERNEL), [false, false]);
    assert_eq!(narrow(&clamp::KERNEL), [true, true]);
}

/// `Ptr<bool>` buffers (one byte per element) load as masks and store comparisons.
#[test]
fn bool_buffers() {
    use common::bool_mask;
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| (i % 9) as f32 - 4.0).collect();
    let keep: Vec<bool> = (0..n).map(|i| i % 3 != 0).collect();
    let mut out = vec![f32::NAN; n];
    let mut pos = vec![false; n];
    let dev = Device::interpreter();
    bool_mask::launch(
        &dev,
        Grid::x(cdiv(n, 256)),
        &x,
        &keep,
        &mut out,
        &mut pos,
        n as i32,
    )
    .unwrap();
    for i in 0..n {
        assert_eq!(out[i], if keep[i] { x[i] } else { 0.0 });
        assert_eq!(pos[i], x[i] > 0.0);
    }
}

/// `num_warps = auto(8)`: each instance gets the warps that give a thread 8 elements of its tile.
#[test]
fn auto_warps_per_instance() {
    use common::axpb_typed;
    for k in axpb_typed::KERNELS {
        let block = if k.name.contains("BLOCK_256") {
            256
        } else {
            1024
        };
        for v in k.variants {
            assert_eq!(v.num_warps, (block / (32 * 8)).max(1), "{}", k.name);
        }
    }
}

/// `if` on compile-time integers: each specialization runs its own branch, and holds no `if` op.
#[test]
fn static_if_keeps_only_the_taken_branch() {
    let n = 300;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 7.0).collect();
    for mode in 0..3 {
        let mut out = vec![f32::NAN; n];
        static_branches::launch(
            &Device::interpreter(),
            Grid::x(cdiv(n, 256)),
            &x,
            &mut out,
            n as i32,
            mode,
        )
        .unwrap();
        for (i, (&o, &v)) in out.iter().zip(&x).enumerate() {
            let want = match mode {
                0 => v * 2.0,
                1 => (v + 1.0) * (v + 1.0),
                _ => -v,
            };
            assert_eq!(o, want, "mode {mode} [{i}]");
        }
    }
    for k in static_branches::KERNELS {
        assert!(!k.ir.contains(" if "), "{}: {}", k.name, k.ir);
    }
}

#[tile_kernel]
/// A branch decided at build time may give a name a value of another type (`ROUND = 1` rounds
/// through f16), as a constexpr `if` may: it is the only code there is.
fn static_retype(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, ROUND: Const<{ [0, 1] }>) {
    let offs = program_id(0) * 128 + arange(0, 128);
    let m = offs < n;
    let mut t = load(x + offs, m);
    if ROUND == 1 {
        t = t as f16;
    }
    store(out + offs, t as f32, m);
}

/// [`static_retype`]: each instance runs with its branch's type.
#[test]
fn static_branch_may_change_a_type() {
    let n = 300;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.001 + 1.0 / 3.0).collect();
    for round in 0..2 {
        let mut out = vec![f32::NAN; n];
        static_retype::launch(
            &Device::interpreter(),
            Grid::x(cdiv(n, 128)),
            &x,
            &mut out,
            n as i32,
            round,
        )
        .unwrap();
        for (&o, &v) in out.iter().zip(&x) {
            let want = if round == 1 {
                f16::from_f32(v).to_f32()
            } else {
                v
            };
            assert_eq!(o, want);
        }
    }
}

#[tile_kernel]
/// Scales by a compile-time sign: a negative value in a list of constants (its instance is
/// named `S_m1`; found by tile-fuzz).
fn scale_by_sign(x: Ptr<f32, 64>, S: Const<{ [1, -1, -3] }>) {
    let o = arange(0, 64);
    store(x + o, load(x + o) * S as f32);
}

/// Negative constants select their instance and reach the kernel as values.
#[test]
fn negative_constants_in_a_list() {
    for s in [1, -1, -3] {
        let mut x: Vec<f32> = (0..64).map(|i| i as f32).collect();
        scale_by_sign::launch(&Device::interpreter(), Grid::x(1), &mut x, s).unwrap();
        for (i, &v) in x.iter().enumerate() {
            assert_eq!(v, i as f32 * s as f32, "S = {s} [{i}]");
        }
    }
    let names: Vec<&str> = scale_by_sign::KERNELS.iter().map(|k| k.name).collect();
    assert!(names.iter().any(|n| n.ends_with("S_m3")), "{names:?}");
    let labels: Vec<String> = scale_by_sign::KERNELS.iter().map(|k| k.label()).collect();
    assert!(
        labels.contains(&"`scale_by_sign` with S = -3".to_string()),
        "{labels:?}"
    );
    let mut y = vec![0.0f32; 64];
    assert!(scale_by_sign::launch(&Device::interpreter(), Grid::x(1), &mut y[..], 2).is_err());
}

/// Kernel names that are legal Rust are legal kernel names: a raw identifier and a Unicode one
/// compile (their PTX symbols are `type` and `f_ufc_llen`) and run under their Rust names.
#[test]
fn raw_and_unicode_kernel_names() {
    let dev = Device::interpreter();
    let mut x = vec![0.0f32; 100];
    common::r#type::launch(&dev, Grid::x(1), &mut x, 100).unwrap();
    assert!(x.iter().all(|&v| v == 2.0));
    common::füllen::launch(&dev, Grid::x(1), &mut x, 100).unwrap();
    assert!(x.iter().all(|&v| v == 3.0));
    assert_eq!(common::r#type::KERNEL.name, "type");
    assert_eq!(common::füllen::KERNEL.name, "f_ufc_llen");
    assert_eq!(common::füllen::KERNEL.label(), "`füllen`");
    assert_eq!(common::r#type::KERNEL.label(), "`type`");
    for v in common::füllen::KERNEL.variants {
        for t in v.targets {
            assert!(t.ptx.contains(".entry f_ufc_llen("), "{}", t.target.arch());
        }
    }
}

#[test]
fn eviction_hints_reach_the_ir_and_change_no_value() {
    let ir = hinted::KERNEL.ir;
    assert!(ir.contains("load {evict = first}"), "{ir}");
    assert!(ir.contains("load {evict = last}"), "{ir}");
    assert!(ir.contains("store {evict = first}"), "{ir}");
    // `normal` is the default, so it is not written.
    assert!(!ir.contains("evict = normal"), "{ir}");
    let mut rng = Rng(41);
    for n in [1, 127, 128, 300] {
        let x: Vec<f32> = (0..n).map(|_| rng.f32() * 4.0).collect();
        let y: Vec<f32> = (0..n).map(|_| rng.f32() * 4.0).collect();
        let mut out = vec![f32::NAN; n];
        let grid = Grid::x(n.div_ceil(128) as u32);
        hinted::launch(&Device::interpreter(), grid, &x, &y, &mut out, n as i32).unwrap();
        for i in 0..n {
            assert_eq!(out[i], x[i] * 2.0 + y[i] - x[0], "n = {n}, element {i}");
        }
    }
}

/// `cdiv` as a loop's trip count (Triton's `for k in range(0, tl.cdiv(K, BK))`), element-wise on
/// tiles of both signs and a zero divisor, and folded on compile-time integers.
#[tile_kernel]
fn cdiv_forms(
    x: Ptr<f32, n>,
    sum: Ptr<f32, 1>,
    q: Ptr<i32, 64>,
    folded: Ptr<i32, 2>,
    n: i32,
    BK: Const<32>,
) {
    let mut acc = zeros([BK]);
    for k in 0..cdiv(n, BK) {
        let offs = k * BK + arange(0, BK);
        acc += load(x + offs, offs < n);
    }
    store(sum, acc.sum());
    let i = arange(0, 64);
    store(q + i, cdiv(i - 20, i % 5 - 1));
    store(folded, cdiv(100, BK));
    store(folded + 1, cdiv(3 * BK, 5) + 0 * cdiv(n, 4));
}

#[test]
fn cdiv_bounds_loops_and_divides_elementwise() {
    for n in [0i32, 1, 31, 32, 33, 100] {
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let (mut sum, mut q, mut folded) = (vec![f32::NAN], vec![0i32; 64], vec![0i32; 2]);
        let x = if x.is_empty() { vec![0.0] } else { x };
        cdiv_forms::launch(
            &Device::interpreter(),
            Grid::x(1),
            &x,
            &mut sum,
            &mut q,
            &mut folded,
            n,
        )
        .unwrap();
        assert_eq!(sum[0], (0..n).map(|i| i as f32).sum::<f32>(), "n = {n}");
        for (i, &got) in q.iter().enumerate() {
            let (a, b) = (i as i32 - 20, i as i32 % 5 - 1);
            // Triton's formula, with division by zero giving 0 as `/` does in kernels.
            let want = if b == 0 { 0 } else { (a + b - 1) / b };
            assert_eq!(got, want, "cdiv({a}, {b})");
        }
        assert_eq!(folded, vec![4, 20]);
    }
}

/// A masked copy with `mask` and `other` by position.
#[tile_kernel]
fn masked_positional(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let a = load(x + offs, m, -1.0);
    let b = load(x + offs + 1, offs + 1 < n, 3.0, evict = last);
    store(out + offs, a + b, m);
}

/// The same copy with Triton's named `mask` and `other`, in several orders.
#[tile_kernel]
fn masked_named(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let a = load(x + offs, mask = m, other = -1.0);
    let b = load(x + offs + 1, offs + 1 < n, evict = last, other = 3.0);
    store(out + offs, a + b, mask = m);
}

#[test]
fn named_mask_and_other_are_the_positional_ones() {
    let ir = |text: &str, name: &str| text.replace(name, "kernel");
    assert_eq!(
        ir(masked_named::KERNEL.ir, "masked_named"),
        ir(masked_positional::KERNEL.ir, "masked_positional")
    );
    let n = 300usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut out = vec![f32::NAN; n];
    let grid = Grid::x(cdiv(n, 128));
    masked_named::launch(&Device::interpreter(), grid, &x, &mut out, n as i32).unwrap();
    for i in 0..n {
        let next = if i + 1 < n { x[i + 1] } else { 3.0 };
        assert_eq!(out[i], x[i] + next, "element {i}");
    }
}

/// Empty statements (a lone `;`, legal Rust) in the body, a loop and a branch.
#[tile_kernel]
#[rustfmt::skip]
fn empty_statements(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n; ;
    let mut v = load(x + offs, m);
    for _ in 0..2 { ; v = v * 2.0; ; }
    if n > 0 { ; };
    store(x + offs, v, m);;
}

#[test]
fn empty_statements_are_accepted() {
    let mut x: Vec<f32> = (0..200).map(|i| i as f32).collect();
    empty_statements::launch(&Device::interpreter(), Grid::x(2), &mut x, 200).unwrap();
    assert!(
        x.iter().enumerate().all(|(i, &v)| v == 4.0 * i as f32),
        "{x:?}"
    );
}

/// `num_stages = 1` (Triton's "no software pipelining") on a `dot` loop whose trip count is a
/// `cdiv`, as Triton's matmul tutorial writes it.
#[tile_kernel(num_warps = 4, num_stages = 1)]
fn gemm_one_stage(
    a: Ptr<f32, { m * k }>,
    b: Ptr<f32, { k * n }>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    BM: Const<32>,
    BN: Const<32>,
    BK: Const<16>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let mut acc = zeros([BM, BN]);
    for kb in 0..cdiv(k, BK) {
        let kk = kb * BK + arange(0, BK);
        let at = load(
            a + rows.expand_dims(1) * k + kk.expand_dims(0),
            mask = (rows < m).expand_dims(1) & (kk < k).expand_dims(0),
            other = 0.0,
        );
        let bt = load(
            b + kk.expand_dims(1) * n + cols.expand_dims(0),
            mask = (kk < k).expand_dims(1) & (cols < n).expand_dims(0),
        );
        acc = dot(at, bt, acc);
    }
    let mask = (rows < m).expand_dims(1) & (cols < n).expand_dims(0);
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        mask = mask,
    );
}

#[test]
fn one_stage_kernels_build_and_run() {
    assert!(
        gemm_one_stage::KERNEL.ir.contains("num_stages = 1"),
        "{}",
        gemm_one_stage::KERNEL.ir
    );
    let (m, n, k) = (40usize, 35usize, 37usize);
    let mut r = Rng(7);
    let a: Vec<f32> = (0..m * k).map(|_| r.f32()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| r.f32()).collect();
    let mut c = vec![f32::NAN; m * n];
    let grid = Grid::xy(cdiv(m, 32), cdiv(n, 32));
    gemm_one_stage::launch(
        &Device::interpreter(),
        grid,
        &a,
        &b,
        &mut c,
        m as i32,
        n as i32,
        k as i32,
    )
    .unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|l| a[i * k + l] as f64 * b[l * n + j] as f64)
                .sum();
            let got = c[i * n + j] as f64;
            assert!(
                (got - want).abs() < 1e-4,
                "c[{i}][{j}] = {got}, want {want}"
            );
        }
    }
}

/// Offsets clamped with `select` (Triton's persistent matmul) and given back their facts with
/// `max_contiguous(multiple_of(…))`: the values are the operand's.
#[tile_kernel]
fn clamped_copy(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<64>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let safe = max_contiguous(multiple_of(select(offs < n, offs, 0), BLOCK), BLOCK);
    store(out + offs, load(x + safe) * 2.0, offs < n);
}

#[test]
fn hints_keep_the_values() {
    let n = 150;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut out = vec![0.0f32; n];
    let dev = Device::interpreter();
    clamped_copy::launch(&dev, Grid::x(3), &x, &mut out, n as i32).unwrap();
    assert!(
        out.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32),
        "{out:?}"
    );
    let ir = clamped_copy::KERNEL.ir;
    assert!(
        ir.contains("hint {multiple_of = 64}") && ir.contains("hint {contiguous = 64}"),
        "{ir}"
    );
}
