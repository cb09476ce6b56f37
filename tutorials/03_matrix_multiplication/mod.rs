//! Triton's tutorial 03, matrix multiplication: `C = A @ B` in f16 with f32 accumulation, one
//! program per `BLOCK_SIZE_M × BLOCK_SIZE_N` block of `C` in grouped order (`GROUP_SIZE_M` row
//! blocks visited column by column, for L2 reuse), pointer tiles into `A` and `B` advanced by
//! `BLOCK_SIZE_K` along `K` in the loop, the ragged end of `K` masked, an optional leaky ReLU on
//! the accumulator. Any strides: the check runs `B` both row-major and transposed (the
//! tutorial's fp8 case passes `b.T`).
//!
//! The tutorial autotunes over a list of configurations; this port compiles two of them, each
//! a kernel calling the one body, the tile function `matmul_body` (and the tutorial's `leaky_relu`
//! helper is a tile function too): `matmul_kernel` with `128 × 128 × 32`,
//! `GROUP_SIZE_M = 8`, 4 stages on 4 warps, and `matmul_kernel_wide` with its first
//! configuration, `128 × 256 × 64`, 3 stages on 8 warps, for unit strides only. The host
//! `matmul` takes the wide one for matrices of at least 1024 rows and columns that its specialization
//! accepts. `matmul_kernel_autotuned` is the tutorial's `@triton.autotune` itself: its eight
//! configurations, timed per shape at the first launch (`matmul_autotuned_into`).

use tile::prelude::*;

use crate::check::{compare, err, Rng};

/// The tutorial's kernel body, for computing the matmul `C = A x B`. A has shape `(M, K)`, B
/// has shape `(K, N)` and C has shape `(M, N)`. `ACTIVATION` is 1 for `"leaky_relu"`, 0 for
/// none. Each configuration below is a kernel that calls it (the tutorial's `@triton.autotune`
/// compiles one kernel per configuration, too).
#[tile_fn]
fn matmul_body(
    // Pointers to matrices
    a_ptr: Tile,
    b_ptr: Tile,
    c_ptr: Tile,
    // Matrix dimensions
    M: i32,
    N: i32,
    K: i32,
    // The stride variables represent how much to increase the ptr by when moving by 1
    // element in a particular dimension.
    stride_am: i32,
    stride_ak: i32,
    stride_bk: i32,
    stride_bn: i32,
    stride_cm: i32,
    stride_cn: i32,
    // Meta-parameters
    BLOCK_SIZE_M: Const,
    BLOCK_SIZE_N: Const,
    BLOCK_SIZE_K: Const,
    GROUP_SIZE_M: Const,
    ACTIVATION: Const, // triton: ACTIVATION: tl.constexpr ("" or "leaky_relu")
) {
    // Map program ids `pid` to the block of C it should compute, in grouped ordering.
    let pid = program_id(0);
    let num_pid_m = cdiv(M, BLOCK_SIZE_M);
    let num_pid_n = cdiv(N, BLOCK_SIZE_N);
    let num_pid_in_group = GROUP_SIZE_M * num_pid_n;
    let group_id = pid / num_pid_in_group;
    let first_pid_m = group_id * GROUP_SIZE_M;
    let group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M);
    let pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
    let pid_n = (pid % num_pid_in_group) / group_size_m;

    // Create pointers for the first blocks of A and B; they advance along K in the loop.
    let offs_am = (pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M)) % M;
    let offs_bn = (pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N)) % N;
    let offs_k = arange(0, BLOCK_SIZE_K);
    // triton: a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    let mut a_ptrs =
        a_ptr + (offs_am.expand_dims(1) * stride_am + offs_k.expand_dims(0) * stride_ak);
    let mut b_ptrs =
        b_ptr + (offs_k.expand_dims(1) * stride_bk + offs_bn.expand_dims(0) * stride_bn);

    // Iterate to compute a block of the C matrix, accumulating in f32.
    let mut accumulator = zeros([BLOCK_SIZE_M, BLOCK_SIZE_N]);
    for k in 0..cdiv(K, BLOCK_SIZE_K) {
        // Load the next block of A and B, generate a mask by checking the K dimension.
        let a = load(
            a_ptrs,
            mask = offs_k.expand_dims(0) < K - k * BLOCK_SIZE_K,
            other = 0.0,
        );
        let b = load(
            b_ptrs,
            mask = offs_k.expand_dims(1) < K - k * BLOCK_SIZE_K,
            other = 0.0,
        );
        // We accumulate along the K dimension.
        accumulator = dot(a, b, accumulator);
        // Advance the ptrs to the next K block.
        a_ptrs += BLOCK_SIZE_K * stride_ak;
        b_ptrs += BLOCK_SIZE_K * stride_bk;
    }
    // You can fuse arbitrary activation functions here while the accumulator is still in FP32.
    // triton: if ACTIVATION == "leaky_relu": accumulator = leaky_relu(accumulator)
    if ACTIVATION == 1 {
        accumulator = leaky_relu(accumulator);
    }
    let c = accumulator as f16; // triton: accumulator.to(tl.float16)

    // Write back the block of the output matrix C with masks.
    let offs_cm = pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
    let offs_cn = pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
    let c_ptrs = c_ptr + stride_cm * offs_cm.expand_dims(1) + stride_cn * offs_cn.expand_dims(0);
    let c_mask = (offs_cm.expand_dims(1) < M) & (offs_cn.expand_dims(0) < N);
    store(c_ptrs, c, mask = c_mask);
}

/// We can fuse `leaky_relu` by providing it as an `ACTIVATION` meta-parameter in `matmul_kernel`.
#[tile_fn]
fn leaky_relu(x: Tile) -> Tile {
    select(x >= 0.0, x, 0.01 * x) // triton: tl.where(x >= 0, x, 0.01 * x)
}

#[tile_kernel(num_warps = 4, num_stages = 4)]
/// triton: `triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32,
/// 'GROUP_SIZE_M': 8}, num_stages=4, num_warps=4)`.
#[allow(clippy::too_many_arguments)]
pub fn matmul_kernel(
    // Pointers to matrices
    a_ptr: Ptr<f16>,
    b_ptr: Ptr<f16>,
    c_ptr: Ptr<f16>,
    // Matrix dimensions
    M: i32,
    N: i32,
    K: i32,
    // The stride variables represent how much to increase the ptr by when moving by 1
    // element in a particular dimension.
    stride_am: i32,
    stride_ak: i32,
    stride_bk: i32,
    stride_bn: i32,
    stride_cm: i32,
    stride_cn: i32,
    // Meta-parameters
    BLOCK_SIZE_M: Const<128>,
    BLOCK_SIZE_N: Const<128>,
    BLOCK_SIZE_K: Const<32>,
    GROUP_SIZE_M: Const<8>,
    ACTIVATION: Const<{ [0, 1] }>,
) {
    matmul_body(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        stride_am,
        stride_ak,
        stride_bk,
        stride_bn,
        stride_cm,
        stride_cn,
        BLOCK_SIZE_M,
        BLOCK_SIZE_N,
        BLOCK_SIZE_K,
        GROUP_SIZE_M,
        ACTIVATION,
    );
}

#[tile_kernel(num_warps = 8, num_stages = 3, specialize = unit)]
/// triton: `triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 64,
/// 'GROUP_SIZE_M': 8}, num_stages=3, num_warps=8)`, the tutorial's first. Compiled for
/// unit strides only (`specialize = unit`): with strides it cannot prove 1 its copies run
/// element by element, and a `128 × 256` tile's addresses then do not fit the registers.
#[allow(clippy::too_many_arguments)]
pub fn matmul_kernel_wide(
    // Pointers to matrices
    a_ptr: Ptr<f16>,
    b_ptr: Ptr<f16>,
    c_ptr: Ptr<f16>,
    // Matrix dimensions
    M: i32,
    N: i32,
    K: i32,
    // The stride variables represent how much to increase the ptr by when moving by 1
    // element in a particular dimension.
    stride_am: i32,
    stride_ak: i32,
    stride_bk: i32,
    stride_bn: i32,
    stride_cm: i32,
    stride_cn: i32,
    // Meta-parameters
    BLOCK_SIZE_M: Const<128>,
    BLOCK_SIZE_N: Const<256>,
    BLOCK_SIZE_K: Const<64>,
    GROUP_SIZE_M: Const<8>,
    ACTIVATION: Const<{ [0, 1] }>,
) {
    matmul_body(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        stride_am,
        stride_ak,
        stride_bk,
        stride_bn,
        stride_cm,
        stride_cn,
        BLOCK_SIZE_M,
        BLOCK_SIZE_N,
        BLOCK_SIZE_K,
        GROUP_SIZE_M,
        ACTIVATION,
    );
}

#[tile_kernel(
    specialize = unit,
    autotune(
        configs = [
            { BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 256, BLOCK_SIZE_K = 64, num_stages = 3, num_warps = 8 },
            { BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 256, BLOCK_SIZE_K = 32, num_stages = 4, num_warps = 4 },
            { BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 32, num_stages = 4, num_warps = 4 },
            { BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 32, num_stages = 4, num_warps = 4 },
            { BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 32, num_stages = 4, num_warps = 4 },
            { BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 32, BLOCK_SIZE_K = 32, num_stages = 4, num_warps = 4 },
            { BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 32, BLOCK_SIZE_K = 32, num_stages = 5, num_warps = 2 },
            { BLOCK_SIZE_M = 32, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 32, num_stages = 5, num_warps = 2 },
        ],
        key = [M, N, K],
    )
)]
/// triton: `@triton.autotune(configs=get_autotune_config(), key=['M', 'N', 'K'])` over the
/// tutorial's eight CUDA f16 configurations (`GROUP_SIZE_M = 8` in each), timed at the first
/// launch per shape as Triton times them. Compiled for unit strides (`specialize = unit`), as
/// [`matmul_kernel_wide`] is; [`matmul_autotuned_into`] takes [`matmul_kernel`] for other
/// strides.
#[allow(clippy::too_many_arguments)]
pub fn matmul_kernel_autotuned(
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
    BLOCK_SIZE_M: Const,
    BLOCK_SIZE_N: Const,
    BLOCK_SIZE_K: Const,
    GROUP_SIZE_M: Const<8>,
    ACTIVATION: Const<{ [0, 1] }>,
) {
    matmul_body(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        stride_am,
        stride_ak,
        stride_bk,
        stride_bn,
        stride_cm,
        stride_cn,
        BLOCK_SIZE_M,
        BLOCK_SIZE_N,
        BLOCK_SIZE_K,
        GROUP_SIZE_M,
        ACTIVATION,
    );
}

/// [`matmul`] into `c` on [`matmul_kernel_autotuned`], the tutorial's `@triton.autotune`: the
/// configuration timed fastest for `(m, n, k)` on this device. Strides its unit-stride
/// specialization refuses (every configuration's launch is an `Err`) take [`matmul_kernel`].
pub fn matmul_autotuned_into(
    dev: &Device,
    a: &Buffer<f16>,
    b: &Buffer<f16>,
    c: &mut Buffer<f16>,
    (m, n, k): (usize, usize, usize),
    strides: (usize, usize),
    activation: i32,
) -> Result<(), Error> {
    let s = |v: usize| v as i32;
    let (sm, sn, sk, sbk, sbn) = (s(m), s(n), s(k), s(strides.0), s(strides.1));
    // triton: grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']), )
    let grid = |cfg: &matmul_kernel_autotuned::Config| {
        Grid::x(cdiv(m, cfg.BLOCK_SIZE_M) * cdiv(n, cfg.BLOCK_SIZE_N))
    };
    let tuned = matmul_kernel_autotuned::launch(
        dev, grid, a, b, c, sm, sn, sk, sk, 1, sbk, sbn, sn, 1, activation,
    );
    match tuned {
        Err(Error::NoVariant { .. }) => {
            matmul_config_into(dev, a, b, c, (m, n, k), strides, activation, false)
        }
        r => r,
    }
}

/// `ACTIVATION` of [`matmul_kernel`] for the tutorial's `activation="leaky_relu"`.
pub const LEAKY_RELU: i32 = 1;

/// The tutorial's `matmul(a, b, activation)`: `a` is `m × k` row-major; `b` is `k × n`, its
/// element `(i, j)` at `i · stride_bk + j · stride_bn`. Returns `c`, `m × n` row-major f16.
/// [`matmul_kernel_wide`] for at least 1024 rows and columns where its specialization takes the
/// arguments (unit strides, rows a multiple of 16 bytes), else [`matmul_kernel`].
pub fn matmul(
    dev: &Device,
    a: &Buffer<f16>,
    b: &Buffer<f16>,
    (m, n, k): (usize, usize, usize),
    strides: (usize, usize),
    activation: i32,
) -> Result<Buffer<f16>, Error> {
    let mut c = dev.zeros::<f16>(m * n)?;
    matmul_into(dev, a, b, &mut c, (m, n, k), strides, activation)?;
    Ok(c)
}

/// [`matmul`] into a given `c` (`m × n` row-major): the launches alone, for timing. The wide
/// kernel is compiled for unit strides and aligned rows only; other arguments are refused before
/// anything runs, and take the tutorial's 4-warp configuration.
pub fn matmul_into(
    dev: &Device,
    a: &Buffer<f16>,
    b: &Buffer<f16>,
    c: &mut Buffer<f16>,
    (m, n, k): (usize, usize, usize),
    strides: (usize, usize),
    activation: i32,
) -> Result<(), Error> {
    let wide = m >= 1024 && n >= 1024;
    match matmul_config_into(dev, a, b, c, (m, n, k), strides, activation, wide) {
        Err(Error::NoVariant { .. }) if wide => {
            matmul_config_into(dev, a, b, c, (m, n, k), strides, activation, false)
        }
        r => r,
    }
}

/// [`matmul`] into `c` (`m × n` row-major) on the configuration named: `wide` for
/// [`matmul_kernel_wide`], else [`matmul_kernel`].
#[allow(clippy::too_many_arguments)]
pub fn matmul_config_into(
    dev: &Device,
    a: &Buffer<f16>,
    b: &Buffer<f16>,
    c: &mut Buffer<f16>,
    (m, n, k): (usize, usize, usize),
    (stride_bk, stride_bn): (usize, usize),
    activation: i32,
    wide: bool,
) -> Result<(), Error> {
    let s = |v: usize| v as i32;
    let (sm, sn, sk, sbk, sbn) = (s(m), s(n), s(k), s(stride_bk), s(stride_bn));
    // 1D launch kernel where each block gets its own program.
    if wide {
        let grid = Grid::x(cdiv(m, 128) * cdiv(n, 256));
        matmul_kernel_wide::launch(
            dev, grid, a, b, c, sm, sn, sk, sk, 1, sbk, sbn, sn, 1, activation,
        )
    } else {
        let grid = Grid::x(cdiv(m, 128) * cdiv(n, 128));
        matmul_kernel::launch(
            dev, grid, a, b, c, sm, sn, sk, sk, 1, sbk, sbn, sn, 1, activation,
        )
    }
}

/// `(i, j)` of `a @ b` in f64 (`a` `m × k` row-major, `b` element `(p, j)` at `p · sbk + j · sbn`)
/// and `Σₚ |a b|`.
pub fn product(
    a: &[f16],
    b: &[f16],
    (k, (sbk, sbn)): (usize, (usize, usize)),
    (i, j): (usize, usize),
) -> (f64, f64) {
    let terms = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * sbk + j * sbn]));
    (terms.clone().sum(), terms.map(f64::abs).sum())
}

/// Runs [`matmul_config_into`] (`wide`: which configuration) on standard normal f16 matrices (the
/// tutorial's `torch.randn`), `b` row-major or transposed, with or without the leaky ReLU,
/// against [`product`] in f64.
///
/// Tolerance per element: `(K + 2) · 2⁻²² · Σₚ |aₚ bₚ|` for the f32 accumulation (products of
/// f16 values are exact in f32; the sum runs in any order on tensor cores: the bound `dot`
/// documents), plus `2⁻¹¹ · |c|` for the rounding of the result to f16, plus `2⁻²⁴` for f16
/// subnormals. The activation scales both by 0.01 or 1, so the bound holds after it.
pub fn run_check(
    dev: &Device,
    shape: (usize, usize, usize),
    b_transposed: bool,
    activation: i32,
    wide: bool,
    seed: u64,
) -> Result<(), String> {
    let what = format!("wide {wide}");
    check_with(
        dev,
        shape,
        b_transposed,
        activation,
        seed,
        &what,
        |a, b, c, strides| matmul_config_into(dev, a, b, c, shape, strides, activation, wide),
    )
}

/// [`run_check`] on [`matmul_autotuned_into`] (on the interpreter: the first configuration, or
/// [`matmul_kernel`] for a transposed `b`).
pub fn run_check_autotuned(
    dev: &Device,
    shape: (usize, usize, usize),
    b_transposed: bool,
    activation: i32,
    seed: u64,
) -> Result<(), String> {
    check_with(
        dev,
        shape,
        b_transposed,
        activation,
        seed,
        "autotuned",
        |a, b, c, strides| matmul_autotuned_into(dev, a, b, c, shape, strides, activation),
    )
}

/// Runs `launch(a, b, c, strides)` on random inputs and compares `c` with [`product`].
fn check_with(
    dev: &Device,
    (m, n, k): (usize, usize, usize),
    b_transposed: bool,
    activation: i32,
    seed: u64,
    label: &str,
    launch: impl FnOnce(
        &Buffer<f16>,
        &Buffer<f16>,
        &mut Buffer<f16>,
        (usize, usize),
    ) -> Result<(), Error>,
) -> Result<(), String> {
    let mut r = Rng::new(seed);
    let a = r.vec(m * k, |r| f16::from_f32(r.normal()));
    let b = r.vec(k * n, |r| f16::from_f32(r.normal()));
    let strides = if b_transposed { (1, k) } else { (n, 1) };
    let (da, db) = (dev.upload(&a).map_err(err)?, dev.upload(&b).map_err(err)?);
    let mut c = dev.zeros::<f16>(m * n).map_err(err)?;
    launch(&da, &db, &mut c, strides).map_err(err)?;
    let c = dev.download(&c).map_err(err)?;
    let (mut want, mut tol) = (Vec::with_capacity(m * n), Vec::with_capacity(m * n));
    for i in 0..m {
        for j in 0..n {
            let (p, scale) = product(&a, &b, (k, strides), (i, j));
            let p = if activation == LEAKY_RELU && p < 0.0 {
                0.01 * p
            } else {
                p
            };
            let dot_tol = (k as f64 + 2.0) * 2f64.powi(-22) * scale;
            want.push(p);
            tol.push(dot_tol + 2f64.powi(-11) * (p.abs() + dot_tol) + 2f64.powi(-24));
        }
    }
    let got: Vec<f64> = c.iter().map(|&v| f64::from(v)).collect();
    let what = format!(
        "matmul {m} x {n} x {k}, b transposed {b_transposed}, activation {activation}, {label}"
    );
    compare(&what, &got, &want, |i| tol[i])
}

/// Every kernel of this tutorial.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = matmul_kernel::KERNELS.to_vec();
    v.extend(matmul_kernel_wide::KERNELS);
    v.extend(matmul_kernel_autotuned::KERNELS);
    v
}
