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

/// Columns per program, for every kernel of this example.
pub const BLOCK: i32 = 1024;

macro_rules! act_kernels {
    ($($fused:ident, $act:ident, |$v:ident| $f:expr;)*) => {$(
        #[tile_kernel]
        /// Fused: `out[r, j] = act(x[r, j]) * x[r, d + j]`.
        pub fn $fused(x: Ptr<bf16, { rows * 2 * d }>, out: Ptr<bf16, { rows * d }>, rows: i32, d: i32, BLOCK: Const<1024>) {
            let j = program_id(0) * BLOCK + arange(0, BLOCK);
            let mask = j < d;
            let row = program_id(1);
            let $v = load(x + row * (2 * d) + j, mask) as f32;
            let gate = load(x + row * (2 * d) + d + j, mask) as f32;
            store(out + row * d + j, (($f) * gate) as bf16, mask);
        }

        #[tile_kernel]
        /// Unfused step 1: `tmp[r, j] = act(x[r, j])`.
        pub fn $act(x: Ptr<bf16, { rows * 2 * d }>, tmp: Ptr<bf16, { rows * d }>, rows: i32, d: i32, BLOCK: Const<1024>) {
            let j = program_id(0) * BLOCK + arange(0, BLOCK);
            let mask = j < d;
            let row = program_id(1);
            let $v = load(x + row * (2 * d) + j, mask) as f32;
            store(tmp + row * d + j, ($f) as bf16, mask);
        }
    )*};
}

act_kernels! {
    silu_and_mul, op_silu, |v| v * sigmoid(v);
    gelu_and_mul, op_gelu, |v| 0.5 * v * (1.0 + erf(v * 0.7071067811865476));
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
