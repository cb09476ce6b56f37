//! The kernels of the `fused_bias_gelu` example: `y = GELU(x + bias[col])` on a `rows × cols`
//! matrix, as one fused kernel and as the unfused pair (add the bias, then GELU), for f32 and bf16
//! storage (the arithmetic is f32 in both: bf16 values are converted on load and rounded on store),
//! and for both forms of GELU:
//!
//! - exact: `0.5·v·(1 + erf(v/√2))`
//! - tanh approximation: `0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³)))`
//!
//! Each kernel (one per element type and form) calls the tile functions below, which hold the
//! bodies once; the form is a `Const` argument of theirs.

use tile::prelude::*;
use tile::stdlib::gelu_tanh;

/// Elements per program, for every kernel of this example.
pub const BLOCK: i32 = 1024;

/// GELU of `v` in the form `FORM`: 0 exact (erf), 1 the tanh approximation.
#[tile_fn]
fn gelu_form(v: Tile, FORM: Const) -> Tile {
    let mut y = v;
    if FORM == 0 {
        y = 0.5 * v * (1.0 + erf(v * 0.7071067811865476));
    } else {
        y = gelu_tanh(v);
    }
    y
}

/// `x + bias[col]` in f32 for the columns of program `(i, r)`, with the mask and the offsets
/// of its elements.
#[tile_fn]
fn add_bias_row(x: Tile, bias: Tile, cols: i32, BLOCK_SIZE: Const) -> (Tile, Tile, Tile) {
    // 2-D grid: program (i, r) covers columns i·BLOCK_SIZE.. of row r, so the bias index is the
    // column itself (an integer `%` per element would make the bf16 kernels compute-bound).
    let col = program_id(0) * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    let mask = col < cols;
    let offs = program_id(1) * cols + col;
    let v = load(x + offs, mask) as f32 + load(bias + col, mask) as f32;
    (v, mask, offs)
}

/// The fused kernels' body: `out = GELU(x + bias[col])`, computed in f32.
#[tile_fn]
fn bias_gelu(x: Tile, bias: Tile, out: Tile, cols: i32, BLOCK_SIZE: Const, T: Type, FORM: Const) {
    let (v, mask, offs) = add_bias_row(x, bias, cols, BLOCK_SIZE);
    store(out + offs, gelu_form(v, FORM) as T, mask);
}

/// The unfused GELU kernels' body: `out = GELU(x)`, computed in f32.
#[tile_fn]
fn gelu_only(x: Tile, out: Tile, n: i32, BLOCK_SIZE: Const, T: Type, FORM: Const) {
    let offs = program_id(0) * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    let mask = offs < n;
    let v = load(x + offs, mask) as f32;
    store(out + offs, gelu_form(v, FORM) as T, mask);
}

/// The unfused bias kernels' body: `out = x + bias[col]`, rounded to the storage type `T`
/// (as PyTorch eager stores its intermediate).
#[tile_fn]
fn add_bias(x: Tile, bias: Tile, out: Tile, cols: i32, BLOCK_SIZE: Const, T: Type) {
    let (v, mask, offs) = add_bias_row(x, bias, cols, BLOCK_SIZE);
    store(out + offs, v as T, mask);
}

#[tile_kernel]
/// Fused: `out = GELU(x + bias[col])` (erf), computed in f32.
pub fn bias_gelu_erf_f32(
    x: Ptr<f32, { rows * cols }>,
    bias: Ptr<f32, cols>,
    out: Ptr<f32, { rows * cols }>,
    rows: i32,
    cols: i32,
    BLOCK: Const<1024>,
) {
    bias_gelu(x, bias, out, cols, BLOCK, f32, 0);
}

#[tile_kernel]
/// Unfused step 2: `out = GELU(x)` (erf), computed in f32.
pub fn gelu_erf_f32(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    gelu_only(x, out, n, BLOCK, f32, 0);
}

#[tile_kernel]
/// Fused: `out = GELU(x + bias[col])` (tanh approximation), computed in f32.
pub fn bias_gelu_tanh_f32(
    x: Ptr<f32, { rows * cols }>,
    bias: Ptr<f32, cols>,
    out: Ptr<f32, { rows * cols }>,
    rows: i32,
    cols: i32,
    BLOCK: Const<1024>,
) {
    bias_gelu(x, bias, out, cols, BLOCK, f32, 1);
}

#[tile_kernel]
/// Unfused step 2: `out = GELU(x)` (tanh approximation), computed in f32.
pub fn gelu_tanh_f32(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    gelu_only(x, out, n, BLOCK, f32, 1);
}

#[tile_kernel]
/// Fused: `out = GELU(x + bias[col])` (erf), computed in f32.
pub fn bias_gelu_erf_bf16(
    x: Ptr<bf16, { rows * cols }>,
    bias: Ptr<bf16, cols>,
    out: Ptr<bf16, { rows * cols }>,
    rows: i32,
    cols: i32,
    BLOCK: Const<1024>,
) {
    bias_gelu(x, bias, out, cols, BLOCK, bf16, 0);
}

#[tile_kernel]
/// Unfused step 2: `out = GELU(x)` (erf), computed in f32.
pub fn gelu_erf_bf16(x: Ptr<bf16, n>, out: Ptr<bf16, n>, n: i32, BLOCK: Const<1024>) {
    gelu_only(x, out, n, BLOCK, bf16, 0);
}

#[tile_kernel]
/// Fused: `out = GELU(x + bias[col])` (tanh approximation), computed in f32.
pub fn bias_gelu_tanh_bf16(
    x: Ptr<bf16, { rows * cols }>,
    bias: Ptr<bf16, cols>,
    out: Ptr<bf16, { rows * cols }>,
    rows: i32,
    cols: i32,
    BLOCK: Const<1024>,
) {
    bias_gelu(x, bias, out, cols, BLOCK, bf16, 1);
}

#[tile_kernel]
/// Unfused step 2: `out = GELU(x)` (tanh approximation), computed in f32.
pub fn gelu_tanh_bf16(x: Ptr<bf16, n>, out: Ptr<bf16, n>, n: i32, BLOCK: Const<1024>) {
    gelu_only(x, out, n, BLOCK, bf16, 1);
}

#[tile_kernel]
/// Unfused step 1: `out = x + bias[col]`, rounded to f32.
pub fn add_bias_f32(
    x: Ptr<f32, { rows * cols }>,
    bias: Ptr<f32, cols>,
    out: Ptr<f32, { rows * cols }>,
    rows: i32,
    cols: i32,
    BLOCK: Const<1024>,
) {
    add_bias(x, bias, out, cols, BLOCK, f32);
}

#[tile_kernel]
/// Unfused step 1: `out = x + bias[col]`, rounded to bf16.
pub fn add_bias_bf16(
    x: Ptr<bf16, { rows * cols }>,
    bias: Ptr<bf16, cols>,
    out: Ptr<bf16, { rows * cols }>,
    rows: i32,
    cols: i32,
    BLOCK: Const<1024>,
) {
    add_bias(x, bias, out, cols, BLOCK, bf16);
}

/// Every kernel of this example.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![
        &bias_gelu_erf_f32::KERNEL,
        &gelu_erf_f32::KERNEL,
        &bias_gelu_tanh_f32::KERNEL,
        &gelu_tanh_f32::KERNEL,
        &bias_gelu_erf_bf16::KERNEL,
        &gelu_erf_bf16::KERNEL,
        &bias_gelu_tanh_bf16::KERNEL,
        &gelu_tanh_bf16::KERNEL,
        &add_bias_f32::KERNEL,
        &add_bias_bf16::KERNEL,
    ]
}

/// The form of GELU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gelu {
    /// `0.5·v·(1 + erf(v/√2))`.
    Erf,
    /// `0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³)))`.
    Tanh,
}

impl Gelu {
    /// Both forms.
    pub const ALL: [Gelu; 2] = [Gelu::Erf, Gelu::Tanh];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Gelu::Erf => "GELU (erf)",
            Gelu::Tanh => "GELU (tanh approx.)",
        }
    }
}

/// A storage type with this example's kernels: `f32` or `bf16`.
pub trait Storage: tile::Element {
    /// Its name.
    const NAME: &'static str;
    /// Rounds an f32 to this type.
    fn from_f32(v: f32) -> Self;
    /// Widens to f32 (exactly).
    fn to_f32(self) -> f32;
    /// `out = GELU(x + bias[col])` in one kernel.
    fn fused(
        dev: &Device,
        form: Gelu,
        x: &Buffer<Self>,
        bias: &Buffer<Self>,
        out: &mut Buffer<Self>,
        rows: i32,
        cols: i32,
    ) -> Result<(), Error>;
    /// `tmp = x + bias[col]`, then `out = GELU(tmp)`.
    #[allow(clippy::too_many_arguments)]
    fn unfused(
        dev: &Device,
        form: Gelu,
        x: &Buffer<Self>,
        bias: &Buffer<Self>,
        tmp: &mut Buffer<Self>,
        out: &mut Buffer<Self>,
        rows: i32,
        cols: i32,
    ) -> Result<(), Error>;
}

macro_rules! storage {
    ($T:ident, |$a:ident| $from:expr, |$b:ident| $to:expr, $add_bias:ident, $fused_erf:ident, $gelu_erf:ident, $fused_tanh:ident, $gelu_tanh:ident) => {
        impl Storage for $T {
            const NAME: &'static str = stringify!($T);
            fn from_f32($a: f32) -> Self {
                $from
            }
            fn to_f32(self) -> f32 {
                let $b = self;
                $to
            }
            fn fused(
                dev: &Device,
                form: Gelu,
                x: &Buffer<Self>,
                bias: &Buffer<Self>,
                out: &mut Buffer<Self>,
                rows: i32,
                cols: i32,
            ) -> Result<(), Error> {
                let g = Grid::xy(cdiv(cols, BLOCK), rows.max(0) as u32);
                match form {
                    Gelu::Erf => $fused_erf::launch(dev, g, x, bias, out, rows, cols),
                    Gelu::Tanh => $fused_tanh::launch(dev, g, x, bias, out, rows, cols),
                }
            }
            fn unfused(
                dev: &Device,
                form: Gelu,
                x: &Buffer<Self>,
                bias: &Buffer<Self>,
                tmp: &mut Buffer<Self>,
                out: &mut Buffer<Self>,
                rows: i32,
                cols: i32,
            ) -> Result<(), Error> {
                $add_bias::launch(
                    dev,
                    Grid::xy(cdiv(cols, BLOCK), rows.max(0) as u32),
                    x,
                    bias,
                    tmp,
                    rows,
                    cols,
                )?;
                let g = Grid::x(cdiv(rows * cols, BLOCK));
                match form {
                    Gelu::Erf => $gelu_erf::launch(dev, g, tmp, out, rows * cols),
                    Gelu::Tanh => $gelu_tanh::launch(dev, g, tmp, out, rows * cols),
                }
            }
        }
    };
}

storage!(
    f32,
    |v| v,
    |v| v,
    add_bias_f32,
    bias_gelu_erf_f32,
    gelu_erf_f32,
    bias_gelu_tanh_f32,
    gelu_tanh_f32
);
storage!(
    bf16,
    |v| bf16::from_f32(v),
    |v| v.to_f32(),
    add_bias_bf16,
    bias_gelu_erf_bf16,
    gelu_erf_bf16,
    bias_gelu_tanh_bf16,
    gelu_tanh_bf16
);
