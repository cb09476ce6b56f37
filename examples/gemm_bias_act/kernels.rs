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
//! The GEMM part is the `gemm` example's: 128 × 128 × 32 tiles, 4 warps, f32 accumulation on
//! tensor cores, the `k` loop through a `cp.async` ring. The bias and the activation run in f32 on
//! the accumulator; the result is rounded once to the input type.

use tile::prelude::*;

#[tile_kernel(num_warps = 4)]
/// `c = act(a @ b + bias)` in one pass; `bias` has one element per column. A 2-D grid of
/// `128 × 128` blocks, in row-major order: the grouped order of the `gemm` kernel costs the GELU
/// epilogue the registers it needs (8–16 bytes spilled at 255 registers on sm_90a).
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
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let row_ok = (rows < m).expand_dims(1);
    let col_ok = (cols < n).expand_dims(0);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let kk = k0 + ks;
        let at = load(
            a + rows.expand_dims(1) * k + kk.expand_dims(0),
            row_ok & (kk < k).expand_dims(0),
        );
        let bt = load(
            b + kk.expand_dims(1) * n + cols.expand_dims(0),
            (kk < k).expand_dims(1) & col_ok,
        );
        acc = dot(at, bt, acc);
    }
    let v = acc + (load(bias + cols, cols < n) as f32).expand_dims(0);
    let mut y = v;
    if ACT == 0 {
        y = max(v, 0.0);
    } else if ACT == 1 {
        y = 0.5 * v * (1.0 + erf(v * 0.7071067811865476));
    } else {
        y = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    }
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        y as T,
        row_ok & col_ok,
    );
}

/// The grid of [`gemm_bias_act`] for an `m × n` result: one program per `128 × 128` block, in
/// row-major order.
#[allow(dead_code)]
pub fn grid(m: usize, n: usize) -> Grid {
    Grid::xy(cdiv(m, 128), cdiv(n, 128))
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
    let mut y = v;
    if ACT == 0 {
        y = max(v, 0.0);
    } else if ACT == 1 {
        y = 0.5 * v * (1.0 + erf(v * 0.7071067811865476));
    } else {
        y = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    }
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
    v.extend(bias_act::KERNELS);
    v
}
