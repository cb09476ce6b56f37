//! The kernels of the `act_and_mul` example — vLLM's `act_and_mul_kernel` (SwiGLU / GeGLU gating):
//! for `x` of shape `rows × 2d` (bf16), `out[r, j] = act(x[r, j]) * x[r, d + j]` for `j < d`, with
//! `act` = SiLU (`v * sigmoid(v)`) or GELU (erf form, `0.5·v·(1 + erf(v/√2))`).
//!
//! The fused kernel reads both halves of a row and writes the product: one pass. The unfused form
//! is what PyTorch eager runs for `act(x[:, :d]) * x[:, d:]`: an activation kernel writing a
//! `rows × d` temporary (rounded to bf16), then a multiply kernel. Arithmetic is f32 throughout (the
//! fused kernel rounds once, on store; vLLM rounds the activation to the storage type before the
//! multiply, as the unfused form does).
//!
//! The grid is 2-D: `Grid::xy(cdiv(d, BLOCK), rows)`; program `(i, r)` handles columns
//! `i·BLOCK .. (i+1)·BLOCK` of row `r`.

use tile::prelude::*;
use tile::stdlib::silu;

/// Columns per program, for every kernel of this example.
pub const BLOCK: i32 = 1024;

/// The activation `ACT` of `v`: 0 SiLU, 1 GELU (erf form).
#[tile_fn]
fn act(v: Tile, ACT: Const) -> Tile {
    let mut y = v;
    if ACT == 0 {
        y = silu(v);
    } else {
        y = 0.5 * v * (1.0 + erf(v * 0.7071067811865476));
    }
    y
}

/// The fused kernels' body: `out[r, j] = act(x[r, j]) * x[r, d + j]` for the columns of program
/// `(i, r)`.
#[tile_fn]
fn act_and_mul(x: Tile, out: Tile, d: i32, BLOCK_SIZE: Const, ACT: Const) {
    let j = program_id(0) * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    let mask = j < d;
    let row = program_id(1);
    let v = load(x + row * (2 * d) + j, mask) as f32;
    let gate = load(x + row * (2 * d) + d + j, mask) as f32;
    store(out + row * d + j, (act(v, ACT) * gate) as bf16, mask);
}

/// The unfused activation kernels' body: `tmp[r, j] = act(x[r, j])`.
#[tile_fn]
fn act_only(x: Tile, tmp: Tile, d: i32, BLOCK_SIZE: Const, ACT: Const) {
    let j = program_id(0) * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    let mask = j < d;
    let row = program_id(1);
    let v = load(x + row * (2 * d) + j, mask) as f32;
    store(tmp + row * d + j, act(v, ACT) as bf16, mask);
}

#[tile_kernel]
/// Fused: `out[r, j] = silu(x[r, j]) * x[r, d + j]`.
pub fn silu_and_mul(
    x: Ptr<bf16, { rows * 2 * d }>,
    out: Ptr<bf16, { rows * d }>,
    rows: i32,
    d: i32,
    BLOCK: Const<1024>,
) {
    act_and_mul(x, out, d, BLOCK, 0);
}

#[tile_kernel]
/// Unfused step 1: `tmp[r, j] = silu(x[r, j])`.
pub fn op_silu(
    x: Ptr<bf16, { rows * 2 * d }>,
    tmp: Ptr<bf16, { rows * d }>,
    rows: i32,
    d: i32,
    BLOCK: Const<1024>,
) {
    act_only(x, tmp, d, BLOCK, 0);
}

#[tile_kernel]
/// Fused: `out[r, j] = gelu(x[r, j]) * x[r, d + j]`.
pub fn gelu_and_mul(
    x: Ptr<bf16, { rows * 2 * d }>,
    out: Ptr<bf16, { rows * d }>,
    rows: i32,
    d: i32,
    BLOCK: Const<1024>,
) {
    act_and_mul(x, out, d, BLOCK, 1);
}

#[tile_kernel]
/// Unfused step 1: `tmp[r, j] = gelu(x[r, j])`.
pub fn op_gelu(
    x: Ptr<bf16, { rows * 2 * d }>,
    tmp: Ptr<bf16, { rows * d }>,
    rows: i32,
    d: i32,
    BLOCK: Const<1024>,
) {
    act_only(x, tmp, d, BLOCK, 1);
}

#[tile_kernel]
/// Unfused step 2: `out[r, j] = tmp[r, j] * x[r, d + j]`.
pub fn op_mul_gate(
    tmp: Ptr<bf16, { rows * d }>,
    x: Ptr<bf16, { rows * 2 * d }>,
    out: Ptr<bf16, { rows * d }>,
    rows: i32,
    d: i32,
    BLOCK: Const<1024>,
) {
    let j = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = j < d;
    let row = program_id(1);
    let a = load(tmp + row * d + j, mask) as f32;
    let gate = load(x + row * (2 * d) + d + j, mask) as f32;
    store(out + row * d + j, (a * gate) as bf16, mask);
}

/// Every kernel of this example.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![
        &silu_and_mul::KERNEL,
        &op_silu::KERNEL,
        &gelu_and_mul::KERNEL,
        &op_gelu::KERNEL,
        &op_mul_gate::KERNEL,
    ]
}

/// The activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// `v * sigmoid(v)` (SwiGLU).
    Silu,
    /// `0.5·v·(1 + erf(v/√2))` (GeGLU).
    Gelu,
}

impl Act {
    /// Both activations.
    pub const ALL: [Act; 2] = [Act::Silu, Act::Gelu];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Act::Silu => "SiLU",
            Act::Gelu => "GELU (erf)",
        }
    }
}

fn grid(rows: i32, d: i32) -> Grid {
    Grid::xy(cdiv(d, BLOCK), rows.max(0) as u32)
}

/// `out = act(x[:, :d]) * x[:, d:]` in one kernel.
pub fn fused(
    dev: &Device,
    act: Act,
    x: &Buffer<bf16>,
    out: &mut Buffer<bf16>,
    rows: i32,
    d: i32,
) -> Result<(), Error> {
    match act {
        Act::Silu => silu_and_mul::launch(dev, grid(rows, d), x, out, rows, d),
        Act::Gelu => gelu_and_mul::launch(dev, grid(rows, d), x, out, rows, d),
    }
}

/// `tmp = act(x[:, :d])`, then `out = tmp * x[:, d:]`.
pub fn unfused(
    dev: &Device,
    act: Act,
    x: &Buffer<bf16>,
    tmp: &mut Buffer<bf16>,
    out: &mut Buffer<bf16>,
    rows: i32,
    d: i32,
) -> Result<(), Error> {
    match act {
        Act::Silu => op_silu::launch(dev, grid(rows, d), x, tmp, rows, d)?,
        Act::Gelu => op_gelu::launch(dev, grid(rows, d), x, tmp, rows, d)?,
    }
    op_mul_gate::launch(dev, grid(rows, d), tmp, x, out, rows, d)
}
