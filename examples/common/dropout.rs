//! What the dropout examples (`fused_bias_gelu_dropout`, `residual_bias_dropout`) share: their two
//! masks as the CPU computes them from `tile::random` ([`Stream`]), the storage types ([`Elem`]),
//! and the unfused steps both have (`add_bias`, Triton's tutorial `dropout`). Both examples'
//! `kernels.rs` re-export it.

use tile::prelude::*;

#[tile_kernel]
/// Unfused step: `out = x + bias[col]` (rounded to the storage type, as PyTorch eager stores
/// its intermediate).
pub fn add_bias(
    x: Ptr<T, { rows * cols }>,
    bias: Ptr<T, cols>,
    out: Ptr<T, { rows * cols }>,
    rows: i32,
    cols: i32,
    T: Type<{ [f32, bf16] }>,
    BLOCK: Const<1024>,
) {
    let col = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = col < cols;
    let offs = program_id(1) * cols + col;
    let v = load(x + offs, mask) as f32 + load(bias + col, mask) as f32;
    store(out + offs, v as T, mask);
}

#[tile_kernel]
/// Unfused step (Triton's tutorial kernel): `out = x / (1 − p)` where `rand(seed, i) > p`, else 0;
/// `i` the element's index ([`Stream::Rand`]).
pub fn dropout(
    x: Ptr<T, n>,
    out: Ptr<T, n>,
    n: i32,
    p: f32,
    seed: i64,
    T: Type<{ [f32, bf16] }>,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let v = load(x + offs, mask) as f32;
    let scale = 1.0 / (1.0 - p);
    store(
        out + offs,
        select(rand(seed, offs) > p, v * scale, 0.0) as T,
        mask,
    );
}

/// A storage type of the dropout examples: `f32` or `bf16` (arithmetic is f32 in both).
pub trait Elem: tile::Element {
    /// Its name.
    const NAME: &'static str;
    /// Rounds an f32 to this type.
    fn from_f32(v: f32) -> Self;
    /// Widens to f32 (exactly).
    fn to_f32(self) -> f32;
}

impl Elem for f32 {
    const NAME: &'static str = "f32";
    fn from_f32(v: f32) -> Self {
        v
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Elem for bf16 {
    const NAME: &'static str = "bf16";
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
}

/// Which random numbers decide the mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Triton's `tl.rand(seed, i)` for element `i = row · cols + col` (its dropout tutorial's
    /// mask): one Philox evaluation per element.
    Rand,
    /// Word `col % 4` of `tl.rand4x(seed, row · ⌈cols / 4⌉ + col / 4)`: one Philox evaluation per
    /// four elements (for `cols` a multiple of 4, word `i % 4` of `tl.rand4x(seed, i / 4)`).
    Words4,
}

impl Stream {
    /// Both.
    pub const ALL: [Stream; 2] = [Stream::Rand, Stream::Words4];

    /// Whether element (`row`, `col`) of a matrix of `cols` columns is kept.
    pub fn keep(self, seed: i64, row: usize, col: usize, cols: usize, p: f32) -> bool {
        let seed = seed as u64;
        match self {
            Stream::Rand => tile::random::rand(seed, (row * cols + col) as u64) > p,
            Stream::Words4 => {
                let q = row * cols.div_ceil(4) + col / 4;
                tile::random::rand4x(seed, q as u64)[col % 4] > p
            }
        }
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Rand => "rand(i)",
            Stream::Words4 => "rand4x(i/4)",
        }
    }
}
