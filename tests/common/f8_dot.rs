//! `dot` of 8-bit float tiles (`f8e4m3`, `f8e5m2`, in any pairing) into `f32`: on sm_90a
//! `wgmma`'s FP8 forms where both operands are read K-major (`dot(a, w.trans())`), `mma.sync`'s
//! `m16n8k32` FP8 form otherwise; on sm_80 (no FP8 tensor cores) the exact `f16` values on the
//! 16-bit instructions; below one instruction the exact FMA chain. Checked against Rust in
//! `f64`: every product of two 8-bit floats is exact in `f32`, so only the order of the sums
//! (and the tensor cores' accumulation, narrower than `f32` on Hopper's FP8 path) differs.

use tile::prelude::*;
use tile::{f8e4m3, f8e5m2};

use super::Rng;

#[tile_kernel(num_warps = 4)]
/// `c = a · bᵀ + c0` for 8-bit float matrices `a` (`m × k`) and `b` (`n × k`, a weight stored as
/// a linear layer stores it: K-major, as `wgmma` reads 8-bit operands), `f32` result, one `64 ×
/// 64` block per program in steps of 64 along `k`. With `HALVE = 1`, `A` is computed in the loop
/// (`a · 0.5`, rounded back to `TA`), so the product reads it from registers.
#[allow(clippy::too_many_arguments)]
pub fn dot_f8_nt(
    a: Ptr<TA, { m * k }>,
    b: Ptr<TB, { n * k }>,
    c0: Ptr<f32, { m * n }>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    TA: Type<{ [f8e4m3, f8e5m2] }>,
    TB: Type<{ [f8e4m3, f8e5m2] }>,
    HALVE: Const<{ [0, 1] }>,
    BM: Const<64>,
    BN: Const<64>,
    BK: Const<64>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let inside = (rows < m).expand_dims(1) & (cols < n).expand_dims(0);
    let at_c = rows.expand_dims(1) * n + cols.expand_dims(0);
    let mut acc = load(c0 + at_c, inside, 0.0);
    for k0 in (0..k).step_by(BK) {
        let kk = (k0 + ks).expand_dims(0);
        let mut x = load(
            a + rows.expand_dims(1) * k + kk,
            (rows < m).expand_dims(1) & (kk < k),
            0.0,
        );
        if HALVE == 1 {
            x = (x as f32 * 0.5) as TA;
        }
        let w = load(
            b + cols.expand_dims(1) * k + kk,
            (cols < n).expand_dims(1) & (kk < k),
            0.0,
        );
        acc = dot(x, w.trans(), acc);
    }
    store(c + at_c, acc, inside);
}

#[tile_kernel(num_warps = 4, num_stages = 1)]
/// `c = a · b` for 8-bit float matrices `a` (`m × k`) and `b` (`k × n`, N-major, which `wgmma`
/// does not read for 8-bit types), `f32` result; with `BK = 16`, below one `m16n8k32`, the exact
/// chain on every target, and with `BK = 32` on tensor cores, `b` converted through registers.
#[allow(clippy::too_many_arguments)]
pub fn dot_f8_nn(
    a: Ptr<TA, { m * k }>,
    b: Ptr<TB, { k * n }>,
    c: Ptr<f32, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    TA: Type<{ [f8e4m3, f8e5m2] }>,
    TB: Type<{ [f8e4m3, f8e5m2] }>,
    BM: Const<32>,
    BN: Const<32>,
    BK: Const<{ [16, 32] }>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let kk = k0 + ks;
        let x = load(
            a + rows.expand_dims(1) * k + kk.expand_dims(0),
            (rows < m).expand_dims(1) & (kk < k).expand_dims(0),
            0.0,
        );
        let w = load(
            b + kk.expand_dims(1) * n + cols.expand_dims(0),
            (kk < k).expand_dims(1) & (cols < n).expand_dims(0),
            0.0,
        );
        acc = dot(x, w, acc);
    }
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}

/// Random 8-bit float values (as `f32`): mostly in ±4, one in eight scaled up by 64 (so the
/// sums span a range of magnitudes), a few exact zeros and subnormals.
fn values(g: &mut Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let r = g.next();
            let x = g.f32() * 4.0;
            match r % 16 {
                0 => 0.0,
                1 => x * 1e-3,
                2 | 3 => x * 64.0,
                _ => x,
            }
        })
        .collect()
}

/// An element type the checks run: its name and its rounding of an `f32`.
trait F8: tile::Element + Copy {
    fn of(x: f32) -> Self;
    fn value(self) -> f64;
}

impl F8 for f8e4m3 {
    fn of(x: f32) -> Self {
        f8e4m3::from_f32(x)
    }
    fn value(self) -> f64 {
        self.to_f64()
    }
}

impl F8 for f8e5m2 {
    fn of(x: f32) -> Self {
        f8e5m2::from_f32(x)
    }
    fn value(self) -> f64 {
        self.to_f64()
    }
}

/// The largest error allowed, as a fraction of the sum of the terms' magnitudes: on the
/// interpreter (and sm_80, whose `f16` products are exact and summed in `f32`) the `f32`
/// roundings of the partial sums, within 2⁻¹⁶; on a GPU 2⁻⁹, because Hopper's FP8 tensor cores
/// accumulate with fewer mantissa bits than `f32` (DeepGEMM measured about 14; the first run
/// here saw 2.7·10⁻⁴ of the sum on a 64-term dot). A wrong fragment or stage moves whole terms,
/// far past either bound.
fn bound(dev: &Device) -> f64 {
    if dev.is_cuda() {
        2f64.powi(-9)
    } else {
        2f64.powi(-16)
    }
}

/// Whether `got` is within `bound` of `want`, for a sum whose terms' magnitudes add up to
/// `scale`; records the error's fraction of `scale` in `worst`.
fn close(got: f32, want: f64, scale: f64, bound: f64, worst: &mut f64) -> bool {
    let e = (f64::from(got) - want).abs() / scale.max(1e-30);
    *worst = worst.max(e);
    e <= bound
}

/// [`dot_f8_nt`] (both `HALVE`s) and both instances of [`dot_f8_nn`] for one pairing of types.
fn check_pair<A: F8, B: F8>(
    dev: &Device,
    (m, n, k): (usize, usize, usize),
    what: &str,
    worst: &mut f64,
) {
    let tol = bound(dev);
    let mut g = Rng((m * 131 + n * 7 + k) as u64 ^ 0xf8);
    let a: Vec<A> = values(&mut g, m * k).into_iter().map(A::of).collect();
    let b: Vec<B> = values(&mut g, n * k).into_iter().map(B::of).collect();
    let c0: Vec<f32> = (0..m * n).map(|_| g.f32()).collect();
    let (da, db, dc0) = (
        dev.upload(&a).unwrap(),
        dev.upload(&b).unwrap(),
        dev.upload(&c0).unwrap(),
    );
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    // `(value, magnitude)` of row `i` of `a` (halved and rounded back where `halve`) times column
    // `j` of `b` read as `n × k` (`nt`) or `k × n`.
    let want = |i: usize, j: usize, nt: bool, halve: bool| -> (f64, f64) {
        (0..k).fold((0.0, 0.0), |(s, t), p| {
            let av = if halve {
                A::of((a[i * k + p].value() * 0.5) as f32).value()
            } else {
                a[i * k + p].value()
            };
            let bv = if nt { b[j * k + p] } else { b[p * n + j] }.value();
            (s + av * bv, t + (av * bv).abs())
        })
    };
    for halve in [0, 1] {
        let mut c = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        let grid = Grid::xy(m.div_ceil(64) as u32, n.div_ceil(64) as u32);
        dot_f8_nt::launch(dev, grid, &da, &db, &dc0, &mut c, mi, ni, ki, halve).unwrap();
        let got = dev.download(&c).unwrap();
        for i in 0..m {
            for j in 0..n {
                let (w, s) = want(i, j, true, halve == 1);
                let w = w + f64::from(c0[i * n + j]);
                let g = got[i * n + j];
                assert!(
                    close(g, w, s + 1.0, tol, worst),
                    "{what} nt (halve {halve}) {m}×{n}×{k}: c[{i}][{j}] = {g}, want {w}"
                );
            }
        }
    }
    let grid = Grid::xy(m.div_ceil(32) as u32, n.div_ceil(32) as u32);
    for bk in [16, 32] {
        let mut c = dev.upload(&vec![f32::NAN; m * n]).unwrap();
        dot_f8_nn::launch(dev, grid, &da, &db, &mut c, mi, ni, ki, bk).unwrap();
        let got = dev.download(&c).unwrap();
        for i in 0..m {
            for j in 0..n {
                let (w, s) = want(i, j, false, false);
                let g = got[i * n + j];
                assert!(
                    close(g, w, s, tol, worst),
                    "{what} nn BK {bk} {m}×{n}×{k}: c[{i}][{j}] = {g}, want {w}"
                );
            }
        }
    }
}

/// Every pairing of the two 8-bit float types on each shape (ragged edges along every axis).
/// Prints the worst error seen, as a fraction of the sum of the terms' magnitudes.
pub fn check_dot_f8(dev: &Device, shapes: &[(usize, usize, usize)]) {
    let mut worst = 0.0;
    for &shape in shapes {
        check_pair::<f8e4m3, f8e4m3>(dev, shape, "e4m3·e4m3", &mut worst);
        check_pair::<f8e4m3, f8e5m2>(dev, shape, "e4m3·e5m2", &mut worst);
        check_pair::<f8e5m2, f8e4m3>(dev, shape, "e5m2·e4m3", &mut worst);
        check_pair::<f8e5m2, f8e5m2>(dev, shape, "e5m2·e5m2", &mut worst);
    }
    println!(
        "8-bit float dot: worst error {worst:.2e} of the terms' magnitudes (bound {:.2e})",
        bound(dev)
    );
}
