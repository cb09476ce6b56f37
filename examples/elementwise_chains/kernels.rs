//! The kernels of the `elementwise_chains` example: four chains of element-wise operations on a
//! `rows × cols` f32 matrix (some with a bias per column), each as one fused kernel and as the
//! unfused sequence PyTorch eager would run (one kernel per operation, intermediates in memory).
//!
//! | chain | fused | unfused |
//! |---|---|---|
//! | (a) relu → scale → + bias | `max(x, 0) * s + bias[col]` | relu, scale, add bias |
//! | (b) add → relu | `max(x + y, 0)` | add, relu |
//! | (c) add → tanh → scale | `tanh(x + y) * s` | add, tanh, scale |
//! | (d) + bias → relu → exp | `exp(max(x + bias[col], 0))` | add bias, relu, exp |
//!
//! Every kernel works on 1-D tiles of `BLOCK` elements of the flattened matrix; the column of an
//! element (for the bias) is `offs % cols`. Chain (c) is the document's "vectorized" kernel, which
//! there is written with explicit `Vec<T, VEC_SIZE>` loads: here there is nothing to write — the
//! compiler proves the offsets contiguous and aligned and emits vector loads and stores itself.

use tile::prelude::*;

/// Elements per program, for every kernel of this example.
pub const BLOCK: i32 = 1024;

#[tile_kernel]
/// (a) fused: `out = max(x, 0) * s + bias[col]`.
pub fn relu_scale_bias(
    x: Ptr<f32, { rows * cols }>,
    bias: Ptr<f32, cols>,
    out: Ptr<f32, { rows * cols }>,
    rows: i32,
    cols: i32,
    s: f32,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < rows * cols;
    let v = max(load(x + offs, mask), 0.0) * s + load(bias + offs % cols, mask);
    store(out + offs, v, mask);
}

#[tile_kernel]
/// (b) fused: `out = max(x + y, 0)`.
pub fn add_relu(x: Ptr<f32, n>, y: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(
        out + offs,
        max(load(x + offs, mask) + load(y + offs, mask), 0.0),
        mask,
    );
}

#[tile_kernel]
/// (c) fused: `out = tanh(x + y) * s` (vectorized by the compiler).
pub fn add_tanh_scale(
    x: Ptr<f32, n>,
    y: Ptr<f32, n>,
    out: Ptr<f32, n>,
    n: i32,
    s: f32,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(
        out + offs,
        tanh(load(x + offs, mask) + load(y + offs, mask)) * s,
        mask,
    );
}

#[tile_kernel]
/// (d) fused: `out = exp(max(x + bias[col], 0))`.
pub fn bias_relu_exp(
    x: Ptr<f32, { rows * cols }>,
    bias: Ptr<f32, cols>,
    out: Ptr<f32, { rows * cols }>,
    rows: i32,
    cols: i32,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < rows * cols;
    let v = load(x + offs, mask) + load(bias + offs % cols, mask);
    store(out + offs, max(v, 0.0).exp(), mask);
}

#[tile_kernel]
/// Unfused op: `out = max(x, 0)`.
pub fn op_relu(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(out + offs, max(load(x + offs, mask), 0.0), mask);
}

#[tile_kernel]
/// Unfused op: `out = x * s`.
pub fn op_scale(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, s: f32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(out + offs, load(x + offs, mask) * s, mask);
}

#[tile_kernel]
/// Unfused op: `out = x + bias[col]`.
pub fn op_add_bias(
    x: Ptr<f32, { rows * cols }>,
    bias: Ptr<f32, cols>,
    out: Ptr<f32, { rows * cols }>,
    rows: i32,
    cols: i32,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < rows * cols;
    store(
        out + offs,
        load(x + offs, mask) + load(bias + offs % cols, mask),
        mask,
    );
}

#[tile_kernel]
/// Unfused op: `out = x + y`.
pub fn op_add(x: Ptr<f32, n>, y: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(
        out + offs,
        load(x + offs, mask) + load(y + offs, mask),
        mask,
    );
}

#[tile_kernel]
/// Unfused op: `out = tanh(x)`.
pub fn op_tanh(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(out + offs, tanh(load(x + offs, mask)), mask);
}

#[tile_kernel]
/// Unfused op: `out = exp(x)`.
pub fn op_exp(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(out + offs, exp(load(x + offs, mask)), mask);
}

/// Every kernel of this example.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![
        &relu_scale_bias::KERNEL,
        &add_relu::KERNEL,
        &add_tanh_scale::KERNEL,
        &bias_relu_exp::KERNEL,
        &op_relu::KERNEL,
        &op_scale::KERNEL,
        &op_add_bias::KERNEL,
        &op_add::KERNEL,
        &op_tanh::KERNEL,
        &op_exp::KERNEL,
    ]
}

/// The buffers of one problem: inputs `x`, `y` (`rows × cols`), `bias` (`cols`), the output and
/// the two temporaries the unfused chains need.
pub struct Bufs {
    /// First input, `rows × cols`.
    pub x: Buffer<f32>,
    /// Second input, `rows × cols` (chains b and c).
    pub y: Buffer<f32>,
    /// Bias per column (chains a and d).
    pub bias: Buffer<f32>,
    /// Output, `rows × cols`.
    pub out: Buffer<f32>,
    /// First intermediate of the unfused chains.
    pub t1: Buffer<f32>,
    /// Second intermediate of the unfused chains.
    pub t2: Buffer<f32>,
    /// Rows of the matrix.
    pub rows: i32,
    /// Columns of the matrix (the length of `bias`).
    pub cols: i32,
    /// The scale `s` of chains a and c.
    pub s: f32,
}

/// One of the four chains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chain {
    /// (a) `max(x, 0) * s + bias[col]`.
    ReluScaleBias,
    /// (b) `max(x + y, 0)`.
    AddRelu,
    /// (c) `tanh(x + y) * s`.
    AddTanhScale,
    /// (d) `exp(max(x + bias[col], 0))`.
    BiasReluExp,
}

impl Chain {
    /// The four chains.
    pub const ALL: [Chain; 4] = [
        Chain::ReluScaleBias,
        Chain::AddRelu,
        Chain::AddTanhScale,
        Chain::BiasReluExp,
    ];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Chain::ReluScaleBias => "(a) relu -> scale -> + bias",
            Chain::AddRelu => "(b) add -> relu",
            Chain::AddTanhScale => "(c) add -> tanh -> scale",
            Chain::BiasReluExp => "(d) + bias -> relu -> exp",
        }
    }

    /// The kernels of the unfused form, in launch order.
    pub fn unfused_ops(self) -> &'static str {
        match self {
            Chain::ReluScaleBias => "relu, scale, add bias",
            Chain::AddRelu => "add, relu",
            Chain::AddTanhScale => "add, tanh, scale",
            Chain::BiasReluExp => "add bias, relu, exp",
        }
    }

    /// Whether the chain reads `y` (else it reads `bias`).
    pub fn reads_y(self) -> bool {
        matches!(self, Chain::AddRelu | Chain::AddTanhScale)
    }

    /// Runs the fused kernel: `b.out` from `b.x` and `b.y` or `b.bias`.
    pub fn fused(self, dev: &Device, b: &mut Bufs) -> Result<(), Error> {
        let (rows, cols, s) = (b.rows, b.cols, b.s);
        let n = rows * cols;
        let g = Grid::x(cdiv(n, BLOCK));
        match self {
            Chain::ReluScaleBias => {
                relu_scale_bias::launch(dev, g, &b.x, &b.bias, &mut b.out, rows, cols, s)
            }
            Chain::AddRelu => add_relu::launch(dev, g, &b.x, &b.y, &mut b.out, n),
            Chain::AddTanhScale => add_tanh_scale::launch(dev, g, &b.x, &b.y, &mut b.out, n, s),
            Chain::BiasReluExp => {
                bias_relu_exp::launch(dev, g, &b.x, &b.bias, &mut b.out, rows, cols)
            }
        }
    }

    /// Runs the unfused chain, one kernel per operation, through `b.t1` and `b.t2`.
    pub fn unfused(self, dev: &Device, b: &mut Bufs) -> Result<(), Error> {
        let (rows, cols, s) = (b.rows, b.cols, b.s);
        let n = rows * cols;
        let g = Grid::x(cdiv(n, BLOCK));
        match self {
            Chain::ReluScaleBias => {
                op_relu::launch(dev, g, &b.x, &mut b.t1, n)?;
                op_scale::launch(dev, g, &b.t1, &mut b.t2, n, s)?;
                op_add_bias::launch(dev, g, &b.t2, &b.bias, &mut b.out, rows, cols)
            }
            Chain::AddRelu => {
                op_add::launch(dev, g, &b.x, &b.y, &mut b.t1, n)?;
                op_relu::launch(dev, g, &b.t1, &mut b.out, n)
            }
            Chain::AddTanhScale => {
                op_add::launch(dev, g, &b.x, &b.y, &mut b.t1, n)?;
                op_tanh::launch(dev, g, &b.t1, &mut b.t2, n)?;
                op_scale::launch(dev, g, &b.t2, &mut b.out, n, s)
            }
            Chain::BiasReluExp => {
                op_add_bias::launch(dev, g, &b.x, &b.bias, &mut b.t1, rows, cols)?;
                op_relu::launch(dev, g, &b.t1, &mut b.t2, n)?;
                op_exp::launch(dev, g, &b.t2, &mut b.out, n)
            }
        }
    }
}
