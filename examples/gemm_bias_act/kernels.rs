//! `C = act(A @ B + bias)`: a GEMM whose epilogue adds a bias per column and applies an
//! activation while the accumulator is still in registers (the operator-fusion chapter's
//! MatMul + BiasAdd + ReLU, with the GELUs of transformer MLPs), next to its unfused form: the
//! `gemm` example's kernel writing `A @ B` in the input type, then a bias + activation kernel that
//! reads it back.
//!
//! Activations (`ACT`, chosen at launch; each value is its own specialization, holding only its
//! branch):
//! - 0, ReLU: `max(v, 0)`
//! - 1, GELU (erf): `0.5·v·(1 + erf(v/√2))`
//! - 2, GELU (tanh approximation): `0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³)))`
//!
//! The GEMM part is the `gemm` example's (`gemm_desc_acc`: the operands read through tensor
//! descriptors), in two shapes: `gemm_bias_act` with 128 × 128 × 32 tiles on 4 warps,
//! `gemm_bias_act_wide` with 128 × 256 × 64 tiles on 8 warps (on sm_90a one `wgmma` per warpgroup
//! and 16-wide step of `K`); f32 accumulation on tensor cores, the `k` loop through a ring that
//! the tensor memory accelerator fills on Hopper with aligned arguments (`cp.async` elsewhere).
//! The bias and the activation run in f32 on the accumulator; the result is rounded once to the
//! input type.

use tile::prelude::*;
use tile::stdlib::gelu_tanh;

use crate::gemm::kernels::gemm_desc_acc;

/// The activation `ACT` of `v`: 0 ReLU, 1 GELU (erf), 2 GELU (tanh approximation).
#[tile_fn]
fn act(v: Tile, ACT: Const) -> Tile {
    let mut y = v;
    if ACT == 0 {
        y = max(v, 0.0);
    } else if ACT == 1 {
        y = 0.5 * v * (1.0 + erf(v * 0.7071067811865476));
    } else {
        y = gelu_tanh(v);
    }
    y
}

/// The body of [`gemm_bias_act`] and [`gemm_bias_act_wide`]: the `gemm` example's block of
/// `a @ b` (in grouped order; with `GM = 1`, plain row-major order), its bias and activation
/// applied to the accumulator.
#[tile_fn]
fn gemm_bias_act_block(
    a: Tile,
    b: Tile,
    bias: Tile,
    c: Tile,
    m: i32,
    n: i32,
    k: i32,
    T: Type,
    ACT: Const,
    BM: Const,
    BN: Const,
    BK: Const,
    GM: Const,
) {
    let (acc, rows, cols, row_ok, col_ok) = gemm_desc_acc(a, b, m, n, k, BM, BN, BK, GM);
    let v = acc + (load(bias + cols, cols < n) as f32).expand_dims(0);
    let y = act(v, ACT);
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        y as T,
        row_ok & col_ok,
    );
}

#[tile_kernel(num_warps = 4)]
/// `c = act(a @ b + bias)` in one pass; `bias` has one element per column. `128 × 128 × 32`
/// tiles on 4 warps, a 1-D grid ([`grid`]) in row-major order (`GM = 1`): the grouped order
/// of the `gemm` kernel costs the GELU epilogue the registers it needs on `mma.sync` (8–16
/// bytes spilled at 255 registers on sm_80).
#[allow(clippy::too_many_arguments)]
pub fn gemm_bias_act(
    a: Ptr<T, { m * k }>,
    b: Ptr<T, { k * n }>,
    bias: Ptr<T, n>,
    c: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    ACT: Const<{ [0, 1, 2] }>,
    BM: Const<128>,
    BN: Const<128>,
    BK: Const<32>,
    GM: Const<1>,
) {
    gemm_bias_act_block(a, b, bias, c, m, n, k, T, ACT, BM, BN, BK, GM);
}

#[tile_kernel(num_warps = 8, specialize = aligned)]
/// [`gemm_bias_act`] with the `gemm_wide` example kernel's shape: `128 × 256 × 64` tiles on 8
/// warps (on sm_90a one `wgmma.m64n256k16` per warpgroup and 16-wide step of `K`), in grouped
/// order (`GM = 8`, as `gemm_wide`). Compiled for aligned arguments only (`specialize =
/// aligned`: `n` and `k` multiples of 8, buffers 16-byte aligned; other launches are an
/// `Err`): with 128 accumulator registers per thread, the element-by-element operand copies
/// of an unaligned variant and a GELU epilogue do not fit 255 registers. [`gemm_bias_act`]
/// takes any shape.
#[allow(clippy::too_many_arguments)]
pub fn gemm_bias_act_wide(
    a: Ptr<T, { m * k }>,
    b: Ptr<T, { k * n }>,
    bias: Ptr<T, n>,
    c: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    ACT: Const<{ [0, 1, 2] }>,
    BM: Const<128>,
    BN: Const<256>,
    BK: Const<64>,
    GM: Const<8>,
) {
    gemm_bias_act_block(a, b, bias, c, m, n, k, T, ACT, BM, BN, BK, GM);
}

/// The grid of [`gemm_bias_act`] (`bn = 128`) or [`gemm_bias_act_wide`] (`bn = 256`) for an
/// `m × n` result: one program per `128 × bn` block, on one axis (the kernel orders them). A
/// count past `u32` saturates, and the launch refuses that grid.
#[allow(dead_code)]
pub fn grid(m: usize, n: usize, bn: usize) -> Grid {
    Grid::x(cdiv(m, 128).saturating_mul(cdiv(n, bn)))
}

#[tile_kernel(num_warps = 4)]
/// The unfused epilogue: `out = act(x + bias)` over an `m × n` row-major matrix `x` (what a
/// GEMM wrote), `BLOCK` elements per program, the bias gathered by column.
#[allow(clippy::too_many_arguments)]
pub fn bias_act(
    x: Ptr<T, { m * n }>,
    bias: Ptr<T, n>,
    out: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    T: Type<{ [f16, bf16] }>,
    ACT: Const<{ [0, 1, 2] }>,
    BLOCK: Const<2048>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < m * n;
    let v = load(x + offs, mask) as f32 + load(bias + offs % n, mask) as f32;
    let y = act(v, ACT);
    store(out + offs, y as T, mask);
}

/// The activation `act` (an `ACT` value) in f64.
pub fn act_ref(act: i32, v: f64) -> f64 {
    match act {
        0 => v.max(0.0),
        1 => 0.5 * v * (1.0 + libm::erf(v / std::f64::consts::SQRT_2)),
        _ => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * v * (1.0 + (c * (v + 0.044715 * v * v * v)).tanh())
        }
    }
}

/// Every kernel of this example, each instance.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = gemm_bias_act::KERNELS.to_vec();
    v.extend(gemm_bias_act_wide::KERNELS);
    v.extend(bias_act::KERNELS);
    v
}
