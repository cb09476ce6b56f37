//! Tensor descriptors (`make_tensor_descriptor`, `d.load`, `d.store`) on the interpreter
//! against Rust references: a GEMM on ragged shapes (`M`, `N`, `K` not multiples of the block,
//! `K` smaller than `BK`) with row-major and transposed operands given by their strides, a 2-D
//! copy whose blocks hang over every edge (negative and past-the-end coordinates), a rank-1
//! strided case with an `i64` extent, and a descriptor passed to a tile function; f16, bf16 and
//! f32. The build compiles the same kernels for every target (through ptxas where one is found).

use tile::prelude::*;
use tile_tests::Rng;

/// Reads a block of a descriptor, for [`desc_copy_fn`].
#[tile_fn]
fn read_block(d: Tile, r: i32, c: i32) -> Tile {
    d.load([r, c])
}

/// `c = a @ b` (f32) through descriptors, each operand given by its strides, a 2-D grid of
/// `BM × BN` blocks.
#[tile_kernel(num_warps = 4)]
#[allow(clippy::too_many_arguments)]
fn desc_gemm(
    a: Ptr<T>,
    b: Ptr<T>,
    c: Ptr<f32>,
    m: i32,
    n: i32,
    k: i32,
    stride_am: i32,
    stride_ak: i32,
    stride_bk: i32,
    stride_bn: i32,
    stride_cm: i32,
    T: Type<{ [f16, bf16, f32] }>,
    BM: Const<64>,
    BN: Const<64>,
    BK: Const<32>,
) {
    let pid_m = program_id(0);
    let pid_n = program_id(1);
    let a_desc = make_tensor_descriptor(a, [m, k], [stride_am, stride_ak], [BM, BK]);
    let b_desc = make_tensor_descriptor(b, [k, n], [stride_bk, stride_bn], [BK, BN]);
    let c_desc = make_tensor_descriptor(c, [m, n], [stride_cm, 1], [BM, BN]);
    let acc = zeros([BM, BN]);
    for kk in (0..k).step_by(BK) {
        let x = a_desc.load([pid_m * BM, kk]);
        let y = b_desc.load([kk, pid_n * BN]);
        acc = dot(x, y, acc);
    }
    c_desc.store([pid_m * BM, pid_n * BN], acc);
}

/// Copies the `BR × BC` blocks of a `rows × cols` array whose corners are `(r0, c0)` plus
/// the program's block offset, from `src` (row stride `ss`) to `dst` (row stride `ds`).
#[tile_kernel(num_warps = 4)]
#[allow(clippy::too_many_arguments)]
fn desc_copy(
    src: Ptr<T>,
    dst: Ptr<T>,
    rows: i32,
    cols: i32,
    ss: i32,
    ds: i32,
    r0: i32,
    c0: i32,
    T: Type<{ [f16, bf16, f32] }>,
    BR: Const<16>,
    BC: Const<32>,
) {
    let s = make_tensor_descriptor(src, [rows, cols], [ss, 1], [BR, BC]);
    let d = make_tensor_descriptor(dst, [rows, cols], [ds, 1], [BR, BC]);
    let r = r0 + program_id(0) * BR;
    let c = c0 + program_id(1) * BC;
    d.store([r, c], s.load([r, c]));
}

/// [`desc_copy`] for f32 with the read in a tile function that takes the descriptor.
#[tile_kernel(num_warps = 4)]
#[allow(clippy::too_many_arguments)]
fn desc_copy_fn(
    src: Ptr<f32>,
    dst: Ptr<f32>,
    rows: i32,
    cols: i32,
    ss: i32,
    ds: i32,
    r0: i32,
    c0: i32,
) {
    let s = make_tensor_descriptor(src, [rows, cols], [ss, 1], [16, 32]);
    let d = make_tensor_descriptor(dst, [rows, cols], [ds, 1], [16, 32]);
    let r = r0 + program_id(0) * 16;
    let c = c0 + program_id(1) * 32;
    d.store([r, c], read_block(s, r, c));
}

/// `y[i] = 2 x[i · stride]` for `i` in `0 .. n` through rank-1 descriptors (an `i64` extent),
/// blocks starting at `off`.
#[tile_kernel(num_warps = 4)]
fn desc_scale(x: Ptr<f32>, y: Ptr<f32>, n: i64, stride: i32, off: i32, BLOCK: Const<64>) {
    let xd = make_tensor_descriptor(x, [n], [stride], [BLOCK]);
    let yd = make_tensor_descriptor(y, [n], [1], [BLOCK]);
    let i = off + program_id(0) * BLOCK;
    yd.store([i], xd.load([i]) * 2.0);
}

/// An element type of the tests, with its conversions.
trait Elem: tile::Element + Copy + PartialEq + std::fmt::Debug {
    fn from_f32(x: f32) -> Self;
    fn to_f64(self) -> f64;
}

impl Elem for f32 {
    fn from_f32(x: f32) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Elem for f16 {
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Elem for bf16 {
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

/// One GEMM of `m × n × k` on the interpreter, `B` row-major or transposed (`b_t`: stored
/// `n × k`), `A` with a padded row stride, against f64 within the bound of f32 sums of exact
/// products (`(K + 2) · 2⁻²² · Σ |aₖ bₖ|`; the f32 case's products are rounded once more).
fn gemm_case<T: Elem>(m: usize, n: usize, k: usize, b_t: bool) {
    let dev = Device::interpreter();
    let mut r = Rng((m * 7919 + n * 31 + k + usize::from(b_t)) as u64);
    let lda = k + 3;
    let a: Vec<T> = (0..m * lda).map(|_| T::from_f32(r.f32())).collect();
    let b: Vec<T> = (0..k * n).map(|_| T::from_f32(r.f32())).collect();
    let (sbk, sbn) = if b_t { (1, k) } else { (n, 1) };
    let at = |i: usize, p: usize| a[i * lda + p].to_f64();
    let bt = |p: usize, j: usize| b[p * sbk + j * sbn].to_f64();
    let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
    let mut dc = dev.upload(&vec![f32::NAN; m * n]).unwrap();
    let grid = Grid::xy(m.div_ceil(64) as u32, n.div_ceil(64) as u32);
    let i = |x: usize| x as i32;
    desc_gemm::launch(
        &dev,
        grid,
        &da,
        &db,
        &mut dc,
        i(m),
        i(n),
        i(k),
        i(lda),
        1,
        i(sbk),
        i(sbn),
        i(n),
    )
    .unwrap();
    let c = dev.download(&dc).unwrap();
    for row in 0..m {
        for col in 0..n {
            let terms = (0..k).map(|p| at(row, p) * bt(p, col));
            let want: f64 = terms.clone().sum();
            let tol = (k as f64 + 2.0) * 2f64.powi(-22) * terms.map(f64::abs).sum::<f64>();
            let got = f64::from(c[row * n + col]);
            assert!(
                (got - want).abs() <= tol,
                "{m}x{n}x{k} (b transposed: {b_t}) at ({row}, {col}): {got} vs {want}"
            );
        }
    }
}

#[test]
fn gemm_through_descriptors_on_ragged_shapes() {
    for (m, n, k) in [(1, 1, 1), (17, 9, 5), (70, 130, 45), (64, 64, 64)] {
        for b_t in [false, true] {
            gemm_case::<f16>(m, n, k, b_t);
        }
    }
    gemm_case::<bf16>(33, 65, 31, false);
    gemm_case::<f32>(33, 65, 40, true);
}

/// The reference of a copy of blocks at `(r0 + 16 i, c0 + 32 j)` over a grid of
/// `gr × gc`: an element is copied where some block covers it, otherwise left as it was.
fn copied<T: Copy>(
    src: &[T],
    dst: &[T],
    (rows, cols, ss, ds): (usize, usize, usize, usize),
    (r0, c0): (i64, i64),
    (gr, gc): (i64, i64),
) -> Vec<T> {
    let mut out = dst.to_vec();
    for i in 0..rows as i64 {
        for j in 0..cols as i64 {
            let (bi, bj) = ((i - r0).div_euclid(16), (j - c0).div_euclid(32));
            if (0..gr).contains(&bi) && (0..gc).contains(&bj) {
                out[i as usize * ds + j as usize] = src[i as usize * ss + j as usize];
            }
        }
    }
    out
}

fn copy_case<T: Elem>(rows: usize, cols: usize, (r0, c0): (i32, i32), (gr, gc): (u32, u32)) {
    let dev = Device::interpreter();
    let (ss, ds) = (cols + 5, cols + 2);
    let mut r = Rng((rows * 131 + cols) as u64 ^ (r0 as u64) << 20 ^ c0 as u64);
    let src: Vec<T> = (0..rows * ss).map(|_| T::from_f32(r.f32())).collect();
    let dst: Vec<T> = (0..rows * ds).map(|_| T::from_f32(r.f32())).collect();
    let dsrc = dev.upload(&src).unwrap();
    let mut ddst = dev.upload(&dst).unwrap();
    let i = |x: usize| x as i32;
    desc_copy::launch(
        &dev,
        Grid::xy(gr, gc),
        &dsrc,
        &mut ddst,
        i(rows),
        i(cols),
        i(ss),
        i(ds),
        r0,
        c0,
    )
    .unwrap();
    let want = copied(
        &src,
        &dst,
        (rows, cols, ss, ds),
        (r0.into(), c0.into()),
        (gr.into(), gc.into()),
    );
    assert_eq!(
        dev.download(&ddst).unwrap(),
        want,
        "{rows}x{cols} from ({r0}, {c0})"
    );
}

#[test]
fn copy_hangs_over_every_edge() {
    // Blocks covering the array exactly, shifted up-left (negative coordinates), shifted
    // past the end, and blocks wholly outside the array.
    copy_case::<f32>(37, 45, (0, 0), (3, 2));
    copy_case::<f32>(37, 45, (-5, -7), (3, 2));
    copy_case::<f16>(20, 70, (9, 50), (2, 2));
    copy_case::<bf16>(5, 3, (-20, -40), (3, 3));
    copy_case::<f16>(1, 1, (0, 0), (1, 1));
    copy_case::<bf16>(16, 32, (16, 32), (1, 1));
}

#[test]
fn descriptor_passed_to_a_tile_function() {
    let dev = Device::interpreter();
    let (rows, cols, ss, ds) = (23usize, 50usize, 51usize, 50usize);
    let mut r = Rng(5);
    let src: Vec<f32> = (0..rows * ss).map(|_| r.f32()).collect();
    let dst = vec![-9.0f32; rows * ds];
    let dsrc = dev.upload(&src).unwrap();
    let mut ddst = dev.upload(&dst).unwrap();
    let (r0, c0) = (-3, 4);
    desc_copy_fn::launch(
        &dev,
        Grid::xy(2, 2),
        &dsrc,
        &mut ddst,
        rows as i32,
        cols as i32,
        ss as i32,
        ds as i32,
        r0,
        c0,
    )
    .unwrap();
    let want = copied(
        &src,
        &dst,
        (rows, cols, ss, ds),
        (r0.into(), c0.into()),
        (2, 2),
    );
    assert_eq!(dev.download(&ddst).unwrap(), want);
}

#[test]
fn rank_one_with_a_stride() {
    let dev = Device::interpreter();
    for (n, stride, off, programs) in [
        (100usize, 3usize, 0i32, 2u32),
        (70, 1, -10, 2),
        (5, 2, 3, 1),
    ] {
        let mut r = Rng(n as u64);
        let x: Vec<f32> = (0..n * stride).map(|_| r.f32()).collect();
        let y = vec![7.0f32; n];
        let dx = dev.upload(&x).unwrap();
        let mut dy = dev.upload(&y).unwrap();
        desc_scale::launch(
            &dev,
            Grid::x(programs),
            &dx,
            &mut dy,
            n as i64,
            stride as i32,
            off,
        )
        .unwrap();
        let got = dev.download(&dy).unwrap();
        for (i, &g) in got.iter().enumerate() {
            let covered = (i as i64 - i64::from(off)) >= 0
                && ((i as i64 - i64::from(off)) / 64) < i64::from(programs);
            let want = if covered { 2.0 * x[i * stride] } else { 7.0 };
            assert_eq!(g, want, "n = {n}, stride = {stride}, off = {off}: y[{i}]");
        }
    }
}
