//! Triton's tutorial 09, persistent matmul (`matmul_kernel_persistent`): `NUM_SMS` programs, each
//! taking output tiles `start_pid, start_pid + NUM_SMS, …` of `C = A @ B` in grouped order, with a
//! `K` loop per tile that builds its pointers from the loop counter, and a second tile counter
//! (`tile_id_c`) for the epilogue, as the tutorial keeps one.
//!
//! `_compute_pid`, the tutorial's `@triton.jit` helper returning `(pid_m, pid_n)`, is a tile
//! function (`#[tile_fn]`) called at the same two places. Changed constructs: the tile
//! loop `tl.range(start_pid, num_tiles, NUM_SMS, flatten=True)` has the compile-time step
//! `NUM_SMS` (a `tl.constexpr` in the tutorial too), so it is `(start_pid..num_tiles)
//! .step_by(NUM_SMS)`; `flatten=True` (fusing the two loops for the pipeliner) has no
//! equivalent. `NUM_SMS` is compiled for 132 (H100 SXM, H200) and 4 (the interpreter tests).
//! The tutorial's fp8 output and its TMA / tensor-descriptor kernels are not ported: tile has no
//! fp8 type and no tensor descriptors.
//!
//! The tutorial autotunes over `128 × {128, 256} × {64, 128}` tiles, 3 or 4 stages, 4 or 8
//! warps; this port compiles `128 × 128 × 64`, 3 stages, 8 warps, for unit strides only
//! (`128 × 256 × 64` holds more registers than a thread has).

use tile::prelude::*;

use crate::check::{err, Rng};
use crate::matrix_multiplication::product;

/// The output tile `(pid_m, pid_n)` of tile `tile_id` in grouped order (`NUM_SMS` unused, as in
/// the tutorial).
#[tile_fn]
fn _compute_pid(
    tile_id: Tile,
    num_pid_in_group: Tile,
    num_pid_m: Tile,
    GROUP_SIZE_M: Const,
    NUM_SMS: Const,
) -> (Tile, Tile) {
    let group_id = tile_id / num_pid_in_group;
    let first_pid_m = group_id * GROUP_SIZE_M;
    let group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M);
    let pid_m = first_pid_m + (tile_id % group_size_m);
    let pid_n = (tile_id % num_pid_in_group) / group_size_m;
    (pid_m, pid_n)
}

#[tile_kernel(num_warps = 8, num_stages = 3, specialize = unit)]
/// `C = A @ B` (f16 in and out, f32 accumulation) by `NUM_SMS` persistent programs. Compiled for
/// unit strides only (`specialize = unit`): its tiles fit the registers only when their copies
/// run as vectors.
#[allow(clippy::too_many_arguments)]
pub fn matmul_kernel_persistent(
    a_ptr: Ptr<f16>,
    b_ptr: Ptr<f16>,
    c_ptr: Ptr<f16>,
    M: i32,
    N: i32,
    K: i32,
    stride_am: i32,
    stride_ak: i32,
    stride_bk: i32,
    stride_bn: i32,
    stride_cm: i32,
    stride_cn: i32,
    BLOCK_SIZE_M: Const<128>,
    BLOCK_SIZE_N: Const<128>,
    BLOCK_SIZE_K: Const<64>,
    GROUP_SIZE_M: Const<8>,
    NUM_SMS: Const<{ [4, 132] }>,
) {
    let start_pid = program_id(0);
    let num_pid_m = cdiv(M, BLOCK_SIZE_M);
    let num_pid_n = cdiv(N, BLOCK_SIZE_N);
    let k_tiles = cdiv(K, BLOCK_SIZE_K);
    let num_tiles = num_pid_m * num_pid_n;

    // The tutorial keeps a second tile counter for the epilogue (a pipelining work-around on
    // Blackwell); kept as written.
    let mut tile_id_c = start_pid - NUM_SMS;

    let offs_k_for_mask = arange(0, BLOCK_SIZE_K);
    let num_pid_in_group = GROUP_SIZE_M * num_pid_n;

    // triton: for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
    for tile_id in (start_pid..num_tiles).step_by(NUM_SMS) {
        let (pid_m, pid_n) =
            _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS);
        let start_m = pid_m * BLOCK_SIZE_M;
        let start_n = pid_n * BLOCK_SIZE_N;
        let mut offs_am = start_m + arange(0, BLOCK_SIZE_M);
        let mut offs_bn = start_n + arange(0, BLOCK_SIZE_N);
        offs_am = select(offs_am < M, offs_am, 0); // triton: tl.where(offs_am < M, offs_am, 0)
        offs_bn = select(offs_bn < N, offs_bn, 0);
        offs_am = max_contiguous(multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M);
        offs_bn = max_contiguous(multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N);

        let mut accumulator = zeros([BLOCK_SIZE_M, BLOCK_SIZE_N]);
        for ki in 0..k_tiles {
            let offs_k = ki * BLOCK_SIZE_K + arange(0, BLOCK_SIZE_K);
            let a_ptrs =
                a_ptr + (offs_am.expand_dims(1) * stride_am + offs_k.expand_dims(0) * stride_ak);
            let b_ptrs =
                b_ptr + (offs_k.expand_dims(1) * stride_bk + offs_bn.expand_dims(0) * stride_bn);

            let a = load(
                a_ptrs,
                mask = offs_k_for_mask.expand_dims(0) < K - ki * BLOCK_SIZE_K,
                other = 0.0,
            );
            let b = load(
                b_ptrs,
                mask = offs_k_for_mask.expand_dims(1) < K - ki * BLOCK_SIZE_K,
                other = 0.0,
            );
            accumulator = dot(a, b, accumulator);
        }

        tile_id_c += NUM_SMS;
        let (pid_m, pid_n) = _compute_pid(
            tile_id_c,
            num_pid_in_group,
            num_pid_m,
            GROUP_SIZE_M,
            NUM_SMS,
        );
        let offs_cm = pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
        let offs_cn = pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
        let c_ptrs =
            c_ptr + stride_cm * offs_cm.expand_dims(1) + stride_cn * offs_cn.expand_dims(0);
        let c_mask = (offs_cm.expand_dims(1) < M) & (offs_cn.expand_dims(0) < N);
        // triton: the fp8 branch (`c_ptr.dtype.element_ty == tl.float8e4nv`) is not ported
        let c = accumulator as f16; // triton: accumulator.to(tl.float16)
        store(c_ptrs, c, mask = c_mask);
    }
}

/// The tutorial's `matmul_persistent(a, b)` for row-major `a` (`m × k`) and `b` (`k × n`):
/// `min(num_sms, tiles)` programs; `num_sms` is one of the compiled `NUM_SMS` (4, 132). The
/// kernel takes rows of 16 bytes (`k` and `n` multiples of 8); others are an `Err`.
pub fn matmul_persistent(
    dev: &Device,
    a: &Buffer<f16>,
    b: &Buffer<f16>,
    (m, n, k): (usize, usize, usize),
    num_sms: usize,
) -> Result<Buffer<f16>, Error> {
    let mut c = dev.zeros::<f16>(m * n)?;
    matmul_persistent_into(dev, a, b, &mut c, (m, n, k), num_sms)?;
    Ok(c)
}

/// [`matmul_persistent`] into a given `c` (`m × n` row-major): the launch alone, for timing.
pub fn matmul_persistent_into(
    dev: &Device,
    a: &Buffer<f16>,
    b: &Buffer<f16>,
    c: &mut Buffer<f16>,
    (m, n, k): (usize, usize, usize),
    num_sms: usize,
) -> Result<(), Error> {
    let tiles = cdiv(m, 128) * cdiv(n, 128); // BLOCK_SIZE_M × BLOCK_SIZE_N blocks
    let grid = Grid::x(tiles.min(num_sms as u32));
    let s = |v: usize| v as i32;
    matmul_kernel_persistent::launch(
        dev,
        grid,
        a,
        b,
        c,
        s(m),
        s(n),
        s(k),
        s(k),
        1,
        s(n),
        1,
        s(n),
        1,
        s(num_sms),
    )
}

/// Runs [`matmul_kernel_persistent`] on standard normal f16 matrices against the f64 product,
/// with the tolerance of tutorial 03's check (the same f32 accumulation and f16 rounding).
pub fn run_check(
    dev: &Device,
    (m, n, k): (usize, usize, usize),
    num_sms: usize,
    seed: u64,
) -> Result<(), String> {
    let mut r = Rng::new(seed);
    let a = r.vec(m * k, |r| f16::from_f32(r.normal()));
    let b = r.vec(k * n, |r| f16::from_f32(r.normal()));
    let (da, db) = (dev.upload(&a).map_err(err)?, dev.upload(&b).map_err(err)?);
    let c = matmul_persistent(dev, &da, &db, (m, n, k), num_sms).map_err(err)?;
    let c = dev.download(&c).map_err(err)?;
    let (mut want, mut tol) = (Vec::with_capacity(m * n), Vec::with_capacity(m * n));
    for i in 0..m {
        for j in 0..n {
            let (p, scale) = product(&a, &b, (k, (n, 1)), (i, j));
            let dot_tol = (k as f64 + 2.0) * 2f64.powi(-22) * scale;
            want.push(p);
            tol.push(dot_tol + 2f64.powi(-11) * (p.abs() + dot_tol) + 2f64.powi(-24));
        }
    }
    let got: Vec<f64> = c.iter().map(|&v| f64::from(v)).collect();
    let what = format!("persistent matmul {m} x {n} x {k}, {num_sms} programs");
    crate::check::compare(&what, &got, &want, |i| tol[i])
}

/// Every kernel of this tutorial.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    matmul_kernel_persistent::KERNELS.to_vec()
}
